//! Deliveries: one per webhook and event. Senders claim due deliveries in
//! batches with one conditional UPDATE that moves their next attempt to
//! the end of the sender's lease and counts the attempt, so of senders
//! racing for a delivery exactly one gets each attempt, and a crashed
//! sender's deliveries are due again when its lease ends. An outcome is
//! written only by the claim that made the attempt (its owner and attempt
//! number), together with the attempt's log row and the webhook's count of
//! failures in a row; at [`FAILURES_TO_DEACTIVATE`] the webhook is
//! deactivated.

use sqlx::FromRow;

use crate::dialect::Dialect;
use crate::listing::Page;
use crate::{Database, DomainError, Tx};

/// Deliveries failed in a row after which a webhook is deactivated.
pub const FAILURES_TO_DEACTIVATE: i64 = 50;

/// Most characters of an attempt's error kept.
pub const MAX_ERROR_CHARS: usize = 500;

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    Pending,
    Delivered,
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
        }
    }

    fn parse(name: &str) -> DeliveryStatus {
        match name {
            "delivered" => DeliveryStatus::Delivered,
            "failed" => DeliveryStatus::Failed,
            _ => DeliveryStatus::Pending,
        }
    }
}

/// One attempt at a delivery, as logged.
#[derive(Debug, Clone, FromRow)]
pub struct Attempt {
    pub delivery_id: i64,
    pub at: i64,
    /// The receiver's status; `None` when no answer came.
    pub response_code: Option<i64>,
    pub duration_ms: i64,
    pub error: Option<String>,
}

/// A delivery with its attempts, oldest attempt first.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: i64,
    pub webhook_id: i64,
    pub event_type: String,
    pub status: DeliveryStatus,
    pub created_at: i64,
    pub attempts: Vec<Attempt>,
}

#[derive(FromRow)]
struct DeliveryRow {
    id: i64,
    webhook_id: i64,
    event_type: String,
    status: String,
    created_at: i64,
}

/// A page of deliveries, newest first, and how many the webhook has.
#[derive(Debug, Clone)]
pub struct DeliveryPage {
    pub deliveries: Vec<Delivery>,
    pub total: i64,
}

/// A sender's claim of due deliveries.
#[derive(Debug, Clone, Copy)]
pub struct DeliveryClaim<'a> {
    /// The claiming sender: one id per process.
    pub owner: &'a str,
    pub now: i64,
    /// Until when the attempts hold their deliveries.
    pub lease_until: i64,
    /// Most deliveries claimed at once.
    pub limit: i64,
}

/// A delivery claimed for one attempt, with what sending it needs.
#[derive(Debug, Clone, FromRow)]
pub struct ClaimedDelivery {
    pub id: i64,
    /// This attempt's number, from 1; with the owner, it names the claim.
    pub attempts: i64,
    pub webhook_id: i64,
    pub url: String,
    pub secret_sealed: String,
    pub event_type: String,
    /// The event's data, as JSON text.
    pub data: String,
    pub event_created_at: i64,
    /// When the delivery was queued: retries stop a window after it.
    pub created_at: i64,
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    Delivered,
    /// Failed; try again at this time.
    Retry(i64),
    /// Failed, and no attempt is left.
    Failed,
}

/// An attempt to record.
#[derive(Debug, Clone)]
pub struct FinishedAttempt {
    pub delivery_id: i64,
    pub webhook_id: i64,
    /// The claim's attempt number.
    pub attempts: i64,
    pub at: i64,
    pub response_code: Option<i64>,
    pub duration_ms: i64,
    pub error: Option<String>,
    pub outcome: AttemptOutcome,
}

