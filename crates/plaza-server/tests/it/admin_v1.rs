//! The versioned admin surface: who may read the
//! audit trail, its envelope and filters, and the surface's rate tiers.

use crate::common::actors::{Cast, assert_statuses, row};
use crate::common::{As, Backend, PASSWORD, TestServer, call, member};
use serde_json::{Value, json};

on_both_databases!(
    every_operation_answers_by_permission,
    the_audit_trail_answers_by_permission,
    the_audit_trail_filters_and_pages,
    each_admin_is_counted_in_their_tier,
    validation_errors_name_the_first_problem_and_list_all,
);

/// Every operation of the surface against every actor: sessions never
/// pass (the surface takes admin tokens only), and each token passes where
/// its method category allows. Writes carry a body that fails validation,
/// so an allowed write answers 422 and the table changes nothing.
async fn every_operation_answers_by_permission(backend: Backend) {
    let server = TestServer::start(backend).await;
    let cast = Cast::new(&server).await;
    let actors = cast.actors();
    let user = format!("/api/v1/admin/users/{}", cast.user.id);
    let empty = || Some(json!({}));
    // Columns: anonymous; the user, moderator, admin and super_admin
    // sessions; the admin:read, :write, :delete and :super tokens.
    const READ: [u16; 9] = [401, 401, 401, 401, 401, 200, 403, 403, 200];
    const WRITE: [u16; 9] = [401, 401, 401, 401, 401, 403, 422, 403, 422];
    // Deletions name what does not exist, so an allowed one answers 404.
    const DELETE: [u16; 9] = [401, 401, 401, 401, 401, 403, 403, 404, 404];
    #[rustfmt::skip]
    let rows = vec![
        row("GET", "/api/v1/admin/audit-logs", None, READ),
        row("GET", "/api/v1/admin/users", None, READ),
        row("GET", user.clone(), None, READ),
        row("PUT", user.clone(), empty(), WRITE),
        row("POST", format!("{user}/ban"), Some(json!({"action": "smite"})), WRITE),
        row("POST", "/api/v1/admin/users/bulk-update", Some(json!({"userIds": [], "updates": {}})), WRITE),
        row("GET", "/api/v1/admin/feature-flags", None, READ),
        row("PUT", "/api/v1/admin/feature-flags/new-search", empty(), WRITE),
        row("DELETE", "/api/v1/admin/feature-flags/no-such-flag", None, DELETE),
        row("GET", "/api/v1/admin/reports/user-activity", None, READ),
        row("GET", "/api/v1/admin/reports/moderation", None, READ),
        row("POST", "/api/v1/admin/system/maintenance", Some(json!({"action": "nap"})), WRITE),
        row("GET", "/api/v1/admin/posts", None, READ),
        row("POST", "/api/v1/admin/posts/1/moderate", Some(json!({"action": "smite"})), WRITE),
        row("POST", "/api/v1/admin/notifications/broadcast", empty(), WRITE),
        row("GET", "/api/v1/admin/notifications/broadcasts", None, READ),
        row("DELETE", "/api/v1/admin/notifications/broadcasts/999999", None, DELETE),
    ];
    assert_statuses(&server, &actors, rows).await;
}

async fn read(server: &TestServer, who: As<'_>, path: &str) -> (u16, Value) {
    let response = server.send(who, "GET", path, None).await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

async fn the_audit_trail_answers_by_permission(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin_session) = member(&server, "admin@example.com", "admin").await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let reader = server.mint("admin@example.com", "admin:read");
    let writer = server.mint("admin@example.com", "admin:write");
    let root = server.mint("root@example.com", "admin:super");
    let path = "/api/v1/admin/audit-logs";

    for (who, status, code) in [
        (As::Anonymous, 401, "UNAUTHORIZED"),
        (As::Session(&admin_session), 401, "UNAUTHORIZED"),
        (As::Token("not-a-jwt"), 401, "UNAUTHORIZED"),
        (As::Token(&writer), 403, "INSUFFICIENT_ADMIN_PERMISSIONS"),
    ] {
        let (got, body) = read(&server, who, path).await;
        assert_eq!(
            (got, body["success"].clone()),
            (status, json!(false)),
            "{who:?}: {body}"
        );
        assert_eq!(body["error"]["code"], code, "{who:?}: {body}");
    }
    let (_, refused) = read(&server, As::Token(&writer), path).await;
    assert_eq!(refused["error"]["requiredPermission"], "admin:read");

    for token in [&reader, &root] {
        let (status, body) = read(&server, As::Token(token), path).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["success"], true);
        assert!(body["data"].is_array(), "{body}");
        assert_eq!(body["meta"]["pagination"]["limit"], 50);
    }

    // A demoted admin's token stops working at once.
    server
        .sql("UPDATE users SET role = 'user' WHERE email = 'admin@example.com'")
        .await;
    let (status, body) = read(&server, As::Token(&reader), path).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "FORBIDDEN");
}

