//! The versioned admin surface's posts: the moderation queue
//! with its filters, every moderation action from every status, the audit
//! entries of each, and the edit lock that keeps two admins apart.

use std::time::{Duration, Instant};

use crate::common::{As, Backend, PASSWORD, TestServer, call, member, post};
use plaza_domain::listing::SortOrder;
use plaza_domain::locks::{self, Resource};
use plaza_domain::posts::{PostQuery, PostSort, Viewer};
use serde_json::{Value, json};

on_both_databases!(
    the_queue_lists_posts_with_authors_and_reports,
    the_queue_refuses_unknown_filters,
    every_action_from_every_status,
    moderation_needs_admin_write_and_a_known_action,
    another_admins_lock_refuses_then_expires,
    admin_lists_read_indexes,
    a_decision_adds_one_audit_write_and_a_refusal_none,
    deleting_through_moderate_needs_admin_delete,
);

async fn send(
    server: &TestServer,
    who: As<'_>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let response = server.send(who, method, path, body.as_ref()).await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

async fn report(server: &TestServer, cookie: &str, post_id: &str, reason: &str) {
    let (status, body) = call(
        server,
        "POST",
        &format!("/api/posts/{post_id}/report"),
        Some(cookie),
        Some(json!({"reason": reason})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
}

async fn moderate(server: &TestServer, token: &str, post_id: &str, body: Value) -> (u16, Value) {
    send(
        server,
        As::Token(token),
        "POST",
        &format!("/api/v1/admin/posts/{post_id}/moderate"),
        Some(body),
    )
    .await
}

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|item| item["id"].as_str().expect("id").to_owned())
        .collect()
}

fn owned(ids: &[&String]) -> Vec<String> {
    ids.iter().map(|id| (*id).clone()).collect()
}

async fn the_queue_lists_posts_with_authors_and_reports(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (author_id, author) = member(&server, "author@example.com", "user").await;
    let (reporter_id, reporter) = member(&server, "reporter@example.com", "user").await;
    let (_, second_reporter) = member(&server, "second@example.com", "user").await;
    server.create_user("admin@example.com", PASSWORD, "super_admin");
    let token = server.mint("admin@example.com", "admin:super");

    let quiet = post(
        &server,
        &author,
        json!({"title": "Quiet", "content": "fine"}),
    )
    .await;
    let noisy = post(
        &server,
        &author,
        json!({"title": "Noisy", "content": "bad"}),
    )
    .await;
    let draft = post(
        &server,
        &author,
        json!({"title": "Draft", "content": "wip", "published": false}),
    )
    .await;
    let other = post(
        &server,
        &reporter,
        json!({"title": "Other", "content": "x"}),
    )
    .await;
    report(&server, &reporter, &noisy, "spam").await;
    report(&server, &second_reporter, &noisy, "rude").await;
    report(&server, &second_reporter, &quiet, "meh").await;
    let (status, _) = moderate(&server, &token, &other, json!({"action": "flag"})).await;
    assert_eq!(status, 200);

    let (status, all) = send(
        &server,
        As::Token(&token),
        "GET",
        "/api/v1/admin/posts",
        None,
    )
    .await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(all["success"], true);
    assert_eq!(ids(&all), owned(&[&other, &draft, &noisy, &quiet]));
    assert_eq!(
        all["meta"]["pagination"],
        json!({"total": 4, "limit": 50, "offset": 0, "hasMore": false})
    );
    let item = &all["data"][2];
    assert_eq!(item["title"], "Noisy");
    assert_eq!(item["content"], "bad");
    assert_eq!(
        item["author"],
        json!({"id": author_id.to_string(), "username": "author"})
    );
    assert_eq!(item["status"], "published");
    assert_eq!(item["reportCount"], 2);
    assert_eq!(item["reports"][0]["reason"], "spam");
    assert_eq!(item["reports"][0]["reportedBy"], reporter_id.to_string());
    assert!(item["reports"][0]["reportedAt"].is_string(), "{item}");
    assert!(item["createdAt"].is_string() && item["updatedAt"].is_string());
    assert_eq!(all["data"][1]["status"], "draft");
    assert_eq!(all["data"][0]["status"], "flagged");
    assert_eq!(all["data"][0]["reports"], json!([]));

    for (query, expected) in [
        ("reported=true", vec![&noisy, &quiet]),
        ("reported=false", vec![&other, &draft, &noisy, &quiet]),
        ("status=draft", vec![&draft]),
        ("status=flagged", vec![&other]),
        ("status=published", vec![&noisy, &quiet]),
        ("status=all&order=asc", vec![&quiet, &noisy, &draft, &other]),
        (
            &format!("author={author_id}") as &str,
            vec![&draft, &noisy, &quiet],
        ),
        (&format!("authorId={reporter_id}"), vec![&other]),
        ("reported=true&sort=report_count", vec![&noisy, &quiet]),
        (
            "reported=true&sort=report_count&order=asc",
            vec![&quiet, &noisy],
        ),
        ("sort=title&order=asc", vec![&draft, &noisy, &other, &quiet]),
        ("limit=1&offset=1", vec![&draft]),
    ] {
        let (status, page) = send(
            &server,
            As::Token(&token),
            "GET",
            &format!("/api/v1/admin/posts?{query}"),
            None,
        )
        .await;
        assert_eq!(status, 200, "{query}: {page}");
        assert_eq!(ids(&page), owned(&expected), "{query}: {page}");
    }
    let (_, reported) = send(
        &server,
        As::Token(&token),
        "GET",
        "/api/v1/admin/posts?reported=true&limit=1",
        None,
    )
    .await;
    assert_eq!(reported["meta"]["pagination"]["total"], 2);
    assert_eq!(reported["meta"]["pagination"]["hasMore"], true);
    let (_, beyond) = send(
        &server,
        As::Token(&token),
        "GET",
        "/api/v1/admin/posts?reported=true&offset=5",
        None,
    )
    .await;
    assert_eq!(beyond["data"], json!([]), "{beyond}");
    assert_eq!(beyond["meta"]["pagination"]["total"], 2, "{beyond}");
}

async fn the_queue_refuses_unknown_filters(backend: Backend) {
    let server = TestServer::start(backend).await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:read");
    for (query, field) in [
        ("status=deleted", "status"),
        ("reported=yes", "reported"),
        ("sort=author", "sort"),
        ("sort=report_count;drop", "sort"),
        ("order=up", "order"),
        ("author=me", "author"),
        ("authorId=-1", "authorId"),
        ("author=1&authorId=2", "authorId"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("offset=-5", "offset"),
    ] {
        let (status, body) = send(
            &server,
            As::Token(&token),
            "GET",
            &format!("/api/v1/admin/posts?{query}"),
            None,
        )
        .await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{query}: {body}");
        assert_eq!(body["error"]["field"], field, "{query}: {body}");
        assert_eq!(body["error"]["details"]["field"], field, "{body}");
        assert!(body["error"]["details"]["reason"].is_string(), "{body}");
    }
    let (status, body) = send(
        &server,
        As::Anonymous,
        "GET",
        "/api/v1/admin/posts?status=deleted",
        None,
    )
    .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (401, &json!("UNAUTHORIZED"))
    );
}

/// A post in `status`, made through the API, with one open report unless
/// it is a draft or hidden (the report is filed before it is hidden, and
/// hiding resolves it); returns its id and how many reports it has.
async fn post_in(
    server: &TestServer,
    author: &str,
    reporters: [&str; 2],
    token: &str,
    status: &str,
) -> (String, i64) {
    let id = post(
        server,
        author,
        json!({"title": format!("A {status} post"), "content": "text", "published": status != "draft"}),
    )
    .await;
    let mut reports = 0;
    if status != "draft" {
        report(server, reporters[0], &id, "please look").await;
        reports += 1;
    }
    let setup = match status {
        "hidden" => Some("hide"),
        "flagged" => Some("flag"),
        _ => None,
    };
    if let Some(action) = setup {
        let (code, body) = moderate(server, token, &id, json!({"action": action})).await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(body["data"]["status"], status);
    }
    if status == "flagged" {
        report(server, reporters[1], &id, "still bad").await;
        reports += 1;
    }
    (id, reports)
}

async fn audit_entries(server: &TestServer, token: &str, action: &str) -> Vec<Value> {
    let (status, body) = send(
        server,
        As::Token(token),
        "GET",
        &format!("/api/v1/admin/audit-logs?action={action}&limit=100"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().expect("entries").clone()
}

async fn every_action_from_every_status(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    let (_, reporter) = member(&server, "reporter@example.com", "user").await;
    let (_, second_reporter) = member(&server, "second@example.com", "user").await;
    let (admin_id, _) = member(&server, "admin@example.com", "super_admin").await;
    let token = server.mint("admin@example.com", "admin:super");
    // (from, action, the status after, or None for a refused move)
    let table = [
        ("published", "approve", Some("published")),
        ("published", "hide", Some("hidden")),
        ("published", "flag", Some("flagged")),
        ("published", "delete", Some("deleted")),
        ("draft", "approve", None),
        ("draft", "hide", Some("hidden")),
        ("draft", "flag", None),
        ("draft", "delete", Some("deleted")),
        ("hidden", "approve", Some("published")),
        ("hidden", "hide", None),
        ("hidden", "flag", None),
        ("hidden", "delete", Some("deleted")),
        ("flagged", "approve", Some("published")),
        ("flagged", "hide", Some("hidden")),
        ("flagged", "flag", None),
        ("flagged", "delete", Some("deleted")),
    ];
    let db = server.domain().await;
    for (from, action, after) in table {
        let (id, reports) = post_in(
            &server,
            &author,
            [&reporter, &second_reporter],
            &token,
            from,
        )
        .await;
        let open_reports = if from == "published" || from == "flagged" {
            1
        } else {
            0
        };
        let audited = format!("post.moderate.{action}");
        let entries_before = audit_entries(&server, &token, &audited).await.len();
        let (status, body) = moderate(
            &server,
            &token,
            &id,
            json!({"action": action, "reason": "rule 3", "notes": "second offence"}),
        )
        .await;
        let entries = audit_entries(&server, &token, &audited).await;
        match after {
            None => {
                assert_eq!(status, 409, "{from} {action}: {body}");
                assert_eq!(body["success"], false);
                assert_eq!(body["error"]["code"], "INVALID_TRANSITION", "{body}");
                let message = body["error"]["message"].as_str().unwrap();
                assert!(
                    message.contains(from) && message.contains(action),
                    "{message}"
                );
                assert_eq!(entries.len(), entries_before, "a refusal is not audited");
                let (_, listed) = send(
                    &server,
                    As::Token(&token),
                    "GET",
                    &format!("/api/v1/admin/posts?status={from}"),
                    None,
                )
                .await;
                assert!(
                    ids(&listed).contains(&id),
                    "{from} {action} changed the post"
                );
            }
            Some("deleted") => {
                assert_eq!(status, 200, "{from} {action}: {body}");
                let data = &body["data"];
                assert_eq!(data["id"], id);
                assert_eq!(data["deleted"], true);
                assert_eq!(data["status"], from);
                assert_eq!(data["reportsRemoved"], reports, "{from}");
                let (gone, _) = send(
                    &server,
                    As::Token(&token),
                    "POST",
                    &format!("/api/v1/admin/posts/{id}/moderate"),
                    Some(json!({"action": "approve"})),
                )
                .await;
                assert_eq!(gone, 404);
                let post_id: i64 = id.parse().unwrap();
                assert!(db.reports_for_posts(&[post_id]).await.unwrap().is_empty());
                assert_eq!(entries.len(), entries_before + 1);
                let entry = &entries[0];
                assert_eq!(entry["changes"]["before"]["status"], from, "{entry}");
                assert!(entry["changes"]["after"].is_null(), "{entry}");
            }
            Some(expected) => {
                assert_eq!(status, 200, "{from} {action}: {body}");
                assert_eq!(body["success"], true);
                let data = &body["data"];
                assert_eq!(data["id"], id);
                assert_eq!(data["status"], expected, "{from} {action}");
                assert_eq!(entries.len(), entries_before + 1, "{from} {action}");
                let entry = &entries[0];
                assert_eq!(entry["adminId"], admin_id.to_string());
                assert_eq!(entry["targetType"], "post");
                assert_eq!(entry["targetId"], id);
                assert_eq!(entry["surface"], "v1");
                assert_eq!(
                    entry["changes"]["status"],
                    json!({"before": from, "after": expected}),
                    "{entry}"
                );
                assert_eq!(entry["changes"]["reason"], "rule 3");
                assert_eq!(entry["changes"]["notes"], "second offence");
                assert_eq!(entry["changes"]["reportsResolved"], open_reports, "{entry}");
            }
        }
    }
}

async fn moderation_needs_admin_write_and_a_known_action(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let reader = server.mint("admin@example.com", "admin:read");
    let writer = server.mint("admin@example.com", "admin:write");
    let id = post(&server, &author, json!({"title": "T", "content": "c"})).await;
    let path = format!("/api/v1/admin/posts/{id}/moderate");

    let (status, body) = send(
        &server,
        As::Token(&reader),
        "POST",
        &path,
        Some(json!({"action": "hide"})),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "INSUFFICIENT_ADMIN_PERMISSIONS");
    assert_eq!(body["error"]["requiredPermission"], "admin:write");
    let (status, body) = send(
        &server,
        As::Token(&writer),
        "GET",
        "/api/v1/admin/posts",
        None,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["requiredPermission"], "admin:read");
    let (status, body) = send(
        &server,
        As::Session(&author),
        "POST",
        &path,
        Some(json!({"action": "hide"})),
    )
    .await;
    assert_eq!(status, 401, "{body}");

    for (bad, field) in [
        (json!({"action": "ban"}), "action"),
        (json!({"action": "HIDE"}), "action"),
        (json!({}), "action"),
        (
            json!({"action": "hide", "reason": "x".repeat(1001)}),
            "reason",
        ),
        (json!({"action": "hide", "notes": "a\u{0}b"}), "notes"),
        (
            json!({"action": "hide", "notifyAuthor": "yes"}),
            "notifyAuthor",
        ),
    ] {
        let (status, body) = send(
            &server,
            As::Token(&writer),
            "POST",
            &path,
            Some(bad.clone()),
        )
        .await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{body}");
        assert_eq!(body["error"]["field"], field, "{bad}: {body}");
    }
    for missing in [
        "/api/v1/admin/posts/999999/moderate",
        "/api/v1/admin/posts/abc/moderate",
    ] {
        let (status, body) = send(
            &server,
            As::Token(&writer),
            "POST",
            missing,
            Some(json!({"action": "hide"})),
        )
        .await;
        assert_eq!(status, 404, "{missing}: {body}");
        assert_eq!(body["success"], false);
    }
    let (status, body) = send(
        &server,
        As::Token(&writer),
        "POST",
        &path,
        Some(json!({"action": "hide"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "hidden");
}

async fn another_admins_lock_refuses_then_expires(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    let holder = server.create_user("first@example.com", PASSWORD, "admin");
    server.create_user("second@example.com", PASSWORD, "admin");
    let second = server.mint("second@example.com", "admin:write");
    let reader = server.mint("second@example.com", "admin:read");
    let id = post(
        &server,
        &author,
        json!({"title": "Contested", "content": "c"}),
    )
    .await;
    let post_id: i64 = id.parse().unwrap();
    let db = server.domain().await;
    let lock = db
        .write(|tx| {
            Box::pin(async move {
                locks::hold(tx, Resource::Post(post_id), holder, Duration::from_secs(2)).await
            })
        })
        .await
        .expect("the first admin takes the lock");

    let (status, body) = moderate(&server, &second, &id, json!({"action": "hide"})).await;
    assert_eq!(status, 423, "{body}");
    assert_eq!(body["success"], false);
    assert_eq!(body["error"]["code"], "RESOURCE_LOCKED");
    assert_eq!(body["error"]["lockedBy"], holder.to_string());
    let locked_at = time::OffsetDateTime::parse(
        body["error"]["lockedAt"].as_str().expect("lockedAt"),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("an RFC 3339 time");
    assert_eq!(plaza_domain::time::to_millis(locked_at), lock.locked_at);
    // The refusal changed nothing and recorded nothing.
    let (_, audit) = send(
        &server,
        As::Token(&reader),
        "GET",
        "/api/v1/admin/audit-logs?action=post.moderate.hide",
        None,
    )
    .await;
    assert_eq!(audit["meta"]["pagination"]["total"], 0, "{audit}");
    let (_, listed) = send(
        &server,
        As::Token(&reader),
        "GET",
        "/api/v1/admin/posts?status=published",
        None,
    )
    .await;
    assert_eq!(ids(&listed), owned(&[&id]));

    // The holder never releases it (as if it crashed): it expires by itself.
    let deadline = Instant::now() + Duration::from_secs(15);
    let (status, body) = loop {
        let (status, body) = moderate(&server, &second, &id, json!({"action": "hide"})).await;
        if status != 423 || Instant::now() > deadline {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "hidden");
    assert_eq!(
        db.edit_lock(Resource::Post(post_id)).await.unwrap(),
        None,
        "the operation releases its lock when it ends"
    );
}

/// Plan lines that read a whole table or sort all matches.
fn full_scans(backend: Backend, plan: &[String]) -> Vec<String> {
    plan.iter()
        .filter(|line| match backend {
            Backend::Sqlite => {
                ["SCAN p", "SCAN posts"].contains(&line.as_str())
                    || line.contains("TEMP B-TREE FOR ORDER BY")
            }
            Backend::Postgres => line.contains("Seq Scan on posts"),
        })
        .cloned()
        .collect()
}

async fn admin_lists_read_indexes(backend: Backend) {
    let server = TestServer::start(backend).await;
    let seeded = server.cli(&[
        "dev",
        "seed",
        "--users",
        "100",
        "--posts",
        "3000",
        "--reported-percent",
        "5",
    ]);
    assert!(
        seeded.status.success(),
        "{}",
        String::from_utf8_lossy(&seeded.stderr)
    );
    let summary = String::from_utf8_lossy(&seeded.stdout).to_string();
    assert!(!summary.contains(" 0 reports"), "{summary}");
    let db = server.domain().await;
    let moderator = Viewer::Moderator(1);
    for query in [
        PostQuery {
            reported_only: true,
            ..Default::default()
        },
        PostQuery {
            reported_only: true,
            sort: PostSort::ReportCount,
            ..Default::default()
        },
        PostQuery {
            sort: PostSort::ReportCount,
            order: SortOrder::Asc,
            ..Default::default()
        },
    ] {
        let plan = db.explain_list_posts(&query, moderator).await.unwrap();
        assert!(
            full_scans(backend, &plan).is_empty(),
            "{query:?}:\n{}",
            plan.join("\n")
        );
    }
    server.create_user("admin@example.com", PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:read");
    let (status, page) = send(
        &server,
        As::Token(&token),
        "GET",
        "/api/v1/admin/posts?reported=true&limit=50",
        None,
    )
    .await;
    assert_eq!(status, 200, "{page}");
    let items = page["data"].as_array().unwrap();
    assert_eq!(items.len(), 50);
    assert!(
        items
            .iter()
            .all(|item| item["reportCount"].as_i64().unwrap() > 0
                && item["reports"].as_array().unwrap().len() as i64
                    == item["reportCount"].as_i64().unwrap())
    );

    // The queue's total is a counter kept by triggers: it equals the rows
    // counted per status, after seeding and after reported posts go.
    let total = |query: String| {
        let server = &server;
        let token = &token;
        async move {
            let (status, page) = send(
                server,
                As::Token(token),
                "GET",
                &format!("/api/v1/admin/posts?{query}&limit=1"),
                None,
            )
            .await;
            assert_eq!(status, 200, "{page}");
            page["meta"]["pagination"]["total"].as_i64().unwrap()
        }
    };
    let counted = || async {
        let mut sum = 0;
        for status in ["published", "draft", "hidden", "flagged"] {
            sum += total(format!("reported=true&status={status}")).await;
        }
        sum
    };
    let before = total("reported=true".to_owned()).await;
    assert_eq!(before, counted().await);
    server
        .sql("DELETE FROM posts WHERE id IN (SELECT id FROM posts WHERE report_count > 0 ORDER BY id LIMIT 3)")
        .await;
    server
        .sql("DELETE FROM post_reports WHERE post_id IN (SELECT id FROM posts WHERE report_count > 0 ORDER BY id LIMIT 2)")
        .await;
    let after = total("reported=true".to_owned()).await;
    assert_eq!(after, counted().await);
    assert_eq!(
        after,
        before - 5,
        "three reported posts deleted, two cleared"
    );
}

/// Audit logging adds one write to a decision's unit of work and none to a
/// refused one: the statements each call runs are counted from sqlx's
/// statement log, and the entries from the table.
async fn a_decision_adds_one_audit_write_and_a_refusal_none(backend: Backend) {
    let server = TestServer::start_with_statement_log(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:write");
    let id = post(
        &server,
        &author,
        json!({"title": "Watched", "content": "c"}),
    )
    .await;
    for (action, expected_status, expected_writes) in
        [("hide", 200, 1), ("hide", 409, 0), ("approve", 200, 1)]
    {
        let answered = server.log_count("answered");
        let audit_writes = server.log_count("INSERT INTO audit_log");
        let entries = server.sql_count("SELECT COUNT(*) FROM audit_log").await;
        let (status, body) = moderate(&server, &token, &id, json!({"action": action})).await;
        assert_eq!(status, expected_status, "{action}: {body}");
        server.wait_for_log_count("answered", answered + 1);
        assert_eq!(
            server.log_count("INSERT INTO audit_log") - audit_writes,
            expected_writes,
            "audit statements of {action} ({status})"
        );
        assert_eq!(
            server.sql_count("SELECT COUNT(*) FROM audit_log").await - entries,
            expected_writes as i64,
            "audit entries of {action} ({status})"
        );
    }
}

/// `action: delete` removes a post for good, so it needs `admin:delete` as
/// `DELETE` does; `admin:write` alone still hides.
async fn deleting_through_moderate_needs_admin_delete(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let writer = server.mint("admin@example.com", "admin:read,admin:write");
    let deleter = server.mint("admin@example.com", "admin:write,admin:delete");
    let id = post(&server, &author, json!({"title": "T", "content": "c"})).await;
    let path = format!("/api/v1/admin/posts/{id}/moderate");
    let delete = Some(json!({"action": "delete"}));

    let (status, body) = send(&server, As::Token(&writer), "POST", &path, delete.clone()).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "INSUFFICIENT_ADMIN_PERMISSIONS");
    assert_eq!(body["error"]["requiredPermission"], "admin:delete");
    let (status, _) = call(
        &server,
        "GET",
        &format!("/api/posts/{id}"),
        Some(&author),
        None,
    )
    .await;
    assert_eq!(status, 200, "the post is still there");
    let (status, body) = send(
        &server,
        As::Token(&writer),
        "POST",
        &path,
        Some(json!({"action": "hide"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = send(&server, As::Token(&deleter), "POST", &path, delete).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = call(
        &server,
        "GET",
        &format!("/api/posts/{id}"),
        Some(&author),
        None,
    )
    .await;
    assert_eq!(status, 404);
}
