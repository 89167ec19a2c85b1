//! A member's replies as a whole: the counts their public profile shows,
//! the pages of their export, and what erasing them leaves of their
//! replies.

use super::model::{REPLY_COLUMNS, REPLY_SOURCE, Reply, ReplyRow};
use super::writes::{lock_thread_of, remove};
use crate::posts::PUBLIC_SQL;
use crate::{Database, DomainError, Tx};

/// Replies erased per statement that finds them.
const ERASE_PAGE: i64 = 200;

impl Database {
    /// How many public posts and visible replies (on public posts)
    /// `author_id` has: the public profile's `posts_count` and
    /// `replies_count`.
    pub async fn public_content_counts(&self, author_id: i64) -> Result<(i64, i64), DomainError> {
        Ok(sqlx::query_as(&format!(
            "SELECT (SELECT COUNT(*) FROM posts p WHERE p.author_id = $1 AND {PUBLIC_SQL}), \
             (SELECT COUNT(*) FROM replies r JOIN posts p ON p.id = r.post_id \
              WHERE r.author_id = $1 AND r.status IN ('published', 'flagged') AND {PUBLIC_SQL})"
        ))
        .bind(author_id)
        .fetch_one(&mut *self.lease().await?)
        .await?)
    }

    /// A page of every reply of `author_id` (held ones too), oldest first,
    /// after the reply `after_id`.
    pub async fn replies_of_author(
        &self,
        author_id: i64,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<Reply>, DomainError> {
        let rows: Vec<ReplyRow> = sqlx::query_as(&format!(
            "SELECT {REPLY_COLUMNS} FROM {REPLY_SOURCE} WHERE r.author_id = $1 AND r.id > $2 \
             ORDER BY r.id LIMIT $3"
        ))
        .bind(author_id)
        .bind(after_id)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        rows.into_iter().map(Reply::try_from).collect()
    }
}

/// Deletes every reply of `author_id` as its author would (see
/// [`remove`]): those with rows below stay as placeholders without
/// author or content, the rest are gone, and the counts of their threads
/// lose the visible ones. The deepest go first, so a reply whose only
/// replies below were the author's own goes too. Replies on the author's
/// own posts are left to the posts' deletion. Threads are taken in the
/// order of their posts' ids, so two erasures meeting on the same threads
/// queue rather than deadlock. Returns how many there were.
pub async fn erase_of_author(tx: &mut Tx<'_>, author_id: i64) -> Result<u64, DomainError> {
    let mut erased = 0;
    loop {
        let ids: Vec<(i64,)> = sqlx::query_as(
            "SELECT r.id FROM replies r WHERE r.author_id = $1 AND r.status <> 'deleted' \
             AND r.post_id NOT IN (SELECT p.id FROM posts p WHERE p.author_id = $1) \
             ORDER BY r.post_id, r.depth DESC, r.id LIMIT $2",
        )
        .bind(author_id)
        .bind(ERASE_PAGE)
        .fetch_all(&mut **tx)
        .await?;
        for (id,) in &ids {
            let (_, reply) = lock_thread_of(tx, *id).await?;
            remove(tx, &reply).await?;
        }
        erased += ids.len() as u64;
        if (ids.len() as i64) < ERASE_PAGE {
            return Ok(erased);
        }
    }
}
