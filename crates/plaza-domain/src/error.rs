//! The error every domain function returns, and the count of database
//! errors that can mean a lost connection, which the pool reads.

use std::sync::atomic::{AtomicU64, Ordering};

/// What went wrong below the HTTP layer, in terms the HTTP layer can map to a
/// status without knowing SQL.
#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// The row asked for does not exist (or the caller may not know it does).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The actor may not do this (a [`policy`](crate::policy) rule said
    /// so inside a unit of work, which then writes nothing).
    #[error("{0}")]
    Forbidden(String),
    /// A block stands between the actor and the member whose content or
    /// profile they act on ([`crate::between::may_interact`]).
    #[error("{0}")]
    Blocked(String),
    /// A uniqueness rule would be broken, such as a second account for one email.
    #[error("{0}")]
    Conflict(String),
    /// Another admin holds the edit lock on the resource (see
    /// [`crate::locks`]); times are Unix milliseconds.
    #[error("{resource} is being modified by another admin")]
    Locked {
        resource: &'static str,
        holder_id: i64,
        locked_at: i64,
    },
    /// A field breaks a rule that needs the stored data to check, such as
    /// a dependency naming a permission that does not exist.
    #[error("invalid {field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    /// A state change that makes no sense from the current state, such as
    /// hiding a post that is already hidden; the message says why.
    #[error("{0}")]
    InvalidTransition(String),
    /// The database could not be reached or did not answer in time; the caller
    /// may retry once it is back.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// Anything else the database reported: a bug or a broken schema.
    #[error("database error: {0}")]
    Database(sqlx::Error),
}

/// How many errors that can mean a lost connection (see
/// [`note_connection_fault`]) this process has seen.
static CONNECTION_FAULTS: AtomicU64 = AtomicU64::new(0);

/// Counts `error` in [`CONNECTION_FAULTS`] when it can mean that the
/// connection it came from is gone, and says whether it did: an I/O or
/// protocol failure, or a PostgreSQL error of `FATAL` severity (the server
/// ends the session after one, as when it shuts down).
fn note_connection_fault(error: &sqlx::Error) -> bool {
    let lost = match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(database) => database
            .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
            .is_some_and(|error| {
                matches!(
                    error.severity(),
                    sqlx::postgres::PgSeverity::Fatal | sqlx::postgres::PgSeverity::Panic
                )
            }),
        _ => false,
    };
    if lost {
        CONNECTION_FAULTS.fetch_add(1, Ordering::Relaxed);
    }
    lost
}

/// The number of errors so far that can mean a lost connection: a lease
/// of the pool that saw it change does not keep its connection warm.
pub(crate) fn connection_faults() -> u64 {
    CONNECTION_FAULTS.load(Ordering::Relaxed)
}

impl From<sqlx::Error> for DomainError {
    fn from(error: sqlx::Error) -> Self {
        if note_connection_fault(&error) {
            return DomainError::Unavailable(error.to_string());
        }
        match error {
            sqlx::Error::RowNotFound => DomainError::NotFound("row"),
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => {
                DomainError::Unavailable(error.to_string())
            }
            sqlx::Error::Database(ref db) if db.is_unique_violation() => {
                DomainError::Conflict(db.message().to_owned())
            }
            other => DomainError::Database(other),
        }
    }
}

impl From<sqlx::migrate::MigrateError> for DomainError {
    fn from(error: sqlx::migrate::MigrateError) -> Self {
        match error {
            sqlx::migrate::MigrateError::Execute(inner) => inner.into(),
            other => DomainError::Database(sqlx::Error::Migrate(Box::new(other))),
        }
    }
}
