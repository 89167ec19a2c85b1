//! Reports on posts: a signed-in user tells moderators a post breaks the
//! rules, once per post. Reports feed the admin surface's `reportCount`,
//! `reports`, `reported` filter and moderation report.

use sqlx::FromRow;

use crate::time::now_millis;
use crate::{Database, DomainError, Tx};

/// Most characters in a report's reason.
pub const MAX_REASON_CHARS: usize = 1000;

/// One report.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct Report {
    pub id: i64,
    pub post_id: i64,
    pub reporter_id: i64,
    pub reason: String,
    pub created_at: i64,
    /// When a moderator acted on the post, if they have.
    pub resolved_at: Option<i64>,
    pub resolved_by: Option<i64>,
}

pub(crate) const REPORT_COLUMNS: &str =
    "id, post_id, reporter_id, reason, created_at, resolved_at, resolved_by";

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
}

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
            "SELECT {REPORT_COLUMNS} FROM post_reports WHERE post_id IN ({}) \
             ORDER BY created_at, id",
            placeholders.join(", ")
        );
        let mut query = sqlx::query_as::<_, Report>(&sql);
        for id in post_ids {
            query = query.bind(*id);
        }
        let reports = query.fetch_all(&mut *self.lease().await?).await?;
        for report in reports {
            by_post.entry(report.post_id).or_default().push(report);
        }
        Ok(by_post)
    }

    /// A page of the reports `reporter_id` filed, oldest first, after the
    /// report `after_id`.
    pub async fn reports_by(
        &self,
        reporter_id: i64,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<Report>, DomainError> {
        Ok(sqlx::query_as(&format!(
            "SELECT {REPORT_COLUMNS} FROM post_reports WHERE reporter_id = $1 AND id > $2 \
             ORDER BY id LIMIT $3"
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
        let (received, resolved, open, posts_open, average): (i64, i64, i64, i64, Option<f64>) =
            sqlx::query_as(
                "SELECT \
                 (SELECT COUNT(*) FROM post_reports WHERE created_at >= $1 AND created_at < $2), \
                 (SELECT COUNT(*) FROM post_reports WHERE resolved_at >= $1 AND resolved_at < $2), \
                 (SELECT COUNT(*) FROM post_reports WHERE resolved_at IS NULL), \
                 (SELECT COUNT(DISTINCT post_id) FROM post_reports WHERE resolved_at IS NULL), \
                 (SELECT CAST(AVG(resolved_at - created_at) AS DOUBLE PRECISION) \
                  FROM post_reports WHERE resolved_at >= $1 AND resolved_at < $2)",
            )
            .bind(since)
            .bind(until)
            .fetch_one(&mut *self.lease().await?)
            .await?;
        Ok(ModerationStats {
            reports_received: received,
            reports_resolved: resolved,
            reports_open: open,
            posts_with_open_reports: posts_open,
            average_resolution_millis: average,
        })
    }
}

/// Marks the open reports on a post resolved by `moderator_id` (when a
/// moderator approves, hides or flags it); returns how many were open.
pub async fn resolve(tx: &mut Tx<'_>, post_id: i64, moderator_id: i64) -> Result<u64, DomainError> {
    let resolved = sqlx::query(
        "UPDATE post_reports SET resolved_at = $1, resolved_by = $2 \
         WHERE post_id = $3 AND resolved_at IS NULL",
    )
    .bind(now_millis())
    .bind(moderator_id)
    .bind(post_id)
    .execute(&mut **tx)
    .await?;
    Ok(resolved.rows_affected())
}

/// Files a report; a second report of the same post by the same user is
/// a [`DomainError::Conflict`]. Whether the reporter may see the post is
/// the caller's check.
pub async fn file(
    tx: &mut Tx<'_>,
    post_id: i64,
    reporter_id: i64,
    reason: String,
) -> Result<Report, DomainError> {
    sqlx::query_as(&format!(
        "INSERT INTO post_reports (post_id, reporter_id, reason, created_at) \
         VALUES ($1, $2, $3, $4) RETURNING {REPORT_COLUMNS}"
    ))
    .bind(post_id)
    .bind(reporter_id)
    .bind(reason)
    .bind(now_millis())
    .fetch_one(&mut **tx)
    .await
    .map_err(|error| match DomainError::from(error) {
        DomainError::Conflict(_) => {
            DomainError::Conflict("you have already reported this post".to_owned())
        }
        other => other,
    })
}
