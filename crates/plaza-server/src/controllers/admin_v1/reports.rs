//! `GET /api/v1/admin/reports/user-activity` and `GET
//! /api/v1/admin/reports/moderation`: what users did and how moderation
//! went over a date range (`plaza_domain::activity`).

use axum::extract::State;
use plaza_domain::activity::{ActivityCounts, ActivityDetails, PostSummary, SignIn, TimeRange};
use plaza_domain::reports::Report;
use plaza_domain::time::now_millis;
use plaza_domain::users::User;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::audit_logs::AuditLogItem;
use super::envelope::Envelope;
use crate::auth::AdminToken;
use crate::controllers::params::{self, Problems};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery};
use crate::state::AppState;
use plaza_domain::time::rfc3339;

const DAY_MILLIS: i64 = 24 * 60 * 60 * 1000;
/// The range when none is given: the last 30 days.
const DEFAULT_RANGE_DAYS: i64 = 30;
/// The longest range a report covers: a year, a leap year's included.
const MAX_RANGE_DAYS: i64 = 366;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UserActivityQuery {
    /// One user's activity; everyone's without it.
    #[serde(rename = "userId")]
    #[param(rename = "userId", value_type = Option<String>, example = "42")]
    pub user_id: Option<String>,
    /// From this date (`2026-11-01`) or time (RFC 3339), inclusive; default
    /// 30 days before `endDate`.
    #[serde(rename = "startDate")]
    #[param(rename = "startDate")]
    pub start_date: Option<String>,
    /// Until this date (inclusive: the whole day) or time (exclusive);
    /// default now. At most 366 days after `startDate`.
    #[serde(rename = "endDate")]
    #[param(rename = "endDate")]
    pub end_date: Option<String>,
    /// `true` adds the newest 100 items of each kind of activity.
    #[serde(rename = "includeDetails")]
    #[param(rename = "includeDetails", value_type = Option<bool>)]
    pub include_details: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ModerationReportQuery {
    /// From this date or time, inclusive; default 30 days before `endDate`.
    #[serde(rename = "startDate")]
    #[param(rename = "startDate")]
    pub start_date: Option<String>,
    /// Until this date (inclusive) or time (exclusive); default now. At
    /// most 366 days after `startDate`.
    #[serde(rename = "endDate")]
    #[param(rename = "endDate")]
    pub end_date: Option<String>,
}

/// The range a report covers.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Period {
    /// Inclusive.
    pub start_date: String,
    /// Exclusive.
    pub end_date: String,
}

impl From<TimeRange> for Period {
    fn from(range: TimeRange) -> Self {
        Period {
            start_date: rfc3339(range.since),
            end_date: rfc3339(range.until),
        }
    }
}

/// The user a report is about.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportedUser {
    #[schema(example = "42")]
    pub id: String,
    pub username: String,
    pub email: String,
    pub role: String,
    pub status: String,
    pub created_at: String,
    pub last_login_at: Option<String>,
    /// Sign-ins over the account's life.
    pub login_count: i64,
}

impl From<&User> for ReportedUser {
    fn from(user: &User) -> Self {
        ReportedUser {
            id: user.id().to_string(),
            username: user.row.username.clone(),
            email: user.row.email.clone(),
            role: user.role.as_str().to_owned(),
            status: user.status.as_str().to_owned(),
            created_at: rfc3339(user.row.created_at),
            last_login_at: user.row.last_login_at.map(rfc3339),
            login_count: user.row.login_count,
        }
    }
}

/// Counts of activity in the range.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivitySummary {
    /// Sessions started in the range that still exist (expired and
    /// signed-out sessions are purged: a lower bound for older ranges).
    pub sign_ins: i64,
    pub posts_created: i64,
    /// Reports filed by the user (everyone: all reports).
    pub reports_made: i64,
    /// Reports on the user's posts (everyone: all reports).
    pub reports_received: i64,
    /// Audited actions the user took as an admin or moderator (everyone:
    /// all audited actions taken by a user).
    pub moderation_actions: i64,
    /// Everyone's report only: accounts created in the range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_users: Option<i64>,
    /// Everyone's report only: distinct users who signed in in the range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_users: Option<i64>,
}

