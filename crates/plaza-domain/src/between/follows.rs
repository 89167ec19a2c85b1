//! Follows: a member follows another (not while a block stands between
//! them), and the lists of a member's followers and follows.

use super::members::{MemberCursor, MemberList, MemberPage};
use super::relations::{may_interact, standing_in};
use crate::time::now_millis;
use crate::{Database, DomainError, Tx};

/// `follower_id` follows `followed_id` (again: nothing changes): 403
/// `BLOCKED` while either blocks the other. Answers whether the follow is
/// new. The caller has checked that the follower may see the followed
/// member and is not them.
pub async fn follow(
    tx: &mut Tx<'_>,
    follower_id: i64,
    followed_id: i64,
) -> Result<bool, DomainError> {
    may_interact(standing_in(tx, follower_id, followed_id).await?)?;
    let inserted = sqlx::query(
        "INSERT INTO follows (follower_id, followed_id, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT DO NOTHING",
    )
    .bind(follower_id)
    .bind(followed_id)
    .bind(now_millis())
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}

/// `follower_id` no longer follows `followed_id` (also when they did not).
pub async fn unfollow(
    tx: &mut Tx<'_>,
    follower_id: i64,
    followed_id: i64,
) -> Result<(), DomainError> {
    sqlx::query("DELETE FROM follows WHERE follower_id = $1 AND followed_id = $2")
        .bind(follower_id)
        .bind(followed_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Database {
    /// A page of the members who follow `user_id`, newest first.
    pub async fn followers(
        &self,
        user_id: i64,
        after: Option<MemberCursor>,
        limit: i64,
    ) -> Result<MemberPage, DomainError> {
        self.member_page(MemberList::Followers, user_id, 0, after, limit)
            .await
    }

    /// A page of the members `user_id` follows, newest first.
    pub async fn following(
        &self,
        user_id: i64,
        after: Option<MemberCursor>,
        limit: i64,
    ) -> Result<MemberPage, DomainError> {
        self.member_page(MemberList::Following, user_id, 0, after, limit)
            .await
    }

    /// How many members follow `user_id`, and how many they follow (kept
    /// on their row by triggers).
    pub async fn follow_counts(&self, user_id: i64) -> Result<(i64, i64), DomainError> {
        let counts: Option<(i64, i64)> =
            sqlx::query_as("SELECT followers_count, following_count FROM users WHERE id = $1")
                .bind(user_id)
                .fetch_optional(&mut *self.lease().await?)
                .await?;
        counts.ok_or(DomainError::NotFound("user"))
    }

    /// A page of the members `user_id` blocks, newest first.
    pub async fn blocks_of(
        &self,
        user_id: i64,
        after: Option<MemberCursor>,
        limit: i64,
    ) -> Result<MemberPage, DomainError> {
        self.member_page(MemberList::Blocks, user_id, 0, after, limit)
            .await
    }

    /// A page of the members `user_id` mutes now, newest first, each with
    /// when the mute ends.
    pub async fn mutes_of(
        &self,
        user_id: i64,
        after: Option<MemberCursor>,
        limit: i64,
    ) -> Result<MemberPage, DomainError> {
        self.member_page(MemberList::Mutes, user_id, now_millis(), after, limit)
            .await
    }
}
