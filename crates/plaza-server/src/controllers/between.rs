//! Between members (DECISIONS.md "Between members: follows, blocks, mutes
//! and filters"): following members and the feed of what they post,
//! blocking and muting members, and keyword filters (the routes that list
//! members' content apply them through `controllers::reading`). The rules
//! are the domain's
//! (`plaza_domain::between`); which operation applies them, and why the
//! others do not, is [`crate::controllers::screening`].

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use plaza_domain::between::{
    self, Filter, FilterAction, Listed, MAX_PHRASE_CHARS, MemberCursor, MemberPage, NewFilter,
};
use plaza_domain::notifications::{self, Marked};
use plaza_domain::policy;
use plaza_domain::posts::{FeedCursor, Post};
use plaza_domain::time::{now_millis, rfc3339};
use plaza_domain::users::{self, User};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::{CurrentUser, OptionalUser, SessionPrincipal, actor_of, authorize, viewer_of};
use crate::controllers::params::{self, Problems, TextRule, check_text};
use crate::controllers::posts::PostView;
use crate::controllers::reading::{PostSights, reading_of};
use crate::controllers::users::{avatar_url, display_name};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::json::OptionalJson;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::settings::ServerSettings;
use crate::state::AppState;

/// Members or posts on a page when no `limit` is asked for.
const DEFAULT_PAGE: i64 = 50;

/// Routes anyone may read (followers and follows of a visible member).
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(follow, unfollow))
        .routes(crate::documented_routes!(followers))
        .routes(crate::documented_routes!(following))
        .routes(crate::documented_routes!(feed))
}

/// Routes that answer one member's own relations: their blocks, mutes and
/// filters, which only they see.
pub fn own_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(block, unblock))
        .routes(crate::documented_routes!(blocks))
        .routes(crate::documented_routes!(mute, unmute))
        .routes(crate::documented_routes!(mutes))
        .routes(crate::documented_routes!(list_filters, create_filter))
        .routes(crate::documented_routes!(delete_filter))
}

/// A member as these lists show them: their public face.
#[derive(Serialize, ToSchema)]
pub struct MemberView {
    #[schema(example = "42")]
    pub id: String,
    pub username: String,
    /// The name, else the username.
    pub display_name: String,
    /// The user's image, else `<base_url>/api/avatar-image?seed=<id>`.
    pub avatar_url: String,
}

impl MemberView {
    fn new(user: &User, server: &ServerSettings) -> Self {
        MemberView {
            id: user.id().to_string(),
            username: user.row.username.clone(),
            display_name: display_name(user),
            avatar_url: avatar_url(server, user),
        }
    }
}

/// A page of a member's followers or follows, newest first.
#[derive(Serialize, ToSchema)]
pub struct FollowList {
    pub users: Vec<MemberView>,
    /// Pass as `cursor` for the next page; null after the last.
    pub next_cursor: Option<String>,
    /// How many in all.
    pub total: i64,
}

/// A page of the caller's blocks, newest first.
#[derive(Serialize, ToSchema)]
pub struct BlockList {
    pub users: Vec<MemberView>,
    /// Pass as `cursor` for the next page; null after the last.
    pub next_cursor: Option<String>,
}

/// A member the caller mutes.
#[derive(Serialize, ToSchema)]
pub struct MutedMember {
    #[serde(flatten)]
    pub member: MemberView,
    /// When the mute ends; null: when the caller unmutes.
    pub expires_at: Option<String>,
}

/// A page of the caller's mutes in force, newest first.
#[derive(Serialize, ToSchema)]
pub struct MuteList {
    pub users: Vec<MutedMember>,
    /// Pass as `cursor` for the next page; null after the last.
    pub next_cursor: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1 to 100, default 50.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// `next_cursor` of the previous page (opaque).
    pub cursor: Option<String>,
}

/// A cursor as clients hold it: base64url of a time and an id.
fn encode_cursor(at: i64, id: i64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{at}.{id}"))
}

fn decode_cursor(raw: &str) -> Result<(i64, i64), String> {
    let malformed = || "must be a next_cursor of this list".to_owned();
    let text = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(raw)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(malformed)?;
    let (at, id) = text.split_once('.').ok_or_else(malformed)?;
    Ok((
        at.parse().map_err(|_| malformed())?,
        id.parse().map_err(|_| malformed())?,
    ))
}

