//! The console's feature flags (administrators): every flag with a form to
//! change whether it is on, its description, its rollout and the roles it
//! is limited to; a form to create one; and removing one. The fields are
//! checked as `PUT /api/v1/admin/feature-flags/{flagName}` checks its body,
//! and the writes are its units of work (`services::flags`).

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::listing::Page;
use serde::Deserialize;
use serde_json::json;

use super::page::{ConsoleUser, page};
use crate::auth::RequestAudit;
use crate::controllers::admin_v1::feature_flags::{FeatureFlagItem, FlagWriteBody, checked_write};
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery, TextPath};
use crate::services::flags;
use crate::state::AppState;

/// The most flags the page lists (the store holds few).
const MAX_LISTED: i64 = 500;

#[derive(Deserialize)]
pub struct ListQuery {
    /// What was just done, to confirm it.
    done: Option<String>,
}

/// `GET /admin/flags`: every flag, by name, and the create form.
pub async fn list(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    user.require_administrator(None, "feature flag")?;
    let found = state
        .db
        .feature_flags(Page {
            limit: MAX_LISTED,
            offset: 0,
        })
        .await?;
    let items: Vec<FeatureFlagItem> = found.flags.iter().map(FeatureFlagItem::from).collect();
    let done = match query.done.as_deref() {
        Some("saved") => Some("The flag is saved; every instance serves it within 5 s."),
        Some("deleted") => Some("The flag is removed."),
        _ => None,
    };
    page(
        &state,
        &user,
        "flags",
        "flags.html",
        json!({
            "flags": items,
            "total": found.total,
            "done": done,
            "roles": ["user", "moderator", "admin", "super_admin"],
        }),
    )
}

/// A flag's form: its checkbox fields are absent when unticked.
struct FlagForm {
    csrf_token: Option<String>,
    name: Option<String>,
    enabled: Option<String>,
    description: Option<String>,
    rollout_percentage: Option<String>,
    /// One field per ticked role, as a form sends checkboxes of one name.
    target_roles: Vec<String>,
}

/// `POST /admin/flags`: creates or changes the flag the form names.
pub async fn save(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    AppForm(fields): AppForm<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    let form = FlagForm::from_fields(fields);
    user.check_form_token(form.csrf_token.as_deref())?;
    user.require_administrator(None, "feature flag")?;
    let name = form.name.unwrap_or_default().trim().to_owned();
    let rollout_percentage = match form.rollout_percentage.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(raw) => Some(raw.parse::<i64>().map_err(|_| {
            AppError::invalid("rolloutPercentage", "must be a whole number from 0 to 100")
        })?),
    };
    let body = FlagWriteBody {
        enabled: form.enabled.as_deref() == Some("true"),
        description: Some(form.description),
        rollout_percentage,
        target_roles: Some(form.target_roles),
    };
    let changes = checked_write(&name, body)?;
    flags::put(
        &state.db,
        &state.flag_snapshot,
        context,
        name,
        changes,
        user.actor().user_id,
    )
    .await?;
    Ok(Redirect::to("/admin/flags?done=saved").into_response())
}

impl FlagForm {
    /// The form from its fields in order (`targetRoles` may repeat).
    fn from_fields(fields: Vec<(String, String)>) -> FlagForm {
        let mut form = FlagForm {
            csrf_token: None,
            name: None,
            enabled: None,
            description: None,
            rollout_percentage: None,
            target_roles: Vec::new(),
        };
        for (key, value) in fields {
            match key.as_str() {
                "csrfToken" => form.csrf_token = Some(value),
                "name" => form.name = Some(value),
                "enabled" => form.enabled = Some(value),
                "description" => form.description = Some(value),
                "rolloutPercentage" => form.rollout_percentage = Some(value),
                "targetRoles" => form.target_roles.push(value),
                _ => {}
            }
        }
        form
    }
}

/// The remove form.
#[derive(Deserialize)]
pub struct DeleteForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
}

/// `POST /admin/flags/{name}/delete`: removes the flag.
pub async fn delete(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    TextPath(name): TextPath,
    AppForm(form): AppForm<DeleteForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    user.require_administrator(None, "feature flag")?;
    flags::delete(&state.db, &state.flag_snapshot, context, name).await?;
    Ok(Redirect::to("/admin/flags?done=deleted").into_response())
}
