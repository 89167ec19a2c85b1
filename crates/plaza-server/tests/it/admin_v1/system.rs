//! The versioned admin surface's feature flags, system maintenance (and its
//! rate tier `system`), and activity and moderation reports.

use crate::common;

use crate::common::{As, Backend, PASSWORD, TestServer, member, post};
use serde_json::{Value, json};

on_both_databases!(
    feature_flags_are_created_then_updated_with_their_audit_entries,
    bad_feature_flag_writes_are_refused_and_write_nothing,
    maintenance_actions_answer_what_they_did_and_are_audited,
    a_backup_is_an_archive_holding_the_database,
    backups_beyond_backup_keep_are_removed_oldest_first,
    system_actions_are_counted_in_their_own_tier,
    system_actions_fail_closed_when_redis_is_unreachable,
    the_user_activity_report_counts_what_users_did,
    the_moderation_report_counts_reports_and_actions,
    report_ranges_are_checked,
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
    let text = response.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    (status, body)
}

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .map(|value| value.to_str().unwrap().to_owned())
}

/// The audit entries with `action`, newest first.
async fn audit_entries(server: &TestServer, token: &str, action: &str) -> Vec<Value> {
    let path = format!("/api/v1/admin/audit-logs?action={action}&limit=100");
    let (status, body) = send(server, As::Token(token), "GET", &path, None).await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().unwrap().clone()
}

async fn audit_total(server: &TestServer, token: &str) -> i64 {
    let (_, body) = send(
        server,
        As::Token(token),
        "GET",
        "/api/v1/admin/audit-logs",
        None,
    )
    .await;
    body["meta"]["pagination"]["total"].as_i64().unwrap()
}

/// An admin (id) with read and write tokens.
struct Admin {
    id: i64,
    reader: String,
    writer: String,
}

async fn admin(server: &TestServer) -> Admin {
    let id = server.create_user("admin@example.com", PASSWORD, "admin");
    Admin {
        id,
        reader: server.mint("admin@example.com", "admin:read"),
        writer: server.mint("admin@example.com", "admin:write"),
    }
}

