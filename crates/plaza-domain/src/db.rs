//! The connection pool, shared by every domain module, and start-up migration.

use std::collections::HashSet;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::{Migrate, Migrator};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Executor};

use crate::dialect::{Backend, Dialect};
use crate::error::{DomainError, connection_faults};

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

fn migrator(backend: Backend) -> &'static Migrator {
    match backend {
        Backend::Sqlite => &SQLITE_MIGRATIONS,
        Backend::Postgres => &POSTGRES_MIGRATIONS,
    }
}

/// The schema version this build migrates a `backend` database to: its
/// newest migration.
pub fn latest_schema_version(backend: Backend) -> i64 {
    migrator(backend)
        .iter()
        .map(|migration| migration.version)
        .max()
        .unwrap_or_default()
}

/// How much of an SQLite file each connection reads through a memory map
/// instead of copying pages into its own cache: with 16 connections, a
/// search over a large full-text index was otherwise copied into 16 caches.
const SQLITE_MMAP_BYTES: u64 = 1 << 30;

/// What bringing the schema up to date did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationReport {
    /// The migrations this run applied, as `0031_name`, oldest first.
    pub applied: Vec<String>,
    /// The schema version the database is at now.
    pub version: i64,
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
    /// The `application_name` of PostgreSQL connections, as
    /// `pg_stat_activity` shows them: this one, replacing the URL's; or,
    /// when `None`, the URL's, else [`APPLICATION_NAME`]. A restore looks
    /// for other Plaza connections by it.
    pub application_name: Option<String>,
}

impl Default for DatabaseOptions {
    fn default() -> Self {
        DatabaseOptions {
            max_connections: 16,
            acquire_timeout: Duration::from_secs(5),
            sqlite_busy_timeout: Duration::from_secs(5),
            application_name: None,
        }
    }
}

/// The `application_name` of Plaza's PostgreSQL connections when the URL
/// names none. Every connection of Plaza has a name starting with it.
pub const APPLICATION_NAME: &str = "plaza";

/// Connection-pool figures exported as metrics.
#[derive(Debug, Clone, Copy)]
pub struct PoolStats {
    pub size: u32,
    pub idle: u32,
    pub max: u32,
    /// Leases that found every connection busy and waited, since start.
    pub waits: u64,
    /// Leases that waited `acquire_timeout` in vain, since start.
    pub timeouts: u64,
}

/// How long a PostgreSQL connection may sit in the warm stack and still be
/// used without a test: one idle longer is pinged first, as the pool would
/// (a restart or a proxy may have dropped it meanwhile).
const POSTGRES_UNTESTED_IDLE: Duration = Duration::from_secs(1);

/// A handle to the database; cheap to clone, shared by every request.
#[derive(Clone, Debug)]
pub struct Database {
    pool: AnyPool,
    backend: Backend,
    max_connections: u32,
    warm: Arc<WarmConnections>,
    /// What the pool was opened with, for [`Database::with_own_connections`].
    url: Arc<str>,
    options: DatabaseOptions,
}

/// Connections handed from one [`Lease`] to the next without going back to
/// the pool (see [`Database::lease`]). The permits bound the leases to the
/// pool's size, so the pool always has a connection for a lease that finds
/// none here.
#[derive(Debug)]
struct WarmConnections {
    backend: Backend,
    idle: Mutex<Vec<WarmConnection>>,
    permits: Arc<Semaphore>,
    acquire_timeout: Duration,
    /// A connection idle longer than this is pinged before it is used
    /// again; `None` (SQLite, whose connections cannot go stale): never.
    untested_idle: Option<Duration>,
    /// SQLite only: units of work of this process take turns here before
    /// `BEGIN IMMEDIATE`. SQLite lets one writer in at a time, and a writer
    /// that finds the lock taken sleeps in SQLite's busy handler (1 to 100
    /// ms steps) instead of being woken when it is free. Queuing here hands
    /// the lock over at once (admin user list at 10 clients, each request
    /// writing its audit entry: p99 360 ms without the queue).
    writers: Option<tokio::sync::Mutex<()>>,
    /// How often leases waited for a connection, and in vain.
    waits: AtomicU64,
    timeouts: AtomicU64,
    /// Units of work committed through this handle (see [`Database::commits`]).
    commits: AtomicU64,
    /// Woken after each of those commits (see [`Database::committed`]).
    committed: tokio::sync::Notify,
    /// Whether the last attempt to open a connection failed (see
    /// [`Database::new_connection`]).
    outage: Outage,
}

