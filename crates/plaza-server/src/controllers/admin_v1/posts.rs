//! `GET /api/v1/admin/posts` and `POST /api/v1/admin/posts/{postId}/moderate`:
//! the moderation queue and the moderator's decisions on it.

use std::borrow::Cow;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use plaza_domain::policy::{self, Actor};
use plaza_domain::posts::{
    AdminPost, AdminReport, Moderated, ModerationAction, PostQuery, PostSort, PostStatus,
};
use plaza_domain::time::rfc3339;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::envelope::{Envelope, ListEnvelope};
use super::listing::{ListQuery, Listing};
use crate::auth::jwt::AdminPermission;
use crate::auth::{AdminToken, RequestAudit, authorize};
use crate::controllers::params::{self, Pagination, Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::services::moderation::{self, Decision, MAX_NOTES_CHARS, MAX_REASON_CHARS};
use crate::state::AppState;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AdminPostQuery {
    /// `all` (default), `published`, `draft`, `hidden`, `flagged` or `pending`.
    #[param(example = "flagged")]
    pub status: Option<String>,
    /// Only posts by this user (a user id).
    #[param(value_type = Option<String>, example = "42")]
    pub author: Option<String>,
    /// The same filter as `author`, under the name clients of other admin
    /// APIs use; both at once must agree.
    #[serde(rename = "authorId")]
    #[param(rename = "authorId", value_type = Option<String>, example = "42")]
    pub author_id: Option<String>,
    /// `true`: only posts with at least one report.
    #[param(value_type = Option<bool>)]
    pub reported: Option<String>,
}

/// A post's author.
#[derive(Serialize, ToSchema)]
pub struct PostAuthor<'a> {
    #[schema(example = "42")]
    pub id: String,
    pub username: Cow<'a, str>,
}

/// One report on a post or reply.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostReportItem<'a> {
    pub reason: Cow<'a, str>,
    /// `spam`, `harassment`, `illegal`, `rule_violation` or `other`.
    #[schema(value_type = String, example = "spam")]
    pub category: &'static str,
    /// The reporting user's id.
    #[schema(example = "7")]
    pub reported_by: String,
    pub reported_at: String,
}

/// A post as the admin surface shows it (SPEC.md "Post, admin item"); its
/// texts borrow from the page the database wrote.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminPostItem<'a> {
    #[schema(example = "12")]
    pub id: String,
    pub title: Cow<'a, str>,
    pub content: Cow<'a, str>,
    pub author: PostAuthor<'a>,
    /// `published`, `draft`, `hidden`, `flagged` or `pending` (held for a
    /// moderator).
    #[schema(value_type = String, example = "published")]
    pub status: &'static str,
    /// Why it entered the queue by itself, while it is pending or flagged
    /// by a word filter: `new_account` or `word_filter:<phrase>`; else null.
    #[schema(value_type = Option<String>, example = "word_filter:casino")]
    pub review_reason: Option<Cow<'a, str>>,
    pub report_count: i64,
    /// Oldest first.
    pub reports: Vec<PostReportItem<'a>>,
    /// Locked by a moderator: the thread takes no new replies.
    pub locked: bool,
    pub created_at: String,
    pub updated_at: String,
}

impl<'a> PostReportItem<'a> {
    pub fn new(report: AdminReport<'a>) -> Self {
        PostReportItem {
            reason: report.reason,
            category: report.category.as_str(),
            reported_by: report.reporter_id.to_string(),
            reported_at: rfc3339(report.created_at),
        }
    }
}

impl<'a> From<AdminPost<'a>> for AdminPostItem<'a> {
    fn from(post: AdminPost<'a>) -> Self {
        AdminPostItem {
            id: post.id.to_string(),
            status: post.status.as_str(),
            review_reason: post.review_reason,
            author: PostAuthor {
                id: post.author_id.to_string(),
                username: post.author_username,
            },
            report_count: post.report_count,
            reports: post.reports.into_iter().map(PostReportItem::new).collect(),
            locked: post.locked,
            created_at: rfc3339(post.created_at),
            updated_at: rfc3339(post.updated_at),
            title: post.title,
            content: post.content,
        }
    }
}

