//! Reports on posts, replies and members: a signed-in user tells
//! moderators an item or a member breaks the rules, once per item, naming
//! a category. Reports feed the admin surface's `reportCount`, `reports`,
//! `reported` filter and moderation report, and the console's queue of
//! reported members. Each target's reports live in a table of the same
//! shape (`post_reports`, `reply_reports`, `user_reports`; the first two
//! keep their item's `report_count` by trigger); [`ReportTarget`] says
//! which.

use sqlx::FromRow;

use crate::time::now_millis;
use crate::webhooks::{self, EventType};
use crate::{Database, DomainError, Tx};

/// Most characters in a report's reason.
pub const MAX_REASON_CHARS: usize = 1000;

/// What a report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportTarget {
    Post,
    Reply,
    /// A member (DECISIONS.md "Graduated moderation").
    User,
}

impl ReportTarget {
    /// The table of its reports.
    fn table(self) -> &'static str {
        match self {
            ReportTarget::Post => "post_reports",
            ReportTarget::Reply => "reply_reports",
            ReportTarget::User => "user_reports",
        }
    }

    /// The column naming the item.
    fn column(self) -> &'static str {
        match self {
            ReportTarget::Post => "post_id",
            ReportTarget::Reply => "reply_id",
            ReportTarget::User => "user_id",
        }
    }

    /// The name a refusal gives it.
    fn noun(self) -> &'static str {
        match self {
            ReportTarget::Post => "post",
            ReportTarget::Reply => "reply",
            ReportTarget::User => "member",
        }
    }

    /// Report columns as [`Report`] reads them (unqualified).
    pub(crate) fn columns(self) -> String {
        format!(
            "id, {} AS target_id, reporter_id, reason, category, rule_ids, created_at, \
             resolved_at, resolved_by",
            self.column()
        )
    }
}

/// Why an item is reported (DECISIONS.md "Conversations (round 5)");
/// a report may cite the site's rules ([`crate::rules`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportCategory {
    Spam,
    Harassment,
    Illegal,
    RuleViolation,
    #[default]
    Other,
}

impl ReportCategory {
    pub const ALL: [ReportCategory; 5] = [
        ReportCategory::Spam,
        ReportCategory::Harassment,
        ReportCategory::Illegal,
        ReportCategory::RuleViolation,
        ReportCategory::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReportCategory::Spam => "spam",
            ReportCategory::Harassment => "harassment",
            ReportCategory::Illegal => "illegal",
            ReportCategory::RuleViolation => "rule_violation",
            ReportCategory::Other => "other",
        }
    }

    pub fn parse(name: &str) -> Option<ReportCategory> {
        ReportCategory::ALL
            .into_iter()
            .find(|category| category.as_str() == name)
    }
}

impl TryFrom<String> for ReportCategory {
    type Error = DomainError;

    fn try_from(name: String) -> Result<Self, DomainError> {
        ReportCategory::parse(&name)
            .ok_or_else(|| DomainError::Conflict(format!("a report has unknown category {name}")))
    }
}

/// One report.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct Report {
    pub id: i64,
    /// The post or reply reported (see [`ReportTarget`]).
    pub target_id: i64,
    pub reporter_id: i64,
    pub reason: String,
    #[sqlx(try_from = "String")]
    pub category: ReportCategory,
    /// The rules it cites, as stored ([`crate::rules::read_ids`]).
    #[sqlx(rename = "rule_ids")]
    pub stored_rule_ids: String,
    pub created_at: i64,
    /// When a moderator acted on the item, if they have.
    pub resolved_at: Option<i64>,
    pub resolved_by: Option<i64>,
}

/// Report columns in the order of the admin lists' JSON arrays.
pub(crate) const REPORT_JSON_COLUMNS: &str = "id, reporter_id, reason, category, created_at";

/// Figures of the admin surface's moderation report over a period.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ModerationStats {
    /// Reports made in the period.
    pub reports_received: i64,
    /// Reports resolved in the period.
    pub reports_resolved: i64,
    /// Reports not resolved yet, whenever made.
    pub reports_open: i64,
    /// Posts with at least one open report.
    pub posts_with_open_reports: i64,
    /// Mean time from report to resolution of the reports resolved in the
    /// period, in milliseconds; `None` when none were.
    pub average_resolution_millis: Option<f64>,
    /// How long the oldest open report has waited, now, in milliseconds.
    pub oldest_open_report_millis: Option<i64>,
    /// Appeals waiting for a decision, now.
    pub appeals_open: i64,
    /// How long the oldest open appeal has waited, now, in milliseconds.
    pub oldest_open_appeal_millis: Option<i64>,
    /// Mean time from appeal to decision of the appeals decided in the
    /// period, in milliseconds; `None` when none were.
    pub average_appeal_decision_millis: Option<f64>,
}

/// Every report, on posts, replies and members, as one table.
const ALL_REPORTS: &str = "(SELECT created_at, resolved_at FROM post_reports \
     UNION ALL SELECT created_at, resolved_at FROM reply_reports \
     UNION ALL SELECT created_at, resolved_at FROM user_reports)";

