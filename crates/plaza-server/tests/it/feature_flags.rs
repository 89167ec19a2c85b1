//! Feature flags in use: `GET /api/feature-flags` evaluates
//! every flag for the caller (nobody, a user, a moderator) by enabled,
//! target roles and rollout bucket, the same on every call and instance, a
//! change shows on another instance within 5 s, `DELETE
//! /api/v1/admin/feature-flags/{flagName}` removes a flag with its audit
//! entry, and at most 500 flags exist.

use std::time::{Duration, Instant};

use crate::common::{As, Backend, PASSWORD, TestServer, member};
use plaza_domain::feature_flags::rollout_bucket;
use serde_json::{Value, json};

on_both_databases!(
    flags_are_evaluated_for_the_caller,
    deleting_a_flag_answers_by_permission_and_is_audited,
    at_most_500_flags_exist,
);

on_postgres!(a_change_through_one_instance_shows_on_another_within_five_seconds);

async fn send(
    server: &TestServer,
    who: As<'_>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let response = server.send(who, method, path, body.as_ref()).await;
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    (status, body)
}

/// The caller's evaluated flags.
async fn flags(server: &TestServer, who: As<'_>) -> Value {
    let response = server.send(who, "GET", "/api/feature-flags", None).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["cache-control"],
        "private, no-store",
        "an answer for one caller is kept by no shared cache"
    );
    let body: Value = response.json().await.expect("a JSON body");
    body["flags"].clone()
}

async fn put_flag(server: &TestServer, token: &str, name: &str, body: Value) {
    let path = format!("/api/v1/admin/feature-flags/{name}");
    let (status, answer) = send(server, As::Token(token), "PUT", &path, Some(body)).await;
    assert!(status == 200 || status == 201, "{status} {answer}");
}

/// A flag name (`{prefix}-N`) whose bucket is below 50 for `inside` and
/// 50 or above for `outside`, so a 50 % rollout tells them apart.
fn name_splitting(prefix: &str, inside: i64, outside: i64) -> String {
    (0..1000)
        .map(|n| format!("{prefix}-{n}"))
        .find(|name| rollout_bucket(name, inside) < 50 && rollout_bucket(name, outside) >= 50)
        .expect("some name splits the two users")
}

async fn flags_are_evaluated_for_the_caller(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let writer = server.mint("admin@example.com", "admin:write");
    let (user_id, user) = member(&server, "user@example.com", "user").await;
    let (moderator_id, moderator) = member(&server, "mod@example.com", "moderator").await;

    assert_eq!(
        flags(&server, As::Anonymous).await,
        json!({}),
        "no flags yet"
    );

    let half_for_user = name_splitting("half-a", user_id, moderator_id);
    let half_for_moderator = name_splitting("half-b", moderator_id, user_id);
    let on = |percentage: u8| json!({"enabled": true, "rolloutPercentage": percentage});
    put_flag(&server, &writer, "none", on(0)).await;
    put_flag(&server, &writer, "everyone", on(100)).await;
    put_flag(&server, &writer, &half_for_user, on(50)).await;
    put_flag(&server, &writer, &half_for_moderator, on(50)).await;
    put_flag(
        &server,
        &writer,
        "switched-off",
        json!({"enabled": false, "rolloutPercentage": 100}),
    )
    .await;
    put_flag(
        &server,
        &writer,
        "moderators",
        json!({"enabled": true, "targetRoles": ["moderator"]}),
    )
    .await;
    put_flag(
        &server,
        &writer,
        "half-of-moderators",
        json!({"enabled": true, "rolloutPercentage": 50, "targetRoles": ["moderator"]}),
    )
    .await;
    let moderator_half = rollout_bucket("half-of-moderators", moderator_id) < 50;

    // The writing instance drops what it had read: the answer has the
    // flags at once.
    let expected = |everyone, user_half, moderator_half_flag, targeted, targeted_half| {
        let mut answer = json!({
            "none": false,
            "everyone": everyone,
            "switched-off": false,
            "moderators": targeted,
            "half-of-moderators": targeted_half,
        });
        answer[half_for_user.as_str()] = json!(user_half);
        answer[half_for_moderator.as_str()] = json!(moderator_half_flag);
        answer
    };
    assert_eq!(
        flags(&server, As::Anonymous).await,
        expected(true, false, false, false, false),
        "nobody signed in: only what is on for every role at 100 %"
    );
    assert_eq!(
        flags(&server, As::Session(&user)).await,
        expected(true, true, false, false, false),
        "a user: in their half, outside the moderators' flags"
    );
    assert_eq!(
        flags(&server, As::Session(&moderator)).await,
        expected(true, false, true, true, moderator_half),
        "a moderator: in their half and in the moderators' flags"
    );
    for _ in 0..3 {
        assert_eq!(
            flags(&server, As::Session(&user)).await,
            expected(true, true, false, false, false),
            "the same answer on every call"
        );
    }
    // A cookie that names no session is nobody.
    assert_eq!(
        flags(&server, As::Session("plaza_session=unknown")).await,
        expected(true, false, false, false, false)
    );
}

