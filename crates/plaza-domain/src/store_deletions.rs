//! Objects of the upload store that must go: the files of erased users.
//! They are listed in the unit of work that deletes their records, so an
//! object is listed from the moment nothing names it any more until the
//! store has deleted it; the upload routes serve no listed object. An
//! instance claims due rows of its own store, deletes the objects and
//! removes the rows; a claim that fails is retried later, with a wait the
//! caller chooses (it doubles with each attempt).

use sqlx::FromRow;

use crate::dialect::Dialect;
use crate::time::now_millis;
use crate::{Database, DomainError, Tx};

/// A listed object, as a claim hands it out.
#[derive(Debug, Clone, FromRow)]
pub struct StoreDeletion {
    pub object_key: String,
    /// Attempts so far, this one included.
    pub attempts: i64,
}

/// Lists, in `tx`, the objects `keys` of `store` for deletion, due at once.
/// An object listed already stays as it is.
pub async fn record(tx: &mut Tx<'_>, store: &str, keys: &[String]) -> Result<(), DomainError> {
    let now = now_millis();
    let rows_per_statement = (Dialect::of(tx).values_per_statement() / 2).max(1);
    for chunk in keys.chunks(rows_per_statement) {
        let rows: Vec<String> = (0..chunk.len())
            .map(|row| format!("(${}, ${}, 0, $1, $1)", 2 * row + 2, 2 * row + 3))
            .collect();
        let sql = format!(
            "INSERT INTO store_deletions (object_key, store, attempts, next_attempt_at, created_at) \
             VALUES {} ON CONFLICT (object_key) DO NOTHING",
            rows.join(", ")
        );
        let mut query = sqlx::query(&sql).bind(now);
        for key in chunk {
            query = query.bind(key).bind(store);
        }
        query.execute(&mut **tx).await?;
    }
    Ok(())
}

/// Makes every listed object one of `store` (the files moved there).
pub async fn move_to(tx: &mut Tx<'_>, store: &str) -> Result<(), DomainError> {
    sqlx::query("UPDATE store_deletions SET store = $1 WHERE store <> $1")
        .bind(store)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Database {
    /// Whether `key` is listed for deletion (its file is served no more).
    pub async fn store_deletion_pending(&self, key: &str) -> Result<bool, DomainError> {
        let found: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM store_deletions WHERE object_key = $1")
                .bind(key)
                .fetch_optional(&mut *self.lease().await?)
                .await?;
        Ok(found.is_some())
    }

    /// Claims up to `limit` objects of `store` whose deletion is due at
    /// `now`: each counts one attempt more and is not due again before
    /// `now + lease_millis`, so another instance does not take it meanwhile
    /// and a claimer that dies leaves it to a later run. One statement, so
    /// two claimers racing never both take a row.
    pub async fn claim_store_deletions(
        &self,
        store: &str,
        now: i64,
        lease_millis: i64,
        limit: i64,
    ) -> Result<Vec<StoreDeletion>, DomainError> {
        Ok(sqlx::query_as(
            "UPDATE store_deletions SET attempts = attempts + 1, next_attempt_at = $3 \
             WHERE store = $1 AND next_attempt_at <= $2 AND object_key IN ( \
               SELECT object_key FROM store_deletions \
               WHERE store = $1 AND next_attempt_at <= $2 \
               ORDER BY next_attempt_at LIMIT $4) \
             RETURNING object_key, attempts",
        )
        .bind(store)
        .bind(now)
        .bind(now.saturating_add(lease_millis))
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?)
    }

    /// Removes the rows of objects the store deleted.
    pub async fn finish_store_deletions(&self, keys: &[String]) -> Result<(), DomainError> {
        let mut lease = self.lease().await?;
        for chunk in keys.chunks(self.dialect().values_per_statement()) {
            let placeholders: Vec<String> = (1..=chunk.len()).map(|n| format!("${n}")).collect();
            let sql = format!(
                "DELETE FROM store_deletions WHERE object_key IN ({})",
                placeholders.join(", ")
            );
            let mut query = sqlx::query(&sql);
            for key in chunk {
                query = query.bind(key);
            }
            query.execute(&mut *lease).await?;
        }
        Ok(())
    }

    /// Schedules the next attempt of an object the store could not delete.
    pub async fn retry_store_deletion(
        &self,
        key: &str,
        at: i64,
        error: &str,
    ) -> Result<(), DomainError> {
        sqlx::query(
            "UPDATE store_deletions SET next_attempt_at = $2, last_error = $3 WHERE object_key = $1",
        )
        .bind(key)
        .bind(at)
        .bind(error)
        .execute(&mut *self.lease().await?)
        .await?;
        Ok(())
    }

    /// How many objects of `store` are listed for deletion.
    pub async fn store_deletions_left(&self, store: &str) -> Result<i64, DomainError> {
        Ok(
            sqlx::query_scalar("SELECT COUNT(*) FROM store_deletions WHERE store = $1")
                .bind(store)
                .fetch_one(&mut *self.lease().await?)
                .await?,
        )
    }
}