async fn feature_flags_are_created_then_updated_with_their_audit_entries(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin = admin(&server).await;
    let path = "/api/v1/admin/feature-flags/new-editor";

    let (status, created) = send(
        &server,
        As::Token(&admin.writer),
        "PUT",
        path,
        Some(json!({"enabled": true, "description": "The new editor", "rolloutPercentage": 30, "targetRoles": ["moderator", "admin", "moderator"]})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["success"], true);
    let flag = &created["data"];
    assert_eq!(flag["name"], "new-editor");
    assert_eq!(flag["enabled"], true);
    assert_eq!(flag["description"], "The new editor");
    assert_eq!(flag["rolloutPercentage"], 30);
    assert_eq!(flag["targetRoles"], json!(["moderator", "admin"]));
    assert_eq!(flag["updatedBy"], admin.id.to_string());
    assert!(flag["updatedAt"].is_string(), "{flag}");

    // Absent fields keep their value; null clears the description.
    let (status, updated) = send(
        &server,
        As::Token(&admin.writer),
        "PUT",
        path,
        Some(json!({"enabled": false, "description": null})),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["data"]["enabled"], false);
    assert_eq!(updated["data"]["description"], Value::Null);
    assert_eq!(updated["data"]["rolloutPercentage"], 30);
    assert_eq!(
        updated["data"]["targetRoles"],
        json!(["moderator", "admin"])
    );

    let (status, second) = send(
        &server,
        As::Token(&admin.writer),
        "PUT",
        "/api/v1/admin/feature-flags/beta.search_v2",
        Some(json!({"enabled": true})),
    )
    .await;
    assert_eq!(status, 201, "{second}");
    assert_eq!(second["data"]["rolloutPercentage"], 100);
    assert_eq!(second["data"]["targetRoles"], json!([]));

    let (status, list) = send(
        &server,
        As::Token(&admin.reader),
        "GET",
        "/api/v1/admin/feature-flags",
        None,
    )
    .await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["meta"]["pagination"]["total"], 2);
    let names: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|flag| flag["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["beta.search_v2", "new-editor"]);
    assert_eq!(list["data"][1]["enabled"], false);

    let created = audit_entries(&server, &admin.reader, "feature_flag.create").await;
    assert_eq!(created.len(), 2, "{created:?}");
    let first = created.last().unwrap();
    assert_eq!(first["targetType"], "feature_flag");
    assert_eq!(first["targetId"], "new-editor");
    assert_eq!(first["adminId"], admin.id.to_string());
    assert_eq!(first["surface"], "v1");
    assert_eq!(
        first["changes"]["rolloutPercentage"],
        json!({"before": null, "after": 30})
    );
    let updates = audit_entries(&server, &admin.reader, "feature_flag.update").await;
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(
        updates[0]["changes"],
        json!({
            "enabled": {"before": true, "after": false},
            "description": {"before": "The new editor", "after": null},
        })
    );
}

async fn bad_feature_flag_writes_are_refused_and_write_nothing(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin = admin(&server).await;
    let entries_before = audit_total(&server, &admin.reader).await;

    for (path, body, field) in [
        ("Bad-Name", json!({"enabled": true}), "flagName"),
        ("-leading", json!({"enabled": true}), "flagName"),
        (&"a".repeat(101), json!({"enabled": true}), "flagName"),
        ("ok", json!({"description": "no switch"}), "enabled"),
        ("ok", json!({"enabled": "yes"}), "enabled"),
        (
            "ok",
            json!({"enabled": true, "rolloutPercentage": 101}),
            "rolloutPercentage",
        ),
        (
            "ok",
            json!({"enabled": true, "rolloutPercentage": -1}),
            "rolloutPercentage",
        ),
        (
            "ok",
            json!({"enabled": true, "rolloutPercentage": 12.5}),
            "rolloutPercentage",
        ),
        (
            "ok",
            json!({"enabled": true, "targetRoles": ["admin", "wizard"]}),
            "targetRoles[1]",
        ),
        (
            "ok",
            json!({"enabled": true, "description": "x".repeat(501)}),
            "description",
        ),
    ] {
        let (status, refused) = send(
            &server,
            As::Token(&admin.writer),
            "PUT",
            &format!("/api/v1/admin/feature-flags/{path}"),
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 422, "{path} {body}: {refused}");
        assert_eq!(refused["success"], false);
        assert_eq!(refused["error"]["code"], "VALIDATION_ERROR");
        assert_eq!(refused["error"]["field"], field, "{path} {body}: {refused}");
    }

    let body = json!({"enabled": true});
    let path = "/api/v1/admin/feature-flags/ok";
    for (who, status, code) in [
        (As::Anonymous, 401, "UNAUTHORIZED"),
        (
            As::Token(&admin.reader),
            403,
            "INSUFFICIENT_ADMIN_PERMISSIONS",
        ),
    ] {
        let (got, refused) = send(&server, who, "PUT", path, Some(body.clone())).await;
        assert_eq!(
            (got, refused["error"]["code"].clone()),
            (status, json!(code))
        );
    }
    let (status, refused) = send(
        &server,
        As::Token(&admin.writer),
        "GET",
        "/api/v1/admin/feature-flags",
        None,
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["requiredPermission"], "admin:read");

    let (_, list) = send(
        &server,
        As::Token(&admin.reader),
        "GET",
        "/api/v1/admin/feature-flags",
        None,
    )
    .await;
    assert_eq!(list["meta"]["pagination"]["total"], 0, "{list}");
    assert_eq!(audit_total(&server, &admin.reader).await, entries_before);
}

async fn maintenance(server: &TestServer, token: &str, body: Value) -> (u16, Value) {
    send(
        server,
        As::Token(token),
        "POST",
        "/api/v1/admin/system/maintenance",
        Some(body),
    )
    .await
}

async fn maintenance_actions_answer_what_they_did_and_are_audited(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin = admin(&server).await;
    let (_, author) = member(&server, "author@example.com", "user").await;
    let mut posts = Vec::new();
    for title in ["First", "Second"] {
        posts.push(
            post(
                &server,
                &author,
                json!({"title": title, "content": "words to find"}),
            )
            .await,
        );
    }

    let (_, other_admin) = member(&server, "other-admin@example.com", "admin").await;
    // A reported post is still one post to index.
    let (status, report) = common::call(
        &server,
        "POST",
        &format!("/api/posts/{}/report", posts[0]),
        Some(&other_admin),
        Some(json!({"reason": "spam"})),
    )
    .await;
    assert_eq!(status, 201, "{report}");

    // Two anonymous answers are cached; clearing reports them.
    for path in ["/api/posts", "/api/search/posts?q=words"] {
        assert_eq!(server.get(path).await.status(), 200);
    }
    let (status, cleared) = maintenance(
        &server,
        &admin.writer,
        json!({"action": "cache_clear", "scope": "answers", "notify": true}),
    )
    .await;
    assert_eq!(status, 200, "{cleared}");
    let data = &cleared["data"];
    assert_eq!(data["action"], "cache_clear");
    assert_eq!(data["scope"], "answers");
    assert_eq!(data["cache"]["entriesCleared"], 2, "{data}");
    assert_eq!(
        data["cache"]["caches"],
        json!([
            {"name": "posts", "entriesCleared": 1},
            {"name": "search", "entriesCleared": 1},
            {"name": "emojis", "entriesCleared": 0},
            {"name": "replies", "entriesCleared": 0},
            {"name": "thread_pages", "entriesCleared": 0},
            {"name": "images", "entriesCleared": 0}
        ])
    );
    assert!(data["durationMs"].is_u64(), "{data}");
    let (_, again) = maintenance(&server, &admin.writer, json!({"action": "cache_clear"})).await;
    assert_eq!(again["data"]["cache"]["entriesCleared"], 0, "{again}");
    assert_eq!(again["data"]["scope"], "all");
    assert_eq!(again["data"]["notify"], false);
    // `notify` told the administrators (once: the second run did not ask),
    // and nobody else.
    let (_, told) = common::call(&server, "GET", "/api/alerts", Some(&other_admin), None).await;
    let told = told["alerts"].as_array().unwrap();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["title"], "Maintenance: cache_clear");
    assert!(
        told[0]["message"]
            .as_str()
            .unwrap()
            .contains("scope: answers"),
        "{told:?}"
    );
    let (_, not_told) = common::call(&server, "GET", "/api/alerts", Some(&author), None).await;
    assert_eq!(not_told["alerts"], json!([]));

    let (status, rebuilt) =
        maintenance(&server, &admin.writer, json!({"action": "rebuild_search"})).await;
    assert_eq!(status, 200, "{rebuilt}");
    assert_eq!(rebuilt["data"]["search"]["postsIndexed"], 2, "{rebuilt}");
    assert_eq!(rebuilt["data"]["search"]["usersIndexed"], 3, "{rebuilt}");
    let (_, found) = send(
        &server,
        As::Anonymous,
        "GET",
        "/api/search/posts?q=second",
        None,
    )
    .await;
    assert_eq!(found["results"].as_array().unwrap().len(), 1, "{found}");

    let uploads = server.data_dir.path().join("uploads");
    std::fs::create_dir_all(&uploads).unwrap();
    std::fs::write(uploads.join("a.png"), [0u8; 10]).unwrap();
    std::fs::write(uploads.join("b.png"), [0u8; 5]).unwrap();
    let (status, swept) =
        maintenance(&server, &admin.writer, json!({"action": "cleanup_uploads"})).await;
    assert_eq!(status, 200, "{swept}");
    let report = &swept["data"]["uploads"];
    assert_eq!(report["filesFound"], 2, "{report}");
    assert_eq!(report["bytesFound"], 15);
    assert_eq!(report["filesRemoved"], 0);
    assert_eq!(report["recordsRemoved"], 0);
    assert!(
        report["note"]
            .as_str()
            .unwrap()
            .contains("younger ones are kept")
    );
    assert!(
        uploads.join("a.png").exists(),
        "files without records younger than an hour are kept"
    );

    let entries = audit_entries(&server, &admin.reader, "system.maintenance.cache_clear").await;
    assert_eq!(entries.len(), 2);
    let first = entries.last().unwrap();
    assert_eq!(first["changes"]["scope"], "answers");
    assert_eq!(first["changes"]["notify"], true);
    assert_eq!(first["changes"]["result"]["cache"]["entriesCleared"], 2);
    assert_eq!(first["adminId"], admin.id.to_string());
    assert_eq!(first["targetType"], "system");
    let rebuilds = audit_entries(&server, &admin.reader, "system.maintenance.rebuild_search").await;
    assert_eq!(rebuilds[0]["changes"]["result"]["postsIndexed"], 2);
    let sweeps = audit_entries(&server, &admin.reader, "system.maintenance.cleanup_uploads").await;
    assert_eq!(sweeps.len(), 1);

    let entries_before = audit_total(&server, &admin.reader).await;
    for (body, field) in [
        (json!({"action": "reboot"}), "action"),
        (json!({"action": "cache_clear", "scope": ""}), "scope"),
        (
            json!({"action": "cache_clear", "scope": "a\u{0}b"}),
            "scope",
        ),
        (json!({"scope": "all"}), "action"),
        (json!({"action": "cache_clear", "notify": "yes"}), "notify"),
    ] {
        let (status, refused) = maintenance(&server, &admin.writer, body.clone()).await;
        assert_eq!(status, 422, "{body}: {refused}");
        assert_eq!(refused["error"]["code"], "VALIDATION_ERROR");
        assert_eq!(refused["error"]["field"], field, "{body}: {refused}");
    }
    let (status, refused) =
        maintenance(&server, &admin.reader, json!({"action": "cache_clear"})).await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["requiredPermission"], "admin:write");
    assert_eq!(audit_total(&server, &admin.reader).await, entries_before);
}

