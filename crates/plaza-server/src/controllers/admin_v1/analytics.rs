//! `GET /api/v1/admin/analytics`: the platform's users, content, engagement
//! and moderation over a period, against the period before it (SPEC.md
//! "Analytics response").

use axum::extract::{RawQuery, State};
use plaza_domain::analytics::PlatformFigures;
use plaza_domain::reports::ModerationStats;
use plaza_domain::time::now_millis;
use serde::Serialize;
use utoipa::ToSchema;

use super::envelope::Envelope;
use super::reports::human_duration;
use crate::auth::AdminToken;
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::AppJson;
use crate::state::AppState;

const DAY_MILLIS: i64 = 86_400_000;

/// The periods SPEC.md names, with their length in days.
const PERIODS: [(&str, i64); 5] = [("1d", 1), ("7d", 7), ("30d", 30), ("90d", 90), ("1y", 365)];

/// The sections `metrics` selects.
const SECTIONS: [&str; 4] = ["users", "content", "engagement", "moderation"];

/// Users over the period.
#[derive(Serialize, ToSchema)]
pub struct UserFigures {
    /// Accounts now.
    pub total: i64,
    /// Users who signed in, sent an analytics event or wrote a post.
    pub active: i64,
    /// Accounts created.
    pub new: i64,
    /// New accounts against the accounts before the period, such as `+4.2%`.
    #[schema(example = "+4.2%")]
    pub growth: String,
}

/// Posts over the period.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContentFigures {
    pub total_posts: i64,
    pub new_posts: i64,
    /// Posts a moderator approved, hid, flagged or deleted in the period.
    pub moderated_posts: i64,
    /// Posts flagged now.
    pub flagged_posts: i64,
}

/// Engagement over the period.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EngagementFigures {
    /// Mean `duration_ms` of `session_end` events, such as `4m 12s`; `0s`
    /// without any.
    #[schema(example = "4m 12s")]
    pub avg_session_duration: String,
    /// Mean over the period's days of users active that day (UTC days).
    pub daily_active_users: f64,
    /// New posts per active user.
    pub posts_per_user: f64,
}

/// Moderation over the period.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModerationFigures {
    pub reports_received: i64,
    pub reports_resolved: i64,
    /// Mean time from report to resolution of the reports resolved in the
    /// period; `0s` without any.
    #[schema(example = "3h 12m")]
    pub average_resolution_time: String,
}

/// The analytics answer; sections not selected by `metrics` are left out.
#[derive(Serialize, ToSchema)]
pub struct PlatformAnalytics {
    #[schema(example = "7d")]
    pub period: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users: Option<UserFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engagement: Option<EngagementFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moderation: Option<ModerationFigures>,
}

/// Platform figures for a period ending now, computed from the stored
/// users, posts, sign-ins, analytics events, reports and audit trail.
#[utoipa::path(
    get,
    path = "/api/v1/admin/analytics",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(
        ("period" = Option<String>, Query, description = "`1d`, `7d` (default), `30d`, `90d` or `1y`: the period ending now", example = "7d"),
        ("metrics" = Option<Vec<String>>, Query, description = "Sections, repeated (`metrics=users&metrics=content`) or comma-separated: `users`, `content`, `engagement`, `moderation`; default all"),
    ),
    responses(
        (status = 200, description = "The figures", body = Envelope<PlatformAnalytics>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "An unknown `period` or `metrics` value (`VALIDATION_ERROR`, `details.field`)", body = AdminV1Error),
    )
)]
pub async fn platform_analytics(
    State(state): State<AppState>,
    _admin: AdminToken,
    RawQuery(query): RawQuery,
) -> Result<AppJson<Envelope<PlatformAnalytics>>, AppError> {
    let (period, days, sections) = parse_query(query.as_deref().unwrap_or(""))?;
    let until = now_millis();
    let since = until - days * DAY_MILLIS;
    let wants = |section: &str| sections.iter().any(|wanted| wanted == section);
    let figures = if wants("users") || wants("content") || wants("engagement") {
        state.db.platform_figures(since, until).await?
    } else {
        PlatformFigures::default()
    };
    let moderation = if wants("moderation") {
        Some(state.db.moderation_stats_between(since, until).await?)
    } else {
        None
    };
    Ok(AppJson(Envelope::new(PlatformAnalytics {
        period,
        users: wants("users").then(|| UserFigures {
            total: figures.users_total,
            active: figures.users_active,
            new: figures.users_new,
            growth: growth(figures.users_new, figures.users_before),
        }),
        content: wants("content").then_some(ContentFigures {
            total_posts: figures.posts_total,
            new_posts: figures.posts_new,
            moderated_posts: figures.posts_moderated,
            flagged_posts: figures.posts_flagged,
        }),
        engagement: wants("engagement").then(|| EngagementFigures {
            avg_session_duration: human_duration(figures.average_session_millis.unwrap_or(0.0)),
            daily_active_users: round2(figures.active_user_days as f64 / days as f64),
            posts_per_user: if figures.users_active == 0 {
                0.0
            } else {
                round2(figures.posts_new as f64 / figures.users_active as f64)
            },
        }),
        moderation: moderation.map(|stats: ModerationStats| ModerationFigures {
            reports_received: stats.reports_received,
            reports_resolved: stats.reports_resolved,
            average_resolution_time: human_duration(stats.average_resolution_millis.unwrap_or(0.0)),
        }),
    })))
}

/// The period (name and days) and the sections asked for.
fn parse_query(query: &str) -> Result<(String, i64, Vec<String>), AppError> {
    let mut period = None;
    let mut sections = Vec::new();
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "period" => period = Some(value.into_owned()),
            "metrics" | "metrics[]" => sections.extend(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned),
            ),
            _ => {}
        }
    }
    let period = period.unwrap_or_else(|| "7d".to_owned());
    let Some(&(_, days)) = PERIODS.iter().find(|(name, _)| *name == period) else {
        return Err(AppError::invalid(
            "period",
            "must be one of 1d, 7d, 30d, 90d, 1y",
        ));
    };
    if let Some(unknown) = sections
        .iter()
        .find(|name| !SECTIONS.contains(&name.as_str()))
    {
        return Err(AppError::invalid(
            "metrics",
            format!("{unknown:?} is not one of users, content, engagement, moderation"),
        ));
    }
    if sections.is_empty() {
        sections = SECTIONS.iter().map(|name| (*name).to_owned()).collect();
    }
    Ok((period, days, sections))
}

/// `new` against `before`, as a signed percentage with one decimal.
fn growth(new: i64, before: i64) -> String {
    if before == 0 {
        return if new == 0 { "0.0%" } else { "+100.0%" }.to_owned();
    }
    format!("+{:.1}%", new as f64 * 100.0 / before as f64)
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_new_users_against_the_base_before_the_period() {
        assert_eq!(growth(0, 0), "0.0%");
        assert_eq!(growth(3, 0), "+100.0%");
        assert_eq!(growth(1, 8), "+12.5%");
    }

    #[test]
    fn metrics_repeat_or_come_comma_separated_and_unknown_ones_are_refused() {
        let (period, days, sections) =
            parse_query("period=30d&metrics=users&metrics=content,moderation").unwrap();
        assert_eq!((period.as_str(), days), ("30d", 30));
        assert_eq!(sections, ["users", "content", "moderation"]);
        assert_eq!(parse_query("").unwrap().2.len(), 4);
        assert!(parse_query("period=2w").is_err());
        assert!(parse_query("metrics=users,money").is_err());
    }
}
