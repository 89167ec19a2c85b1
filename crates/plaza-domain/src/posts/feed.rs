//! The feed: the public posts of the members a reader follows, newest
//! first (ties: the higher id first), from a cursor, without the authors
//! the reader hides; and its fan-out.
//!
//! The feed is read from the reader's own entries (`feed_entries`, one per
//! followed post), not gathered from every followed author at each read:
//! a page costs one range of one index however many members the reader
//! follows. The schema keeps the entries (migration `0057_feed_entries`):
//! a follow brings in the followed member's latest [`FOLLOW_BACKFILL`]
//! posts, an ended follow takes that member's entries out, and a new post
//! of a member with followers is queued in `feed_fanouts`, whose entries
//! [`Database::fan_out_feeds`] writes a batch of followers at a time.
//! Until its last batch a queued post is read from the queue, so a post is
//! in its author's followers' feeds from the moment it is written. The
//! page keeps only entries whose post is public, so a post's state takes
//! effect at once whatever the entries say. An entry is of a followed
//! member: the fan-out locks the follows it writes entries from, so an
//! ended follow's trigger runs after those writes and takes them out too;
//! a queued post is kept only while the reader follows its author.

use super::model::{POST_COLUMNS, PUBLIC_SQL, Post, PostRow};
use crate::between::Screen;
use crate::dialect::Dialect;
use crate::listing::{Arg, Args, bind_all};
use crate::{Database, DomainError};

/// The latest posts of a member a follow brings into the follower's feed
/// (the schema's follow trigger keeps this number).
pub const FOLLOW_BACKFILL: i64 = 100;

/// Followers one unit of work of the fan-out gives a post's entry to.
pub const FANOUT_BATCH: i64 = 1_000;

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

/// What a run of the fan-out did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FanOut {
    /// Entries written.
    pub entries: u64,
    /// Queued posts whose every follower now has the entry.
    pub posts_done: u64,
}

/// A queued post: its id, author, creation time and the follow (time,
/// follower) its entries were given up to.
type Queued = (i64, i64, i64, i64, i64);