/// The limit and cursor of a page, checked (422 naming each bad one).
fn page_of(query: &PageQuery) -> Result<(i64, Option<(i64, i64)>), AppError> {
    let mut problems = Problems::default();
    let limit = params::limit(&mut problems, query.limit.as_deref(), DEFAULT_PAGE);
    let after = query
        .cursor
        .as_deref()
        .and_then(|raw| problems.check("cursor", decode_cursor(raw)));
    problems.finish()?;
    Ok((limit, after))
}

fn member_cursor(after: Option<(i64, i64)>) -> Option<MemberCursor> {
    after.map(|(at, user_id)| MemberCursor { at, user_id })
}

fn next_of(page: &MemberPage) -> Option<String> {
    page.next
        .map(|cursor| encode_cursor(cursor.at, cursor.user_id))
}

fn members(page: &MemberPage, server: &ServerSettings) -> Vec<MemberView> {
    page.members
        .iter()
        .map(|listed: &Listed| MemberView::new(&listed.user, server))
        .collect()
}

/// The member `id` as the caller may act on them: 404 when they may not
/// see them, 422 when it is themself (`self_reason`).
async fn other_member(
    state: &AppState,
    caller: &SessionPrincipal,
    id: i64,
    self_reason: &str,
) -> Result<(), AppError> {
    if id == caller.user_id() {
        return Err(AppError::invalid("id", self_reason));
    }
    let target = state.db.user_by_id(id).await?;
    authorize(policy::view_user(Some(caller.actor()), &target), "user")
}

/// Follow a member: their posts join the caller's feed. Refused while a
/// block stands between them, either way (403 `BLOCKED`).
#[utoipa::path(
    put,
    path = "/api/users/{id}/follow",
    tag = "members",
    params(("id" = String, Path, description = "User id (digits)", example = "2")),
    responses(
        (status = 204, description = "The caller follows the member"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "A block stands between the caller and the member (`BLOCKED`)", body = GeneralError),
        (status = 404, description = "No such user, or not one the caller may see", body = GeneralError),
        (status = 422, description = "The caller themself (`id`)", body = GeneralError),
    )
)]
pub async fn follow(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    other_member(&state, &caller, id, "one does not follow oneself").await?;
    let actor = caller.actor();
    state
        .db
        .write(move |tx| {
            Box::pin(async move {
                let target = users::user_in(tx, id).await?;
                policy::view_user(Some(actor), &target).check("user", "not found")?;
                if between::follow(tx, actor.user_id, id).await? {
                    notifications::causes::followed(tx, actor.user_id, id).await?;
                }
                Ok(())
            })
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Stop following a member (also when the caller did not).
#[utoipa::path(
    delete,
    path = "/api/users/{id}/follow",
    tag = "members",
    params(("id" = String, Path, description = "User id (digits)", example = "2")),
    responses(
        (status = 204, description = "The caller does not follow the member"),
        (status = 401, description = "Not signed in", body = GeneralError),
    )
)]
pub async fn unfollow(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    let follower = caller.user_id();
    state
        .db
        .write(move |tx| Box::pin(between::unfollow(tx, follower, id)))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The member `id` whose lists the caller asks for: 404 when they may not
/// see them.
async fn listed_member(
    state: &AppState,
    caller: Option<&SessionPrincipal>,
    id: i64,
) -> Result<(), AppError> {
    let user = state.db.user_by_id(id).await?;
    authorize(policy::view_user(actor_of(caller), &user), "user")
}

/// The members who follow a member, newest first.
#[utoipa::path(
    get,
    path = "/api/users/{id}/followers",
    tag = "members",
    params(("id" = String, Path, description = "User id (digits)", example = "2"), PageQuery),
    responses(
        (status = 200, description = "A page of followers", body = FollowList),
        (status = 404, description = "No such user, or not one the caller may see", body = GeneralError),
        (status = 422, description = "A bad `limit` or `cursor`", body = GeneralError),
    )
)]
pub async fn followers(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    IdPath(id): IdPath,
    AppQuery(query): AppQuery<PageQuery>,
) -> Result<AppJson<FollowList>, AppError> {
    listed_member(&state, caller.as_ref(), id).await?;
    let (limit, after) = page_of(&query)?;
    let page = state.db.followers(id, member_cursor(after), limit).await?;
    let (total, _) = state.db.follow_counts(id).await?;
    Ok(AppJson(FollowList {
        users: members(&page, &state.settings.server),
        next_cursor: next_of(&page),
        total,
    }))
}

