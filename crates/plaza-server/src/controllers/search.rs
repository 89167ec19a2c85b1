//! Full-text search over posts, replies and users: relevance ranking,
//! as-you-type prefix matching of the last word, and highlighted snippets.
//! Results are only ever what the caller may see anyway.

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use plaza_domain::engagement::ItemKind;
use plaza_domain::listing::Page;
use plaza_domain::search::{MAX_QUERY_CHARS, PostHit, ReplyHit, SearchPage, SearchTerms, UserHit};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::viewer_of;
use crate::auth::{OptionalUser, SessionPrincipal, actor_of};
use crate::controllers::params::{self, Problems, TextRule, check_text};
use crate::controllers::reactions::{EngagementView, MentionView, PageEngagement, ReactionCounts};
use crate::controllers::reading::{PostSights, reading_of, reply_sight};
use crate::controllers::users::{avatar_url, display_name};
use crate::http::answer_cache;
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::AppQuery;
use crate::services::reader_relations::Reading;
use crate::settings::ServerSettings;
use crate::state::AppState;
use plaza_domain::between::Sight;
use plaza_domain::policy;
use plaza_domain::time::{now_millis, rfc3339};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(search))
        .routes(crate::documented_routes!(search_posts))
        .routes(crate::documented_routes!(search_users))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// The words to find, 1 to 200 characters; the last word also matches
    /// longer words unless followed by a space.
    pub q: Option<String>,
    /// `post` (default), `reply`, `user`, or `all` (posts, replies and
    /// users together, by relevance) (only on `/api/search`).
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub kind: Option<String>,
    /// 1 to 100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Results to skip, default 0; the newest 200 matches are ranked, so
    /// pages past them are empty.
    #[param(value_type = Option<u64>, minimum = 0)]
    pub offset: Option<String>,
}

/// A matching post. `title_highlight` and `snippet` are HTML-escaped with
/// matches in `<mark>`, safe to insert as HTML.
#[derive(Serialize, ToSchema)]
pub struct PostResult {
    #[serde(rename = "type")]
    #[schema(inline)]
    pub kind: PostResultType,
    #[schema(example = "17")]
    pub id: String,
    pub title: String,
    pub title_highlight: String,
    /// An excerpt of the content around the matches.
    pub snippet: String,
    #[schema(example = "42")]
    pub author_id: String,
    pub tags: Vec<String>,
    pub published: bool,
    /// Visible replies in its thread.
    pub reply_count: i64,
    /// Locked by a moderator: the thread takes no new replies.
    pub locked: bool,
    pub created_at: String,
    pub updated_at: String,
    /// Relevance; higher is better, comparable within one query only.
    pub score: f64,
    /// `{emoji: count}`, as on the post.
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub reactions: ReactionCounts,
    /// The caller's own reactions; `[]` anonymous.
    pub my_reactions: Vec<String>,
    /// The users the content mentions, in order of first appearance.
    pub mentions: Vec<MentionView>,
    /// The phrases of the caller's `warn` filters it matches; absent when
    /// none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filtered: Option<Vec<String>>,
}

impl PostResult {
    fn new(hit: &PostHit, engagement: EngagementView, filtered: Option<Vec<String>>) -> Self {
        PostResult {
            kind: PostResultType::Post,
            id: hit.post.id.to_string(),
            title: hit.post.title.clone(),
            title_highlight: hit.title_html.clone(),
            snippet: hit.snippet_html.clone(),
            author_id: hit.post.author_id.to_string(),
            tags: hit.post.tags.clone(),
            published: hit.post.published,
            reply_count: hit.post.reply_count,
            locked: hit.post.locked,
            created_at: rfc3339(hit.post.created_at),
            updated_at: rfc3339(hit.post.updated_at),
            score: hit.score,
            reactions: engagement.reactions,
            my_reactions: engagement.my_reactions,
            mentions: engagement.mentions,
            filtered,
        }
    }
}

/// A matching reply. `highlight` is an excerpt of the content around the
/// matches, HTML-escaped with matches in `<mark>`.
#[derive(Serialize, ToSchema)]
pub struct ReplyResult {
    #[serde(rename = "type")]
    #[schema(inline)]
    pub kind: ReplyResultType,
    #[schema(example = "31")]
    pub id: String,
    #[schema(example = "17")]
    pub post_id: String,
    pub content: String,
    pub highlight: String,
    pub created_at: String,
    /// The phrases of the caller's `warn` filters it matches; absent when
    /// none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filtered: Option<Vec<String>>,
}

