//! The console's reports by state (moderators and up): over the last 7,
//! 30 or 90 days, the reports received and resolved, those still open and
//! the posts they are on, how long a resolution took on average, and the
//! moderation actions by kind and by moderator; the figures of
//! `GET /api/v1/admin/reports/moderation` for the same period. Each
//! moderator is named by email only where the domain's policy shows that
//! email to the viewer (administrators, or the moderator themself), else
//! by user id.

use axum::extract::State;
use axum::response::Response;
use plaza_domain::activity::TimeRange;
use plaza_domain::policy;
use plaza_domain::time::now_millis;
use serde::Deserialize;
use serde_json::json;

use super::page::{ConsoleUser, page};
use crate::auth::authorize;
use crate::controllers::admin_v1::reports::human_duration;
use crate::http::error::AppError;
use crate::http::extract::AppQuery;
use crate::state::AppState;

/// The periods offered, in days.
const PERIODS: [i64; 3] = [7, 30, 90];
const DAY_MILLIS: i64 = 86_400_000;

#[derive(Deserialize)]
pub struct ReportsQuery {
    days: Option<String>,
}

/// `GET /admin/reports`.
pub async fn summary(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ReportsQuery>,
) -> Result<Response, AppError> {
    authorize(policy::moderate_post(user.actor()), "report")?;
    let days = match query.days.as_deref().filter(|days| !days.is_empty()) {
        None => 30,
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|days| PERIODS.contains(days))
            .ok_or_else(|| AppError::invalid("days", "must be 7, 30 or 90"))?,
    };
    let until = now_millis();
    let report = state
        .db
        .moderation_report(TimeRange {
            since: until - days * DAY_MILLIS,
            until,
        })
        .await?;
    let stats = &report.stats;
    page(
        &state,
        &user,
        "reports",
        "reports.html",
        json!({
            "days": days,
            "periods": PERIODS,
            "received": stats.reports_received,
            "resolved": stats.reports_resolved,
            "open": stats.reports_open,
            "posts_with_open": stats.posts_with_open_reports,
            "average_resolution": stats.average_resolution_millis.map(human_duration),
            "actions_by_type": report.actions_by_type,
            "actions_by_moderator": report.actions_by_moderator.iter().map(|moderator| json!({
                "email": moderator.moderator_email.as_ref()
                    .filter(|_| policy::see_email_of(Some(user.actor()), moderator.moderator_id)),
                "id": moderator.moderator_id,
                "actions": moderator.actions,
            })).collect::<Vec<_>>(),
        }),
    )
}
