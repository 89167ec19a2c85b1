//! `POST /api/v1/admin/system/maintenance`: cache clearing, search index
//! rebuilds, upload cleanup and database backups (`crate::services::maintenance`), in
//! the rate tier `system` (`app::api_router`).

use axum::extract::State;
use serde::Deserialize;
use utoipa::ToSchema;

use super::envelope::Envelope;
use crate::auth::{AdminToken, RequestAudit};
use crate::controllers::params::{Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::AppJson;
use crate::services::maintenance::{MaintenanceAction, MaintenanceReport, MaintenanceRequest};
use crate::state::AppState;

/// Most characters in a maintenance `scope`.
const MAX_SCOPE_CHARS: usize = 100;

/// A maintenance request (SPEC.md).
#[derive(Deserialize, ToSchema)]
pub struct MaintenanceBody {
    /// `cache_clear`, `rebuild_search`, `cleanup_uploads` or `backup_database`.
    #[schema(example = "backup_database")]
    pub action: String,
    /// Free text recorded in the audit entry, 1 to 100 characters; `all` by default.
    pub scope: Option<String>,
    /// Default false. When true, every administrator gets an alert (in
    /// `GET /api/alerts`) saying what ran, for how long and who started it.
    pub notify: Option<bool>,
}

/// Runs one maintenance action and answers what it did (counts, duration,
/// file name); audited as `system.maintenance.<action>`.
#[utoipa::path(
    post,
    path = "/api/v1/admin/system/maintenance",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    request_body = MaintenanceBody,
    responses(
        (status = 200, description = "Done: what the action did", body = Envelope<MaintenanceReport>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:write` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 409, description = "Another maintenance action is running here, or (PostgreSQL) `pg_dump` is not installed", body = AdminV1Error),
        (status = 422, description = "An unknown action, or a bad scope", body = AdminV1Error),
    )
)]
pub async fn run_maintenance(
    State(state): State<AppState>,
    _admin: AdminToken,
    RequestAudit(context): RequestAudit,
    AppJson(body): AppJson<MaintenanceBody>,
) -> Result<AppJson<Envelope<MaintenanceReport>>, AppError> {
    let request = checked(body)?;
    let report = state.maintenance().run(request, context).await?;
    Ok(AppJson(Envelope::new(report)))
}

/// The request `body` asks for, or a 422 naming each bad field.
pub fn checked(body: MaintenanceBody) -> Result<MaintenanceRequest, AppError> {
    let mut problems = Problems::default();
    let action = problems.check(
        "action",
        MaintenanceAction::parse(body.action.trim()).ok_or_else(|| {
            "must be cache_clear, rebuild_search, cleanup_uploads or backup_database".to_owned()
        }),
    );
    let scope = body.scope.map(|scope| scope.trim().to_owned());
    if let Some(scope) = &scope {
        problems.check(
            "scope",
            check_text(scope, MAX_SCOPE_CHARS, true, TextRule::Line),
        );
    }
    problems.finish()?;
    Ok(MaintenanceRequest {
        action: action.ok_or_else(|| AppError::invalid("action", "is required"))?,
        scope: scope.unwrap_or_else(|| "all".to_owned()),
        notify: body.notify.unwrap_or(false),
    })
}
