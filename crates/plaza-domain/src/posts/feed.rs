//! The feed: the public posts of the members a reader follows, newest
//! first (ties: the higher id first), from a cursor, without the authors
//! the reader hides.

use super::model::{POST_COLUMNS, PUBLIC_SQL, Post, PostRow};
use crate::between::Screen;
use crate::listing::{Arg, Args, bind_all};
use crate::{Database, DomainError};

/// Where a page of the feed ends: the last post's creation time and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedCursor {
    pub created_at: i64,
    pub id: i64,
}

/// One page of the feed.
#[derive(Debug, Clone)]
pub struct FeedPage {
    pub posts: Vec<Post>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<FeedCursor>,
}

impl Database {
    /// A page of `reader_id`'s feed, `limit` posts after `after`, leaving
    /// out the authors `screen` hides: one statement.
    pub async fn feed(
        &self,
        reader_id: i64,
        screen: Option<Screen>,
        after: Option<FeedCursor>,
        limit: i64,
    ) -> Result<FeedPage, DomainError> {
        let after = after.unwrap_or(FeedCursor {
            created_at: i64::MAX,
            id: i64::MAX,
        });
        let mut args = Args::default();
        let reader = args.push(Arg::Int(reader_id));
        let created_at = args.push(Arg::Int(after.created_at));
        let id = args.push(Arg::Int(after.id));
        let mut conditions = vec![
            format!(
                "p.author_id IN (SELECT f.followed_id FROM follows f WHERE f.follower_id = {reader})"
            ),
            PUBLIC_SQL.to_owned(),
            format!(
                "(p.created_at < {created_at} OR (p.created_at = {created_at} AND p.id < {id}))"
            ),
        ];
        if let Some(screen) = screen {
            conditions.push(screen.sql("p.author_id", &mut args));
        }
        let limit_placeholder = args.push(Arg::Int(limit + 1));
        let sql = format!(
            "SELECT {POST_COLUMNS} FROM posts p WHERE {} \
             ORDER BY p.created_at DESC, p.id DESC LIMIT {limit_placeholder}",
            conditions.join(" AND ")
        );
        let rows: Vec<PostRow> = bind_all(sqlx::query_as(&sql), args.into_vec())
            .fetch_all(&mut *self.lease().await?)
            .await?;
        let more = rows.len() as i64 > limit;
        let posts = rows
            .into_iter()
            .take(usize::try_from(limit).unwrap_or(0))
            .map(Post::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        let next = posts.last().filter(|_| more).map(|last| FeedCursor {
            created_at: last.created_at,
            id: last.id,
        });
        Ok(FeedPage { posts, next })
    }
}
