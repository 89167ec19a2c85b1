//! Posts: the general post schema, listing with filters, writing, and
//! reports. Drafts and hidden posts exist only for their author and for
//! moderators; everyone else gets 404 for them.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use plaza_domain::Database;
use plaza_domain::engagement::ItemKind;
use plaza_domain::posts::{
    self, ListScreen, MAX_CONTENT_CHARS, MAX_TAGS, MAX_TITLE_CHARS, NewPost, Post, PostChanges,
    PostQuery, PostSort, Viewer, normalize_tag,
};
use plaza_domain::reports::{
    self, MAX_REASON_CHARS, NewReport, Report, ReportCategory, ReportTarget,
};
use plaza_domain::rules;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::{
    CurrentUser, OptionalUser, RequestAudit, SessionPrincipal, authorize, viewer_of,
};
use crate::controllers::params::{self, Pagination, Problems, TextRule, check_text};
use crate::controllers::reactions::{EngagementView, MentionView, PageEngagement, ReactionCounts};
use crate::controllers::reading::{PostSights, reading_of};
use crate::http::answer_cache;
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::services::reader_relations::Reading;
use crate::state::AppState;
use plaza_domain::audit::{self, AuditAction};
use plaza_domain::holds::{self, HoldCheck, Review, Write};
use plaza_domain::moderation::actions::{self, TargetType};
use plaza_domain::notifications::causes::{self, Decided};
use plaza_domain::policy;
use plaza_domain::time::{now_millis, rfc3339};
use plaza_domain::word_filters::FilterScope;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(list_posts, create_post))
        .routes(crate::documented_routes!(
            get_post,
            update_post,
            delete_post
        ))
        .routes(crate::documented_routes!(report_post))
}

/// A post in the general schema (SPEC.md "Post, general schema").
#[derive(Serialize, ToSchema)]
pub struct PostView {
    #[schema(example = "17")]
    pub id: String,
    pub title: String,
    pub content: String,
    #[schema(example = "42")]
    pub author_id: String,
    pub created_at: String,
    pub updated_at: String,
    /// The author's switch; false for a draft.
    pub published: bool,
    pub tags: Vec<String>,
    /// `published`, `draft`, `hidden`, `flagged` or `pending` (held for a
    /// moderator: stored unpublished until approved); shown to the author
    /// and to moderators only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Visible (published or flagged) replies in its thread.
    pub reply_count: i64,
    /// Locked by a moderator: the thread takes no new replies.
    pub locked: bool,
    /// `{emoji: count}`: how many members reacted with each emoji, the
    /// emojis in the order they were first added.
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub reactions: ReactionCounts,
    /// The caller's own reactions, in the order they added them; `[]`
    /// anonymous.
    pub my_reactions: Vec<String>,
    /// The users the content mentions, in order of first appearance.
    pub mentions: Vec<MentionView>,
    /// The phrases of the caller's `warn` filters it matches; absent when
    /// none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filtered: Option<Vec<String>>,
}

impl PostView {
    pub fn new(post: &Post, viewer: Viewer, engagement: EngagementView) -> Self {
        let sees_status = match viewer {
            Viewer::Anonymous => false,
            Viewer::Member(id) => id == post.author_id,
            Viewer::Moderator(_) => true,
        };
        PostView {
            id: post.id.to_string(),
            title: post.title.clone(),
            content: post.content.clone(),
            author_id: post.author_id.to_string(),
            created_at: rfc3339(post.created_at),
            updated_at: rfc3339(post.updated_at),
            published: post.published,
            tags: post.tags.clone(),
            status: sees_status.then(|| post.status().as_str().to_owned()),
            reply_count: post.reply_count,
            locked: post.locked,
            reactions: engagement.reactions,
            my_reactions: engagement.my_reactions,
            mentions: engagement.mentions,
            filtered: None,
        }
    }