impl Database {
    /// The reports on each of `post_ids`, oldest first (the admin post
    /// items' `reports`).
    #[cfg(feature = "testing")]
    pub async fn reports_for_posts(
        &self,
        post_ids: &[i64],
    ) -> Result<std::collections::HashMap<i64, Vec<Report>>, DomainError> {
        let mut by_post: std::collections::HashMap<i64, Vec<Report>> = Default::default();
        if post_ids.is_empty() {
            return Ok(by_post);
        }
        let placeholders: Vec<String> = (1..=post_ids.len()).map(|n| format!("${n}")).collect();
        let sql = format!(
            "SELECT {} FROM post_reports WHERE post_id IN ({}) ORDER BY created_at, id",
            ReportTarget::Post.columns(),
            placeholders.join(", ")
        );
        let mut query = sqlx::query_as::<_, Report>(&sql);
        for id in post_ids {
            query = query.bind(*id);
        }
        let reports = query.fetch_all(&mut *self.lease().await?).await?;
        for report in reports {
            by_post.entry(report.target_id).or_default().push(report);
        }
        Ok(by_post)
    }

    /// A page of the reports on `target`s that `reporter_id` filed, oldest
    /// first, after the report `after_id`.
    pub async fn reports_by(
        &self,
        target: ReportTarget,
        reporter_id: i64,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<Report>, DomainError> {
        Ok(sqlx::query_as(&format!(
            "SELECT {} FROM {} WHERE reporter_id = $1 AND id > $2 ORDER BY id LIMIT $3",
            target.columns(),
            target.table()
        ))
        .bind(reporter_id)
        .bind(after_id)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?)
    }

    /// The moderation report's figures for the period starting at `since`
    /// (Unix milliseconds).
    #[cfg(feature = "testing")]
    pub async fn moderation_stats(&self, since: i64) -> Result<ModerationStats, DomainError> {
        self.moderation_stats_between(since, i64::MAX).await
    }

    /// The moderation report's figures for the period from `since`
    /// (inclusive) to `until` (exclusive), Unix milliseconds; the open
    /// figures are as of now.
    pub async fn moderation_stats_between(
        &self,
        since: i64,
        until: i64,
    ) -> Result<ModerationStats, DomainError> {
        let now = now_millis();
        let mut lease = self.lease().await?;
        let (received, resolved, open, posts_open, average): (i64, i64, i64, i64, Option<f64>) =
            sqlx::query_as(&format!(
                "SELECT \
                 (SELECT COUNT(*) FROM {ALL_REPORTS} r WHERE created_at >= $1 AND created_at < $2), \
                 (SELECT COUNT(*) FROM {ALL_REPORTS} r WHERE resolved_at >= $1 AND resolved_at < $2), \
                 (SELECT COUNT(*) FROM {ALL_REPORTS} r WHERE resolved_at IS NULL), \
                 (SELECT COUNT(DISTINCT post_id) FROM post_reports WHERE resolved_at IS NULL), \
                 (SELECT CAST(AVG(resolved_at - created_at) AS DOUBLE PRECISION) \
                  FROM {ALL_REPORTS} r WHERE resolved_at >= $1 AND resolved_at < $2)"
            ))
            .bind(since)
            .bind(until)
            .fetch_one(&mut *lease)
            .await?;
        let (oldest_report, appeals_open, oldest_appeal, appeal_average): (
            Option<i64>,
            i64,
            Option<i64>,
            Option<f64>,
        ) = sqlx::query_as(&format!(
            "SELECT \
             (SELECT MIN(created_at) FROM {ALL_REPORTS} r WHERE resolved_at IS NULL), \
             (SELECT COUNT(*) FROM appeals WHERE status = 'open'), \
             (SELECT MIN(created_at) FROM appeals WHERE status = 'open'), \
             (SELECT CAST(AVG(decided_at - created_at) AS DOUBLE PRECISION) FROM appeals \
              WHERE decided_at >= $1 AND decided_at < $2)"
        ))
        .bind(since)
        .bind(until)
        .fetch_one(&mut *lease)
        .await?;
        Ok(ModerationStats {
            reports_received: received,
            reports_resolved: resolved,
            reports_open: open,
            posts_with_open_reports: posts_open,
            oldest_open_report_millis: oldest_report.map(|at| (now - at).max(0)),
            appeals_open,
            oldest_open_appeal_millis: oldest_appeal.map(|at| (now - at).max(0)),
            average_appeal_decision_millis: appeal_average,
            average_resolution_millis: average,
        })
    }
}

/// A member with reports no moderator has acted on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedMember {
    pub user_id: i64,
    pub username: String,
    pub role: String,
    pub status: String,
    /// Their open reports, oldest first.
    pub reports: Vec<Report>,
}

/// A page of the members with open reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedMembers {
    pub members: Vec<ReportedMember>,
    /// How many members have open reports.
    pub total: i64,
}

