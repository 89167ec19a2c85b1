//! Link preview through HTTP, against target pages served on loopback.

mod common;

use axum::Router;
use axum::http::StatusCode;
use axum::response::Html;
use axum::routing::get;
use common::{Backend, TestServer};
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
    let response = server
        .client
        .get(server.url("/api/link-preview"))
        .query(&[("url", &target)])
        .send()
        .await
        .unwrap();
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
        let response = server
            .client
            .get(server.url("/api/link-preview"))
            .query(&[("url", bad)])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{bad}");
    }

    let gone = server
        .client
        .get(server.url("/api/link-preview"))
        .query(&[("url", format!("{site}/missing"))])
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
        let response = server
            .client
            .get(server.url("/api/link-preview"))
            .query(&[("url", &target)])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{target}");
        let body: Value = response.json().await.unwrap();
        assert!(body["error"].is_string() && body["details"].is_string());
    }
}
