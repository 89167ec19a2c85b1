//! Answers holding one user's private data carry `Cache-Control: private,
//! no-store` (docs/security.md, "Personal answers are not kept"): the
//! caller's sessions and alerts, answers showing an email, the data
//! export, and the admin surfaces; public answers keep their own header.

use crate::common::{As, Backend, TestServer, member};

on_both_databases!(personal_answers_are_private_and_not_stored);

const PRIVATE_NO_STORE: &str = "private, no-store";

/// The answer's status and `Cache-Control`.
async fn cache_control(server: &TestServer, who: As<'_>, path: &str) -> (u16, String) {
    let response = server.send(who, "GET", path, None).await;
    let status = response.status().as_u16();
    let value = response
        .headers()
        .get("cache-control")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, value)
}

async fn personal_answers_are_private_and_not_stored(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (alice, cookie) = member(&server, "alice@example.com", "user").await;
    let (bob, _) = member(&server, "bob@example.com", "user").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let token = server.mint("admin@example.com", "admin:read");
    for (who, path) in [
        (As::Session(&cookie), "/api/auth/sessions".to_owned()),
        (As::Session(&cookie), "/api/alerts".to_owned()),
        (As::Session(&cookie), format!("/api/users/{alice}")),
        (As::Session(&cookie), format!("/api/users/{alice}/export")),
        (As::Session(&admin), "/api/users".to_owned()),
        (As::Session(&admin), format!("/api/users/{bob}")),
        (As::Session(&admin), "/api/admin/users".to_owned()),
        (As::Token(&token), "/api/v1/admin/users".to_owned()),
        (As::Token(&token), format!("/api/v1/admin/users/{bob}")),
    ] {
        let (status, value) = cache_control(&server, who, &path).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(value, PRIVATE_NO_STORE, "{path}");
    }
    // What shows no email is not personal: a member reading someone
    // else's public profile, anyone reading the list.
    for (who, path) in [
        (As::Session(&cookie), format!("/api/users/{bob}")),
        (As::Anonymous, "/api/users".to_owned()),
        (As::Anonymous, format!("/api/users/{bob}")),
    ] {
        let (status, value) = cache_control(&server, who, &path).await;
        assert_eq!(status, 200, "{path}");
        assert!(!value.contains("no-store"), "{path}: {value}");
    }
    // The session answer keeps the header its route sets.
    let (status, value) = cache_control(&server, As::Session(&cookie), "/api/auth/session").await;
    assert_eq!(status, 200);
    assert!(value.contains("no-store"), "{value}");
}
