//! Generated images through HTTP.

use crate::common::{Backend, TestServer};
use serde_json::Value;

#[tokio::test]
async fn avatars_are_deterministic_uncached_svg() {
    let server = TestServer::start(Backend::Sqlite).await;
    let first = server.get("/api/avatar-image?seed=Alice&size=120").await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["content-type"], "image/svg+xml");
    assert!(
        first.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("no-store")
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

/// The policy every generated SVG is served with: no script runs and
/// nothing loads should the image be opened as a page.
const SVG_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'";

#[tokio::test]
async fn generated_svgs_are_served_with_a_policy_that_runs_nothing() {
    let server = TestServer::start(Backend::Sqlite).await;
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
    let server = TestServer::start(Backend::Sqlite).await;
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