async fn the_audit_trail_filters_and_pages(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (admin_id, admin) = member(&server, "admin@example.com", "admin").await;
    let token = server.mint("admin@example.com", "admin:read");
    let mut targets = Vec::new();
    for index in 0..3 {
        let target = server.create_user(&format!("t{index}@example.com"), PASSWORD, "user");
        let (status, body) = call(
            &server,
            "PUT",
            &format!("/api/users/{target}"),
            Some(&admin),
            Some(json!({"role": "moderator"})),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        targets.push(target);
    }
    assert!(
        server
            .cli(&["user", "ban", "--email", "t0@example.com"])
            .status
            .success()
    );

    let all = read(&server, As::Token(&token), "/api/v1/admin/audit-logs")
        .await
        .1;
    let total = all["meta"]["pagination"]["total"].as_i64().unwrap();
    assert!(total >= 5, "4 changes and the token minting: {all}");
    let newest = &all["data"][0];
    assert_eq!(newest["surface"], "cli", "{newest}");
    assert!(newest["adminId"].is_null());

    let path = format!("/api/v1/admin/audit-logs?adminId={admin_id}&action=user.update");
    let (status, mine) = read(&server, As::Token(&token), &path).await;
    assert_eq!(status, 200, "{mine}");
    assert_eq!(mine["meta"]["pagination"]["total"], 3, "{mine}");
    let entry = &mine["data"][0];
    assert_eq!(entry["adminId"], admin_id.to_string());
    assert_eq!(entry["adminEmail"], "admin@example.com");
    assert_eq!(entry["targetType"], "user");
    assert_eq!(entry["targetId"], targets[2].to_string());
    assert_eq!(
        entry["changes"]["role"],
        json!({"before": "user", "after": "moderator"})
    );
    assert_eq!(entry["surface"], "api");
    assert!(
        entry["ipAddress"].is_string() && entry["timestamp"].is_string(),
        "{entry}"
    );

    let (_, page) = read(
        &server,
        As::Token(&token),
        &format!("{path}&limit=2&offset=2"),
    )
    .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    assert_eq!(page["meta"]["pagination"]["hasMore"], false);
    let (_, first) = read(&server, As::Token(&token), &format!("{path}&limit=2")).await;
    assert_eq!(first["meta"]["pagination"]["hasMore"], true);

    let (_, future) = read(
        &server,
        As::Token(&token),
        &format!("{path}&startDate=2999-01-01"),
    )
    .await;
    assert_eq!(future["meta"]["pagination"]["total"], 0);
    let (_, past) = read(
        &server,
        As::Token(&token),
        &format!("{path}&endDate=2000-01-01"),
    )
    .await;
    assert_eq!(past["meta"]["pagination"]["total"], 0);
    let (_, today) = read(
        &server,
        As::Token(&token),
        &format!("{path}&startDate=2000-01-01&endDate=2999-12-31"),
    )
    .await;
    assert_eq!(today["meta"]["pagination"]["total"], 3);

    for bad in [
        "adminId=x",
        "startDate=yesterday",
        "limit=0",
        "limit=101",
        "offset=-1",
    ] {
        let (status, body) = read(
            &server,
            As::Token(&token),
            &format!("/api/v1/admin/audit-logs?{bad}"),
        )
        .await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{bad}: {body}");
        assert!(body["error"]["field"].is_string(), "{bad}: {body}");
    }
}

/// A `VALIDATION_ERROR` carries `details` as one object, the first
/// problem, and `errors` with every problem (DECISIONS.md, "Closing the
/// loops").
async fn validation_errors_name_the_first_problem_and_list_all(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:read");
    let (status, body) = read(
        &server,
        As::Token(&token),
        "/api/v1/admin/audit-logs?limit=0&offset=-1",
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["success"], false, "{body}");
    let error = &body["error"];
    assert_eq!(error["code"], "VALIDATION_ERROR", "{body}");
    assert_eq!(error["details"]["field"], "limit", "{body}");
    assert!(error["details"]["reason"].is_string(), "{body}");
    assert_eq!(
        error["details"].as_object().map(|details| details.len()),
        Some(2),
        "details holds only field and reason: {body}"
    );
    let errors = error["errors"].as_array().expect("an errors array");
    let fields: Vec<&Value> = errors.iter().map(|problem| &problem["field"]).collect();
    assert_eq!(fields, [&json!("limit"), &json!("offset")], "{body}");
    assert!(
        errors.iter().all(|problem| problem["reason"].is_string()),
        "{body}"
    );
    assert_eq!(errors[0], error["details"], "{body}");
}

async fn each_admin_is_counted_in_their_tier(backend: Backend) {
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_RATE_LIMITS_ENABLED", "true"),
            ("PLAZA_RATE_LIMIT_ADMIN", "3/hour"),
            ("PLAZA_RATE_LIMIT_ADMIN_SUPER", "5/hour"),
        ],
    )
    .await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let admin = server.mint("admin@example.com", "admin:read");
    let root = server.mint("root@example.com", "admin:super");
    let path = "/api/v1/admin/audit-logs";
    let header = |response: &reqwest::Response, name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
    };

    for remaining in ["2", "1", "0"] {
        let response = server.send(As::Token(&admin), "GET", path, None).await;
        assert_eq!(response.status(), 200);
        assert_eq!(
            header(&response, "x-admin-tier").as_deref(),
            Some("general")
        );
        assert_eq!(header(&response, "x-ratelimit-limit").as_deref(), Some("3"));
        assert_eq!(
            header(&response, "x-ratelimit-remaining").as_deref(),
            Some(remaining)
        );
    }
    let refused = server.send(As::Token(&admin), "GET", path, None).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(header(&refused, "x-admin-tier").as_deref(), Some("general"));
    assert!(header(&refused, "retry-after").is_some());
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["error"]["code"], "RATE_LIMITED", "{body}");

    // Another admin, in the super tier, has a budget of their own.
    let response = server.send(As::Token(&root), "GET", path, None).await;
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "x-admin-tier").as_deref(), Some("super"));
    assert_eq!(header(&response, "x-ratelimit-limit").as_deref(), Some("5"));
    assert_eq!(
        header(&response, "x-ratelimit-remaining").as_deref(),
        Some("4")
    );
}
