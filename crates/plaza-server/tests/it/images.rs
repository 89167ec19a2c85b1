//! Generated images through HTTP.

use crate::common::{Backend, TestServer};
use serde_json::Value;

/// SPEC.md: avatars are not cached.
const NOT_CACHED: &str = "no-cache, no-store, must-revalidate";

#[tokio::test]
async fn avatars_are_deterministic_svg_not_cached() {
    let server = TestServer::start_in_process(Backend::Sqlite).await;
    let first = server.get("/api/avatar-image?seed=Alice&size=120").await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["content-type"], "image/svg+xml");
    assert_eq!(first.headers()["cache-control"], NOT_CACHED);
    assert_eq!(first.headers()["pragma"], "no-cache");
    assert!(first.headers().contains_key("etag"), "the tag stays");
    assert!(
        !first
            .headers()
            .get_all("vary")
            .iter()
            .any(|v| v == "User-Agent"),
        "an avatar is the same for every agent"
    );
    let first = first.text().await.unwrap();
    assert!(
        first.starts_with("<svg") && first.contains("width=\"120\""),
        "{first}"
    );
    let again = server
        .get("/api/avatar-image?seed=Alice&size=120")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(first, again);
    let other = server
        .get("/api/avatar-image?seed=alice&size=120")
        .await
        .text()
        .await
        .unwrap();
    assert_ne!(first, other, "seeds are case sensitive");
    let default = server
        .get("/api/avatar-image?seed=Alice")
        .await
        .text()
        .await
        .unwrap();
    assert!(default.contains("width=\"200\""));
}

async fn etag(server: &TestServer, query: &str) -> String {
    let response = server.get(&format!("/api/avatar-image{query}")).await;
    assert_eq!(response.status(), 200, "{query}");
    response.headers()["etag"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn if_none_match_with_the_avatars_etag_is_304_without_a_body() {
    let server = TestServer::start_in_process(Backend::Sqlite).await;
    let tag = etag(&server, "?seed=Alice&size=120").await;
    assert!(
        tag.starts_with('"') && tag.ends_with('"'),
        "a strong tag: {tag}"
    );
    let again = server
        .client
        .get(server.url("/api/avatar-image?seed=Alice&size=120"))
        .header("if-none-match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], tag.as_str());
    assert_eq!(again.headers()["cache-control"], NOT_CACHED);
    assert!(again.headers().get("content-type").is_none());
    assert!(again.bytes().await.unwrap().is_empty(), "no body");
    let other = server
        .client
        .get(server.url("/api/avatar-image?seed=Alice&size=121"))
        .header("if-none-match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 200, "another image is not the one held");
    assert_ne!(other.headers()["etag"], tag.as_str());
    let distinct: std::collections::HashSet<String> = [
        etag(&server, "?seed=Alice").await,
        etag(&server, "?seed=alice").await,
        etag(&server, "?seed=Alice&size=50").await,
        etag(&server, "?seed=Alice&size=1000").await,
        tag,
    ]
    .into();
    assert_eq!(distinct.len(), 5, "{distinct:?}");
    assert_eq!(
        etag(&server, "?seed=Alice&size=200").await,
        etag(&server, "?seed=Alice").await,
        "the default size is the same image"
    );
}

/// The value of the sample `name` (with its labels, as rendered).
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no sample {name}:\n{text}"))
}

#[tokio::test]
async fn the_image_cache_stays_within_its_byte_bound() {
    const BOUND: u64 = 64 * 1024;
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_METRICS_PUBLIC", "true"),
            ("PLAZA_IMAGE_CACHE_BYTES", "65536"),
        ],
    )
    .await;
    let mut smallest = usize::MAX;
    let mut total = 0;
    for index in 0..80 {
        let avatar = server
            .get(&format!("/api/avatar-image?seed=bound-{index}&size=1000"))
            .await;
        assert_eq!(avatar.status(), 200);
        let card = server
            .client
            .get(server.url(&format!(
                "/api/og-image?seed=bound-{index}&quote=Quote%20{index}&type=svg"
            )))
            .send()
            .await
            .unwrap();
        assert_eq!(card.status(), 200);
        for body in [avatar.bytes().await.unwrap(), card.bytes().await.unwrap()] {
            smallest = smallest.min(body.len());
            total += body.len();
        }
    }
    assert!(
        total as u64 > 4 * BOUND,
        "the images outweigh the bound: {total}"
    );
    let text = server.get("/api/metrics").await.text().await.unwrap();
    let bytes = sample(&text, "plaza_image_cache_bytes");
    let entries = sample(&text, "plaza_image_cache_entries");
    assert_eq!(
        sample(&text, "plaza_image_cache_capacity_bytes"),
        BOUND as f64
    );
    assert!(bytes > 0.0 && bytes <= BOUND as f64, "{bytes} bytes held");
    assert!(
        entries >= 1.0 && entries * smallest as f64 <= BOUND as f64,
        "{entries} entries of at least {smallest} bytes each"
    );
    assert!(sample(&text, "plaza_image_cache_evictions_total") > 0.0);
    let misses = sample(&text, r#"plaza_image_cache_misses_total{image="avatar"}"#)
        + sample(&text, r#"plaza_image_cache_misses_total{image="og"}"#);
    assert_eq!(misses, 160.0, "every image was new");
}

/// The policy every generated SVG is served with: no script runs and
/// nothing loads should the image be opened as a page.
const SVG_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'";

#[tokio::test]
async fn generated_svgs_are_served_with_a_policy_that_runs_nothing() {
    let server = TestServer::start_in_process(Backend::Sqlite).await;
    let avatar = server.get("/api/avatar-image?seed=Alice").await;
    let share_card = server
        .client
        .get(server.url("/api/og-image?seed=abc&quote=Hi&author=Me&type=svg"))
        .header("user-agent", "Twitterbot/1.0")
        .send()
        .await
        .unwrap();
    for (route, response) in [("avatar", avatar), ("share card", share_card)] {
        assert_eq!(response.status(), 200, "{route}");
        assert_eq!(
            response.headers()["content-type"],
            "image/svg+xml",
            "{route}"
        );
        let policies: Vec<_> = response
            .headers()
            .get_all("content-security-policy")
            .iter()
            .collect();
        assert_eq!(policies, [SVG_POLICY], "{route}");
    }
}

#[tokio::test]
async fn avatar_errors_use_the_image_error_shape() {
    let server = TestServer::start_in_process(Backend::Sqlite).await;
    for query in [
        "",
        "?seed=",
        "?seed=a&size=49",
        "?seed=a&size=1001",
        "?seed=a&size=big",
        "?seed=a&size=-5",
    ] {
        let response = server.get(&format!("/api/avatar-image{query}")).await;
        assert_eq!(response.status(), 400, "{query}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], 400, "{query}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{query}"
        );
    }
}
