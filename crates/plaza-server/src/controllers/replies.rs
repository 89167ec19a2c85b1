//! Replies: answering posts and one another, reading threads in thread
//! order or newest answers first, editing, deleting and reporting replies
//! (DECISIONS.md "Conversations (round 5)"). A reply the caller may not
//! see, or one on a post they may not see, is 404.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use plaza_domain::audit::{self, AuditAction};
use plaza_domain::between::{Hidden, Sight};
use plaza_domain::holds::{self, HoldCheck, Review, Write};
use plaza_domain::moderation::actions::{self, TargetType};
use plaza_domain::notifications::causes::{self, Decided};
use plaza_domain::policy;
use plaza_domain::posts::Viewer;
use plaza_domain::replies::{
    self, MAX_CONTENT_CHARS, NewReply, Reply, ReplyExtras, ThreadPage, ThreadQuery, ThreadSort,
};
use plaza_domain::reports::ReportTarget;
use plaza_domain::time::{now_millis, rfc3339};
use plaza_domain::word_filters::FilterScope;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::viewer_of;
use crate::auth::{CurrentUser, OptionalUser, RequestAudit, authorize};
use crate::controllers::params::{Problems, TextRule, check_text};
use crate::controllers::posts::{ReportBody, ReportView, file_report};
use crate::controllers::reactions::{EngagementView, MentionView, ReactionCounts};
use crate::controllers::reading::{reading_of, reply_sight};
use crate::controllers::users::{avatar_url_of, display_name_of};
use crate::http::answer_cache::{self, Audience};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::services::answer_cache::PublicThreadPage;
use crate::services::reader_relations::Reading;
use crate::settings::ServerSettings;
use crate::state::AppState;

/// Replies on a page when none is asked for.
const DEFAULT_PAGE: i64 = 50;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(list_replies, create_reply))
        .routes(crate::documented_routes!(
            get_reply,
            update_reply,
            delete_reply
        ))
        .routes(crate::documented_routes!(report_reply))
}

/// Who wrote a reply.
#[derive(Serialize, ToSchema)]
pub struct ReplyAuthorView {
    #[schema(example = "42")]
    pub id: String,
    pub username: String,
    /// The name, else the username.
    pub display_name: String,
    /// The user's image, else `<base_url>/api/avatar-image?seed=<id>`.
    pub avatar_url: String,
    /// Whether a bot wrote it (an account an administrator marked a bot).
    pub is_bot: bool,
}

/// A reply (DECISIONS.md "Conversations (round 5)").
#[derive(Serialize, ToSchema)]
pub struct ReplyView {
    #[schema(example = "31")]
    pub id: String,
    #[schema(example = "17")]
    pub post_id: String,
    /// The reply it answers; null for an answer to the post.
    #[schema(example = "30")]
    pub parent_id: Option<String>,
    /// Null for a deleted reply (a placeholder), and for one whose author
    /// the caller blocks or mutes.
    pub author: Option<ReplyAuthorView>,
    /// Empty for a deleted reply and for a placeholder.
    pub content: String,
    /// `published`, `pending`, `hidden`, `flagged` or `deleted`; in a
    /// thread also `blocked`, `muted` or `filtered`: a placeholder for a
    /// reply the caller's blocks, mutes or `hide` filters hide.
    #[schema(example = "published")]
    pub status: &'static str,
    /// 0 for an answer to the post.
    pub depth: i64,
    /// Visible replies below it, direct and indirect (placeholders not
    /// counted).
    pub reply_count: i64,
    /// `{emoji: count}`: how many members reacted with each emoji, the
    /// emojis in the order they were first added.
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub reactions: ReactionCounts,
    /// The caller's own reactions, in the order they added them; empty
    /// when anonymous.
    pub my_reactions: Vec<String>,
    /// The users it mentions, in order of first appearance.
    pub mentions: Vec<MentionView>,
    pub created_at: String,
    pub updated_at: String,
    /// Null until its author edits it.
    pub edited_at: Option<String>,
    /// In a thread, the phrases of the caller's `warn` filters it matches;
    /// absent when none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filtered: Option<Vec<String>>,
}

