//! The one way an event enters the outbox: [`enqueue`], inside the unit of
//! work of the change that caused it, so an event is delivered exactly when
//! its cause commits, and survives a restart.

use serde_json::Value;

use super::model::EventType;
use crate::{DomainError, Tx};

/// Writes the event `event` with `data` at `now` into the outbox, with a
/// delivery due at once for every active webhook subscribed to it, in
/// `tx`, the transaction of the change that caused it. Without a
/// subscriber nothing is written (one statement).
pub async fn enqueue(
    tx: &mut Tx<'_>,
    event: EventType,
    data: &Value,
    now: i64,
) -> Result<(), DomainError> {
    let stored: Option<(i64,)> = sqlx::query_as(
        "INSERT INTO webhook_events (type, data, created_at) \
         SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM webhook_subscriptions s \
           JOIN webhooks w ON w.id = s.webhook_id WHERE s.event = $1 AND w.active = TRUE) \
         RETURNING id",
    )
    .bind(event.as_str())
    .bind(data.to_string())
    .bind(now)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((event_id,)) = stored else {
        return Ok(());
    };
    sqlx::query(
        "INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, \
           next_attempt_at, created_at) \
         SELECT w.id, $1, 'pending', 0, $2, $2 FROM webhook_subscriptions s \
           JOIN webhooks w ON w.id = s.webhook_id WHERE s.event = $3 AND w.active = TRUE",
    )
    .bind(event_id)
    .bind(now)
    .bind(event.as_str())
    .execute(&mut **tx)
    .await?;
    Ok(())
}
