//! Reviewing custom emojis: the ones waiting for approval, and approving
//! or rejecting one (moderators and above, by session or admin JWT).
//! Approval makes a personal emoji visible to everyone who lists custom
//! emojis; both decisions are audited with the change.

use axum::extract::State;
use plaza_domain::emojis;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::{EmojiModerator, RequestAudit};
use crate::controllers::emojis::EmojiItem;
use crate::controllers::params::{self, Pagination, Problems};
use crate::http::error::AppError;
use crate::http::error::schema::AdminError;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::state::AppState;

/// Paging of the review queue.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PendingEmojiQuery {
    /// 1 to 100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Items to skip, default 0.
    #[param(value_type = Option<u64>, minimum = 0)]
    pub offset: Option<String>,
}

/// The custom emojis waiting for a moderator.
#[derive(Serialize, ToSchema)]
pub struct PendingEmojis {
    pub emojis: Vec<EmojiItem>,
    pub pagination: Pagination,
}

/// The emoji after a review.
#[derive(Serialize, ToSchema)]
pub struct EmojiReviewed {
    pub success: bool,
    pub message: String,
    /// The approved emoji; `null` after a rejection (it is removed).
    pub emoji: Option<EmojiItem>,
}

/// List the custom emojis waiting for approval, oldest first.
#[utoipa::path(
    get,
    path = "/api/admin/emojis/pending",
    tag = "admin-dashboard",
    params(PendingEmojiQuery),
    responses(
        (status = 200, description = "A page of personal custom emojis", body = PendingEmojis),
        (status = 400, description = "A bad limit or offset; `details` lists each", body = AdminError),
    )
)]
pub async fn pending_emojis(
    State(state): State<AppState>,
    _moderator: EmojiModerator,
    AppQuery(query): AppQuery<PendingEmojiQuery>,
) -> Result<AppJson<PendingEmojis>, AppError> {
    let mut problems = Problems::default();
    let page = params::page(
        &mut problems,
        query.limit.as_deref(),
        query.offset.as_deref(),
    );
    problems.finish()?;
    let (pending, total) = state.db.pending_custom_emojis(page).await?;
    Ok(AppJson(PendingEmojis {
        emojis: pending.into_iter().map(EmojiItem::from).collect(),
        pagination: Pagination::new(total, page),
    }))
}

/// Approve a custom emoji: it stops being personal and everyone who lists
/// custom emojis sees it. Nobody approves their own, and approved custom
/// emoji names are unique across users. Audited as `emoji.approve`.
#[utoipa::path(
    post,
    path = "/api/admin/emojis/{id}/approve",
    tag = "admin-dashboard",
    params(("id" = i64, Path, description = "The emoji's numeric `id`")),
    responses(
        (status = 200, description = "Approved", body = EmojiReviewed),
        (status = 403, description = "The emoji is the caller's own", body = AdminError),
        (status = 404, description = "No such custom emoji", body = AdminError),
        (status = 409, description = "It is approved already, or another approved custom emoji has its name", body = AdminError),
    )
)]
pub async fn approve_emoji(
    State(state): State<AppState>,
    EmojiModerator(moderator): EmojiModerator,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<AppJson<EmojiReviewed>, AppError> {
    let emoji = state
        .db
        .write(move |tx| {
            Box::pin(async move { emojis::approve(tx, &context, moderator, id).await })
        })
        .await?;
    state.answer_caches.emojis.clear();
    Ok(AppJson(EmojiReviewed {
        success: true,
        message: format!("Custom emoji :{}: approved", emoji.name),
        emoji: Some(emoji.into()),
    }))
}

/// Reject a custom emoji that waits for approval: it is removed. Audited
/// as `emoji.reject`.
#[utoipa::path(
    post,
    path = "/api/admin/emojis/{id}/reject",
    tag = "admin-dashboard",
    params(("id" = i64, Path, description = "The emoji's numeric `id`")),
    responses(
        (status = 200, description = "Rejected and removed", body = EmojiReviewed),
        (status = 404, description = "No such custom emoji", body = AdminError),
        (status = 409, description = "It is approved already", body = AdminError),
    )
)]
pub async fn reject_emoji(
    State(state): State<AppState>,
    _moderator: EmojiModerator,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<AppJson<EmojiReviewed>, AppError> {
    state
        .db
        .write(move |tx| Box::pin(async move { emojis::reject(tx, &context, id).await }))
        .await?;
    Ok(AppJson(EmojiReviewed {
        success: true,
        message: "Custom emoji rejected and removed".to_owned(),
        emoji: None,
    }))
}
