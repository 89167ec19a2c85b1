//! PostgreSQL's announcements of writes to posts: the trigger that bumps
//! the content generation also sends `NOTIFY plaza_content` (migration
//! 0035), delivered to every listening connection when the writing
//! transaction commits, whichever instance or process wrote.
//!
//! A [`ContentListener`] is one connection of its own, outside the pool,
//! that listens on that channel and can read the generation itself: a read
//! answered on the listening connection also tells that the connection was
//! alive, so every write committed after the read's snapshot is announced
//! on it unless the connection is lost.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};

use crate::db::Database;
use crate::dialect::Backend;
use crate::error::DomainError;

/// The channel the content generation's trigger notifies.
pub const CHANNEL: &str = "plaza_content";

/// The `application_name` of the listening connection, as
/// `pg_stat_activity` shows it.
pub const APPLICATION_NAME: &str = "plaza-content-listener";

/// One connection listening on [`CHANNEL`].
pub struct ContentListener {
    listener: PgListener,
}

impl ContentListener {
    /// Connects (within `timeout`) and listens; on SQLite there is nothing
    /// to listen to.
    pub async fn connect(db: &Database, timeout: Duration) -> Result<Self, DomainError> {
        if db.backend() != Backend::Postgres {
            return Err(DomainError::Unavailable(
                "only PostgreSQL announces writes".to_owned(),
            ));
        }
        let options = PgConnectOptions::from_str(db.url())?.application_name(APPLICATION_NAME);
        let connect = async {
            let pool = PgPoolOptions::new()
                .max_connections(1)
                .min_connections(0)
                .max_lifetime(None)
                .idle_timeout(None)
                .acquire_timeout(timeout)
                .connect_with(options)
                .await?;
            let mut listener = PgListener::connect_with(&pool).await?;
            listener.ignore_pool_close_event(true);
            // A lost connection ends this listener: whoever holds it must
            // learn of the loss, since notifications sent meanwhile are gone.
            listener.eager_reconnect(false);
            listener.listen(CHANNEL).await?;
            Ok::<_, sqlx::Error>(listener)
        };
        let listener = tokio::time::timeout(timeout, connect)
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)??;
        Ok(ContentListener { listener })
    }

    /// Waits for the next notification; an error when the connection is
    /// lost (this listener is then of no more use). Cancel-safe: dropped
    /// before it answers, no notification is lost.
    pub async fn next(&mut self) -> Result<(), DomainError> {
        match self.listener.try_recv().await? {
            Some(_) => Ok(()),
            None => Err(DomainError::Unavailable(
                "the listening connection was lost".to_owned(),
            )),
        }
    }

    /// The content generation, read on the listening connection.
    pub async fn generation(&mut self) -> Result<i64, DomainError> {
        let (generation,): (i64,) =
            sqlx::query_as("SELECT value FROM content_generation WHERE id = 1")
                .fetch_one(&mut self.listener)
                .await?;
        Ok(generation)
    }
}
