//! What every console page shares: its viewer ([`ConsoleUser`], a
//! moderator or administrator signed in, with the CSRF token of their
//! forms), the page rendered around a template, and reading a form's field
//! or a page number.

use axum::extract::{FromRequestParts, OriginalUri};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::grants;
use plaza_domain::policy::{self, Actor};

use crate::auth::{OptionalUser, Principal, SessionPrincipal, authorize, csrf};
use crate::controllers::params::Problems;
use crate::http::error::AppError;
use crate::http::pages::CONSOLE_CSP;
use crate::state::AppState;

/// A signed-in moderator or administrator using the console, with the
/// CSRF token its forms carry.
pub struct ConsoleUser {
    pub principal: SessionPrincipal,
    pub csrf_token: String,
    /// The CSRF cookie to set when the visitor had none bound to their
    /// session.
    csrf_cookie: Option<HeaderValue>,
    /// The CSRF cookie and session the request came with, for its form.
    csrf_presented: csrf::Presented,
}

impl ConsoleUser {
    pub fn actor(&self) -> Actor {
        self.principal.actor()
    }
}

impl FromRequestParts<AppState> for ConsoleUser {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let OptionalUser(principal) = OptionalUser::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Some(principal) = principal else {
            return Err(to_sign_in(parts).into_response());
        };
        let allowed = principal
            .require_second_factor(&state.settings.auth)
            .and_then(|()| authorize(policy::use_console(principal.actor()), "console"));
        allowed.map_err(IntoResponse::into_response)?;
        // The session is the credential this request acts with: the
        // audit entries of its actions name its user.
        Principal::accept(
            parts,
            principal.user_id(),
            &principal.session.user.row.email,
        );
        let (csrf_token, csrf_cookie) = csrf::token_for(&state.settings.server, &parts.headers);
        Ok(ConsoleUser {
            principal,
            csrf_token,
            csrf_cookie,
            csrf_presented: csrf::Presented::from_headers(&state.settings.server, &parts.headers),
        })
    }
}

/// The named fields of a form post, each the first of its name.
pub(super) fn form_field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

impl ConsoleUser {
    /// Refuses (403) a console form post whose `csrfToken` is not the
    /// token of its CSRF cookie bound to this session.
    pub fn check_form_token(&self, submitted: Option<&str>) -> Result<(), AppError> {
        self.csrf_presented.check(submitted)
    }

    /// Whether the viewer administers, holding `capability` (none: the
    /// administrator role is enough), as `plaza_domain::policy` decides.
    pub fn administers(&self, capability: Option<&str>) -> bool {
        self.administration(capability).is_allowed()
    }

    /// Refuses (403) a viewer who does not administer with `capability`;
    /// `what` names what the page is about.
    pub fn require_administrator(
        &self,
        capability: Option<&str>,
        what: &'static str,
    ) -> Result<(), AppError> {
        authorize(self.administration(capability), what)
    }

    fn administration(&self, capability: Option<&str>) -> policy::Decision {
        let holds = capability.is_none_or(|name| self.principal.session.capabilities.hold(name));
        policy::administer(self.actor(), holds)
    }
}

/// The sign-in page, coming back to the page asked for (a path on this
/// origin, so the sign-in keeps it).
fn to_sign_in(parts: &Parts) -> Redirect {
    let asked = parts
        .extensions
        .get::<OriginalUri>()
        .map_or_else(|| parts.uri.clone(), |original| original.0.clone());
    let back = asked
        .path_and_query()
        .map_or("/admin/", |path| path.as_str());
    let encoded =
        percent_encoding::utf8_percent_encode(back, percent_encoding::NON_ALPHANUMERIC).to_string();
    Redirect::to(&format!("/api/auth/signin?callbackUrl={encoded}"))
}

/// Renders the console page `template` (a name under `console/`) with
/// `context` (a JSON object) and what every page shows: the viewer, the
/// section and the CSRF token.
pub(super) fn page(
    state: &AppState,
    user: &ConsoleUser,
    section: &str,
    template: &str,
    mut context: serde_json::Value,
) -> Result<Response, AppError> {
    let row = &user.principal.session.user.row;
    context["viewer"] = serde_json::json!({
        "name": row.name.as_deref().unwrap_or(&row.username),
        "role": user.principal.role().as_str(),
        "manages_users": user.administers(Some(grants::MANAGE_USERS)),
        "reads_analytics": user.administers(Some(grants::READ_ANALYTICS)),
        "manages_permissions": user.administers(Some(grants::MANAGE_PERMISSIONS)),
        "is_admin": user.administers(None),
        "manages_webhooks": policy::manage_webhooks(user.actor()).is_allowed(),
    });
    context["section"] = serde_json::json!(section);
    context["csrf_token"] = serde_json::json!(user.csrf_token);
    let html = state
        .templates
        .render(&format!("console/{template}"), context)
        .map_err(AppError::internal)?;
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONSOLE_CSP),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(cookie) = &user.csrf_cookie {
        headers.insert(header::SET_COOKIE, cookie.clone());
    }
    Ok((headers, html).into_response())
}

/// A page number from 1 to 100,000; none given: 1.
pub(super) fn page_number(problems: &mut Problems, raw: Option<&str>) -> i64 {
    match raw.filter(|raw| !raw.is_empty()) {
        None => 1,
        Some(raw) => problems
            .check(
                "page",
                raw.parse::<i64>()
                    .ok()
                    .filter(|page| (1..=100_000).contains(page))
                    .ok_or_else(|| "must be a number from 1 to 100000".to_owned()),
            )
            .unwrap_or(1),
    }
}