impl ReplyView {
    pub fn new(reply: &Reply, extras: &ReplyExtras, server: &ServerSettings) -> Self {
        let extras = EngagementView::from(extras);
        ReplyView {
            id: reply.id.to_string(),
            post_id: reply.post_id.to_string(),
            parent_id: reply.parent_id.map(|id| id.to_string()),
            author: reply.author.as_ref().map(|author| ReplyAuthorView {
                id: author.id.to_string(),
                display_name: display_name_of(author.name.as_deref(), &author.username),
                avatar_url: avatar_url_of(server, author.id, author.image.as_deref()),
                username: author.username.clone(),
                is_bot: author.is_bot,
            }),
            content: reply.content.clone(),
            status: reply.status.as_str(),
            depth: reply.depth,
            reply_count: reply.reply_count,
            reactions: extras.reactions,
            my_reactions: extras.my_reactions,
            mentions: extras.mentions,
            created_at: rfc3339(reply.created_at),
            updated_at: rfc3339(reply.updated_at),
            edited_at: reply.edited_at.map(rfc3339),
            filtered: None,
        }
    }
}

impl ReplyView {
    /// The placeholder a reply hidden from its reader leaves in a thread:
    /// its status says why (`blocked`, `muted`, `filtered`), its content
    /// and what it carries are empty, and a blocked or muted author is not
    /// shown; its place, depth and count of replies below stay.
    fn hide(&mut self, hidden: Hidden) {
        self.status = hidden.as_str();
        self.content = String::new();
        self.reactions = ReactionCounts::default();
        self.my_reactions = Vec::new();
        self.mentions = Vec::new();
        if hidden != Hidden::Filtered {
            self.author = None;
        }
    }
}

/// `replies` as `viewer` sees them, with their reactions and mentions
/// (asked for once for the whole list).
async fn views(
    state: &AppState,
    viewer: Viewer,
    replies: &[Reply],
) -> Result<Vec<ReplyView>, AppError> {
    let ids: Vec<i64> = replies.iter().map(|reply| reply.id).collect();
    let extras = state.db.reply_extras(viewer, &ids).await?;
    Ok(replies
        .iter()
        .zip(extras)
        .map(|(reply, extras)| ReplyView::new(reply, &extras, &state.settings.server))
        .collect())
}

/// One reply as `viewer` sees it.
async fn view(state: &AppState, viewer: Viewer, reply: &Reply) -> Result<ReplyView, AppError> {
    views(state, viewer, std::slice::from_ref(reply))
        .await?
        .pop()
        .ok_or_else(|| AppError::internal("a reply rendered as nothing"))
}