/// The moderation queue: every post, whatever its status, with its author
/// and reports; filtered by status, author and reports, ordered by a
/// whitelisted column.
#[utoipa::path(
    get,
    path = "/api/v1/admin/posts",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(AdminPostQuery, ListQuery<PostSort>),
    responses(
        (status = 200, description = "A page of posts", body = ListEnvelope<AdminPostItem<'static>>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "A filter, sort, limit or offset is invalid (`VALIDATION_ERROR` naming the field)", body = AdminV1Error),
    )
)]
pub async fn list_admin_posts(
    State(state): State<AppState>,
    admin: AdminToken,
    AppQuery(query): AppQuery<AdminPostQuery>,
    AppQuery(list): AppQuery<ListQuery<PostSort>>,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    let status = params::filter(
        &mut problems,
        "status",
        query.status.as_deref(),
        PostStatus::parse,
        "published, draft, hidden, flagged or pending",
    );
    let author = params::id(&mut problems, "author", query.author.as_deref());
    let author_id = params::id(&mut problems, "authorId", query.author_id.as_deref());
    if let (Some(one), Some(other)) = (author, author_id)
        && one != other
    {
        problems.add("authorId", "must equal author when both are given");
    }
    let reported = params::boolean(&mut problems, "reported", query.reported.as_deref());
    let Listing { page, sort, order } = list.check(&mut problems);
    problems.finish()?;
    let filter = PostQuery {
        author: author.or(author_id),
        status,
        reported_only: reported == Some(true),
        sort,
        order,
        ..PostQuery::default()
    };
    let found = state.db.admin_posts(&filter, admin.user_id, page).await?;
    let posts = found.posts()?;
    Ok(AppJson(ListEnvelope::new(
        posts.into_iter().map(AdminPostItem::from).collect(),
        Pagination::new(found.total, page),
    ))
    .into_response())
}

/// A moderation decision.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModerateBody {
    /// `approve`, `hide`, `delete` (permanent, with the post's reports and
    /// replies), `flag`, or for a post `lock` or `unlock` (its thread
    /// takes no new replies while locked).
    #[schema(example = "hide")]
    pub action: String,
    /// Why; recorded in the audit trail and shown to the author when notified.
    pub reason: Option<String>,
    /// The moderator's own notes; recorded in the audit trail only.
    pub notes: Option<String>,
    /// Send the author an alert (`GET /api/alerts`) about the decision.
    pub notify_author: Option<bool>,
    /// The site rules the content breaks (ids from `GET /api/rules`),
    /// recorded in the moderation action and shown to the member.
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub rule_ids: Vec<serde_json::Value>,
}

/// What a deleted post was.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletedPost {
    #[schema(example = "12")]
    pub id: String,
    /// Always true.
    pub deleted: bool,
    pub title: String,
    pub author: PostAuthor<'static>,
    /// The status it had.
    pub status: String,
    /// How many reports were removed with it.
    pub reports_removed: i64,
}

/// The post after a decision, or for `delete` what was deleted.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum ModerationResult {
    Post(AdminPostItem<'static>),
    Deleted(DeletedPost),
}

