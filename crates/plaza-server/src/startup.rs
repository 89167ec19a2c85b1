//! Opening the database at start-up: create the data directory, connect with
//! retries while the database is not up yet, and migrate.
//!
//! The data directory is created 0700 and SQLite's files are kept 0600:
//! they hold password hashes, emails and session hashes. SQLite gives its
//! `-wal` and `-shm` files the main file's mode, so the main file is
//! created 0600 before sqlx opens it, and files left with wider modes by
//! an earlier version are tightened.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use plaza_domain::{Backend, Database, DatabaseOptions, DomainError};

use crate::settings::Settings;

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot protect the database file {path}: {source}")]
    DatabaseFile {
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
    #[error("loading the emoji catalog failed: {0}")]
    EmojiCatalog(DomainError),
}

/// Connects (retrying with backoff until `database_connect_timeout_secs`)
/// and migrates, so a database that starts after Plaza is waited for.
pub async fn open_database(settings: &Settings) -> Result<Database, StartupError> {
    create_private_dir(&settings.storage.data_dir).map_err(|source| StartupError::DataDir {
        path: settings.storage.data_dir.display().to_string(),
        source,
    })?;
    let url = settings.effective_database_url();
    if let Some(path) = sqlite_file(&url) {
        protect_sqlite_files(&path, !url.contains("mode=") || url.contains("mode=rwc")).map_err(
            |source| StartupError::DatabaseFile {
                path: path.display().to_string(),
                source,
            },
        )?;
    }
    let options = DatabaseOptions {
        max_connections: settings
            .database
            .pool_size(Backend::from_url(&url).unwrap_or(Backend::Sqlite)),
        acquire_timeout: Duration::from_secs(settings.database.database_acquire_timeout_secs),
        ..DatabaseOptions::default()
    };
    let deadline =
        Instant::now() + Duration::from_secs(settings.database.database_connect_timeout_secs);
    let mut delay = Duration::from_millis(100);
    let database = loop {
        match Database::connect(&url, &options).await {
            Ok(database) => break database,
            Err(cause) if Instant::now() + delay >= deadline => {
                return Err(StartupError::DatabaseUnreachable {
                    url: plaza_domain::db::redact_url(&url),
                    seconds: settings.database.database_connect_timeout_secs,
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
    if database
        .load_emoji_catalog()
        .await
        .map_err(StartupError::EmojiCatalog)?
    {
        tracing::info!("emoji catalog loaded");
    }
    tracing::info!(backend = database.backend().name(), "database ready");
    Ok(database)
}

/// Creates `dir` (and missing parents) readable by the owner only. An
/// existing directory is left as the operator made it.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// The file of a `sqlite:` URL, as sqlx reads it (the part before `?`);
/// `None` for another database, an in-memory one, or a percent-encoded
/// path (which sqlx decodes and this does not try to).
fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    (!path.is_empty() && path != ":memory:" && !path.contains('%')).then(|| PathBuf::from(path))
}

/// Creates the database file 0600 when missing (and `create` allows it)
/// and takes group and other permissions off it and its `-wal`, `-shm`
/// and `-journal` files.
#[cfg(unix)]
fn protect_sqlite_files(path: &Path, create: bool) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if create && !path.exists() {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
    }
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        if let Ok(metadata) = std::fs::metadata(&file) {
            let mode = metadata.permissions().mode();
            if mode & 0o077 != 0 {
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode & 0o7700))?;
            }
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn protect_sqlite_files(_path: &Path, _create: bool) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_files_are_found_as_sqlx_reads_them() {
        assert_eq!(
            sqlite_file("sqlite://./data/plaza.db"),
            Some(PathBuf::from("./data/plaza.db"))
        );
        assert_eq!(
            sqlite_file("sqlite:///var/lib/plaza/plaza.db?mode=rwc"),
            Some(PathBuf::from("/var/lib/plaza/plaza.db"))
        );
        assert_eq!(
            sqlite_file("sqlite:plaza.db"),
            Some(PathBuf::from("plaza.db"))
        );
        assert_eq!(sqlite_file("sqlite://:memory:"), None);
        assert_eq!(sqlite_file("postgres://localhost/plaza"), None);
    }
}
