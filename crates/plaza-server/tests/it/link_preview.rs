//! Link preview through HTTP, against target pages served on loopback.

use crate::common::{Backend, TestServer};
use axum::Router;
use axum::http::StatusCode;
use axum::response::Html;
use axum::routing::get;
use serde_json::Value;

/// Settings that let Plaza reach the loopback target site.
fn reach(site: &str) -> [(&'static str, String); 2] {
    let port = url::Url::parse(site).unwrap().port().unwrap();
    [
        ("PLAZA_LINK_PREVIEW_ALLOW_PRIVATE", "true".to_owned()),
        ("PLAZA_LINK_PREVIEW_ALLOWED_PORTS", format!("[{port}]")),
    ]
}

async fn start(site: &str) -> TestServer {
    let env = reach(site);
    let env: Vec<(&str, &str)> = env
        .iter()
        .map(|(key, value)| (*key, value.as_str()))
        .collect();
    TestServer::start_with(Backend::Sqlite, &env).await
}

/// `GET /api/link-preview?url=…`, ready to send.
fn preview_request(server: &TestServer, url: &str) -> reqwest::RequestBuilder {
    server
        .client
        .get(server.url("/api/link-preview"))
        .query(&[("url", url)])
}

async fn target_site() -> String {
    let app = Router::new()
        .route(
            "/article",
            get(|| async {
                Html(
                    "<html><head><title>Plain title</title>\
                     <meta property=\"og:title\" content=\"OG &amp; title\">\
                     <meta name=\"description\" content=\"  A   description \">\
                     <meta property=\"og:image\" content=\"/img/cover.png\"></head><body>x</body></html>",
                )
            }),
        )
        .route("/missing", get(|| async { (StatusCode::NOT_FOUND, "gone") }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    base
}

#[tokio::test]
async fn previews_follow_the_metadata_order_with_absolute_images() {
    let site = target_site().await;
    let server = start(&site).await;
    let target = format!("{site}/article");
    let response = preview_request(&server, &target).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("no-store")
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["title"], "OG & title");
    assert_eq!(body["description"], "A description");
    assert_eq!(body["image"], format!("{site}/img/cover.png"));
    assert_eq!(body["url"], target);
}

#[tokio::test]
async fn link_preview_errors_use_error_and_details() {
    let site = target_site().await;
    let server = start(&site).await;
    let missing = server.get("/api/link-preview").await;
    assert_eq!(missing.status(), 400);
    let body: Value = missing.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("url is required"),
        "{body}"
    );
    assert!(body["details"].is_string());

    for bad in ["not a url", "ftp://example.com/file", "javascript:alert(1)"] {
        let response = preview_request(&server, bad).send().await.unwrap();
        assert_eq!(response.status(), 400, "{bad}");
    }

    let gone = preview_request(&server, &format!("{site}/missing"))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 502);
    let body: Value = gone.json().await.unwrap();
    assert!(body["error"].is_string());
    assert!(body["details"].as_str().unwrap().contains("404"), "{body}");
}

#[tokio::test]
async fn private_targets_are_refused_by_default() {
    let site = target_site().await;
    let server = TestServer::start(Backend::Sqlite).await;
    for target in [
        format!("{site}/article"),
        "http://[::ffff:127.0.0.1]/".to_owned(),
        "http://2130706433/".to_owned(),
    ] {
        let response = preview_request(&server, &target).send().await.unwrap();
        assert_eq!(response.status(), 400, "{target}");
        let body: Value = response.json().await.unwrap();
        assert!(body["error"].is_string() && body["details"].is_string());
    }
}

/// A port that was free a moment ago, for a server whose base URL must
/// name its own address before it starts.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Open file descriptors and resident memory (KiB) of a process.
fn usage(pid: u32) -> (usize, u64) {
    let files = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap();
    (files, rss)
}

/// GET /api/link-preview with the `url` query written as is (unencoded,
/// as an attacker would nest it).
async fn preview_raw(server: &TestServer, raw_query_value: &str) -> (u16, Value) {
    let response = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        server
            .client
            .get(server.url(&format!("/api/link-preview?url={raw_query_value}")))
            .send(),
    )
    .await
    .expect("the preview answers without recursing")
    .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn preview(server: &TestServer, url: &str) -> (u16, Value) {
    let response = preview_request(server, url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn nested_self_previews_are_refused_without_recursing() {
    let port = free_port();
    let own = format!("http://127.0.0.1:{port}");
    let bind = format!("127.0.0.1:{port}");
    let ports = format!("[{port}]");
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_BIND", bind.as_str()),
            ("PLAZA_BASE_URL", own.as_str()),
            ("PLAZA_LINK_PREVIEW_ALLOW_PRIVATE", "true"),
            ("PLAZA_LINK_PREVIEW_ALLOWED_PORTS", ports.as_str()),
        ],
    )
    .await;
    let before = usage(server.pid());

    // Relative: about 60 KB of `/api/link-preview?url=` levels.
    let level = "/api/link-preview?url=";
    let nested = level.repeat(60_000 / level.len()) + "/og-image-viewer";
    let (status, body) = preview_raw(&server, &nested).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "URL not allowed");
    assert_eq!(body["details"], "the service's own API is not previewed");

    // Absolute, on the base URL's origin.
    let level = format!("{own}/api/link-preview?url=");
    let nested = level.repeat(200) + "/";
    let (status, body) = preview_raw(&server, &nested).await;
    assert_eq!(status, 400, "{body}");

    let after = usage(server.pid());
    assert!(
        after.0 <= before.0 + 16,
        "open files grew from {} to {}",
        before.0,
        after.0
    );
    assert!(
        after.1 <= before.1 + 64 * 1024,
        "resident memory grew from {} KiB to {} KiB",
        before.1,
        after.1
    );
}

