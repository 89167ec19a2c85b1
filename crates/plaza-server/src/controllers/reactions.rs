//! Reactions (DECISIONS.md "Conversations (round 5)"): a member adds an
//! emoji to a post or a reply (`PUT`), takes it back (`DELETE`), and anyone
//! who sees the item lists who reacted with it (`GET`), newest first. The
//! rules (who may react, which emojis, the cap per member, which threads
//! take reactions) are the domain's: `plaza_domain::reactions`. Also the
//! general schema's `reactions`, `my_reactions` and `mentions` that posts
//! and replies carry.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::StatusCode;
use base64::Engine;
use plaza_domain::engagement::{Engagement, ItemKind, Mention};
use plaza_domain::notifications::causes::{self, Reacted};
use plaza_domain::policy;
use plaza_domain::posts;
use plaza_domain::reactions::{self, ReactionEmoji, ReactorCursor, ReactorPage};
use plaza_domain::replies;
use plaza_domain::{Database, DomainError};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::viewer_of;
use crate::auth::{CurrentUser, OptionalUser, authorize};
use crate::controllers::params::{self, Problems};
use crate::controllers::users::{avatar_url, display_name};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppJson, AppQuery, IdTextPath};
use crate::settings::ServerSettings;
use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(
            react_to_post,
            unreact_to_post,
            post_reactors
        ))
        .routes(crate::documented_routes!(
            react_to_reply,
            unreact_to_reply,
            reply_reactors
        ))
}

/// An item's reaction counts, `{emoji: count}`, the emojis in the order
/// they were first added to the item (a JSON object keeps the order it is
/// written in, so an answer's bytes, and its `ETag`, stay the same).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReactionCounts(pub Vec<(String, i64)>);

impl Serialize for ReactionCounts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(emoji, count)| (emoji, count)))
    }
}

/// A user an item's content mentions.
#[derive(Serialize, ToSchema)]
pub struct MentionView {
    #[schema(example = "42")]
    pub id: String,
    pub username: String,
}

impl From<&Mention> for MentionView {
    fn from(mention: &Mention) -> Self {
        MentionView {
            id: mention.id.to_string(),
            username: mention.username.clone(),
        }
    }
}

/// What an item carries besides itself, as the general schema shows it:
/// `reactions`, `my_reactions` and `mentions`.
pub struct EngagementView {
    pub reactions: ReactionCounts,
    pub my_reactions: Vec<String>,
    pub mentions: Vec<MentionView>,
}

impl From<&Engagement> for EngagementView {
    fn from(engagement: &Engagement) -> Self {
        EngagementView {
            reactions: ReactionCounts(engagement.reactions.clone()),
            my_reactions: engagement.my_reactions.clone(),
            mentions: engagement.mentions.iter().map(MentionView::from).collect(),
        }
    }
}

/// The engagement of a page of items, read in one statement, each item
/// found by id (one nobody reacted to and that mentions nobody has none).
pub struct PageEngagement(HashMap<i64, Engagement>);

impl PageEngagement {
    pub async fn read(
        db: &Database,
        kind: ItemKind,
        ids: &[i64],
        caller: Option<i64>,
    ) -> Result<Self, DomainError> {
        Ok(PageEngagement(db.engagement(kind, ids, caller).await?))
    }

    pub fn of(&self, id: i64) -> EngagementView {
        self.0.get(&id).map_or_else(
            || EngagementView::from(&Engagement::default()),
            EngagementView::from,
        )
    }
}

/// Who reacted: a user's public face.
#[derive(Serialize, ToSchema)]
pub struct Reactor {
    #[schema(example = "42")]
    pub id: String,
    pub username: String,
    pub display_name: String,
    pub avatar_url: String,
}

/// A page of the members who reacted with one emoji, newest first.
#[derive(Serialize, ToSchema)]
pub struct ReactorList {
    pub users: Vec<Reactor>,
    /// Pass as `cursor` for the next page; null after the last.
    pub next_cursor: Option<String>,
}

