//! A user's data export and erasure (DECISIONS.md "Accounts (round 4)"):
//! the archive holds the user's posts, reports, alerts, events, sessions
//! and files and nothing of anyone else; only the user and administrators
//! holding `users:manage` export (audited); exports are bounded, one at a
//! time per user, and stop when their client hangs up or reads nothing; an
//! erased user's files answer 404 at once
//! and leave the store, also when the store was down at the erasure, and
//! their events, sessions, linked accounts and admin tokens are gone.

use crate::common;

use std::collections::BTreeMap;
use std::io::{Cursor, Read};
use std::time::{Duration, Instant};

use crate::common::{As, Backend, TestServer, call, member, post};
use image::{DynamicImage, ImageFormat};
use serde_json::{Value, json};

on_both_databases!(
    an_export_holds_the_users_data_and_nothing_of_another,
    an_export_of_several_pages_holds_every_row_once,
    only_the_user_and_administrators_who_manage_users_export,
    exports_beyond_the_slots_are_503_and_a_hang_up_frees_its_slot,
    one_export_at_a_time_per_user_and_an_unread_one_ends,
    erasure_takes_files_events_sessions_accounts_and_tokens,
    a_store_that_failed_a_deletion_is_retried_by_the_job,
    an_export_reads_a_slow_s3_file_whole,
);

/// A PNG of noise (it does not compress), `side` pixels square.
fn noise_png(side: u32, seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).max(1);
    let image = DynamicImage::ImageRgb8(image::RgbImage::from_fn(side, side, |_, _| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let [r, g, b, _] = state.to_le_bytes();
        image::Rgb([r, g, b])
    }));
    let mut bytes = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
        .expect("encode");
    bytes
}

/// A multipart body: `file` and the text `fields`.
fn form(file: &[u8], fields: &[(&str, &str)]) -> (String, Vec<u8>) {
    let boundary = "plaza-test-boundary-5e2a";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"picture.png\"\r\n\
             Content-Type: image/png\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn send_form(
    server: &TestServer,
    path: &str,
    cookie: &str,
    (content_type, body): (String, Vec<u8>),
) -> Value {
    let response = server
        .client
        .post(server.url(path))
        .header("cookie", cookie)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200, "{path}");
    response.json().await.expect("JSON")
}

/// Uploads an image as `cookie`'s user: its stored file name and the URLs
/// of every stored size.
async fn upload(server: &TestServer, cookie: &str, seed: u32) -> (String, Vec<String>) {
    let body = send_form(
        server,
        "/api/upload/image",
        cookie,
        form(&noise_png(48, seed), &[]),
    )
    .await;
    let file = &body["file"];
    let mut urls = vec![file["url"].as_str().expect("url").to_owned()];
    for variant in file["variants"].as_object().expect("variants").values() {
        urls.push(variant["url"].as_str().expect("variant url").to_owned());
    }
    (
        file["filename"].as_str().expect("filename").to_owned(),
        urls,
    )
}

/// Uploads a custom emoji as `cookie`'s user: its image URL.
async fn custom_emoji(server: &TestServer, cookie: &str, name: &str) -> String {
    let body = send_form(
        server,
        "/api/emojis/custom",
        cookie,
        form(&noise_png(32, 7), &[("name", name)]),
    )
    .await;
    body["emoji"]["custom_image_url"]
        .as_str()
        .expect("image url")
        .to_owned()
}

/// Sends one page view as `cookie`'s user, stored when this returns; its
/// event id.
async fn page_view(server: &TestServer, cookie: &str, path: &str) -> String {
    let event = json!({
        "event_type": "page_view",
        "event_data": {"path": path, "session_id": format!("session-{path}")},
        "timestamp": now_text(),
    });
    let (status, body) = call(
        server,
        "POST",
        "/api/analytics/collect",
        Some(cookie),
        Some(event),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["event_id"].as_str().expect("event id").to_owned()
}

fn now_text() -> String {
    plaza_domain::time::rfc3339(plaza_domain::time::now_millis())
}

/// The archive's entries by name.
pub(crate) fn unzip(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).expect("a ZIP archive");
    let mut entries = BTreeMap::new();
    for index in 0..archive.len() {
        let mut file = archive.by_index(index).expect("an entry");
        let mut content = Vec::new();
        file.read_to_end(&mut content).expect("the entry reads");
        entries.insert(file.name().to_owned(), content);
    }
    entries
}

