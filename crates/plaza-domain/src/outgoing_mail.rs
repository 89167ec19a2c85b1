//! Mail on its way out. A mail is queued in the unit of work of the change
//! that causes it, so it is sent exactly when that change commits, and it
//! survives a restart. Senders (one per instance) claim a due mail with a
//! conditional UPDATE that moves its next attempt to the end of the
//! sender's lease: each attempt happens on one instance, and the mail of a
//! sender that died is taken up again when its lease ends. An attempt's
//! outcome is written only by the claim that made it. Times are passed in,
//! so tests need no clock.

use sqlx::FromRow;

use crate::{Database, DomainError, Tx};

/// Where a mail stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailStatus {
    /// Waiting for its next attempt (or being attempted under a lease).
    Pending,
    /// Handed to the SMTP server or written to a file; its bodies are gone.
    Sent,
    /// Given up on; kept whole for the operators until the retention purge.
    Failed,
}

impl MailStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MailStatus::Pending => "pending",
            MailStatus::Sent => "sent",
            MailStatus::Failed => "failed",
        }
    }
}

/// A mail to queue.
#[derive(Debug, Clone)]
pub struct NewMail {
    /// What the mail is (`verify_email`, `reset_password`), for operators
    /// and metrics.
    pub kind: &'static str,
    /// The user the mail is about, if any: deleting the user deletes it.
    pub user_id: Option<i64>,
    pub recipient: String,
    pub subject: String,
    pub body_text: String,
    pub body_html: String,
    /// The one-click unsubscribe URL (RFC 8058) of a notification mail,
    /// sent as its `List-Unsubscribe`; `None` for account mails.
    pub list_unsubscribe: Option<String>,
}

/// Queues `mail` in `tx`, due at `now`; answers its id.
pub async fn enqueue(tx: &mut Tx<'_>, mail: &NewMail, now: i64) -> Result<i64, DomainError> {
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO outgoing_mail \
         (kind, user_id, recipient, subject, body_text, body_html, list_unsubscribe, status, \
          attempts, next_attempt_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 0, $8, $8) RETURNING id",
    )
    .bind(mail.kind)
    .bind(mail.user_id)
    .bind(mail.recipient.clone())
    .bind(mail.subject.clone())
    .bind(mail.body_text.clone())
    .bind(mail.body_html.clone())
    .bind(mail.list_unsubscribe.clone())
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    Ok(id)
}

/// A mail claimed for one attempt.
#[derive(Debug, Clone, FromRow)]
pub struct ClaimedMail {
    pub id: i64,
    pub kind: String,
    pub recipient: String,
    pub subject: String,
    pub body_text: String,
    pub body_html: String,
    pub list_unsubscribe: Option<String>,
    /// This attempt's number, from 1; with the claimer, it names the claim.
    pub attempts: i64,
}

/// One sender's claim of one attempt.
#[derive(Debug, Clone, Copy)]
pub struct MailClaim<'a> {
    /// The claiming sender: one id per process.
    pub owner: &'a str,
    pub now: i64,
    /// Until when the attempt holds the mail; after it, the mail is due again.
    pub lease_until: i64,
}

/// How an attempt ended, for [`Database::finish_mail_attempt`].
#[derive(Debug, Clone)]
pub enum AttemptOutcome {
    Sent,
    /// Failed; try again at `retry_at`.
    Retry {
        error: String,
        retry_at: i64,
    },
    /// Failed for good.
    Failed {
        error: String,
    },
}

/// Most characters of a delivery error kept with its mail.
const MAX_ERROR_CHARS: usize = 1000;

/// How much mail waits and how much was given up on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MailQueue {
    /// Mails not sent yet, due or waiting for a retry.
    pub pending: i64,
    /// Mails given up on and kept (until `mail_retention_days`).
    pub failed: i64,
}

/// Queues every failed mail (or only those to `recipient`) again, in `tx`:
/// pending, due at `now`, its attempts counted afresh. A failed mail keeps
/// its text, so it goes as it was written. Answers how many.
pub async fn resend_failed(
    tx: &mut Tx<'_>,
    recipient: Option<&str>,
    now: i64,
) -> Result<u64, DomainError> {
    Ok(sqlx::query(
        "UPDATE outgoing_mail SET status = 'pending', attempts = 0, next_attempt_at = $1, \
         claimed_by = NULL, finished_at = NULL \
         WHERE status = 'failed' AND body_text IS NOT NULL AND ($2 IS NULL OR recipient = $2)",
    )
    .bind(now)
    .bind(recipient)
    .execute(&mut **tx)
    .await?
    .rows_affected())
}

