//! The mail outbox of notifications: a notification's `mail_state` says
//! which mail of it is due (`immediate`, or `daily` for the digest). The
//! job that writes the mails takes due notifications with a conditional
//! UPDATE in the unit of work that queues their mails (`outgoing_mail`),
//! so each is mailed once whichever instance takes it, and the mails go
//! out, and are retried, as every mail is.

use std::collections::{BTreeMap, HashMap};

use super::model::{
    Kind, NOTIFICATION_COLUMNS, NOTIFICATION_SOURCE, Notification, NotificationRow,
};
use super::preferences;
use crate::dialect::{Dialect, json_list};
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
    let ids = json_list(&ids)?;
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

/// A notification waiting for a digest, with how many of its member's are.
#[derive(sqlx::FromRow)]
struct WaitingRow {
    #[sqlx(flatten)]
    notification: NotificationRow,
    waiting: i64,
}

/// Takes the notifications of `members` waiting for a digest that were
/// created before `cutoff`, in `tx`: none of them is due again once `tx`
/// commits. Answers, in the order of `members`, the digest of each member
/// with a mailable address and something to list: the unread ones of the
/// types the member still mails (its email choice for the others is off
/// now), at most `listed` of them. The statements are per batch, not per
/// member: the recipients, their preferences, the waiting notifications
/// of each set of mailed types, and the taking.
pub async fn take_digests(
    tx: &mut Tx<'_>,
    members: &[i64],
    cutoff: i64,
    listed: i64,
) -> Result<Vec<Digest>, DomainError> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let dialect = Dialect::of(tx);
    let recipients: Vec<RecipientRow> = sqlx::query_as(&format!(
        "SELECT id, email, username, name, email_verified_at, status FROM users WHERE id IN ({})",
        dialect.json_integers("$1")
    ))
    .bind(json_list(members)?)
    .fetch_all(&mut **tx)
    .await?;
    let mut recipients: HashMap<i64, MailRecipient> = recipients
        .into_iter()
        .map(MailRecipient::from)
        .filter(|recipient| recipient.mailable)
        .map(|recipient| (recipient.user_id, recipient))
        .collect();
    let mailable: Vec<i64> = members
        .iter()
        .copied()
        .filter(|id| recipients.contains_key(id))
        .collect();
    let mut by_kinds: BTreeMap<Vec<Kind>, Vec<i64>> = BTreeMap::new();
    for (user_id, kinds) in preferences::mailed_kinds_in(tx, &mailable).await? {
        if !kinds.is_empty() {
            by_kinds.entry(kinds).or_default().push(user_id);
        }
    }
    let mut waiting: HashMap<i64, (Vec<Notification>, i64)> = HashMap::new();
    for (kinds, group) in by_kinds {
        let types: Vec<&str> = kinds.iter().map(|kind| kind.as_str()).collect();
        let rows: Vec<WaitingRow> = sqlx::query_as(&format!(
            "SELECT * FROM (SELECT {NOTIFICATION_COLUMNS}, \
               ROW_NUMBER() OVER (PARTITION BY n.user_id ORDER BY n.updated_at DESC, n.id DESC) AS place, \
               COUNT(*) OVER (PARTITION BY n.user_id) AS waiting \
             FROM {NOTIFICATION_SOURCE} \
             WHERE n.user_id IN ({}) AND n.mail_state = 'daily' AND n.created_at < $2 \
               AND n.read_at IS NULL AND n.type IN ({})) w \
             WHERE w.place <= $4 ORDER BY w.user_id, w.place",
            dialect.json_integers("$1"),
            dialect.json_texts("$3")
        ))
        .bind(json_list(&group)?)
        .bind(cutoff)
        .bind(json_list(&types)?)
        .bind(listed)
        .fetch_all(&mut **tx)
        .await?;
        for row in rows {
            let notification = Notification::try_from(row.notification)?;
            let entry = waiting
                .entry(notification.user_id)
                .or_insert_with(|| (Vec::new(), row.waiting));
            entry.0.push(notification);
        }
    }
    sqlx::query(&format!(
        "UPDATE notifications SET mail_state = NULL \
         WHERE user_id IN ({}) AND mail_state = 'daily' AND created_at < $2",
        dialect.json_integers("$1")
    ))
    .bind(json_list(members)?)
    .bind(cutoff)
    .execute(&mut **tx)
    .await?;
    Ok(members
        .iter()
        .filter_map(|user_id| {
            let (notifications, count) = waiting.remove(user_id)?;
            Some(Digest {
                recipient: recipients.remove(user_id)?,
                more: count - notifications.len() as i64,
                notifications,
            })
        })
        .collect())
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
