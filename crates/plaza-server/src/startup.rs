//! Opening the database at start-up: create the data directory, connect with
//! retries while the database is not up yet, and migrate; and the lock that
//! keeps a second server off an embedded database.
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
    #[error(
        "the data directory {path} is not writable ({source}): Plaza keeps its generated keys, \
         the record of the running server and mail written to files there, on PostgreSQL too; \
         give the user Plaza runs as write access to it, or set data_dir (PLAZA_DATA_DIR)"
    )]
    DataDirNotWritable {
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
    #[error(
        "database {url} refused this connection ({cause}): check the user, password and database name in database_url"
    )]
    DatabaseRefused { url: String, cause: DomainError },
    #[error(
        "another Plaza server (pid {holder}) serves the database {database} in {directory}; \
         stop it first, or give this one its own data directory"
    )]
    DatabaseServed {
        database: String,
        directory: String,
        holder: String,
    },
    #[error("cannot lock the database {path}: {source}")]
    DatabaseLock {
        path: String,
        source: std::io::Error,
    },
    #[error("database migration failed: {0}")]
    Migration(DomainError),
    #[error("loading the emoji catalog failed: {0}")]
    EmojiCatalog(DomainError),
}

/// Connects (retrying with backoff until `database_connect_timeout_secs`)
/// and migrates, so a database that starts after Plaza is waited for.
pub async fn open_database(settings: &Settings) -> Result<Database, StartupError> {
    let database = connect_database(settings).await?;
    let migration = database.migrate().await.map_err(StartupError::Migration)?;
    if migration.applied.is_empty() {
        tracing::info!(version = migration.version, "schema is up to date");
    } else {
        tracing::info!(
            version = migration.version,
            applied = migration.applied.join(", "),
            "schema migrated"
        );
    }
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

/// Connects as [`open_database`] does, retrying, but leaves the schema as
/// it is: for commands that read or replace a database another process may
/// serve (`plaza backup`, `plaza restore`).
pub async fn connect_database(settings: &Settings) -> Result<Database, StartupError> {
    connect_database_as(settings, None).await
}

/// [`connect_database`] with PostgreSQL connections named
/// `application_name` (see [`DatabaseOptions::application_name`]).
pub async fn connect_database_as(
    settings: &Settings,
    application_name: Option<String>,
) -> Result<Database, StartupError> {
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
        application_name,
        ..DatabaseOptions::default()
    };
    let deadline =
        Instant::now() + Duration::from_secs(settings.database.database_connect_timeout_secs);
    let mut delay = Duration::from_millis(100);
    loop {
        match Database::connect(&url, &options).await {
            Ok(database) => return Ok(database),
            // The server answered and said no (an unknown role or database,
            // a wrong password): waiting changes nothing.
            Err(cause @ DomainError::Database(_)) => {
                return Err(StartupError::DatabaseRefused {
                    url: plaza_domain::db::redact_url(&url),
                    cause,
                });
            }
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
    }
}

/// Checks that the server can write into its data directory (creating it
/// when missing) before it connects to any database, so a read-only one is
/// told in one line at start and not by the first feature that writes.
pub fn check_data_dir(settings: &Settings) -> Result<(), StartupError> {
    let dir = &settings.storage.data_dir;
    let path = dir.display().to_string();
    create_private_dir(dir).map_err(|source| StartupError::DataDir {
        path: path.clone(),
        source,
    })?;
    tempfile::Builder::new()
        .prefix(".plaza-writable-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|source| StartupError::DataDirNotWritable { path, source })
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

/// Held for as long as this process serves its SQLite database: an exclusive
/// lock on `<database>.lock`, which the operating system releases when the
/// process ends, also by a crash. The file holds the holder's pid and is
/// 0600, as the database files are.
#[derive(Debug)]
pub struct ServeLock {
    _file: std::fs::File,
}

/// Takes the serve lock of the SQLite database `settings` name, so a second
/// server on the same file stops at once instead of serving it with caches
/// and counters of its own. PostgreSQL and in-memory databases take none.
pub fn lock_embedded_database(settings: &Settings) -> Result<Option<ServeLock>, StartupError> {
    use std::io::{Read, Seek, Write};
    let Some(database) = sqlite_file(&settings.effective_database_url()) else {
        return Ok(None);
    };
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    let path = PathBuf::from(name);
    let failed = |source| StartupError::DatabaseLock {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        create_private_dir(parent).map_err(failed)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).map_err(failed)?;
    make_private(&file).map_err(failed)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let directory = database
                .parent()
                .filter(|parent| !parent.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            return Err(StartupError::DatabaseServed {
                database: database.display().to_string(),
                directory: directory.display().to_string(),
                holder: Some(holder.trim())
                    .filter(|pid| !pid.is_empty())
                    .unwrap_or("unknown")
                    .to_owned(),
            });
        }
        Err(std::fs::TryLockError::Error(source)) => return Err(failed(source)),
    }
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .map_err(failed)?;
    Ok(Some(ServeLock { _file: file }))
}

/// Takes group and other permissions off an open file (a lock file an
/// earlier version created 0644).
#[cfg(unix)]
fn make_private(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = file.metadata()?.permissions().mode();
    if mode & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7700))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn make_private(_file: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

/// The file of a `sqlite:` URL, as sqlx reads it (the part before `?`);
/// `None` for another database, an in-memory one, or a percent-encoded
/// path (which sqlx decodes and this does not try to).
pub(crate) fn sqlite_file(url: &str) -> Option<PathBuf> {
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
