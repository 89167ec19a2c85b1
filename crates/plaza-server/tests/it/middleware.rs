//! Plaza's middleware stack around test-only routes, in-process: panics,
//! malformed bodies and timeouts get the surface's error shape; and the
//! hardening headers, in-process and on the real pages.

use crate::common;

use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use plaza_domain::site_settings::FileDefaults;
use plaza_server::app::with_middleware;
use plaza_server::http::error::{Surface, SurfaceMap};
use plaza_server::http::extract::AppJson;
use plaza_server::services::front_door::FrontDoor;
use plaza_server::settings::ServerSettings;
use plaza_server::settings::TrustedProxies;
use serde_json::{Value, json};

#[derive(serde::Deserialize, serde::Serialize)]
struct Echo {
    name: String,
    count: u32,
}

async fn serve(router: Router, settings: ServerSettings) -> String {
    let surfaces = SurfaceMap::default().with("/api/v1/admin/panic", Surface::AdminV1);
    let front_door = std::sync::Arc::new(FrontDoor::new(FileDefaults {
        signup: true,
        new_account_hold_count: 0,
        public_modlog: true,
    }));
    let app = with_middleware(
        router,
        &settings,
        TrustedProxies::default(),
        surfaces,
        front_door,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    base
}

async fn panics() -> &'static str {
    panic!("secret internals: token=abc")
}

/// Serves [`test_routes`] with the default settings changed by `change`.
async fn serve_test_routes(change: impl FnOnce(&mut ServerSettings)) -> String {
    let mut settings = ServerSettings::default();
    change(&mut settings);
    serve(test_routes(), settings).await
}

