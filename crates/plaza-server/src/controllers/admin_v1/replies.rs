//! `GET /api/v1/admin/replies` and `POST
//! /api/v1/admin/replies/{replyId}/moderate`: the moderators' reply list
//! and their decisions on replies, with the body and rules of post
//! moderation.

use std::borrow::Cow;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use plaza_domain::policy::{self, Actor};
use plaza_domain::posts::ModerationAction;
use plaza_domain::replies::{AdminReply, AdminReplyQuery, Removal, ReplyModerated, ReplyStatus};
use plaza_domain::time::rfc3339;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::envelope::{Envelope, ListEnvelope};
use super::listing::ListQuery;
use super::posts::{ModerateBody, PostAuthor, PostReportItem, checked_decision};
use crate::auth::{AdminToken, RequestAudit, authorize};
use crate::controllers::params::{self, Pagination, Problems};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::services::moderation;
use crate::state::AppState;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AdminReplyListQuery {
    /// `all` (default), `published`, `pending`, `hidden`, `flagged` or
    /// `deleted` (placeholders with visible replies below).
    #[param(example = "pending")]
    pub status: Option<String>,
    /// `true`: only replies with at least one report.
    #[param(value_type = Option<bool>)]
    pub reported: Option<String>,
    /// Only replies to this post (a post id).
    #[serde(rename = "postId")]
    #[param(rename = "postId", value_type = Option<String>, example = "12")]
    pub post_id: Option<String>,
    /// Only replies by this user (a user id).
    #[serde(rename = "authorId")]
    #[param(rename = "authorId", value_type = Option<String>, example = "42")]
    pub author_id: Option<String>,
}

/// A reply as the admin surface shows it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminReplyItem {
    #[schema(example = "31")]
    pub id: String,
    #[schema(example = "12")]
    pub post_id: String,
    /// The reply it answers; null for an answer to the post.
    #[schema(example = "30")]
    pub parent_id: Option<String>,
    /// Empty for a deleted reply.
    pub content: String,
    /// Null for a deleted reply.
    pub author: Option<PostAuthor<'static>>,
    /// `published`, `pending`, `hidden`, `flagged` or `deleted`.
    #[schema(value_type = String, example = "published")]
    pub status: &'static str,
    /// Why it entered the queue by itself, while it is pending or flagged
    /// by a word filter: `new_account` or `word_filter:<phrase>`; else null.
    #[schema(example = "word_filter:casino")]
    pub review_reason: Option<String>,
    pub report_count: i64,
    /// Oldest first.
    pub reports: Vec<PostReportItem<'static>>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<AdminReply> for AdminReplyItem {
    fn from(AdminReply { reply, reports }: AdminReply) -> Self {
        AdminReplyItem {
            id: reply.id.to_string(),
            post_id: reply.post_id.to_string(),
            parent_id: reply.parent_id.map(|id| id.to_string()),
            author: reply.author.map(|author| PostAuthor {
                id: author.id.to_string(),
                username: Cow::Owned(author.username),
            }),
            content: reply.content,
            status: reply.status.as_str(),
            review_reason: reply.review_reason,
            report_count: reply.report_count,
            reports: reports.into_iter().map(PostReportItem::new).collect(),
            created_at: rfc3339(reply.created_at),
            updated_at: rfc3339(reply.updated_at),
        }
    }
}

/// Every reply (but deleted ones without visible replies below), newest
/// first, with its author and reports; filtered by status, reports, post
/// and author.
#[utoipa::path(
    get,
    path = "/api/v1/admin/replies",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(AdminReplyListQuery, ListQuery),
    responses(
        (status = 200, description = "A page of replies", body = ListEnvelope<AdminReplyItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "A filter, limit or offset is invalid (`VALIDATION_ERROR` naming the field)", body = AdminV1Error),
    )
)]
pub async fn list_admin_replies(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<AdminReplyListQuery>,
    AppQuery(list): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    let status = params::filter(
        &mut problems,
        "status",
        query.status.as_deref(),
        ReplyStatus::parse,
        "published, pending, hidden, flagged or deleted",
    );
    let reported = params::boolean(&mut problems, "reported", query.reported.as_deref());
    let post_id = params::id(&mut problems, "postId", query.post_id.as_deref());
    let author_id = params::id(&mut problems, "authorId", query.author_id.as_deref());
    let page = list.check(&mut problems).page;
    problems.finish()?;
    let filter = AdminReplyQuery {
        status,
        reported_only: reported == Some(true),
        post_id,
        author_id,
        ..AdminReplyQuery::default()
    };
    let found = state.db.admin_replies(&filter, page).await?;
    Ok(AppJson(ListEnvelope::new(
        found
            .replies
            .into_iter()
            .map(AdminReplyItem::from)
            .collect(),
        Pagination::new(found.total, page),
    ))
    .into_response())
}