/// Sends delivery `delivery_id` of webhook `webhook_id` again (same id),
/// due at `now`: one delivered or failed becomes pending; one pending
/// already is [`DomainError::InvalidTransition`], and one of an inactive
/// webhook too (nothing sends for it until it is active again).
pub async fn redeliver(
    tx: &mut Tx<'_>,
    webhook_id: i64,
    delivery_id: i64,
    now: i64,
) -> Result<(), DomainError> {
    let found: Option<(String, crate::Flag)> = sqlx::query_as(
        "SELECT d.status, w.active FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id \
         WHERE d.id = $1 AND d.webhook_id = $2",
    )
    .bind(delivery_id)
    .bind(webhook_id)
    .fetch_optional(&mut **tx)
    .await?;
    let (status, active) = found.ok_or(DomainError::NotFound("delivery"))?;
    if !active.0 {
        return Err(DomainError::InvalidTransition(
            "the webhook is inactive; activate it to redeliver".to_owned(),
        ));
    }
    if DeliveryStatus::parse(&status) == DeliveryStatus::Pending {
        return Err(DomainError::InvalidTransition(
            "the delivery is pending already".to_owned(),
        ));
    }
    sqlx::query(
        "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $1, \
         created_at = $1, claimed_by = NULL, finished_at = NULL WHERE id = $2",
    )
    .bind(now)
    .bind(delivery_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

impl Database {
    /// Claims up to `claim.limit` deliveries due at `claim.now` of active
    /// webhooks, the longest waiting first: one conditional UPDATE, so
    /// senders racing for a delivery never both get an attempt.
    pub async fn claim_deliveries(
        &self,
        claim: DeliveryClaim<'_>,
    ) -> Result<Vec<ClaimedDelivery>, DomainError> {
        let mut lease = self.lease().await?;
        let claimed: Vec<(i64,)> = sqlx::query_as(
            "UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = $1, \
               claimed_by = $2 \
             WHERE id IN (SELECT d.id FROM webhook_deliveries d \
                 JOIN webhooks w ON w.id = d.webhook_id \
                 WHERE d.status = 'pending' AND d.next_attempt_at <= $3 AND w.active = TRUE \
                 ORDER BY d.next_attempt_at, d.id LIMIT $4) \
               AND status = 'pending' AND next_attempt_at <= $3 \
             RETURNING id",
        )
        .bind(claim.lease_until)
        .bind(claim.owner)
        .bind(claim.now)
        .bind(claim.limit)
        .fetch_all(&mut *lease)
        .await?;
        if claimed.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<i64> = claimed.into_iter().map(|(id,)| id).collect();
        let ids = serde_json::to_string(&ids).map_err(|error| {
            DomainError::Unavailable(format!("cannot write the claimed ids: {error}"))
        })?;
        Ok(sqlx::query_as(&format!(
            "SELECT d.id, d.attempts, d.webhook_id, w.url, w.secret_sealed, \
               e.type AS event_type, e.data, e.created_at AS event_created_at, d.created_at \
             FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id \
               JOIN webhook_events e ON e.id = d.event_id \
             WHERE d.id IN ({}) AND d.claimed_by = $2 ORDER BY d.id",
            self.dialect().json_integers("$1")
        ))
        .bind(ids)
        .bind(claim.owner)
        .fetch_all(&mut *lease)
        .await?)
    }

    /// Records `finished` attempts made by `owner`'s claims, in one unit of
    /// work: an outcome whose claim ran out (another sender claimed the
    /// delivery since) is dropped with its log row. Answers the webhooks
    /// this deactivated.
    pub async fn finish_deliveries(
        &self,
        owner: &str,
        finished: Vec<FinishedAttempt>,
    ) -> Result<Vec<i64>, DomainError> {
        let owner = owner.to_owned();
        self.write(move |tx| {
            Box::pin(async move {
                let mut deactivated = Vec::new();
                for attempt in &finished {
                    if record_attempt(tx, &owner, attempt).await?
                        && let Some(webhook_id) = count_outcome(tx, attempt).await?
                    {
                        deactivated.push(webhook_id);
                    }
                }
                Ok(deactivated)
            })
        })
        .await
    }

    /// The deliveries of webhook `webhook_id`, newest first, with their
    /// attempts.
    pub async fn deliveries_of(
        &self,
        webhook_id: i64,
        page: Page,
    ) -> Result<DeliveryPage, DomainError> {
        let mut lease = self.lease().await?;
        let (total,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = $1")
                .bind(webhook_id)
                .fetch_one(&mut *lease)
                .await?;
        let rows: Vec<DeliveryRow> = sqlx::query_as(
            "SELECT d.id, d.webhook_id, e.type AS event_type, d.status, d.created_at \
             FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id \
             WHERE d.webhook_id = $1 ORDER BY d.id DESC LIMIT $2 OFFSET $3",
        )
        .bind(webhook_id)
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&mut *lease)
        .await?;
        let ids: Vec<i64> = rows.iter().map(|row| row.id).collect();
        let ids = serde_json::to_string(&ids).map_err(|error| {
            DomainError::Unavailable(format!("cannot write the page's ids: {error}"))
        })?;
        let attempts: Vec<Attempt> = sqlx::query_as(&format!(
            "SELECT delivery_id, at, response_code, duration_ms, error FROM webhook_attempts \
             WHERE delivery_id IN ({}) ORDER BY id",
            self.dialect().json_integers("$1")
        ))
        .bind(ids)
        .fetch_all(&mut *lease)
        .await?;
        let deliveries = rows
            .into_iter()
            .map(|row| Delivery {
                attempts: attempts
                    .iter()
                    .filter(|attempt| attempt.delivery_id == row.id)
                    .cloned()
                    .collect(),
                id: row.id,
                webhook_id: row.webhook_id,
                event_type: row.event_type,
                status: DeliveryStatus::parse(&row.status),
                created_at: row.created_at,
            })
            .collect();
        Ok(DeliveryPage { deliveries, total })
    }

    /// Delivery `delivery_id` of webhook `webhook_id`, with its attempts.
    pub async fn delivery(
        &self,
        webhook_id: i64,
        delivery_id: i64,
    ) -> Result<Option<Delivery>, DomainError> {
        let mut lease = self.lease().await?;
        let row: Option<DeliveryRow> = sqlx::query_as(
            "SELECT d.id, d.webhook_id, e.type AS event_type, d.status, d.created_at \
             FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id \
             WHERE d.id = $1 AND d.webhook_id = $2",
        )
        .bind(delivery_id)
        .bind(webhook_id)
        .fetch_optional(&mut *lease)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let attempts: Vec<Attempt> = sqlx::query_as(
            "SELECT delivery_id, at, response_code, duration_ms, error FROM webhook_attempts \
             WHERE delivery_id = $1 ORDER BY id",
        )
        .bind(delivery_id)
        .fetch_all(&mut *lease)
        .await?;
        Ok(Some(Delivery {
            id: row.id,
            webhook_id: row.webhook_id,
            event_type: row.event_type,
            status: DeliveryStatus::parse(&row.status),
            created_at: row.created_at,
            attempts,
        }))
    }

    /// Deletes up to `limit` deliveries finished before `before` (their
    /// attempts go with them), then the events no delivery names any more;
    /// answers how many deliveries.
    pub async fn purge_finished_deliveries(
        &self,
        before: i64,
        limit: i64,
    ) -> Result<u64, DomainError> {
        self.write(move |tx| {
            Box::pin(async move {
                let removed = sqlx::query(
                    "DELETE FROM webhook_deliveries WHERE id IN \
                     (SELECT id FROM webhook_deliveries WHERE status <> 'pending' \
                      AND finished_at < $1 ORDER BY finished_at LIMIT $2)",
                )
                .bind(before)
                .bind(limit)
                .execute(&mut **tx)
                .await?
                .rows_affected();
                sqlx::query(
                    "DELETE FROM webhook_events WHERE created_at < $1 AND NOT EXISTS \
                     (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id)",
                )
                .bind(before)
                .execute(&mut **tx)
                .await?;
                Ok(removed)
            })
        })
        .await
    }
}

/// Writes the outcome of `attempt` and its log row if its claim still
/// holds the delivery; answers whether it did.
async fn record_attempt(
    tx: &mut Tx<'_>,
    owner: &str,
    attempt: &FinishedAttempt,
) -> Result<bool, DomainError> {
    let (status, next_attempt_at, finished_at) = match attempt.outcome {
        AttemptOutcome::Delivered => ("delivered", attempt.at, Some(attempt.at)),
        AttemptOutcome::Retry(at) => ("pending", at, None),
        AttemptOutcome::Failed => ("failed", attempt.at, Some(attempt.at)),
    };
    let updated = sqlx::query(
        "UPDATE webhook_deliveries SET status = $1, next_attempt_at = $2, finished_at = $3 \
         WHERE id = $4 AND claimed_by = $5 AND attempts = $6 AND status = 'pending'",
    )
    .bind(status)
    .bind(next_attempt_at)
    .bind(finished_at)
    .bind(attempt.delivery_id)
    .bind(owner)
    .bind(attempt.attempts)
    .execute(&mut **tx)
    .await?;
    if updated.rows_affected() == 0 {
        return Ok(false);
    }
    let error = attempt
        .error
        .as_deref()
        .map(|error| error.chars().take(MAX_ERROR_CHARS).collect::<String>());
    sqlx::query(
        "INSERT INTO webhook_attempts (delivery_id, at, response_code, duration_ms, error) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(attempt.delivery_id)
    .bind(attempt.at)
    .bind(attempt.response_code)
    .bind(attempt.duration_ms)
    .bind(error)
    .execute(&mut **tx)
    .await?;
    Ok(true)
}

/// Counts a delivered or failed delivery towards its webhook's failures in
/// a row; answers the webhook's id when this failure deactivated it.
async fn count_outcome(
    tx: &mut Tx<'_>,
    attempt: &FinishedAttempt,
) -> Result<Option<i64>, DomainError> {
    match attempt.outcome {
        AttemptOutcome::Retry(_) => Ok(None),
        AttemptOutcome::Delivered => {
            sqlx::query(
                "UPDATE webhooks SET failures_in_row = 0 WHERE id = $1 AND failures_in_row <> 0",
            )
            .bind(attempt.webhook_id)
            .execute(&mut **tx)
            .await?;
            Ok(None)
        }
        AttemptOutcome::Failed => {
            let lock = format!(
                "SELECT failures_in_row FROM webhooks WHERE id = $1{}",
                Dialect::of(tx).for_update()
            );
            let Some((failures,)): Option<(i64,)> = sqlx::query_as(&lock)
                .bind(attempt.webhook_id)
                .fetch_optional(&mut **tx)
                .await?
            else {
                return Ok(None);
            };
            let failures = failures + 1;
            let deactivate = failures >= FAILURES_TO_DEACTIVATE;
            let changed = sqlx::query(
                "UPDATE webhooks SET failures_in_row = $1, \
                   active = CASE WHEN $2 THEN FALSE ELSE active END \
                 WHERE id = $3 AND (active = TRUE OR NOT $2)",
            )
            .bind(failures)
            .bind(deactivate)
            .bind(attempt.webhook_id)
            .execute(&mut **tx)
            .await?;
            Ok((deactivate && changed.rows_affected() == 1).then_some(attempt.webhook_id))
        }
    }
}