/// What the leases know of a database that stopped answering: while it is
/// down one lease at a time tries to connect, and the others are answered
/// at once instead of each waiting `acquire_timeout` for a connection that
/// will not come.
#[derive(Debug, Default)]
struct Outage {
    down: AtomicBool,
    probing: AtomicBool,
}

/// The cause of a lease refused at once while the database is down.
pub const DATABASE_DOWN: &str = "the database did not answer the last attempt to connect; \
     answered at once while one request at a time tries again";

/// Holds the one probe of a database that is down; letting go (also when the
/// probing request is cancelled) lets the next lease probe.
struct Probe<'a>(&'a AtomicBool);

impl Drop for Probe<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// A connection in the warm stack, since when, and how PostgreSQL plans
/// its prepared statements.
#[derive(Debug)]
struct WarmConnection {
    connection: PoolConnection<Any>,
    idle_since: Instant,
    plans: Plans,
}

/// How PostgreSQL chooses the plan of a prepared statement on a
/// connection. A connection in the pool is always at [`Plans::Default`]:
/// one set otherwise, or whose setting is unknown, is closed instead of
/// going back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plans {
    /// PostgreSQL's own choice: plan again for each execution's parameters
    /// while that looks cheaper than the generic plan.
    Default,
    /// One generic plan per statement, whatever the parameters.
    Generic,
}

impl Plans {
    /// The statement that sets a PostgreSQL connection to these plans.
    fn setting(self) -> &'static str {
        match self {
            Plans::Default => "RESET plan_cache_mode",
            Plans::Generic => "SET plan_cache_mode = force_generic_plan",
        }
    }
}

/// Hands a connection back to the pool when its plans are the default,
/// else closes it.
fn return_to_pool(connection: PoolConnection<Any>, plans: Option<Plans>) {
    if plans == Some(Plans::Default) {
        drop(connection);
    } else {
        drop(connection.detach());
    }
}

impl WarmConnections {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<WarmConnection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Database {
    /// Opens a pool and checks the database answers. SQLite files are created
    /// when missing and every SQLite connection gets WAL, foreign keys and a
    /// busy timeout.
    pub async fn connect(url: &str, options: &DatabaseOptions) -> Result<Self, DomainError> {
        let database = Database::open(url, options)?;
        if database.dialect().0 == Backend::Postgres {
            // One connection of its own first, so that a refusal answers
            // its cause (refused, unknown role, wrong password) where the
            // pool's attempts answer only that it timed out.
            use sqlx::Connection as _;
            match sqlx::AnyConnection::connect(url).await {
                Ok(connection) => connection.close().await?,
                // A role, password or database the server does not know of
                // is a refusal, not an outage: waiting changes nothing.
                Err(sqlx::Error::Database(refused))
                    if refused
                        .code()
                        .is_some_and(|code| code.starts_with("28") || code == "3D000") =>
                {
                    return Err(DomainError::Database(sqlx::Error::Database(refused)));
                }
                Err(other) => return Err(other.into()),
            }
        }
        database.ping().await?;
        Ok(database)
    }

    /// The handle for work that runs on a runtime of its own (the analytics
    /// writer's thread): on PostgreSQL a pool of `max_connections` more,
    /// opened on first use, since a connection's socket is served by the
    /// runtime that opened it and would wait for the other runtime's turn;
    /// on SQLite this same pool, whose connections run on threads of their
    /// own and whose writers must keep taking one turn.
    pub fn with_own_connections(&self, max_connections: u32) -> Result<Database, DomainError> {
        match self.backend {
            Backend::Sqlite => Ok(self.clone()),
            Backend::Postgres => Database::open(
                &self.url,
                &DatabaseOptions {
                    max_connections,
                    ..self.options.clone()
                },
            ),
        }
    }

