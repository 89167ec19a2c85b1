//! The console's appeals: open appeals (oldest first) or decided ones
//! (newest first), each showing the moderation action it contests (what
//! was done, to what, why, citing which rules, when, by whom) beside the
//! member's text, and for an open one a form to uphold or reverse it with
//! a reason. The list is the one `GET /api/v1/admin/appeals` reads; a
//! decision is the unit of work of `POST /api/v1/admin/appeals/{appealId}`
//! (`services::user_admin`, audited `appeal.decide`), which refuses (403,
//! as a page) whoever took the action appealed.

use std::collections::HashMap;

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::DomainError;
use plaza_domain::moderation::AppealStatus;
use plaza_domain::moderation::appeals::AppealDecision;
use serde::Deserialize;
use serde_json::json;

use super::page::{ConsoleUser, page, page_number};
use crate::auth::RequestAudit;
use crate::controllers::admin_v1::moderation::{AdminAppeal, AppealDecisionBody, appeal_decision};
use crate::controllers::params::Problems;
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery, IdPath};
use crate::state::AppState;

/// Appeals per page.
const PAGE_SIZE: i64 = 20;

#[derive(Deserialize)]
pub struct ListQuery {
    /// `open` (the default) or `decided`.
    status: Option<String>,
    page: Option<String>,
    /// The decision just taken, to confirm it.
    done: Option<String>,
}

/// `GET /admin/appeals`: one page of open or decided appeals.
pub async fn list(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    let status = match query.status.as_deref().filter(|raw| !raw.is_empty()) {
        None => AppealStatus::Open,
        Some(raw) => problems
            .check(
                "status",
                AppealStatus::parse(raw).ok_or_else(|| "must be open or decided".to_owned()),
            )
            .unwrap_or(AppealStatus::Open),
    };
    let page_number = page_number(&mut problems, query.page.as_deref());
    problems.finish()?;
    let found = state
        .db
        .appeals(Some(status), PAGE_SIZE, (page_number - 1) * PAGE_SIZE)
        .await?;
    let titles: HashMap<i64, String> = state
        .db
        .rules()
        .await?
        .into_iter()
        .map(|rule| (rule.id, rule.title))
        .collect();
    let viewer = user.actor().user_id;
    let mut names: HashMap<i64, Option<String>> = HashMap::new();
    let mut appeals = Vec::with_capacity(found.appeals.len());
    for (appeal, action) in &found.appeals {
        let member = username(&state, &mut names, appeal.user_id).await?;
        let moderator = match action.moderator_id {
            Some(id) => username(&state, &mut names, id).await?,
            None => None,
        };
        let rules: Vec<String> = action
            .rule_ids()
            .iter()
            .map(|id| {
                titles
                    .get(id)
                    .cloned()
                    .unwrap_or_else(|| format!("rule {id} (removed)"))
            })
            .collect();
        appeals.push(json!({
            "appeal": AdminAppeal::new(appeal, action),
            "member": member,
            "moderator": moderator,
            "automated": action.automated.0,
            "rules": rules,
            "own": action.moderator_id == Some(viewer),
        }));
    }
    let done = match query.done.as_deref().and_then(AppealDecision::parse) {
        Some(AppealDecision::Uphold) => Some("The appeal is decided: the action stands."),
        Some(AppealDecision::Reverse) => Some("The appeal is decided: the action is reversed."),
        None => None,
    };
    page(
        &state,
        &user,
        "appeals",
        "appeals.html",
        json!({
            "status": status.as_str(),
            "appeals": appeals,
            "total": found.total,
            "done": done,
            "previous_page": (page_number > 1).then_some(page_number - 1),
            "next_page": (page_number * PAGE_SIZE < found.total).then_some(page_number + 1),
        }),
    )
}

/// The username of user `id` (`None` once erased), asked once per page.
async fn username(
    state: &AppState,
    names: &mut HashMap<i64, Option<String>>,
    id: i64,
) -> Result<Option<String>, AppError> {
    if let Some(name) = names.get(&id) {
        return Ok(name.clone());
    }
    let name = match state.db.user_by_id(id).await {
        Ok(found) => Some(found.row.username),
        Err(DomainError::NotFound(_)) => None,
        Err(other) => return Err(other.into()),
    };
    names.insert(id, name.clone());
    Ok(name)
}

/// The decision form.
#[derive(Deserialize)]
pub struct DecisionForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
}

/// `POST /admin/appeals/{id}`: upholds or reverses the appeal with the
/// form's reason, then back to the open appeals.
pub async fn decide(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<DecisionForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    let (decision, reason) = appeal_decision(AppealDecisionBody {
        decision: form.decision.unwrap_or_default(),
        reason: form.reason.unwrap_or_default(),
    })?;
    state
        .user_admin()
        .decide_appeal(context, user.actor(), id, decision, reason)
        .await?;
    Ok(Redirect::to(&format!("/admin/appeals?done={}", decision.as_str())).into_response())
}
