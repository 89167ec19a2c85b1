//! The operator console at `/admin/` (DECISIONS.md "Operator console"):
//! server-rendered HTML pages for moderators and administrators, plain
//! forms that work without scripts, served by the binary with their one
//! style sheet. Anonymous visitors are sent (303) to the sign-in page with
//! a way back; anyone below moderator gets 403; an administrator without
//! two-factor sign-in gets 403 while `admin_totp_required` is set.
//!
//! The console is another surface over the same domain: each action calls
//! the policy rule, the unit of work, the lock and the audit entry its API
//! twin calls (entries say `surface: console`); nothing here decides who
//! may do what. Writes are form posts carrying the CSRF token of the
//! `plaza_csrf` cookie, besides the cross-origin refusal the middleware
//! applies to every cookie write. Errors are pages too
//! (`Surface::Console`). Every page answers with
//! [`crate::http::pages::CONSOLE_CSP`].

mod access;
mod analytics;
mod audit;
mod broadcasts;
mod emojis;
mod flags;
mod moderation;
mod reports;
mod system;
mod users;

use axum::extract::{FromRequestParts, OriginalUri, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use plaza_domain::grants;
use plaza_domain::policy::{self, Actor};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::{OptionalUser, Principal, SessionPrincipal, authorize, csrf};
use crate::controllers::params::Problems;
use crate::http::error::AppError;
use crate::http::pages::CONSOLE_CSP;
use crate::state::AppState;

/// Every route of the console, as the router matches them, so the
/// middleware answers their errors as console pages.
pub const PATHS: &[&str] = &[
    "/admin",
    "/admin/",
    "/admin/assets/console.css",
    "/admin/moderation",
    "/admin/moderation/{id}",
    "/admin/moderation/replies/{id}",
    "/admin/users",
    "/admin/users/bulk",
    "/admin/users/{id}",
    "/admin/users/{id}/ban",
    "/admin/users/{id}/unban",
    "/admin/users/{id}/role",
    "/admin/audit",
    "/admin/broadcasts",
    "/admin/broadcasts/{id}/cancel",
    "/admin/flags",
    "/admin/flags/{name}/delete",
    "/admin/emojis",
    "/admin/emojis/{id}",
    "/admin/system",
    "/admin/system/maintenance",
    "/admin/access",
    "/admin/access/roles/{role}",
    "/admin/access/permissions",
    "/admin/access/permissions/{id}",
    "/admin/analytics",
    "/admin/reports",
];

/// The console's routes (not part of the API document).
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .route("/admin", get(|| async { Redirect::permanent("/admin/") }))
        .route("/admin/", get(overview))
        .route("/admin/assets/console.css", get(style_sheet))
        .route("/admin/moderation", get(moderation::queue))
        .route("/admin/moderation/{id}", post(moderation::decide))
        .route(
            "/admin/moderation/replies/{id}",
            post(moderation::decide_reply),
        )
        .route("/admin/users", get(users::list))
        .route("/admin/users/{id}", get(users::detail))
        .route("/admin/users/{id}/ban", post(users::ban))
        .route("/admin/users/{id}/unban", post(users::unban))
        .route("/admin/users/{id}/role", post(users::change_role))
        .route("/admin/users/bulk", post(users::bulk))
        .route("/admin/audit", get(audit::list))
        .route(
            "/admin/broadcasts",
            get(broadcasts::list).post(broadcasts::send),
        )
        .route("/admin/broadcasts/{id}/cancel", post(broadcasts::cancel))
        .route("/admin/flags", get(flags::list).post(flags::save))
        .route("/admin/flags/{name}/delete", post(flags::delete))
        .route("/admin/emojis", get(emojis::list))
        .route("/admin/emojis/{id}", post(emojis::review))
        .route("/admin/system", get(system::overview))
        .route("/admin/access", get(access::overview))
        .route("/admin/access/roles/{role}", post(access::save_role))
        .route("/admin/access/permissions", post(access::create_permission))
        .route(
            "/admin/access/permissions/{id}",
            post(access::change_permission),
        )
        .route("/admin/analytics", get(analytics::dashboard))
        .route("/admin/reports", get(reports::summary))
}

/// The console's maintenance actions, in the `system` rate tier as their
/// API twin.
pub fn system_action_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().route("/admin/system/maintenance", post(system::run_maintenance))
}

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
            .require_second_factor(state)
            .and_then(|()| authorize(policy::use_console(principal.actor()), "console"));
        allowed.map_err(IntoResponse::into_response)?;
        // The session is the credential this request acts with: the
        // audit entries of its actions name its user.
        Principal::accept(
            parts,
            principal.user_id(),
            &principal.session.user.row.email,
        );
        let (csrf_token, csrf_cookie) = csrf::token_for(state, &parts.headers);
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
fn page(
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

/// The overview: what waits for a moderator.
async fn overview(State(state): State<AppState>, user: ConsoleUser) -> Result<Response, AppError> {
    let reported = moderation::count(&state, &user, moderation::Queue::Reported).await?;
    let flagged = moderation::count(&state, &user, moderation::Queue::Flagged).await?;
    page(
        &state,
        &user,
        "overview",
        "home.html",
        serde_json::json!({
            "reported": reported,
            "flagged": flagged,
            "version": env!("CARGO_PKG_VERSION"),
        }),
    )
}

/// The console's style sheet.
async fn style_sheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("../../../assets/console.css"),
    )
        .into_response()
}

/// A page number from 1 to 100,000; none given: 1.
fn page_number(problems: &mut Problems, raw: Option<&str>) -> i64 {
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