/// A page of a thread.
#[derive(Serialize, ToSchema)]
pub struct ReplyList {
    pub replies: Vec<ReplyView>,
    /// Give it as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// How many replies the whole walk returns to the caller,
    /// placeholders included.
    pub total: i64,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReplyListQuery {
    /// 1 to 100, default 50.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page (opaque).
    pub cursor: Option<String>,
    /// Only the subtree below this reply (a reply id of the post).
    #[param(example = "30")]
    pub parent_id: Option<String>,
    /// `oldest` (default): thread order, siblings oldest first; `newest`:
    /// the newest answers to the post first, each followed by its subtree
    /// in thread order.
    pub sort: Option<String>,
}

/// The cursor of the walk in `sort` continuing after `key`: base64url of
/// the order's letter and the key.
fn encode_cursor(sort: ThreadSort, key: &str) -> String {
    let letter = match sort {
        ThreadSort::Oldest => 'o',
        ThreadSort::Newest => 'n',
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{letter}{key}"))
}

/// The key a cursor of the walk in `sort` continues after.
fn decode_cursor(sort: ThreadSort, cursor: &str) -> Result<String, String> {
    let refused = || "must be a next_cursor of this list, in the same sort".to_owned();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| refused())?;
    let text = String::from_utf8(bytes).map_err(|_| refused())?;
    let key = match (sort, text.split_at_checked(1)) {
        (ThreadSort::Oldest, Some(("o", key))) | (ThreadSort::Newest, Some(("n", key))) => key,
        _ => return Err(refused()),
    };
    if sort.is_key(key) {
        Ok(key.to_owned())
    } else {
        Err(refused())
    }
}

/// A reply id given in a query or body: digits only.
fn reply_id(raw: &str) -> Result<i64, String> {
    raw.bytes()
        .all(|byte| byte.is_ascii_digit())
        .then(|| raw.parse::<i64>().ok())
        .flatten()
        .filter(|id| *id > 0)
        .ok_or_else(|| "must be a reply id (digits only)".to_owned())
}

/// The reply `parent_id` names, if it is a reply of `post_id` that
/// `viewer` sees; otherwise a 422 on `parent_id`.
async fn subtree_root(
    state: &AppState,
    viewer: Viewer,
    post_id: i64,
    parent_id: i64,
) -> Result<Reply, AppError> {
    match state.db.reply_by_id(parent_id).await {
        Ok(reply) if reply.post_id == post_id && reply.visible_to(viewer) => Ok(reply),
        Ok(_) | Err(plaza_domain::DomainError::NotFound(_)) => Err(AppError::invalid(
            "parent_id",
            "must name a reply of this post",
        )),
        Err(error) => Err(error.into()),
    }
}

/// List a post's replies that the caller sees, in thread order (each reply
/// followed by its replies, siblings oldest first) or with `sort=newest`
/// the newest answers to the post first. Walking the cursors returns every
/// reply visible when the walk began exactly once, also while replies are
/// added. Placeholders of deleted replies keep their place while visible
/// replies are below them. Anonymous pages are answered from a cache, and
/// a member's page is the same public page with their own reactions, held
/// replies and relations laid over it: either is at most a second behind
/// a write on another instance; `Cache-Control: no-cache` renders afresh.
#[utoipa::path(
    get,
    path = "/api/posts/{id}/replies",
    tag = "replies",
    params(("id" = String, Path, description = "Post id (digits)", example = "1"), ReplyListQuery, ("If-None-Match" = Option<String>, Header, description = "ETag(s) of an answer held: 304 when one is current")),
    responses(
        (status = 200, description = "A page of the thread", body = ReplyList, headers(("ETag" = String, description = "Strong tag of this answer, for If-None-Match"))),
        (status = 304, description = "Not modified: If-None-Match names the current answer's ETag", headers(("ETag" = String, description = "Strong tag of the current answer"))),
        (status = 404, description = "No such post, or not one the caller may see", body = GeneralError),
        (status = 422, description = "A limit, cursor, parent_id or sort is invalid", body = GeneralError),
    )
)]
pub async fn list_replies(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    headers: HeaderMap,
    IdPath(post_id): IdPath,
    AppQuery(query): AppQuery<ReplyListQuery>,
    RawQuery(raw_query): RawQuery,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    let limit = match query.limit.as_deref() {
        None => DEFAULT_PAGE,
        Some(raw) => problems
            .check(
                "limit",
                raw.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|limit| (1..=replies::MAX_PAGE).contains(limit))
                    .ok_or_else(|| {
                        format!("must be a whole number from 1 to {}", replies::MAX_PAGE)
                    }),
            )
            .unwrap_or(DEFAULT_PAGE),
    };
    let sort = match query.sort.as_deref() {
        None => ThreadSort::default(),
        Some(raw) => problems
            .check(
                "sort",
                ThreadSort::parse(raw).ok_or_else(|| "must be oldest or newest".to_owned()),
            )
            .unwrap_or_default(),
    };
    let parent_id = query
        .parent_id
        .as_deref()
        .and_then(|raw| problems.check("parent_id", reply_id(raw)));
    let after = query
        .cursor
        .as_deref()
        .and_then(|raw| problems.check("cursor", decode_cursor(sort, raw)));
    problems.finish()?;
    let request = ThreadRequest {
        post_id,
        parent_id,
        sort,
        limit,
        after,
    };
    let viewer = viewer_of(caller.as_ref());
    let reading = reading_of(&state, caller.as_ref()).await?;
    let route = format!("replies/{post_id}");
    if let Viewer::Member(user_id) = viewer
        && let Some(key) = answer_cache::shared_key(&headers, &route, raw_query.as_deref())
        && let Some(list) = member_page(&state, user_id, key, &request, reading.as_deref()).await?
    {
        return answer_cache::tagged_json(&list, &headers, Audience::Caller);
    }
    let key = answer_cache::key(caller.is_none(), &headers, &route, raw_query.as_deref());
    answer_cache::answer(
        &state.content_generation,
        &state.answer_caches.replies,
        key,
        (&headers, Audience::of(caller.is_none())),
        async {
            let (page, extras) = thread_of(&state, &request, viewer).await?;
            Ok(reply_list(&state, sort, &page, &extras, reading.as_deref()))
        },
    )
    .await
}

/// What a thread page asks for, checked.
struct ThreadRequest {
    post_id: i64,
    parent_id: Option<i64>,
    sort: ThreadSort,
    limit: i64,
    after: Option<String>,
}

