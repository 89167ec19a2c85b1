//! Opening the database at start-up: create the data directory, connect with
//! retries while the database is not up yet, and migrate.

use std::time::{Duration, Instant};

use plaza_domain::{Database, DatabaseOptions, DomainError};

use crate::settings::Settings;

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
    #[error("database {url} did not answer within {seconds}s: {cause}")]
    DatabaseUnreachable {
        url: String,
        seconds: u64,
        cause: DomainError,
    },
    #[error("database migration failed: {0}")]
    Migration(DomainError),
}

/// Connects (retrying with backoff until `database_connect_timeout_secs`)
/// and migrates, so a database that starts after Plaza is waited for.
pub async fn open_database(settings: &Settings) -> Result<Database, StartupError> {
    std::fs::create_dir_all(&settings.data_dir).map_err(|source| StartupError::DataDir {
        path: settings.data_dir.display().to_string(),
        source,
    })?;
    let url = settings.effective_database_url();
    let options = DatabaseOptions {
        max_connections: settings.database_max_connections,
        acquire_timeout: Duration::from_secs(settings.database_acquire_timeout_secs),
        ..DatabaseOptions::default()
    };
    let deadline = Instant::now() + Duration::from_secs(settings.database_connect_timeout_secs);
    let mut delay = Duration::from_millis(100);
    let database = loop {
        match Database::connect(&url, &options).await {
            Ok(database) => break database,
            Err(cause) if Instant::now() + delay >= deadline => {
                return Err(StartupError::DatabaseUnreachable {
                    url: plaza_domain::db::redact_url(&url),
                    seconds: settings.database_connect_timeout_secs,
                    cause,
                });
            }
            Err(cause) => {
                tracing::warn!(%cause, retry_in_ms = delay.as_millis() as u64, "database not reachable yet");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    };
    database.migrate().await.map_err(StartupError::Migration)?;
    tracing::info!(backend = database.backend().name(), "database ready");
    Ok(database)
}
