//! A fake OAuth 2.0 / OpenID Connect identity provider on loopback: it
//! serves a discovery document and its key set, issues single-use codes
//! bound to a PKCE challenge and the sign-in's nonce, answers the token
//! request with an RS256-signed ID token (or one with a chosen fault), and
//! serves one configurable user profile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rsa::RsaPrivateKey;
use rsa::pkcs1::EncodeRsaPrivateKey as _;
use rsa::traits::PublicKeyParts as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::TestServer;

/// The client Plaza is registered as.
const CLIENT_ID: &str = "plaza";
/// The id of the one key the provider publishes.
const KEY_ID: &str = "fake-key-1";

/// What is wrong with the ID tokens the provider issues, for tests of
/// their validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdTokenFault {
    /// Signed with a key the provider does not publish (under the id of
    /// the one it does).
    ForeignKey,
    /// Issued to another client.
    WrongAudience,
    /// Naming another issuer.
    WrongIssuer,
    /// Expired an hour ago.
    Expired,
    /// Carrying a nonce other than the sign-in's.
    WrongNonce,
    /// Carrying no nonce.
    NoNonce,
}

/// A code the provider issued, waiting to be traded for tokens.
struct Grant {
    challenge: String,
    nonce: Option<String>,
}

#[derive(Default)]
struct Inner {
    profile: Value,
    codes: HashMap<String, Grant>,
    tokens: HashMap<String, Value>,
    deny: bool,
    counter: u64,
    fault: Option<IdTokenFault>,
}

/// The provider's signing key, one it never publishes, and its key set.
struct Keys {
    signing: EncodingKey,
    foreign: EncodingKey,
    jwks: Value,
}

impl Keys {
    fn generate() -> Self {
        let generate = || RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).expect("an RSA key");
        let encoding = |key: &RsaPrivateKey| {
            EncodingKey::from_rsa_der(key.to_pkcs1_der().expect("PKCS#1 DER").as_bytes())
        };
        let (signing, foreign) = (generate(), generate());
        let base64url =
            |bytes: Vec<u8>| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let jwks = json!({"keys": [{
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": KEY_ID,
            "n": base64url(signing.n().to_bytes_be()),
            "e": base64url(signing.e().to_bytes_be()),
        }]});
        Keys {
            signing: encoding(&signing),
            foreign: encoding(&foreign),
            jwks,
        }
    }
}

#[derive(Clone)]
struct Provider {
    base: String,
    keys: Arc<Keys>,
    inner: Arc<Mutex<Inner>>,
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
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let keys = tokio::task::spawn_blocking(Keys::generate).await.unwrap();
        let provider = Provider {
            base: base.clone(),
            keys: Arc::new(keys),
            inner: inner.clone(),
        };
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/userinfo", get(userinfo))
            .with_state(provider);
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeIdp { base, inner }
    }

    /// Makes the next ID tokens carry `fault` (`None`: valid ones).
    pub fn set_id_token_fault(&self, fault: Option<IdTokenFault>) {
        self.inner.lock().unwrap().fault = fault;
    }

    /// The profile the next sign-ins get.
    pub fn set_profile(&self, profile: Value) {
        self.inner.lock().unwrap().profile = profile;
    }

    /// Makes `/authorize` answer with `error=access_denied`.
    pub fn deny(&self, deny: bool) {
        self.inner.lock().unwrap().deny = deny;
    }

    /// Plaza's settings file entry for this provider, with id `fake`: an
    /// OpenID Connect provider found by discovery from its issuer.
    pub fn config_toml(&self) -> String {
        format!(
            "[[auth_providers]]\nid = \"fake\"\nname = \"Fake IdP\"\nkind = \"oidc\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret = \"s3cret\"\n\
             issuer = \"{base}\"\n",
            base = self.base
        )
    }

    /// The same provider configured by its endpoints, without an issuer:
    /// the identity comes from the user-info endpoint and no ID token is
    /// asked for.
    pub fn endpoints_config_toml(&self) -> String {
        format!(
            "[[auth_providers]]\nid = \"fake\"\nname = \"Fake IdP\"\nkind = \"oidc\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret = \"s3cret\"\n\
             authorization_url = \"{base}/authorize\"\ntoken_url = \"{base}/token\"\nuserinfo_url = \"{base}/userinfo\"\n",
            base = self.base
        )
    }
}

