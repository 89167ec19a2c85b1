//! Settings of one section: the database connection.

use serde::{Deserialize, Serialize};

use super::error::{SettingsError, at_least_one};

/// The database connection.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatabaseSettings {
    /// `sqlite://…` or `postgres://…`; unset means `plaza.db` in the data directory.
    pub database_url: Option<String>,
    /// The pool's size; unset, it depends on the engine (see
    /// [`DatabaseSettings::pool_size`]).
    pub database_max_connections: Option<u32>,
    /// How long start-up keeps retrying a database that does not answer.
    pub database_connect_timeout_secs: u64,
    /// How long a request waits for a pooled connection before failing with 503.
    pub database_acquire_timeout_secs: u64,
    /// How instances on PostgreSQL learn of writes to posts, so cached
    /// public answers are checked in memory (SQLite: always in process).
    pub content_notifications: ContentNotifications,
}

/// The channel of [`DatabaseSettings::content_notifications`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContentNotifications {
    /// PostgreSQL's `LISTEN/NOTIFY`, on one connection per instance
    /// outside the pool.
    Database,
    /// Redis pub/sub on `redis_url`, for a PostgreSQL reached through a
    /// pooler that cannot keep a `LISTEN`.
    Redis,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        DatabaseSettings {
            database_url: None,
            database_max_connections: None,
            database_connect_timeout_secs: 30,
            database_acquire_timeout_secs: 5,
            content_notifications: ContentNotifications::Database,
        }
    }
}

impl DatabaseSettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        if let Some(url) = &self.database_url
            && plaza_domain::Backend::from_url(url).is_none()
        {
            return Err(SettingsError::new(
                "database_url",
                "must start with sqlite:// or postgres://",
            ));
        }
        at_least_one([
            (
                "database_connect_timeout_secs",
                self.database_connect_timeout_secs,
            ),
            (
                "database_acquire_timeout_secs",
                self.database_acquire_timeout_secs,
            ),
        ])?;
        at_least_one([(
            "database_max_connections",
            self.database_max_connections.unwrap_or(1),
        )])
    }

    /// Connections in the pool: the setting, or by default 16 for
    /// PostgreSQL and, for SQLite, twice the cores (at least 4). SQLite runs
    /// each connection's statements on a thread of its own, so more
    /// connections than the cores can keep busy only add context switches:
    /// on 2 cores, 4 instead of 16 took the admin moderation queue's p99
    /// from 11–14 ms to 8.4–9.6 ms.
    pub fn pool_size(&self, backend: plaza_domain::Backend) -> u32 {
        self.database_max_connections
            .unwrap_or_else(|| match backend {
                plaza_domain::Backend::Postgres => 16,
                plaza_domain::Backend::Sqlite => std::thread::available_parallelism()
                    .map_or(4, |cores| {
                        u32::try_from(cores.get() * 2).unwrap_or(u32::MAX)
                    })
                    .max(4),
            })
    }
}