async fn a_backup_is_an_archive_holding_the_database(backend: Backend) {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;

    let server = TestServer::start(backend).await;
    let admin = admin(&server).await;
    for index in 0..3 {
        server.create_user(&format!("u{index}@example.com"), PASSWORD, "user");
    }
    let (status, answer) =
        maintenance(&server, &admin.writer, json!({"action": "backup_database"})).await;
    assert_eq!(status, 200, "{answer}");
    let backup = &answer["data"]["backup"];
    let file_name = backup["fileName"].as_str().unwrap();
    assert!(
        file_name.starts_with("plaza-") && file_name.ends_with(".tar.gz"),
        "{backup}"
    );
    let folder = server.data_dir.path().join("backups");
    let path = folder.join(file_name);
    let metadata = std::fs::metadata(&path).unwrap();
    assert_eq!(backup["sizeBytes"], metadata.len(), "{backup}");
    assert_eq!(metadata.permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(&path).unwrap(),
    ));
    let unpacked = tempfile::tempdir().unwrap();
    let mut manifest = String::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().into_owned();
        if name == std::path::Path::new("manifest.json") {
            entry.read_to_string(&mut manifest).unwrap();
        } else if name.starts_with("database") {
            entry
                .unpack(unpacked.path().join(name.file_name().unwrap()))
                .unwrap();
        }
    }
    let manifest: Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(manifest["counts"]["users"], 4, "{manifest}");
    match backend {
        Backend::Sqlite => {
            assert_eq!(backup["engine"], "sqlite");
            use sqlx::Connection;
            let copy_path = unpacked.path().join("plaza.db");
            let url = format!("sqlite://{}?mode=ro", copy_path.display());
            let mut copy = sqlx::SqliteConnection::connect(&url).await.unwrap();
            let users: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
                .fetch_one(&mut copy)
                .await
                .unwrap();
            assert_eq!(users, 4);
            let check: String = sqlx::query_scalar("PRAGMA integrity_check")
                .fetch_one(&mut copy)
                .await
                .unwrap();
            assert_eq!(check, "ok");
        }
        Backend::Postgres => {
            assert_eq!(backup["engine"], "postgres");
            let dump = unpacked.path().join("plaza.dump");
            assert!(
                std::fs::read(&dump).unwrap().starts_with(b"PGDMP"),
                "not a pg_dump archive"
            );
            let listing = std::process::Command::new("pg_restore")
                .arg("--list")
                .arg(&dump)
                .output()
                .unwrap();
            assert!(listing.status.success());
            let tables = String::from_utf8_lossy(&listing.stdout);
            assert!(tables.contains("TABLE DATA public users"), "{tables}");
        }
    }
    let entries = audit_entries(&server, &admin.reader, "system.maintenance.backup_database").await;
    assert_eq!(
        entries[0]["changes"]["result"]["backup"]["fileName"],
        file_name
    );
}

