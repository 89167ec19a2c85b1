//! The system statistics of the unversioned admin surface
//! (`GET /api/admin/stats`): one read of the figures an operator checks
//! first.

use std::collections::HashMap;

use crate::time::now_millis;
use crate::{Database, DomainError};

/// Users who signed in within this window count as active.
pub const ACTIVE_WINDOW_MILLIS: i64 = 30 * 86_400_000;

/// The figures, each from the stored data at the time of the call.
#[derive(Debug, Clone)]
pub struct SystemStats {
    pub users_total: i64,
    /// Users whose status is `active`, `inactive` and `banned`.
    pub users_by_status: HashMap<String, i64>,
    /// Users who signed in within [`ACTIVE_WINDOW_MILLIS`].
    pub users_active: i64,
    pub users_new: i64,
    /// Posts by status (published, draft, hidden, flagged, pending).
    pub posts_by_status: HashMap<&'static str, i64>,
    pub reports_open: i64,
    pub uploads: i64,
    /// Bytes of the uploaded originals (variants not counted).
    pub upload_bytes: i64,
    pub sessions_active: i64,
    pub analytics_events: i64,
    pub database_bytes: i64,
}

impl Database {
    pub async fn system_stats(&self) -> Result<SystemStats, DomainError> {
        let now = now_millis();
        let since = now - ACTIVE_WINDOW_MILLIS;
        let mut connection = self.lease().await?;
        let by_status: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, COUNT(*) FROM users GROUP BY status")
                .fetch_all(&mut *connection)
                .await?;
        let (users_active, users_new, reports_open, sessions_active, analytics_events): (
            i64,
            i64,
            i64,
            i64,
            i64,
        ) = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM users WHERE last_login_at >= $1), \
                    (SELECT COUNT(*) FROM users WHERE created_at >= $1), \
                    (SELECT COUNT(*) FROM post_reports WHERE resolved_at IS NULL), \
                    (SELECT COUNT(*) FROM sessions WHERE expires_at > $2), \
                    (SELECT COUNT(*) FROM analytics_events)",
        )
        .bind(since)
        .bind(now)
        .fetch_one(&mut *connection)
        .await?;
        let (database_bytes,): (i64,) = sqlx::query_as(self.dialect().database_size())
            .fetch_one(&mut *connection)
            .await?;
        drop(connection);
        let (uploads, upload_bytes) = self.upload_totals().await?;
        let mut users_by_status: HashMap<String, i64> = ["active", "inactive", "banned"]
            .into_iter()
            .map(|status| (status.to_owned(), 0))
            .collect();
        users_by_status.extend(by_status);
        Ok(SystemStats {
            users_total: users_by_status.values().sum(),
            users_by_status,
            users_active,
            users_new,
            posts_by_status: self.post_status_counts().await?,
            reports_open,
            uploads,
            upload_bytes,
            sessions_active,
            analytics_events,
            database_bytes,
        })
    }
}