fn test_routes() -> Router {
    Router::new()
        .route("/api/panic", get(panics))
        .route("/api/v1/admin/panic", get(panics))
        .route(
            "/api/echo",
            post(|AppJson(body): AppJson<Echo>| async move { AppJson(body) }),
        )
        .route(
            "/api/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        )
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Sends `request` and answers its JSON body.
async fn json_of(request: reqwest::RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

/// Sends `request` and answers its status and the error code of its body.
async fn status_and_code(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (status, body["error"]["code"].clone())
}

#[tokio::test]
async fn a_panicking_handler_is_a_500_without_internals() {
    let base = serve(test_routes(), ServerSettings::default()).await;
    let response = client()
        .get(format!("{base}/api/panic"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    assert!(response.headers().contains_key("x-request-id"));
    let body = response.text().await.unwrap();
    assert!(!body.contains("secret"), "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], "SERVER_ERROR");
    let admin = json_of(client().get(format!("{base}/api/v1/admin/panic"))).await;
    assert_eq!(admin["success"], false);
    assert_eq!(admin["error"]["code"], "SERVER_ERROR");
}

#[tokio::test]
async fn json_bodies_are_checked_with_clear_messages() {
    let base = serve(test_routes(), ServerSettings::default()).await;
    let client = client();
    let ok = json_of(
        client
            .post(format!("{base}/api/echo"))
            .json(&json!({"name": "a", "count": 2})),
    )
    .await;
    assert_eq!(ok, json!({"name": "a", "count": 2}));
    let cases = [
        ("application/json", "{\"name\": ", 400, "BAD_REQUEST"),
        (
            "application/json",
            "{\"name\": \"a\", \"count\": -1}",
            422,
            "VALIDATION_ERROR",
        ),
        (
            "application/json",
            "{\"name\": \"a\"}",
            422,
            "VALIDATION_ERROR",
        ),
        (
            "text/plain",
            "{\"name\": \"a\", \"count\": 1}",
            415,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
    ];
    for (content_type, body, status, code) in cases {
        let response = client
            .post(format!("{base}/api/echo"))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], code, "{body}");
        assert!(!error["error"]["message"].as_str().unwrap().is_empty());
    }
    let missing = json_of(
        client
            .post(format!("{base}/api/echo"))
            .json(&json!({"name": "a"})),
    )
    .await;
    assert_eq!(missing["error"]["details"]["field"], "count");
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let base = serve_test_routes(|settings| settings.body_limit_bytes = 2048).await;
    let big = format!("{{\"name\": \"{}\", \"count\": 1}}", "x".repeat(10_000));
    let request = client()
        .post(format!("{base}/api/echo"))
        .header("content-type", "application/json")
        .body(big);
    assert_eq!(
        status_and_code(request).await,
        (413, json!("PAYLOAD_TOO_LARGE"))
    );
}

#[tokio::test]
async fn slow_requests_time_out_with_408() {
    let base = serve_test_routes(|settings| settings.request_timeout_secs = 1).await;
    let request = client().get(format!("{base}/api/slow"));
    assert_eq!(
        status_and_code(request).await,
        (408, json!("REQUEST_TIMEOUT"))
    );
}

#[tokio::test]
async fn only_allowed_origins_may_call_with_credentials() {
    let base = serve_test_routes(|settings| {
        settings.cors_allowed_origins = vec!["https://app.example".to_owned()]
    })
    .await;
    let preflight = |origin: &'static str| {
        client()
            .request(reqwest::Method::OPTIONS, format!("{base}/api/echo"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
            .send()
    };

    let allowed = preflight("https://app.example").await.unwrap();
    assert_eq!(allowed.status(), 200);
    let headers = allowed.headers();
    assert_allows_with_credentials(headers, "https://app.example");
    assert!(
        headers["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("POST")
    );
    assert!(
        headers["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("content-type")
    );

    let refused = preflight("https://evil.example").await.unwrap();
    assert!(
        !refused
            .headers()
            .contains_key("access-control-allow-origin")
    );

    let echo_from = |origin: &'static str| {
        client()
            .post(format!("{base}/api/echo"))
            .header("origin", origin)
            .json(&json!({"name": "a", "count": 1}))
            .send()
    };
    let actual = echo_from("https://app.example").await.unwrap();
    assert_eq!(actual.status(), 200);
    let headers = actual.headers();
    assert_allows_with_credentials(headers, "https://app.example");
    let exposed = headers["access-control-expose-headers"].to_str().unwrap();
    for name in ["x-request-id", "x-ratelimit-remaining", "retry-after"] {
        assert!(exposed.contains(name), "{exposed}");
    }
    assert!(headers["vary"].to_str().unwrap().contains("origin"));

    let elsewhere = echo_from("https://evil.example").await.unwrap();
    assert!(
        !elsewhere
            .headers()
            .contains_key("access-control-allow-origin")
    );
}

/// The CORS answer to an allowed origin: that origin, with credentials.
fn assert_allows_with_credentials(headers: &reqwest::header::HeaderMap, origin: &str) {
    assert_eq!(headers["access-control-allow-origin"], origin);
    assert_eq!(headers["access-control-allow-credentials"], "true");
}

#[tokio::test]
async fn every_answer_is_nosniff_and_html_cannot_be_framed() {
    let routes = test_routes()
        .route(
            "/page",
            get(|| async { axum::response::Html("<!doctype html><p>hi</p>") }),
        )
        .route(
            "/own-policy",
            get(|| async {
                (
                    [(
                        "content-security-policy",
                        "frame-ancestors https://a.example",
                    )],
                    axum::response::Html("<p>framed by a.example</p>"),
                )
            }),
        );
    let base = serve(routes, ServerSettings::default()).await;
    let get = |path: &str| client().get(format!("{base}{path}")).send();
    for path in ["/page", "/api/panic"] {
        let response = get(path).await.unwrap();
        assert_eq!(
            response.headers()["x-content-type-options"],
            "nosniff",
            "{path}"
        );
    }
    let json = client()
        .post(format!("{base}/api/echo"))
        .json(&json!({"name": "a", "count": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(json.headers()["x-content-type-options"], "nosniff");
    assert!(!json.headers().contains_key("x-frame-options"));
    assert!(!json.headers().contains_key("content-security-policy"));

    let page = get("/page").await.unwrap();
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    assert_eq!(
        page.headers()["content-security-policy"],
        "frame-ancestors 'none'"
    );
    let own = get("/own-policy").await.unwrap();
    let policies: Vec<_> = own
        .headers()
        .get_all("content-security-policy")
        .iter()
        .collect();
    assert_eq!(policies, ["frame-ancestors https://a.example"]);
}

#[tokio::test]
async fn the_real_html_pages_cannot_be_framed() {
    let server = common::TestServer::start(common::Backend::Sqlite).await;
    for path in [
        "/api/auth/signin",
        "/api/auth/signout",
        "/og-image-viewer?quote=Hi&author=Me",
        "/api/swagger/",
    ] {
        let response = server.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers();
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html"),
            "{path}"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(
            headers["content-security-policy"], "frame-ancestors 'none'",
            "{path}"
        );
    }
    let health = server.get("/api/health").await;
    assert_eq!(health.headers()["x-content-type-options"], "nosniff");
    assert!(!health.headers().contains_key("x-frame-options"));
}
