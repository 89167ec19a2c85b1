//! Writing posts: creating, changing and deleting one, with its
//! `post_tags` rows and its mentions kept in the same unit of work, held
//! or flagged as its review says (`crate::holds`).

use super::model::{
    NewPost, POST_COLUMNS, Post, PostChanges, PostRow, RETURNING_COLUMNS, join_tags,
};
use crate::dialect::Dialect;
use crate::engagement::ItemKind;
use crate::holds::{HoldReason, Review};
use crate::listing::{Arg, bind_all};
use crate::mentions::{self, Mentioned};
use crate::time::now_millis;
use crate::webhooks::{self, EventType};
use crate::{DomainError, Tx};

/// A post as a write left it, and the users its content mentions.
#[derive(Debug, Clone)]
pub struct WrittenPost {
    pub post: Post,
    /// Who the content mentions, and who of them this write mentioned
    /// first (for notifications); empty changes when the content stayed.
    pub mentioned: Mentioned,
    /// Why this write flagged the post (a word filter's `flag`), if it
    /// did: the caller records the automated moderation action.
    pub flagged: Option<HoldReason>,
}

/// Inserts one `post_tags` row per tag, in one statement.
async fn insert_tags(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    post_id: i64,
    tags: &[String],
    created_at: i64,
) -> Result<(), DomainError> {
    if tags.is_empty() {
        return Ok(());
    }
    let values: Vec<String> = (0..tags.len())
        .map(|index| format!("($1, $2, ${})", index + 3))
        .collect();
    let sql = format!(
        "INSERT INTO post_tags (post_id, created_at, tag) VALUES {} ON CONFLICT DO NOTHING",
        values.join(", ")
    );
    let mut statement = sqlx::query(&sql).bind(post_id).bind(created_at);
    for tag in tags {
        statement = statement.bind(tag.clone());
    }
    statement.execute(&mut **tx).await?;
    Ok(())
}

/// Creates a post, its tag rows and its mentions; a held post is stored
/// unpublished and held, a flagged one flagged, each with its reason.
pub async fn create(tx: &mut Tx<'_>, new: NewPost) -> Result<WrittenPost, DomainError> {
    let now = now_millis();
    let held = matches!(new.review, Review::Hold(_));
    let new_flag = new.review.flagged();
    let moderation = match new.review {
        Review::Flag(_) => "flagged",
        Review::Publish | Review::Hold(_) => "none",
    };
    let row: PostRow = sqlx::query_as(&format!(
        "INSERT INTO posts (author_id, title, content, tags, published, moderation, held, \
         review_reason, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING {RETURNING_COLUMNS}"
    ))
    .bind(new.author_id)
    .bind(new.title)
    .bind(new.content)
    .bind(join_tags(&new.tags))
    .bind(new.published && !held)
    .bind(moderation)
    .bind(held)
    .bind(new.review.reason())
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    let post = Post::try_from(row)?;
    insert_tags(tx, post.id, &post.tags, post.created_at).await?;
    let mentioned = mentions::record(
        tx,
        ItemKind::Post,
        post.id,
        post.author_id,
        &post.content,
        true,
    )
    .await?;
    let data = serde_json::json!({"post": {
        "id": post.id.to_string(),
        "author_id": post.author_id.to_string(),
        "title": post.title,
        "content": post.content,
        "tags": post.tags,
        "published": post.published,
        "created_at": crate::time::rfc3339(post.created_at),
    }});
    webhooks::enqueue(tx, EventType::PostCreated, &data, post.created_at).await?;
    Ok(WrittenPost {
        post,
        mentioned,
        flagged: new_flag,
    })
}