/// Each backup removes the oldest ones beyond `backup_keep`, the `.db` and
/// `.dump` files of earlier versions among them, and leaves the folder's
/// other files alone.
async fn backups_beyond_backup_keep_are_removed_oldest_first(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_BACKUP_KEEP", "2")]).await;
    let admin = admin(&server).await;
    let folder = server.data_dir.path().join("backups");
    std::fs::create_dir_all(&folder).unwrap();
    let earlier = [
        "plaza-20200101T000000.000Z.db",
        "plaza-20200102T000000.000Z.dump",
    ];
    for name in earlier {
        std::fs::write(folder.join(name), "a backup of an earlier version").unwrap();
    }
    let mut written = Vec::new();
    for round in 0..3 {
        let (status, answer) =
            maintenance(&server, &admin.writer, json!({"action": "backup_database"})).await;
        assert_eq!(status, 200, "{answer}");
        let backup = &answer["data"]["backup"];
        written.push(backup["fileName"].as_str().unwrap().to_owned());
        let expected = match round {
            0 => json!([earlier[0]]),
            1 => json!([earlier[1]]),
            _ => json!([written[0]]),
        };
        assert_eq!(backup["pruned"], expected, "round {round}: {backup}");
        if round == 0 {
            std::fs::write(folder.join("operator-notes.txt"), "kept").unwrap();
        }
    }
    let mut left: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    let mut expected = vec![
        written[1].clone(),
        written[2].clone(),
        "operator-notes.txt".to_owned(),
    ];
    expected.sort();
    assert_eq!(left, expected);
}

