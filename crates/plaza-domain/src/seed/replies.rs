//! Generated replies for the conversation benchmarks (`plaza dev seed
//! --replies`): one large thread on the newest public post and the rest
//! spread over other public posts, nested up to [`MAX_DEPTH`] levels, with
//! the paths, ranks and counts the write path would have given them, so a
//! thread page reads them as it reads written ones.

use std::time::Instant;

use super::{Rng, SeedProgress, Value, Vocabulary};
use crate::replies::path;
use crate::time::now_millis;
use crate::{Database, DomainError};

/// Levels of nesting below the post (depth 0 answers the post).
const MAX_DEPTH: i64 = 20;
/// A new reply answers one of this many of its thread's latest replies, so
/// conversations go deep where they are active.
const RECENT_WINDOW: usize = 200;

/// One generated reply, kept until its counts are known.
struct Generated {
    post_id: i64,
    parent: Option<usize>,
    depth: i64,
    path: String,
    child_seq: i64,
    reply_count: i64,
}

/// Counts of one reply-seeding run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplySeedSummary {
    pub replies: u64,
    /// The post holding the large thread, when there was one.
    pub thread_post_id: Option<i64>,
    pub thread_replies: u64,
}

impl Database {
    /// Writes `replies` new published replies by random active users:
    /// `thread_replies` of them in the thread of the newest public post
    /// without replies, the others over the other public posts without
    /// replies. About a fifth of a thread's replies answer the post; the
    /// rest answer one of the thread's recent replies, at most
    /// [`MAX_DEPTH`] levels down. Run it on a database the service is not
    /// writing to.
    pub async fn seed_replies(
        &self,
        replies: u64,
        thread_replies: u64,
        progress: &mut (dyn FnMut(SeedProgress) + Send),
    ) -> Result<ReplySeedSummary, DomainError> {
        let started = Instant::now();
        let thread_replies = thread_replies.min(replies);
        let authors: Vec<i64> =
            sqlx::query_as::<_, (i64,)>("SELECT id FROM users WHERE status = 'active' ORDER BY id")
                .fetch_all(&mut *self.lease().await?)
                .await?
                .into_iter()
                .map(|(id,)| id)
                .collect();
        let posts: Vec<i64> = sqlx::query_as::<_, (i64,)>(
            "SELECT id FROM posts WHERE published = TRUE AND moderation = 'none' \
             AND reply_count = 0 ORDER BY created_at DESC, id DESC",
        )
        .fetch_all(&mut *self.lease().await?)
        .await?
        .into_iter()
        .map(|(id,)| id)
        .collect();
        if replies > 0 && (authors.is_empty() || posts.is_empty()) {
            return Err(DomainError::Conflict(
                "replies need active users and public posts without replies; seed those first"
                    .to_owned(),
            ));
        }
        let (first_id,): (i64,) = sqlx::query_as("SELECT COALESCE(MAX(id), 0) + 1 FROM replies")
            .fetch_one(&mut *self.lease().await?)
            .await?;
        let mut rng = Rng(0x5EED_4E11 ^ first_id as u64);
        let thread_post = (thread_replies > 0).then(|| posts[0]);
        let others = if thread_post.is_some() && posts.len() > 1 {
            &posts[1..]
        } else {
            &posts[..]
        };

        let mut generated: Vec<Generated> = Vec::with_capacity(replies as usize);
        let mut post_ranks: std::collections::HashMap<i64, i64> = Default::default();
        let mut recent_of_post: std::collections::HashMap<i64, Vec<usize>> = Default::default();
        for index in 0..replies {
            let post_id = match thread_post {
                Some(post) if index < thread_replies => post,
                _ => others[rng.below(others.len() as u64) as usize],
            };
            let recent = recent_of_post.entry(post_id).or_default();
            let parent = if recent.is_empty() || rng.chance(20) {
                None
            } else {
                let candidate = recent[rng.below(recent.len() as u64) as usize];
                (generated[candidate].depth + 1 < MAX_DEPTH).then_some(candidate)
            };
            let (parent_path, depth, rank) = match parent {
                None => {
                    let rank = post_ranks.entry(post_id).or_insert(0);
                    *rank += 1;
                    (String::new(), 0, *rank - 1)
                }
                Some(parent) => {
                    let above = &mut generated[parent];
                    above.child_seq += 1;
                    (above.path.clone(), above.depth + 1, above.child_seq - 1)
                }
            };
            let at = generated.len();
            generated.push(Generated {
                post_id,
                parent,
                depth,
                path: format!("{parent_path}{}", path::segment(rank as u64)),
                child_seq: 0,
                reply_count: 0,
            });
            let mut above = parent;
            while let Some(ancestor) = above {
                generated[ancestor].reply_count += 1;
                above = generated[ancestor].parent;
            }
            let recent = recent_of_post.entry(post_id).or_default();
            if recent.len() == RECENT_WINDOW {
                recent.remove(0);
            }
            recent.push(at);
        }

        const MINUTE: i64 = 60_000;
        let now = now_millis();
        let first_at = now - 30 * 24 * 60 * MINUTE;
        let span = (now - first_at) / (replies.max(1) as i64);
        let vocabulary = Vocabulary::new();
        let rows: Vec<Vec<Value>> = generated
            .iter()
            .enumerate()
            .map(|(index, reply)| {
                let created_at = first_at + index as i64 * span;
                let words = rng.between(5, 40);
                vec![
                    Value::Int(first_id + index as i64),
                    Value::Int(reply.post_id),
                    reply
                        .parent
                        .map_or(Value::Null, |parent| Value::Int(first_id + parent as i64)),
                    Value::Int(authors[rng.below(authors.len() as u64) as usize]),
                    Value::Text(vocabulary.paragraph(&mut rng, words)),
                    Value::Text("published".to_owned()),
                    Value::Int(reply.depth),
                    Value::Text(reply.path.clone()),
                    Value::Text(path::newest_key(&reply.path)),
                    Value::Int(reply.child_seq),
                    Value::Int(reply.reply_count),
                    Value::Int(created_at),
                    Value::Int(created_at),
                ]
            })
            .collect();
        drop(generated);
        self.insert_rows(
            "replies",
            "id, post_id, parent_id, author_id, content, status, depth, path, newest_path, \
             child_seq, reply_count, created_at, updated_at",
            rows,
            &mut |written| {
                progress(SeedProgress {
                    table: "replies",
                    written,
                    total: replies,
                    elapsed_secs: started.elapsed().as_secs_f64(),
                })
            },
        )
        .await?;
        sqlx::query(
            "UPDATE posts SET reply_count = counted.replies, child_seq = counted.top_level \
             FROM (SELECT post_id, COUNT(*) AS replies, \
                     SUM(CASE WHEN parent_id IS NULL THEN 1 ELSE 0 END) AS top_level \
                   FROM replies \
                   WHERE post_id IN (SELECT DISTINCT post_id FROM replies WHERE id >= $1) \
                   GROUP BY post_id) counted \
             WHERE posts.id = counted.post_id",
        )
        .bind(first_id)
        .execute(&mut *self.lease().await?)
        .await?;
        for statement in self.dialect().after_bulk_load() {
            sqlx::query(statement)
                .execute(&mut *self.lease().await?)
                .await?;
        }
        Ok(ReplySeedSummary {
            replies,
            thread_post_id: thread_post,
            thread_replies,
        })
    }
}
