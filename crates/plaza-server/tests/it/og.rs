//! Share images through HTTP: crawlers, browsers, formats, quotes.

use std::collections::HashSet;

use crate::common::{Backend, TestServer};
use axum::Router;
use axum::routing::get;
use serde_json::{Value, json};

const CRAWLER: &str = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)";
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// SPEC.md's header of the SVG card.
const NOT_CACHED: &str = "no-cache, no-store, must-revalidate";
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
    let server = TestServer::start_in_process(Backend::Sqlite).await;
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
async fn a_named_svg_is_deterministic_tagged_and_not_cached() {
    let server = TestServer::start_in_process(Backend::Sqlite).await;
    let first = fetch(
        &server,
        "?seed=abc&quote=Hello%20%3Cb%3E&author=Me&type=svg",
        CRAWLER,
    )
    .await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["content-type"], "image/svg+xml");
    assert_eq!(first.headers()["cache-control"], NOT_CACHED);
    assert!(varies_by_agent(&first));
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    let held = server
        .client
        .get(server.url("/api/og-image?seed=abc&quote=Hello%20%3Cb%3E&author=Me&type=svg"))
        .header("user-agent", CRAWLER)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(held.status(), 304);
    assert_eq!(held.headers()["cache-control"], NOT_CACHED);
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
    for query in [
        "?seed=abc&quote=Hello&author=Me&type=svg&random=true",
        "?quote=Hello&author=Me&type=svg",
    ] {
        let random = fetch(&server, query, CRAWLER).await;
        assert_eq!(random.headers()["cache-control"], NOT_CACHED, "{query}");
        assert!(random.headers().get("etag").is_none(), "{query}");
        assert_ne!(first, random.text().await.unwrap(), "{query}");
    }
}

#[tokio::test]
async fn browsers_are_redirected_to_the_viewer_unless_direct() {
    let server = TestServer::start_in_process(Backend::Sqlite).await;
    let redirected = fetch(&server, "?seed=abc&quote=Hi", BROWSER).await;
    assert_eq!(redirected.status(), 302);
    assert!(varies_by_agent(&redirected));
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
    let server = TestServer::start_in_process(Backend::Sqlite).await;
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

/// Whether a shared cache must keep this answer per User-Agent.
fn varies_by_agent(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get_all("vary")
        .iter()
        .any(|value| value == "User-Agent")
}

/// The value of the sample `name` (with its labels, as rendered).
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no sample {name}:\n{text}"))
}

async fn metrics(server: &TestServer) -> String {
    let response = server.get("/api/metrics").await;
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

const OG_MISSES: &str = r#"plaza_image_cache_misses_total{image="og"}"#;
const OG_HITS: &str = r#"plaza_image_cache_hits_total{image="og"}"#;

#[tokio::test]
async fn if_none_match_with_the_cards_etag_is_304_without_a_body_or_a_render() {
    let server = TestServer::start_with(Backend::Sqlite, &[("PLAZA_METRICS_PUBLIC", "true")]).await;
    let query = "?seed=abc&quote=Hello&author=Me";
    let first = fetch(&server, query, CRAWLER).await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["cache-control"], IMMUTABLE);
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "a strong tag: {etag}"
    );
    assert_eq!(&first.bytes().await.unwrap()[1..4], b"PNG");
    let before = metrics(&server).await;
    for tag in [
        etag.clone(),
        format!("W/{etag}"),
        format!("\"other\", {etag}"),
    ] {
        let again = server
            .client
            .get(server.url(&format!("/api/og-image{query}")))
            .header("user-agent", CRAWLER)
            .header("if-none-match", &tag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{tag}");
        assert_eq!(again.headers()["etag"], etag.as_str());
        assert_eq!(again.headers()["cache-control"], IMMUTABLE);
        assert!(varies_by_agent(&again));
        assert!(again.bytes().await.unwrap().is_empty(), "no body");
    }
    let after = metrics(&server).await;
    for name in [OG_MISSES, OG_HITS] {
        assert_eq!(
            sample(&before, name),
            sample(&after, name),
            "{name}: nothing looked up"
        );
    }
    let stale = server
        .client
        .get(server.url(&format!("/api/og-image{query}&direct=true")))
        .header("if-none-match", "\"0123\"")
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 200);
    assert_eq!(
        stale.headers()["etag"],
        etag.as_str(),
        "direct does not change the image"
    );
    assert!(!varies_by_agent(&stale), "direct answers every agent alike");
}

#[tokio::test]
async fn each_parameter_changes_the_etag_and_its_clean_form_does_not() {
    let server = TestServer::start_in_process(Backend::Sqlite).await;
    let etag = |query: &'static str| {
        let server = &server;
        async move {
            let response = fetch(server, query, CRAWLER).await;
            assert_eq!(response.status(), 200, "{query}");
            response.headers()["etag"].to_str().unwrap().to_owned()
        }
    };
    let base = etag("?seed=abc&quote=Hello&author=Me&type=svg").await;
    let mut seen = HashSet::from([base.clone()]);
    for query in [
        "?seed=abd&quote=Hello&author=Me&type=svg",
        "?seed=abc&quote=Hellp&author=Me&type=svg",
        "?seed=abc&quote=Hello&author=Mf&type=svg",
        "?seed=abc&quote=Hello&type=svg",
        "?seed=abc&author=Me&type=svg",
        "?seed=abc&quote=Hello&author=Me",
        "?seed=abc&quote=Hello&author=Me&type=png",
    ] {
        seen.insert(etag(query).await);
    }
    assert_eq!(seen.len(), 7, "png and type=png are one image: {seen:?}");
    assert_eq!(
        etag("?seed=abc&quote=%20Hello%20%20&author=Me%0A&type=svg").await,
        base,
        "whitespace the card does not show is not a new image"
    );
}

#[tokio::test]
async fn a_crawler_storm_on_one_share_link_renders_it_once() {
    let server = TestServer::start_with(Backend::Sqlite, &[("PLAZA_METRICS_PUBLIC", "true")]).await;
    // The SVG card: the same cache and counters as the PNG, and a render
    // short enough that no waiter reaches the render wait on a slow build.
    let url =
        server.url("/api/og-image?seed=storm&quote=Everyone%20at%20once&author=Crawlers&type=svg");
    let mut storm = tokio::task::JoinSet::new();
    for _ in 0..12 {
        let request = server.client.get(&url).header("user-agent", CRAWLER);
        storm.spawn(async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 200);
            response.bytes().await.unwrap()
        });
    }
    let cards = storm.join_all().await;
    assert!(
        cards
            .iter()
            .all(|card| card == &cards[0] && card.starts_with(b"<svg"))
    );
    let text = metrics(&server).await;
    assert_eq!(sample(&text, OG_MISSES), 1.0, "rendered once:\n{text}");
    assert_eq!(sample(&text, OG_HITS), 11.0, "{text}");
}
