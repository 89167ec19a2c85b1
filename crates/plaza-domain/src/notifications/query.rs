//! Reading notifications: a member's list newest first by a keyset cursor
//! on `(updated_at, id)`, one index range however many they hold; their
//! unread count, one row kept by triggers and read with their session;
//! and what changed since a time, for the live stream.

use super::model::{NOTIFICATION_COLUMNS, NOTIFICATION_SOURCE, Notification, NotificationRow};
use crate::{Database, DomainError};

/// How many notifications of the user `u.id` (the statement's `users u`)
/// are unread: the row the triggers keep, read in the statement that
/// resolves a session or token, so the count costs no statement of its
/// own. Negative never reaches a reader ([`unread_count`]).
pub(crate) const UNREAD_OF_USER_SQL: &str =
    "COALESCE((SELECT nc.unread FROM notification_counts nc WHERE nc.user_id = u.id), 0)";

/// The unread count [`UNREAD_OF_USER_SQL`] read.
pub(crate) fn unread_count(read: i64) -> i64 {
    read.max(0)
}

/// Most notifications on one page.
pub const MAX_PAGE: i64 = 100;

/// Where a page continues: after the notification with this
/// `(updated_at, id)`, going older.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub updated_at: i64,
    pub id: i64,
}

/// What a page asks for.
#[derive(Debug, Clone, Copy)]
pub struct NotificationQuery {
    pub user_id: i64,
    pub unread_only: bool,
    /// 1 to [`MAX_PAGE`].
    pub limit: i64,
    pub after: Option<Cursor>,
}

/// A page of a member's notifications, newest first.
#[derive(Debug, Clone)]
pub struct NotificationPage {
    pub notifications: Vec<Notification>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
}

/// Rows the stream reads at once; it reads on until it has them all.
const STREAM_CHUNK: i64 = 200;

fn rows_into(rows: Vec<NotificationRow>) -> Result<Vec<Notification>, DomainError> {
    rows.into_iter().map(Notification::try_from).collect()
}

impl Database {
    /// A page of `query.user_id`'s notifications, newest first (the newest
    /// event of a group counts): one range of `notifications_list` (or of
    /// `notifications_unread` with `unread_only`) from the cursor, so the
    /// hundredth page costs what the first does.
    pub async fn notification_page(
        &self,
        query: NotificationQuery,
    ) -> Result<NotificationPage, DomainError> {
        let limit = query.limit.clamp(1, MAX_PAGE);
        let unread = if query.unread_only {
            " AND n.read_at IS NULL"
        } else {
            ""
        };
        let after = query.after.unwrap_or(Cursor {
            updated_at: i64::MAX,
            id: i64::MAX,
        });
        let rows: Vec<NotificationRow> = sqlx::query_as(&format!(
            "SELECT {NOTIFICATION_COLUMNS} FROM {NOTIFICATION_SOURCE} \
             WHERE n.user_id = $1{unread} AND (n.updated_at, n.id) < ($2, $3) \
             ORDER BY n.updated_at DESC, n.id DESC LIMIT $4"
        ))
        .bind(query.user_id)
        .bind(after.updated_at)
        .bind(after.id)
        .bind(limit + 1)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        let mut notifications = rows_into(rows)?;
        let next = if notifications.len() as i64 > limit {
            notifications.truncate(limit as usize);
            notifications.last().map(|last| Cursor {
                updated_at: last.updated_at,
                id: last.id,
            })
        } else {
            None
        };
        Ok(NotificationPage {
            notifications,
            next,
        })
    }

    /// `user_id`'s notifications created or grown at `since` or later,
    /// oldest first, read in chunks until every one is in.
    pub async fn notification_changes_since(
        &self,
        user_id: i64,
        since: i64,
    ) -> Result<Vec<Notification>, DomainError> {
        let sql = format!(
            "SELECT {NOTIFICATION_COLUMNS} FROM {NOTIFICATION_SOURCE} \
             WHERE n.user_id = $1 AND (n.updated_at, n.id) > ($2, $3) \
             ORDER BY n.updated_at, n.id LIMIT $4"
        );
        let mut lease = self.lease().await?;
        let mut changed = Vec::new();
        let (mut at, mut after_id) = (since, 0);
        loop {
            let rows: Vec<NotificationRow> = sqlx::query_as(&sql)
                .bind(user_id)
                .bind(at)
                .bind(after_id)
                .bind(STREAM_CHUNK)
                .fetch_all(&mut *lease)
                .await?;
            let full = rows.len() as i64 == STREAM_CHUNK;
            let chunk = rows_into(rows)?;
            if let Some(last) = chunk.last() {
                (at, after_id) = (last.updated_at, last.id);
            }
            changed.extend(chunk);
            if !full {
                return Ok(changed);
            }
        }
    }

    /// Notification `id`, as its recipient sees it.
    pub async fn notification_by_id(&self, id: i64) -> Result<Notification, DomainError> {
        let row: Option<NotificationRow> = sqlx::query_as(&format!(
            "SELECT {NOTIFICATION_COLUMNS} FROM {NOTIFICATION_SOURCE} WHERE n.id = $1"
        ))
        .bind(id)
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        row.ok_or(DomainError::NotFound("notification"))?.try_into()
    }
}
