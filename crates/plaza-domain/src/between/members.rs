//! Pages of members as the lists of this module show them (followers,
//! follows, blocks, mutes): newest first by the time each was listed,
//! ties broken by the higher user id, continued after a cursor.

use sqlx::FromRow;

use crate::users::{USER_COLUMNS, User, UserRow};
use crate::{Database, DomainError};

/// Where a page of members ends: the last member's time and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberCursor {
    pub at: i64,
    pub user_id: i64,
}

/// A member on a page, with when they were listed (followed, blocked,
/// muted) and, for a mute, when it ends.
#[derive(Debug, Clone)]
pub struct Listed {
    pub user: User,
    pub at: i64,
    pub expires_at: Option<i64>,
}

/// One page of members.
#[derive(Debug, Clone)]
pub struct MemberPage {
    pub members: Vec<Listed>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<MemberCursor>,
}

#[derive(FromRow)]
struct MemberRow {
    #[sqlx(flatten)]
    user: UserRow,
    listed_at: i64,
    listed_expires_at: Option<i64>,
}

/// Which list a page is of (fixed SQL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MemberList {
    /// The members who follow `$1`.
    Followers,
    /// The members `$1` follows.
    Following,
    /// The members `$1` blocks.
    Blocks,
    /// The members `$1` mutes, the mute in force at `$2`.
    Mutes,
}

impl MemberList {
    /// `(source, member column, time column, expiry, condition)`.
    fn parts(
        self,
    ) -> (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    ) {
        match self {
            MemberList::Followers => (
                "follows x",
                "x.follower_id",
                "x.created_at",
                "NULL",
                "x.followed_id = $1",
            ),
            MemberList::Following => (
                "follows x",
                "x.followed_id",
                "x.created_at",
                "NULL",
                "x.follower_id = $1",
            ),
            MemberList::Blocks => (
                "member_relations x",
                "x.other_id",
                "x.blocked_at",
                "NULL",
                "x.user_id = $1 AND x.blocked_at IS NOT NULL",
            ),
            MemberList::Mutes => (
                "member_relations x",
                "x.other_id",
                "x.muted_at",
                "x.mute_expires_at",
                "x.user_id = $1 AND x.muted_at IS NOT NULL \
                 AND (x.mute_expires_at IS NULL OR x.mute_expires_at > $2)",
            ),
        }
    }
}

impl Database {
    /// A page of `list` of `user_id` (at `now`, for mutes), `limit` after
    /// `after`: one index range from the cursor.
    pub(super) async fn member_page(
        &self,
        list: MemberList,
        user_id: i64,
        now: i64,
        after: Option<MemberCursor>,
        limit: i64,
    ) -> Result<MemberPage, DomainError> {
        let after = after.unwrap_or(MemberCursor {
            at: i64::MAX,
            user_id: i64::MAX,
        });
        let (source, member, time, expiry, condition) = list.parts();
        let columns = USER_COLUMNS
            .split(", ")
            .map(|column| format!("u.{column}"))
            .collect::<Vec<_>>()
            .join(", ");
        let rows: Vec<MemberRow> = sqlx::query_as(&format!(
            "SELECT {columns}, {time} AS listed_at, {expiry} AS listed_expires_at \
             FROM {source} JOIN users u ON u.id = {member} \
             WHERE {condition} AND ({time} < $3 OR ({time} = $3 AND {member} < $4)) \
             ORDER BY {time} DESC, {member} DESC LIMIT $5"
        ))
        .bind(user_id)
        .bind(now)
        .bind(after.at)
        .bind(after.user_id)
        .bind(limit + 1)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        let more = rows.len() as i64 > limit;
        let mut members = Vec::with_capacity(rows.len());
        let mut next = None;
        for row in rows.into_iter().take(usize::try_from(limit).unwrap_or(0)) {
            next = Some(MemberCursor {
                at: row.listed_at,
                user_id: row.user.id,
            });
            members.push(Listed {
                user: User::try_from(row.user)?,
                at: row.listed_at,
                expires_at: row.listed_expires_at,
            });
        }
        Ok(MemberPage {
            members,
            next: next.filter(|_| more),
        })
    }
}