    /// `post` as `viewer` sees it, its engagement read (one statement).
    pub async fn read(db: &Database, post: &Post, viewer: Viewer) -> Result<Self, AppError> {
        let engagement =
            PageEngagement::read(db, ItemKind::Post, &[post.id], viewer.user_id()).await?;
        Ok(PostView::new(post, viewer, engagement.of(post.id)))
    }

    /// A page of posts as `viewer` sees them, their engagement read in one
    /// statement whatever the page's size.
    pub async fn page(
        db: &Database,
        posts: &[Post],
        viewer: Viewer,
    ) -> Result<Vec<Self>, AppError> {
        let ids: Vec<i64> = posts.iter().map(|post| post.id).collect();
        let engagement = PageEngagement::read(db, ItemKind::Post, &ids, viewer.user_id()).await?;
        Ok(posts
            .iter()
            .map(|post| PostView::new(post, viewer, engagement.of(post.id)))
            .collect())
    }
}

/// A page of posts.
#[derive(Serialize, ToSchema)]
pub struct PostList {
    pub posts: Vec<PostView>,
    pub pagination: Pagination,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PostListQuery {
    /// Only posts by this user (an id, digits only).
    #[param(example = "42")]
    pub author: Option<String>,
    /// `true` for published posts only, `false` for drafts only (yours, or
    /// everyone's for moderators).
    #[param(value_type = Option<bool>)]
    pub published: Option<String>,
    /// Only posts with this tag (case-insensitive).
    pub tag: Option<String>,
    /// `created_at` (default), `updated_at` or `title`.
    pub sort: Option<String>,
    /// `asc` or `desc` (default).
    pub order: Option<String>,
    /// 1 to 100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Items to skip, default 0.
    #[param(value_type = Option<u64>, minimum = 0)]
    pub offset: Option<String>,
}

/// List the posts the caller may see, newest first unless asked otherwise.
/// Anonymous answers are cached while no post changes (see
/// `Cache-Control: no-cache`).
#[utoipa::path(
    get,
    path = "/api/posts",
    tag = "posts",
    params(PostListQuery, ("If-None-Match" = Option<String>, Header, description = "ETag(s) of an answer held: 304 when one is current")),
    responses(
        (status = 200, description = "A page of posts and the total", body = PostList, headers(("ETag" = String, description = "Strong tag of this answer, for If-None-Match"))),
        (status = 304, description = "Not modified: If-None-Match names the current answer's ETag", headers(("ETag" = String, description = "Strong tag of the current answer"))),
        (status = 422, description = "A filter, sort, order, limit or offset is invalid", body = GeneralError),
    )
)]
pub async fn list_posts(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    headers: HeaderMap,
    RawQuery(raw_query): RawQuery,
    AppQuery(query): AppQuery<PostListQuery>,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    let author = params::id(&mut problems, "author", query.author.as_deref());
    let published = params::boolean(&mut problems, "published", query.published.as_deref());
    let tag = query.tag.as_deref().and_then(|raw| {
        problems.check(
            "tag",
            normalize_tag(raw).ok_or_else(|| tag_rule().to_owned()),
        )
    });
    let sort = query
        .sort
        .as_deref()
        .and_then(|raw| {
            problems.check(
                "sort",
                PostSort::parse(raw)
                    .ok_or_else(|| "must be created_at, updated_at or title".to_owned()),
            )
        })
        .unwrap_or_default();
    let order = params::order(&mut problems, query.order.as_deref());
    let page = params::page(
        &mut problems,
        query.limit.as_deref(),
        query.offset.as_deref(),
    );
    problems.finish()?;
    let viewer = viewer_of(caller.as_ref());
    let filter = PostQuery {
        author,
        published,
        tag,
        sort,
        order,
        ..PostQuery::default()
    };
    let key = answer_cache::key(caller.is_none(), &headers, "posts", raw_query.as_deref());
    let request = (&headers, answer_cache::Audience::of(caller.is_none()));
    let reading = reading_of(&state, caller.as_ref()).await?;
    let now = now_millis();
    let filter = match &reading {
        Some(reading) => screened(&state, reading, filter, viewer, now).await?,
        None => filter,
    };
    answer_cache::answer(
        &state.content_generation,
        &state.answer_caches.posts,
        key,
        request,
        async {
            let listed = state.db.list_posts(&filter, viewer, page).await?;
            let sights = PostSights::of(reading.as_deref(), &listed.posts, now);
            let shown: Vec<Post> = listed
                .posts
                .into_iter()
                .filter(|post| !sights.hides(post.id))
                .collect();
            let mut posts = PostView::page(&state.db, &shown, viewer).await?;
            for (view, post) in posts.iter_mut().zip(&shown) {
                view.filtered = sights.filtered(post.id);
            }
            Ok(PostList {
                posts,
                pagination: Pagination::new(listed.total, page),
            })
        },
    )
    .await
}