/// The members a member follows, newest first.
#[utoipa::path(
    get,
    path = "/api/users/{id}/following",
    tag = "members",
    params(("id" = String, Path, description = "User id (digits)", example = "2"), PageQuery),
    responses(
        (status = 200, description = "A page of followed members", body = FollowList),
        (status = 404, description = "No such user, or not one the caller may see", body = GeneralError),
        (status = 422, description = "A bad `limit` or `cursor`", body = GeneralError),
    )
)]
pub async fn following(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    IdPath(id): IdPath,
    AppQuery(query): AppQuery<PageQuery>,
) -> Result<AppJson<FollowList>, AppError> {
    listed_member(&state, caller.as_ref(), id).await?;
    let (limit, after) = page_of(&query)?;
    let page = state.db.following(id, member_cursor(after), limit).await?;
    let (_, total) = state.db.follow_counts(id).await?;
    Ok(AppJson(FollowList {
        users: members(&page, &state.settings.server),
        next_cursor: next_of(&page),
        total,
    }))
}

/// A page of the feed.
#[derive(Serialize, ToSchema)]
pub struct FeedList {
    pub posts: Vec<PostView>,
    /// Pass as `cursor` for the next page; null after the last.
    pub next_cursor: Option<String>,
}

/// The published posts of the members the caller follows, newest first,
/// without what the caller's blocks, mutes and `hide` filters hide (a page
/// may be shorter than `limit` where filters hid posts; the cursor walks
/// on).
#[utoipa::path(
    get,
    path = "/api/feed",
    tag = "members",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of the feed", body = FeedList),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 422, description = "A bad `limit` or `cursor`", body = GeneralError),
    )
)]
pub async fn feed(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppQuery(query): AppQuery<PageQuery>,
) -> Result<AppJson<FeedList>, AppError> {
    let (limit, after) = page_of(&query)?;
    let reading = reading_of(&state, Some(&caller)).await?;
    let now = now_millis();
    let screen = reading
        .as_ref()
        .and_then(|reading| reading.relations.screen(now));
    let page = state
        .db
        .feed(
            caller.user_id(),
            screen,
            after.map(|(created_at, id)| FeedCursor { created_at, id }),
            limit,
        )
        .await?;
    let sights = PostSights::of(reading.as_deref(), &page.posts, now);
    let shown: Vec<Post> = page
        .posts
        .iter()
        .filter(|post| !sights.hides(post.id))
        .cloned()
        .collect();
    let mut posts = PostView::page(&state.db, &shown, viewer_of(Some(&caller))).await?;
    for view in &mut posts {
        view.filtered = view.id.parse().ok().and_then(|id| sights.filtered(id));
    }
    Ok(AppJson(FeedList {
        posts,
        next_cursor: page
            .next
            .map(|cursor| encode_cursor(cursor.created_at, cursor.id)),
    }))
}

/// Block a member: the follows between them end both ways, neither may
/// reply to, react to or follow the other, mentions between them are
/// plain text, and the caller no longer sees the member's posts and
/// replies in lists. Only the caller sees the block.
#[utoipa::path(
    put,
    path = "/api/users/{id}/block",
    tag = "members",
    params(("id" = String, Path, description = "User id (digits)", example = "2")),
    responses(
        (status = 204, description = "The caller blocks the member"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No such user, or not one the caller may see", body = GeneralError),
        (status = 422, description = "The caller themself, or more blocks than a member may hold (`id`)", body = GeneralError),
    )
)]
pub async fn block(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    other_member(&state, &caller, id, "one does not block oneself").await?;
    let actor = caller.actor();
    state
        .db
        .write(move |tx| {
            Box::pin(async move {
                let target = users::user_in(tx, id).await?;
                policy::view_user(Some(actor), &target).check("user", "not found")?;
                between::block(tx, actor.user_id, id).await?;
                // What the blocked member caused leaves the unread count.
                notifications::mark_read(tx, actor.user_id, Marked::From(id)).await?;
                Ok(())
            })
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unblock a member (also when the caller did not block them).
#[utoipa::path(
    delete,
    path = "/api/users/{id}/block",
    tag = "members",
    params(("id" = String, Path, description = "User id (digits)", example = "2")),
    responses(
        (status = 204, description = "The caller does not block the member"),
        (status = 401, description = "Not signed in", body = GeneralError),
    )
)]
pub async fn unblock(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    let user_id = caller.user_id();
    state
        .db
        .write(move |tx| Box::pin(between::unblock(tx, user_id, id)))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The members the caller blocks, newest first.
#[utoipa::path(
    get,
    path = "/api/me/blocks",
    tag = "members",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of blocked members", body = BlockList),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 422, description = "A bad `limit` or `cursor`", body = GeneralError),
    )
)]
pub async fn blocks(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppQuery(query): AppQuery<PageQuery>,
) -> Result<AppJson<BlockList>, AppError> {
    let (limit, after) = page_of(&query)?;
    let page = state
        .db
        .blocks_of(caller.user_id(), member_cursor(after), limit)
        .await?;
    Ok(AppJson(BlockList {
        users: members(&page, &state.settings.server),
        next_cursor: next_of(&page),
    }))
}

