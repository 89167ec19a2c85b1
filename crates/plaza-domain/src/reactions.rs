//! Reactions (DECISIONS.md "Conversations (round 5)"): a member adds an
//! emoji to a post or a reply, once per emoji, at most
//! [`MAX_REACTIONS_PER_MEMBER`] different ones per item, and takes it back;
//! anyone who sees the item lists who reacted with an emoji, newest first.
//!
//! The emoji is one of the Unicode catalog, spelled as `GET /api/emojis`
//! spells it, or `:name:` of an approved custom emoji. A reaction is a row
//! of the item kind's reaction table; the per-emoji counts beside it are
//! kept by triggers in the same transaction (migration 0039), so they stay
//! exact under concurrent writes and cascades, and a page of items reads
//! them in one statement ([`crate::engagement`]).

use sqlx::AnyConnection;

use crate::emojis::is_custom_name;
use crate::engagement::ItemKind;
use crate::policy::{self, Actor};
use crate::posts::{self, Post};
use crate::replies::{self, Reply};
use crate::time::now_millis;
use crate::users::{USER_COLUMNS, User, UserRow};
use crate::{Database, DomainError, Tx};

/// Most different emojis one member reacts with on one item.
pub const MAX_REACTIONS_PER_MEMBER: i64 = 20;

/// An emoji as a reaction names it: the text a request gave, once it is
/// of the right shape (whether a custom one is approved needs the
/// database).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReactionEmoji {
    /// One emoji of the Unicode catalog.
    Catalog(String),
    /// `:name:` of a custom emoji; holds the name without the colons.
    Custom(String),
}

impl ReactionEmoji {
    /// `raw` as a catalog emoji or a `:name:`, or `None` for anything else.
    pub fn parse(raw: &str) -> Option<ReactionEmoji> {
        if plaza_emoji::is_catalog_emoji(raw) {
            return Some(ReactionEmoji::Catalog(raw.to_owned()));
        }
        raw.strip_prefix(':')
            .and_then(|rest| rest.strip_suffix(':'))
            .filter(|name| is_custom_name(name))
            .map(|name| ReactionEmoji::Custom(name.to_owned()))
    }

    /// The emoji as it is stored and shown: the character, or `:name:`.
    pub fn text(&self) -> String {
        match self {
            ReactionEmoji::Catalog(character) => character.clone(),
            ReactionEmoji::Custom(name) => format!(":{name}:"),
        }
    }
}

/// The refusal of an emoji that is neither in the catalog nor an approved
/// custom one.
fn unknown_emoji() -> DomainError {
    DomainError::Invalid {
        field: "emoji",
        reason: "must be one emoji of the catalog (its unicode_char) or :name: of an \
                 approved custom emoji"
            .to_owned(),
    }
}

/// `raw` as an emoji a new reaction may use: a catalog emoji, or a custom
/// one approved now.
async fn emoji_for_new_reaction(
    connection: &mut AnyConnection,
    raw: &str,
) -> Result<String, DomainError> {
    let emoji = ReactionEmoji::parse(raw).ok_or_else(unknown_emoji)?;
    if let ReactionEmoji::Custom(name) = &emoji {
        let approved: Option<(i64,)> =
            sqlx::query_as("SELECT id FROM emojis WHERE is_custom AND is_approved AND name = $1")
                .bind(name)
                .fetch_optional(&mut *connection)
                .await?;
        if approved.is_none() {
            return Err(unknown_emoji());
        }
    }
    Ok(emoji.text())
}

/// Whether `raw` names a reaction that may be taken back or listed on the
/// item `id` of `kind`: an emoji a new reaction may use, or one the item
/// holds reactions of (a custom emoji withdrawn since).
async fn known_emoji(
    connection: &mut AnyConnection,
    kind: ItemKind,
    id: i64,
    raw: &str,
) -> Result<(), DomainError> {
    match emoji_for_new_reaction(&mut *connection, raw).await {
        Err(DomainError::Invalid { .. }) if ReactionEmoji::parse(raw).is_some() => {
            let held: Option<(i64,)> = sqlx::query_as(&format!(
                "SELECT total FROM {} WHERE {} = $1 AND emoji = $2",
                kind.counts_table(),
                kind.item_column()
            ))
            .bind(id)
            .bind(raw)
            .fetch_optional(&mut *connection)
            .await?;
            held.map(|_| ()).ok_or_else(unknown_emoji)
        }
        checked => checked.map(|_| ()),
    }
}

/// A thread takes new reactions, on its post and on its replies, when it
/// takes new replies: not on a draft, a hidden post or a locked thread,
/// even from those who see them.
fn open_to_reactions(post: &Post) -> Result<(), DomainError> {
    match replies::refusal_of_answers(post) {
        None => Ok(()),
        Some(reason) => Err(DomainError::Conflict(format!(
            "{reason}: it takes no new reactions"
        ))),
    }
}