    /// A pool that connects on first use.
    fn open(url: &str, options: &DatabaseOptions) -> Result<Self, DomainError> {
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
            .connect_lazy(&with_application_name(
                &with_sqlite_create(url, backend),
                backend,
                options.application_name.as_deref(),
            ))?;
        Ok(Database {
            pool,
            backend,
            url: Arc::from(url),
            options: options.clone(),
            max_connections: options.max_connections,
            warm: Arc::new(WarmConnections {
                backend,
                idle: Mutex::default(),
                permits: Arc::new(Semaphore::new(options.max_connections as usize)),
                acquire_timeout: options.acquire_timeout,
                untested_idle: (backend == Backend::Postgres).then_some(POSTGRES_UNTESTED_IDLE),
                writers: (backend == Backend::Sqlite).then(|| tokio::sync::Mutex::new(())),
                waits: AtomicU64::new(0),
                timeouts: AtomicU64::new(0),
                commits: AtomicU64::new(0),
                committed: tokio::sync::Notify::new(),
                outage: Outage::default(),
            }),
        })
    }

    /// Brings the schema up to date and says what that took. Safe to run
    /// from several instances at once: on PostgreSQL the migrator holds an
    /// advisory lock.
    pub async fn migrate(&self) -> Result<MigrationReport, DomainError> {
        let migrator = migrator(self.backend);
        let mut connection = self.lease().await?;
        connection.ensure_migrations_table().await?;
        let before: HashSet<i64> = connection
            .list_applied_migrations()
            .await?
            .into_iter()
            .map(|migration| migration.version)
            .collect();
        migrator.run(&mut *connection).await?;
        let applied = migrator
            .iter()
            .filter(|migration| !before.contains(&migration.version))
            .map(|migration| format!("{:04}_{}", migration.version, migration.description))
            .collect();
        Ok(MigrationReport {
            applied,
            version: latest_schema_version(self.backend),
        })
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
        let _turn = match &self.warm.writers {
            Some(writers) => Some(
                tokio::time::timeout(self.warm.acquire_timeout, writers.lock())
                    .await
                    .map_err(|_| sqlx::Error::PoolTimedOut)?,
            ),
            None => None,
        };
        let mut lease = self.lease().await?;
        lease.unit_of_work_open = true;
        let mut tx =
            sqlx::Connection::begin_with(&mut *lease, self.dialect().begin_write()).await?;
        // Ended here, not by dropping `tx`: a dropped PostgreSQL transaction
        // only queues its ROLLBACK for the connection's next use.
        let outcome = match work(&mut tx).await {
            Ok(value) => tx.commit().await.map(|()| Ok(value)),
            Err(error) => match tx.rollback().await {
                Ok(()) => Ok(Err(error)),
                Err(rollback) => {
                    // The database may have ended the transaction itself
                    // (SQLite does on a full disk or an I/O error), so the
                    // ROLLBACK fails; the work's error is the one to tell.
                    // The connection no longer knows where it stands: it
                    // is closed, not handed on.
                    tracing::debug!(%rollback, "rolling back a failed unit of work failed");
                    lease.discard();
                    return Err(error);
                }
            },
        };
        let ended = outcome?;
        lease.unit_of_work_open = false;
        if ended.is_ok() {
            self.warm.commits.fetch_add(1, Ordering::SeqCst);
            self.warm.committed.notify_one();
        }
        ended
    }

    /// How many units of work ([`Database::write`]) this process has
    /// committed through this handle and its clones, counted once each has
    /// committed: a count unchanged since a read began means no write of
    /// this process landed after it.
    pub fn commits(&self) -> u64 {
        self.warm.commits.load(Ordering::SeqCst)
    }

    /// Returns once a unit of work has committed through this handle since
    /// the last call returned (at once if one has): for one task that
    /// follows this process's writes.
    pub async fn committed(&self) {
        self.warm.committed.notified().await;
    }

    /// The URL the pool was opened with, for connections of their own.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// One real round trip, for health checks.
    pub async fn ping(&self) -> Result<(), DomainError> {
        sqlx::query("SELECT 1")
            .execute(&mut *self.lease().await?)
            .await?;
        Ok(())
    }

    /// A connection for one statement or transaction. Connections go from
    /// one lease to the next without the pool: sqlx pings every connection
    /// it takes back and every one it hands out, a round trip each time
    /// (on SQLite to the connection's own thread: 3.35 context switches per
    /// `/api/health` with them, 1.65 without, at 50 connections; on
    /// PostgreSQL four leases of an admin user list page made eight, and
    /// the page served 1,054–1,093 requests/s with them, 1,217–1,238
    /// without). What the pings guard against is checked otherwise: a lease
    /// that saw an error that can mean a lost connection sends its
    /// connection, and the idle ones, back through the pool, which tests
    /// them; a PostgreSQL connection idle for over
    /// [`POSTGRES_UNTESTED_IDLE`] is pinged before use; a query cancelled
    /// half-way is drained by sqlx before the connection's next statement.
    pub(crate) async fn lease(&self) -> Result<Lease, DomainError> {
        self.lease_with(Plans::Default).await
    }

