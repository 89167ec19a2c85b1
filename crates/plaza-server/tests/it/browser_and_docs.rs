//! The API documentation and the HTML pages, checked with real tools: the
//! OpenAPI 3.1 schema validator and headless Chromium.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use crate::common::{Backend, TestServer, skip};

/// Whether a missing external tool fails the test (CI) or skips it.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    path.exists().then_some(path)
}

/// Loads `url` in headless Chromium, lets its scripts run, and returns the DOM.
fn rendered_dom(chromium: &PathBuf, url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--disable-quic",
            "--virtual-time-budget=20000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("run chromium");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn swagger_ui_renders_the_operations_in_chromium() {
    let Some(chromium) = chromium() else {
        return skip(
            "swagger_ui_renders_the_operations_in_chromium",
            "chromium is not installed",
        );
    };
    let server = TestServer::start_in_process(Backend::Sqlite).await;
    let dom = rendered_dom(&chromium, &server.url("/api/swagger/"));
    assert!(
        dom.contains("Plaza API"),
        "the document's title is shown:\n{dom}"
    );
    let operations = dom.matches("opblock-summary-path").count();
    assert!(
        operations >= 10,
        "operations are listed ({operations}):\n{dom}"
    );
    for path in [
        "/api/health",
        "/api/version",
        "/api/auth/signin",
        "/api/auth/token",
    ] {
        assert!(
            dom.contains(&format!("data-path=\"{path}\"")),
            "{path} is shown"
        );
    }
}

#[tokio::test]
async fn the_sign_in_page_renders_providers_and_the_form_in_chromium() {
    let Some(chromium) = chromium() else {
        return skip(
            "the_sign_in_page_renders_providers_and_the_form_in_chromium",
            "chromium is not installed",
        );
    };
    let idp = common::fake_idp::FakeIdp::start().await;
    let server = TestServer::start_with_config(Backend::Sqlite, &idp.config_toml(), &[]).await;
    let dom = rendered_dom(
        &chromium,
        &server.url("/api/auth/signin?error=credentials&callbackUrl=/home"),
    );
    assert!(dom.contains("data-provider=\"fake\""), "{dom}");
    assert!(dom.contains("Sign in with Fake IdP"), "{dom}");
    assert!(dom.contains("name=\"csrfToken\""), "{dom}");
    assert!(dom.contains("type=\"password\""), "{dom}");
    assert!(dom.contains("role=\"alert\""), "the error is shown: {dom}");
    assert!(
        dom.contains("value=\"/home\""),
        "the callback is kept: {dom}"
    );
}

#[tokio::test]
async fn the_openapi_document_validates_against_openapi_3_1() {
    let server = TestServer::start_in_process(Backend::Sqlite).await;
    let document = server.get("/api/openapi").await.text().await.unwrap();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &document).unwrap();
    let check = Command::new("python3")
        .args(["-c", "import openapi_spec_validator"])
        .output();
    if !check.is_ok_and(|output| output.status.success()) {
        return skip(
            "the_openapi_document_validates_against_openapi_3_1",
            "python3 with openapi-spec-validator is not installed (pip install openapi-spec-validator)",
        );
    }
    let output = Command::new("python3")
        .args([
            "-c",
            "import json, sys\nfrom openapi_spec_validator import validate\nfrom openapi_spec_validator.validation import OpenAPIV31SpecValidator\nvalidate(json.load(open(sys.argv[1])), cls=OpenAPIV31SpecValidator)\nprint('valid')",
        ])
        .arg(file.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn the_share_image_viewer_shows_the_image_in_chromium() {
    let Some(chromium) = chromium() else {
        return skip(
            "the_share_image_viewer_shows_the_image_in_chromium",
            "chromium is not installed",
        );
    };
    let server = TestServer::start_in_process(Backend::Sqlite).await;
    let dom = rendered_dom(
        &chromium,
        &server.url("/og-image-viewer?seed=view&quote=Hello%20there&author=Tester"),
    );
    assert!(dom.contains("property=\"og:image\""), "{dom}");
    assert!(
        dom.contains("1200 x 630"),
        "the image loaded at its full size:\n{dom}"
    );
}
