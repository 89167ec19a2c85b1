//! The connection pool, shared by every domain module, and start-up migration.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::Migrator;
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Executor};

use crate::DomainError;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// How much of an SQLite file each connection reads through a memory map
/// instead of copying pages into its own cache: with 16 connections, a
/// search over a large full-text index was otherwise copied into 16 caches.
const SQLITE_MMAP_BYTES: u64 = 1 << 30;

/// Which database engine is behind the pool; the few statements that differ
/// between the two (full-text search, schema introspection) branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// Tells the engine from a database URL, or `None` for one Plaza cannot use.
    pub fn from_url(url: &str) -> Option<Self> {
        if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Backend::Postgres)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// Pool sizing and timeouts; the server fills these from its settings.
#[derive(Debug, Clone)]
pub struct DatabaseOptions {
    pub max_connections: u32,
    /// How long a request waits for a free connection before it fails with
    /// [`DomainError::Unavailable`] instead of hanging while the database is down.
    pub acquire_timeout: Duration,
    /// How long SQLite waits on a locked database file before giving up.
    pub sqlite_busy_timeout: Duration,
}

impl Default for DatabaseOptions {
    fn default() -> Self {
        DatabaseOptions {
            max_connections: 16,
            acquire_timeout: Duration::from_secs(5),
            sqlite_busy_timeout: Duration::from_secs(5),
        }
    }
}

/// Connection-pool figures exported as metrics.
#[derive(Debug, Clone, Copy)]
pub struct PoolStats {
    pub size: u32,
    pub idle: u32,
    pub max: u32,
}

/// A handle to the database; cheap to clone, shared by every request.
#[derive(Clone, Debug)]
pub struct Database {
    pool: AnyPool,
    backend: Backend,
    max_connections: u32,
    /// SQLite only: connections kept out of the pool between leases.
    warm: Option<Arc<WarmConnections>>,
}

/// SQLite connections handed from one [`Lease`] to the next without going
/// back to the pool (see [`Database::lease`]). The permits bound the leases
/// to the pool's size, so the pool always has a connection for a lease that
/// finds none here.
#[derive(Debug)]
struct WarmConnections {
    idle: Mutex<Vec<PoolConnection<Any>>>,
    permits: Arc<Semaphore>,
    acquire_timeout: Duration,
    /// Units of work of this process take turns here before `BEGIN
    /// IMMEDIATE`: SQLite lets one writer in at a time, and a writer that
    /// finds the lock taken sleeps in SQLite's busy handler (1 to 100 ms
    /// steps) instead of being woken when it is free. Queuing here hands
    /// the lock over at once (admin user list at 10 clients, each request
    /// writing its audit entry: p99 360 ms without the queue).
    writers: tokio::sync::Mutex<()>,
}