impl Database {
    /// The queue of outgoing mail, on every instance together.
    pub async fn mail_queue(&self) -> Result<MailQueue, DomainError> {
        let (pending, failed): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM outgoing_mail WHERE status = 'pending'), \
                    (SELECT COUNT(*) FROM outgoing_mail WHERE status = 'failed')",
        )
        .fetch_one(&mut *self.lease().await?)
        .await?;
        Ok(MailQueue { pending, failed })
    }

    /// The ids of up to `limit` mails due at `now`, the longest waiting first.
    pub async fn due_mail(&self, now: i64, limit: i64) -> Result<Vec<i64>, DomainError> {
        let rows: Vec<(i64,)> = sqlx::query_as(
            "SELECT id FROM outgoing_mail WHERE status = 'pending' AND next_attempt_at <= $1 \
             ORDER BY next_attempt_at, id LIMIT $2",
        )
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Claims an attempt at mail `id` if it is still due: one conditional
    /// UPDATE, so of senders racing for it exactly one gets it.
    pub async fn claim_mail(
        &self,
        id: i64,
        claim: MailClaim<'_>,
    ) -> Result<Option<ClaimedMail>, DomainError> {
        Ok(sqlx::query_as(
            "UPDATE outgoing_mail SET attempts = attempts + 1, next_attempt_at = $2, \
               claimed_by = $3 \
             WHERE id = $1 AND status = 'pending' AND next_attempt_at <= $4 \
             RETURNING id, kind, recipient, subject, COALESCE(body_text, '') AS body_text, \
               COALESCE(body_html, '') AS body_html, list_unsubscribe, attempts",
        )
        .bind(id)
        .bind(claim.lease_until)
        .bind(claim.owner)
        .bind(claim.now)
        .fetch_optional(&mut *self.lease().await?)
        .await?)
    }

    /// Records how the attempt `mail` (claimed by `owner`) ended, unless its
    /// lease ran out and another claim took the mail meanwhile. A sent mail
    /// loses its bodies (they hold single-use links). Answers whether the
    /// outcome was recorded.
    pub async fn finish_mail_attempt(
        &self,
        mail: &ClaimedMail,
        owner: &str,
        outcome: &AttemptOutcome,
        now: i64,
    ) -> Result<bool, DomainError> {
        let clipped = |error: &str| error.chars().take(MAX_ERROR_CHARS).collect::<String>();
        // The claim that made the attempt: its owner and attempt number.
        let (sql, at, error) = match outcome {
            AttemptOutcome::Sent => (
                "UPDATE outgoing_mail SET status = 'sent', finished_at = $4, \
                   body_text = NULL, body_html = NULL, last_error = $5 \
                 WHERE id = $1 AND claimed_by = $2 AND attempts = $3 AND status = 'pending'",
                now,
                None,
            ),
            AttemptOutcome::Retry { error, retry_at } => (
                "UPDATE outgoing_mail SET next_attempt_at = $4, last_error = $5 \
                 WHERE id = $1 AND claimed_by = $2 AND attempts = $3 AND status = 'pending'",
                *retry_at,
                Some(clipped(error)),
            ),
            AttemptOutcome::Failed { error } => (
                "UPDATE outgoing_mail SET status = 'failed', finished_at = $4, last_error = $5 \
                 WHERE id = $1 AND claimed_by = $2 AND attempts = $3 AND status = 'pending'",
                now,
                Some(clipped(error)),
            ),
        };
        let updated = sqlx::query(sql)
            .bind(mail.id)
            .bind(owner)
            .bind(mail.attempts)
            .bind(at)
            .bind(error)
            .execute(&mut *self.lease().await?)
            .await?;
        Ok(updated.rows_affected() == 1)
    }

    /// Deletes up to `limit` sent or failed mails finished before `before`,
    /// oldest first; answers how many.
    pub async fn purge_finished_mail(&self, before: i64, limit: i64) -> Result<u64, DomainError> {
        Ok(sqlx::query(
            "DELETE FROM outgoing_mail WHERE id IN \
             (SELECT id FROM outgoing_mail WHERE status <> 'pending' AND finished_at < $1 \
              ORDER BY finished_at LIMIT $2)",
        )
        .bind(before)
        .bind(limit)
        .execute(&mut *self.lease().await?)
        .await?
        .rows_affected())
    }
}
