//! The mail outbox of notifications: a notification's `mail_state` says
//! which mail of it is due (`immediate`, or `daily` for the digest). The
//! job that writes the mails takes due notifications with a conditional
//! UPDATE in the unit of work that queues their mails (`outgoing_mail`),
//! so each is mailed once whichever instance takes it, and the mails go
//! out, and are retried, as every mail is.

use super::model::{
    Kind, NOTIFICATION_COLUMNS, NOTIFICATION_SOURCE, Notification, NotificationRow,
};
use crate::dialect::Dialect;
use crate::users::UserStatus;
use crate::{Database, DomainError, Tx};

/// Whom a notification mail goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailRecipient {
    pub user_id: i64,
    pub email: String,
    pub username: String,
    pub name: Option<String>,
    /// Only a verified address of an active account is mailed.
    pub mailable: bool,
}

#[derive(sqlx::FromRow)]
struct RecipientRow {
    id: i64,
    email: String,
    username: String,
    name: Option<String>,
    email_verified_at: Option<i64>,
    status: String,
}

impl From<RecipientRow> for MailRecipient {
    fn from(row: RecipientRow) -> Self {
        MailRecipient {
            user_id: row.id,
            mailable: row.email_verified_at.is_some()
                && UserStatus::parse(&row.status) == Some(UserStatus::Active),
            email: row.email,
            username: row.username,
            name: row.name,
        }
    }
}

async fn recipient_in(tx: &mut Tx<'_>, user_id: i64) -> Result<Option<MailRecipient>, DomainError> {
    let row: Option<RecipientRow> = sqlx::query_as(
        "SELECT id, email, username, name, email_verified_at, status FROM users WHERE id = $1",
    )
    .bind(user_id)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(MailRecipient::from))
}

/// Takes up to `limit` notifications whose immediate mail is due, oldest
/// first, in `tx`: they are no longer due once `tx` commits. Answers each
/// with its recipient. Of two instances taking at once, the second finds
/// the rows the first took no longer due.
pub async fn take_immediate(
    tx: &mut Tx<'_>,
    limit: i64,
) -> Result<Vec<(Notification, MailRecipient)>, DomainError> {
    let taken: Vec<(i64,)> = sqlx::query_as(
        "UPDATE notifications SET mail_state = NULL WHERE id IN \
           (SELECT id FROM notifications WHERE mail_state = 'immediate' \
            ORDER BY created_at LIMIT $1) \
         AND mail_state = 'immediate' RETURNING id",
    )
    .bind(limit)
    .fetch_all(&mut **tx)
    .await?;
    if taken.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = taken.into_iter().map(|(id,)| id).collect();
    let ids = serde_json::to_string(&ids)
        .map_err(|error| DomainError::Database(sqlx::Error::Encode(Box::new(error))))?;
    let rows: Vec<NotificationRow> = sqlx::query_as(&format!(
        "SELECT {NOTIFICATION_COLUMNS} FROM {NOTIFICATION_SOURCE} \
         WHERE n.id IN ({}) ORDER BY n.id",
        Dialect::of(tx).json_integers("$1")
    ))
    .bind(ids)
    .fetch_all(&mut **tx)
    .await?;
    let mut taken = Vec::with_capacity(rows.len());
    for row in rows {
        let notification = Notification::try_from(row)?;
        if let Some(recipient) = recipient_in(tx, notification.user_id).await? {
            taken.push((notification, recipient));
        }
    }
    Ok(taken)
}

/// Up to `limit` members with notifications waiting for a digest that
/// were created before `cutoff`, those waiting longest first.
pub async fn digest_due(tx: &mut Tx<'_>, cutoff: i64, limit: i64) -> Result<Vec<i64>, DomainError> {
    let rows: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT user_id, created_at FROM notifications \
         WHERE mail_state = 'daily' AND created_at < $1 ORDER BY created_at LIMIT $2",
    )
    .bind(cutoff)
    .bind(limit)
    .fetch_all(&mut **tx)
    .await?;
    let mut users: Vec<i64> = Vec::new();
    for (user_id, _) in rows {
        if !users.contains(&user_id) {
            users.push(user_id);
        }
    }
    Ok(users)
}

/// One member's digest: the unread notifications it lists (newest first,
/// at most the number asked for) and how many more there were.
#[derive(Debug, Clone)]
pub struct Digest {
    pub recipient: MailRecipient,
    pub notifications: Vec<Notification>,
    pub more: i64,
}

/// Takes `user_id`'s notifications waiting for a digest created before
/// `cutoff`, in `tx`: none of them is due again once `tx` commits. Answers
/// the digest of the unread ones among them of the types `mailed` (the
/// member's email choice for the others is off now), or `None` without a
/// recipient.
pub async fn take_digest(
    tx: &mut Tx<'_>,
    user_id: i64,
    cutoff: i64,
    mailed: &[Kind],
    listed: i64,
) -> Result<Option<Digest>, DomainError> {
    let types: Vec<&str> = mailed.iter().map(|kind| kind.as_str()).collect();
    let types = serde_json::to_string(&types)
        .map_err(|error| DomainError::Database(sqlx::Error::Encode(Box::new(error))))?;
    let waiting = format!(
        "n.user_id = $1 AND n.mail_state = 'daily' AND n.created_at < $2 \
         AND n.read_at IS NULL AND n.type IN ({})",
        Dialect::of(tx).json_texts("$3")
    );
    let rows: Vec<NotificationRow> = sqlx::query_as(&format!(
        "SELECT {NOTIFICATION_COLUMNS} FROM {NOTIFICATION_SOURCE} \
         WHERE {waiting} ORDER BY n.updated_at DESC, n.id DESC LIMIT $4"
    ))
    .bind(user_id)
    .bind(cutoff)
    .bind(types.clone())
    .bind(listed)
    .fetch_all(&mut **tx)
    .await?;
    let (unread,): (i64,) = sqlx::query_as(&format!(
        "SELECT COUNT(*) FROM notifications n WHERE {waiting}"
    ))
    .bind(user_id)
    .bind(cutoff)
    .bind(types)
    .fetch_one(&mut **tx)
    .await?;
    sqlx::query(
        "UPDATE notifications SET mail_state = NULL \
         WHERE user_id = $1 AND mail_state = 'daily' AND created_at < $2",
    )
    .bind(user_id)
    .bind(cutoff)
    .execute(&mut **tx)
    .await?;
    let Some(recipient) = recipient_in(tx, user_id).await? else {
        return Ok(None);
    };
    let notifications = rows
        .into_iter()
        .map(Notification::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(Digest {
        more: unread - notifications.len() as i64,
        recipient,
        notifications,
    }))
}

/// Which mails of notifications are due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailDue {
    Immediate,
    /// Digests of what was created before this time.
    DigestBefore(i64),
}

impl Database {
    /// Whether any such mail is due: one probe of `notifications_mail_due`,
    /// so the jobs open a unit of work only when there is work.
    pub async fn notification_mail_due(&self, due: MailDue) -> Result<bool, DomainError> {
        let (state, before) = match due {
            MailDue::Immediate => ("immediate", i64::MAX),
            MailDue::DigestBefore(cutoff) => ("daily", cutoff),
        };
        let found: Option<(i64,)> = sqlx::query_as(
            "SELECT id FROM notifications WHERE mail_state = $1 AND created_at < $2 LIMIT 1",
        )
        .bind(state)
        .bind(before)
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        Ok(found.is_some())
    }
}