impl Database {
    /// A page of `reader_id`'s feed, `limit` posts after `after`, leaving
    /// out the authors `screen` hides: one statement, the page of the
    /// reader's entries beside the page of queued posts they lack.
    pub async fn feed(
        &self,
        reader_id: i64,
        screen: Option<Screen>,
        after: Option<FeedCursor>,
        limit: i64,
    ) -> Result<FeedPage, DomainError> {
        let mut args = Args::default();
        let sql = feed_sql(reader_id, screen.as_ref(), after, limit, &mut args);
        // Its best plan is the same for every reader and cursor, and
        // planning it costs more than running it.
        let rows: Vec<PostRow> = bind_all(sqlx::query_as(&sql), args.into_vec())
            .fetch_all(&mut *self.generic_plan_lease().await?)
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

    /// PostgreSQL's plan of the first page of `reader_id`'s feed as the
    /// feed runs it, one plan for every reader and cursor (a generic plan),
    /// one line per step: for the test that checks a page is planned for
    /// its size. PostgreSQL only.
    #[cfg(feature = "testing")]
    pub async fn explain_generic_feed(
        &self,
        reader_id: i64,
        limit: i64,
    ) -> Result<Vec<String>, DomainError> {
        let mut args = Args::default();
        let sql = feed_sql(reader_id, None, None, limit, &mut args);
        // Written in as literals: `EXPLAIN EXECUTE` takes no bound values.
        let values: Vec<String> = args
            .into_vec()
            .into_iter()
            .map(|arg| match arg {
                Arg::Int(value) => value.to_string(),
                Arg::Text(text) => format!("'{}'", text.replace('\'', "''")),
                Arg::Bool(value) => value.to_string(),
            })
            .collect();
        let mut lease = self.generic_plan_lease().await?;
        sqlx::query(&format!("PREPARE feed_page AS {sql}"))
            .execute(&mut *lease)
            .await?;
        let plan: Result<Vec<(String,)>, _> = sqlx::query_as(&format!(
            "EXPLAIN EXECUTE feed_page ({})",
            values.join(", ")
        ))
        .fetch_all(&mut *lease)
        .await;
        sqlx::query("DEALLOCATE feed_page")
            .execute(&mut *lease)
            .await?;
        Ok(plan?.into_iter().map(|(line,)| line).collect())
    }

    /// Gives queued posts' entries to their authors' followers: at most
    /// `batches` units of work, each giving one post's entry to the next
    /// [`FANOUT_BATCH`] of its followers (the last one of a post takes it
    /// off the queue). Several instances may run it at once: a queued row
    /// is locked by the batch that reads it, and an entry written twice is
    /// kept once. An empty queue is answered by a read, without a unit of
    /// work (on SQLite, a turn of its one writer).
    pub async fn fan_out_feeds(&self, batches: usize) -> Result<FanOut, DomainError> {
        let mut done = FanOut::default();
        let queued: Option<(i64,)> = sqlx::query_as("SELECT post_id FROM feed_fanouts LIMIT 1")
            .fetch_optional(&mut *self.lease().await?)
            .await?;
        if queued.is_none() {
            return Ok(done);
        }
        for _ in 0..batches {
            let Some((entries, finished)) = self
                .write(|tx| {
                    Box::pin(async move {
                        let queued: Option<Queued> = sqlx::query_as(&format!(
                            "SELECT post_id, author_id, created_at, next_followed_at, \
                             next_follower_id FROM feed_fanouts ORDER BY post_id LIMIT 1{}",
                            Dialect::of(tx).for_update()
                        ))
                        .fetch_optional(&mut **tx)
                        .await?;
                        let Some((post_id, author_id, created_at, from_at, from_id)) = queued
                        else {
                            return Ok(None);
                        };
                        // The follows after the last batch, in the order of
                        // `follows_followers`: (followed, since, follower).
                        let after = "f.followed_id = $1 AND (f.created_at > $2 \
                                     OR (f.created_at = $2 AND f.follower_id > $3))";
                        let last: Option<(i64, i64)> = sqlx::query_as(&format!(
                            "SELECT f.created_at, f.follower_id FROM follows f WHERE {after} \
                             ORDER BY f.created_at, f.follower_id LIMIT 1 OFFSET $4"
                        ))
                        .bind(author_id)
                        .bind(from_at)
                        .bind(from_id)
                        .bind(FANOUT_BATCH - 1)
                        .fetch_optional(&mut **tx)
                        .await?;
                        let (until_at, until_id) = last.unwrap_or((i64::MAX, i64::MAX));
                        // The follows read stay until the commit: an
                        // unfollow waits, and its trigger then takes out
                        // the entries written here.
                        let written = sqlx::query(&format!(
                            "INSERT INTO feed_entries (reader_id, created_at, post_id, author_id) \
                             SELECT f.follower_id, $5, $6, f.followed_id FROM follows f \
                             WHERE {after} AND (f.created_at < $4 \
                               OR (f.created_at = $4 AND f.follower_id <= $7)){} \
                             ON CONFLICT DO NOTHING",
                            Dialect::of(tx).key_share_of("f")
                        ))
                        .bind(author_id)
                        .bind(from_at)
                        .bind(from_id)
                        .bind(until_at)
                        .bind(created_at)
                        .bind(post_id)
                        .bind(until_id)
                        .execute(&mut **tx)
                        .await?
                        .rows_affected();
                        match last {
                            Some((until_at, until_id)) => {
                                sqlx::query(
                                    "UPDATE feed_fanouts SET next_followed_at = $1, \
                                     next_follower_id = $2 WHERE post_id = $3",
                                )
                                .bind(until_at)
                                .bind(until_id)
                                .bind(post_id)
                                .execute(&mut **tx)
                                .await?;
                            }
                            None => {
                                sqlx::query("DELETE FROM feed_fanouts WHERE post_id = $1")
                                    .bind(post_id)
                                    .execute(&mut **tx)
                                    .await?;
                            }
                        }
                        Ok(Some((written, last.is_none())))
                    })
                })
                .await?
            else {
                break;
            };
            done.entries += entries;
            done.posts_done += u64::from(finished);
        }
        Ok(done)
    }
}

/// The statement of a page of `reader_id`'s feed (see [`Database::feed`]),
/// its values added to `args`.
fn feed_sql(
    reader_id: i64,
    screen: Option<&Screen>,
    after: Option<FeedCursor>,
    limit: i64,
    args: &mut Args,
) -> String {
    let after = after.unwrap_or(FeedCursor {
        created_at: i64::MAX,
        id: i64::MAX,
    });
    let reader = args.push(Arg::Int(reader_id));
    let created_at = args.push(Arg::Int(after.created_at));
    let id = args.push(Arg::Int(after.id));
    // The page's size is written into the statement, not bound: a
    // generic plan costs a bound LIMIT at a tenth of the rows it may
    // read and would pick a plan for thousands (a parallel scan) for a
    // page of twenty. The caller's bound on `limit` bounds the texts.
    let rows = limit + 1;
    // A page's posts: before the cursor (a range of the entries' key),
    // as an entry (`e`) or a queued post (`q`) says; public, and not
    // hidden by the reader. An entry exists only while its follow does; a
    // queued post is the reader's while they follow its author.
    let before = |source: &str| {
        format!(
            "{source}.created_at <= {created_at} \
                 AND ({source}.created_at < {created_at} OR {source}.post_id < {id})"
        )
    };
    let listed_entry = before("e");
    let listed_queued = format!(
        "{} AND EXISTS (SELECT 1 FROM follows f \
           WHERE f.follower_id = {reader} AND f.followed_id = q.author_id)",
        before("q")
    );
    let shown = |args: &mut Args| {
        let mut conditions = vec![PUBLIC_SQL.to_owned()];
        if let Some(screen) = &screen {
            conditions.push(screen.sql("p.author_id", args));
        }
        conditions.join(" AND ")
    };
    let (shown_entry, shown_queued) = (shown(args), shown(args));
    // The queued posts are found first (a few rows), then looked up.
    format!(
        "SELECT {POST_COLUMNS} FROM (\
               SELECT * FROM (SELECT p.* FROM feed_entries e JOIN posts p ON p.id = e.post_id \
                 WHERE e.reader_id = {reader} AND {listed_entry} AND {shown_entry} \
                 ORDER BY e.created_at DESC, e.post_id DESC LIMIT {rows}) AS entries \
               UNION ALL \
               SELECT * FROM (SELECT p.* FROM posts p WHERE p.id IN (\
                   SELECT q.post_id FROM feed_fanouts q WHERE {listed_queued} \
                   AND NOT EXISTS (SELECT 1 FROM feed_entries x WHERE x.reader_id = {reader} \
                     AND x.created_at = q.created_at AND x.post_id = q.post_id)) \
                 AND {shown_queued} \
                 ORDER BY p.created_at DESC, p.id DESC LIMIT {rows}) AS queued\
             ) AS p ORDER BY p.created_at DESC, p.id DESC LIMIT {rows}"
    )
}