/// `filter` with the screen of a reader who hides authors: their posts
/// leave the page and the total (the count the total subtracts is kept
/// per content generation, see `services::reader_relations`).
async fn screened(
    state: &AppState,
    reading: &Reading,
    filter: PostQuery,
    viewer: Viewer,
    now: i64,
) -> Result<PostQuery, AppError> {
    let Some(screen) = reading.relations.screen(now) else {
        return Ok(filter);
    };
    let hidden = if filter.totals_from_counters(viewer) {
        reading
            .hidden_posts(&state.db, &state.content_generation, &filter, viewer, now)
            .await?
    } else {
        0
    };
    Ok(PostQuery {
        screen: Some(ListScreen { screen, hidden }),
        ..filter
    })
}

/// Get one post; drafts and hidden posts are 404 except to their author and
/// moderators.
#[utoipa::path(
    get,
    path = "/api/posts/{id}",
    tag = "posts",
    params(("id" = String, Path, description = "Post id (digits)", example = "1")),
    responses(
        (status = 200, description = "The post", body = PostView),
        (status = 404, description = "No such post, or not one the caller may see", body = GeneralError),
    )
)]
pub async fn get_post(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    IdPath(id): IdPath,
) -> Result<AppJson<PostView>, AppError> {
    let viewer = viewer_of(caller.as_ref());
    let post = state.db.post_for(id, viewer).await?;
    Ok(AppJson(PostView::read(&state.db, &post, viewer).await?))
}

/// A new post.
#[derive(Deserialize, ToSchema)]
pub struct NewPostBody {
    /// 1 to 200 characters, one line.
    pub title: String,
    /// 1 to 20000 characters.
    pub content: String,
    /// At most 10 tags of 1 to 30 letters, digits, `-` or `_`; stored lower-case.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Default true; false keeps it a draft.
    pub published: Option<bool>,
}

/// Changes to a post; absent fields stay as they are.
#[derive(Deserialize, ToSchema)]
pub struct PostUpdateBody {
    pub title: Option<String>,
    pub content: Option<String>,
    pub tags: Option<Vec<String>>,
    pub published: Option<bool>,
}

fn tag_rule() -> &'static str {
    "must be 1 to 30 letters, digits, - or _, starting with a letter or digit"
}

fn check_title(problems: &mut Problems, title: &str) {
    problems.check(
        "title",
        check_text(title, MAX_TITLE_CHARS, true, TextRule::Line),
    );
}

fn check_content(problems: &mut Problems, content: &str) {
    problems.check(
        "content",
        check_text(content, MAX_CONTENT_CHARS, true, TextRule::Lines),
    );
}

/// Normalizes tags, dropping repeats; each bad one is reported by position.
fn checked_tags(problems: &mut Problems, tags: &[String]) -> Vec<String> {
    if tags.len() > MAX_TAGS {
        problems.add("tags", format!("must be at most {MAX_TAGS} tags"));
        return Vec::new();
    }
    let mut normalized: Vec<String> = Vec::with_capacity(tags.len());
    for (index, raw) in tags.iter().enumerate() {
        match normalize_tag(raw) {
            Some(tag) if !normalized.contains(&tag) => normalized.push(tag),
            Some(_) => {}
            None => problems.add(format!("tags[{index}]"), tag_rule()),
        }
    }
    normalized
}

