//! Writing replies: answering a post or a reply, editing, deleting (a
//! placeholder while rows remain below, else gone), changing a status, and
//! the counts each write moves.
//!
//! Every write to a thread takes its post's row first ([`posts::lock`]),
//! so the writes of one thread queue in one order: ranks follow arrival,
//! counts move by relative updates in the same transaction, and no two
//! writers wait on each other's rows.

use super::model::{NewReply, REPLY_COLUMNS, REPLY_SOURCE, Reply, ReplyRow, ReplyStatus};
use super::path::{self, MAX_PATH_BYTES};
use crate::between;
use crate::dialect::Dialect;
use crate::engagement::ItemKind;
use crate::holds::{HoldReason, Review};
use crate::mentions::{self, Mentioned};
use crate::posts::{self, Post, PostStatus, Viewer};
use crate::reports::{self, ReportTarget};
use crate::time::now_millis;
use crate::webhooks::{self, EventType};
use crate::{DomainError, Tx};

/// A reply as a write left it, and the users its content mentions.
#[derive(Debug, Clone)]
pub struct WrittenReply {
    pub reply: Reply,
    /// Its post, as locked before the write (its counts as they were).
    pub post: Post,
    /// Who the content mentions, and who of them this write mentioned
    /// first (for notifications).
    pub mentioned: Mentioned,
    /// Why this write flagged the reply (a word filter's `flag`), if it
    /// did: the caller records the automated moderation action.
    pub flagged: Option<HoldReason>,
}