pub(crate) fn json_of(entries: &BTreeMap<String, Vec<u8>>, name: &str) -> Value {
    serde_json::from_slice(
        entries
            .get(name)
            .unwrap_or_else(|| panic!("{name} in the archive")),
    )
    .unwrap_or_else(|error| panic!("{name} is JSON: {error}"))
}

pub(crate) async fn export(server: &TestServer, id: i64, cookie: &str) -> reqwest::Response {
    server
        .send(
            As::Session(cookie),
            "GET",
            &format!("/api/users/{id}/export"),
            None,
        )
        .await
}

async fn an_export_holds_the_users_data_and_nothing_of_another(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (alice, alice_cookie) = member(&server, "alice@example.com", "user").await;
    let (_, bob_cookie) = member(&server, "bob@example.com", "user").await;
    post(
        &server,
        &alice_cookie,
        json!({"title": "Alice in public", "content": "Hello from Alice", "published": true}),
    )
    .await;
    post(
        &server,
        &alice_cookie,
        json!({"title": "Alice drafting", "content": "Not yet", "published": false}),
    )
    .await;
    let bobs_post = post(
        &server,
        &bob_cookie,
        json!({"title": "Bob writes", "content": "Bob's words", "published": true}),
    )
    .await;
    let (status, body) = call(
        &server,
        "POST",
        &format!("/api/posts/{bobs_post}/report"),
        Some(&alice_cookie),
        Some(json!({"reason": "Alice reports this"})),
    )
    .await;
    assert!(status == 200 || status == 201, "{status} {body}");
    let (alices_file, alices_urls) = upload(&server, &alice_cookie, 1).await;
    let (bobs_file, _) = upload(&server, &bob_cookie, 2).await;
    let alices_emoji = custom_emoji(&server, &alice_cookie, "alice_wave").await;
    let alices_event = page_view(&server, &alice_cookie, "/alice-was-here").await;
    let bobs_event = page_view(&server, &bob_cookie, "/bob-was-here").await;

    let response = export(&server, alice, &alice_cookie).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/zip");
    let disposition = response.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        disposition.starts_with("attachment; filename=\"plaza-export-alice-")
            && disposition.ends_with(".zip\""),
        "{disposition}"
    );
    let bytes = response.bytes().await.expect("the archive");
    let entries = unzip(&bytes);
    for name in [
        "profile.json",
        "posts.json",
        "reports.json",
        "alerts.json",
        "analytics.json",
        "sessions.json",
        "uploads.json",
    ] {
        assert!(entries.contains_key(name), "{name} in {:?}", entries.keys());
    }

    let profile = json_of(&entries, "profile.json");
    assert_eq!(profile["user"]["email"], "alice@example.com");
    assert_eq!(profile["user"]["id"], alice.to_string());
    let posts = json_of(&entries, "posts.json");
    let titles: Vec<&str> = posts
        .as_array()
        .expect("posts")
        .iter()
        .map(|post| post["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Alice in public", "Alice drafting"]);
    let reports = json_of(&entries, "reports.json");
    assert_eq!(reports[0]["reason"], "Alice reports this");
    assert_eq!(reports[0]["postId"], bobs_post);
    let events = json_of(&entries, "analytics.json");
    assert_eq!(events.as_array().unwrap().len(), 1, "{events}");
    assert_eq!(events[0]["eventId"], alices_event);
    assert_eq!(events[0]["eventData"]["path"], "/alice-was-here");
    assert_eq!(
        json_of(&entries, "sessions.json").as_array().unwrap().len(),
        1
    );

    // The uploaded file and the custom emoji's image, byte for byte.
    let served = server.get(&alices_urls[0]).await.bytes().await.unwrap();
    assert_eq!(entries[&format!("uploads/{alices_file}")], served.to_vec());
    let emoji_key = alices_emoji.rsplit('/').next().unwrap();
    let emoji_bytes = server.get(&alices_emoji).await.bytes().await.unwrap();
    assert_eq!(
        entries[&format!("uploads/{emoji_key}")],
        emoji_bytes.to_vec()
    );
    let uploads = json_of(&entries, "uploads.json");
    assert_eq!(uploads.as_array().unwrap().len(), 2, "{uploads}");

    // Nothing of Bob's, and no secret of Alice's.
    let session_token = alice_cookie
        .split_once('=')
        .unwrap()
        .1
        .split(';')
        .next()
        .unwrap();
    for (name, content) in &entries {
        assert!(!name.contains(&bobs_file), "{name}");
        let text = String::from_utf8_lossy(content);
        for foreign in [
            "bob@example.com",
            "Bob writes",
            "Bob's words",
            &bobs_event,
            "/bob-was-here",
            &bobs_file,
        ] {
            assert!(!text.contains(foreign), "{name} holds {foreign}");
        }
        for secret in ["argon2", "password", "token", session_token] {
            assert!(!text.contains(secret), "{name} holds {secret}");
        }
    }
}

