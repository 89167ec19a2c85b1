//! Blocks and mutes: one row per (member, other member) holding either or
//! both, and the rule of interaction between two members
//! ([`may_interact`] on the [`Standing`] read in the unit of work).

use crate::notifications::{self, Marked};
use crate::time::now_millis;
use crate::{DomainError, Tx};

/// Most members one member blocks.
pub const MAX_BLOCKS: i64 = 10_000;

/// Most members one member mutes at once.
pub const MAX_MUTES: i64 = 10_000;

/// The blocks between two members, `actor` and `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Standing {
    /// `actor` blocks `other`.
    pub blocks: bool,
    /// `other` blocks `actor`.
    pub blocked_by: bool,
}

/// Whether `actor` may reply to, react to or follow `other`'s content or
/// profile: not while a block stands either way (403 `BLOCKED`). The
/// message is the same both ways, so it does not tell the blocked member
/// who blocked whom.
pub fn may_interact(standing: Standing) -> Result<(), DomainError> {
    if standing.blocks || standing.blocked_by {
        Err(DomainError::Blocked(
            "a block stands between you and this member".to_owned(),
        ))
    } else {
        Ok(())
    }
}

/// The blocks between `actor` and `other`, as the unit of work sees them.
pub async fn standing_in(tx: &mut Tx<'_>, actor: i64, other: i64) -> Result<Standing, DomainError> {
    let blockers: Vec<(i64,)> = sqlx::query_as(
        "SELECT user_id FROM member_relations WHERE blocked_at IS NOT NULL \
         AND ((user_id = $1 AND other_id = $2) OR (user_id = $2 AND other_id = $1))",
    )
    .bind(actor)
    .bind(other)
    .fetch_all(&mut **tx)
    .await?;
    Ok(Standing {
        blocks: blockers.contains(&(actor,)),
        blocked_by: blockers.contains(&(other,)),
    })
}

/// [`may_interact`] between `actor` and the author of what they act on
/// (nothing stands between a member and their own content, nor a
/// placeholder without an author).
pub async fn refuse_if_blocked(
    tx: &mut Tx<'_>,
    actor: i64,
    author: Option<i64>,
) -> Result<(), DomainError> {
    match author {
        Some(author) if author != actor => may_interact(standing_in(tx, actor, author).await?),
        _ => Ok(()),
    }
}

/// Forgets `user_id`'s mutes that have ended, so rows stay bounded by the
/// mutes in force.
async fn drop_ended_mutes(tx: &mut Tx<'_>, user_id: i64, now: i64) -> Result<(), DomainError> {
    sqlx::query(
        "DELETE FROM member_relations WHERE user_id = $1 AND blocked_at IS NULL \
         AND mute_expires_at <= $2",
    )
    .bind(user_id)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "UPDATE member_relations SET muted_at = NULL, mute_expires_at = NULL \
         WHERE user_id = $1 AND mute_expires_at <= $2",
    )
    .bind(user_id)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Refuses a new relation of `user_id` beyond `max` of the kind `marked`
/// (a column that is set on the rows of that kind).
async fn check_room(
    tx: &mut Tx<'_>,
    user_id: i64,
    marked: &str,
    max: i64,
    what: &str,
) -> Result<(), DomainError> {
    let (held,): (i64,) = sqlx::query_as(&format!(
        "SELECT COUNT(*) FROM member_relations WHERE user_id = $1 AND {marked} IS NOT NULL"
    ))
    .bind(user_id)
    .fetch_one(&mut **tx)
    .await?;
    if held >= max {
        return Err(DomainError::Invalid {
            field: "id",
            reason: format!("a member {what} at most {max} members"),
        });
    }
    Ok(())
}

/// Whether `user_id` holds a relation to `other_id` whose column `marked`
/// is set.
async fn holds(
    tx: &mut Tx<'_>,
    user_id: i64,
    other_id: i64,
    marked: &str,
) -> Result<bool, DomainError> {
    let row: Option<(i64,)> = sqlx::query_as(&format!(
        "SELECT user_id FROM member_relations \
         WHERE user_id = $1 AND other_id = $2 AND {marked} IS NOT NULL"
    ))
    .bind(user_id)
    .bind(other_id)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.is_some())
}

