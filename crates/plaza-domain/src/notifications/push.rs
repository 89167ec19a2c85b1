//! Web Push subscriptions and the push outbox. A push is queued with its
//! notification (`writes::notify`) and sent by the job runner: every
//! instance's sender claims a due push with a conditional UPDATE that
//! moves its next attempt to the end of a lease (as outgoing mail is
//! claimed), so each attempt happens on one instance and a push whose
//! sender died is due again when the lease ends. Only the claim that made
//! an attempt records its outcome.

use sqlx::FromRow;

use crate::{Database, DomainError, Tx};

/// Most subscriptions one member keeps; a new one beyond it replaces
/// their oldest.
pub const MAX_SUBSCRIPTIONS_PER_USER: i64 = 20;

/// A browser's subscription, as the member sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSubscription {
    pub user_id: i64,
    pub endpoint: String,
    /// The browser's P-256 key (base64url, as sent).
    pub p256dh: String,
    /// The browser's authentication secret (base64url, as sent).
    pub auth: String,
}

/// Stores `new` (an endpoint subscribed before, by anyone, is taken over
/// with its new keys) and drops the member's oldest subscriptions beyond
/// [`MAX_SUBSCRIPTIONS_PER_USER`]; answers its id.
pub async fn subscribe(tx: &mut Tx<'_>, new: &NewSubscription) -> Result<i64, DomainError> {
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO push_subscriptions (user_id, endpoint, p256dh, auth, created_at) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (endpoint) DO UPDATE SET user_id = EXCLUDED.user_id, \
           p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth, created_at = EXCLUDED.created_at \
         RETURNING id",
    )
    .bind(new.user_id)
    .bind(new.endpoint.clone())
    .bind(new.p256dh.clone())
    .bind(new.auth.clone())
    .bind(crate::time::now_millis())
    .fetch_one(&mut **tx)
    .await?;
    sqlx::query(
        "DELETE FROM push_subscriptions WHERE user_id = $1 AND id NOT IN \
           (SELECT id FROM push_subscriptions WHERE user_id = $1 \
            ORDER BY created_at DESC, id DESC LIMIT $2)",
    )
    .bind(new.user_id)
    .bind(MAX_SUBSCRIPTIONS_PER_USER)
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

/// Deletes `user_id`'s subscription `id` (and its pushes waiting);
/// another member's, or none, is [`DomainError::NotFound`].
pub async fn unsubscribe(tx: &mut Tx<'_>, user_id: i64, id: i64) -> Result<(), DomainError> {
    let deleted = sqlx::query("DELETE FROM push_subscriptions WHERE id = $1 AND user_id = $2")
        .bind(id)
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    if deleted.rows_affected() == 0 {
        return Err(DomainError::NotFound("subscription"));
    }
    Ok(())
}

/// A push claimed for one attempt.
#[derive(Debug, Clone, FromRow)]
pub struct ClaimedPush {
    pub id: i64,
    pub subscription_id: i64,
    pub notification_id: i64,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    /// This attempt's number, from 1; with the claimer, it names the claim.
    pub attempts: i64,
    /// After this, a failing push is given up on.
    pub expires_at: i64,
}

/// One sender's claim of one attempt.
#[derive(Debug, Clone, Copy)]
pub struct PushClaim<'a> {
    /// The claiming sender: one id per process.
    pub owner: &'a str,
    pub now: i64,
    /// Until when the attempt holds the push; after it, the push is due again.
    pub lease_until: i64,
}

/// How an attempt ended, for [`Database::finish_push_attempt`].
#[derive(Debug, Clone)]
pub enum PushOutcome {
    /// The push service took it; the push is done.
    Delivered,
    /// The subscription is gone (404 or 410): it is deleted, and its
    /// pushes with it.
    Gone,
    /// Try again at `retry_at`.
    Retry { error: String, retry_at: i64 },
    /// Given up on (refused for good, or failing past its lifetime).
    Dropped,
}

/// Most characters of a delivery error kept with its push.
const MAX_ERROR_CHARS: usize = 1000;

impl Database {
    /// The ids of up to `limit` pushes due at `now`, the longest waiting first.
    pub async fn due_pushes(&self, now: i64, limit: i64) -> Result<Vec<i64>, DomainError> {
        let rows: Vec<(i64,)> = sqlx::query_as(
            "SELECT id FROM push_deliveries WHERE next_attempt_at <= $1 \
             ORDER BY next_attempt_at, id LIMIT $2",
        )
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Claims an attempt at push `id` if it is still due: one conditional
    /// UPDATE, so of senders racing for it exactly one gets it.
    pub async fn claim_push(
        &self,
        id: i64,
        claim: PushClaim<'_>,
    ) -> Result<Option<ClaimedPush>, DomainError> {
        let mut lease = self.lease().await?;
        let claimed: Option<(i64,)> = sqlx::query_as(
            "UPDATE push_deliveries SET attempts = attempts + 1, next_attempt_at = $2, \
               claimed_by = $3 \
             WHERE id = $1 AND next_attempt_at <= $4 RETURNING id",
        )
        .bind(id)
        .bind(claim.lease_until)
        .bind(claim.owner)
        .bind(claim.now)
        .fetch_optional(&mut *lease)
        .await?;
        if claimed.is_none() {
            return Ok(None);
        }
        Ok(sqlx::query_as(
            "SELECT d.id, d.subscription_id, d.notification_id, s.endpoint, s.p256dh, s.auth, \
               d.attempts, d.expires_at \
             FROM push_deliveries d JOIN push_subscriptions s ON s.id = d.subscription_id \
             WHERE d.id = $1 AND d.claimed_by = $2",
        )
        .bind(id)
        .bind(claim.owner)
        .fetch_optional(&mut *lease)
        .await?)
    }

    /// Records how the attempt `push` (claimed by `owner`) ended, unless its
    /// lease ran out and another claim took the push meanwhile (or the push
    /// was queued afresh). Answers whether the outcome was recorded.
    pub async fn finish_push_attempt(
        &self,
        push: &ClaimedPush,
        owner: &str,
        outcome: &PushOutcome,
    ) -> Result<bool, DomainError> {
        const CLAIMED: &str = "id = $1 AND claimed_by = $2 AND attempts = $3";
        let mut lease = self.lease().await?;
        let done = match outcome {
            PushOutcome::Delivered | PushOutcome::Dropped => {
                sqlx::query(&format!("DELETE FROM push_deliveries WHERE {CLAIMED}"))
                    .bind(push.id)
                    .bind(owner)
                    .bind(push.attempts)
                    .execute(&mut *lease)
                    .await?
            }
            PushOutcome::Gone => {
                sqlx::query(
                    "DELETE FROM push_subscriptions WHERE id = $1 AND EXISTS \
                       (SELECT 1 FROM push_deliveries \
                        WHERE id = $2 AND claimed_by = $3 AND attempts = $4)",
                )
                .bind(push.subscription_id)
                .bind(push.id)
                .bind(owner)
                .bind(push.attempts)
                .execute(&mut *lease)
                .await?
            }
            PushOutcome::Retry { error, retry_at } => {
                sqlx::query(&format!(
                    "UPDATE push_deliveries SET next_attempt_at = $4, last_error = $5 \
                     WHERE {CLAIMED}"
                ))
                .bind(push.id)
                .bind(owner)
                .bind(push.attempts)
                .bind(*retry_at)
                .bind(error.chars().take(MAX_ERROR_CHARS).collect::<String>())
                .execute(&mut *lease)
                .await?
            }
        };
        Ok(done.rows_affected() == 1)
    }
}