impl WarmConnections {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<PoolConnection<Any>>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Database {
    /// Opens a pool and checks the database answers. SQLite files are created
    /// when missing and every SQLite connection gets WAL, foreign keys and a
    /// busy timeout.
    pub async fn connect(url: &str, options: &DatabaseOptions) -> Result<Self, DomainError> {
        install_default_drivers();
        let backend = Backend::from_url(url).ok_or_else(|| {
            DomainError::Unavailable(format!(
                "unsupported database URL scheme in {:?}: use sqlite:// or postgres://",
                redact_url(url)
            ))
        })?;
        let busy_ms = options.sqlite_busy_timeout.as_millis();
        let pool = AnyPoolOptions::new()
            .max_connections(options.max_connections)
            .min_connections(0)
            .acquire_timeout(options.acquire_timeout)
            // A pooled PostgreSQL connection can go stale (a restart, a
            // proxy that dropped it); an SQLite one cannot, and pinging it
            // cost a round trip to its worker thread on every query.
            .test_before_acquire(backend == Backend::Postgres)
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        conn.execute(
                            format!(
                                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                                 PRAGMA foreign_keys = ON; PRAGMA busy_timeout = {busy_ms}; \
                                 PRAGMA mmap_size = {SQLITE_MMAP_BYTES};"
                            )
                            .as_str(),
                        )
                        .await?;
                    }
                    Ok(())
                })
            })
            .connect(&with_sqlite_create(url, backend))
            .await?;
        let database = Database {
            pool,
            backend,
            max_connections: options.max_connections,
            warm: (backend == Backend::Sqlite).then(|| {
                Arc::new(WarmConnections {
                    idle: Mutex::default(),
                    permits: Arc::new(Semaphore::new(options.max_connections as usize)),
                    acquire_timeout: options.acquire_timeout,
                    writers: tokio::sync::Mutex::new(()),
                })
            }),
        };
        database.ping().await?;
        Ok(database)
    }

    /// Brings the schema up to date. Safe to run from several instances at
    /// once: on PostgreSQL the migrator holds an advisory lock.
    pub async fn migrate(&self) -> Result<(), DomainError> {
        let migrator = match self.backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        migrator.run(&mut *self.lease().await?).await?;
        Ok(())
    }

    /// Runs `work` as one unit of work: one transaction on one connection,
    /// committed when `work` returns `Ok`, rolled back when it returns an
    /// error (or is dropped). Callers compose domain functions that take a
    /// [`Tx`], so a change and its audit entry commit together or not at all:
    ///
    /// ```ignore
    /// db.write(|tx| Box::pin(async move {
    ///     let user = users::set_role(tx, id, role).await?;
    ///     audit::record(tx, &entry).await?;
    ///     Ok(user)
    /// })).await
    /// ```
    pub async fn write<T, F>(&self, work: F) -> Result<T, DomainError>
    where
        F: for<'t, 'c> FnOnce(&'t mut Tx<'c>) -> TxFuture<'t, T>,
    {
        let _turn = match &self.warm {
            Some(warm) => Some(
                tokio::time::timeout(warm.acquire_timeout, warm.writers.lock())
                    .await
                    .map_err(|_| sqlx::Error::PoolTimedOut)?,
            ),
            None => None,
        };
        let mut lease = self.lease().await?;
        let mut tx =
            sqlx::Connection::begin_with(&mut *lease, self.dialect().begin_write()).await?;
        let value = work(&mut tx).await?;
        tx.commit().await?;
        Ok(value)
    }

    /// One real round trip, for health checks.
    pub async fn ping(&self) -> Result<(), DomainError> {
        sqlx::query("SELECT 1")
            .execute(&mut *self.lease().await?)
            .await?;
        Ok(())
    }

    /// A connection for one statement or transaction. SQLite connections
    /// go from one lease to the next without the pool: sqlx pings every
    /// connection it takes back, and on SQLite that ping is another round
    /// trip to the connection's own thread (measured on `/api/health`: 3.35
    /// context switches per request with it, 1.65 without, at 50
    /// connections). Skipping it is safe there, as that
    /// thread runs commands in order. PostgreSQL connections take the
    /// pool's way, which notices broken ones.
    pub(crate) async fn lease(&self) -> Result<Lease, DomainError> {
        let Some(warm) = &self.warm else {
            return Ok(Lease {
                connection: Some(self.pool.acquire().await?),
                warm: None,
            });
        };
        let permit = match Arc::clone(&warm.permits).try_acquire_owned() {
            Ok(permit) => permit,
            // A timer only when every connection is busy.
            Err(_) => tokio::time::timeout(
                warm.acquire_timeout,
                Arc::clone(&warm.permits).acquire_owned(),
            )
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
            .map_err(|_| sqlx::Error::PoolClosed)?,
        };
        let reused = warm.idle().pop();
        let connection = match reused {
            Some(connection) => connection,
            None => self.pool.acquire().await?,
        };
        Ok(Lease {
            connection: Some(connection),
            warm: Some((Arc::clone(warm), permit)),
        })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The SQL fragments that differ between the engines.
    pub(crate) fn dialect(&self) -> crate::dialect::Dialect {
        crate::dialect::Dialect(self.backend)
    }

    pub fn pool_stats(&self) -> PoolStats {
        PoolStats {
            size: self.pool.size(),
            idle: u32::try_from(
                self.pool.num_idle() + self.warm.as_ref().map_or(0, |warm| warm.idle().len()),
            )
            .unwrap_or(u32::MAX),
            max: self.max_connections,
        }
    }

    /// Waits for checked-out connections to come back, then closes them.
    pub async fn close(&self) {
        if let Some(warm) = &self.warm {
            // Closed first, so that a lease ending after the drain gives its
            // connection back to the pool (see `Lease::drop`).
            warm.permits.close();
            let idle = std::mem::take(&mut *warm.idle());
            drop(idle);
        }
        self.pool.close().await;
    }
}

/// An open transaction of a unit of work ([`Database::write`]); an executor
/// through `&mut **tx`.
pub type Tx<'c> = sqlx::Transaction<'c, Any>;

/// What the work of a [`Database::write`] returns.
pub type TxFuture<'t, T> =
    std::pin::Pin<Box<dyn Future<Output = Result<T, DomainError>> + Send + 't>>;

/// A connection checked out by [`Database::lease`]; an executor through
/// `&mut *lease`.
pub(crate) struct Lease {
    connection: Option<PoolConnection<Any>>,
    warm: Option<(Arc<WarmConnections>, OwnedSemaphorePermit)>,
}

impl Deref for Lease {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        self.connection
            .as_ref()
            .expect("a lease holds its connection until dropped")
    }
}