/// The page `request` names as `viewer` sees it, and its replies' extras.
async fn thread_of(
    state: &AppState,
    request: &ThreadRequest,
    viewer: Viewer,
) -> Result<(ThreadPage, Vec<ReplyExtras>), AppError> {
    let post_id = request.post_id;
    state.db.post_for(post_id, viewer).await?;
    let below = match request.parent_id {
        Some(parent_id) => Some(subtree_root(state, viewer, post_id, parent_id).await?),
        None => None,
    };
    let page = state
        .db
        .thread_page(
            &ThreadQuery {
                post_id,
                below,
                sort: request.sort,
                limit: request.limit,
                after: request.after.clone(),
            },
            viewer,
        )
        .await?;
    let ids: Vec<i64> = page.replies.iter().map(|reply| reply.id).collect();
    let extras = state.db.reply_extras(viewer, &ids).await?;
    Ok((page, extras))
}

/// `page` (walked in `sort`) with `extras` as its reader sees it, their
/// relations (`reading`) hiding and marking replies.
fn reply_list(
    state: &AppState,
    sort: ThreadSort,
    page: &ThreadPage,
    extras: &[ReplyExtras],
    reading: Option<&Reading>,
) -> ReplyList {
    let now = now_millis();
    let replies = page
        .replies
        .iter()
        .zip(extras)
        .map(|(reply, extras)| {
            let mut view = ReplyView::new(reply, extras, &state.settings.server);
            match reply_sight(reading, reply.author_id(), &reply.content, now) {
                Sight::Hidden(hidden) => view.hide(hidden),
                Sight::Shown { warnings } if !warnings.is_empty() => view.filtered = Some(warnings),
                Sight::Shown { .. } => {}
            }
            view
        })
        .collect();
    ReplyList {
        replies,
        next_cursor: page.next.as_ref().map(|key| encode_cursor(sort, key)),
        total: page.total,
    }
}

/// A member's page from the public one anyone reads, kept at the content
/// generation under `key` (as fresh as the anonymous answers): that page
/// with the member's own reactions, read in one statement, and their
/// relations. `None` when their page is their own: they hold a reply of
/// the thread only they see, or the public page refuses the request (a
/// draft of theirs, a parent reply only they see), which their own
/// rendering answers.
async fn member_page(
    state: &AppState,
    user_id: i64,
    key: String,
    request: &ThreadRequest,
    reading: Option<&Reading>,
) -> Result<Option<ReplyList>, AppError> {
    let public = state
        .answer_caches
        .thread_pages
        .at_generation(&state.content_generation, Some(key), async {
            let (page, extras) = thread_of(state, request, Viewer::Anonymous).await?;
            Ok::<_, AppError>(Arc::new(PublicThreadPage { page, extras }))
        })
        .await;
    let public = match public {
        Ok(public) => public,
        Err(refused) if refused.status().is_client_error() => return Ok(None),
        Err(error) => return Err(error),
    };
    let ids: Vec<i64> = public.page.replies.iter().map(|reply| reply.id).collect();
    let mut overlay = state
        .db
        .member_overlay(request.post_id, user_id, &ids)
        .await?;
    if overlay.holds_unseen_reply {
        return Ok(None);
    }
    let extras: Vec<ReplyExtras> = public
        .page
        .replies
        .iter()
        .zip(&public.extras)
        .map(|(reply, extras)| ReplyExtras {
            my_reactions: overlay.my_reactions.remove(&reply.id).unwrap_or_default(),
            ..extras.clone()
        })
        .collect();
    Ok(Some(reply_list(
        state,
        request.sort,
        &public.page,
        &extras,
        reading,
    )))
}

/// A new reply.
#[derive(Deserialize, ToSchema)]
pub struct NewReplyBody {
    /// 1 to 10,000 characters; newlines and tabs are the only control
    /// characters allowed.
    pub content: String,
    /// The reply of the same post it answers (its id); absent or null
    /// answers the post.
    #[schema(value_type = Option<String>, example = "30")]
    pub parent_id: Option<serde_json::Value>,
}

fn check_content(problems: &mut Problems, content: &str) {
    problems.check(
        "content",
        check_text(content, MAX_CONTENT_CHARS, true, TextRule::NewlinesAndTabs),
    );
}