/// Applies `changes` (title, content, tags, published switch, review) and
/// bumps `updated_at`; tag rows are replaced, and a new content's mentions
/// recorded, in the same transaction. A held post stays unpublished when
/// published (it waits for a moderator); unpublished, it is a draft no
/// longer held.
pub async fn update(
    tx: &mut Tx<'_>,
    id: i64,
    changes: PostChanges,
) -> Result<WrittenPost, DomainError> {
    let content_changed = changes.content.is_some();
    let mut sets: Vec<String> = Vec::new();
    let mut args = Vec::new();
    let mut set = |sets: &mut Vec<String>, column: &str, value: Arg| {
        args.push(value);
        sets.push(format!("{column} = ${}", args.len()));
    };
    if let Some(title) = changes.title {
        set(&mut sets, "title", Arg::Text(title));
    }
    if let Some(content) = changes.content {
        set(&mut sets, "content", Arg::Text(content));
    }
    if let Some(tags) = &changes.tags {
        set(&mut sets, "tags", Arg::Text(join_tags(tags)));
    }
    match (changes.published, &changes.review) {
        (_, Review::Hold(_)) => {
            sets.push("published = FALSE".to_owned());
            sets.push("held = TRUE".to_owned());
        }
        (Some(true), _) => sets.push("published = NOT held".to_owned()),
        (Some(false), _) => {
            sets.push("published = FALSE".to_owned());
            sets.push("held = FALSE".to_owned());
            sets.push("review_reason = NULL".to_owned());
        }
        (None, _) => {}
    }
    // Only a post no moderator has marked becomes flagged, and records it.
    let flags_it = match changes.review {
        Review::Flag(_) => {
            let (moderation,): (String,) =
                sqlx::query_as("SELECT moderation FROM posts WHERE id = $1")
                    .bind(id)
                    .fetch_optional(&mut **tx)
                    .await?
                    .ok_or(DomainError::NotFound("post"))?;
            moderation == "none"
        }
        Review::Publish | Review::Hold(_) => false,
    };
    if flags_it {
        sets.push(
            "moderation = CASE WHEN moderation = 'none' THEN 'flagged' ELSE moderation END"
                .to_owned(),
        );
    }
    if let Some(reason) = changes.review.reason() {
        set(&mut sets, "review_reason", Arg::Text(reason));
    }
    set(&mut sets, "updated_at", Arg::Int(now_millis()));
    args.push(Arg::Int(id));
    let sql = format!(
        "UPDATE posts SET {} WHERE id = ${} RETURNING {RETURNING_COLUMNS}",
        sets.join(", "),
        args.len()
    );
    let row: Option<PostRow> = bind_all(sqlx::query_as(&sql), args)
        .fetch_optional(&mut **tx)
        .await?;
    let post = Post::try_from(row.ok_or(DomainError::NotFound("post"))?)?;
    if changes.tags.is_some() {
        sqlx::query("DELETE FROM post_tags WHERE post_id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await?;
        insert_tags(tx, post.id, &post.tags, post.created_at).await?;
    }
    let mentioned = if content_changed {
        mentions::record(
            tx,
            ItemKind::Post,
            post.id,
            post.author_id,
            &post.content,
            false,
        )
        .await?
    } else {
        Mentioned::default()
    };
    Ok(WrittenPost {
        post,
        mentioned,
        flagged: if flags_it {
            changes.review.flagged()
        } else {
            None
        },
    })
}

/// Post `id` read in a unit of work and held until it commits (`FOR
/// UPDATE` on PostgreSQL; SQLite's units of work hold the write lock).
/// Every write to a post's thread and every moderation of the post takes
/// it first, so they queue in one order and never deadlock.
pub async fn lock(tx: &mut Tx<'_>, id: i64) -> Result<Post, DomainError> {
    let row: Option<PostRow> = sqlx::query_as(&format!(
        "SELECT {POST_COLUMNS} FROM posts p WHERE p.id = $1{}",
        Dialect::of(tx).for_update()
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or(DomainError::NotFound("post"))?.try_into()
}

/// Deletes a post for good; its tags, reports and replies go with it.
pub async fn delete(tx: &mut Tx<'_>, id: i64) -> Result<(), DomainError> {
    let deleted = sqlx::query("DELETE FROM posts WHERE id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await?;
    if deleted.rows_affected() == 0 {
        return Err(DomainError::NotFound("post"));
    }
    Ok(())
}
