//! Writing notifications: [`notify`], which a cause calls inside its own
//! unit of work (the rule of [`super::policy`] asked on facts read there,
//! reactions grouped, the push outbox filled), and marking them read.

use super::model::{Channels, EmailChoice, Kind};
use super::policy::{self, Facts, Relationship};
use super::preferences::channels_of;
use crate::dialect::{Dialect, json_list};
use crate::silences;
use crate::users::{Role, UserStatus};
use crate::{DomainError, Flag, Tx};

/// How long a group of reactions to one item stays open for more.
pub const GROUP_WINDOW_MS: i64 = 3_600_000;

/// How long a push is tried (429 and 5xx answers are retried with backoff
/// until then).
pub const PUSH_LIFETIME_MS: i64 = 3_600_000;

/// Most notifications one [`mark_read`] names.
pub const MAX_MARKED: usize = 100;

/// A notification to write, as its cause knows it.
pub struct NewNotification<'a> {
    pub recipient_id: i64,
    pub kind: Kind,
    /// Who acted; `None` for what nobody did in person. Moderators are not
    /// shown on what they decided ([`Kind::Moderation`], [`Kind::Warning`],
    /// [`Kind::Appeal`]), but nobody is notified of their own action.
    pub actor_id: Option<i64>,
    /// The thread's post.
    pub post_id: Option<i64>,
    /// The reply it is about; `None` when it is about the post.
    pub reply_id: Option<i64>,
    pub emoji: Option<String>,
    pub text: Option<String>,
    /// Whether a member (by id and role) may see what it is about: the
    /// cause's own visibility rule, so a notification shows nothing its
    /// recipient could not read.
    pub seen_by: &'a (dyn Fn(i64, Role) -> bool + Send + Sync),
}

impl Kind {
    /// Whether the list shows who acted.
    fn shows_actor(self) -> bool {
        !matches!(self, Kind::Moderation | Kind::Warning | Kind::Appeal)
    }
}

/// A recipient as [`notify`] reads them: their role, whether they are
/// active and their address verified, what stands between them and the
/// actor, and their channels for the notification's type.
struct Recipient {
    role: Role,
    active: bool,
    verified: bool,
    relationship: Option<Relationship>,
    channels: Channels,
}