async fn system_actions_are_counted_in_their_own_tier(backend: Backend) {
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_RATE_LIMITS_ENABLED", "true"),
            ("PLAZA_RATE_LIMIT_ADMIN_SYSTEM", "2/hour"),
        ],
    )
    .await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let root = server.mint("root@example.com", "admin:super");
    let body = json!({"action": "cache_clear"});
    let run = || {
        server.send(
            As::Token(&root),
            "POST",
            "/api/v1/admin/system/maintenance",
            Some(&body),
        )
    };
    for remaining in ["1", "0"] {
        let response = run().await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "x-admin-tier").as_deref(), Some("system"));
        assert_eq!(header(&response, "x-ratelimit-limit").as_deref(), Some("2"));
        assert_eq!(
            header(&response, "x-ratelimit-remaining").as_deref(),
            Some(remaining)
        );
    }
    let refused = run().await;
    assert_eq!(refused.status(), 429);
    assert_eq!(header(&refused, "x-admin-tier").as_deref(), Some("system"));
    assert!(header(&refused, "retry-after").is_some());
    assert_eq!(
        header(&refused, "x-ratelimit-remaining").as_deref(),
        Some("0")
    );
    let refusal: Value = refused.json().await.unwrap();
    assert_eq!(refusal["success"], false, "{refusal}");
    assert_eq!(refusal["error"]["code"], "RATE_LIMITED");

    // The same super admin's other requests are in tier `super`, counted apart.
    let other = server
        .send(As::Token(&root), "GET", "/api/v1/admin/feature-flags", None)
        .await;
    assert_eq!(other.status(), 200);
    assert_eq!(header(&other, "x-admin-tier").as_deref(), Some("super"));
    let entries = audit_entries(&server, &root, "system.maintenance.cache_clear").await;
    assert_eq!(entries.len(), 2, "the refused action wrote nothing");
}