/// A reply takes new reactions while it is visible to everyone: a held
/// one (pending, hidden) takes none, even from those who see it.
fn reply_open_to_reactions(reply: &Reply) -> Result<(), DomainError> {
    if reply.status.is_visible() {
        Ok(())
    } else {
        Err(DomainError::Conflict(format!(
            "the reply is {}: it takes no new reactions",
            reply.status.as_str()
        )))
    }
}

/// Adds `actor`'s reaction `raw` to the post `post_id`: 404 when they may
/// not see it, 422 `emoji` for an unknown emoji, 409 when the post takes no
/// reactions (a draft, hidden or locked), 422 for a reaction beyond
/// [`MAX_REACTIONS_PER_MEMBER`].
/// Answers whether it was added (false: it was there already).
pub async fn react_to_post(
    tx: &mut Tx<'_>,
    actor: Actor,
    post_id: i64,
    raw: &str,
) -> Result<bool, DomainError> {
    let post = posts::lock(tx, post_id).await?;
    policy::react_to_post(actor, &post).check("post", "you may not react to this post")?;
    let emoji = emoji_for_new_reaction(tx, raw).await?;
    open_to_reactions(&post)?;
    add(tx, ItemKind::Post, post_id, actor.user_id, &emoji).await
}

/// Takes `actor`'s reaction `raw` back from the post `post_id`, whether or
/// not they had it: 404 when they may not see the post, 422 `emoji` for an
/// emoji that is neither known nor on the post.
pub async fn unreact_to_post(
    tx: &mut Tx<'_>,
    actor: Actor,
    post_id: i64,
    raw: &str,
) -> Result<(), DomainError> {
    let post = posts::lock(tx, post_id).await?;
    policy::react_to_post(actor, &post).check("post", "you may not react to this post")?;
    remove(tx, ItemKind::Post, post_id, actor.user_id, raw).await
}

/// Adds `actor`'s reaction `raw` to the reply `reply_id`, as
/// [`react_to_post`] does to a post; the reply's thread must take
/// reactions too (409 on a locked thread).
pub async fn react_to_reply(
    tx: &mut Tx<'_>,
    actor: Actor,
    reply_id: i64,
    raw: &str,
) -> Result<bool, DomainError> {
    let (post, reply) = replies::lock_thread_of(tx, reply_id).await?;
    policy::react_to_reply(actor, &post, &reply)
        .check("reply", "you may not react to this reply")?;
    let emoji = emoji_for_new_reaction(tx, raw).await?;
    open_to_reactions(&post)?;
    reply_open_to_reactions(&reply)?;
    add(tx, ItemKind::Reply, reply_id, actor.user_id, &emoji).await
}

/// Takes `actor`'s reaction `raw` back from the reply `reply_id`, as
/// [`unreact_to_post`] does from a post.
pub async fn unreact_to_reply(
    tx: &mut Tx<'_>,
    actor: Actor,
    reply_id: i64,
    raw: &str,
) -> Result<(), DomainError> {
    let (post, reply) = replies::lock_thread_of(tx, reply_id).await?;
    policy::react_to_reply(actor, &post, &reply)
        .check("reply", "you may not react to this reply")?;
    remove(tx, ItemKind::Reply, reply_id, actor.user_id, raw).await
}

/// Inserts the reaction unless it is there; refuses one that would make
/// the member's different emojis on the item more than the cap. The item's
/// row is locked (PostgreSQL) or the database is (SQLite), so two reactions
/// of one member at once are counted one after the other.
async fn add(
    tx: &mut Tx<'_>,
    kind: ItemKind,
    id: i64,
    user_id: i64,
    emoji: &str,
) -> Result<bool, DomainError> {
    let table = kind.reactions_table();
    let item = kind.item_column();
    let inserted = sqlx::query(&format!(
        "INSERT INTO {table} ({item}, user_id, emoji, created_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT DO NOTHING"
    ))
    .bind(id)
    .bind(user_id)
    .bind(emoji)
    .bind(now_millis())
    .execute(&mut **tx)
    .await?
    .rows_affected()
        == 1;
    if inserted {
        let (held,): (i64,) = sqlx::query_as(&format!(
            "SELECT COUNT(*) FROM {table} WHERE {item} = $1 AND user_id = $2"
        ))
        .bind(id)
        .bind(user_id)
        .fetch_one(&mut **tx)
        .await?;
        if held > MAX_REACTIONS_PER_MEMBER {
            return Err(DomainError::Invalid {
                field: "emoji",
                reason: format!(
                    "a member reacts with at most {MAX_REACTIONS_PER_MEMBER} different emojis \
                     on one {}",
                    kind.noun()
                ),
            });
        }
    }
    Ok(inserted)
}

/// Deletes the reaction if it is there; an emoji neither known nor on the
/// item is refused.
async fn remove(
    tx: &mut Tx<'_>,
    kind: ItemKind,
    id: i64,
    user_id: i64,
    raw: &str,
) -> Result<(), DomainError> {
    let deleted = sqlx::query(&format!(
        "DELETE FROM {} WHERE {} = $1 AND user_id = $2 AND emoji = $3",
        kind.reactions_table(),
        kind.item_column()
    ))
    .bind(id)
    .bind(user_id)
    .bind(raw)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    if deleted == 0 {
        known_emoji(tx, kind, id, raw).await?;
    }
    Ok(())
}