impl ReplyResult {
    fn new(hit: &ReplyHit, filtered: Option<Vec<String>>) -> Self {
        ReplyResult {
            kind: ReplyResultType::Reply,
            id: hit.reply.id.to_string(),
            post_id: hit.reply.post_id.to_string(),
            content: hit.reply.content.clone(),
            highlight: hit.snippet_html.clone(),
            created_at: rfc3339(hit.reply.created_at),
            filtered,
        }
    }
}

/// A matching user, with public profile fields (never the email).
/// Highlights are HTML-escaped with matches in `<mark>`.
#[derive(Serialize, ToSchema)]
pub struct UserResult {
    #[serde(rename = "type")]
    #[schema(inline)]
    pub kind: UserResultType,
    #[schema(example = "42")]
    pub id: String,
    pub username: String,
    pub display_name: String,
    pub avatar_url: String,
    pub bio: String,
    pub username_highlight: String,
    pub name_highlight: Option<String>,
    /// An excerpt of the bio around the matches.
    pub snippet: String,
    pub created_at: String,
    pub score: f64,
}

impl UserResult {
    fn new(hit: &UserHit, server: &ServerSettings) -> Self {
        UserResult {
            kind: UserResultType::User,
            id: hit.user.id().to_string(),
            username: hit.user.row.username.clone(),
            display_name: display_name(&hit.user),
            avatar_url: avatar_url(server, &hit.user),
            bio: hit.user.row.bio.clone(),
            username_highlight: hit.username_html.clone(),
            name_highlight: hit.name_html.clone(),
            snippet: hit.bio_html.clone(),
            created_at: rfc3339(hit.user.row.created_at),
            score: hit.score,
        }
    }
}

/// `post`: the result is a post.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PostResultType {
    Post,
}

/// `reply`: the result is a reply.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReplyResultType {
    Reply,
}

/// `user`: the result is a user.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UserResultType {
    User,
}

/// One result; its `type` says which kind (the document's discriminator).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[schema(discriminator(property_name = "type", mapping(
    ("post" = "#/components/schemas/PostResult"),
    ("reply" = "#/components/schemas/ReplyResult"),
    ("user" = "#/components/schemas/UserResult"),
)))]
pub enum SearchResult {
    Post(PostResult),
    Reply(ReplyResult),
    User(UserResult),
}

/// Paging of search results: no total (counting every match would cost as
/// much as ranking it), only whether a next page exists.
#[derive(Serialize, ToSchema)]
pub struct SearchPagination {
    pub limit: i64,
    pub offset: i64,
    #[serde(rename = "hasMore")]
    pub has_more: bool,
}

/// Search results, most relevant first (an exact title or name match
/// before everything else).
#[derive(Serialize, ToSchema)]
pub struct SearchResponse {
    pub query: String,
    /// `post`, `reply`, `user` or `all`.
    #[serde(rename = "type")]
    pub kind: String,
    pub results: Vec<SearchResult>,
    pub pagination: SearchPagination,
}

/// What a search looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Posts,
    Replies,
    Users,
    /// Posts, replies and users, merged by relevance.
    All,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Posts => "post",
            Kind::Replies => "reply",
            Kind::Users => "user",
            Kind::All => "all",
        }
    }

    /// Whether its answers are kept in the answer cache: what they show
    /// changes only with the content generation (users' profiles do not
    /// move it).
    fn is_cached(self) -> bool {
        matches!(self, Kind::Posts | Kind::Replies)
    }
}

/// Checks the query and paging; `kind` is `None` when the route fixes it.
fn checked(params: &SearchParams, fixed: Option<Kind>) -> Result<(String, Kind, Page), AppError> {
    let mut problems = Problems::default();
    let q = match &params.q {
        None => {
            problems.add("q", "is required");
            String::new()
        }
        Some(q) => {
            problems.check("q", check_text(q, MAX_QUERY_CHARS, true, TextRule::Line));
            q.clone()
        }
    };
    let kind = match (fixed, params.kind.as_deref()) {
        (Some(kind), _) => kind,
        (None, None | Some("post" | "posts")) => Kind::Posts,
        (None, Some("reply" | "replies")) => Kind::Replies,
        (None, Some("user" | "users")) => Kind::Users,
        (None, Some("all")) => Kind::All,
        (None, Some(_)) => {
            problems.add("type", "must be post, reply, user or all");
            Kind::Posts
        }
    };
    let page = params::page(
        &mut problems,
        params.limit.as_deref(),
        params.offset.as_deref(),
    );
    problems.finish()?;
    Ok((q, kind, page))
}

/// One kind's results as [`SearchResult`]s, each with its score.
type Scored = Vec<(f64, SearchResult)>;

