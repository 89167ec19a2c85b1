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
mod appeals;
mod audit;
mod broadcasts;
mod discipline;
mod emojis;
mod flags;
mod front_door;
mod moderation;
mod page;
mod reports;
mod rules;
mod system;
mod users;
mod webhooks;
mod word_filters;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use plaza_domain::time::now_millis;
use utoipa_axum::router::OpenApiRouter;

use crate::http::error::AppError;
use crate::state::AppState;
use page::{ConsoleUser, page};

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
    "/admin/users/{id}/warnings",
    "/admin/users/{id}/silence",
    "/admin/users/{id}/unsilence",
    "/admin/rules",
    "/admin/appeals",
    "/admin/appeals/{id}",
    "/admin/audit",
    "/admin/broadcasts",
    "/admin/broadcasts/{id}/cancel",
    "/admin/flags",
    "/admin/flags/{name}/delete",
    "/admin/word-filters",
    "/admin/word-filters/{id}/delete",
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
    "/admin/site-settings",
    "/admin/registrations",
    "/admin/registrations/{id}",
    "/admin/email-domain-blocks",
    "/admin/email-domain-blocks/{id}/delete",
    "/admin/ip-blocks",
    "/admin/ip-blocks/{id}/delete",
    "/admin/webhooks",
    "/admin/webhooks/{id}/deliveries/{deliveryId}/redeliver",
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
        .route("/admin/users/{id}/warnings", post(discipline::warn))
        .route("/admin/users/{id}/silence", post(discipline::silence))
        .route("/admin/users/{id}/unsilence", post(discipline::unsilence))
        .route("/admin/rules", get(rules::list).post(rules::save))
        .route("/admin/appeals", get(appeals::list))
        .route("/admin/appeals/{id}", post(appeals::decide))
        .route("/admin/audit", get(audit::list))
        .route(
            "/admin/broadcasts",
            get(broadcasts::list).post(broadcasts::send),
        )
        .route("/admin/broadcasts/{id}/cancel", post(broadcasts::cancel))
        .route("/admin/flags", get(flags::list).post(flags::save))
        .route("/admin/flags/{name}/delete", post(flags::delete))
        .route(
            "/admin/word-filters",
            get(word_filters::list).post(word_filters::add),
        )
        .route(
            "/admin/word-filters/{id}/delete",
            post(word_filters::delete),
        )
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
        .route(
            "/admin/site-settings",
            get(front_door::settings).post(front_door::save_settings),
        )
        .route("/admin/registrations", get(front_door::registrations))
        .route("/admin/registrations/{id}", post(front_door::decide))
        .route(
            "/admin/email-domain-blocks",
            get(front_door::email_domain_blocks).post(front_door::add_email_domain_block),
        )
        .route(
            "/admin/email-domain-blocks/{id}/delete",
            post(front_door::remove_email_domain_block),
        )
        .route(
            "/admin/ip-blocks",
            get(front_door::ip_blocks).post(front_door::add_ip_block),
        )
        .route(
            "/admin/ip-blocks/{id}/delete",
            post(front_door::remove_ip_block),
        )
        .route("/admin/webhooks", get(webhooks::list))
        .route(
            "/admin/webhooks/{id}/deliveries/{deliveryId}/redeliver",
            post(webhooks::redeliver),
        )
}

/// The console's maintenance actions, in the `system` rate tier as their
/// API twin.
pub fn system_action_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().route("/admin/system/maintenance", post(system::run_maintenance))
}

/// The overview: what waits for a moderator (reported, held and flagged
/// posts, reported members, open appeals).
async fn overview(State(state): State<AppState>, user: ConsoleUser) -> Result<Response, AppError> {
    let reported = moderation::count(&state, &user, moderation::Queue::Reported).await?;
    let flagged = moderation::count(&state, &user, moderation::Queue::Flagged).await?;
    let held = moderation::count(&state, &user, moderation::Queue::Held).await?;
    let reported_members = state.db.reported_member_count().await?;
    let (open_appeals, _) = state.db.open_appeal_wait(now_millis()).await?;
    page(
        &state,
        &user,
        "overview",
        "home.html",
        serde_json::json!({
            "reported": reported,
            "flagged": flagged,
            "held": held,
            "reported_members": reported_members,
            "open_appeals": open_appeals,
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