/// The export reads 200 rows a statement: 400 events fill two pages and
/// leave a third empty, and each event stands in the archive once.
async fn an_export_of_several_pages_holds_every_row_once(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (alice, cookie) = member(&server, "alice@example.com", "user").await;
    let mut sent = Vec::new();
    for batch in 0..4 {
        let events: Vec<Value> = (0..100)
            .map(|index| {
                json!({
                    "event_type": "page_view",
                    "event_data": {"path": format!("/page-{batch}-{index}")},
                    "timestamp": now_text(),
                })
            })
            .collect();
        let (status, body) = call(
            &server,
            "POST",
            "/api/analytics/collect/batch",
            Some(&cookie),
            Some(json!({"events": events})),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        sent.extend(
            body["event_ids"]
                .as_array()
                .expect("event ids")
                .iter()
                .map(|id| id.as_str().expect("an id").to_owned()),
        );
    }

    let response = export(&server, alice, &cookie).await;
    assert_eq!(response.status(), 200);
    let entries = unzip(&response.bytes().await.expect("the archive"));
    let exported: Vec<String> = json_of(&entries, "analytics.json")
        .as_array()
        .expect("events")
        .iter()
        .map(|event| event["eventId"].as_str().expect("an id").to_owned())
        .collect();
    assert_eq!(exported.len(), 400, "every event once");
    let mut exported_sorted = exported.clone();
    exported_sorted.sort();
    exported_sorted.dedup();
    sent.sort();
    assert_eq!(exported_sorted, sent);
}

async fn only_the_user_and_administrators_who_manage_users_export(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (alice, alice_cookie) = member(&server, "alice@example.com", "user").await;
    let (hidden, _) = member(&server, "hidden@example.com", "user").await;
    let (_, bob_cookie) = member(&server, "bob@example.com", "user").await;
    let (_, moderator_cookie) = member(&server, "moderator@example.com", "moderator").await;
    let (admin, admin_cookie) = member(&server, "admin@example.com", "admin").await;
    server
        .sql(&format!(
            "UPDATE users SET profile_public = FALSE WHERE id = {hidden}"
        ))
        .await;
    let user_exports = || async {
        let entries = server.domain().await.audit_entries(100).await.unwrap();
        entries
            .into_iter()
            .filter(|entry| entry.action == "user.export")
            .collect::<Vec<_>>()
    };

    let anonymous = server
        .send(
            As::Anonymous,
            "GET",
            &format!("/api/users/{alice}/export"),
            None,
        )
        .await;
    assert_eq!(anonymous.status(), 401);
    assert_eq!(export(&server, alice, &bob_cookie).await.status(), 403);
    assert_eq!(
        export(&server, alice, &moderator_cookie).await.status(),
        403
    );
    let refused = export(&server, hidden, &bob_cookie).await;
    assert_eq!(refused.status(), 404);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "NOT_FOUND", "{body}");
    assert_eq!(export(&server, 999_999, &alice_cookie).await.status(), 404);

    let own = export(&server, alice, &alice_cookie).await;
    assert_eq!(own.status(), 200);
    unzip(&own.bytes().await.unwrap());
    assert!(
        user_exports().await.is_empty(),
        "a user's own export is no admin action"
    );

    let by_admin = export(&server, alice, &admin_cookie).await;
    assert_eq!(by_admin.status(), 200);
    let entries = unzip(&by_admin.bytes().await.unwrap());
    assert_eq!(
        json_of(&entries, "profile.json")["user"]["email"],
        "alice@example.com"
    );
    let audited = user_exports().await;
    assert_eq!(audited.len(), 1, "{audited:?}");
    assert_eq!(audited[0].actor_id, Some(admin));
    assert_eq!(
        audited[0].target_id.as_deref(),
        Some(alice.to_string().as_str())
    );

    // Without `users:manage`, an administrator is refused like anyone else.
    server
        .sql(
            "DELETE FROM role_permissions WHERE role_id = (SELECT id FROM roles WHERE name = 'admin') \
             AND permission_id = (SELECT id FROM permissions WHERE name = 'users:manage')",
        )
        .await;
    assert_eq!(export(&server, alice, &admin_cookie).await.status(), 403);
    assert_eq!(user_exports().await.len(), 1);
}