/// The row of [`Recipient`]: role, status, verified since, the stored
/// email and push choices for the type, the recipient's block and mute of
/// the actor (since, since, until) and the actor's block of the recipient.
type RecipientRow = (
    String,
    String,
    Option<i64>,
    Option<String>,
    Option<Flag>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

/// `recipient_id` as [`Recipient`], toward `actor_id` (nobody stands
/// between a member and themselves or nobody), in one statement; `None`
/// when there is no such user. A mute counts until its end.
async fn recipient_in(
    tx: &mut Tx<'_>,
    recipient_id: i64,
    actor_id: Option<i64>,
    kind: Kind,
    now: i64,
) -> Result<Option<Recipient>, DomainError> {
    let other = actor_id.filter(|actor| *actor != recipient_id);
    let row: Option<RecipientRow> = sqlx::query_as(
        "SELECT u.role, u.status, u.email_verified_at, c.email, c.push, \
           own.blocked_at, own.muted_at, own.mute_expires_at, theirs.blocked_at \
         FROM users u \
         LEFT JOIN notification_preferences c ON c.user_id = u.id AND c.type = $2 \
         LEFT JOIN member_relations own ON own.user_id = u.id AND own.other_id = $3 \
         LEFT JOIN member_relations theirs ON theirs.user_id = $3 AND theirs.other_id = u.id \
         WHERE u.id = $1",
    )
    .bind(recipient_id)
    .bind(kind.as_str())
    .bind(other)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((role, status, verified_at, email, push, blocks, mutes, mute_ends, blocked_by)) = row
    else {
        return Ok(None);
    };
    let relationship = if blocks.is_some() {
        Some(Relationship::Blocks)
    } else if blocked_by.is_some() {
        Some(Relationship::BlockedBy)
    } else if mutes.is_some() && mute_ends.is_none_or(|end| end > now) {
        Some(Relationship::Mutes)
    } else {
        None
    };
    Ok(Some(Recipient {
        role: Role::parse(&role).unwrap_or(Role::User),
        active: UserStatus::parse(&status) == Some(UserStatus::Active),
        verified: verified_at.is_some(),
        relationship,
        channels: channels_of(kind, email.as_deref(), push),
    }))
}

/// Writes `new` in `tx` if [`policy::may_notify`] lets it through: a new
/// unread notification, or, for a reaction, the open group of reactions
/// to the same item updated (the newest actor and emoji, the count in
/// `text`). Queues its push to every subscription of the recipient whose
/// push preference for the type is on, and marks its mail due as their
/// email preference says (none to an unverified address). Answers the
/// notification's id, or `None` when nobody was notified.
pub async fn notify(tx: &mut Tx<'_>, new: NewNotification<'_>) -> Result<Option<i64>, DomainError> {
    let now = crate::time::now_millis();
    let Some(recipient) = recipient_in(tx, new.recipient_id, new.actor_id, new.kind, now).await?
    else {
        return Ok(None);
    };
    let actor_silenced = match new.actor_id.filter(|actor| *actor != new.recipient_id) {
        Some(actor_id) => silences::is_silenced(tx, actor_id, now).await?,
        None => false,
    };
    let facts = Facts {
        kind: new.kind,
        recipient_id: new.recipient_id,
        recipient_active: recipient.active,
        actor_id: new.actor_id,
        recipient_sees_subject: (new.seen_by)(new.recipient_id, recipient.role),
        relationship: recipient.relationship,
        actor_silenced,
    };
    if let Err(withheld) = policy::may_notify(&facts) {
        tracing::debug!(
            recipient = new.recipient_id,
            kind = new.kind.as_str(),
            ?withheld,
            "notification withheld"
        );
        return Ok(None);
    }
    let channels = recipient.channels;
    let id = write_row(tx, &new, channels, recipient.verified, now).await?;
    if channels.push {
        queue_pushes(tx, new.recipient_id, id, now).await?;
    }
    Ok(Some(id))
}

/// Inserts the row of `new`, or joins the open group of reactions to its
/// item; answers its id.
async fn write_row(
    tx: &mut Tx<'_>,
    new: &NewNotification<'_>,
    channels: Channels,
    verified: bool,
    now: i64,
) -> Result<i64, DomainError> {
    let actor_id = new.actor_id.filter(|_| new.kind.shows_actor());
    let mail_state = if verified {
        channels.email.mail_state()
    } else {
        EmailChoice::Off.mail_state()
    };
    if new.kind != Kind::Reaction {
        let (id,): (i64,) = sqlx::query_as(
            "INSERT INTO notifications (user_id, type, actor_id, post_id, reply_id, emoji, text, \
               created_at, updated_at, mail_state) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9) RETURNING id",
        )
        .bind(new.recipient_id)
        .bind(new.kind.as_str())
        .bind(actor_id)
        .bind(new.post_id)
        .bind(new.reply_id)
        .bind(new.emoji.clone())
        .bind(new.text.clone())
        .bind(now)
        .bind(mail_state)
        .fetch_one(&mut **tx)
        .await?;
        return Ok(id);
    }
    // One open group per member and item: a group over an hour old is
    // closed first, then the unique index makes two reactions at once
    // meet in one row (the second waits for the first and updates it).
    let group_key = format!(
        "reaction:{}:{}",
        new.post_id.unwrap_or(0),
        new.reply_id.unwrap_or(0)
    );
    sqlx::query(
        "UPDATE notifications SET group_key = NULL \
         WHERE user_id = $1 AND group_key = $2 AND created_at <= $3",
    )
    .bind(new.recipient_id)
    .bind(group_key.clone())
    .bind(now - GROUP_WINDOW_MS)
    .execute(&mut **tx)
    .await?;
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO notifications (user_id, type, actor_id, post_id, reply_id, emoji, text, \
           group_key, group_count, created_at, updated_at, mail_state) \
         VALUES ($1, 'reaction', $2, $3, $4, $5, '1', $6, 1, $7, $7, $8) \
         ON CONFLICT (user_id, group_key) WHERE group_key IS NOT NULL DO UPDATE SET \
           actor_id = EXCLUDED.actor_id, emoji = EXCLUDED.emoji, \
           group_count = notifications.group_count + 1, \
           text = CAST(notifications.group_count + 1 AS TEXT), \
           updated_at = EXCLUDED.updated_at \
         RETURNING id",
    )
    .bind(new.recipient_id)
    .bind(actor_id)
    .bind(new.post_id)
    .bind(new.reply_id)
    .bind(new.emoji.clone())
    .bind(group_key)
    .bind(now)
    .bind(mail_state)
    .fetch_one(&mut **tx)
    .await?;
    Ok(id)
}