impl DerefMut for Lease {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        self.connection
            .as_mut()
            .expect("a lease holds its connection until dropped")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some((warm, permit)) = self.warm.take() else {
            return;
        };
        if let Some(mut connection) = self.connection.take() {
            if sqlx::Connection::is_in_transaction(&*connection) {
                // A unit of work was cancelled (its request dropped) before
                // it committed. Idle in the warm stack, this connection
                // would keep SQLite's write lock until its next use, and
                // every writer meanwhile would fail with "database is
                // locked" (measured under wrk, whose connections close with
                // requests in flight). Roll back first, then hand it back
                // to the pool.
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        while sqlx::Connection::is_in_transaction(&*connection) {
                            let rolled_back = <sqlx::any::AnyTransactionManager as sqlx::TransactionManager>::rollback(&mut connection).await;
                            if let Err(error) = rolled_back {
                                tracing::warn!(%error, "rolling back a cancelled unit of work failed; closing its connection");
                                let _ = connection.close().await;
                                return;
                            }
                        }
                    });
                }
                drop(permit);
                return;
            }
            let mut idle = warm.idle();
            // Checked under the lock that `Database::close` drains with.
            if warm.permits.is_closed() {
                drop(idle);
                drop(connection);
            } else {
                idle.push(connection);
            }
        }
        // After the connection is back, so the next lease finds it.
        drop(permit);
    }
}

/// SQLite should create its file on first start; sqlx only does that with
/// `mode=rwc`.
fn with_sqlite_create(url: &str, backend: Backend) -> String {
    if backend == Backend::Sqlite && !url.contains("mode=") && !url.contains(":memory:") {
        let separator = if url.contains('?') { '&' } else { '?' };
        format!("{url}{separator}mode=rwc")
    } else {
        url.to_owned()
    }
}

/// A database URL fit for logs and error messages: the password is replaced.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_follows_the_url_scheme() {
        assert_eq!(Backend::from_url("sqlite://x.db"), Some(Backend::Sqlite));
        assert_eq!(
            Backend::from_url("postgres://u@h/db"),
            Some(Backend::Postgres)
        );
        assert_eq!(
            Backend::from_url("postgresql://u@h/db"),
            Some(Backend::Postgres)
        );
        assert_eq!(Backend::from_url("mysql://u@h/db"), None);
    }

    #[test]
    fn sqlite_urls_gain_create_mode_once() {
        assert_eq!(
            with_sqlite_create("sqlite://a.db", Backend::Sqlite),
            "sqlite://a.db?mode=rwc"
        );
        assert_eq!(
            with_sqlite_create("sqlite://a.db?mode=ro", Backend::Sqlite),
            "sqlite://a.db?mode=ro"
        );
        assert_eq!(
            with_sqlite_create("postgres://h/db", Backend::Postgres),
            "postgres://h/db"
        );
    }

    #[test]
    fn passwords_never_reach_logs() {
        assert_eq!(
            redact_url("postgres://u:secret@h/db"),
            "postgres://u:***@h/db"
        );
    }

    async fn sqlite_with_two_connections(dir: &tempfile::TempDir) -> Database {
        let url = format!("sqlite://{}", dir.path().join("plaza.db").display());
        let options = DatabaseOptions {
            max_connections: 2,
            ..DatabaseOptions::default()
        };
        Database::connect(&url, &options).await.unwrap()
    }

    #[tokio::test]
    async fn an_ended_sqlite_lease_hands_its_connection_to_a_waiting_one() {
        let dir = tempfile::tempdir().unwrap();
        let db = sqlite_with_two_connections(&dir).await;
        let first = db.lease().await.unwrap();
        let second = db.lease().await.unwrap();
        let waiting = tokio::spawn({
            let db = db.clone();
            async move { db.ping().await }
        });
        drop(first);
        let answered = tokio::time::timeout(Duration::from_secs(3), waiting).await;
        assert!(
            matches!(answered, Ok(Ok(Ok(())))),
            "the waiting query got no connection"
        );
        drop(second);
        assert!(db.pool_stats().size <= 2, "{:?}", db.pool_stats());
        assert_eq!(db.pool_stats().idle, db.pool_stats().size);
    }

    #[tokio::test]
    async fn closing_returns_warm_sqlite_connections_and_refuses_new_leases() {
        let dir = tempfile::tempdir().unwrap();
        let db = sqlite_with_two_connections(&dir).await;
        let mut queries = tokio::task::JoinSet::new();
        for _ in 0..20 {
            let db = db.clone();
            queries.spawn(async move { db.ping().await });
        }
        while let Some(answer) = queries.join_next().await {
            answer.unwrap().unwrap();
        }
        let held = db.lease().await.unwrap();
        let closing = db.close();
        tokio::pin!(closing);
        // Polled once: it refuses new leases, then waits for `held`.
        let polled_once = tokio::time::timeout(Duration::ZERO, &mut closing).await;
        assert!(polled_once.is_err(), "close did not wait for a held lease");
        assert!(
            matches!(db.ping().await, Err(DomainError::Unavailable(_))),
            "a lease after close"
        );
        drop(held);
        let closed = tokio::time::timeout(Duration::from_secs(5), closing).await;
        assert!(
            closed.is_ok(),
            "close waited for connections that never came back"
        );
    }
}
