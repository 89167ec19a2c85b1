//! Erasing a user (DECISIONS.md "Accounts (round 4)"): one unit of work
//! deletes the user and everything that is theirs. Their replies go first,
//! as their author deletes them (DECISIONS.md "Conversations (round 5)"):
//! those with replies below stay as placeholders without author or
//! content, the rest are removed, and the counts of their threads follow.
//! The user's row takes by cascade their posts (with the reports,
//! reactions and mentions on them and the replies to them), the reports
//! they filed, their reactions (whose counts the triggers of migrations
//! 0039 and 0040 lower in the same transaction), their mentions in others'
//! posts and replies, sessions, linked accounts, custom emojis, alerts and
//! grants; admin
//! tokens die with the row (a token's user must exist). What no foreign key
//! reaches goes here explicitly: their analytics events (and their share of
//! the rollups) and their upload records, whose stored objects are listed
//! for deletion from the store in the same transaction.

use crate::users::{self, User};
use crate::{DomainError, Tx, analytics, replies, store_deletions, uploads};

/// Upload records deleted per statement.
const UPLOAD_PAGE: i64 = 200;
/// Analytics events deleted per statement.
const EVENT_CHUNK: i64 = 5_000;

/// What an erasure removed besides the user.
#[derive(Debug, Clone)]
pub struct Erased {
    /// The user as they were.
    pub user: User,
    /// Upload records deleted (custom emoji images among them).
    pub uploads: u64,
    /// Objects listed for deletion from `store`.
    pub objects: u64,
    pub events: u64,
    /// Replies removed or left as placeholders (not counting those on the
    /// user's own posts, which go with the posts).
    pub replies: u64,
}

/// Erases the user `id` in `tx`; the files of their uploads are listed for
/// deletion from `store` (the store of this instance, which holds every
/// upload record's files).
pub async fn erase_user(tx: &mut Tx<'_>, id: i64, store: &str) -> Result<Erased, DomainError> {
    let user = users::user_in(tx, id).await?;
    let mut erased_uploads = 0;
    let mut objects = 0;
    loop {
        let page = uploads::take_of_user(tx, id, UPLOAD_PAGE).await?;
        let keys: Vec<String> = page
            .iter()
            .flat_map(|upload| upload.keys().map(str::to_owned))
            .collect();
        store_deletions::record(tx, store, &keys).await?;
        erased_uploads += page.len() as u64;
        objects += keys.len() as u64;
        if (page.len() as i64) < UPLOAD_PAGE {
            break;
        }
    }
    let mut events = 0;
    loop {
        let chunk = analytics::erase_user_events(tx, id, EVENT_CHUNK).await?;
        events += chunk;
        if chunk < EVENT_CHUNK as u64 {
            break;
        }
    }
    let replies = replies::erase_of_author(tx, id).await?;
    users::delete(tx, id).await?;
    Ok(Erased {
        user,
        uploads: erased_uploads,
        objects,
        events,
        replies,
    })
}
