//! The connection pool, shared by every domain module, and start-up migration.

use std::time::Duration;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::Migrator;
use sqlx::{AnyPool, Executor};

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
        migrator.run(&self.pool).await?;
        Ok(())
    }

    /// One real round trip, for health checks.
    pub async fn ping(&self) -> Result<(), DomainError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn pool_stats(&self) -> PoolStats {
        PoolStats {
            size: self.pool.size(),
            idle: u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX),
            max: self.max_connections,
        }
    }

    /// Waits for checked-out connections to come back, then closes them.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
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
}
