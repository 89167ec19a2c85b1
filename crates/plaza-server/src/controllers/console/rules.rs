//! The console's site rules: the rules in the order members read them,
//! for every console user (moderators cite them), and for administrators
//! one form that edits, reorders, removes and adds them. The form is
//! checked as `PUT /api/v1/admin/rules` checks its body and saved by the
//! same replace (`services::site_rules`, audited `rules.update`): a rule
//! left out is removed, its id staying in what cited it.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::rules::{MAX_DESCRIPTION_CHARS, MAX_RULES, MAX_TITLE_CHARS};
use serde::Deserialize;
use serde_json::json;

use super::page::{ConsoleUser, page};
use crate::auth::RequestAudit;
use crate::controllers::admin_v1::moderation::{RuleInput, checked_rules};
use crate::controllers::params::Problems;
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery};
use crate::services::site_rules;
use crate::state::AppState;

#[derive(Deserialize)]
pub struct ListQuery {
    /// What was just done, to confirm it.
    done: Option<String>,
}

/// `GET /admin/rules`: the rules, and the form that changes them.
pub async fn list(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    let rules = state.db.rules().await?;
    let done = match query.done.as_deref() {
        Some("saved") => Some("The rules are saved."),
        _ => None,
    };
    page(
        &state,
        &user,
        "rules",
        "rules.html",
        json!({
            "rules": rules.iter().map(|rule| json!({
                "id": rule.id,
                "title": rule.title,
                "description": rule.description,
            })).collect::<Vec<_>>(),
            "new_row": rules.len(),
            "may_change": user.administers(None),
            "done": done,
            "max_rules": MAX_RULES,
            "max_title": MAX_TITLE_CHARS,
            "max_description": MAX_DESCRIPTION_CHARS,
        }),
    )
}

/// One row of the form, by its number.
#[derive(Default)]
struct Row {
    id: Option<String>,
    position: Option<String>,
    title: String,
    description: String,
    remove: bool,
}

/// `POST /admin/rules`: the rules as the form lists them. Row `n` has the
/// fields `id-n` (none on the new rule's row), `position-n`, `title-n`,
/// `description-n` and the checkbox `remove-n`; rows are ordered by their
/// position (then as listed), a ticked row is left out, and the new rule's
/// row counts only when it has a title or description.
pub async fn save(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    AppForm(fields): AppForm<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    let mut csrf_token = None;
    let mut rows: BTreeMap<usize, Row> = BTreeMap::new();
    for (key, value) in fields {
        if key == "csrfToken" {
            csrf_token = Some(value);
            continue;
        }
        let Some((name, number)) = key.rsplit_once('-') else {
            continue;
        };
        let Ok(number) = number.parse::<usize>() else {
            continue;
        };
        // A form lists at most the rules a site has, and the new one.
        if number > MAX_RULES {
            continue;
        }
        let row = rows.entry(number).or_default();
        match name {
            "id" => row.id = Some(value),
            "position" => row.position = Some(value),
            "title" => row.title = value,
            "description" => row.description = value,
            "remove" => row.remove = value == "true",
            _ => {}
        }
    }
    user.check_form_token(csrf_token.as_deref())?;
    user.require_administrator(None, "rules")?;
    let mut problems = Problems::default();
    let mut kept: Vec<(i64, usize, RuleInput)> = Vec::new();
    for (number, row) in rows {
        let blank_new =
            row.id.is_none() && row.title.trim().is_empty() && row.description.trim().is_empty();
        if row.remove || blank_new {
            continue;
        }
        let position = match row.position.as_deref().map(str::trim) {
            None | Some("") => i64::try_from(number).unwrap_or(i64::MAX),
            Some(raw) => problems
                .check(
                    "position",
                    raw.parse::<i64>()
                        .ok()
                        .filter(|position| (0..=100_000).contains(position))
                        .ok_or_else(|| "must be a number from 0 to 100000".to_owned()),
                )
                .unwrap_or_default(),
        };
        kept.push((
            position,
            number,
            RuleInput {
                id: row.id.map(serde_json::Value::String),
                title: row.title,
                description: row.description,
            },
        ));
    }
    problems.finish()?;
    kept.sort_by_key(|(position, number, _)| (*position, *number));
    let drafts = checked_rules(kept.into_iter().map(|(_, _, rule)| rule).collect())?;
    site_rules::replace(&state.db, context, drafts).await?;
    Ok(Redirect::to("/admin/rules?done=saved").into_response())
}