#[tokio::test]
async fn nested_previews_through_another_name_of_the_server_stop_at_the_first_hop() {
    // 127.0.0.1:<port> is this server, but not its base URL's origin: the
    // network path, opened by allow_private, ends at the user-agent check.
    let port = free_port();
    let bind = format!("127.0.0.1:{port}");
    let ports = format!("[{port}]");
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_BIND", bind.as_str()),
            ("PLAZA_LINK_PREVIEW_ALLOW_PRIVATE", "true"),
            ("PLAZA_LINK_PREVIEW_ALLOWED_PORTS", ports.as_str()),
        ],
    )
    .await;
    let before = usage(server.pid());
    let level = format!("http://127.0.0.1:{port}/api/link-preview?url=");
    let nested = level.repeat(1_000) + "http://127.0.0.1:1/";
    let (status, body) = preview_raw(&server, &nested).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["details"], "403 Forbidden");
    let after = usage(server.pid());
    assert!(
        after.0 <= before.0 + 16,
        "open files {before:?} -> {after:?}"
    );
    assert!(
        after.1 <= before.1 + 64 * 1024,
        "memory {before:?} -> {after:?}"
    );

    // The refusal itself, as another preview's fetch sees it.
    let response = server
        .client
        .get(server.url("/api/link-preview?url=https://example.com/"))
        .header("user-agent", "Plaza-LinkPreview/1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"].is_string() && body["details"].is_string(),
        "{body}"
    );
}

#[tokio::test]
async fn own_pages_are_previewed_in_process_and_the_base_url_only_for_other_pages() {
    // A decoy where the base URL points (the default base URL's situation:
    // another local service on that port) counts every connection.
    let decoy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let decoy_port = decoy.local_addr().unwrap().port();
    let contacted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = contacted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = decoy.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    let base = format!("http://127.0.0.1:{decoy_port}");
    let ports = format!("[{decoy_port}]");
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_BASE_URL", base.as_str()),
            ("PLAZA_APP_NAME", "Viewer Test"),
            ("PLAZA_LINK_PREVIEW_ALLOW_PRIVATE", "true"),
            ("PLAZA_LINK_PREVIEW_ALLOWED_PORTS", ports.as_str()),
        ],
    )
    .await;
    server.wait_for_log("base_url names a loopback port this server does not listen on");

    for url in [
        "/og-image-viewer?quote=Hi&author=Me".to_owned(),
        format!("{base}/og-image-viewer?quote=Hi&author=Me"),
    ] {
        let (status, body) = preview(&server, &url).await;
        assert_eq!(status, 200, "{url}: {body}");
        assert_eq!(body["title"], "Viewer Test");
        assert!(
            body["image"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{base}/api/og-image?")),
            "{body}"
        );
        assert_eq!(body["url"], url);
    }
    let (status, _) = preview(&server, &format!("{base}/api/version")).await;
    assert_eq!(status, 400);
    assert_eq!(
        contacted.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the base URL's port was contacted for Plaza's own pages"
    );
    // A path no route of Plaza serves is another application's page on the
    // origin: fetched from the base URL (the decoy hangs up, so 502).
    let (status, body) = preview(&server, "/no-such-page").await;
    assert_eq!(status, 502, "{body}");
    assert!(
        contacted.load(std::sync::atomic::Ordering::SeqCst) >= 1,
        "the base URL was not asked for the page Plaza does not serve"
    );
}

#[tokio::test]
async fn refusals_and_fetch_failures_do_not_describe_the_network() {
    let server = TestServer::start(Backend::Sqlite).await;
    let (status, body) = preview(&server, "http://localhost/").await;
    assert_eq!(status, 400);
    assert_eq!(body["details"], "localhost is not a public address");
    assert!(!body.to_string().contains("127.0.0.1"), "{body}");

    let closed = free_port();
    let ports = format!("[{closed}]");
    let open = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_LINK_PREVIEW_ALLOW_PRIVATE", "true"),
            ("PLAZA_LINK_PREVIEW_ALLOWED_PORTS", ports.as_str()),
        ],
    )
    .await;
    let (status, body) = preview(&open, &format!("http://127.0.0.1:{closed}/")).await;
    assert_eq!(status, 502);
    assert_eq!(body["error"], "Failed to fetch link preview");
    assert_eq!(body["details"], "could not connect to the target");
    open.wait_for_log("link preview fetch failed");
}

#[tokio::test]
async fn previews_beyond_the_concurrency_limit_are_503_with_retry_after() {
    // A target that accepts and never answers holds the only slot.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site = format!("http://{}", silent.local_addr().unwrap());
    let accepted = std::sync::Arc::new(tokio::sync::Notify::new());
    let notify = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
            notify.notify_one();
        }
    });
    let mut env: Vec<(&str, String)> = reach(&site).into();
    env.push(("PLAZA_LINK_PREVIEW_MAX_CONCURRENT", "1".to_owned()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = TestServer::start_with(Backend::Sqlite, &env).await;
    let first = {
        let request = preview_request(&server, &format!("{site}/slow"));
        tokio::spawn(request.send())
    };
    accepted.notified().await;
    let response = preview_request(&server, &format!("{site}/other"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "2");
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"].is_string() && body["details"].is_string(),
        "{body}"
    );
    first.abort();
}