async fn system_actions_fail_closed_when_redis_is_unreachable(backend: Backend) {
    // Nothing listens on port 1: every check fails at once.
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_RATE_LIMITS_ENABLED", "true"),
            ("PLAZA_REDIS_URL", "redis://127.0.0.1:1"),
        ],
    )
    .await;
    server.create_user("admin@example.com", PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:read,admin:write");
    let refused = server
        .send(
            As::Token(&token),
            "POST",
            "/api/v1/admin/system/maintenance",
            Some(&json!({"action": "cache_clear"})),
        )
        .await;
    assert_eq!(refused.status(), 503);
    assert!(header(&refused, "retry-after").is_some());
    assert_eq!(header(&refused, "x-admin-tier").as_deref(), Some("system"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE", "{body}");

    // Reads of the surface fail open: answered, without limit headers.
    let read = server
        .send(
            As::Token(&token),
            "GET",
            "/api/v1/admin/audit-logs?action=system.maintenance.cache_clear",
            None,
        )
        .await;
    assert_eq!(read.status(), 200);
    assert!(header(&read, "x-ratelimit-limit").is_none());
    let listed: Value = read.json().await.unwrap();
    assert_eq!(listed["meta"]["pagination"]["total"], 0, "{listed}");
}

async fn the_user_activity_report_counts_what_users_did(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin = admin(&server).await;
    let (author_id, author) = member(&server, "author@example.com", "user").await;
    let (reader_id, reader) = member(&server, "reader@example.com", "user").await;
    // A second sign-in of the author, signed out at once: the sign-in
    // still counts.
    let second = server.sign_in("author@example.com", PASSWORD).await;
    let (status, _) = common::call(&server, "POST", "/api/auth/signout", Some(&second), None).await;
    assert_eq!(status, 200);
    let mut posts = Vec::new();
    for title in ["One", "Two", "Three"] {
        posts.push(post(&server, &author, json!({"title": title, "content": "text"})).await);
    }
    for post_id in &posts[..2] {
        let (status, body) = common::call(
            &server,
            "POST",
            &format!("/api/posts/{post_id}/report"),
            Some(&reader),
            Some(json!({"reason": "spam"})),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, body) = send(
        &server,
        As::Token(&admin.writer),
        "PUT",
        "/api/v1/admin/feature-flags/audited",
        Some(json!({"enabled": true})),
    )
    .await;
    assert_eq!(status, 201, "{body}");

    let path = format!("/api/v1/admin/reports/user-activity?userId={author_id}");
    let (status, report) = send(&server, As::Token(&admin.reader), "GET", &path, None).await;
    assert_eq!(status, 200, "{report}");
    let data = &report["data"];
    assert_eq!(data["user"]["id"], author_id.to_string());
    assert_eq!(data["user"]["email"], "author@example.com");
    assert_eq!(data["user"]["loginCount"], 2);
    assert_eq!(
        data["activity"],
        json!({"signIns": 2, "postsCreated": 3, "reportsMade": 0, "reportsReceived": 2, "moderationActions": 0}),
        "{data}"
    );
    assert!(data.get("details").is_none(), "{data}");
    assert!(data["period"]["startDate"].is_string() && data["period"]["endDate"].is_string());

    let (_, reader_report) = send(
        &server,
        As::Token(&admin.reader),
        "GET",
        &format!("/api/v1/admin/reports/user-activity?userId={reader_id}&includeDetails=true"),
        None,
    )
    .await;
    let data = &reader_report["data"];
    assert_eq!(data["activity"]["reportsMade"], 2, "{data}");
    assert_eq!(data["activity"]["reportsReceived"], 0);
    let details = &data["details"];
    assert_eq!(details["signIns"].as_array().unwrap().len(), 1, "{details}");
    assert_eq!(details["signIns"][0]["userId"], reader_id.to_string());
    assert_eq!(details["reportsMade"].as_array().unwrap().len(), 2);
    assert_eq!(
        details["reportsMade"][0]["postId"], posts[1],
        "newest first"
    );
    assert_eq!(details["posts"], json!([]));

    let (_, admin_report) = send(
        &server,
        As::Token(&admin.reader),
        "GET",
        &format!(
            "/api/v1/admin/reports/user-activity?userId={}&includeDetails=true",
            admin.id
        ),
        None,
    )
    .await;
    let data = &admin_report["data"];
    assert_eq!(data["activity"]["moderationActions"], 1, "{data}");
    assert_eq!(
        data["details"]["moderationActions"][0]["action"],
        "feature_flag.create"
    );

    let (_, everyone) = send(
        &server,
        As::Token(&admin.reader),
        "GET",
        "/api/v1/admin/reports/user-activity?includeDetails=true",
        None,
    )
    .await;
    let data = &everyone["data"];
    assert_eq!(data["user"], Value::Null);
    assert_eq!(
        data["activity"],
        json!({"signIns": 3, "postsCreated": 3, "reportsMade": 2, "reportsReceived": 2,
               "moderationActions": 1, "newUsers": 3, "activeUsers": 2}),
        "{data}"
    );
    assert_eq!(data["details"]["posts"].as_array().unwrap().len(), 3);
    assert_eq!(data["details"]["posts"][0]["title"], "Three");
    assert_eq!(data["details"]["posts"][0]["status"], "published");

    // A range before any of it counts nothing.
    let (_, before) = send(
        &server,
        As::Token(&admin.reader),
        "GET",
        &format!(
            "/api/v1/admin/reports/user-activity?userId={author_id}&startDate=2020-01-01&endDate=2020-06-30"
        ),
        None,
    )
    .await;
    assert_eq!(before["data"]["activity"]["postsCreated"], 0, "{before}");
    assert_eq!(
        before["data"]["period"]["startDate"],
        "2020-01-01T00:00:00Z"
    );
    assert_eq!(before["data"]["period"]["endDate"], "2020-07-01T00:00:00Z");

    let (status, missing) = send(
        &server,
        As::Token(&admin.reader),
        "GET",
        "/api/v1/admin/reports/user-activity?userId=999999",
        None,
    )
    .await;
    assert_eq!(status, 404, "{missing}");
    assert_eq!(missing["error"]["code"], "NOT_FOUND");
}

async fn the_moderation_report_counts_reports_and_actions(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin = admin(&server).await;
    let moderator = server.create_user("moderator@example.com", PASSWORD, "moderator");
    let (_, author) = member(&server, "author@example.com", "user").await;
    let mut reporters = Vec::new();
    for index in 0..3 {
        reporters.push(
            member(&server, &format!("r{index}@example.com"), "user")
                .await
                .1,
        );
    }
    let post_id = post(
        &server,
        &author,
        json!({"title": "Reported", "content": "x"}),
    )
    .await;
    for reporter in &reporters {
        let (status, body) = common::call(
            &server,
            "POST",
            &format!("/api/posts/{post_id}/report"),
            Some(reporter),
            Some(json!({"reason": "spam"})),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    // Two reports resolved by the moderator, one hour and three hours after
    // they were made; their moderation actions as the audit trail holds them.
    server
        .sql(&format!(
            "UPDATE post_reports SET created_at = created_at - 10800000, \
             resolved_at = created_at - 10800000 + 3600000 * (1 + 2 * (id % 2)), resolved_by = {moderator} \
             WHERE id IN (SELECT id FROM post_reports ORDER BY id LIMIT 2)"
        ))
        .await;
    for (actor, action) in [
        (moderator, "post.moderate.hide"),
        (moderator, "report.resolve"),
        (admin.id, "post.moderate.hide"),
        (admin.id, "feature_flag.update"),
    ] {
        let email = if actor == moderator {
            "moderator@example.com"
        } else {
            "admin@example.com"
        };
        let target = action.split('.').next().unwrap();
        server
            .sql(&format!(
                "INSERT INTO audit_log (created_at, actor_id, actor_email, action, target_type, \
                 target_id, changes, surface) VALUES ({}, {actor}, '{email}', '{action}', \
                 '{target}', '{post_id}', '{{}}', 'v1')",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_millis()
            ))
            .await;
    }

    let (status, report) = send(
        &server,
        As::Token(&admin.reader),
        "GET",
        "/api/v1/admin/reports/moderation",
        None,
    )
    .await;
    assert_eq!(status, 200, "{report}");
    let data = &report["data"];
    assert_eq!(data["reportsReceived"], 3, "{data}");
    assert_eq!(data["reportsResolved"], 2);
    assert_eq!(data["reportsOpen"], 1);
    assert_eq!(data["postsWithOpenReports"], 1);
    assert_eq!(data["averageResolutionSeconds"], 7200.0, "{data}");
    assert_eq!(data["averageResolutionTime"], "2h 0m");
    assert_eq!(
        data["actionsByType"],
        json!([{"action": "post.moderate.hide", "count": 2}, {"action": "report.resolve", "count": 1}])
    );
    assert_eq!(
        data["actionsByModerator"],
        json!([
            {"moderatorId": moderator.to_string(), "moderatorEmail": "moderator@example.com", "count": 2},
            {"moderatorId": admin.id.to_string(), "moderatorEmail": "admin@example.com", "count": 1},
        ])
    );

    let (_, empty) = send(
        &server,
        As::Token(&admin.reader),
        "GET",
        "/api/v1/admin/reports/moderation?startDate=2020-01-01&endDate=2020-12-31",
        None,
    )
    .await;
    let data = &empty["data"];
    assert_eq!(data["reportsReceived"], 0, "{data}");
    assert_eq!(data["averageResolutionTime"], Value::Null);
    assert_eq!(data["actionsByType"], json!([]));
}

async fn report_ranges_are_checked(backend: Backend) {
    let server = TestServer::start(backend).await;
    let admin = admin(&server).await;
    for report in ["user-activity", "moderation"] {
        for (query, field) in [
            ("startDate=2026-03-02&endDate=2026-03-01", "startDate"),
            ("startDate=2024-01-01&endDate=2025-01-01", "startDate"),
            ("startDate=2000-01-01", "startDate"),
            ("startDate=yesterday", "startDate"),
            ("endDate=2026-13-01", "endDate"),
        ] {
            let path = format!("/api/v1/admin/reports/{report}?{query}");
            let (status, refused) =
                send(&server, As::Token(&admin.reader), "GET", &path, None).await;
            assert_eq!(status, 422, "{path}: {refused}");
            assert_eq!(refused["error"]["code"], "VALIDATION_ERROR");
            assert_eq!(refused["error"]["field"], field, "{path}: {refused}");
        }
        let path = format!("/api/v1/admin/reports/{report}");
        let (status, answer) = send(&server, As::Token(&admin.reader), "GET", &path, None).await;
        assert_eq!(status, 200, "{answer}");
        let period = &answer["data"]["period"];
        let parse = |field: &str| {
            time::OffsetDateTime::parse(
                period[field].as_str().unwrap(),
                &time::format_description::well_known::Rfc3339,
            )
            .unwrap()
        };
        assert_eq!(
            parse("endDate") - parse("startDate"),
            time::Duration::days(30)
        );
        let (status, refused) = send(&server, As::Token(&admin.writer), "GET", &path, None).await;
        assert_eq!(status, 403, "{refused}");
    }
    for query in ["userId=abc", "includeDetails=maybe"] {
        let path = format!("/api/v1/admin/reports/user-activity?{query}");
        let (status, refused) = send(&server, As::Token(&admin.reader), "GET", &path, None).await;
        assert_eq!(status, 422, "{path}: {refused}");
    }
}