async fn exports_beyond_the_slots_are_503_and_a_hang_up_frees_its_slot(backend: Backend) {
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_EXPORT_MAX_CONCURRENT", "1"),
            ("PLAZA_RATE_LIMITS_ENABLED", "false"),
        ],
    )
    .await;
    let (alice, cookie) = member(&server, "alice@example.com", "user").await;
    let (bob, bob_cookie) = member(&server, "bob@example.com", "user").await;
    fill_with_events(&server, &cookie).await;
    let held = start_export(&server, alice, &cookie).await;

    let refused = export(&server, bob, &bob_cookie).await;
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE", "{body}");

    drop(held);
    server.wait_for_log("data export cut off");
    let logs = server.logs();
    let cut_off = logs
        .lines()
        .find(|line| line.contains("data export cut off"))
        .expect("the cut-off line");
    // The body's reader went away with the client, not a timeout or a stop.
    assert!(cut_off.contains("broken pipe"), "{logs}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let response = export(&server, alice, &cookie).await;
        if response.status() == 200 {
            let entries = unzip(&response.bytes().await.unwrap());
            assert_eq!(
                json_of(&entries, "analytics.json")
                    .as_array()
                    .unwrap()
                    .len(),
                5000
            );
            break;
        }
        assert_eq!(response.status(), 409, "alice's own export still holds");
        assert!(
            Instant::now() < deadline,
            "the slot of the hung-up export stayed taken"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// About 20 MB of events that do not compress for the user of `cookie`:
/// more than the pipe and the sockets hold, so an export not read stays in
/// progress.
async fn fill_with_events(server: &TestServer, cookie: &str) {
    let mut noise = 0x2545_f491_u64;
    for _ in 0..50 {
        let events: Vec<Value> = (0..100)
            .map(|_| {
                let filler: String = (0..3800)
                    .map(|_| {
                        noise ^= noise << 13;
                        noise ^= noise >> 7;
                        noise ^= noise << 17;
                        char::from(b'!' + (noise % 90) as u8)
                    })
                    .collect();
                json!({"event_type": "scroll", "event_data": {"filler": filler}, "timestamp": now_text()})
            })
            .collect();
        let (status, body) = call(
            server,
            "POST",
            "/api/analytics/collect/batch",
            Some(cookie),
            Some(json!({"events": events})),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
}

/// An export of user `id` started and left unread: its answer, whose body
/// nobody reads.
async fn start_export(server: &TestServer, id: i64, cookie: &str) -> reqwest::Response {
    let held = common::client()
        .get(server.url(&format!("/api/users/{id}/export")))
        .header("cookie", cookie)
        .send()
        .await
        .expect("request");
    assert_eq!(held.status(), 200);
    held
}

async fn one_export_at_a_time_per_user_and_an_unread_one_ends(backend: Backend) {
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_EXPORT_MAX_CONCURRENT", "3"),
            ("PLAZA_EXPORT_IDLE_SECS", "2"),
            ("PLAZA_RATE_LIMITS_ENABLED", "false"),
        ],
    )
    .await;
    let (alice, cookie) = member(&server, "alice@example.com", "user").await;
    let (bob, bob_cookie) = member(&server, "bob@example.com", "user").await;
    fill_with_events(&server, &cookie).await;
    let held = start_export(&server, alice, &cookie).await;

    // Slots are left, but alice holds her one export.
    let refused = export(&server, alice, &cookie).await;
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "CONFLICT", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("one export at a time"),
        "{body}"
    );
    let other = export(&server, bob, &bob_cookie).await;
    assert_eq!(other.status(), 200, "another user exports meanwhile");
    other.bytes().await.unwrap();

    // Alice reads nothing, and keeps the connection open: her export ends
    // after the idle time and frees her place.
    server.wait_for_log("read nothing for 2 s");
    let again = export(&server, alice, &cookie).await;
    assert_eq!(again.status(), 200);
    let entries = unzip(&again.bytes().await.unwrap());
    assert_eq!(
        json_of(&entries, "analytics.json")
            .as_array()
            .unwrap()
            .len(),
        5000
    );
    let cut_short = held.bytes().await;
    assert!(
        cut_short.is_err(),
        "the idle export ends in a broken download, not a short archive"
    );
}

async fn erasure_takes_files_events_sessions_accounts_and_tokens(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (alice, cookie) = member(&server, "alice@example.com", "admin").await;
    let second_session = server.sign_in("alice@example.com", common::PASSWORD).await;
    let (_, bob_cookie) = member(&server, "bob@example.com", "user").await;
    let token = server.mint("alice@example.com", "admin:read");
    let admin_read = server
        .send(As::Token(&token), "GET", "/api/v1/admin/users", None)
        .await;
    assert_eq!(admin_read.status(), 200);
    server
        .sql(&format!(
            "INSERT INTO accounts (user_id, provider, provider_account_id, created_at) \
             VALUES ({alice}, 'github', 'alice-at-github', 0)"
        ))
        .await;
    let (alices_file, mut urls) = upload(&server, &cookie, 1).await;
    urls.push(custom_emoji(&server, &cookie, "alice_wave").await);
    let (_, bobs_urls) = upload(&server, &bob_cookie, 2).await;
    page_view(&server, &cookie, "/alice-was-here").await;
    page_view(&server, &bob_cookie, "/bob-was-here").await;
    for url in &urls {
        assert_eq!(server.get(url).await.status(), 200, "{url}");
    }
    let uploads_dir = server.data_dir.path().join("uploads");
    let stored: Vec<String> = urls
        .iter()
        .map(|url| url.rsplit('/').next().unwrap().to_owned())
        .collect();
    assert!(uploads_dir.join(&alices_file).exists());

    let (status, body) = call(
        &server,
        "DELETE",
        &format!("/api/users/{alice}"),
        Some(&cookie),
        None,
    )
    .await;
    assert_eq!(status, 204, "{body}");

    for url in &urls {
        assert_eq!(
            server.get(url).await.status(),
            404,
            "{url} right after the erasure"
        );
    }
    for url in &bobs_urls {
        assert_eq!(server.get(url).await.status(), 200, "Bob's {url}");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while stored.iter().any(|key| uploads_dir.join(key).exists()) {
        assert!(
            Instant::now() < deadline,
            "files of the erased user stayed in the store"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (what, count) in [
        (
            "events",
            format!("SELECT COUNT(*) FROM analytics_events WHERE user_id = {alice}"),
        ),
        (
            "rollup visits",
            format!("SELECT COUNT(*) FROM analytics_rollup_visits WHERE user_id = {alice}"),
        ),
        (
            "rollup sessions",
            format!("SELECT COUNT(*) FROM analytics_rollup_sessions WHERE user_id = {alice}"),
        ),
        (
            "sessions",
            format!("SELECT COUNT(*) FROM sessions WHERE user_id = {alice}"),
        ),
        (
            "accounts",
            format!("SELECT COUNT(*) FROM accounts WHERE user_id = {alice}"),
        ),
        (
            "upload records",
            "SELECT COUNT(*) FROM uploads WHERE user_id IS NULL".to_owned(),
        ),
        (
            "custom emojis",
            format!("SELECT COUNT(*) FROM emojis WHERE owner_id = {alice}"),
        ),
    ] {
        assert_eq!(
            server.sql_count(&count).await,
            0,
            "{what} of the erased user"
        );
    }
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM analytics_events")
            .await,
        1,
        "Bob's event stays"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while server
        .sql_count("SELECT COUNT(*) FROM store_deletions")
        .await
        > 0
    {
        assert!(Instant::now() < deadline, "deleted files stayed listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = server
        .send(As::Token(&token), "GET", "/api/v1/admin/users", None)
        .await;
    assert_eq!(after.status(), 401, "the erased admin's token");
    for session in [&cookie, &second_session] {
        let (status, _) = call(&server, "GET", "/api/auth/sessions", Some(session), None).await;
        assert_eq!(status, 401);
    }
}

/// A TCP proxy to `upstream` that, while `up` says false, refuses new
/// connections and cuts those it forwards: an object store that is down,
/// then back.
async fn switchable_proxy(upstream: u16, up: tokio::sync::watch::Receiver<bool>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            if !*up.borrow() {
                drop(client);
                continue;
            }
            let mut up = up.clone();
            tokio::spawn(async move {
                if let Ok(mut store) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                {
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut store) => {}
                        _ = up.wait_for(|up| !*up) => {}
                    }
                }
            });
        }
    });
    endpoint
}

async fn a_store_that_failed_a_deletion_is_retried_by_the_job(backend: Backend) {
    let Some(moto) = Moto::start() else {
        common::skip(
            "a_store_that_failed_a_deletion_is_retried_by_the_job",
            "python3 -m moto.server is not installed",
        );
        return;
    };
    let moto_endpoint = format!("http://127.0.0.1:{}", moto.port);
    let created = std::process::Command::new("python3")
        .args(["-c", &format!("import urllib.request as r; r.urlopen(r.Request('{moto_endpoint}/plaza-test', method='PUT'))")])
        .status()
        .unwrap();
    assert!(created.success(), "bucket created");
    let (up, watched) = tokio::sync::watch::channel(true);
    let endpoint = switchable_proxy(moto.port, watched).await;
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_STORAGE_URL", "s3://plaza-test/uploads"),
            ("PLAZA_STORAGE_TIMEOUT_SECS", "2"),
            ("PLAZA_ERASED_FILE_RETRY_SECS", "1"),
            ("AWS_ENDPOINT_URL", endpoint.as_str()),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_ALLOW_HTTP", "true"),
        ],
    )
    .await;
    let (alice, cookie) = member(&server, "alice@example.com", "user").await;
    let (_, urls) = upload(&server, &cookie, 1).await;
    assert!(!bucket_keys(&moto_endpoint).await.is_empty());

    up.send_replace(false);
    let (status, body) = call(
        &server,
        "DELETE",
        &format!("/api/users/{alice}"),
        Some(&cookie),
        None,
    )
    .await;
    assert_eq!(status, 204, "{body}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while server
        .sql_count(
            "SELECT COUNT(*) FROM store_deletions WHERE attempts > 0 AND last_error IS NOT NULL",
        )
        .await
        == 0
    {
        assert!(Instant::now() < deadline, "no deletion was attempted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let left = bucket_keys(&moto_endpoint).await;
    assert_eq!(left.len(), urls.len(), "the store was down: {left:?}");
    // Listed, so not served: answered without asking the store.
    for url in &urls {
        assert_eq!(
            server.get(url).await.status(),
            404,
            "{url} while the store is down"
        );
    }
    up.send_replace(true);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let keys = bucket_keys(&moto_endpoint).await;
        if keys.is_empty() {
            break;
        }
        for url in &urls {
            assert_eq!(
                server.get(url).await.status(),
                404,
                "{url} while the store still holds it"
            );
        }
        assert!(
            Instant::now() < deadline,
            "the job left files of the erased user: {keys:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while server
        .sql_count("SELECT COUNT(*) FROM store_deletions")
        .await
        > 0
    {
        assert!(Instant::now() < deadline, "deleted files stayed listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Keys under `uploads/` in moto's bucket, asked directly.
async fn bucket_keys(endpoint: &str) -> Vec<String> {
    let listing = reqwest::get(format!("{endpoint}/plaza-test?list-type=2&prefix=uploads/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    listing
        .split("<Key>")
        .skip(1)
        .filter_map(|rest| rest.split("</Key>").next())
        .map(str::to_owned)
        .collect()
}

/// A moto S3 server on a free loopback port, stopped when dropped.
struct Moto {
    child: std::process::Child,
    port: u16,
}

impl Moto {
    fn start() -> Option<Moto> {
        let installed = std::process::Command::new("python3")
            .args(["-c", "import moto.server"])
            .status()
            .ok()?
            .success();
        if !installed {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let child = std::process::Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        let moto = Moto { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(moto);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fake S3 store on loopback: it keeps what is put, and sends each file
/// it is asked for in `pieces` parts `gap` apart, so one file takes longer
/// to read than one call to the store may, while no part is late. Answers
/// its endpoint.
async fn trickling_store(pieces: usize, gap: Duration) -> String {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let files: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let files = files.clone();
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                loop {
                    let mut request_line = String::new();
                    if stream.read_line(&mut request_line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let mut parts = request_line.split_whitespace();
                    let method = parts.next().unwrap_or_default().to_owned();
                    let target = parts.next().unwrap_or_default().to_owned();
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        stream.read_line(&mut line).await.unwrap();
                        if line.trim().is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    stream.read_exact(&mut body).await.unwrap();
                    let stored = files.lock().unwrap().get(&target).cloned();
                    let head = |status: &str, length: usize| {
                        format!(
                            "HTTP/1.1 {status}\r\ncontent-length: {length}\r\netag: \"1\"\r\n\
                             last-modified: Sat, 28 Nov 2026 00:00:00 GMT\r\n\r\n"
                        )
                    };
                    let writer = stream.get_mut();
                    match (method.as_str(), stored) {
                        ("PUT", _) => {
                            files.lock().unwrap().insert(target, body);
                            writer
                                .write_all(head("200 OK", 0).as_bytes())
                                .await
                                .unwrap();
                        }
                        ("HEAD", Some(file)) => {
                            writer
                                .write_all(head("200 OK", file.len()).as_bytes())
                                .await
                                .unwrap();
                        }
                        ("GET", Some(file)) => {
                            writer
                                .write_all(head("200 OK", file.len()).as_bytes())
                                .await
                                .unwrap();
                            let piece = file.len().div_ceil(pieces).max(1);
                            for (index, chunk) in file.chunks(piece).enumerate() {
                                if index > 0 {
                                    tokio::time::sleep(gap).await;
                                }
                                writer.write_all(chunk).await.unwrap();
                                writer.flush().await.unwrap();
                            }
                        }
                        ("DELETE", _) => {
                            writer
                                .write_all(b"HTTP/1.1 204 No Content\r\n\r\n")
                                .await
                                .unwrap();
                        }
                        _ => {
                            let missing = "<Error><Code>NoSuchKey</Code></Error>";
                            writer
                                .write_all(
                                    format!(
                                        "HTTP/1.1 404 Not Found\r\ncontent-length: {}\r\n\r\n{missing}",
                                        missing.len()
                                    )
                                    .as_bytes(),
                                )
                                .await
                                .unwrap();
                        }
                    }
                }
            });
        }
    });
    endpoint
}

async fn an_export_reads_a_slow_s3_file_whole(backend: Backend) {
    // Each call to the store may take 1 s; each file arrives in three parts
    // 600 ms apart, 1.2 s in all.
    let endpoint = trickling_store(3, Duration::from_millis(600)).await;
    let env = crate::uploads::s3_env(&endpoint, "1");
    let server = TestServer::start_with(backend, &crate::uploads::borrowed(&env)).await;
    let (id, cookie) = member(&server, "slow@example.com", "user").await;
    let (status, uploaded) = crate::uploads::upload(
        &server,
        &cookie,
        "a.png",
        &crate::uploads::encoded(&crate::uploads::picture(64, 64), ImageFormat::Png),
    )
    .await;
    assert_eq!(status, 200, "{uploaded}");
    let answer = export(&server, id, &cookie).await;
    assert_eq!(answer.status(), 200);
    let bytes = answer.bytes().await.expect("the whole archive");
    let entries = unzip(&bytes);
    let files: Vec<&String> = entries
        .keys()
        .filter(|name| name.starts_with("uploads/"))
        .collect();
    assert!(
        !files.is_empty(),
        "the file is in the archive: {:?}",
        entries.keys()
    );
    for name in files {
        assert!(!entries[name].is_empty(), "{name} is whole");
    }
}
