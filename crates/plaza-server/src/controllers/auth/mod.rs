//! The `/api/auth/*` surface: sign-in pages and flows, two-factor sign-in,
//! sessions, linked accounts, admin tokens, and the mailed links of email
//! verification and password reset (with their pages).

mod linked_accounts;
mod mailed_links;
mod own_sessions;
mod password;
mod providers;
mod sign_in;
mod tokens;
mod two_factor;

use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::sessions::SessionClient;
use plaza_domain::time::{now_millis, rfc3339};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::auth::signin::StartedSession;
use crate::http::cookies::{SESSION_COOKIE, set_cookie};
use crate::http::extract::AppJson;
use crate::state::AppState;

pub use linked_accounts::*;
pub use mailed_links::*;
pub use own_sessions::*;
pub use password::*;
pub use providers::*;
pub use sign_in::*;
pub use tokens::*;
pub use two_factor::*;

/// The routes that start a sign-in or check a second factor: they hash
/// passwords, count attempts and write rows, so their limit fails closed.
pub fn sign_in_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(
            signin_page,
            signin_with_credentials
        ))
        .routes(crate::documented_routes!(
            signin_with_provider,
            signin_with_provider_form
        ))
        .routes(crate::documented_routes!(
            provider_callback,
            credentials_callback
        ))
        .routes(crate::documented_routes!(totp_setup))
        .routes(crate::documented_routes!(totp_enable))
        .routes(crate::documented_routes!(totp_disable))
}

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(signout_page, signout))
        .routes(crate::documented_routes!(session, update_session))
        .routes(crate::documented_routes!(providers))
        .routes(crate::documented_routes!(csrf))
        .routes(crate::documented_routes!(accounts))
        .routes(crate::documented_routes!(unlink_account))
        .routes(crate::documented_routes!(list_sessions))
        .routes(crate::documented_routes!(end_session))
        .routes(crate::documented_routes!(change_password))
        .routes(crate::documented_routes!(admin_token, revoke_admin_token))
        .routes(crate::documented_routes!(verify_email_link, verify_email))
        .routes(crate::documented_routes!(forgot_password_page))
        .routes(crate::documented_routes!(reset_password_page))
        .routes(crate::documented_routes!(reset_password))
}

/// The routes that mail a link: a rate limit of their own, per client and
/// per email address. Setting a password with a mailed link is not one of
/// them: a valid link is never refused for a budget
/// ([`reset_password`]).
pub fn account_mail_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(forgot_password))
        .routes(crate::documented_routes!(resend_verification))
}

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

fn session_view(user: &plaza_domain::users::User, expires_at: i64) -> SessionView {
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

fn with_session_cookie(
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

fn session_client(headers: &HeaderMap, address: Option<std::net::IpAddr>) -> SessionClient {
    SessionClient {
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|value| value.to_str().ok())
            .map(|agent| agent.chars().take(512).collect()),
        ip_address: address.map(|ip| ip.to_string()),
    }
}

fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"))
}

/// The provider callback address registered with the provider.
fn callback_url_for(state: &AppState, provider_id: &str) -> String {
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
fn safe_callback(state: &AppState, requested: Option<&str>) -> String {
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
const SECOND_FACTOR_COOKIE: &str = "plaza_2fa";

/// The header with which Auth.js's client (`next-auth/react`) asks for a
/// redirect as `200 {url}`, since `fetch` cannot read a redirect.
const RETURN_REDIRECT: &str = "x-auth-return-redirect";

/// Whether the request asks for [`RETURN_REDIRECT`]'s answer (sent as `1`;
/// Auth.js reads any value).
fn wants_return_redirect(headers: &HeaderMap) -> bool {
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
fn as_return_redirect(state: &AppState, response: Response) -> Response {
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
const SECOND_STEP: &str = "totp";

/// The sign-in page's second step, with an error code when given.
fn second_step_url(error: Option<&str>) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("step", SECOND_STEP);
    if let Some(code) = error {
        query.append_pair("error", code);
    }
    format!("/api/auth/signin?{}", query.finish())
}

/// On to the second step, the sign-in waiting under `token` in the
/// browser's cookie for as long as it waits in the database.
fn to_second_step(state: &AppState, token: &str) -> Response {
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
fn refused(code: &str) -> Response {
    Redirect::to(&signin_error_url("/", code)).into_response()
}

fn signin_error_url(callback: &str, code: &str) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("error", code)
        .append_pair("callbackUrl", callback)
        .finish();
    format!("/api/auth/signin?{query}")
}
