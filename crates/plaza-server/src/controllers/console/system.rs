//! The console's system page (administrators): the version, whether the
//! database, Redis and the upload store answer, the backups kept in the
//! data directory, and the maintenance actions (cache clearing, search
//! index rebuild, upload cleanup, backup), run as
//! `POST /api/v1/admin/system/maintenance` runs them
//! (`services::maintenance`, audited as `system.maintenance.<action>`,
//! one at a time per instance) and in the same `system` rate tier.

use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;

use super::page::{ConsoleUser, page};
use crate::auth::RequestAudit;
use crate::controllers::admin_v1::system::{MaintenanceBody, checked};
use crate::http::error::AppError;
use crate::http::extract::AppForm;
use crate::services::maintenance::{self, MaintenanceAction, MaintenanceReport};
use crate::state::AppState;

/// `GET /admin/system`.
pub async fn overview(
    State(state): State<AppState>,
    user: ConsoleUser,
) -> Result<Response, AppError> {
    user.require_administrator(None, "system")?;
    render(&state, &user, None).await
}

/// The maintenance form.
#[derive(Deserialize)]
pub struct MaintenanceForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    action: Option<String>,
    scope: Option<String>,
    notify: Option<String>,
}

/// `POST /admin/system/maintenance`: runs one action and shows its report.
pub async fn run_maintenance(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    AppForm(form): AppForm<MaintenanceForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    user.require_administrator(None, "system")?;
    let request = checked(MaintenanceBody {
        action: form.action.unwrap_or_default(),
        scope: form.scope.filter(|scope| !scope.trim().is_empty()),
        notify: Some(form.notify.as_deref() == Some("true")),
    })?;
    let report = state.maintenance().run(request, context).await?;
    render(&state, &user, Some(report)).await
}

async fn render(
    state: &AppState,
    user: &ConsoleUser,
    report: Option<MaintenanceReport>,
) -> Result<Response, AppError> {
    let health = state.health.check(state.health_targets()).await;
    let backups =
        maintenance::stored_backups(&state.settings.storage).map_err(AppError::internal)?;
    let report = report
        .map(|report| serde_json::to_string_pretty(&report).map_err(AppError::internal))
        .transpose()?;
    page(
        state,
        user,
        "system",
        "system.html",
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "health": {
                "database": health.database,
                "redis": health.redis,
                "storage": health.storage,
            },
            "backups": backups,
            "backup_keep": state.settings.storage.backup_keep,
            "actions": MaintenanceAction::ALL.map(MaintenanceAction::as_str),
            "report": report,
        }),
    )
}