/// Reply `id` as the unit of work sees it.
pub async fn reply_in(tx: &mut Tx<'_>, id: i64) -> Result<Reply, DomainError> {
    let row: Option<ReplyRow> = sqlx::query_as(&format!(
        "SELECT {REPLY_COLUMNS} FROM {REPLY_SOURCE} WHERE r.id = $1"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or(DomainError::NotFound("reply"))?.try_into()
}

/// Reply `id` and its post, the post's row held for the rest of the unit
/// of work (see the module documentation): what a change to a reply reads
/// before the policy decides.
pub async fn lock_thread_of(tx: &mut Tx<'_>, id: i64) -> Result<(Post, Reply), DomainError> {
    let post_id: Option<(i64,)> = sqlx::query_as("SELECT post_id FROM replies WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
    let (post_id,) = post_id.ok_or(DomainError::NotFound("reply"))?;
    let post = posts::lock(tx, post_id).await?;
    let reply = reply_in(tx, id).await?;
    Ok((post, reply))
}

/// Why `post` takes no new replies from someone who sees it, if it does
/// not: a draft, a hidden post or a locked thread.
pub fn refusal_of_answers(post: &Post) -> Option<&'static str> {
    match post.status() {
        PostStatus::Draft => Some("the post is a draft"),
        PostStatus::Pending => Some("the post waits for a moderator"),
        PostStatus::Hidden => Some("the post is hidden"),
        _ if post.locked => Some("the post is locked"),
        PostStatus::Published | PostStatus::Flagged => None,
    }
}

/// Adds `delta` to the visible count of the post and of every ancestor of
/// the reply at `reply_path` (its own count is not changed): one statement
/// for the ancestors however deep, by their paths.
async fn count_visible(
    tx: &mut Tx<'_>,
    post_id: i64,
    reply_path: &str,
    delta: i64,
) -> Result<(), DomainError> {
    count_in_ancestors(tx, post_id, reply_path, delta).await?;
    count_in_post(tx, post_id, delta).await
}

/// Adds `delta` to the post's visible count.
async fn count_in_post(tx: &mut Tx<'_>, post_id: i64, delta: i64) -> Result<(), DomainError> {
    sqlx::query("UPDATE posts SET reply_count = reply_count + $1 WHERE id = $2")
        .bind(delta)
        .bind(post_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// [`count_visible`] without the post's count.
async fn count_in_ancestors(
    tx: &mut Tx<'_>,
    post_id: i64,
    reply_path: &str,
    delta: i64,
) -> Result<(), DomainError> {
    let ancestors = path::ancestors(reply_path);
    if ancestors.is_empty() {
        return Ok(());
    }
    let paths = serde_json::to_string(&ancestors)
        .map_err(|error| DomainError::Database(sqlx::Error::Encode(Box::new(error))))?;
    sqlx::query(&format!(
        "UPDATE replies SET reply_count = reply_count + $1 \
         WHERE post_id = $2 AND path IN ({})",
        Dialect::of(tx).json_texts("$3")
    ))
    .bind(delta)
    .bind(post_id)
    .bind(paths)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The rank of the next answer to `parent_id` (to the post when `None`),
/// taken from the parent's `child_seq`, with `counted` (1 for a visible
/// answer, else 0) added to the post's visible count. The post's row is
/// written once: each update of it runs its triggers (the list counts, the
/// content generation).
async fn take_rank(
    tx: &mut Tx<'_>,
    post_id: i64,
    parent_id: Option<i64>,
    counted: i64,
) -> Result<u64, DomainError> {
    let (taken,): (i64,) = match parent_id {
        None => {
            sqlx::query_as(
                "UPDATE posts SET child_seq = child_seq + 1, reply_count = reply_count + $2 \
                 WHERE id = $1 RETURNING child_seq",
            )
            .bind(post_id)
            .bind(counted)
            .fetch_one(&mut **tx)
            .await?
        }
        Some(parent_id) => {
            if counted != 0 {
                count_in_post(tx, post_id, counted).await?;
            }
            sqlx::query_as(
                "UPDATE replies SET child_seq = child_seq + 1 WHERE id = $1 RETURNING child_seq",
            )
            .bind(parent_id)
            .fetch_one(&mut **tx)
            .await?
        }
    };
    Ok(u64::try_from(taken - 1).unwrap_or(0))
}

/// Writes a reply as `viewer` (its author): 404 ([`DomainError::NotFound`])
/// when the post is not theirs to see, 409 ([`DomainError::Conflict`]) when
/// the post takes no replies ([`refusal_of_answers`]), 422
/// ([`DomainError::Invalid`] on `parent_id`) when the parent is not a reply
/// of that post they see, 403 ([`DomainError::Blocked`]) when a block
/// stands between them and the post's author or the parent's. Its mentions
/// are recorded with it.
pub async fn create(
    tx: &mut Tx<'_>,
    new: NewReply,
    viewer: Viewer,
) -> Result<WrittenReply, DomainError> {
    let post = posts::lock(tx, new.post_id).await?;
    if !post.visible_to(viewer) {
        return Err(DomainError::NotFound("post"));
    }
    if let Some(reason) = refusal_of_answers(&post) {
        return Err(DomainError::Conflict(format!(
            "{reason}: it takes no new replies"
        )));
    }
    between::refuse_if_blocked(tx, new.author_id, Some(post.author_id)).await?;
    let (parent_path, depth) = match new.parent_id {
        None => (String::new(), 0),
        Some(parent_id) => {
            let invalid = |reason: &str| DomainError::Invalid {
                field: "parent_id",
                reason: reason.to_owned(),
            };
            let parent = match reply_in(tx, parent_id).await {
                Err(DomainError::NotFound(_)) => {
                    return Err(invalid("must name a reply of this post"));
                }
                found => found?,
            };
            if parent.post_id != post.id || !parent.visible_to(viewer) {
                return Err(invalid("must name a reply of this post"));
            }
            if parent.status == ReplyStatus::Deleted {
                return Err(invalid("names a deleted reply, which takes no answers"));
            }
            between::refuse_if_blocked(tx, new.author_id, parent.author_id()).await?;
            (parent.path, parent.depth + 1)
        }
    };
    let status = match new.review {
        Review::Publish => ReplyStatus::Published,
        Review::Hold(_) => ReplyStatus::Pending,
        Review::Flag(_) => ReplyStatus::Flagged,
    };
    let counted = i64::from(status.is_visible());
    let rank = take_rank(tx, post.id, new.parent_id, counted).await?;
    let reply_path = format!("{parent_path}{}", path::segment(rank));
    if reply_path.len() > MAX_PATH_BYTES {
        return Err(DomainError::Conflict(
            "the thread is as deep as it can be stored here: answer a reply higher up".to_owned(),
        ));
    }
    let now = now_millis();
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO replies (post_id, parent_id, author_id, content, status, depth, path, \
         newest_path, created_at, updated_at, review_reason) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10) RETURNING id",
    )
    .bind(post.id)
    .bind(new.parent_id)
    .bind(new.author_id)
    .bind(new.content)
    .bind(status.as_str())
    .bind(depth)
    .bind(&reply_path)
    .bind(path::newest_key(&reply_path))
    .bind(now)
    .bind(new.review.reason())
    .fetch_one(&mut **tx)
    .await?;
    if counted != 0 {
        count_in_ancestors(tx, post.id, &reply_path, counted).await?;
    }
    let reply = reply_in(tx, id).await?;
    let mentioned =
        mentions::record(tx, ItemKind::Reply, id, new.author_id, &reply.content, true).await?;
    let data = serde_json::json!({"reply": {
        "id": reply.id.to_string(),
        "post_id": reply.post_id.to_string(),
        "parent_id": reply.parent_id.map(|id| id.to_string()),
        "author_id": new.author_id.to_string(),
        "content": reply.content,
        "created_at": crate::time::rfc3339(reply.created_at),
    }});
    webhooks::enqueue(tx, EventType::ReplyCreated, &data, reply.created_at).await?;
    Ok(WrittenReply {
        reply,
        post,
        mentioned,
        flagged: new.review.flagged(),
    })
}

/// Replaces a reply's content (its author's edit): `edited_at` and
/// `updated_at` become now, and its mentions are recorded anew. A public
/// reply the `review` holds becomes pending (and leaves the counts), one it
/// flags flagged, each with its reason. Who may edit is the caller's check,
/// and `post`, the reply's, is locked by it ([`lock_thread_of`]).
pub async fn edit(
    tx: &mut Tx<'_>,
    post: Post,
    id: i64,
    content: String,
    review: Review,
) -> Result<WrittenReply, DomainError> {
    let now = now_millis();
    let changed = sqlx::query(
        "UPDATE replies SET content = $1, edited_at = $2, updated_at = $2 \
         WHERE id = $3 AND status <> 'deleted'",
    )
    .bind(content)
    .bind(now)
    .bind(id)
    .execute(&mut **tx)
    .await?;
    if changed.rows_affected() == 0 {
        return Err(DomainError::NotFound("reply"));
    }
    let mut reply = reply_in(tx, id).await?;
    let becomes = match review {
        Review::Hold(_) if reply.status.is_visible() => Some(ReplyStatus::Pending),
        Review::Flag(_) if reply.status == ReplyStatus::Published => Some(ReplyStatus::Flagged),
        _ => None,
    };
    if let Some(status) = becomes {
        sqlx::query("UPDATE replies SET review_reason = $1 WHERE id = $2")
            .bind(review.reason())
            .bind(id)
            .execute(&mut **tx)
            .await?;
        reply = set_status(tx, &reply, status).await?;
    }
    let author_id = reply.author_id().ok_or(DomainError::NotFound("reply"))?;
    let mentioned =
        mentions::record(tx, ItemKind::Reply, id, author_id, &reply.content, false).await?;
    Ok(WrittenReply {
        reply,
        post,
        mentioned,
        flagged: if becomes == Some(ReplyStatus::Flagged) {
            review.flagged()
        } else {
            None
        },
    })
}

/// What deleting a reply left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// Rows remain below it: it stays as a placeholder (status deleted,
    /// no content, no author); its reports are removed.
    Placeholder { reports_removed: u64 },
    /// Nothing was below it: the row is gone, with its reports.
    Gone,
}

/// Deletes `reply` (read by [`lock_thread_of`] in this unit of work): a
/// placeholder while rows remain below it, else gone; the counts of its
/// post and ancestors lose it if it was visible. Who may delete is the
/// caller's check.
pub async fn remove(tx: &mut Tx<'_>, reply: &Reply) -> Result<Removal, DomainError> {
    if reply.status == ReplyStatus::Deleted {
        return Err(DomainError::NotFound("reply"));
    }
    let below: Option<(i64,)> =
        sqlx::query_as("SELECT id FROM replies WHERE parent_id = $1 LIMIT 1")
            .bind(reply.id)
            .fetch_optional(&mut **tx)
            .await?;
    let removal = if below.is_some() {
        sqlx::query(
            "UPDATE replies SET status = 'deleted', content = '', author_id = NULL, \
             updated_at = $1 WHERE id = $2",
        )
        .bind(now_millis())
        .bind(reply.id)
        .execute(&mut **tx)
        .await?;
        let reports_removed = reports::remove(tx, ReportTarget::Reply, reply.id).await?;
        Removal::Placeholder { reports_removed }
    } else {
        sqlx::query("DELETE FROM replies WHERE id = $1")
            .bind(reply.id)
            .execute(&mut **tx)
            .await?;
        Removal::Gone
    };
    if reply.status.is_visible() {
        count_visible(tx, reply.post_id, &reply.path, -1).await?;
    }
    Ok(removal)
}

/// Sets `reply`'s status (a moderator's decision or a hold; not `deleted`,
/// which is [`remove`]) and moves the counts when it becomes or stops being
/// visible. Publishing it forgets why it entered the queue.
pub async fn set_status(
    tx: &mut Tx<'_>,
    reply: &Reply,
    status: ReplyStatus,
) -> Result<Reply, DomainError> {
    let approval = if status == ReplyStatus::Published {
        ", review_reason = NULL"
    } else {
        ""
    };
    sqlx::query(&format!(
        "UPDATE replies SET status = $1, updated_at = $2{approval} WHERE id = $3"
    ))
    .bind(status.as_str())
    .bind(now_millis())
    .bind(reply.id)
    .execute(&mut **tx)
    .await?;
    let delta = i64::from(status.is_visible()) - i64::from(reply.status.is_visible());
    if delta != 0 {
        count_visible(tx, reply.post_id, &reply.path, delta).await?;
    }
    reply_in(tx, reply.id).await
}
