//! Maintenance an admin starts (`POST /api/v1/admin/system/maintenance`)
//! that touches the database or the data directory: a consistent online
//! copy of an SQLite database, and the sweep of stored upload files.

use std::collections::HashSet;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::{Backend, Database, DomainError};

/// A file younger than this is never swept: an upload may be between
/// writing its file and committing its record.
pub const UPLOAD_GRACE: Duration = Duration::from_secs(3600);

impl Database {
    /// Writes a consistent copy of the SQLite database to `target` with
    /// `VACUUM INTO`, while the service keeps serving (readers and writers
    /// go on; the copy is one read transaction). `target` must not exist or
    /// be empty. PostgreSQL has no such statement: a [`DomainError::Conflict`].
    pub async fn backup_sqlite_into(&self, target: &Path) -> Result<(), DomainError> {
        if self.backend() != Backend::Sqlite {
            return Err(DomainError::Conflict(
                "VACUUM INTO is an SQLite statement; back up PostgreSQL with pg_dump".to_owned(),
            ));
        }
        let target = target.to_str().ok_or_else(|| {
            DomainError::Conflict("the backup path is not valid UTF-8".to_owned())
        })?;
        sqlx::query("VACUUM INTO $1")
            .bind(target.to_owned())
            .execute(&mut *self.lease().await?)
            .await?;
        Ok(())
    }

    /// The stored keys (paths under the uploads folder) that upload records
    /// point to, or `None` while nothing records uploads: Plaza has no
    /// uploads table yet, so no file can be told to be an orphan. The
    /// uploads work replaces this with a query of its table.
    pub async fn referenced_upload_keys(&self) -> Result<Option<HashSet<String>>, DomainError> {
        Ok(None)
    }
}

/// What a sweep of the uploads folder found and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UploadSweep {
    pub files_found: u64,
    pub bytes_found: u64,
    pub files_removed: u64,
    pub bytes_removed: u64,
}

/// Walks `root` (symbolic links are neither followed nor removed) and
/// removes the regular files older than `grace` whose key (their path
/// under `root`, `/`-separated) `referenced` does not hold; with
/// `referenced` `None`, only counts. A missing folder is an empty one.
/// Blocking: run it off the async threads.
pub fn sweep_uploads(
    root: &Path,
    referenced: Option<&HashSet<String>>,
    grace: Duration,
) -> io::Result<UploadSweep> {
    let mut sweep = UploadSweep::default();
    let now = SystemTime::now();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error),
        };
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            let metadata = std::fs::symlink_metadata(&path)?;
            if metadata.is_dir() {
                folders.push(path);
                continue;
            }
            if !metadata.is_file() {
                continue;
            }
            sweep.files_found += 1;
            sweep.bytes_found += metadata.len();
            let Some(referenced) = referenced else {
                continue;
            };
            let key = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .components()
                .map(|part| part.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            let old_enough = metadata
                .modified()
                .ok()
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|age| age >= grace);
            if old_enough && !referenced.contains(&key) {
                std::fs::remove_file(&path)?;
                sweep.files_removed += 1;
                sweep.bytes_removed += metadata.len();
            }
        }
    }
    Ok(sweep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, key: &str, bytes: usize) {
        let path = root.join(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, vec![0u8; bytes]).unwrap();
    }

    #[test]
    fn without_records_files_are_counted_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.png", 10);
        write(dir.path(), "2026/11/b.png", 5);
        let sweep = sweep_uploads(dir.path(), None, Duration::ZERO).unwrap();
        assert_eq!(
            sweep,
            UploadSweep {
                files_found: 2,
                bytes_found: 15,
                files_removed: 0,
                bytes_removed: 0
            }
        );
        assert!(dir.path().join("2026/11/b.png").exists());
    }

    #[test]
    fn files_no_record_points_to_are_removed_once_old_enough() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "kept.png", 10);
        write(dir.path(), "2026/11/orphan.png", 5);
        let referenced = HashSet::from(["kept.png".to_owned()]);
        let young = sweep_uploads(dir.path(), Some(&referenced), UPLOAD_GRACE).unwrap();
        assert_eq!(young.files_removed, 0, "a file being uploaded is kept");
        let sweep = sweep_uploads(dir.path(), Some(&referenced), Duration::ZERO).unwrap();
        assert_eq!((sweep.files_found, sweep.files_removed), (2, 1));
        assert_eq!(sweep.bytes_removed, 5);
        assert!(dir.path().join("kept.png").exists());
        assert!(!dir.path().join("2026/11/orphan.png").exists());
    }

    #[test]
    fn a_missing_folder_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let sweep = sweep_uploads(&dir.path().join("uploads"), None, UPLOAD_GRACE).unwrap();
        assert_eq!(sweep, UploadSweep::default());
    }
}
