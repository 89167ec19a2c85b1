//! What the sign-in flows share: the session's answer and cookie, the
//! client a session records, where a sign-in comes back to, the return
//! redirects of Auth.js's client, and the second step.

use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::sessions::SessionClient;
use plaza_domain::time::{now_millis, rfc3339};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::signin::StartedSession;
use crate::http::cookies::{SESSION_COOKIE, set_cookie};
use crate::http::extract::AppJson;
use crate::state::AppState;

/// The user part of a session answer.
#[derive(Serialize, ToSchema)]
pub struct SessionUserView {
    #[schema(example = "42")]
    pub id: String,
    pub name: Option<String>,
    pub email: String,
    pub image: Option<String>,
    /// The user's roles, e.g. `["admin"]`.
    pub roles: Vec<String>,
    /// When the user's email address was verified; null before.
    #[serde(rename = "emailVerified")]
    pub email_verified: Option<String>,
    /// Whether signing in needs a second factor (TOTP) besides the password.
    #[serde(rename = "totpEnabled")]
    pub totp_enabled: bool,
}

/// A signed-in session.
#[derive(Serialize, ToSchema)]
pub struct SessionView {
    pub user: SessionUserView,
    /// When the session ends unless used again.
    pub expires: String,
}

pub(super) fn session_view(user: &plaza_domain::users::User, expires_at: i64) -> SessionView {
    SessionView {
        user: SessionUserView {
            id: user.id().to_string(),
            name: user.row.name.clone(),
            email: user.row.email.clone(),
            image: user.row.image.clone(),
            roles: vec![user.role.as_str().to_owned()],
            email_verified: user.row.email_verified_at.map(rfc3339),
            totp_enabled: user.has_totp(),
        },
        expires: rfc3339(expires_at),
    }
}

pub(super) fn with_session_cookie(
    state: &AppState,
    started: &StartedSession,
    mut response: Response,
) -> Response {
    let max_age = (started.expires_at - now_millis()) / 1000;
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(
            &state.settings.server,
            SESSION_COOKIE,
            &started.token,
            max_age,
        ),
    );
    response
}

pub(super) fn session_client(
    headers: &HeaderMap,
    address: Option<std::net::IpAddr>,
) -> SessionClient {
    SessionClient {
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|value| value.to_str().ok())
            .map(|agent| agent.chars().take(512).collect()),
        ip_address: address.map(|ip| ip.to_string()),
    }
}

/// Whether a request's body is a URL-encoded form (a page's post).
pub(crate) fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"))
}

/// The provider callback address registered with the provider.
pub(super) fn callback_url_for(state: &AppState, provider_id: &str) -> String {
    format!(
        "{}/api/auth/callback/{provider_id}",
        state
            .settings
            .server
            .base_url
            .as_str()
            .trim_end_matches('/')
    )
}

/// Where to send the browser after sign-in: `requested` resolved against
/// the base URL by the WHATWG URL parser (the one browsers use, so a tab or
/// backslash in `/\t/evil.example` is read as the browser will read it),
/// kept only when its origin is the base URL's, and sent in its serialized
/// form. Control characters refuse it outright. Anything refused is `/`:
/// sign-in must not become an open redirect.
pub(super) fn safe_callback(state: &AppState, requested: Option<&str>) -> String {
    let Some(requested) = requested.filter(|value| !value.trim().is_empty()) else {
        return "/".to_owned();
    };
    if requested.chars().any(char::is_control) {
        return "/".to_owned();
    }
    let base = &state.settings.server.base_url;
    match base.join(requested.trim()) {
        Ok(url) if url.origin() == base.origin() => {
            // The path and what follows, unless the path itself starts with
            // `//`, which a browser would read as another host.
            let local = &url[url::Position::BeforePath..];
            if local.starts_with("//") {
                url.to_string()
            } else {
                local.to_owned()
            }
        }
        _ => "/".to_owned(),
    }
}

/// The cookie holding the token of a sign-in waiting for its second factor.
pub(super) const SECOND_FACTOR_COOKIE: &str = "plaza_2fa";

/// The header with which Auth.js's client (`next-auth/react`) asks for a
/// redirect as `200 {url}`, since `fetch` cannot read a redirect.
const RETURN_REDIRECT: &str = "x-auth-return-redirect";

/// Whether the request asks for [`RETURN_REDIRECT`]'s answer (sent as `1`;
/// Auth.js reads any value).
pub(super) fn wants_return_redirect(headers: &HeaderMap) -> bool {
    headers.contains_key(RETURN_REDIRECT)
}

/// Where a redirect would send the browser, as an Auth.js client reads it.
#[derive(Serialize, ToSchema)]
pub struct RedirectUrl {
    /// Absolute: the identity provider's page, the callback URL, or the
    /// sign-in page with `error` or `step`.
    #[schema(example = "https://plaza.example/api/auth/signin?step=totp")]
    pub url: String,
}

/// A redirect answered as Auth.js answers [`RETURN_REDIRECT`]: 200
/// `{url}` with its `Location` made absolute against the base URL, and
/// every other header (its cookies) kept. Anything but a redirect is
/// answered as it is.
pub(super) fn as_return_redirect(state: &AppState, response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let location = parts
        .headers
        .get(header::LOCATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|location| state.settings.server.base_url.join(location).ok());
    let Some(url) = location.filter(|_| parts.status.is_redirection()) else {
        return Response::from_parts(parts, body);
    };
    parts.headers.remove(header::LOCATION);
    let mut answer = AppJson(RedirectUrl {
        url: url.to_string(),
    })
    .into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().append(name, value.clone());
        }
    }
    answer
}

/// The sign-in page's `step` that asks for the second factor.
pub(super) const SECOND_STEP: &str = "totp";

/// The sign-in page's second step, with an error code when given.
pub(super) fn second_step_url(error: Option<&str>) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("step", SECOND_STEP);
    if let Some(code) = error {
        query.append_pair("error", code);
    }
    format!("/api/auth/signin?{}", query.finish())
}

/// On to the second step, the sign-in waiting under `token` in the
/// browser's cookie for as long as it waits in the database.
pub(super) fn to_second_step(state: &AppState, token: &str) -> Response {
    let mut response = Redirect::to(&second_step_url(None)).into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(
            &state.settings.server,
            SECOND_FACTOR_COOKIE,
            token,
            crate::auth::signin::SECOND_FACTOR_TTL_MILLIS / 1000,
        ),
    );
    response
}

/// Back to the sign-in page with an error code.
pub(super) fn refused(code: &str) -> Response {
    Redirect::to(&signin_error_url("/", code)).into_response()
}

pub(super) fn signin_error_url(callback: &str, code: &str) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("error", code)
        .append_pair("callbackUrl", callback)
        .finish();
    format!("/api/auth/signin?{query}")
}
