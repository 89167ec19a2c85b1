//! `GET /api/v1/admin/audit-logs`: the audit trail, read-only (there is no
//! route that changes or removes an entry).

use axum::extract::State;
use plaza_domain::audit::{AuditEntry, AuditFilter};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::envelope::ListEnvelope;
use super::listing::ListQuery;
use crate::auth::AdminToken;
use crate::controllers::params::{self, Pagination, Problems};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery};
use crate::state::AppState;
use plaza_domain::time::rfc3339;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditLogQuery {
    /// Only actions of this admin (a user id).
    #[serde(rename = "adminId")]
    #[param(rename = "adminId", value_type = Option<String>, example = "1")]
    pub admin_id: Option<String>,
    /// Only this action, e.g. `user.update`.
    pub action: Option<String>,
    /// From this date (`2026-11-01`) or time (RFC 3339), inclusive.
    #[serde(rename = "startDate")]
    #[param(rename = "startDate")]
    pub start_date: Option<String>,
    /// Until this date (inclusive: the whole day) or time (exclusive).
    #[serde(rename = "endDate")]
    #[param(rename = "endDate")]
    pub end_date: Option<String>,
}

/// One audit entry (DECISIONS.md "Shapes the spec leaves out").
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditLogItem {
    #[schema(example = "12")]
    pub id: String,
    pub timestamp: String,
    /// The acting admin; absent for the command line.
    pub admin_id: Option<String>,
    pub admin_email: Option<String>,
    #[schema(example = "user.update")]
    pub action: String,
    #[schema(example = "user")]
    pub target_type: String,
    pub target_id: Option<String>,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    /// What changed: `{field: {before, after}}`, or a snapshot of what was removed.
    #[schema(value_type = Object)]
    pub changes: serde_json::Value,
    /// `v1`, `admin`, `api` or `cli`.
    pub surface: String,
}

impl From<AuditEntry> for AuditLogItem {
    fn from(entry: AuditEntry) -> Self {
        AuditLogItem {
            id: entry.id.to_string(),
            timestamp: rfc3339(entry.created_at),
            admin_id: entry.actor_id.map(|id| id.to_string()),
            admin_email: entry.actor_email,
            action: entry.action,
            target_type: entry.target_type,
            target_id: entry.target_id,
            ip_address: entry.ip_address,
            user_agent: entry.user_agent,
            changes: serde_json::from_str(&entry.changes).unwrap_or(serde_json::Value::Null),
            surface: entry.surface,
        }
    }
}

/// The audit trail: every admin and moderator action, filtered by admin,
/// action and date range, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/admin/audit-logs",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(AuditLogQuery, ListQuery),
    responses(
        (status = 200, description = "A page of entries", body = ListEnvelope<AuditLogItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "A filter, limit or offset is invalid", body = AdminV1Error),
    )
)]
pub async fn list_audit_logs(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<AuditLogQuery>,
    AppQuery(list): AppQuery<ListQuery>,
) -> Result<AppJson<ListEnvelope<AuditLogItem>>, AppError> {
    let mut problems = Problems::default();
    let actor_id = params::id(&mut problems, "adminId", query.admin_id.as_deref());
    let action = query
        .action
        .map(|action| action.trim().to_owned())
        .filter(|action| !action.is_empty());
    if action.as_ref().is_some_and(|action| action.len() > 100) {
        problems.add("action", "must be at most 100 characters");
    }
    let since = params::instant(
        &mut problems,
        "startDate",
        query.start_date.as_deref(),
        false,
    );
    let until = params::instant(&mut problems, "endDate", query.end_date.as_deref(), true);
    let page = list.check(&mut problems).page;
    problems.finish()?;
    let filter = AuditFilter {
        actor_id,
        action,
        since,
        until,
    };
    let found = state.db.audit_page(&filter, page).await?;
    Ok(AppJson(ListEnvelope::new(
        found.entries.into_iter().map(AuditLogItem::from).collect(),
        Pagination::new(found.total, page),
    )))
}