impl Database {
    /// How many members have open reports.
    pub async fn reported_member_count(&self) -> Result<i64, DomainError> {
        let (total,): (i64,) = sqlx::query_as(
            "SELECT COUNT(DISTINCT user_id) FROM user_reports WHERE resolved_at IS NULL",
        )
        .fetch_one(&mut *self.lease().await?)
        .await?;
        Ok(total)
    }

    /// The members with open reports, the most reported first (then the
    /// longest waiting), `limit` from `offset`, each with those reports:
    /// the console's queue of reported members.
    pub async fn reported_members(
        &self,
        limit: i64,
        offset: i64,
    ) -> Result<ReportedMembers, DomainError> {
        let total = self.reported_member_count().await?;
        let mut lease = self.lease().await?;
        let rows: Vec<(i64, String, String, String)> = sqlx::query_as(
            "SELECT u.id, u.username, u.role, u.status FROM users u \
             JOIN (SELECT user_id, COUNT(*) AS open_count, MIN(created_at) AS first_at \
                   FROM user_reports WHERE resolved_at IS NULL GROUP BY user_id) r \
               ON r.user_id = u.id \
             ORDER BY r.open_count DESC, r.first_at, u.id LIMIT $1 OFFSET $2",
        )
        .bind(limit)
        .bind(offset.max(0))
        .fetch_all(&mut *lease)
        .await?;
        let mut members = Vec::with_capacity(rows.len());
        for (user_id, username, role, status) in rows {
            let reports: Vec<Report> = sqlx::query_as(&format!(
                "SELECT {} FROM user_reports WHERE user_id = $1 AND resolved_at IS NULL \
                 ORDER BY created_at, id",
                ReportTarget::User.columns()
            ))
            .bind(user_id)
            .fetch_all(&mut *lease)
            .await?;
            members.push(ReportedMember {
                user_id,
                username,
                role,
                status,
                reports,
            });
        }
        Ok(ReportedMembers { members, total })
    }
}

/// Marks the open reports on an item resolved by `moderator_id` (when a
/// moderator approves, hides or flags it); returns how many were open.
pub async fn resolve(
    tx: &mut Tx<'_>,
    target: ReportTarget,
    target_id: i64,
    moderator_id: i64,
) -> Result<u64, DomainError> {
    let resolved = sqlx::query(&format!(
        "UPDATE {} SET resolved_at = $1, resolved_by = $2 WHERE {} = $3 AND resolved_at IS NULL",
        target.table(),
        target.column()
    ))
    .bind(now_millis())
    .bind(moderator_id)
    .bind(target_id)
    .execute(&mut **tx)
    .await?;
    Ok(resolved.rows_affected())
}

/// Removes every report on an item (a reply that is deleted but keeps its
/// place in the thread); returns how many there were.
pub async fn remove(
    tx: &mut Tx<'_>,
    target: ReportTarget,
    target_id: i64,
) -> Result<u64, DomainError> {
    let removed = sqlx::query(&format!(
        "DELETE FROM {} WHERE {} = $1",
        target.table(),
        target.column()
    ))
    .bind(target_id)
    .execute(&mut **tx)
    .await?;
    Ok(removed.rows_affected())
}

/// A report to file; the HTTP layer has checked the reason.
#[derive(Debug, Clone)]
pub struct NewReport {
    pub target: ReportTarget,
    pub target_id: i64,
    pub reporter_id: i64,
    pub reason: String,
    pub category: ReportCategory,
    /// The rules cited, as [`crate::rules::check_cited`] answers them.
    pub rule_ids: String,
}

/// Files a report; a second report of the same item by the same user is
/// a [`DomainError::Conflict`]. Whether the reporter may see the item is
/// the caller's check.
pub async fn file(tx: &mut Tx<'_>, new: NewReport) -> Result<Report, DomainError> {
    let target = new.target;
    let report: Report = sqlx::query_as(&format!(
        "INSERT INTO {} ({}, reporter_id, reason, category, rule_ids, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING {}",
        target.table(),
        target.column(),
        target.columns()
    ))
    .bind(new.target_id)
    .bind(new.reporter_id)
    .bind(new.reason)
    .bind(new.category.as_str())
    .bind(new.rule_ids)
    .bind(now_millis())
    .fetch_one(&mut **tx)
    .await
    .map_err(|error| match DomainError::from(error) {
        DomainError::Conflict(_) => {
            DomainError::Conflict(format!("you have already reported this {}", target.noun()))
        }
        other => other,
    })?;
    let data = serde_json::json!({"report": {
        "id": report.id.to_string(),
        "target_type": target.noun(),
        "target_id": report.target_id.to_string(),
        "reporter_id": report.reporter_id.to_string(),
        "reason": report.reason,
        "category": report.category.as_str(),
        "created_at": crate::time::rfc3339(report.created_at),
    }});
    webhooks::enqueue(tx, EventType::ReportCreated, &data, report.created_at).await?;
    Ok(report)
}
