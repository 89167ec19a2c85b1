//! `GET /api/admin/stats`: the system statistics (SPEC.md "Unversioned admin
//! surface"; the body is Plaza's, described in docs/api.md).

use std::collections::BTreeMap;

use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::{Administrator, AnyAdmin};
use crate::http::error::AppError;
use crate::http::error::schema::AdminError;
use crate::http::extract::AppJson;
use crate::state::AppState;

/// Users by standing.
#[derive(Serialize, ToSchema)]
pub struct UserStatistics {
    pub total: i64,
    /// Signed in within the last 30 days.
    pub active: i64,
    /// Joined within the last 30 days.
    pub new: i64,
    /// By status: `active`, `inactive`, `banned`.
    pub by_status: BTreeMap<String, i64>,
}

/// Posts by status.
#[derive(Serialize, ToSchema)]
pub struct PostStatistics {
    pub total: i64,
    /// `published`, `draft`, `hidden`, `flagged`.
    pub by_status: BTreeMap<String, i64>,
}

/// Uploaded images.
#[derive(Serialize, ToSchema)]
pub struct UploadStatistics {
    pub count: i64,
    /// Bytes of the stored originals (variants not counted).
    pub bytes: i64,
}

/// The statistics.
#[derive(Serialize, ToSchema)]
pub struct SystemStatsView {
    pub users: UserStatistics,
    pub posts: PostStatistics,
    /// Reports no moderator has acted on.
    pub reports_open: i64,
    pub uploads: UploadStatistics,
    /// Sessions not expired.
    pub sessions_active: i64,
    /// Analytics events stored (within the retention period).
    pub analytics_events: i64,
    /// `plaza.db` on SQLite, the database on PostgreSQL.
    pub database_bytes: i64,
    /// `sqlite` or `postgres`.
    pub database: &'static str,
    pub generated_at: String,
}

/// Figures an operator checks first, read when asked.
#[utoipa::path(
    get,
    path = "/api/admin/stats",
    tag = "admin-dashboard",
    responses(
        (status = 200, description = "The statistics", body = SystemStatsView),
        (status = 500, description = "The statistics could not be read", body = AdminError),
    )
)]
pub async fn system_stats(
    State(state): State<AppState>,
    _admin: Administrator<AnyAdmin>,
) -> Result<AppJson<SystemStatsView>, AppError> {
    let stats = state.db.system_stats().await?;
    let posts_by_status: BTreeMap<String, i64> = stats
        .posts_by_status
        .into_iter()
        .map(|(status, count)| (status.to_owned(), count))
        .collect();
    Ok(AppJson(SystemStatsView {
        users: UserStatistics {
            total: stats.users_total,
            active: stats.users_active,
            new: stats.users_new,
            by_status: stats.users_by_status.into_iter().collect(),
        },
        posts: PostStatistics {
            total: posts_by_status.values().sum(),
            by_status: posts_by_status,
        },
        reports_open: stats.reports_open,
        uploads: UploadStatistics {
            count: stats.uploads,
            bytes: stats.upload_bytes,
        },
        sessions_active: stats.sessions_active,
        analytics_events: stats.analytics_events,
        database_bytes: stats.database_bytes,
        database: state.db.backend().name(),
        generated_at: plaza_domain::time::rfc3339(plaza_domain::time::now_millis()),
    }))
}