/// What a deleted reply was.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletedReply {
    #[schema(example = "31")]
    pub id: String,
    /// Always true.
    pub deleted: bool,
    #[schema(example = "12")]
    pub post_id: String,
    /// The status it had.
    pub status: String,
    /// Whether it stays in its thread as a placeholder (replies remain
    /// below it).
    pub placeholder: bool,
    /// How many reports were removed with it.
    pub reports_removed: i64,
}

/// The reply after a decision, or for `delete` what was deleted.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum ReplyModerationResult {
    Reply(AdminReplyItem),
    Deleted(DeletedReply),
}

/// Approve, hide, flag or delete a reply, with the body and rules of post
/// moderation: the state machine of
/// `plaza_domain::replies::reply_moderation_step` decides what each action
/// does from each status (409 `INVALID_TRANSITION` otherwise); approve,
/// hide and flag resolve the reply's open reports; `delete` needs
/// `admin:delete` and leaves a placeholder while replies remain below.
/// Takes the reply's edit lock; audited as `reply.moderate` with the
/// change, in the same transaction.
#[utoipa::path(
    post,
    path = "/api/v1/admin/replies/{replyId}/moderate",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    params(("replyId" = String, Path, description = "Reply id (digits)", example = "31")),
    request_body = ModerateBody,
    responses(
        (status = 200, description = "The reply after the decision, or what was deleted", body = Envelope<ReplyModerationResult>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:write` (or, for `delete`, no `admin:delete`) (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No such reply", body = AdminV1Error),
        (status = 409, description = "The action makes no sense from the reply's status (`INVALID_TRANSITION`)", body = AdminV1Error),
        (status = 422, description = "Unknown action, or a reason or notes too long (`VALIDATION_ERROR`)", body = AdminV1Error),
        (status = 423, description = "Another admin is changing this reply (`RESOURCE_LOCKED` with `lockedBy`, `lockedAt`)", body = AdminV1Error),
    )
)]
pub async fn moderate_reply(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<ModerateBody>,
) -> Result<AppJson<Envelope<ReplyModerationResult>>, AppError> {
    let mut problems = Problems::default();
    let action = problems.check(
        "action",
        ModerationAction::parse(&body.action)
            .filter(|action| action.applies_to_replies())
            .ok_or_else(|| "must be approve, hide, delete or flag".to_owned()),
    );
    let decision = checked_decision(&admin, problems, action, body)?;
    authorize(
        policy::moderate_reply(Actor {
            user_id: admin.user_id,
            role: admin.role,
        }),
        "reply",
    )?;
    let moderated = moderation::moderate_reply(
        &state.db,
        state.settings.limits.admin_lock_ttl(),
        context,
        admin.user_id,
        id,
        decision,
    )
    .await?;
    let data = match moderated {
        ReplyModerated::Changed { after, .. } => {
            ReplyModerationResult::Reply(state.db.admin_reply(after.id).await?.into())
        }
        ReplyModerated::Deleted { before, removal } => {
            let (placeholder, reports_removed) = match removal {
                Removal::Placeholder { reports_removed } => (true, reports_removed as i64),
                Removal::Gone => (false, before.report_count),
            };
            ReplyModerationResult::Deleted(DeletedReply {
                id: before.id.to_string(),
                deleted: true,
                post_id: before.post_id.to_string(),
                status: before.status.as_str().to_owned(),
                placeholder,
                reports_removed,
            })
        }
    };
    Ok(AppJson(Envelope::new(data)))
}
