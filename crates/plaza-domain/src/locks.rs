//! Edit locks: while one admin changes a user or a post, another admin's
//! change of the same resource is refused (`RESOURCE_LOCKED`, 423) instead
//! of silently overwriting it. Locks live in the database (`edit_locks`), so
//! every instance sees them, and each carries an expiry, so a lock whose
//! holder died frees itself.
//!
//! How a mutating admin operation uses them:
//!
//! - [`Database::write_locked`] is the usual way: it takes the lock in a
//!   short transaction of its own (so other instances see it while the
//!   operation runs and get 423 at once rather than queueing), then runs the
//!   operation's unit of work, which takes the lock again (proving it still
//!   holds it) and releases it in the same commit as the change. When the
//!   work fails, the lock is released at once; if the process dies first, it
//!   expires after its time to live.
//! - Inside a unit of work the caller already has, [`hold`] and [`release`]
//!   are the building blocks:
//!
//! ```ignore
//! db.write(|tx| Box::pin(async move {
//!     locks::hold(tx, Resource::User(id), admin_id, ttl).await?; // Err(DomainError::Locked{..})
//!     let user = users::update(tx, id, changes).await?;
//!     audit::record(tx, &context, action).await?;
//!     locks::release(tx, Resource::User(id), admin_id).await?;
//!     Ok(user)
//! })).await
//! ```

use std::time::Duration;

use sqlx::AnyConnection;

use crate::time::now_millis;
use crate::{Database, DomainError, Tx, TxFuture};

/// What a lock protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    User(i64),
    Post(i64),
    Reply(i64),
    /// A role's grants.
    Role(i64),
    Permission(i64),
}

impl Resource {
    /// The stored type name, also the resource named in a refusal.
    pub fn kind(self) -> &'static str {
        match self {
            Resource::User(_) => "user",
            Resource::Post(_) => "post",
            Resource::Reply(_) => "reply",
            Resource::Role(_) => "role",
            Resource::Permission(_) => "permission",
        }
    }

    pub fn id(self) -> i64 {
        match self {
            Resource::User(id)
            | Resource::Post(id)
            | Resource::Reply(id)
            | Resource::Role(id)
            | Resource::Permission(id) => id,
        }
    }
}

/// A lock as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lock {
    pub holder_id: i64,
    /// Unix milliseconds.
    pub locked_at: i64,
    pub expires_at: i64,
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// Takes the lock on `resource` for `holder_id` until `ttl` from now: a
/// new lock, or one that has expired or is the holder's own (renewed),
/// in one statement, so two admins racing cannot both win. Another admin's
/// live lock is [`DomainError::Locked`].
pub async fn hold(
    tx: &mut Tx<'_>,
    resource: Resource,
    holder_id: i64,
    ttl: Duration,
) -> Result<Lock, DomainError> {
    acquire(tx, resource, holder_id, ttl).await
}

async fn acquire(
    connection: &mut AnyConnection,
    resource: Resource,
    holder_id: i64,
    ttl: Duration,
) -> Result<Lock, DomainError> {
    let now = now_millis();
    let expires_at = now.saturating_add(millis(ttl));
    let taken: Option<(i64, i64)> = sqlx::query_as(
        "INSERT INTO edit_locks (resource_type, resource_id, holder_id, locked_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (resource_type, resource_id) DO UPDATE SET \
           holder_id = $3, \
           locked_at = CASE WHEN edit_locks.holder_id = $3 AND edit_locks.expires_at > $4 \
                       THEN edit_locks.locked_at ELSE $4 END, \
           expires_at = $5 \
         WHERE edit_locks.expires_at <= $4 OR edit_locks.holder_id = $3 \
         RETURNING locked_at, expires_at",
    )
    .bind(resource.kind())
    .bind(resource.id())
    .bind(holder_id)
    .bind(now)
    .bind(expires_at)
    .fetch_optional(&mut *connection)
    .await?;
    if let Some((locked_at, expires_at)) = taken {
        return Ok(Lock {
            holder_id,
            locked_at,
            expires_at,
        });
    }
    let (holder, locked_at): (i64, i64) = sqlx::query_as(
        "SELECT holder_id, locked_at FROM edit_locks \
         WHERE resource_type = $1 AND resource_id = $2",
    )
    .bind(resource.kind())
    .bind(resource.id())
    .fetch_one(&mut *connection)
    .await?;
    Err(DomainError::Locked {
        resource: resource.kind(),
        holder_id: holder,
        locked_at,
    })
}

/// Releases `holder_id`'s lock on `resource`, if it still holds it.
pub async fn release(
    tx: &mut Tx<'_>,
    resource: Resource,
    holder_id: i64,
) -> Result<(), DomainError> {
    remove(tx, resource, holder_id).await
}

async fn remove(
    connection: &mut AnyConnection,
    resource: Resource,
    holder_id: i64,
) -> Result<(), DomainError> {
    sqlx::query(
        "DELETE FROM edit_locks WHERE resource_type = $1 AND resource_id = $2 AND holder_id = $3",
    )
    .bind(resource.kind())
    .bind(resource.id())
    .bind(holder_id)
    .execute(&mut *connection)
    .await?;
    Ok(())
}

impl Database {
    /// Runs `work` as a unit of work under the edit lock of `resource` (see
    /// the module documentation): 423 ([`DomainError::Locked`]) when another
    /// admin holds it; the lock is gone when this returns.
    pub async fn write_locked<T, F>(
        &self,
        resource: Resource,
        holder_id: i64,
        ttl: Duration,
        work: F,
    ) -> Result<T, DomainError>
    where
        T: Send,
        F: for<'t, 'c> FnOnce(&'t mut Tx<'c>) -> TxFuture<'t, T> + Send + 'static,
    {
        self.write(|tx| Box::pin(acquire(tx, resource, holder_id, ttl)))
            .await?;
        let outcome = self
            .write(|tx| {
                Box::pin(async move {
                    hold(tx, resource, holder_id, ttl).await?;
                    let value = work(tx).await?;
                    release(tx, resource, holder_id).await?;
                    Ok(value)
                })
            })
            .await;
        if outcome.is_err() {
            // The work was rolled back with its release; the lock taken
            // before it would otherwise stand until it expires.
            let lease = self.lease().await;
            if let Ok(mut lease) = lease
                && let Err(error) = remove(&mut lease, resource, holder_id).await
            {
                tracing::warn!(%error, resource = resource.kind(), "could not release an edit lock");
            }
        }
        outcome
    }

    /// The live lock on `resource`, if any.
    #[cfg(feature = "testing")]
    pub async fn edit_lock(&self, resource: Resource) -> Result<Option<Lock>, DomainError> {
        let row: Option<(i64, i64, i64)> = sqlx::query_as(
            "SELECT holder_id, locked_at, expires_at FROM edit_locks \
             WHERE resource_type = $1 AND resource_id = $2 AND expires_at > $3",
        )
        .bind(resource.kind())
        .bind(resource.id())
        .bind(now_millis())
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        Ok(row.map(|(holder_id, locked_at, expires_at)| Lock {
            holder_id,
            locked_at,
            expires_at,
        }))
    }
}
