//! What a reply shows from beside the thread: its reactions, the caller's
//! own reactions and the users it mentions. Reactions and mentions are
//! stored by their own modules; until they are, every reply has none. A
//! page of replies asks once for all of them ([`Database::reply_extras`]),
//! so the statements a page runs stay the same whatever its size.

use std::collections::BTreeMap;

use crate::posts::Viewer;
use crate::{Database, DomainError};

/// A user a reply mentions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub id: i64,
    pub username: String,
}

/// What [`Database::reply_extras`] tells of one reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyExtras {
    /// Each emoji with how many reacted with it.
    pub reactions: BTreeMap<String, i64>,
    /// The viewer's own reactions; none for an anonymous viewer.
    pub my_reactions: Vec<String>,
    /// In order of first appearance.
    pub mentions: Vec<Mention>,
}

impl Database {
    /// The extras of each of `reply_ids` as `viewer` sees them, in the same
    /// order.
    pub async fn reply_extras(
        &self,
        viewer: Viewer,
        reply_ids: &[i64],
    ) -> Result<Vec<ReplyExtras>, DomainError> {
        let _ = viewer;
        Ok(vec![ReplyExtras::default(); reply_ids.len()])
    }
}