impl ReactorList {
    fn new(page: &ReactorPage, server: &ServerSettings) -> Self {
        ReactorList {
            users: page
                .users
                .iter()
                .map(|user| Reactor {
                    id: user.id().to_string(),
                    username: user.row.username.clone(),
                    display_name: display_name(user),
                    avatar_url: avatar_url(server, user),
                })
                .collect(),
            next_cursor: page.next.map(encode_cursor),
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReactorQuery {
    /// 1 to 100, default 50.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// Members listed per page when no `limit` is asked for.
const DEFAULT_REACTORS: i64 = 50;

/// A cursor as clients hold it: opaque (base64url of the last member's
/// reaction time and id).
fn encode_cursor(cursor: ReactorCursor) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("{}.{}", cursor.reacted_at, cursor.user_id))
}

/// The page a who-reacted query asks for: its `limit` and the cursor to
/// start after, with their problems (told once the item is known visible).
fn reactor_page(query: &ReactorQuery) -> (Problems, i64, Option<ReactorCursor>) {
    let mut problems = Problems::default();
    let limit = params::limit(&mut problems, query.limit.as_deref(), DEFAULT_REACTORS);
    let after = query
        .cursor
        .as_deref()
        .and_then(|raw| problems.check("cursor", decode_cursor(raw)));
    (problems, limit, after)
}

fn decode_cursor(raw: &str) -> Result<ReactorCursor, String> {
    let malformed = || "must be a next_cursor of this list".to_owned();
    let text = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(raw)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(malformed)?;
    let (reacted_at, user_id) = text.split_once('.').ok_or_else(malformed)?;
    Ok(ReactorCursor {
        reacted_at: reacted_at.parse().map_err(|_| malformed())?,
        user_id: user_id.parse().map_err(|_| malformed())?,
    })
}

/// React to a post with an emoji: the caller's reaction is on it after,
/// counted once however often it is added.
#[utoipa::path(
    put,
    path = "/api/posts/{id}/reactions/{emoji}",
    tag = "posts",
    params(
        ("id" = String, Path, description = "Post id (digits)", example = "1"),
        ("emoji" = String, Path, description = "A catalog emoji (`unicode_char` of `GET /api/emojis`) or `:name:` of an approved custom emoji, URL-encoded", example = "👍"),
    ),
    responses(
        (status = 204, description = "The caller's reaction is on the post"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No such post, or not one the caller may see", body = GeneralError),
        (status = 409, description = "The post takes no reactions: a draft, hidden or locked", body = GeneralError),
        (status = 422, description = "An unknown emoji, or a 21st different emoji of the caller on the post (`emoji`)", body = GeneralError),
    )
)]
pub async fn react_to_post(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdTextPath(id, emoji): IdTextPath,
) -> Result<StatusCode, AppError> {
    let actor = caller.actor();
    state
        .db
        .write(move |tx| {
            Box::pin(async move {
                if reactions::react_to_post(tx, actor, id, &emoji).await? {
                    let post = posts::lock(tx, id).await?;
                    causes::reacted(tx, actor.user_id, Reacted::Post(&post), &emoji_text(&emoji))
                        .await?;
                }
                Ok(())
            })
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The emoji of a reaction as it is stored (a route's emoji that was
/// added parses).
fn emoji_text(raw: &str) -> String {
    ReactionEmoji::parse(raw).map_or_else(|| raw.to_owned(), |emoji| emoji.text())
}

/// Take the caller's reaction back from a post (also when there was none).
#[utoipa::path(
    delete,
    path = "/api/posts/{id}/reactions/{emoji}",
    tag = "posts",
    params(
        ("id" = String, Path, description = "Post id (digits)", example = "1"),
        ("emoji" = String, Path, description = "The emoji reacted with, URL-encoded", example = "👍"),
    ),
    responses(
        (status = 204, description = "The caller's reaction is not on the post"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No such post, or not one the caller may see", body = GeneralError),
        (status = 422, description = "An emoji neither known nor on the post (`emoji`)", body = GeneralError),
    )
)]
pub async fn unreact_to_post(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdTextPath(id, emoji): IdTextPath,
) -> Result<StatusCode, AppError> {
    let actor = caller.actor();
    state
        .db
        .write(move |tx| {
            Box::pin(async move { reactions::unreact_to_post(tx, actor, id, &emoji).await })
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Who reacted to a post with an emoji, newest first (ties: the higher
/// user id first).
#[utoipa::path(
    get,
    path = "/api/posts/{id}/reactions/{emoji}",
    tag = "posts",
    params(
        ("id" = String, Path, description = "Post id (digits)", example = "1"),
        ("emoji" = String, Path, description = "The emoji reacted with, URL-encoded", example = "👍"),
        ReactorQuery,
    ),
    responses(
        (status = 200, description = "A page of the members who reacted", body = ReactorList),
        (status = 404, description = "No such post, or not one the caller may see", body = GeneralError),
        (status = 422, description = "An emoji neither known nor on the post (`emoji`), or a bad `limit` or `cursor`", body = GeneralError),
    )
)]
pub async fn post_reactors(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    IdTextPath(id, emoji): IdTextPath,
    AppQuery(query): AppQuery<ReactorQuery>,
) -> Result<AppJson<ReactorList>, AppError> {
    let (problems, limit, after) = reactor_page(&query);
    state.db.post_for(id, viewer_of(caller.as_ref())).await?;
    problems.finish()?;
    let page = state
        .db
        .who_reacted(ItemKind::Post, id, &emoji, after, limit)
        .await?;
    Ok(AppJson(ReactorList::new(&page, &state.settings.server)))
}

/// React to a reply with an emoji: the caller's reaction is on it after,
/// counted once however often it is added.
#[utoipa::path(
    put,
    path = "/api/replies/{id}/reactions/{emoji}",
    tag = "replies",
    params(
        ("id" = String, Path, description = "Reply id (digits)", example = "1"),
        ("emoji" = String, Path, description = "A catalog emoji (`unicode_char` of `GET /api/emojis`) or `:name:` of an approved custom emoji, URL-encoded", example = "👍"),
    ),
    responses(
        (status = 204, description = "The caller's reaction is on the reply"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No such reply, or not one the caller may see", body = GeneralError),
        (status = 409, description = "The reply takes no reactions: its thread is locked, its post a draft or hidden, or the reply held", body = GeneralError),
        (status = 422, description = "An unknown emoji, or a 21st different emoji of the caller on the reply (`emoji`)", body = GeneralError),
    )
)]
pub async fn react_to_reply(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdTextPath(id, emoji): IdTextPath,
) -> Result<StatusCode, AppError> {
    let actor = caller.actor();
    state
        .db
        .write(move |tx| {
            Box::pin(async move {
                if reactions::react_to_reply(tx, actor, id, &emoji).await? {
                    let (post, reply) = replies::lock_thread_of(tx, id).await?;
                    let item = Reacted::Reply(&post, &reply);
                    causes::reacted(tx, actor.user_id, item, &emoji_text(&emoji)).await?;
                }
                Ok(())
            })
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Take the caller's reaction back from a reply (also when there was none).
#[utoipa::path(
    delete,
    path = "/api/replies/{id}/reactions/{emoji}",
    tag = "replies",
    params(
        ("id" = String, Path, description = "Reply id (digits)", example = "1"),
        ("emoji" = String, Path, description = "The emoji reacted with, URL-encoded", example = "👍"),
    ),
    responses(
        (status = 204, description = "The caller's reaction is not on the reply"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No such reply, or not one the caller may see", body = GeneralError),
        (status = 422, description = "An emoji neither known nor on the reply (`emoji`)", body = GeneralError),
    )
)]
pub async fn unreact_to_reply(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdTextPath(id, emoji): IdTextPath,
) -> Result<StatusCode, AppError> {
    let actor = caller.actor();
    state
        .db
        .write(move |tx| {
            Box::pin(async move { reactions::unreact_to_reply(tx, actor, id, &emoji).await })
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Who reacted to a reply with an emoji, newest first (ties: the higher
/// user id first).
#[utoipa::path(
    get,
    path = "/api/replies/{id}/reactions/{emoji}",
    tag = "replies",
    params(
        ("id" = String, Path, description = "Reply id (digits)", example = "1"),
        ("emoji" = String, Path, description = "The emoji reacted with, URL-encoded", example = "👍"),
        ReactorQuery,
    ),
    responses(
        (status = 200, description = "A page of the members who reacted", body = ReactorList),
        (status = 404, description = "No such reply, or not one the caller may see", body = GeneralError),
        (status = 422, description = "An emoji neither known nor on the reply (`emoji`), or a bad `limit` or `cursor`", body = GeneralError),
    )
)]
pub async fn reply_reactors(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    IdTextPath(id, emoji): IdTextPath,
    AppQuery(query): AppQuery<ReactorQuery>,
) -> Result<AppJson<ReactorList>, AppError> {
    let (problems, limit, after) = reactor_page(&query);
    let reply = state.db.reply_by_id(id).await?;
    let post = state.db.post_by_id(reply.post_id).await?;
    let actor = caller.as_ref().map(|caller| caller.actor());
    authorize(policy::view_reply(actor, &post, &reply), "reply")?;
    problems.finish()?;
    let page = state
        .db
        .who_reacted(ItemKind::Reply, id, &emoji, after, limit)
        .await?;
    Ok(AppJson(ReactorList::new(&page, &state.settings.server)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_it_was_written() {
        let cursor = ReactorCursor {
            reacted_at: 1_767_225_600_123,
            user_id: 42,
        };
        assert_eq!(decode_cursor(&encode_cursor(cursor)), Ok(cursor));
        for bad in ["", "x", "MTIz", "bm90LmFuLmlk", "%%%"] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
    }
}
