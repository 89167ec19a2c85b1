//! The console's custom emoji reviews (moderators and up): the emojis
//! waiting for approval, each with its image, and approve or reject. Each
//! decision is the unit of work the unversioned admin API runs
//! (`plaza_domain::emojis::approve` / `reject`, audited as
//! `emoji.approve` / `emoji.reject`; nobody approves their own).

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::emojis;
use plaza_domain::listing::Page;
use plaza_domain::policy;
use serde::Deserialize;
use serde_json::json;

use super::page::{ConsoleUser, page, page_number};
use crate::auth::{RequestAudit, authorize};
use crate::controllers::emojis::EmojiItem;
use crate::controllers::params::Problems;
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery, IdPath};
use crate::state::AppState;

/// Emojis per page.
const PAGE_SIZE: i64 = 30;

#[derive(Deserialize)]
pub struct ListQuery {
    page: Option<String>,
    /// What was just done, to confirm it.
    done: Option<String>,
}

/// `GET /admin/emojis`: one page of the custom emojis waiting for review.
pub async fn list(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    authorize(policy::moderate_emojis(user.actor()), "custom emoji")?;
    let mut problems = Problems::default();
    let page_number = page_number(&mut problems, query.page.as_deref());
    problems.finish()?;
    let (pending, total) = state
        .db
        .pending_custom_emojis(Page {
            limit: PAGE_SIZE,
            offset: (page_number - 1) * PAGE_SIZE,
        })
        .await?;
    let items: Vec<EmojiItem> = pending.into_iter().map(EmojiItem::from).collect();
    let done = match query.done.as_deref() {
        Some("approved") => Some("The emoji is approved; everyone sees it now."),
        Some("rejected") => Some("The emoji is rejected and removed."),
        _ => None,
    };
    page(
        &state,
        &user,
        "emojis",
        "emojis.html",
        json!({
            "emojis": items,
            "total": total,
            "done": done,
            "previous_page": (page_number > 1).then_some(page_number - 1),
            "next_page": (page_number * PAGE_SIZE < total).then_some(page_number + 1),
        }),
    )
}

/// A review form.
#[derive(Deserialize)]
pub struct ReviewForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    /// `approve` or `reject`.
    decision: Option<String>,
}

/// `POST /admin/emojis/{id}`: approves or rejects the emoji.
pub async fn review(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<ReviewForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    authorize(policy::moderate_emojis(user.actor()), "custom emoji")?;
    let moderator = user.actor();
    let done = match form.decision.as_deref() {
        Some("approve") => {
            state
                .db
                .write(move |tx| {
                    Box::pin(async move { emojis::approve(tx, &context, moderator, id).await })
                })
                .await?;
            // Lists of custom emojis show it from now on.
            state.answer_caches.emojis.clear();
            "approved"
        }
        Some("reject") => {
            state
                .db
                .write(move |tx| Box::pin(async move { emojis::reject(tx, &context, id).await }))
                .await?;
            "rejected"
        }
        _ => return Err(AppError::invalid("decision", "must be approve or reject")),
    };
    Ok(Redirect::to(&format!("/admin/emojis?done={done}")).into_response())
}