async fn a_change_through_one_instance_shows_on_another_within_five_seconds() {
    let backend = Backend::Postgres;
    let first = TestServer::start(backend).await;
    let second = TestServer::start_with(
        backend,
        &[("PLAZA_DATABASE_URL", first.database_url.as_str())],
    )
    .await;
    first.create_user("admin@example.com", PASSWORD, "admin");
    let writer = first.mint("admin@example.com", "admin:write");
    let (user_id, user) = member(&first, "user@example.com", "user").await;
    let half = name_splitting("half", user_id, 0);
    put_flag(
        &first,
        &writer,
        &half,
        json!({"enabled": true, "rolloutPercentage": 50}),
    )
    .await;
    put_flag(&first, &writer, "launch", json!({"enabled": false})).await;

    // Both instances put the user in the same half.
    for server in [&first, &second] {
        let answer = flags(server, As::Session(&user)).await;
        assert_eq!(answer[half.as_str()], true, "{answer}");
        assert_eq!(answer["launch"], false, "{answer}");
    }

    // `first` has just read the flags; the change goes through `second`.
    put_flag(&second, &writer, "launch", json!({"enabled": true})).await;
    let changed_at = Instant::now();
    loop {
        if flags(&first, As::Session(&user)).await["launch"] == true {
            break;
        }
        assert!(
            changed_at.elapsed() < Duration::from_secs(5),
            "the other instance still answers the old flag after 5 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(flags(&second, As::Session(&user)).await["launch"], true);
}

async fn deleting_a_flag_answers_by_permission_and_is_audited(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin_id = server.create_user("admin@example.com", PASSWORD, "admin");
    let writer = server.mint("admin@example.com", "admin:write");
    let deleter = server.mint("admin@example.com", "admin:delete");
    let reader = server.mint("admin@example.com", "admin:read");
    put_flag(
        &server,
        &writer,
        "new-editor",
        json!({"enabled": true, "description": "The new editor", "rolloutPercentage": 30, "targetRoles": ["moderator"]}),
    )
    .await;
    let path = "/api/v1/admin/feature-flags/new-editor";

    let (status, body) = send(&server, As::Anonymous, "DELETE", path, None).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (401, &json!("UNAUTHORIZED"))
    );
    let (status, body) = send(&server, As::Token(&writer), "DELETE", path, None).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "INSUFFICIENT_ADMIN_PERMISSIONS");
    assert_eq!(body["error"]["requiredPermission"], "admin:delete");
    assert!(
        flags(&server, As::Anonymous)
            .await
            .get("new-editor")
            .is_some(),
        "a refused deletion removes nothing"
    );

    let (status, body) = send(&server, As::Token(&deleter), "DELETE", path, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["data"]["name"], "new-editor");
    assert_eq!(body["data"]["rolloutPercentage"], 30);
    assert_eq!(flags(&server, As::Anonymous).await, json!({}));

    let (status, body) = send(&server, As::Token(&deleter), "DELETE", path, None).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["success"], false);
    assert_eq!(body["error"]["code"], "NOT_FOUND");

    let (status, trail) = send(
        &server,
        As::Token(&reader),
        "GET",
        "/api/v1/admin/audit-logs?action=feature_flag.delete",
        None,
    )
    .await;
    assert_eq!(status, 200, "{trail}");
    assert_eq!(trail["meta"]["pagination"]["total"], 1, "{trail}");
    let entry = &trail["data"][0];
    assert_eq!(entry["adminId"], admin_id.to_string());
    assert_eq!(entry["adminEmail"], "admin@example.com");
    assert_eq!(entry["surface"], "v1");
    assert_eq!(entry["targetType"], "feature_flag");
    assert_eq!(entry["targetId"], "new-editor");
    assert_eq!(
        entry["changes"],
        json!({"before": {
            "enabled": true,
            "description": "The new editor",
            "rolloutPercentage": 30,
            "targetRoles": ["moderator"],
        }})
    );
}

async fn at_most_500_flags_exist(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let writer = server.mint("admin@example.com", "admin:write");
    let deleter = server.mint("admin@example.com", "admin:delete");
    let rows: Vec<String> = (0..500)
        .map(|n| format!("('flag-{n:03}', TRUE, 100, '[]', 1, 1)"))
        .collect();
    server
        .sql(&format!(
            "INSERT INTO feature_flags (name, enabled, rollout_percentage, target_roles, \
             created_at, updated_at) VALUES {}",
            rows.join(", ")
        ))
        .await;

    let (status, body) = send(
        &server,
        As::Token(&writer),
        "PUT",
        "/api/v1/admin/feature-flags/one-more",
        Some(json!({"enabled": true})),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "CONFLICT");
    let answer = flags(&server, As::Anonymous).await;
    assert_eq!(answer.as_object().unwrap().len(), 500);
    assert!(answer.get("one-more").is_none());

    put_flag(&server, &writer, "flag-000", json!({"enabled": false})).await;
    let (status, _) = send(
        &server,
        As::Token(&deleter),
        "DELETE",
        "/api/v1/admin/feature-flags/flag-001",
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = send(
        &server,
        As::Token(&writer),
        "PUT",
        "/api/v1/admin/feature-flags/one-more",
        Some(json!({"enabled": true})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
}
