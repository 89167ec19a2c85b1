//! A fake OAuth 2.0 / OpenID Connect identity provider on loopback: it issues
//! single-use codes bound to a PKCE challenge and serves one configurable
//! user profile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::TestServer;

#[derive(Default)]
struct Inner {
    profile: Value,
    codes: HashMap<String, String>,
    tokens: HashMap<String, Value>,
    deny: bool,
    counter: u64,
}

/// A running fake provider.
#[derive(Clone)]
pub struct FakeIdp {
    pub base: String,
    inner: Arc<Mutex<Inner>>,
}

impl FakeIdp {
    pub async fn start() -> Self {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new()
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/userinfo", get(userinfo))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeIdp { base, inner }
    }

    /// The profile the next sign-ins get.
    pub fn set_profile(&self, profile: Value) {
        self.inner.lock().unwrap().profile = profile;
    }

    /// Makes `/authorize` answer with `error=access_denied`.
    pub fn deny(&self, deny: bool) {
        self.inner.lock().unwrap().deny = deny;
    }

    /// Plaza's settings file entry for this provider, with id `fake`.
    pub fn config_toml(&self) -> String {
        format!(
            "[[auth_providers]]\nid = \"fake\"\nname = \"Fake IdP\"\nkind = \"oidc\"\nclient_id = \"plaza\"\nclient_secret = \"s3cret\"\n\
             authorization_url = \"{base}/authorize\"\ntoken_url = \"{base}/token\"\nuserinfo_url = \"{base}/userinfo\"\n",
            base = self.base
        )
    }
}

async fn authorize(
    State(inner): State<Arc<Mutex<Inner>>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let redirect = query.get("redirect_uri").cloned().unwrap_or_default();
    let state = query.get("state").cloned().unwrap_or_default();
    let mut inner = inner.lock().unwrap();
    if inner.deny {
        return Redirect::to(&format!("{redirect}?error=access_denied&state={state}"))
            .into_response();
    }
    if query.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return (StatusCode::BAD_REQUEST, "PKCE S256 required").into_response();
    }
    inner.counter += 1;
    let code = format!("code-{}", inner.counter);
    let challenge = query.get("code_challenge").cloned().unwrap_or_default();
    inner.codes.insert(code.clone(), challenge);
    Redirect::to(&format!("{redirect}?code={code}&state={state}")).into_response()
}

async fn token(
    State(inner): State<Arc<Mutex<Inner>>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let mut inner = inner.lock().unwrap();
    let authorized = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                == format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode("plaza:s3cret")
                )
        });
    if !authorized {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    let code = form.get("code").cloned().unwrap_or_default();
    // Codes are single-use: a replay finds nothing.
    let Some(challenge) = inner.codes.remove(&code) else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    if computed != challenge {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant", "error_description": "PKCE"})),
        )
            .into_response();
    }
    let access_token = format!("token-{code}");
    let profile = inner.profile.clone();
    inner.tokens.insert(access_token.clone(), profile);
    axum::Json(json!({"access_token": access_token, "token_type": "Bearer", "expires_in": 3600}))
        .into_response()
}

async fn userinfo(State(inner): State<Arc<Mutex<Inner>>>, headers: HeaderMap) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_owned();
    match inner.lock().unwrap().tokens.get(&token) {
        Some(profile) => axum::Json(profile.clone()).into_response(),
        None => StatusCode::UNAUTHORIZED.into_response(),
    }
}

/// A provider sign-in that Plaza started and the provider sent back: the
/// callback URL (on the test server's real address) and the binding cookie
/// Plaza gave the browser that started it.
pub struct ReturnedSignIn {
    pub callback: String,
    pub binding_cookie: String,
}

/// Plays a browser starting a provider sign-in at `start` (with its own
/// `cookies`, if any) and passing the provider's page, up to the redirect
/// back to Plaza's callback.
pub async fn begin_provider_sign_in(
    server: &TestServer,
    start: &str,
    cookies: Option<&str>,
) -> ReturnedSignIn {
    let mut request = server.client.get(server.url(start));
    if let Some(cookies) = cookies {
        request = request.header("cookie", cookies);
    }
    let started = request.send().await.unwrap();
    assert_eq!(started.status(), 303, "{start}");
    let binding_cookie = cookie_pair(&started, "plaza_oauth").expect("a binding cookie");
    let authorize = location(&started);
    assert!(
        authorize.contains("code_challenge_method=S256") && authorize.contains("state="),
        "{authorize}"
    );
    let at_idp = server.client.get(&authorize).send().await.unwrap();
    // The callback URL points at the configured base URL; tests reach the
    // server on its real port instead.
    let back = url::Url::parse(&location(&at_idp)).unwrap();
    ReturnedSignIn {
        callback: format!(
            "{}{}?{}",
            server.base,
            back.path(),
            back.query().unwrap_or_default()
        ),
        binding_cookie,
    }
}

/// Opens the callback with exactly `cookies` (a `Cookie` header value).
pub async fn open_callback(
    server: &TestServer,
    callback: &str,
    cookies: &str,
) -> reqwest::Response {
    server
        .client
        .get(callback)
        .header("cookie", cookies)
        .send()
        .await
        .unwrap()
}

/// A whole provider sign-in in one browser: the callback's answer.
pub async fn provider_round_trip(
    server: &TestServer,
    start: &str,
    cookies: Option<&str>,
) -> reqwest::Response {
    let returned = begin_provider_sign_in(server, start, cookies).await;
    let jar = match cookies {
        Some(cookies) => format!("{cookies}; {}", returned.binding_cookie),
        None => returned.binding_cookie.clone(),
    };
    open_callback(server, &returned.callback, &jar).await
}

/// The `Location` header.
pub fn location(response: &reqwest::Response) -> String {
    response.headers()["location"].to_str().unwrap().to_owned()
}

/// The `name=value` pair a response sets for cookie `name` (not a deletion).
pub fn cookie_pair(response: &reqwest::Response, name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| value.starts_with(&prefix) && !value.contains("Max-Age=0"))
        .and_then(|value| value.split(';').next())
        .map(str::to_owned)
}