/// Write a post as the signed-in user.
#[utoipa::path(
    post,
    path = "/api/posts",
    tag = "posts",
    request_body = NewPostBody,
    responses(
        (status = 201, description = "Created", body = PostView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 422, description = "A field breaks a limit", body = GeneralError),
    )
)]
pub async fn create_post(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppJson(body): AppJson<NewPostBody>,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    check_title(&mut problems, &body.title);
    check_content(&mut problems, &body.content);
    let tags = checked_tags(&mut problems, &body.tags);
    problems.finish()?;
    let title = body.title.trim().to_owned();
    let screening = state.screening().await?;
    let verdict = screening.filters.check(
        FilterScope::Post,
        &[("title", &title), ("content", &body.content)],
    );
    verdict.refusal()?;
    let published = body.published.unwrap_or(true);
    let author = caller.actor();
    let mut new = NewPost {
        author_id: caller.user_id(),
        title,
        content: body.content,
        tags,
        published,
        review: Review::Publish,
    };
    let written = state
        .db
        .write(|tx| {
            Box::pin(async move {
                if published {
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
                }
                let written = posts::create(tx, new).await?;
                let post = &written.post;
                actions::record_filter_flag(
                    tx,
                    written.flagged.as_ref(),
                    TargetType::Post,
                    post.id,
                    post.author_id,
                )
                .await?;
                causes::post_written(tx, &written.post, &written.mentioned).await?;
                Ok(written)
            })
        })
        .await?;
    let view = PostView::read(&state.db, &written.post, viewer_of(Some(&caller))).await?;
    Ok((StatusCode::CREATED, AppJson(view)).into_response())
}

/// The post `id` if the caller may change it: 404 when they may not see
/// it, 403 when they may see but not change it.
async fn editable_post(
    state: &AppState,
    caller: &SessionPrincipal,
    id: i64,
) -> Result<(Post, Viewer), AppError> {
    let viewer = viewer_of(Some(caller));
    let post = state.db.post_for(id, viewer).await?;
    authorize(policy::edit_post(caller.actor(), &post), "post")?;
    Ok((post, viewer))
}

/// Change a post: its author or a moderator. A moderator's decision
/// (hidden, flagged) stays whatever the author changes.
#[utoipa::path(
    put,
    path = "/api/posts/{id}",
    tag = "posts",
    params(("id" = String, Path, description = "Post id (digits)", example = "1")),
    request_body = PostUpdateBody,
    responses(
        (status = 200, description = "The changed post", body = PostView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Neither the author nor a moderator", body = GeneralError),
        (status = 404, description = "No such post, or not one the caller may see", body = GeneralError),
        (status = 422, description = "A field breaks a limit, or nothing to change", body = GeneralError),
    )
)]
pub async fn update_post(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<PostUpdateBody>,
) -> Result<AppJson<PostView>, AppError> {
    let (before, viewer) = editable_post(&state, &caller, id).await?;
    let mut problems = Problems::default();
    if let Some(title) = &body.title {
        check_title(&mut problems, title);
    }
    if let Some(content) = &body.content {
        check_content(&mut problems, content);
    }
    let tags = body
        .tags
        .as_deref()
        .map(|tags| checked_tags(&mut problems, tags));
    if body.title.is_none() && body.content.is_none() && tags.is_none() && body.published.is_none()
    {
        problems.add(
            "body",
            "must change at least one of title, content, tags, published",
        );
    }
    problems.finish()?;
    let mut changes = PostChanges {
        title: body.title.map(|title| title.trim().to_owned()),
        content: body.content,
        tags,
        published: body.published,
        review: Review::Publish,
    };
    let screening = state.screening().await?;
    let verdict = screening.filters.check(
        FilterScope::Post,
        &[
            ("title", changes.title.as_deref().unwrap_or(&before.title)),
            (
                "content",
                changes.content.as_deref().unwrap_or(&before.content),
            ),
        ],
    );
    verdict.refusal()?;
    let by_someone_else = caller.user_id() != before.author_id;
    let editor = caller.actor();
    let written = state
        .db
        .write(|tx| {
            Box::pin(async move {
                let current = posts::lock(tx, id).await?;
                let was_out = current.published || current.held;
                if changes.published.unwrap_or(was_out) {
                    let write = if was_out {
                        Write::Edit
                    } else {
                        Write::PublishesDraft {
                            created_at: current.created_at,
                        }
                    };
                    changes.review = holds::review(
                        tx,
                        &HoldCheck {
                            author_id: current.author_id,
                            author_role: editor.role,
                            word_filter: verdict.hold.as_deref(),
                            new_account_hold_count: screening.new_account_hold_count,
                            write,
                        },
                        verdict.flag.as_deref(),
                    )
                    .await?;
                }
                let written = posts::update(tx, id, changes).await?;
                let post = &written.post;
                actions::record_filter_flag(
                    tx,
                    written.flagged.as_ref(),
                    TargetType::Post,
                    post.id,
                    post.author_id,
                )
                .await?;
                causes::post_written(tx, post, &written.mentioned).await?;
                // A moderator changing someone else's post is audited.
                let changed = posts::audited_changes(&before, post);
                if by_someone_else && !changed.is_empty() {
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: "post.update",
                            target_type: "post",
                            target_id: Some(id.to_string()),
                            changes: changed.into(),
                        },
                    )
                    .await?;
                }
                Ok(written)
            })
        })
        .await?;
    Ok(AppJson(
        PostView::read(&state.db, &written.post, viewer).await?,
    ))
}