    /// A connection on which PostgreSQL runs each prepared statement with
    /// its generic plan, planned once per connection, instead of planning
    /// it again for the parameters of each execution while it estimates
    /// that cheaper: for a statement of several joins the planning costs
    /// more than the execution. Only for statements whose best plan is the
    /// same whatever their parameters' values (a range of one key from a
    /// given point): a generic plan cannot use a value (a search term's
    /// rarity, say) to choose. SQLite plans a statement once, when it
    /// prepares it, so on SQLite this is a [`Database::lease`].
    pub(crate) async fn generic_plan_lease(&self) -> Result<Lease, DomainError> {
        self.lease_with(Plans::Generic).await
    }

    /// A lease of a connection set to `plans` (see [`Database::lease`]):
    /// one already set so if one is idle, else one set now with one
    /// statement.
    async fn lease_with(&self, plans: Plans) -> Result<Lease, DomainError> {
        let plans = match self.backend {
            Backend::Postgres => plans,
            Backend::Sqlite => Plans::Default,
        };
        let warm = &self.warm;
        let permit = match Arc::clone(&warm.permits).try_acquire_owned() {
            Ok(permit) => permit,
            // A timer only when every connection is busy.
            Err(_) => {
                let waited = tokio::time::timeout(
                    warm.acquire_timeout,
                    Arc::clone(&warm.permits).acquire_owned(),
                )
                .await;
                warm.waits.fetch_add(1, Ordering::Relaxed);
                if waited.is_err() {
                    warm.timeouts.fetch_add(1, Ordering::Relaxed);
                }
                waited
                    .map_err(|_| sqlx::Error::PoolTimedOut)?
                    .map_err(|_| sqlx::Error::PoolClosed)?
            }
        };
        let faults = connection_faults();
        let reused = {
            let mut idle = warm.idle();
            // The most recent idle connection set to `plans`, else the most
            // recent one.
            let at = idle
                .iter()
                .rposition(|connection| connection.plans == plans)
                .or_else(|| idle.len().checked_sub(1));
            at.map(|at| idle.remove(at))
        };
        let mut lease = Lease {
            connection: None,
            warm: Arc::clone(warm),
            _permit: permit,
            faults,
            unit_of_work_open: false,
            // Unknown until settled below: a lease dropped meanwhile
            // closes its connection rather than hand it on.
            plans: None,
        };
        let mut set_to = Plans::Default;
        if let Some(idle) = reused {
            let stale = warm
                .untested_idle
                .is_some_and(|limit| idle.idle_since.elapsed() > limit);
            lease.connection = Some(idle.connection);
            if !stale || sqlx::Connection::ping(&mut *lease).await.is_ok() {
                set_to = idle.plans;
            } else if let Some(failed) = lease.connection.take() {
                // Back to the pool, whose own test closes it.
                return_to_pool(failed, Some(idle.plans));
            }
        }
        if lease.connection.is_none() {
            lease.connection = Some(self.new_connection().await?);
        }
        if set_to != plans {
            lease.execute(plans.setting()).await?;
        }
        lease.plans = Some(plans);
        Ok(lease)
    }