async fn discovery(State(provider): State<Provider>) -> Response {
    let base = &provider.base;
    axum::Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "userinfo_endpoint": format!("{base}/userinfo"),
        "jwks_uri": format!("{base}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }))
    .into_response()
}

async fn jwks(State(provider): State<Provider>) -> Response {
    axum::Json(provider.keys.jwks.clone()).into_response()
}

/// An ID token for `profile` answering a sign-in that sent `nonce`, with
/// `fault` if one is set.
fn id_token(
    provider: &Provider,
    profile: &Value,
    nonce: Option<String>,
    fault: Option<IdTokenFault>,
) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut claims = profile.as_object().cloned().unwrap_or_default();
    let issuer = match fault {
        Some(IdTokenFault::WrongIssuer) => "https://elsewhere.example".to_owned(),
        _ => provider.base.clone(),
    };
    let audience = match fault {
        Some(IdTokenFault::WrongAudience) => "another-client",
        _ => CLIENT_ID,
    };
    let (issued_at, expires_at) = match fault {
        Some(IdTokenFault::Expired) => (now - 7200, now - 3600),
        _ => (now, now + 300),
    };
    let nonce = match fault {
        Some(IdTokenFault::WrongNonce) => Some("not-the-sign-ins-nonce".to_owned()),
        Some(IdTokenFault::NoNonce) => None,
        _ => nonce,
    };
    claims.insert("iss".into(), json!(issuer));
    claims.insert("aud".into(), json!(audience));
    claims.insert("iat".into(), json!(issued_at));
    claims.insert("exp".into(), json!(expires_at));
    if let Some(nonce) = nonce {
        claims.insert("nonce".into(), json!(nonce));
    }
    let key = match fault {
        Some(IdTokenFault::ForeignKey) => &provider.keys.foreign,
        _ => &provider.keys.signing,
    };
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(KEY_ID.to_owned());
    jsonwebtoken::encode(&header, &claims, key).expect("a signed ID token")
}

async fn authorize(
    State(provider): State<Provider>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let redirect = query.get("redirect_uri").cloned().unwrap_or_default();
    let state = query.get("state").cloned().unwrap_or_default();
    let mut inner = provider.inner.lock().unwrap();
    if inner.deny {
        return Redirect::to(&format!("{redirect}?error=access_denied&state={state}"))
            .into_response();
    }
    if query.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return (StatusCode::BAD_REQUEST, "PKCE S256 required").into_response();
    }
    inner.counter += 1;
    let code = format!("code-{}", inner.counter);
    let grant = Grant {
        challenge: query.get("code_challenge").cloned().unwrap_or_default(),
        nonce: query.get("nonce").cloned(),
    };
    inner.codes.insert(code.clone(), grant);
    Redirect::to(&format!("{redirect}?code={code}&state={state}")).into_response()
}

async fn token(
    State(provider): State<Provider>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let mut inner = provider.inner.lock().unwrap();
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
    let Some(grant) = inner.codes.remove(&code) else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    if computed != grant.challenge {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant", "error_description": "PKCE"})),
        )
            .into_response();
    }
    let access_token = format!("token-{code}");
    let profile = inner.profile.clone();
    let id_token = id_token(&provider, &profile, grant.nonce, inner.fault);
    inner.tokens.insert(access_token.clone(), profile);
    axum::Json(json!({
        "access_token": access_token, "token_type": "Bearer", "expires_in": 3600,
        "id_token": id_token,
    }))
    .into_response()
}

async fn userinfo(State(provider): State<Provider>, headers: HeaderMap) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_owned();
    match provider.inner.lock().unwrap().tokens.get(&token) {
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
