//! Share images through HTTP: crawlers, browsers, formats, quotes.

use crate::common::{Backend, TestServer};
use axum::Router;
use axum::routing::get;
use serde_json::{Value, json};

const CRAWLER: &str = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";

async fn fetch(server: &TestServer, query: &str, agent: &str) -> reqwest::Response {
    server
        .client
        .get(server.url(&format!("/api/og-image{query}")))
        .header("user-agent", agent)
        .send()
        .await
        .unwrap()
}

/// Quote providers on loopback: one that answers, one that fails.
async fn quote_providers(answer: bool) -> String {
    let app = Router::new()
        .route(
            "/good",
            get(|| async {
                axum::Json(json!({"content": "Loopback wisdom", "author": "Fake Sage"}))
            }),
        )
        .route(
            "/bad",
            get(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "no") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let path = if answer { "good" } else { "bad" };
    format!(
        "[[og_quote_providers]]\nname = \"fake\"\nurl = \"{base}/{path}\"\nweight = 1\nquote_pointer = \"/content\"\nauthor_pointer = \"/author\"\n"
    )
}

#[tokio::test]
async fn crawlers_get_a_1200_by_630_png() {
    let server = TestServer::start(Backend::Sqlite).await;
    let response = fetch(&server, "?seed=abc&quote=Hello&author=Me", CRAWLER).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "image/png");
    let png = response.bytes().await.unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1200, 630));
}

#[tokio::test]
async fn svg_is_deterministic_for_a_seed_and_uncached() {
    let server = TestServer::start(Backend::Sqlite).await;
    let first = fetch(
        &server,
        "?seed=abc&quote=Hello%20%3Cb%3E&author=Me&type=svg",
        CRAWLER,
    )
    .await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["content-type"], "image/svg+xml");
    assert_eq!(
        first.headers()["cache-control"],
        "no-cache, no-store, must-revalidate"
    );
    let first = first.text().await.unwrap();
    assert!(first.contains("width=\"1200\"") && first.contains("height=\"630\""));
    assert!(!first.contains("<b>"), "user text is escaped");
    let second = fetch(
        &server,
        "?seed=abc&quote=Hello%20%3Cb%3E&author=Me&type=svg",
        CRAWLER,
    )
    .await
    .text()
    .await
    .unwrap();
    assert_eq!(first, second);
    let random = fetch(
        &server,
        "?seed=abc&quote=Hello&author=Me&type=svg&random=true",
        CRAWLER,
    )
    .await
    .text()
    .await
    .unwrap();
    assert_ne!(first, random);
}

#[tokio::test]
async fn browsers_are_redirected_to_the_viewer_unless_direct() {
    let server = TestServer::start(Backend::Sqlite).await;
    let redirected = fetch(&server, "?seed=abc&quote=Hi", BROWSER).await;
    assert_eq!(redirected.status(), 302);
    assert_eq!(
        redirected.headers()["location"],
        "/og-image-viewer?seed=abc&quote=Hi"
    );
    let direct = fetch(&server, "?seed=abc&quote=Hi&direct=true&type=svg", BROWSER).await;
    assert_eq!(direct.status(), 200);
    assert_eq!(direct.headers()["content-type"], "image/svg+xml");
    let viewer = server
        .get("/og-image-viewer?seed=abc&quote=Hi")
        .await
        .text()
        .await
        .unwrap();
    assert!(viewer.contains("property=\"og:image\" content=\"http://localhost:3000/api/og-image?seed=abc&amp;quote=Hi&amp;direct=true\""), "{viewer}");
    assert!(viewer.contains("twitter:card"));
}

#[tokio::test]
async fn a_bad_type_uses_the_image_error_shape() {
    let server = TestServer::start(Backend::Sqlite).await;
    let response = fetch(&server, "?type=gif", CRAWLER).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], 400);
    assert!(body["error"].as_str().unwrap().contains("png or svg"));
}

#[tokio::test]
async fn quotes_come_from_providers_then_built_in_fallbacks() {
    let server =
        TestServer::start_with_config(Backend::Sqlite, &quote_providers(true).await, &[]).await;
    let svg = fetch(&server, "?seed=q&type=svg", CRAWLER)
        .await
        .text()
        .await
        .unwrap();
    assert!(svg.contains("Loopback wisdom"), "{svg}");
    let server =
        TestServer::start_with_config(Backend::Sqlite, &quote_providers(false).await, &[]).await;
    let svg = fetch(&server, "?seed=q&type=svg", CRAWLER)
        .await
        .text()
        .await
        .unwrap();
    let builtin_used = plaza_og_image::quotes::BUILTIN_QUOTES
        .iter()
        .any(|(quote, _)| svg.contains(quote.split_whitespace().next().unwrap()));
    assert!(builtin_used, "{svg}");
}