/// Answer a post, or with `parent_id` one of its replies, as the signed-in
/// user.
#[utoipa::path(
    post,
    path = "/api/posts/{id}/replies",
    tag = "replies",
    params(("id" = String, Path, description = "Post id (digits)", example = "1")),
    request_body = NewReplyBody,
    responses(
        (status = 201, description = "Created", body = ReplyView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No such post, or not one the caller may see", body = GeneralError),
        (status = 409, description = "The post is a draft, hidden or locked (`CONFLICT`)", body = GeneralError),
        (status = 422, description = "The content breaks a rule, or parent_id names no reply of this post", body = GeneralError),
    )
)]
pub async fn create_reply(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(post_id): IdPath,
    AppJson(body): AppJson<NewReplyBody>,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    check_content(&mut problems, &body.content);
    let parent_id = match &body.parent_id {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(raw)) => problems.check("parent_id", reply_id(raw)),
        Some(serde_json::Value::Number(number)) => problems.check(
            "parent_id",
            number
                .as_i64()
                .filter(|id| *id > 0)
                .ok_or_else(|| "must be a reply id (digits only)".to_owned()),
        ),
        Some(_) => {
            problems.add("parent_id", "must be a reply id (digits only)");
            None
        }
    };
    problems.finish()?;
    let screening = state.screening().await?;
    let verdict = screening
        .filters
        .check(FilterScope::Reply, &[("content", &body.content)]);
    verdict.refusal()?;
    let viewer = viewer_of(Some(&caller));
    let author = caller.actor();
    let mut new = NewReply {
        post_id,
        parent_id,
        author_id: caller.user_id(),
        content: body.content,
        review: Review::Publish,
    };
    let written = state
        .db
        .write(|tx| {
            Box::pin(async move {
                new.review = holds::review(
                    tx,
                    &HoldCheck {
                        author_id: author.user_id,
                        author_role: author.role,
                        word_filter: verdict.hold.as_deref(),
                        new_account_hold_count: screening.new_account_hold_count,
                        write: Write::New,
                    },
                    verdict.flag.as_deref(),
                )
                .await?;
                let written = replies::create(tx, new, viewer).await?;
                actions::record_filter_flag(
                    tx,
                    written.flagged.as_ref(),
                    TargetType::Reply,
                    written.reply.id,
                    author.user_id,
                )
                .await?;
                causes::replied(tx, &written.post, &written.reply, &written.mentioned).await?;
                Ok(written)
            })
        })
        .await?;
    // A reply written just now has no reactions yet, and its mentions are
    // those the write recorded.
    let extras = ReplyExtras {
        mentions: written.mentioned.mentions,
        ..ReplyExtras::default()
    };
    let view = ReplyView::new(&written.reply, &extras, &state.settings.server);
    Ok((StatusCode::CREATED, AppJson(view)).into_response())
}

/// Get one reply; 404 when the caller may not see it (or its post), and
/// for a deleted reply without visible replies below.
#[utoipa::path(
    get,
    path = "/api/replies/{id}",
    tag = "replies",
    params(("id" = String, Path, description = "Reply id (digits)", example = "1")),
    responses(
        (status = 200, description = "The reply", body = ReplyView),
        (status = 404, description = "No such reply, or not one the caller may see", body = GeneralError),
    )
)]
pub async fn get_reply(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    IdPath(id): IdPath,
) -> Result<AppJson<ReplyView>, AppError> {
    let viewer = viewer_of(caller.as_ref());
    let reply = state.db.reply_by_id(id).await?;
    let post = state.db.post_by_id(reply.post_id).await?;
    let actor = caller.as_ref().map(|caller| caller.actor());
    authorize(policy::view_reply(actor, &post, &reply), "reply")?;
    Ok(AppJson(view(&state, viewer, &reply).await?))
}

/// New content for a reply.
#[derive(Deserialize, ToSchema)]
pub struct ReplyUpdateBody {
    /// 1 to 10,000 characters; newlines and tabs are the only control
    /// characters allowed.
    pub content: String,
}