/// Approve, hide, flag or delete a post, or lock or unlock its thread.
/// The state machine of `plaza_domain::posts::moderation_step` decides
/// what each action does from each status; a move that makes no sense
/// (locking a locked post among them) is 409 `INVALID_TRANSITION`.
/// Approve, hide and flag resolve the post's open reports. `delete` needs
/// `admin:delete`. Takes the post's edit lock; audited as
/// `post.moderate.<action>` with the change, in the same transaction.
#[utoipa::path(
    post,
    path = "/api/v1/admin/posts/{postId}/moderate",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    params(("postId" = String, Path, description = "Post id (digits)", example = "12")),
    request_body = ModerateBody,
    responses(
        (status = 200, description = "The post after the decision, or what was deleted", body = Envelope<ModerationResult>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:write` (or, for `delete`, no `admin:delete`) (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No such post", body = AdminV1Error),
        (status = 409, description = "The action makes no sense from the post's status (`INVALID_TRANSITION`)", body = AdminV1Error),
        (status = 422, description = "Unknown action, or a reason or notes too long (`VALIDATION_ERROR`)", body = AdminV1Error),
        (status = 423, description = "Another admin is changing this post (`RESOURCE_LOCKED` with `lockedBy`, `lockedAt`)", body = AdminV1Error),
    )
)]
pub async fn moderate_post(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<ModerateBody>,
) -> Result<AppJson<Envelope<ModerationResult>>, AppError> {
    let mut problems = Problems::default();
    let action = problems.check(
        "action",
        ModerationAction::parse(&body.action)
            .ok_or_else(|| "must be approve, hide, delete, flag, lock or unlock".to_owned()),
    );
    let decision = checked_decision(&admin, problems, action, body)?;
    authorize(
        policy::moderate_post(Actor {
            user_id: admin.user_id,
            role: admin.role,
        }),
        "post",
    )?;
    let moderated = moderation::moderate_post(
        &state.db,
        state.settings.limits.admin_lock_ttl(),
        context,
        admin.user_id,
        id,
        decision,
    )
    .await?;
    let data = match moderated {
        Moderated::Changed { after, .. } => {
            ModerationResult::Post(state.db.admin_post(after.id).await?.into())
        }
        Moderated::Deleted {
            before,
            reports_removed,
        } => {
            let author = state.db.user_by_id(before.author_id).await?;
            ModerationResult::Deleted(DeletedPost {
                id: before.id.to_string(),
                deleted: true,
                status: before.status().as_str().to_owned(),
                author: PostAuthor {
                    id: before.author_id.to_string(),
                    username: author.row.username.into(),
                },
                title: before.title,
                reports_removed,
            })
        }
    };
    Ok(AppJson(Envelope::new(data)))
}

/// The decision of a moderation body whose action was parsed into
/// `action` (its problems recorded in `problems`): 422 naming every bad
/// field, and a deletion refused to a token without `admin:delete`.
pub fn checked_decision(
    admin: &AdminToken,
    mut problems: Problems,
    action: Option<ModerationAction>,
    body: ModerateBody,
) -> Result<Decision, AppError> {
    let reason = trimmed(body.reason);
    let notes = trimmed(body.notes);
    if let Some(reason) = &reason {
        problems.check(
            "reason",
            check_text(reason, MAX_REASON_CHARS, false, TextRule::Lines),
        );
    }
    if let Some(notes) = &notes {
        problems.check(
            "notes",
            check_text(notes, MAX_NOTES_CHARS, false, TextRule::Lines),
        );
    }
    let rule_ids = params::rule_ids(&mut problems, "ruleIds", &body.rule_ids);
    problems.finish()?;
    let Some(action) = action else {
        return Err(AppError::internal("an action passed validation unparsed"));
    };
    // Deleting is a delete whatever route it takes: it needs the token's
    // `admin:delete`, as `DELETE` does.
    if action == ModerationAction::Delete && !admin.claims.grants(AdminPermission::Delete) {
        return Err(AppError::InsufficientAdminPermissions {
            required: AdminPermission::Delete.as_str(),
        });
    }
    Ok(Decision {
        action,
        reason,
        notes,
        notify_author: body.notify_author.unwrap_or(false),
        rule_ids,
    })
}

/// A text field trimmed, absent when blank.
fn trimmed(value: Option<String>) -> Option<String> {
    value
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}