/// Queues a push of notification `id` to every subscription of `user_id`.
/// A push of it still waiting (a group of reactions that grew) is due
/// again at once with its attempts counted afresh, so a claim in flight
/// does not remove it and the newest state goes out.
async fn queue_pushes(tx: &mut Tx<'_>, user_id: i64, id: i64, now: i64) -> Result<(), DomainError> {
    sqlx::query(
        "INSERT INTO push_deliveries (subscription_id, notification_id, attempts, \
           next_attempt_at, expires_at) \
         SELECT s.id, $1, 0, $2, $3 FROM push_subscriptions s WHERE s.user_id = $4 \
         ON CONFLICT (subscription_id, notification_id) DO UPDATE SET attempts = 0, \
           next_attempt_at = EXCLUDED.next_attempt_at, expires_at = EXCLUDED.expires_at, \
           claimed_by = NULL",
    )
    .bind(id)
    .bind(now)
    .bind(now + PUSH_LIFETIME_MS)
    .bind(user_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Which of a member's notifications to mark read.
#[derive(Debug, Clone)]
pub enum Marked {
    All,
    /// These (at most [`MAX_MARKED`]); ids that are not the member's, or
    /// read already, are passed over.
    Ids(Vec<i64>),
    /// Those this member caused (when the reader blocks or mutes them,
    /// their notifications leave the list and the unread count).
    From(i64),
}

/// Marks `user_id`'s notifications read; a group of reactions read is
/// closed, so the next reaction starts a new one. Answers how many were
/// unread.
pub async fn mark_read(tx: &mut Tx<'_>, user_id: i64, marked: Marked) -> Result<u64, DomainError> {
    let now = crate::time::now_millis();
    let done = match marked {
        Marked::All => {
            sqlx::query(
                "UPDATE notifications SET read_at = $1, group_key = NULL \
                 WHERE user_id = $2 AND read_at IS NULL",
            )
            .bind(now)
            .bind(user_id)
            .execute(&mut **tx)
            .await?
        }
        Marked::From(actor_id) => {
            sqlx::query(
                "UPDATE notifications SET read_at = $1, group_key = NULL \
                 WHERE user_id = $2 AND actor_id = $3 AND read_at IS NULL",
            )
            .bind(now)
            .bind(user_id)
            .bind(actor_id)
            .execute(&mut **tx)
            .await?
        }
        Marked::Ids(ids) => {
            let ids = json_list(&ids)?;
            sqlx::query(&format!(
                "UPDATE notifications SET read_at = $1, group_key = NULL \
                 WHERE user_id = $2 AND read_at IS NULL AND id IN ({})",
                Dialect::of(tx).json_integers("$3")
            ))
            .bind(now)
            .bind(user_id)
            .bind(ids)
            .execute(&mut **tx)
            .await?
        }
    };
    Ok(done.rows_affected())
}