    /// A connection from the pool. After an attempt to connect failed, one
    /// lease at a time tries again and the others are refused at once with
    /// [`DATABASE_DOWN`]; the first success ends the outage.
    async fn new_connection(&self) -> Result<PoolConnection<Any>, DomainError> {
        let outage = &self.warm.outage;
        let _probe = if outage.down.load(Ordering::Acquire) {
            if outage.probing.swap(true, Ordering::AcqRel) {
                return Err(DomainError::Unavailable(DATABASE_DOWN.to_owned()));
            }
            Some(Probe(&outage.probing))
        } else {
            None
        };
        match self.pool.acquire().await {
            Ok(connection) => {
                outage.down.store(false, Ordering::Release);
                Ok(connection)
            }
            Err(error) => {
                let error = DomainError::from(error);
                if matches!(error, DomainError::Unavailable(_)) {
                    outage.down.store(true, Ordering::Release);
                }
                Err(error)
            }
        }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The SQL fragments that differ between the engines.
    pub(crate) fn dialect(&self) -> Dialect {
        Dialect(self.backend)
    }

    pub fn pool_stats(&self) -> PoolStats {
        PoolStats {
            size: self.pool.size(),
            idle: u32::try_from(self.pool.num_idle() + self.warm.idle().len()).unwrap_or(u32::MAX),
            max: self.max_connections,
            waits: self.warm.waits.load(Ordering::Relaxed),
            timeouts: self.warm.timeouts.load(Ordering::Relaxed),
        }
    }

    /// Waits for checked-out connections to come back, then closes them.
    pub async fn close(&self) {
        // Closed first, so that a lease ending after the drain gives its
        // connection back to the pool (see `Lease::drop`).
        self.warm.permits.close();
        let idle = std::mem::take(&mut *self.warm.idle());
        drop(idle);
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
    warm: Arc<WarmConnections>,
    /// Released when the lease's fields drop, after `Lease::drop` has put
    /// the connection back, so the next lease finds it.
    _permit: OwnedSemaphorePermit,
    /// [`connection_faults`] when the lease began.
    faults: u64,
    /// A unit of work began on this connection and has not ended cleanly.
    unit_of_work_open: bool,
    /// How the connection plans its statements; `None` while a change of
    /// them is unanswered.
    plans: Option<Plans>,
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

impl Lease {
    /// Closes the connection instead of handing it on.
    fn discard(&mut self) {
        if let Some(connection) = self.connection.take() {
            drop(connection.detach());
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let warm = &self.warm;
        if let Some(mut connection) = self.connection.take() {
            let plans = self.plans;
            if self.unit_of_work_open || sqlx::Connection::is_in_transaction(&*connection) {
                // A unit of work was cancelled (its request dropped) or
                // failed to end. Idle in the warm stack, this connection
                // would keep its locks (SQLite's write lock, PostgreSQL's
                // row locks) until its next use: on SQLite every writer
                // meanwhile would fail with "database is locked" (measured
                // under wrk, whose connections close with requests in
                // flight); on PostgreSQL, where a dropped transaction only
                // queues its ROLLBACK, writers waiting for those rows
                // would hold every other connection and the next use would
                // never come (measured: single analytics events with the
                // group commit off stopped). Roll back, send what is
                // queued (the ping), then hand it back to the pool.
                let backend = warm.backend;
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
                        if let Err(error) = sqlx::Connection::ping(&mut *connection).await {
                            tracing::warn!(%error, "ending a cancelled unit of work failed; closing its connection");
                            let _ = connection.close().await;
                            return;
                        }
                        // sqlx counts a PostgreSQL transaction only once it
                        // has read the answer to its BEGIN: one cancelled
                        // before that is open on the server alone, and the
                        // connection's next statements would run in it.
                        // The ROLLBACK ends it, and warns only when there
                        // is none (SQLite counts it where it runs BEGIN).
                        if backend == Backend::Postgres
                            && let Err(error) = connection.execute("ROLLBACK").await
                        {
                            tracing::warn!(%error, "ending a cancelled unit of work failed; closing its connection");
                            let _ = connection.close().await;
                            return;
                        }
                        return_to_pool(connection, plans);
                    });
                }
                return;
            }
            let mut idle = warm.idle();
            match self.plans {
                _ if connection_faults() != self.faults => {
                    // A connection may have been lost meanwhile: this one
                    // and the idle ones go back through the pool, which
                    // tests them.
                    let suspect = std::mem::take(&mut *idle);
                    drop(idle);
                    for warm in suspect {
                        return_to_pool(warm.connection, Some(warm.plans));
                    }
                    return_to_pool(connection, self.plans);
                }
                Some(plans) if !warm.permits.is_closed() => idle.push(WarmConnection {
                    connection,
                    idle_since: Instant::now(),
                    plans,
                }),
                // Closing (checked under the lock that `Database::close`
                // drains with), or its plans unknown.
                plans => {
                    drop(idle);
                    return_to_pool(connection, plans);
                }
            }
        }
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

/// A PostgreSQL URL naming its connections' `application_name`: `name`,
/// replacing the URL's own; without `name`, the URL's own, else
/// [`APPLICATION_NAME`].
fn with_application_name(url: &str, backend: Backend, name: Option<&str>) -> String {
    if backend != Backend::Postgres {
        return url.to_owned();
    }
    let Ok(mut parsed) = url::Url::parse(url) else {
        return url.to_owned();
    };
    if name.is_none() && application_name_of(url).is_some() {
        return url.to_owned();
    }
    let kept: Vec<(String, String)> = parsed
        .query_pairs()
        .filter(|(key, _)| key != "application_name")
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    parsed
        .query_pairs_mut()
        .clear()
        .extend_pairs(kept)
        .append_pair("application_name", name.unwrap_or(APPLICATION_NAME));
    parsed.into()
}

/// The `application_name` a PostgreSQL URL names, if any.
pub fn application_name_of(url: &str) -> Option<String> {
    url::Url::parse(url).ok().and_then(|parsed| {
        parsed
            .query_pairs()
            .find(|(key, _)| key == "application_name")
            .map(|(_, value)| value.into_owned())
    })
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
    fn postgres_connections_are_named_unless_the_url_names_them() {
        let url = "postgres://u@h/db?sslmode=disable";
        assert_eq!(
            with_application_name(url, Backend::Postgres, None),
            "postgres://u@h/db?sslmode=disable&application_name=plaza"
        );
        let named = "postgres://u@h/db?application_name=mine";
        assert_eq!(with_application_name(named, Backend::Postgres, None), named);
        assert_eq!(
            with_application_name(named, Backend::Postgres, Some("plaza-restore-7")),
            "postgres://u@h/db?application_name=plaza-restore-7"
        );
        assert_eq!(application_name_of(named).as_deref(), Some("mine"));
        assert_eq!(application_name_of(url), None);
        let sqlite = "sqlite://plaza.db?mode=rwc";
        assert_eq!(with_application_name(sqlite, Backend::Sqlite, None), sqlite);
    }

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
    async fn a_failed_unit_of_work_the_database_already_rolled_back_tells_its_own_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = sqlite_with_two_connections(&dir).await;
        let failed: Result<(), DomainError> = db
            .write(|tx| {
                Box::pin(async move {
                    // As SQLite does by itself on a full disk.
                    sqlx::query("ROLLBACK").execute(&mut **tx).await?;
                    Err(DomainError::NotFound("the work's own error"))
                })
            })
            .await;
        assert!(
            matches!(failed, Err(DomainError::NotFound("the work's own error"))),
            "{failed:?}"
        );
        let written: i64 = db
            .write(|tx| {
                Box::pin(async move {
                    let (one,): (i64,) = sqlx::query_as("SELECT 1").fetch_one(&mut **tx).await?;
                    Ok(one)
                })
            })
            .await
            .unwrap();
        assert_eq!(written, 1);
    }

    /// The test server's URL, when the environment names one (required
    /// with `PLAZA_TEST_REQUIRE_POSTGRES=1`).
    fn postgres_url() -> Option<String> {
        let url = std::env::var("PLAZA_TEST_POSTGRES_URL").ok();
        assert!(
            url.is_some() || std::env::var("PLAZA_TEST_REQUIRE_POSTGRES").as_deref() != Ok("1"),
            "PLAZA_TEST_POSTGRES_URL is required"
        );
        url
    }

    /// A pool of one connection to `url`.
    async fn with_one_connection(url: &str) -> Database {
        let options = DatabaseOptions {
            max_connections: 1,
            ..DatabaseOptions::default()
        };
        Database::connect(url, &options).await.unwrap()
    }

    /// `plan_cache_mode` as a statement on `lease` sees it.
    async fn plan_cache_mode(lease: Result<Lease, DomainError>) -> String {
        let (mode,): (String,) = sqlx::query_as("SHOW plan_cache_mode")
            .fetch_one(&mut *lease.unwrap())
            .await
            .unwrap();
        mode
    }

    #[tokio::test]
    async fn postgres_uses_generic_plans_only_on_leases_that_ask_for_them() {
        let Some(url) = postgres_url() else {
            return;
        };
        // One connection, set back and forth.
        let db = with_one_connection(&url).await;
        assert_eq!(plan_cache_mode(db.lease().await).await, "auto");
        assert_eq!(
            plan_cache_mode(db.generic_plan_lease().await).await,
            "force_generic_plan"
        );
        assert_eq!(
            plan_cache_mode(db.generic_plan_lease().await).await,
            "force_generic_plan"
        );
        assert_eq!(plan_cache_mode(db.lease().await).await, "auto");
        let written: String = db
            .write(|tx| {
                Box::pin(async move {
                    let (mode,): (String,) = sqlx::query_as("SHOW plan_cache_mode")
                        .fetch_one(&mut **tx)
                        .await?;
                    Ok(mode)
                })
            })
            .await
            .unwrap();
        assert_eq!(written, "auto");
        assert_eq!(db.pool_stats().size, 1, "{:?}", db.pool_stats());
    }

    #[tokio::test]
    async fn a_connection_set_to_generic_plans_never_goes_back_to_the_pool() {
        let Some(url) = postgres_url() else {
            return;
        };
        let db = with_one_connection(&url).await;
        let mut lease = db.generic_plan_lease().await.unwrap();
        // As when a lease saw an error that can mean a lost connection.
        lease.faults = lease.faults.wrapping_sub(1);
        drop(lease);
        assert_eq!(db.pool_stats().size, 0, "{:?}", db.pool_stats());
        assert_eq!(plan_cache_mode(db.lease().await).await, "auto");
    }

    /// A relay on loopback to the PostgreSQL server of `url` that passes
    /// the server's answers on only while the returned sender holds
    /// `false`, and the URL that goes through it.
    async fn relay_holding_answers(url: &str) -> (String, tokio::sync::watch::Sender<bool>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut through = url::Url::parse(url).unwrap();
        let upstream = format!(
            "{}:{}",
            through.host_str().unwrap(),
            through.port().unwrap_or(5432)
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        through.set_host(Some("127.0.0.1")).unwrap();
        through
            .set_port(Some(listener.local_addr().unwrap().port()))
            .unwrap();
        let (hold, held) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = tokio::net::TcpStream::connect(&upstream).await.unwrap();
                let (mut from_client, mut to_client) = client.into_split();
                let (mut from_server, mut to_server) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut from_client, &mut to_server).await;
                });
                let mut held = held.clone();
                tokio::spawn(async move {
                    let mut answer = vec![0; 8192];
                    while let Ok(read @ 1..) = from_server.read(&mut answer).await {
                        let _ = held.wait_for(|hold| !hold).await;
                        if to_client.write_all(&answer[..read]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        (through.into(), hold)
    }

    /// A pool of one connection to `url` through [`relay_holding_answers`],
    /// the connection warm and the answers held from now on: a future's
    /// first poll leases it at once and sends its first statement, whose
    /// answer waits until the sender is set to `false`.
    async fn one_warm_connection_answers_held(
        url: &str,
    ) -> (Database, tokio::sync::watch::Sender<bool>) {
        let (url, hold_answers) = relay_holding_answers(url).await;
        let db = with_one_connection(&url).await;
        db.ping().await.unwrap();
        hold_answers.send_replace(true);
        (db, hold_answers)
    }

    #[tokio::test]
    async fn a_lease_cancelled_while_setting_its_plans_hands_nothing_on() {
        let Some(url) = postgres_url() else {
            return;
        };
        let (db, hold_answers) = one_warm_connection_answers_held(&url).await;
        let mut lease = Box::pin(db.generic_plan_lease());
        let polled_once = tokio::time::timeout(Duration::ZERO, &mut lease).await;
        assert!(polled_once.is_err(), "the lease was set at once");
        drop(lease);
        hold_answers.send_replace(false);
        assert_eq!(plan_cache_mode(db.lease().await).await, "auto");
    }

    #[tokio::test]
    async fn a_unit_of_work_cancelled_before_its_begin_is_answered_leaves_no_transaction_open() {
        let Some(url) = postgres_url() else {
            return;
        };
        let (db, hold_answers) = one_warm_connection_answers_held(&url).await;
        let mut write = Box::pin(db.write(|tx| {
            Box::pin(async move {
                sqlx::query("SELECT 1").execute(&mut **tx).await?;
                Ok(())
            })
        }));
        let polled_once = tokio::time::timeout(Duration::ZERO, &mut write).await;
        assert!(
            polled_once.is_err(),
            "the unit of work ended at once: {polled_once:?}"
        );
        drop(write);
        hold_answers.send_replace(false);
        // Statements alone are each a transaction of their own, which
        // began with it; in an open one they share its start.
        let mut lease = db.lease().await.unwrap();
        let mut began = Vec::new();
        for _ in 0..2 {
            let (at,): (String,) = sqlx::query_as("SELECT CAST(now() AS TEXT)")
                .fetch_one(&mut *lease)
                .await
                .unwrap();
            began.push(at);
        }
        assert_ne!(
            began[0], began[1],
            "the next statements ran in the cancelled transaction"
        );
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