/// Delete a post for good: its author or a moderator.
#[utoipa::path(
    delete,
    path = "/api/posts/{id}",
    tag = "posts",
    params(("id" = String, Path, description = "Post id (digits)", example = "1")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Neither the author nor a moderator", body = GeneralError),
        (status = 404, description = "No such post, or not one the caller may see", body = GeneralError),
    )
)]
pub async fn delete_post(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    let (post, _) = editable_post(&state, &caller, id).await?;
    let by_someone_else = caller.user_id() != post.author_id;
    let moderator_id = caller.user_id();
    state
        .db
        .write(|tx| {
            Box::pin(async move {
                posts::delete(tx, id).await?;
                // A moderator deleting someone else's post is audited, and
                // its author told.
                if by_someone_else {
                    causes::moderated(
                        tx,
                        Decided {
                            author_id: post.author_id,
                            moderator_id,
                            post_id: None,
                            reply_id: None,
                            statement: format!(
                                "A moderator permanently removed your post \u{201c}{}\u{201d}.",
                                post.title
                            ),
                        },
                    )
                    .await?;
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: "post.delete",
                            target_type: "post",
                            target_id: Some(id.to_string()),
                            changes: serde_json::json!({"before": {
                                "authorId": post.author_id.to_string(),
                                "title": post.title,
                                "status": post.status().as_str(),
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

/// Why a post or reply should be looked at.
#[derive(Deserialize, ToSchema)]
pub struct ReportBody {
    /// 1 to 1000 characters.
    pub reason: String,
    /// `spam`, `harassment`, `illegal`, `rule_violation` or `other`
    /// (default).
    #[schema(example = "spam")]
    pub category: Option<String>,
    /// The site rules broken (ids from `GET /api/rules`; an id that is
    /// not a rule is 422).
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub rule_ids: Vec<serde_json::Value>,
}

/// The reason, category and cited rules of a report, checked as fields:
/// 422 naming each bad one (whether each rule exists is asked in the
/// report's unit of work).
fn report_terms(body: ReportBody) -> Result<(String, ReportCategory, Vec<i64>), AppError> {
    let mut problems = Problems::default();
    problems.check(
        "reason",
        check_text(&body.reason, MAX_REASON_CHARS, true, TextRule::Lines),
    );
    let category = match body.category.as_deref() {
        None => ReportCategory::default(),
        Some(raw) => problems
            .check(
                "category",
                ReportCategory::parse(raw).ok_or_else(|| {
                    "must be spam, harassment, illegal, rule_violation or other".to_owned()
                }),
            )
            .unwrap_or_default(),
    };
    let rule_ids = params::rule_ids(&mut problems, "rule_ids", &body.rule_ids);
    problems.finish()?;
    Ok((body.reason.trim().to_owned(), category, rule_ids))
}

/// Files `reporter_id`'s report on `target` `target_id` from `body`: the
/// fields checked (422), the cited rules checked in the unit of work that
/// files it (422 `rule_ids`), a second report of the same by the same
/// reporter 409. Whether the reporter may report it is the caller's check.
pub async fn file_report(
    state: &AppState,
    target: ReportTarget,
    target_id: i64,
    reporter_id: i64,
    body: ReportBody,
) -> Result<Report, AppError> {
    let (reason, category, rule_ids) = report_terms(body)?;
    Ok(state
        .db
        .write(move |tx| {
            Box::pin(async move {
                let rule_ids = rules::check_cited(tx, &rule_ids).await?;
                reports::file(
                    tx,
                    NewReport {
                        target,
                        target_id,
                        reporter_id,
                        reason,
                        category,
                        rule_ids,
                    },
                )
                .await
            })
        })
        .await?)
}

/// A filed report.
#[derive(Serialize, ToSchema)]
pub struct ReportView {
    #[schema(example = "5")]
    pub id: String,
    /// The post reported (reports on posts).
    #[schema(example = "17")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post_id: Option<String>,
    /// The reply reported (reports on replies).
    #[schema(example = "31")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_id: Option<String>,
    /// The member reported (reports on members).
    #[schema(example = "7")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    pub reason: String,
    /// `spam`, `harassment`, `illegal`, `rule_violation` or `other`.
    #[schema(example = "other")]
    pub category: &'static str,
    /// The site rules cited.
    pub rule_ids: Vec<String>,
    pub created_at: String,
}

impl ReportView {
    pub fn new(report: &Report, target: ReportTarget) -> Self {
        let target_id = Some(report.target_id.to_string());
        let (post_id, reply_id, user_id) = match target {
            ReportTarget::Post => (target_id, None, None),
            ReportTarget::Reply => (None, target_id, None),
            ReportTarget::User => (None, None, target_id),
        };
        ReportView {
            id: report.id.to_string(),
            post_id,
            reply_id,
            user_id,
            reason: report.reason.clone(),
            category: report.category.as_str(),
            rule_ids: rules::read_ids(&report.stored_rule_ids)
                .iter()
                .map(i64::to_string)
                .collect(),
            created_at: rfc3339(report.created_at),
        }
    }
}

/// Report a post to the moderators, once per user and post; one's own
/// posts cannot be reported.
#[utoipa::path(
    post,
    path = "/api/posts/{id}/report",
    tag = "posts",
    params(("id" = String, Path, description = "Post id (digits)", example = "1")),
    request_body = ReportBody,
    responses(
        (status = 201, description = "Reported", body = ReportView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "The caller's own post", body = GeneralError),
        (status = 404, description = "No such post, or not one the caller may see", body = GeneralError),
        (status = 409, description = "Already reported by the caller", body = GeneralError),
        (status = 422, description = "Missing or overlong reason, unknown category, or rule_ids naming no rule of the site", body = GeneralError),
    )
)]
pub async fn report_post(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
    AppJson(body): AppJson<ReportBody>,
) -> Result<Response, AppError> {
    let post = state.db.post_for(id, viewer_of(Some(&caller))).await?;
    authorize(policy::report_post(caller.actor(), &post), "post")?;
    let report = file_report(&state, ReportTarget::Post, id, caller.user_id(), body).await?;
    Ok((
        StatusCode::CREATED,
        AppJson(ReportView::new(&report, ReportTarget::Post)),
    )
        .into_response())
}