/// How long a mute lasts.
#[derive(Deserialize, ToSchema, Default)]
pub struct MuteBody {
    /// When the mute ends (RFC 3339, in the future); absent or null: when
    /// the caller unmutes.
    #[schema(example = "2030-01-01T00:00:00Z")]
    pub expires_at: Option<String>,
}

/// An `expires_at` given in a body: an RFC 3339 time in the future.
fn future_time(raw: Option<&str>) -> Result<Option<i64>, String> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let at =
        time::OffsetDateTime::parse(raw.trim(), &time::format_description::well_known::Rfc3339)
            .map_err(|_| "must be an RFC 3339 time (2030-01-01T00:00:00Z)".to_owned())?;
    let millis = plaza_domain::time::to_millis(at);
    if millis <= now_millis() {
        return Err("must be in the future".to_owned());
    }
    Ok(Some(millis))
}

/// Mute a member until `expires_at` (or until unmuted): the caller no
/// longer sees their posts and replies in lists (threads show
/// placeholders) nor is notified of them; the member can still interact
/// and is not told. Muting again replaces the end.
#[utoipa::path(
    put,
    path = "/api/users/{id}/mute",
    tag = "members",
    params(("id" = String, Path, description = "User id (digits)", example = "2")),
    request_body(content = Option<MuteBody>, description = "Optional: without a body the mute lasts until unmuted"),
    responses(
        (status = 204, description = "The caller mutes the member"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No such user, or not one the caller may see", body = GeneralError),
        (status = 422, description = "The caller themself or more mutes than a member may hold (`id`), or an `expires_at` that is not a future RFC 3339 time", body = GeneralError),
    )
)]
pub async fn mute(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
    OptionalJson(body): OptionalJson<MuteBody>,
) -> Result<StatusCode, AppError> {
    let expires_at = future_time(body.unwrap_or_default().expires_at.as_deref())
        .map_err(|reason| AppError::invalid("expires_at", reason))?;
    other_member(&state, &caller, id, "one does not mute oneself").await?;
    let actor = caller.actor();
    state
        .db
        .write(move |tx| {
            Box::pin(async move {
                let target = users::user_in(tx, id).await?;
                policy::view_user(Some(actor), &target).check("user", "not found")?;
                between::mute(tx, actor.user_id, id, expires_at).await?;
                // What the muted member caused leaves the unread count.
                notifications::mark_read(tx, actor.user_id, Marked::From(id)).await?;
                Ok(())
            })
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unmute a member (also when the caller did not mute them).
#[utoipa::path(
    delete,
    path = "/api/users/{id}/mute",
    tag = "members",
    params(("id" = String, Path, description = "User id (digits)", example = "2")),
    responses(
        (status = 204, description = "The caller does not mute the member"),
        (status = 401, description = "Not signed in", body = GeneralError),
    )
)]
pub async fn unmute(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    let user_id = caller.user_id();
    state
        .db
        .write(move |tx| Box::pin(between::unmute(tx, user_id, id)))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The members the caller mutes now, newest first, each with when the
/// mute ends.
#[utoipa::path(
    get,
    path = "/api/me/mutes",
    tag = "members",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of muted members", body = MuteList),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 422, description = "A bad `limit` or `cursor`", body = GeneralError),
    )
)]
pub async fn mutes(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppQuery(query): AppQuery<PageQuery>,
) -> Result<AppJson<MuteList>, AppError> {
    let (limit, after) = page_of(&query)?;
    let page = state
        .db
        .mutes_of(caller.user_id(), member_cursor(after), limit)
        .await?;
    let server = &state.settings.server;
    Ok(AppJson(MuteList {
        users: page
            .members
            .iter()
            .map(|listed| MutedMember {
                member: MemberView::new(&listed.user, server),
                expires_at: listed.expires_at.map(rfc3339),
            })
            .collect(),
        next_cursor: next_of(&page),
    }))
}