impl From<ActivityCounts> for ActivitySummary {
    fn from(counts: ActivityCounts) -> Self {
        ActivitySummary {
            sign_ins: counts.sign_ins,
            posts_created: counts.posts_created,
            reports_made: counts.reports_made,
            reports_received: counts.reports_received,
            moderation_actions: counts.moderation_actions,
            new_users: counts.new_users,
            active_users: counts.active_users,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignInItem {
    pub user_id: String,
    pub timestamp: String,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
}

impl From<SignIn> for SignInItem {
    fn from(sign_in: SignIn) -> Self {
        SignInItem {
            user_id: sign_in.user_id.to_string(),
            timestamp: rfc3339(sign_in.created_at),
            ip_address: sign_in.ip_address,
            user_agent: sign_in.user_agent,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostItem {
    pub id: String,
    pub author_id: String,
    pub title: String,
    /// `published`, `draft`, `hidden`, `flagged` or `pending`.
    pub status: String,
    pub created_at: String,
}

impl From<PostSummary> for PostItem {
    fn from(post: PostSummary) -> Self {
        PostItem {
            id: post.id.to_string(),
            author_id: post.author_id.to_string(),
            title: post.title,
            status: post.status.as_str().to_owned(),
            created_at: rfc3339(post.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportItem {
    pub id: String,
    pub post_id: String,
    pub reporter_id: String,
    pub reason: String,
    pub created_at: String,
    pub resolved_at: Option<String>,
    pub resolved_by: Option<String>,
}

impl From<Report> for ReportItem {
    fn from(report: Report) -> Self {
        ReportItem {
            id: report.id.to_string(),
            post_id: report.target_id.to_string(),
            reporter_id: report.reporter_id.to_string(),
            reason: report.reason,
            created_at: rfc3339(report.created_at),
            resolved_at: report.resolved_at.map(rfc3339),
            resolved_by: report.resolved_by.map(|id| id.to_string()),
        }
    }
}

/// The newest 100 items of each kind, newest first.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityDetailLists {
    pub sign_ins: Vec<SignInItem>,
    pub posts: Vec<PostItem>,
    pub reports_made: Vec<ReportItem>,
    pub reports_received: Vec<ReportItem>,
    pub moderation_actions: Vec<AuditLogItem>,
}

impl From<ActivityDetails> for ActivityDetailLists {
    fn from(details: ActivityDetails) -> Self {
        ActivityDetailLists {
            sign_ins: details.sign_ins.into_iter().map(SignInItem::from).collect(),
            posts: details.posts.into_iter().map(PostItem::from).collect(),
            reports_made: details
                .reports_made
                .into_iter()
                .map(ReportItem::from)
                .collect(),
            reports_received: details
                .reports_received
                .into_iter()
                .map(ReportItem::from)
                .collect(),
            moderation_actions: details
                .moderation_actions
                .into_iter()
                .map(AuditLogItem::from)
                .collect(),
        }
    }
}

/// The user activity report.
#[derive(Serialize, ToSchema)]
pub struct UserActivityReport {
    pub period: Period,
    /// The user asked for; null for everyone.
    pub user: Option<ReportedUser>,
    pub activity: ActivitySummary,
    /// With `includeDetails=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<ActivityDetailLists>,
}

#[derive(Serialize, ToSchema)]
pub struct ActionCount {
    #[schema(example = "post.moderate.hide")]
    pub action: String,
    pub count: i64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModeratorCount {
    pub moderator_id: String,
    pub moderator_email: Option<String>,
    pub count: i64,
}

/// The moderation report.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModerationReportData {
    pub period: Period,
    /// Reports filed in the range.
    pub reports_received: i64,
    /// Reports resolved in the range.
    pub reports_resolved: i64,
    /// Reports not resolved, now.
    pub reports_open: i64,
    /// Posts with an open report, now.
    pub posts_with_open_reports: i64,
    /// Mean time from report to resolution of the reports resolved in the
    /// range, e.g. `3h 12m`; null when none were.
    #[schema(example = "3h 12m")]
    pub average_resolution_time: Option<String>,
    pub average_resolution_seconds: Option<f64>,
    /// How long the oldest open report (on a post, reply or member) has
    /// waited, now, in seconds; null when none is open.
    pub oldest_open_report_seconds: Option<i64>,
    /// Appeals waiting for a decision, now.
    pub appeals_open: i64,
    /// How long the oldest open appeal has waited, now, in seconds.
    pub oldest_open_appeal_seconds: Option<i64>,
    /// Mean time from appeal to decision of the appeals decided in the
    /// range, in seconds; null when none were.
    pub average_appeal_decision_seconds: Option<f64>,
    /// Moderation actions of the audit trail (posts, reports, bans), most frequent first.
    pub actions_by_type: Vec<ActionCount>,
    /// The same actions by the admin or moderator who took them, most first (at most 100).
    pub actions_by_moderator: Vec<ModeratorCount>,
}

/// Reads `startDate`/`endDate` into a range: by default the last 30 days;
/// a start after the end or a range over 366 days is refused.
fn range(
    problems: &mut Problems,
    start_date: Option<&str>,
    end_date: Option<&str>,
) -> Option<TimeRange> {
    let since = params::instant(problems, "startDate", start_date, false);
    let until = params::instant(problems, "endDate", end_date, true);
    if (start_date.is_some() && since.is_none()) || (end_date.is_some() && until.is_none()) {
        return None;
    }
    let until = until.unwrap_or_else(now_millis);
    let since = since.unwrap_or(until - DEFAULT_RANGE_DAYS * DAY_MILLIS);
    if since >= until {
        problems.add("startDate", "must be before endDate");
        return None;
    }
    if until - since > MAX_RANGE_DAYS * DAY_MILLIS {
        problems.add(
            "startDate",
            format!("the range must be at most {MAX_RANGE_DAYS} days"),
        );
        return None;
    }
    Some(TimeRange { since, until })
}

/// What one user (`userId`) or everyone did over a date range: sign-ins,
/// posts, reports made and received, moderation actions; with
/// `includeDetails=true`, the newest 100 of each.
#[utoipa::path(
    get,
    path = "/api/v1/admin/reports/user-activity",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(UserActivityQuery),
    responses(
        (status = 200, description = "The report", body = Envelope<UserActivityReport>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No user with this `userId`", body = AdminV1Error),
        (status = 422, description = "A bad `userId`, date or `includeDetails`; a start after the end; a range over 366 days", body = AdminV1Error),
    )
)]
pub async fn user_activity_report(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<UserActivityQuery>,
) -> Result<AppJson<Envelope<UserActivityReport>>, AppError> {
    let mut problems = Problems::default();
    let user_id = params::id(&mut problems, "userId", query.user_id.as_deref());
    let include_details = params::boolean(
        &mut problems,
        "includeDetails",
        query.include_details.as_deref(),
    )
    .unwrap_or(false);
    let range = range(
        &mut problems,
        query.start_date.as_deref(),
        query.end_date.as_deref(),
    );
    problems.finish()?;
    let Some(range) = range else {
        return Err(AppError::invalid("startDate", "is invalid"));
    };
    let user = match user_id {
        Some(id) => Some(state.db.user_by_id(id).await?),
        None => None,
    };
    let counts = state.db.activity_counts(user_id, range).await?;
    let details = if include_details {
        Some(state.db.activity_details(user_id, range).await?.into())
    } else {
        None
    };
    Ok(AppJson(Envelope::new(UserActivityReport {
        period: range.into(),
        user: user.as_ref().map(ReportedUser::from),
        activity: counts.into(),
        details,
    })))
}

/// Reports received and resolved, the average resolution time, and the
/// moderation actions of the audit trail by type and by moderator, over a
/// date range.
#[utoipa::path(
    get,
    path = "/api/v1/admin/reports/moderation",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(ModerationReportQuery),
    responses(
        (status = 200, description = "The report", body = Envelope<ModerationReportData>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "A bad date; a start after the end; a range over 366 days", body = AdminV1Error),
    )
)]
pub async fn moderation_report(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<ModerationReportQuery>,
) -> Result<AppJson<Envelope<ModerationReportData>>, AppError> {
    let mut problems = Problems::default();
    let range = range(
        &mut problems,
        query.start_date.as_deref(),
        query.end_date.as_deref(),
    );
    problems.finish()?;
    let Some(range) = range else {
        return Err(AppError::invalid("startDate", "is invalid"));
    };
    let report = state.db.moderation_report(range).await?;
    let average_millis = report.stats.average_resolution_millis;
    Ok(AppJson(Envelope::new(ModerationReportData {
        period: range.into(),
        reports_received: report.stats.reports_received,
        reports_resolved: report.stats.reports_resolved,
        reports_open: report.stats.reports_open,
        posts_with_open_reports: report.stats.posts_with_open_reports,
        average_resolution_time: average_millis.map(human_duration),
        average_resolution_seconds: average_millis.map(|millis| (millis / 1000.0).round()),
        oldest_open_report_seconds: report.stats.oldest_open_report_millis.map(|ms| ms / 1000),
        appeals_open: report.stats.appeals_open,
        oldest_open_appeal_seconds: report.stats.oldest_open_appeal_millis.map(|ms| ms / 1000),
        average_appeal_decision_seconds: report
            .stats
            .average_appeal_decision_millis
            .map(|millis| (millis / 1000.0).round()),
        actions_by_type: report
            .actions_by_type
            .into_iter()
            .map(|(action, count)| ActionCount { action, count })
            .collect(),
        actions_by_moderator: report
            .actions_by_moderator
            .into_iter()
            .map(|moderator| ModeratorCount {
                moderator_id: moderator.moderator_id.to_string(),
                moderator_email: moderator.moderator_email,
                count: moderator.actions,
            })
            .collect(),
    })))
}

/// A duration for people, in its two largest units: `45s`, `12m 5s`,
/// `3h 12m`, `2d 4h`.
pub(crate) fn human_duration(millis: f64) -> String {
    let seconds = (millis / 1000.0).round().max(0.0) as u64;
    let (days, hours, minutes, rest) = (
        seconds / 86_400,
        seconds / 3_600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{rest}s"),
        (0, 0, _) => format!("{minutes}m {rest}s"),
        (0, _, _) => format!("{hours}h {minutes}m"),
        _ => format!("{days}d {hours}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_their_two_largest_units() {
        assert_eq!(human_duration(0.0), "0s");
        assert_eq!(human_duration(45_400.0), "45s");
        assert_eq!(human_duration(725_000.0), "12m 5s");
        assert_eq!(human_duration(11_520_000.0), "3h 12m");
        assert_eq!(human_duration(187_200_000.0), "2d 4h");
    }

    #[test]
    fn ranges_default_to_thirty_days_and_stay_within_a_year() {
        let mut problems = Problems::default();
        let last_month = range(&mut problems, None, Some("2026-03-01")).unwrap();
        assert_eq!(last_month.until - last_month.since, 30 * DAY_MILLIS);
        let leap_year = range(&mut problems, Some("2024-01-01"), Some("2024-12-31")).unwrap();
        assert_eq!(leap_year.until - leap_year.since, 366 * DAY_MILLIS);
        problems.finish().unwrap();
        for (start, end) in [
            (Some("2024-01-01"), Some("2025-01-01")),
            (Some("2026-03-02"), Some("2026-03-01")),
            (Some("soon"), None),
        ] {
            let mut problems = Problems::default();
            assert!(
                range(&mut problems, start, end).is_none(),
                "{start:?}..{end:?}"
            );
            assert!(problems.finish().is_err(), "{start:?}..{end:?}");
        }
    }
}
