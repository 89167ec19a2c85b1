//! Silences: timed records, like bans, of a member who may sign in and read
//! while what they write waits for a moderator and their reactions,
//! follows and mentions notify nobody. At most one silence of a member is
//! in force; a new one supersedes it. Lifting one, by a moderator, an
//! appeal or the expiry job ([`expire_due`]), ends it; [`is_silenced`] is
//! the one question the rest of Plaza asks.

use sqlx::FromRow;

use crate::audit::{self, AuditAction, AuditContext};
use crate::time::now_millis;
use crate::{Database, DomainError, Tx};

/// One silence, in force or lifted.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct Silence {
    pub id: i64,
    pub user_id: i64,
    pub silenced_by: Option<i64>,
    pub reason: String,
    pub created_at: i64,
    /// `None`: until lifted.
    pub expires_at: Option<i64>,
    pub lifted_at: Option<i64>,
    pub lifted_by: Option<i64>,
    pub lift_reason: Option<String>,
}

const SILENCE_COLUMNS: &str = "id, user_id, silenced_by, reason, created_at, expires_at, \
                               lifted_at, lifted_by, lift_reason";

/// Whether `user_id` is silenced at `now`, read in `tx`.
pub async fn is_silenced(tx: &mut Tx<'_>, user_id: i64, now: i64) -> Result<bool, DomainError> {
    Ok(in_force(tx, user_id, now).await?.is_some())
}

/// The silence of `user_id` in force at `now`, read in `tx`.
pub async fn in_force(
    tx: &mut Tx<'_>,
    user_id: i64,
    now: i64,
) -> Result<Option<Silence>, DomainError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {SILENCE_COLUMNS} FROM user_silences WHERE user_id = $1 AND lifted_at IS NULL \
         AND (expires_at IS NULL OR expires_at > $2)"
    ))
    .bind(user_id)
    .bind(now)
    .fetch_optional(&mut **tx)
    .await?)
}

/// Silences `user_id` until `expires_at` (`None`: until lifted) in `tx`,
/// superseding a silence in force.
pub async fn impose(
    tx: &mut Tx<'_>,
    user_id: i64,
    silenced_by: Option<i64>,
    reason: &str,
    expires_at: Option<i64>,
) -> Result<Silence, DomainError> {
    let now = now_millis();
    lift_in_force(tx, user_id, silenced_by, "superseded by a new silence", now).await?;
    Ok(sqlx::query_as(&format!(
        "INSERT INTO user_silences (user_id, silenced_by, reason, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5) RETURNING {SILENCE_COLUMNS}"
    ))
    .bind(user_id)
    .bind(silenced_by)
    .bind(reason.to_owned())
    .bind(now)
    .bind(expires_at)
    .fetch_one(&mut **tx)
    .await?)
}

/// Lifts the silence of `user_id` in force, in `tx`; `None` when there was
/// none.
pub async fn lift_in_force(
    tx: &mut Tx<'_>,
    user_id: i64,
    lifted_by: Option<i64>,
    reason: &str,
    now: i64,
) -> Result<Option<Silence>, DomainError> {
    Ok(sqlx::query_as(&format!(
        "UPDATE user_silences SET lifted_at = $1, lifted_by = $2, lift_reason = $3 \
         WHERE user_id = $4 AND lifted_at IS NULL RETURNING {SILENCE_COLUMNS}"
    ))
    .bind(now)
    .bind(lifted_by)
    .bind(reason.to_owned())
    .bind(user_id)
    .fetch_optional(&mut **tx)
    .await?)
}

/// Lifts silence `id` in `tx` if it is the one in force (an appeal undoing
/// that silence, not a later one); `None` otherwise.
pub async fn lift_one(
    tx: &mut Tx<'_>,
    id: i64,
    lifted_by: Option<i64>,
    reason: &str,
) -> Result<Option<Silence>, DomainError> {
    Ok(sqlx::query_as(&format!(
        "UPDATE user_silences SET lifted_at = $1, lifted_by = $2, lift_reason = $3 \
         WHERE id = $4 AND lifted_at IS NULL RETURNING {SILENCE_COLUMNS}"
    ))
    .bind(now_millis())
    .bind(lifted_by)
    .bind(reason.to_owned())
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?)
}

/// Silences lifted per batch of [`expire_due`].
const EXPIRY_BATCH: i64 = 100;

/// Lifts every silence that has run out by `now`, each in its own unit of
/// work with its audit entry (`user.silence.expire`, by the system);
/// answers how many this run lifted. A silence another run lifted first is
/// skipped, so several instances may run it at once.
pub async fn expire_due(db: &Database, now: i64) -> Result<usize, DomainError> {
    let mut lifted = 0;
    loop {
        let due: Vec<(i64,)> = sqlx::query_as(
            "SELECT id FROM user_silences WHERE lifted_at IS NULL AND expires_at <= $1 \
             ORDER BY expires_at LIMIT $2",
        )
        .bind(now)
        .bind(EXPIRY_BATCH)
        .fetch_all(&mut *db.lease().await?)
        .await?;
        let batch = due.len();
        for (id,) in due {
            let expired = db
                .write(|tx| {
                    Box::pin(async move {
                        let row: Option<Silence> = sqlx::query_as(&format!(
                            "UPDATE user_silences SET lifted_at = expires_at, \
                             lift_reason = 'expired' WHERE id = $1 AND lifted_at IS NULL \
                             AND expires_at <= $2 RETURNING {SILENCE_COLUMNS}"
                        ))
                        .bind(id)
                        .bind(now)
                        .fetch_optional(&mut **tx)
                        .await?;
                        let Some(expired) = row else {
                            return Ok(false);
                        };
                        audit::record(
                            tx,
                            &AuditContext::system(),
                            AuditAction {
                                action: "user.silence.expire",
                                target_type: "user",
                                target_id: Some(expired.user_id.to_string()),
                                changes: serde_json::json!({
                                    "silence": {"id": expired.id, "reason": expired.reason},
                                }),
                            },
                        )
                        .await?;
                        Ok(true)
                    })
                })
                .await?;
            lifted += usize::from(expired);
        }
        if batch < EXPIRY_BATCH as usize {
            return Ok(lifted);
        }
    }
}

impl Database {
    /// When the silence of `user_id` in force at `now` ends: `Some(None)`
    /// for one until lifted, `None` when not silenced.
    pub async fn silenced_until(
        &self,
        user_id: i64,
        now: i64,
    ) -> Result<Option<Option<i64>>, DomainError> {
        let row: Option<(Option<i64>,)> = sqlx::query_as(
            "SELECT expires_at FROM user_silences WHERE user_id = $1 AND lifted_at IS NULL \
             AND (expires_at IS NULL OR expires_at > $2)",
        )
        .bind(user_id)
        .bind(now)
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        Ok(row.map(|(expires_at,)| expires_at))
    }
}