/// A keyword filter.
#[derive(Serialize, ToSchema)]
pub struct FilterView {
    #[schema(example = "3")]
    pub id: String,
    pub phrase: String,
    /// Matches whole words only.
    pub whole_word: bool,
    /// `hide` or `warn`.
    #[schema(example = "warn")]
    pub action: &'static str,
    /// When it ends; null: when deleted.
    pub expires_at: Option<String>,
    pub created_at: String,
}

impl From<&Filter> for FilterView {
    fn from(filter: &Filter) -> Self {
        FilterView {
            id: filter.id.to_string(),
            phrase: filter.phrase.clone(),
            whole_word: filter.whole_word,
            action: filter.action.as_str(),
            expires_at: filter.expires_at.map(rfc3339),
            created_at: rfc3339(filter.created_at),
        }
    }
}

/// The caller's filters in force, oldest first.
#[derive(Serialize, ToSchema)]
pub struct FilterList {
    pub filters: Vec<FilterView>,
}

/// A new keyword filter.
#[derive(Deserialize, ToSchema)]
pub struct NewFilterBody {
    /// 1 to 100 characters, one line; compared case-insensitively after
    /// Unicode NFKC.
    pub phrase: String,
    /// Match whole words only (default true).
    pub whole_word: Option<bool>,
    /// `hide`: left out of lists (a placeholder in threads); `warn`: shown
    /// with `filtered` naming the phrase.
    #[schema(example = "warn")]
    pub action: String,
    /// When it ends (RFC 3339, in the future); absent or null: when deleted.
    #[schema(example = "2030-01-01T00:00:00Z")]
    pub expires_at: Option<String>,
}

/// The caller's keyword filters in force.
#[utoipa::path(
    get,
    path = "/api/me/filters",
    tag = "members",
    responses(
        (status = 200, description = "The caller's filters", body = FilterList),
        (status = 401, description = "Not signed in", body = GeneralError),
    )
)]
pub async fn list_filters(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
) -> Result<AppJson<FilterList>, AppError> {
    let filters = state.db.filters_of(caller.user_id()).await?;
    Ok(AppJson(FilterList {
        filters: filters.iter().map(FilterView::from).collect(),
    }))
}

/// Add a keyword filter: at most 100 per member.
#[utoipa::path(
    post,
    path = "/api/me/filters",
    tag = "members",
    request_body = NewFilterBody,
    responses(
        (status = 201, description = "Created", body = FilterView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 422, description = "A bad phrase, action or expires_at, or a 101st filter (`phrase`)", body = GeneralError),
    )
)]
pub async fn create_filter(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppJson(body): AppJson<NewFilterBody>,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    problems.check(
        "phrase",
        check_text(&body.phrase, MAX_PHRASE_CHARS, true, TextRule::Line),
    );
    let action = problems.check(
        "action",
        FilterAction::parse(&body.action).ok_or_else(|| "must be hide or warn".to_owned()),
    );
    let expires_at = problems
        .check("expires_at", future_time(body.expires_at.as_deref()))
        .flatten();
    problems.finish()?;
    let new = NewFilter {
        phrase: body.phrase.trim().to_owned(),
        whole_word: body.whole_word.unwrap_or(true),
        action: action.unwrap_or(FilterAction::Hide),
        expires_at,
    };
    let user_id = caller.user_id();
    let filter = state
        .db
        .write(move |tx| Box::pin(between::add_filter(tx, user_id, new)))
        .await?;
    Ok((StatusCode::CREATED, AppJson(FilterView::from(&filter))).into_response())
}

/// Delete one of the caller's keyword filters.
#[utoipa::path(
    delete,
    path = "/api/me/filters/{id}",
    tag = "members",
    params(("id" = String, Path, description = "Filter id (digits)", example = "3")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No filter of the caller's with this id", body = GeneralError),
    )
)]
pub async fn delete_filter(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    let user_id = caller.user_id();
    state
        .db
        .write(move |tx| Box::pin(between::remove_filter(tx, user_id, id)))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_it_was_written() {
        assert_eq!(
            decode_cursor(&encode_cursor(1_767_225_600_123, 42)),
            Ok((1_767_225_600_123, 42))
        );
        for bad in ["", "x", "MTIz", "bm90LmFuLmlk", "%%%"] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
    }
}