/// `user_id` blocks `other_id` (again: nothing changes), the follows
/// between them end, both ways, and the notifications `other_id` caused
/// `user_id` are marked read; at most [`MAX_BLOCKS`] (422 `id`). The
/// caller has checked that `user_id` may see `other_id` and is not them.
pub async fn block(tx: &mut Tx<'_>, user_id: i64, other_id: i64) -> Result<(), DomainError> {
    if !holds(tx, user_id, other_id, "blocked_at").await? {
        check_room(tx, user_id, "blocked_at", MAX_BLOCKS, "blocks").await?;
        sqlx::query(
            "INSERT INTO member_relations (user_id, other_id, blocked_at) VALUES ($1, $2, $3) \
             ON CONFLICT (user_id, other_id) DO UPDATE SET blocked_at = excluded.blocked_at",
        )
        .bind(user_id)
        .bind(other_id)
        .bind(now_millis())
        .execute(&mut **tx)
        .await?;
    }
    sqlx::query(
        "DELETE FROM follows WHERE (follower_id = $1 AND followed_id = $2) \
         OR (follower_id = $2 AND followed_id = $1)",
    )
    .bind(user_id)
    .bind(other_id)
    .execute(&mut **tx)
    .await?;
    notifications::mark_read(tx, user_id, Marked::From(other_id)).await?;
    Ok(())
}

/// `user_id` no longer blocks `other_id` (also when they did not).
pub async fn unblock(tx: &mut Tx<'_>, user_id: i64, other_id: i64) -> Result<(), DomainError> {
    sqlx::query(
        "UPDATE member_relations SET blocked_at = NULL \
         WHERE user_id = $1 AND other_id = $2 AND blocked_at IS NOT NULL",
    )
    .bind(user_id)
    .bind(other_id)
    .execute(&mut **tx)
    .await?;
    forget_empty(tx, user_id, other_id).await
}

/// `user_id` mutes `other_id` until `expires_at` (`None`: until unmuted),
/// replacing a mute they had, and marks read the notifications
/// `other_id` caused them; at most [`MAX_MUTES`] in force (422 `id`).
/// The caller has checked that `user_id` may see `other_id`, is not them,
/// and that `expires_at` is in the future.
pub async fn mute(
    tx: &mut Tx<'_>,
    user_id: i64,
    other_id: i64,
    expires_at: Option<i64>,
) -> Result<(), DomainError> {
    let now = now_millis();
    drop_ended_mutes(tx, user_id, now).await?;
    if !holds(tx, user_id, other_id, "muted_at").await? {
        check_room(tx, user_id, "muted_at", MAX_MUTES, "mutes").await?;
    }
    sqlx::query(
        "INSERT INTO member_relations (user_id, other_id, muted_at, mute_expires_at) \
         VALUES ($1, $2, $3, $4) \
         ON CONFLICT (user_id, other_id) DO UPDATE \
         SET muted_at = excluded.muted_at, mute_expires_at = excluded.mute_expires_at",
    )
    .bind(user_id)
    .bind(other_id)
    .bind(now)
    .bind(expires_at)
    .execute(&mut **tx)
    .await?;
    notifications::mark_read(tx, user_id, Marked::From(other_id)).await?;
    Ok(())
}

/// `user_id` no longer mutes `other_id` (also when they did not).
pub async fn unmute(tx: &mut Tx<'_>, user_id: i64, other_id: i64) -> Result<(), DomainError> {
    sqlx::query(
        "UPDATE member_relations SET muted_at = NULL, mute_expires_at = NULL \
         WHERE user_id = $1 AND other_id = $2 AND muted_at IS NOT NULL",
    )
    .bind(user_id)
    .bind(other_id)
    .execute(&mut **tx)
    .await?;
    forget_empty(tx, user_id, other_id).await
}

/// Deletes the row of a pair that holds neither a block nor a mute.
async fn forget_empty(tx: &mut Tx<'_>, user_id: i64, other_id: i64) -> Result<(), DomainError> {
    sqlx::query(
        "DELETE FROM member_relations WHERE user_id = $1 AND other_id = $2 \
         AND blocked_at IS NULL AND muted_at IS NULL",
    )
    .bind(user_id)
    .bind(other_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_either_way_refuses_interaction() {
        let refused = |blocks, blocked_by| {
            matches!(
                may_interact(Standing { blocks, blocked_by }),
                Err(DomainError::Blocked(_))
            )
        };
        assert!(!refused(false, false));
        assert!(refused(true, false));
        assert!(refused(false, true));
        assert!(refused(true, true));
    }
}