/// Change a reply's content: its author only. Sets `edited_at`.
#[utoipa::path(
    put,
    path = "/api/replies/{id}",
    tag = "replies",
    params(("id" = String, Path, description = "Reply id (digits)", example = "1")),
    request_body = ReplyUpdateBody,
    responses(
        (status = 200, description = "The changed reply", body = ReplyView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Not the reply's author", body = GeneralError),
        (status = 404, description = "No such reply, or not one the caller may see", body = GeneralError),
        (status = 422, description = "The content breaks a rule", body = GeneralError),
    )
)]
pub async fn update_reply(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
    AppJson(body): AppJson<ReplyUpdateBody>,
) -> Result<AppJson<ReplyView>, AppError> {
    let mut problems = Problems::default();
    check_content(&mut problems, &body.content);
    problems.finish()?;
    let screening = state.screening().await?;
    let verdict = screening
        .filters
        .check(FilterScope::Reply, &[("content", &body.content)]);
    verdict.refusal()?;
    let actor = caller.actor();
    let content = body.content;
    let written = state
        .db
        .write(|tx| {
            Box::pin(async move {
                let (post, reply) = replies::lock_thread_of(tx, id).await?;
                policy::edit_reply(actor, &post, &reply)
                    .check("reply", "only its author may change a reply")?;
                let review = holds::review(
                    tx,
                    &HoldCheck {
                        author_id: actor.user_id,
                        author_role: actor.role,
                        word_filter: verdict.hold.as_deref(),
                        new_account_hold_count: screening.new_account_hold_count,
                        write: Write::Edit,
                    },
                    verdict.flag.as_deref(),
                )
                .await?;
                let written = replies::edit(tx, post, id, content, review).await?;
                actions::record_filter_flag(
                    tx,
                    written.flagged.as_ref(),
                    TargetType::Reply,
                    id,
                    actor.user_id,
                )
                .await?;
                causes::reply_edited(tx, &written.post, &written.reply, &written.mentioned).await?;
                Ok(written)
            })
        })
        .await?;
    Ok(AppJson(
        view(&state, viewer_of(Some(&caller)), &written.reply).await?,
    ))
}

/// Delete a reply: its author, or a moderator. One with visible replies
/// below stays in the thread as a placeholder (`status: deleted`, no
/// content, no author); one without is gone.
#[utoipa::path(
    delete,
    path = "/api/replies/{id}",
    tag = "replies",
    params(("id" = String, Path, description = "Reply id (digits)", example = "1")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Neither the author nor a moderator", body = GeneralError),
        (status = 404, description = "No such reply, or not one the caller may see (a placeholder is deleted already)", body = GeneralError),
    )
)]
pub async fn delete_reply(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    let actor = caller.actor();
    state
        .db
        .write(|tx| {
            Box::pin(async move {
                let (post, reply) = replies::lock_thread_of(tx, id).await?;
                policy::delete_reply(actor, &post, &reply)
                    .check("reply", "only its author or a moderator may delete a reply")?;
                replies::remove(tx, &reply).await?;
                // A moderator deleting someone else's reply is audited, and
                // its author told.
                if let Some(author_id) = reply.author_id()
                    && author_id != actor.user_id
                {
                    causes::moderated(
                        tx,
                        Decided {
                            author_id,
                            moderator_id: actor.user_id,
                            post_id: Some(reply.post_id),
                            reply_id: None,
                            statement: "A moderator permanently removed your reply.".to_owned(),
                        },
                    )
                    .await?;
                }
                if reply.author_id() != Some(actor.user_id) {
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: "reply.delete",
                            target_type: "reply",
                            target_id: Some(id.to_string()),
                            changes: serde_json::json!({"before": {
                                "postId": reply.post_id.to_string(),
                                "authorId": reply.author_id().map(|id| id.to_string()),
                                "status": reply.status.as_str(),
                            }}),
                        },
                    )
                    .await?;
                }
                Ok(())
            })
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Report a reply to the moderators, once per user and reply; one's own
/// replies cannot be reported.
#[utoipa::path(
    post,
    path = "/api/replies/{id}/report",
    tag = "replies",
    params(("id" = String, Path, description = "Reply id (digits)", example = "1")),
    request_body = ReportBody,
    responses(
        (status = 201, description = "Reported", body = ReportView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "The caller's own reply", body = GeneralError),
        (status = 404, description = "No such reply, or not one the caller may see", body = GeneralError),
        (status = 409, description = "Already reported by the caller", body = GeneralError),
        (status = 422, description = "Missing or overlong reason, unknown category, or rule_ids naming no rule", body = GeneralError),
    )
)]
pub async fn report_reply(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
    AppJson(body): AppJson<ReportBody>,
) -> Result<Response, AppError> {
    let reply = state.db.reply_by_id(id).await?;
    let post = state.db.post_by_id(reply.post_id).await?;
    authorize(policy::report_reply(caller.actor(), &post, &reply), "reply")?;
    let report = file_report(&state, ReportTarget::Reply, id, caller.user_id(), body).await?;
    Ok((
        StatusCode::CREATED,
        AppJson(ReportView::new(&report, ReportTarget::Reply)),
    )
        .into_response())
}
