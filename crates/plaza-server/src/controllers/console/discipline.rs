//! A member's warnings and silence on the console's user page: what the
//! page shows of them (the warnings that count, with the rules they cite,
//! and the silence in force) and its three forms, to warn with a reason and
//! the rules broken, to silence for a while with a reason, and to lift the
//! silence. Moderators use them as administrators do, on members the
//! domain's policy lets them discipline (`policy::discipline`, asked in the
//! unit of work). Each form is checked as its `/api/v1/admin/users/{userId}`
//! twin checks its body and runs the same unit of work
//! ([`crate::services::user_admin`]: under the member's edit lock, audited
//! `user.warn`, `user.silence` and `user.unsilence`), then goes back to the
//! user's page.

use std::collections::HashMap;

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::time::{now_millis, rfc3339};
use serde::Deserialize;
use serde_json::{Value, json};

use super::page::{ConsoleUser, form_field};
use crate::auth::RequestAudit;
use crate::controllers::admin_v1::moderation::{WarningBody, silence_terms, warning_order};
use crate::controllers::admin_v1::users::BanTerms;
use crate::controllers::params::Problems;
use crate::http::error::AppError;
use crate::http::extract::{AppForm, IdPath};
use crate::state::AppState;

/// The silence lengths the form offers.
pub const SILENCE_DURATIONS: [&str; 5] = ["1h", "1d", "7d", "30d", "permanent"];

/// What the user page shows of member `id`'s warnings and silence, and the
/// site's rules the warning form offers.
pub async fn shown(state: &AppState, id: i64) -> Result<Value, AppError> {
    let rules = state.db.rules().await?;
    let titles: HashMap<i64, &str> = rules
        .iter()
        .map(|rule| (rule.id, rule.title.as_str()))
        .collect();
    let warnings = state.db.warnings_of(id).await?;
    let silenced_until = state.db.silenced_until(id, now_millis()).await?;
    Ok(json!({
        "warning_count": warnings.len(),
        "warnings": warnings.iter().map(|warning| json!({
            "id": warning.id,
            "reason": warning.reason,
            "rules": warning.rule_ids().iter().map(|rule_id| titles
                .get(rule_id)
                .map_or_else(|| format!("rule {rule_id} (removed)"), |title| (*title).to_owned()))
                .collect::<Vec<_>>(),
            "at": rfc3339(warning.created_at),
            "by": warning.created_by,
        })).collect::<Vec<_>>(),
        "silenced": silenced_until.is_some(),
        "silenced_until": silenced_until.map(|until| until.map_or_else(
            || "until a moderator lifts it".to_owned(),
            rfc3339,
        )),
        "rules": rules.iter().map(|rule| json!({"id": rule.id, "title": rule.title})).collect::<Vec<_>>(),
        "silence_durations": SILENCE_DURATIONS,
    }))
}

/// `POST /admin/users/{id}/warnings`: warns the member with the form's
/// `reason` (10 to 2,000 characters) and the ticked `ruleIds`.
pub async fn warn(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(fields): AppForm<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    user.check_form_token(form_field(&fields, "csrfToken"))?;
    let rule_ids = fields
        .iter()
        .filter(|(key, _)| key == "ruleIds")
        .map(|(_, value)| Value::String(value.clone()))
        .collect();
    let order = warning_order(WarningBody {
        reason: form_field(&fields, "reason").unwrap_or_default().to_owned(),
        rule_ids,
        post_id: None,
        reply_id: None,
    })?;
    state
        .user_admin()
        .warn_user(context, user.actor(), id, order)
        .await?;
    Ok(back(id, "warned"))
}

/// The silence and lift forms.
#[derive(Deserialize)]
pub struct SilenceForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    reason: Option<String>,
    duration: Option<String>,
}

/// `POST /admin/users/{id}/silence`: silences the member for the form's
/// `duration` (as a ban's) with its `reason` (required).
pub async fn silence(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<SilenceForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    let duration = form.duration.filter(|duration| !duration.is_empty());
    let (reason, length) = silence_terms(form.reason, duration.as_deref())?;
    state
        .user_admin()
        .silence_user(context, user.actor(), id, reason, length)
        .await?;
    Ok(back(id, "silenced"))
}

/// `POST /admin/users/{id}/unsilence`: lifts the member's silence, with
/// the form's `reason` when given (told to the member).
pub async fn unsilence(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<SilenceForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    let mut problems = Problems::default();
    let terms = BanTerms::check(&mut problems, form.reason, None, None, false);
    problems.finish()?;
    state
        .user_admin()
        .unsilence_user(context, user.actor(), id, terms.reason)
        .await?;
    Ok(back(id, "unsilenced"))
}

/// Back to user `id`'s page, confirming `done`.
fn back(id: i64, done: &str) -> Response {
    Redirect::to(&format!("/admin/users/{id}?done={done}")).into_response()
}
