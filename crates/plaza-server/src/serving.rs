//! Which database the running service serves, for the command line to
//! compare with its own. Every `plaza serve` holds a shared lock on
//! `<data_dir>/serving` and writes its pid and database there (the URL
//! without password or options); a command that would act on another
//! database while that lock is held says so and stops, rather than change
//! a database nobody serves (the SQLite file a package's first start left
//! behind, when the service has since moved to PostgreSQL).

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::settings::Settings;

/// The file in the data directory.
const FILE_NAME: &str = "serving";

/// The record held while the service serves; dropping it releases the lock.
pub struct ServingRecord {
    _file: File,
}

fn record_path(settings: &Settings) -> PathBuf {
    settings.storage.data_dir.join(FILE_NAME)
}

/// Takes the shared lock and writes this process's pid and database.
/// Instances sharing a data directory share the lock.
pub fn record_serving(settings: &Settings) -> Result<ServingRecord, String> {
    let path = record_path(settings);
    let failed = |error: std::io::Error| format!("cannot write {}: {error}", path.display());
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(failed)?;
    file.lock_shared().map_err(failed)?;
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| {
            writeln!(
                file,
                "{}\n{}",
                std::process::id(),
                database_identity(settings)
            )
        })
        .map_err(failed)?;
    Ok(ServingRecord { _file: file })
}

/// Refuses a command whose database is not the one a running service
/// serves from the same data directory; without a running service, or
/// on the same database, it goes ahead.
pub fn refuse_other_database(settings: &Settings) -> Result<(), String> {
    let path = record_path(settings);
    let Ok(mut file) = File::open(&path) else {
        return Ok(());
    };
    match file.try_lock() {
        Ok(()) => return Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {}
        Err(std::fs::TryLockError::Error(error)) => {
            return Err(format!("cannot read {}: {error}", path.display()));
        }
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let mut lines = text.lines();
    let pid = lines.next().unwrap_or("unknown");
    let served = lines.next().unwrap_or_default();
    let ours = database_identity(settings);
    if served.is_empty() || served == ours {
        return Ok(());
    }
    Err(format!(
        "the service running from the data directory {} (pid {pid}) serves {served}, but this \
         command would act on {ours}: give it the service's settings (the settings file and the \
         plaza.env beside it; docs/operations.md, \"The command line\"); nothing was changed",
        settings.storage.data_dir.display()
    ))
}

/// The database `settings` name, comparable across processes: an SQLite
/// file by its absolute path, a server by `scheme://user@host:port/name`.
fn database_identity(settings: &Settings) -> String {
    let url = settings.effective_database_url();
    if let Some(file) = crate::startup::sqlite_file(&url) {
        return format!("sqlite:{}", absolute(&file).display());
    }
    match url::Url::parse(&url) {
        Ok(parsed) => format!(
            "{}://{}@{}:{}{}",
            parsed.scheme(),
            parsed.username(),
            parsed.host_str().unwrap_or("localhost"),
            parsed.port().unwrap_or(5432),
            parsed.path()
        ),
        Err(_) => url
            .split(['?', '@'])
            .next_back()
            .unwrap_or_default()
            .to_owned(),
    }
}

/// `path` made absolute, through the folder's real path when it exists.
fn absolute(path: &Path) -> PathBuf {
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    let folder = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match std::fs::canonicalize(folder) {
        Ok(folder) => folder.join(name),
        Err(_) => std::path::absolute(path).unwrap_or_else(|_| path.to_owned()),
    }
}
