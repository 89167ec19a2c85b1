//! The console's word filters (administrators): every filter, a form to
//! add one and a button to remove each. The fields are checked as
//! `POST /api/v1/admin/word-filters` checks its body, and the writes are
//! its units of work (`services::word_filters`).

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::json;

use super::page::{ConsoleUser, page};
use crate::auth::RequestAudit;
use crate::controllers::admin_v1::word_filters::{
    NewWordFilterBody, WordFilterItem, checked_filter,
};
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery, IdPath};
use crate::services::word_filters;
use crate::state::AppState;

#[derive(Deserialize)]
pub struct ListQuery {
    /// What was just done, to confirm it.
    done: Option<String>,
}

/// `GET /admin/word-filters`: every filter, oldest first (at most a
/// thousand exist), and the add form.
pub async fn list(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    user.require_administrator(None, "word filter")?;
    let filters = state.db.word_filters().await?;
    let items: Vec<WordFilterItem> = filters.iter().map(WordFilterItem::from).collect();
    let done = match query.done.as_deref() {
        Some("added") => Some("The filter is added; every instance applies it within 5 s."),
        Some("deleted") => Some("The filter is removed."),
        _ => None,
    };
    page(
        &state,
        &user,
        "word-filters",
        "word_filters.html",
        json!({
            "filters": items,
            "total": items.len(),
            "done": done,
            "scopes": ["post", "reply", "username", "profile"],
        }),
    )
}

/// `POST /admin/word-filters`: adds the filter the form describes (a
/// checkbox field per ticked scope; none ticked: all of them).
pub async fn add(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    AppForm(fields): AppForm<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    let mut csrf_token = None;
    let mut body = NewWordFilterBody {
        phrase: None,
        action: None,
        whole_word: Some(false),
        applies_to: None,
    };
    let mut scopes = Vec::new();
    for (key, value) in fields {
        match key.as_str() {
            "csrfToken" => csrf_token = Some(value),
            "phrase" => body.phrase = Some(value),
            "action" => body.action = Some(value),
            "wholeWord" => body.whole_word = Some(value == "true"),
            "appliesTo" => scopes.push(value),
            _ => {}
        }
    }
    user.check_form_token(csrf_token.as_deref())?;
    user.require_administrator(None, "word filter")?;
    body.applies_to = (!scopes.is_empty()).then_some(scopes);
    let new = checked_filter(body)?;
    word_filters::create(
        &state.db,
        &state.word_filters,
        context,
        new,
        user.actor().user_id,
    )
    .await?;
    Ok(Redirect::to("/admin/word-filters?done=added").into_response())
}

/// The remove form.
#[derive(Deserialize)]
pub struct DeleteForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
}

/// `POST /admin/word-filters/{id}/delete`: removes the filter.
pub async fn delete(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<DeleteForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    user.require_administrator(None, "word filter")?;
    word_filters::delete(&state.db, &state.word_filters, context, id).await?;
    Ok(Redirect::to("/admin/word-filters?done=deleted").into_response())
}