async fn found_posts(
    state: &AppState,
    caller: Option<&SessionPrincipal>,
    reading: Option<&Reading>,
    terms: &SearchTerms,
    page: Page,
) -> Result<(Scored, bool), AppError> {
    let viewer = viewer_of(caller);
    let now = now_millis();
    let mut found = state.db.search_posts(terms, viewer, page).await?;
    let sights = PostSights::of(reading, found.hits.iter().map(|hit| &hit.post), now);
    found.hits.retain(|hit| !sights.hides(hit.post.id));
    let ids: Vec<i64> = found.hits.iter().map(|hit| hit.post.id).collect();
    let engagement =
        PageEngagement::read(&state.db, ItemKind::Post, &ids, viewer.user_id()).await?;
    Ok(scored(found, |hit| {
        let result = PostResult::new(
            hit,
            engagement.of(hit.post.id),
            sights.filtered(hit.post.id),
        );
        (hit.score, SearchResult::Post(result))
    }))
}

async fn found_replies(
    state: &AppState,
    caller: Option<&SessionPrincipal>,
    reading: Option<&Reading>,
    terms: &SearchTerms,
    page: Page,
) -> Result<(Scored, bool), AppError> {
    let now = now_millis();
    let found = state
        .db
        .search_replies(terms, viewer_of(caller), page)
        .await?;
    let mut results = Vec::with_capacity(found.hits.len());
    for hit in &found.hits {
        let reply = &hit.reply;
        match reply_sight(reading, reply.author_id(), &reply.content, now) {
            Sight::Hidden(_) => {}
            Sight::Shown { warnings } => {
                let filtered = (!warnings.is_empty()).then_some(warnings);
                results.push((
                    hit.score,
                    SearchResult::Reply(ReplyResult::new(hit, filtered)),
                ));
            }
        }
    }
    Ok((results, found.has_more))
}

async fn found_users(
    state: &AppState,
    caller: Option<&SessionPrincipal>,
    terms: &SearchTerms,
    page: Page,
) -> Result<(Scored, bool), AppError> {
    // Admins find every user, as they list every user; others find active
    // users with public profiles.
    let everyone = policy::see_every_user(actor_of(caller));
    let found = state.db.search_users(terms, everyone, page).await?;
    let server = &state.settings.server;
    Ok(scored(found, |hit| {
        (hit.score, SearchResult::User(UserResult::new(hit, server)))
    }))
}

fn scored<T>(found: SearchPage<T>, result: impl Fn(&T) -> (f64, SearchResult)) -> (Scored, bool) {
    (found.hits.iter().map(result).collect(), found.has_more)
}

/// Merges the kinds' results, each already in its order, by taking the
/// best-scored head each time (ties: the earlier kind).
fn merged(kinds: Vec<Scored>) -> Vec<SearchResult> {
    let mut heads: Vec<std::iter::Peekable<std::vec::IntoIter<(f64, SearchResult)>>> = kinds
        .into_iter()
        .map(|kind| kind.into_iter().peekable())
        .collect();
    let mut results = Vec::new();
    loop {
        let best = heads
            .iter_mut()
            .enumerate()
            .filter_map(|(index, head)| head.peek().map(|(score, _)| (index, *score)))
            .fold(
                None,
                |best: Option<(usize, f64)>, (index, score)| match best {
                    Some((_, best_score)) if best_score >= score => best,
                    _ => Some((index, score)),
                },
            );
        match best.and_then(|(index, _)| heads[index].next()) {
            Some((_, result)) => results.push(result),
            None => return results,
        }
    }
}

async fn run(
    state: &AppState,
    caller: Option<&SessionPrincipal>,
    q: String,
    kind: Kind,
    page: Page,
) -> Result<SearchResponse, AppError> {
    let terms = SearchTerms::parse(&q);
    let reading = reading_of(state, caller).await?;
    let reading = reading.as_deref();
    let (results, has_more) = match kind {
        Kind::Posts => found_posts(state, caller, reading, &terms, page).await?,
        Kind::Replies => found_replies(state, caller, reading, &terms, page).await?,
        Kind::Users => found_users(state, caller, &terms, page).await?,
        Kind::All => {
            // Each kind's first `offset + limit` results, merged, then
            // the page cut from them.
            let leading = Page {
                limit: page.offset.saturating_add(page.limit),
                offset: 0,
            };
            let (posts, more_posts) = found_posts(state, caller, reading, &terms, leading).await?;
            let (replies, more_replies) =
                found_replies(state, caller, reading, &terms, leading).await?;
            let (users, more_users) = found_users(state, caller, &terms, leading).await?;
            let all = merged(vec![posts, replies, users]);
            let has_more =
                more_posts || more_replies || more_users || all.len() as i64 > leading.limit;
            let page_of_all = all
                .into_iter()
                .skip(usize::try_from(page.offset).unwrap_or(usize::MAX))
                .take(usize::try_from(page.limit).unwrap_or(usize::MAX))
                .map(|result| (0.0, result))
                .collect();
            (page_of_all, has_more)
        }
    };
    Ok(SearchResponse {
        query: q,
        kind: kind.name().to_owned(),
        results: results.into_iter().map(|(_, result)| result).collect(),
        pagination: SearchPagination {
            limit: page.limit,
            offset: page.offset,
            has_more,
        },
    })
}