/// Where a page of who reacted ends: the last member's reaction time and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReactorCursor {
    pub reacted_at: i64,
    pub user_id: i64,
}

/// One page of the members who reacted with one emoji, newest first.
#[derive(Debug, Clone)]
pub struct ReactorPage {
    pub users: Vec<User>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<ReactorCursor>,
}

impl Database {
    /// The members who reacted to the item `id` of `kind` with `raw`,
    /// newest first (ties: the higher user id first), `limit` after
    /// `after`: 422 `emoji` for an emoji neither known nor on the item.
    /// The caller has checked that the item is one they may see.
    pub async fn who_reacted(
        &self,
        kind: ItemKind,
        id: i64,
        raw: &str,
        after: Option<ReactorCursor>,
        limit: i64,
    ) -> Result<ReactorPage, DomainError> {
        let mut lease = self.lease().await?;
        known_emoji(&mut lease, kind, id, raw).await?;
        let after = after.unwrap_or(ReactorCursor {
            reacted_at: i64::MAX,
            user_id: i64::MAX,
        });
        let columns = USER_COLUMNS
            .split(", ")
            .map(|column| format!("u.{column}"))
            .collect::<Vec<_>>()
            .join(", ");
        let rows: Vec<ReactorRow> = sqlx::query_as(&format!(
            "SELECT {columns}, r.created_at AS reacted_at \
             FROM {} r JOIN users u ON u.id = r.user_id \
             WHERE r.{item} = $1 AND r.emoji = $2 \
             AND (r.created_at < $3 OR (r.created_at = $3 AND r.user_id < $4)) \
             ORDER BY r.created_at DESC, r.user_id DESC LIMIT $5",
            kind.reactions_table(),
            item = kind.item_column(),
        ))
        .bind(id)
        .bind(raw)
        .bind(after.reacted_at)
        .bind(after.user_id)
        .bind(limit + 1)
        .fetch_all(&mut *lease)
        .await?;
        let more = rows.len() as i64 > limit;
        let mut users = Vec::with_capacity(rows.len());
        let mut next = None;
        for row in rows.into_iter().take(limit as usize) {
            next = Some(ReactorCursor {
                reacted_at: row.reacted_at,
                user_id: row.user.id,
            });
            users.push(User::try_from(row.user)?);
        }
        Ok(ReactorPage {
            users,
            next: next.filter(|_| more),
        })
    }
}

/// A row of [`Database::who_reacted`]: the user and when they reacted.
#[derive(sqlx::FromRow)]
struct ReactorRow {
    #[sqlx(flatten)]
    user: UserRow,
    reacted_at: i64,
}

/// One of a member's reactions, as their export lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnReaction {
    /// The post reacted to, or the post of the reply reacted to.
    pub post_id: i64,
    /// The reply reacted to; `None` for a reaction to the post.
    pub reply_id: Option<i64>,
    pub emoji: String,
    pub created_at: i64,
}

impl OwnReaction {
    /// The item reacted to, which orders reactions of one instant.
    fn item_id(&self) -> i64 {
        self.reply_id.unwrap_or(self.post_id)
    }
}

impl Database {
    /// A page of `user_id`'s reactions to items of `kind`, oldest first,
    /// after `after` (the previous page's last).
    pub async fn reactions_of_user(
        &self,
        kind: ItemKind,
        user_id: i64,
        after: Option<&OwnReaction>,
        limit: i64,
    ) -> Result<Vec<OwnReaction>, DomainError> {
        let (created_at, item_id, emoji) = after
            .map_or((i64::MIN, i64::MIN, String::new()), |last| {
                (last.created_at, last.item_id(), last.emoji.clone())
            });
        let (ids, source) = match kind {
            ItemKind::Post => (
                "r.post_id, CAST(NULL AS BIGINT)",
                "post_reactions r".to_owned(),
            ),
            ItemKind::Reply => (
                "p.post_id, r.reply_id",
                "reply_reactions r JOIN replies p ON p.id = r.reply_id".to_owned(),
            ),
        };
        let item = format!("r.{}", kind.item_column());
        let bytes = self.dialect().byte_order();
        let rows: Vec<(i64, Option<i64>, String, i64)> = sqlx::query_as(&format!(
            "SELECT {ids}, r.emoji, r.created_at FROM {source} WHERE r.user_id = $1 \
             AND (r.created_at > $2 OR (r.created_at = $2 AND ({item} > $3 \
             OR ({item} = $3 AND r.emoji{bytes} > $4)))) \
             ORDER BY r.created_at, {item}, r.emoji{bytes} LIMIT $5"
        ))
        .bind(user_id)
        .bind(created_at)
        .bind(item_id)
        .bind(emoji)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(post_id, reply_id, emoji, created_at)| OwnReaction {
                post_id,
                reply_id,
                emoji,
                created_at,
            })
            .collect())
    }
}
