//! What members added to posts and replies besides the items themselves
//! (DECISIONS.md "Conversations (round 5)"): the reaction counts, the
//! caller's own reactions and the users the content mentions, read for a
//! whole page of items in one statement whatever the page's size.
//!
//! Each kind of item has tables of its own of the same shape
//! (`post_reactions`, `post_reaction_counts`, `post_mentions`, and the
//! `reply_…` ones): [`ItemKind`] names them, and [`crate::reactions`] and
//! [`crate::mentions`] write them.

use std::collections::HashMap;

use crate::dialect::Dialect;
use crate::{Database, DomainError};

/// A kind of item members react to and mention users in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    Post,
    Reply,
}

impl ItemKind {
    /// The column naming the item in its reaction and mention tables.
    pub(crate) fn item_column(self) -> &'static str {
        match self {
            ItemKind::Post => "post_id",
            ItemKind::Reply => "reply_id",
        }
    }

    /// One row per (item, member, emoji).
    pub(crate) fn reactions_table(self) -> &'static str {
        match self {
            ItemKind::Post => "post_reactions",
            ItemKind::Reply => "reply_reactions",
        }
    }

    /// One row per (item, emoji) with its count, kept by triggers.
    pub(crate) fn counts_table(self) -> &'static str {
        match self {
            ItemKind::Post => "post_reaction_counts",
            ItemKind::Reply => "reply_reaction_counts",
        }
    }

    /// One row per (item, mentioned user) with its position.
    pub(crate) fn mentions_table(self) -> &'static str {
        match self {
            ItemKind::Post => "post_mentions",
            ItemKind::Reply => "reply_mentions",
        }
    }

    /// What a refusal calls one item (`post not found`).
    pub fn noun(self) -> &'static str {
        match self {
            ItemKind::Post => "post",
            ItemKind::Reply => "reply",
        }
    }
}

/// A user named in an item's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub id: i64,
    pub username: String,
}

/// What one item carries besides itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Engagement {
    /// Each emoji reacted with and how many members did, in the order the
    /// emojis were first added to the item.
    pub reactions: Vec<(String, i64)>,
    /// The caller's own reactions, in the order they added them; empty for
    /// an anonymous caller.
    pub my_reactions: Vec<String>,
    /// The users the content mentions, in order of first appearance.
    pub mentions: Vec<Mention>,
}

/// Which part of an [`Engagement`] a row of the page statement fills.
const COUNT_ROW: i64 = 0;
const MINE_ROW: i64 = 1;
const MENTION_ROW: i64 = 2;

/// A row of the page statement: (part, item, text, number, rank). A count
/// row holds (emoji, count, first reacted at); a row of the caller's
/// reactions (emoji, 0, reacted at); a mention row (username, user id,
/// position).
type EngagementRow = (i64, i64, String, i64, i64);

impl Database {
    /// The [`Engagement`] of each of `ids` (items of `kind`) for `caller`,
    /// in one statement: the ids travel as one JSON array, so the
    /// statement is the same for every page. An item nobody reacted to
    /// and that mentions nobody is absent.
    pub async fn engagement(
        &self,
        kind: ItemKind,
        ids: &[i64],
        caller: Option<i64>,
    ) -> Result<HashMap<i64, Engagement>, DomainError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let sql = engagement_sql(self.dialect(), kind, caller.is_some());
        let ids_json = serde_json::Value::from(ids).to_string();
        let mut query = sqlx::query_as::<_, EngagementRow>(&sql).bind(ids_json);
        if let Some(caller) = caller {
            query = query.bind(caller);
        }
        let mut rows = query.fetch_all(&mut *self.lease().await?).await?;
        rows.sort_by(|a, b| (a.0, a.1, a.4, &a.2).cmp(&(b.0, b.1, b.4, &b.2)));
        let mut by_item: HashMap<i64, Engagement> = HashMap::new();
        for (part, item, text, number, _) in rows {
            let engagement = by_item.entry(item).or_default();
            match part {
                COUNT_ROW => engagement.reactions.push((text, number)),
                MINE_ROW => engagement.my_reactions.push(text),
                _ => engagement.mentions.push(Mention {
                    id: number,
                    username: text,
                }),
            }
        }
        Ok(by_item)
    }
}

/// The page statement: `$1` the ids as a JSON array, `$2` the caller when
/// `with_caller` (their own reactions are left out otherwise). Each part
/// reads its table's primary key from the item's id.
fn engagement_sql(dialect: Dialect, kind: ItemKind, with_caller: bool) -> String {
    let item = kind.item_column();
    let ids = dialect.json_integers("$1");
    let counts = format!(
        "SELECT CAST({COUNT_ROW} AS BIGINT), c.{item}, c.emoji, c.total, c.first_reacted_at \
         FROM {} c WHERE c.{item} IN ({ids})",
        kind.counts_table()
    );
    let mentions = format!(
        "SELECT CAST({MENTION_ROW} AS BIGINT), m.{item}, u.username, u.id, m.position \
         FROM {} m JOIN users u ON u.id = m.user_id WHERE m.{item} IN ({ids})",
        kind.mentions_table()
    );
    if !with_caller {
        return format!("{counts} UNION ALL {mentions}");
    }
    let mine = format!(
        "SELECT CAST({MINE_ROW} AS BIGINT), r.{item}, r.emoji, CAST(0 AS BIGINT), r.created_at \
         FROM {} r WHERE r.{item} IN ({ids}) AND r.user_id = $2",
        kind.reactions_table()
    );
    format!("{counts} UNION ALL {mine} UNION ALL {mentions}")
}