/// Search posts (default), replies, users or all of them, by `type`.
/// Anonymous searches of posts or replies are cached while no post or
/// reply changes (see `Cache-Control: no-cache`).
#[utoipa::path(
    get,
    path = "/api/search",
    tag = "search",
    params(SearchParams, ("If-None-Match" = Option<String>, Header, description = "ETag(s) of an answer held: 304 when one is current")),
    responses(
        (status = 200, description = "Results, most relevant first", body = SearchResponse, headers(("ETag" = String, description = "Strong tag of this answer, for If-None-Match"))),
        (status = 304, description = "Not modified: If-None-Match names the current answer's ETag", headers(("ETag" = String, description = "Strong tag of the current answer"))),
        (status = 422, description = "Missing or invalid q, type, limit or offset", body = GeneralError),
    )
)]
pub async fn search(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    headers: HeaderMap,
    RawQuery(raw_query): RawQuery,
    AppQuery(params): AppQuery<SearchParams>,
) -> Result<Response, AppError> {
    let (q, kind, page) = checked(&params, None)?;
    let key = kind
        .is_cached()
        .then(|| answer_cache::key(caller.is_none(), &headers, "search", raw_query.as_deref()))
        .flatten();
    answer_cache::answer(
        &state.content_generation,
        &state.answer_caches.search,
        key,
        (&headers, answer_cache::Audience::of(caller.is_none())),
        run(&state, caller.as_ref(), q, kind, page),
    )
    .await
}

/// Search posts: title, tags and content, title weighted highest.
/// Anonymous answers are cached while no post changes (see
/// `Cache-Control: no-cache`).
#[utoipa::path(
    get,
    path = "/api/search/posts",
    tag = "search",
    params(SearchParams, ("If-None-Match" = Option<String>, Header, description = "ETag(s) of an answer held: 304 when one is current")),
    responses(
        (status = 200, description = "Matching posts, most relevant first", body = SearchResponse, headers(("ETag" = String, description = "Strong tag of this answer, for If-None-Match"))),
        (status = 304, description = "Not modified: If-None-Match names the current answer's ETag", headers(("ETag" = String, description = "Strong tag of the current answer"))),
        (status = 422, description = "Missing or invalid q, limit or offset", body = GeneralError),
    )
)]
pub async fn search_posts(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    headers: HeaderMap,
    RawQuery(raw_query): RawQuery,
    AppQuery(params): AppQuery<SearchParams>,
) -> Result<Response, AppError> {
    let (q, kind, page) = checked(&params, Some(Kind::Posts))?;
    let key = answer_cache::key(
        caller.is_none(),
        &headers,
        "search/posts",
        raw_query.as_deref(),
    );
    answer_cache::answer(
        &state.content_generation,
        &state.answer_caches.search,
        key,
        (&headers, answer_cache::Audience::of(caller.is_none())),
        run(&state, caller.as_ref(), q, kind, page),
    )
    .await
}

/// Search users: username and name weighted highest, then bio.
#[utoipa::path(
    get,
    path = "/api/search/users",
    tag = "search",
    params(SearchParams, ("If-None-Match" = Option<String>, Header, description = "ETag(s) of an answer held: 304 when one is current")),
    responses(
        (status = 200, description = "Matching users, most relevant first", body = SearchResponse, headers(("ETag" = String, description = "Strong tag of this answer, for If-None-Match"))),
        (status = 304, description = "Not modified: If-None-Match names the current answer's ETag", headers(("ETag" = String, description = "Strong tag of the current answer"))),
        (status = 422, description = "Missing or invalid q, limit or offset", body = GeneralError),
    )
)]
pub async fn search_users(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    headers: HeaderMap,
    AppQuery(params): AppQuery<SearchParams>,
) -> Result<Response, AppError> {
    let (q, kind, page) = checked(&params, Some(Kind::Users))?;
    let found = run(&state, caller.as_ref(), q, kind, page).await?;
    answer_cache::tagged_json(
        &found,
        &headers,
        answer_cache::Audience::of(caller.is_none()),
    )
}
