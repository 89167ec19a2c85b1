//! The unversioned admin surface (`/api/admin`): the rich user list with
//! its validation bodies, query count and rate limit, bans and unbans,
//! subscriptions, stats, permissions and roles, on both databases.

mod permissions;

use crate::common;

use crate::common::actors::{Cast, assert_statuses, row};
use crate::common::{As, Backend, TestServer, call, member};
use serde_json::{Value, json};

/// Signs up `name` <`email`> through the API and answers their id.
async fn sign_up(server: &TestServer, name: &str, email: &str) -> i64 {
    let response = server
        .sign_up(&json!({"email": email, "password": common::PASSWORD, "name": name}))
        .await;
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.expect("JSON");
    body["id"].as_str().expect("id").parse().expect("digits")
}

async fn get(server: &TestServer, who: As<'_>, path: &str) -> (u16, Value) {
    let response = server.send(who, "GET", path, None).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn user_list_items_summarise_providers_roles_subscriptions_and_timeouts(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let grace = sign_up(&server, "Grace Hopper", "grace@example.com").await;
    server
        .sql(&format!(
            "INSERT INTO accounts (user_id, provider, provider_account_id, email, email_verified, \
             last_used_at, created_at) VALUES \
             ({grace}, 'github', 'gh-1', 'grace@users.github.example', TRUE, 2000000000000, 1), \
             ({grace}, 'google', 'go-1', 'grace@gmail.example', FALSE, 1000000000000, 1)"
        ))
        .await;
    for (plan, status) in [("Pro", "active"), ("Supporter", "inactive")] {
        let (code, body) = call(
            &server,
            "POST",
            &format!("/api/admin/users/{grace}/subscriptions"),
            Some(&admin),
            Some(json!({"plan_name": plan, "status": status})),
        )
        .await;
        assert_eq!(code, 201, "{body}");
        assert_eq!(body["subscription"]["is_active"], status == "active");
    }
    let (code, body) = call(
        &server,
        "POST",
        &format!("/api/admin/users/{grace}/ban"),
        Some(&admin),
        Some(json!({"reason": "Spam", "duration": "7d"})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let ban_id = body["ban"]["id"].as_i64().expect("ban id");
    assert_eq!(body["user"]["status"], "banned");

    let (code, list) = get(
        &server,
        As::Session(&admin),
        "/api/admin/users?search=hopper",
    )
    .await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["pagination"]["total"], 1);
    let item = &list["users"][0];
    assert_eq!(item["id"], grace, "ids are numbers on this surface");
    assert_eq!(item["name"], "Grace Hopper");
    assert_eq!(item["email"], "grace@example.com");
    assert_eq!(item["is_active"], false);
    assert_eq!(item["provider_name"], "github", "the account used last");
    assert_eq!(item["provider_email"], "grace@users.github.example");
    assert_eq!(item["provider_verified"], true);
    assert_eq!(item["provider_last_used"], "2033-05-18T03:33:20Z");
    assert_eq!(item["role_count"], 1);
    assert_eq!(item["role_names"], "user");
    assert_eq!(item["has_admin"], false);
    assert_eq!(item["has_moderator"], false);
    assert_eq!(item["subscription_count"], 2);
    assert_eq!(item["active_subscriptions"], 1);
    assert_eq!(item["subscription_names"], "Pro, Supporter");
    assert_eq!(item["has_active_subscription"], true);
    assert_eq!(item["is_timed_out"], true);
    assert_eq!(item["timeout_count"], 1);
    assert_eq!(item["active_timeout_id"], ban_id);
    assert_eq!(item["active_timeout_reason"], "Spam");
    assert!(item["timeout_expires"].is_string(), "{item}");

    let (code, body) = call(
        &server,
        "POST",
        &format!("/api/admin/users/{grace}/unban"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["ban"]["id"], ban_id);
    let (_, list) = get(
        &server,
        As::Session(&admin),
        "/api/admin/users?search=grace@",
    )
    .await;
    let item = &list["users"][0];
    assert_eq!(item["is_timed_out"], false);
    assert_eq!(item["timeout_count"], 1, "a lifted ban still counts");
    assert_eq!(item["active_timeout_id"], Value::Null);
    assert_eq!(item["is_active"], true);

    let (code, body) = call(
        &server,
        "POST",
        &format!("/api/admin/users/{grace}/unban"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(body["error"], "Conflict");
}

/// The primary account and the number of bans are kept on the user's row
/// by triggers (migration 0024); the list follows every change to either,
/// whichever statement makes it.
async fn user_list_follows_account_and_ban_changes(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let ada = sign_up(&server, "Ada Lovelace", "ada@example.com").await;
    let provider = |list: &Value| list["users"][0]["provider_name"].clone();
    let listed = || {
        get(
            &server,
            As::Session(&admin),
            "/api/admin/users?search=lovelace",
        )
    };
    let (_, list) = listed().await;
    assert_eq!(provider(&list), Value::Null, "no linked account");
    assert_eq!(list["users"][0]["timeout_count"], 0);

    server
        .sql(&format!(
            "INSERT INTO accounts (user_id, provider, provider_account_id, last_used_at, created_at) \
             VALUES ({ada}, 'github', 'gh-ada', NULL, 5)"
        ))
        .await;
    server
        .sql(&format!(
            "INSERT INTO accounts (user_id, provider, provider_account_id, last_used_at, created_at) \
             VALUES ({ada}, 'google', 'go-ada', NULL, 3)"
        ))
        .await;
    let (_, list) = listed().await;
    assert_eq!(provider(&list), "github", "never used: the newest");
    server
        .sql("UPDATE accounts SET last_used_at = 9 WHERE provider_account_id = 'go-ada'")
        .await;
    let (_, list) = listed().await;
    assert_eq!(provider(&list), "google", "the one used since");
    server
        .sql("DELETE FROM accounts WHERE provider_account_id = 'go-ada'")
        .await;
    let (_, list) = listed().await;
    assert_eq!(provider(&list), "github", "the one left");
    server
        .sql("DELETE FROM accounts WHERE provider_account_id = 'gh-ada'")
        .await;
    let (_, list) = listed().await;
    assert_eq!(provider(&list), Value::Null, "none left");

    for round in 1..=2 {
        let (code, body) = call(
            &server,
            "POST",
            &format!("/api/admin/users/{ada}/ban"),
            Some(&admin),
            Some(json!({"reason": "Spam"})),
        )
        .await;
        assert_eq!(code, 200, "{body}");
        let (code, body) = call(
            &server,
            "POST",
            &format!("/api/admin/users/{ada}/unban"),
            Some(&admin),
            None,
        )
        .await;
        assert_eq!(code, 200, "{body}");
        let (_, list) = listed().await;
        assert_eq!(
            list["users"][0]["timeout_count"], round,
            "bans lifted still count"
        );
    }
    server
        .sql(&format!("DELETE FROM user_bans WHERE user_id = {ada}"))
        .await;
    let (_, list) = listed().await;
    assert_eq!(list["users"][0]["timeout_count"], 0);
}

async fn user_list_pages_and_searches_name_email_and_provider(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    for index in 0..24 {
        sign_up(
            &server,
            &format!("Person {index}"),
            &format!("p{index}@example.com"),
        )
        .await;
    }
    let linked = sign_up(&server, "Linus", "linus@example.com").await;
    server
        .sql(&format!(
            "INSERT INTO accounts (user_id, provider, provider_account_id, email_verified, \
             created_at) VALUES ({linked}, 'discord', 'd-1', FALSE, 1)"
        ))
        .await;
    let (code, first) = get(&server, As::Session(&admin), "/api/admin/users").await;
    assert_eq!(code, 200, "{first}");
    assert_eq!(first["users"].as_array().map(Vec::len), Some(20));
    assert_eq!(
        first["pagination"],
        json!({"page": 1, "limit": 20, "total": 26, "totalPages": 2, "hasNext": true, "hasPrev": false})
    );
    assert_eq!(first["currentPage"], 1);
    assert_eq!(first["totalPages"], 2);
    assert_eq!(
        first["users"][0]["email"], "linus@example.com",
        "newest first"
    );
    let (_, second) = get(
        &server,
        As::Session(&admin),
        "/api/admin/users?page=2&limit=20",
    )
    .await;
    assert_eq!(second["users"].as_array().map(Vec::len), Some(6));
    assert_eq!(second["pagination"]["hasNext"], false);
    assert_eq!(second["pagination"]["hasPrev"], true);
    let (_, beyond) = get(&server, As::Session(&admin), "/api/admin/users?page=9").await;
    assert_eq!(beyond["users"], json!([]));

    for (search, expected) in [
        ("PERSON 1", 11),
        ("p23@example", 1),
        ("DISCORD", 1),
        ("nobody-at-all", 0),
        ("100%", 0),
    ] {
        let (code, found) = get(
            &server,
            As::Session(&admin),
            &format!("/api/admin/users?search={}", urlencode(search)),
        )
        .await;
        assert_eq!(code, 200, "{found}");
        assert_eq!(found["pagination"]["total"], expected, "search {search:?}");
    }
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

async fn user_list_validation_errors_have_the_exact_bodies_of_the_spec(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let issue = |code: &str, expected: &str, received: &str, path: &str, message: &str| json!({"code": code, "expected": expected, "received": received, "path": [path], "message": message});
    let cases = [
        (
            "page=0",
            vec![issue(
                "too_small",
                ">= 1",
                "0",
                "page",
                "must be a positive integer, not 0",
            )],
        ),
        (
            "page=-3",
            vec![issue(
                "too_small",
                ">= 1",
                "-3",
                "page",
                "must be a positive integer, not -3",
            )],
        ),
        (
            "page=abc",
            vec![issue(
                "invalid_type",
                "integer",
                "string",
                "page",
                "must be a positive integer, not \"abc\"",
            )],
        ),
        (
            "page=1.5",
            vec![issue(
                "invalid_type",
                "integer",
                "float",
                "page",
                "must be a positive integer, not \"1.5\"",
            )],
        ),
        (
            "limit=0",
            vec![issue(
                "too_small",
                ">= 1",
                "0",
                "limit",
                "must be an integer from 1 to 100, not 0",
            )],
        ),
        (
            "limit=101",
            vec![issue(
                "too_big",
                "<= 100",
                "101",
                "limit",
                "must be an integer from 1 to 100, not 101",
            )],
        ),
        (
            "search=",
            vec![issue(
                "too_small",
                "at least 1 character",
                "",
                "search",
                "must not be empty",
            )],
        ),
        (
            "page=0&limit=500&search=%20",
            vec![
                issue(
                    "too_small",
                    ">= 1",
                    "0",
                    "page",
                    "must be a positive integer, not 0",
                ),
                issue(
                    "too_big",
                    "<= 100",
                    "500",
                    "limit",
                    "must be an integer from 1 to 100, not 500",
                ),
                issue(
                    "too_small",
                    "at least 1 character",
                    "",
                    "search",
                    "must not be empty",
                ),
            ],
        ),
    ];
    for (query, details) in cases {
        let (code, body) = get(
            &server,
            As::Session(&admin),
            &format!("/api/admin/users?{query}"),
        )
        .await;
        assert_eq!(code, 400, "{query}: {body}");
        assert_eq!(
            body,
            json!({"error": "Invalid query parameters", "details": details}),
            "{query}"
        );
    }
    let (code, body) = get(&server, As::Anonymous, "/api/admin/users").await;
    assert_eq!(code, 401);
    assert_eq!(
        body,
        json!({"error": "Unauthorized", "details": "authentication required"})
    );
    let (_, user) = member(&server, "user@example.com", "user").await;
    let (code, body) = get(&server, As::Session(&user), "/api/admin/users").await;
    assert_eq!(code, 403);
    assert_eq!(body["error"], "Insufficient permissions");
}

/// The page is read in a fixed number of statements, whatever its size:
/// the statements a list request runs are counted from sqlx's statement
/// log, for a page of 10 users and one of 100. Each request carries its own
/// request id, and only the statements logged inside that request's span
/// count, so background jobs running meanwhile do not.
async fn user_list_runs_the_same_statements_for_10_and_100_users(backend: Backend) {
    let server = TestServer::start_with_statement_log(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let output = server.cli(&["dev", "seed", "--users", "150", "--posts", "0"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut statements = Vec::new();
    for (round, limit) in [10, 100, 10, 100].into_iter().enumerate() {
        let request_id = format!("statement-count-{round}");
        let answered = server.log_count("answered");
        let response = server
            .client
            .get(server.url(&format!("/api/admin/users?limit={limit}")))
            .header("cookie", &admin)
            .header("x-request-id", &request_id)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["users"].as_array().map(Vec::len), Some(limit));
        server.wait_for_log_count("answered", answered + 1);
        let span = format!("request_id=\"{request_id}\"");
        let logs = server.logs();
        statements.push(
            logs.lines()
                .filter(|line| line.contains(&span) && line.contains("sqlx::query"))
                .count(),
        );
    }
    assert!(
        statements[0] > 0,
        "the statement log is read: {statements:?}"
    );
    assert_eq!(
        statements[0], statements[1],
        "10 vs 100 users: {statements:?}"
    );
    assert_eq!(
        statements[2], statements[3],
        "10 vs 100 users: {statements:?}"
    );
    assert!(statements[1] <= 12, "a handful per page: {statements:?}");
    let seeded = &body_of(&server, &admin, "/api/admin/users?limit=100").await["users"];
    let items = seeded.as_array().expect("users");
    assert!(items.iter().any(|user| user["provider_name"].is_string()));
    assert!(
        items
            .iter()
            .any(|user| user["subscription_count"].as_i64() > Some(0))
    );
    assert!(items.iter().any(|user| user["is_timed_out"] == true));
}

async fn body_of(server: &TestServer, cookie: &str, path: &str) -> Value {
    get(server, As::Session(cookie), path).await.1
}

async fn user_list_calls_are_audited_and_limited_per_hour(backend: Backend) {
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_RATE_LIMITS_ENABLED", "true"),
            ("PLAZA_RATE_LIMIT_ADMIN_USER_LIST", "3/hour"),
        ],
    )
    .await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    for remaining in (0..3).rev() {
        let response = server
            .send(
                As::Session(&admin),
                "GET",
                "/api/admin/users?search=admin",
                None,
            )
            .await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-ratelimit-limit"], "3");
        assert_eq!(
            response.headers()["x-ratelimit-remaining"],
            remaining.to_string().as_str()
        );
    }
    let response = server
        .send(As::Session(&admin), "GET", "/api/admin/users", None)
        .await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().contains_key("retry-after"));
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["error"], "Rate limit exceeded");
    let (code, _) = get(&server, As::Session(&admin), "/api/admin/stats").await;
    assert_eq!(code, 200, "other admin routes keep the general budget");

    let token = server.mint("admin@example.com", "admin:read");
    let (code, audit) = get(
        &server,
        As::Token(&token),
        "/api/v1/admin/audit-logs?action=admin.users.list",
    )
    .await;
    assert_eq!(code, 200, "{audit}");
    let entries = audit["data"].as_array().expect("entries");
    assert_eq!(entries.len(), 3, "every answered call, not the refused one");
    assert_eq!(entries[0]["surface"], "admin");
    assert_eq!(entries[0]["adminEmail"], "admin@example.com");
    assert_eq!(entries[0]["changes"]["search"], "admin");
}

/// The entries of concurrent calls are committed together, and each call
/// answers only once its own entry is stored.
async fn concurrent_user_list_calls_each_have_their_entry_when_answered(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let calls = (0..24).map(|call| {
        let (server, admin) = (&server, &admin);
        async move {
            let path = format!("/api/admin/users?search=call{call}");
            server
                .send(As::Session(admin), "GET", &path, None)
                .await
                .status()
        }
    });
    let statuses = futures_util::future::join_all(calls).await;
    assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");
    let token = server.mint("admin@example.com", "admin:read");
    let (code, audit) = get(
        &server,
        As::Token(&token),
        "/api/v1/admin/audit-logs?action=admin.users.list&limit=100",
    )
    .await;
    assert_eq!(code, 200, "{audit}");
    let mut searches: Vec<String> = audit["data"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|entry| entry["changes"]["search"].as_str().unwrap_or("").to_owned())
        .collect();
    searches.sort();
    let mut expected: Vec<String> = (0..24).map(|call| format!("call{call}")).collect();
    expected.sort();
    assert_eq!(
        searches, expected,
        "one entry per answered call, each its own"
    );
}

async fn who_may_use_the_unversioned_admin_routes(backend: Backend) {
    let server = TestServer::start(backend).await;
    let cast = Cast::new(&server).await;
    let target = sign_up(&server, "Target", "target@example.com").await;
    let permission =
        json!({"name": "reports.export", "display_name": "Export reports", "category": "reports"});
    assert_statuses(
        &server,
        &cast.actors(),
        vec![
            //                                         anon user mod  admin super read write del  super-token
            row(
                "GET",
                "/api/admin/users",
                None,
                [401, 403, 403, 200, 200, 200, 403, 403, 200],
            ),
            row(
                "GET",
                "/api/admin/stats",
                None,
                [401, 403, 403, 200, 200, 200, 403, 403, 200],
            ),
            row(
                "GET",
                "/api/admin/roles",
                None,
                [401, 403, 403, 200, 200, 200, 403, 403, 200],
            ),
            row(
                "GET",
                "/api/admin/permissions",
                None,
                [401, 403, 403, 200, 200, 200, 403, 403, 200],
            ),
            row(
                "POST",
                "/api/admin/permissions",
                Some(permission),
                [401, 403, 403, 403, 201, 403, 403, 403, 409],
            ),
            row(
                "POST",
                format!("/api/admin/users/{target}/ban"),
                Some(json!({"reason": "Spam"})),
                [401, 403, 403, 200, 200, 403, 200, 403, 200],
            ),
            row(
                "POST",
                format!("/api/admin/users/{target}/unban"),
                None,
                [401, 403, 403, 200, 409, 403, 409, 403, 409],
            ),
            row(
                "POST",
                format!("/api/admin/users/{target}/subscriptions"),
                Some(json!({"plan_name": "Pro"})),
                [401, 403, 403, 201, 201, 403, 201, 403, 201],
            ),
        ],
    )
    .await;
    let (code, body) = call(
        &server,
        "POST",
        &format!("/api/admin/users/{}/ban", cast.super_admin.id),
        Some(&cast.admin.cookie),
        Some(json!({"reason": "no"})),
    )
    .await;
    assert_eq!(code, 403, "nobody bans a super admin: {body}");
    let (code, body) = call(
        &server,
        "POST",
        &format!("/api/admin/users/{}/ban", cast.admin.id),
        Some(&cast.admin.cookie),
        Some(json!({"reason": "me"})),
    )
    .await;
    assert_eq!(code, 403, "nobody bans themself: {body}");
    let (code, body) = call(
        &server,
        "POST",
        &format!("/api/admin/users/{target}/ban"),
        Some(&cast.admin.cookie),
        Some(json!({"duration": "forever"})),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["error"], "Invalid request body");
    let fields: Vec<&Value> = body["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|issue| &issue["path"][0])
        .collect();
    assert_eq!(fields, [&json!("reason"), &json!("duration")]);
}

async fn a_ban_on_the_unversioned_surface_ends_sessions_as_the_versioned_one_does(
    backend: Backend,
) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (target, cookie) = member(&server, "target@example.com", "user").await;
    let (code, _) = get(&server, As::Session(&cookie), "/api/auth/session").await;
    assert_eq!(code, 200);
    let (code, body) = call(
        &server,
        "POST",
        &format!("/api/admin/users/{target}/ban"),
        Some(&admin),
        Some(json!({"reason": "Harassment", "duration": "2h", "notes": "first warning"})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let (_, session) = get(&server, As::Session(&cookie), "/api/auth/session").await;
    assert_eq!(session, Value::Null, "the banned user's session ended");
    let token = server.mint("admin@example.com", "admin:read");
    let (_, detail) = get(
        &server,
        As::Token(&token),
        &format!("/api/v1/admin/users/{target}"),
    )
    .await;
    assert_eq!(detail["data"]["status"], "banned");
    let history = &detail["data"]["banHistory"][0];
    assert_eq!(history["reason"], "Harassment");
    assert_eq!(history["notes"], "first warning");
    assert_eq!(history["active"], true);
    let (_, audit) = get(
        &server,
        As::Token(&token),
        "/api/v1/admin/audit-logs?action=user.ban",
    )
    .await;
    assert_eq!(audit["data"][0]["surface"], "admin");
    assert_eq!(audit["data"][0]["targetId"], target.to_string());
}

async fn subscriptions_change_and_refuse_bad_fields(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let user = sign_up(&server, "Sub", "sub@example.com").await;
    let (code, body) = call(
        &server,
        "POST",
        &format!("/api/admin/users/{user}/subscriptions"),
        Some(&admin),
        Some(json!({"plan_name": "Team", "started_at": "2026-01-01T00:00:00Z", "ends_at": "2027-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let id = body["subscription"]["id"].as_i64().expect("id");
    assert_eq!(body["subscription"]["ends_at"], "2027-01-01T00:00:00Z");
    let (code, body) = call(
        &server,
        "PUT",
        &format!("/api/admin/subscriptions/{id}"),
        Some(&admin),
        Some(json!({"status": "inactive", "ends_at": null})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["subscription"]["status"], "inactive");
    assert_eq!(body["subscription"]["ends_at"], Value::Null);
    assert_eq!(body["subscription"]["is_active"], false);
    for (path, method, payload, status) in [
        (
            format!("/api/admin/users/{user}/subscriptions"),
            "POST",
            json!({"plan_name": "", "status": "paused"}),
            400,
        ),
        (
            format!("/api/admin/users/{user}/subscriptions"),
            "POST",
            json!({"plan_name": "X", "ends_at": "tomorrow"}),
            400,
        ),
        (
            format!("/api/admin/users/{user}/subscriptions"),
            "POST",
            json!({"plan_name": "X", "started_at": "2026-02-01T00:00:00Z", "ends_at": "2026-01-01T00:00:00Z"}),
            409,
        ),
        (
            "/api/admin/users/999999/subscriptions".to_owned(),
            "POST",
            json!({"plan_name": "X"}),
            404,
        ),
        (
            format!("/api/admin/subscriptions/{id}"),
            "PUT",
            json!({}),
            400,
        ),
        (
            "/api/admin/subscriptions/999999".to_owned(),
            "PUT",
            json!({"status": "active"}),
            404,
        ),
    ] {
        let (code, body) = call(&server, method, &path, Some(&admin), Some(payload.clone())).await;
        assert_eq!(code, status, "{method} {path} {payload}: {body}");
        assert!(body["error"].is_string(), "{body}");
    }
    let (code, body) = call(
        &server,
        "POST",
        &format!("/api/admin/users/{user}/subscriptions"),
        Some(&admin),
        Some(json!({"plan_name": "", "status": "paused"})),
    )
    .await;
    assert_eq!(code, 400);
    let paths: Vec<&Value> = body["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|issue| &issue["path"][0])
        .collect();
    assert_eq!(paths, [&json!("plan_name"), &json!("status")]);
}

async fn stats_count_what_is_stored(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, writer) = member(&server, "writer@example.com", "user").await;
    common::post(
        &server,
        &writer,
        json!({"title": "One", "content": "a", "published": true}),
    )
    .await;
    common::post(
        &server,
        &writer,
        json!({"title": "Two", "content": "b", "published": false}),
    )
    .await;
    let (code, stats) = get(&server, As::Session(&admin), "/api/admin/stats").await;
    assert_eq!(code, 200, "{stats}");
    assert_eq!(stats["users"]["total"], 2);
    assert_eq!(stats["users"]["active"], 2, "both signed in");
    assert_eq!(stats["users"]["by_status"]["active"], 2);
    assert_eq!(stats["posts"]["total"], 2);
    assert_eq!(stats["posts"]["by_status"]["published"], 1);
    assert_eq!(stats["posts"]["by_status"]["draft"], 1);
    assert_eq!(stats["reports_open"], 0);
    assert_eq!(stats["sessions_active"], 2);
    assert_eq!(stats["analytics_events"], 0);
    assert!(stats["database_bytes"].as_i64() > Some(0), "{stats}");
}

async fn roles_leave_out_super_admin(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (code, roles) = get(&server, As::Session(&admin), "/api/admin/roles").await;
    assert_eq!(code, 200);
    let names: Vec<&str> = roles
        .as_array()
        .expect("roles")
        .iter()
        .map(|role| role["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["user", "moderator", "admin"]);
    assert_eq!(roles[2]["display_name"], "Administrator");
    assert!(roles[0]["id"].is_number());
}

/// Creates a permission as `cookie`, answering status and body.
async fn create_permission(server: &TestServer, cookie: &str, body: Value) -> (u16, Value) {
    call(
        server,
        "POST",
        "/api/admin/permissions",
        Some(cookie),
        Some(body),
    )
    .await
}

async fn permissions_filter_sort_and_page(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = member(&server, "root@example.com", "super_admin").await;
    for (name, category, risk) in [
        ("posts.pin", "content", "low"),
        ("posts.export", "content", "medium"),
        ("billing.refund", "billing", "critical"),
    ] {
        let (code, body) = create_permission(
            &server,
            &root,
            json!({"name": name, "display_name": name.replace('.', " "), "category": category, "risk_level": risk}),
        )
        .await;
        assert_eq!(code, 201, "{body}");
        assert_eq!(body["success"], true);
        assert_eq!(body["permission"]["status"], "active");
    }
    let (code, all) = get(&server, As::Session(&root), "/api/admin/permissions").await;
    assert_eq!(code, 200, "{all}");
    assert_eq!(all["pagination"]["total"], 7, "four seeded, three created");
    assert_eq!(all["overview"]["total"], 7);
    assert_eq!(all["overview"]["by_category"]["content"], 3);
    assert_eq!(all["overview"]["by_risk_level"]["critical"], 2);
    assert_eq!(all["overview"]["by_status"]["active"], 7);
    assert_eq!(all["overview"]["by_status"]["archived"], 0);
    let unused = all["overview"]["unused_permissions"]
        .as_array()
        .expect("unused");
    assert!(unused.contains(&json!("billing.refund")));
    assert!(!unused.contains(&json!("users:manage")), "admins hold it");
    let first = &all["permissions"][0];
    assert_eq!(
        first["name"], "users:manage",
        "sort_order ascending by default"
    );
    assert_eq!(first["roles"], json!(["admin", "super_admin"]));
    assert_eq!(
        first["usage_count"], 1,
        "the super admin, through their role"
    );

    let names = |body: &Value| -> Vec<String> {
        body["permissions"]
            .as_array()
            .expect("permissions")
            .iter()
            .map(|permission| permission["name"].as_str().expect("name").to_owned())
            .collect()
    };
    for (query, expected) in [
        (
            "category=content",
            vec!["posts:moderate", "posts.pin", "posts.export"],
        ),
        (
            "category=content&sort_by=name&sort_order=desc",
            vec!["posts:moderate", "posts.pin", "posts.export"],
        ),
        (
            "risk_level=critical&sort_by=name",
            vec!["billing.refund", "permissions:manage"],
        ),
        ("search=EXPORT", vec!["posts.export"]),
        ("search=approve", vec!["posts:moderate"]),
        ("status=archived", vec![]),
        (
            "sort_by=name&limit=2&page=2",
            vec!["permissions:manage", "posts.export"],
        ),
    ] {
        let (code, body) = get(
            &server,
            As::Session(&root),
            &format!("/api/admin/permissions?{query}"),
        )
        .await;
        assert_eq!(code, 200, "{query}: {body}");
        assert_eq!(names(&body), expected, "{query}");
    }
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, by_usage) = get(
        &server,
        As::Session(&admin),
        "/api/admin/permissions?sort_by=usage_count&sort_order=desc&limit=1",
    )
    .await;
    assert_eq!(by_usage["permissions"][0]["usage_count"], 2, "{by_usage}");
    assert_eq!(by_usage["pagination"]["hasNext"], true);

    for (query, field) in [
        ("status=gone", "status"),
        ("risk_level=extreme", "risk_level"),
        ("sort_by=id", "sort_by"),
        ("sort_order=up", "sort_order"),
        ("page=0", "page"),
        ("limit=101", "limit"),
    ] {
        let (code, body) = get(
            &server,
            As::Session(&root),
            &format!("/api/admin/permissions?{query}"),
        )
        .await;
        assert_eq!(code, 400, "{query}: {body}");
        assert_eq!(body["error"], "Invalid query parameters");
        assert_eq!(body["details"][0]["path"], json!([field]), "{query}");
    }
}

async fn permission_creation_checks_every_rule(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, root) = member(&server, "root@example.com", "super_admin").await;
    let (code, body) = create_permission(
        &server,
        &root,
        json!({"name": "Bad Name!", "display_name": "", "category": 7, "risk_level": "extreme", "dependencies": "x", "metadata": [], "is_inheritable": "yes"}),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["error"], "Invalid request body");
    assert_eq!(
        body["details"],
        json!([
            {"code": "too_small", "expected": ">= 1 characters", "received": "0 characters", "path": ["display_name"], "message": "must be at least 1 characters"},
            {"code": "invalid_type", "expected": "string", "received": "number", "path": ["category"], "message": "must be a string, not number"},
            {"code": "invalid_string", "expected": "^[a-z0-9._-]+$", "received": "Bad Name!", "path": ["name"], "message": "must match ^[a-z0-9._-]+$"},
            {"code": "invalid_enum_value", "expected": "low | medium | high | critical", "received": "extreme", "path": ["risk_level"], "message": "must be low, medium, high or critical"},
            {"code": "invalid_type", "expected": "boolean", "received": "string", "path": ["is_inheritable"], "message": "must be a boolean"},
            {"code": "invalid_type", "expected": "array", "received": "string", "path": ["dependencies"], "message": "must be an array of permission names"},
            {"code": "invalid_type", "expected": "object", "received": "array", "path": ["metadata"], "message": "must be an object"},
        ])
    );
    let (code, body) = create_permission(&server, &root, json!({"display_name": "x"})).await;
    assert_eq!(code, 400);
    let missing: Vec<&Value> = body["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|issue| &issue["path"][0])
        .collect();
    assert_eq!(missing, [&json!("name"), &json!("category")]);
    let long = "a".repeat(101);
    let (code, body) = create_permission(
        &server,
        &root,
        json!({"name": long, "display_name": "x", "category": "c"}),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(body["details"][0]["code"], "too_big");

    let (code, body) = create_permission(
        &server,
        &root,
        json!({"name": "reports.view", "display_name": "View", "category": "reports", "dependencies": ["reports.base"]}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["details"][0]["path"], json!(["dependencies"]));
    assert_eq!(
        body["details"][0]["message"],
        "names permissions that do not exist: reports.base"
    );
    let (code, body) = create_permission(
        &server,
        &root,
        json!({"name": "reports.self", "display_name": "Self", "category": "reports", "dependencies": ["reports.self"]}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"][0]["message"],
        "would form a cycle: reports.self → reports.self"
    );
    // A dependency written into the data store by hand, on a name that
    // does not exist yet: creating that name with the reverse dependency
    // would close a cycle.
    server
        .sql(
            "INSERT INTO permissions (name, display_name, category, dependencies, created_at, updated_at) \
             VALUES ('reports.audit', 'Audit', 'reports', '[\"reports.read\"]', 0, 0)",
        )
        .await;
    let (code, body) = create_permission(
        &server,
        &root,
        json!({"name": "reports.read", "display_name": "Read", "category": "reports", "dependencies": ["reports.audit"]}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"][0]["message"],
        "would form a cycle: reports.read → reports.audit → reports.read"
    );
    let (code, body) = create_permission(
        &server,
        &root,
        json!({"name": "reports.base", "display_name": "Base", "category": "reports", "metadata": {"owner": "ops"}, "reason": "ticket 12"}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = create_permission(
        &server,
        &root,
        json!({"name": "reports.view", "display_name": "View", "category": "reports", "is_inheritable": true, "risk_level": "high", "dependencies": ["reports.base"]}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["permission"]["dependencies"], json!(["reports.base"]));
    assert_eq!(body["permission"]["is_inheritable"], true);
    assert_eq!(body["message"], "permission reports.view created");
    let (code, body) = create_permission(
        &server,
        &root,
        json!({"name": "reports.view", "display_name": "Again", "category": "reports"}),
    )
    .await;
    assert_eq!(code, 409, "{body}");
    let token = server.mint("root@example.com", "admin:read");
    let (_, audit) = get(
        &server,
        As::Token(&token),
        "/api/v1/admin/audit-logs?action=permission.create",
    )
    .await;
    assert_eq!(audit["data"].as_array().map(Vec::len), Some(2), "{audit}");
    assert_eq!(audit["data"][1]["changes"]["reason"], "ticket 12");
}

on_both_databases!(
    user_list_items_summarise_providers_roles_subscriptions_and_timeouts,
    user_list_follows_account_and_ban_changes,
    user_list_pages_and_searches_name_email_and_provider,
    user_list_validation_errors_have_the_exact_bodies_of_the_spec,
    user_list_runs_the_same_statements_for_10_and_100_users,
    user_list_calls_are_audited_and_limited_per_hour,
    concurrent_user_list_calls_each_have_their_entry_when_answered,
    who_may_use_the_unversioned_admin_routes,
    a_ban_on_the_unversioned_surface_ends_sessions_as_the_versioned_one_does,
    subscriptions_change_and_refuse_bad_fields,
    stats_count_what_is_stored,
    roles_leave_out_super_admin,
    permissions_filter_sort_and_page,
    permission_creation_checks_every_rule,
);

/// PostgreSQL runs writers at once: a transaction whose trigger waits for
/// another's lock on the user's row must still choose the primary account
/// from both transactions' accounts once the other commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_account_changes_choose_the_primary_account_from_both() {
    use sqlx::{Connection, PgConnection};
    if !common::postgres_enabled("concurrent_account_changes_choose_the_primary_account_from_both")
    {
        return;
    }
    let server = TestServer::start(Backend::Postgres).await;
    let user = sign_up(&server, "Both", "both@example.com").await;
    let mut first = PgConnection::connect(&server.database_url).await.unwrap();
    let mut second = PgConnection::connect(&server.database_url).await.unwrap();
    let (second_pid,): (i32,) = sqlx::query_as("SELECT pg_backend_pid()")
        .fetch_one(&mut second)
        .await
        .unwrap();
    let insert = |provider: &str, last_used: i64| {
        format!(
            "INSERT INTO accounts (user_id, provider, provider_account_id, last_used_at, created_at) \
             VALUES ({user}, '{provider}', '{provider}-both', {last_used}, 1)"
        )
    };
    sqlx::query("BEGIN").execute(&mut first).await.unwrap();
    sqlx::query(&insert("github", 5))
        .execute(&mut first)
        .await
        .unwrap();
    let later = insert("google", 3);
    let waiting = tokio::spawn(async move {
        sqlx::query("BEGIN").execute(&mut second).await.unwrap();
        sqlx::query(&later).execute(&mut second).await.unwrap();
        sqlx::query("COMMIT").execute(&mut second).await.unwrap();
    });
    // Commit the first only once the second waits for its lock.
    let mut watcher = PgConnection::connect(&server.database_url).await.unwrap();
    loop {
        let (blocked,): (bool,) = sqlx::query_as(
            "SELECT COALESCE(wait_event_type = 'Lock', FALSE) FROM pg_stat_activity WHERE pid = $1",
        )
        .bind(second_pid)
        .fetch_one(&mut watcher)
        .await
        .unwrap();
        if blocked {
            break;
        }
        tokio::task::yield_now().await;
    }
    sqlx::query("COMMIT").execute(&mut first).await.unwrap();
    waiting.await.unwrap();
    let (provider,): (String,) = sqlx::query_as(
        "SELECT a.provider FROM users u JOIN accounts a ON a.id = u.primary_account_id \
         WHERE u.id = $1",
    )
    .bind(user)
    .fetch_one(&mut watcher)
    .await
    .unwrap();
    assert_eq!(
        provider, "github",
        "the account used last, whichever committed first"
    );
}
