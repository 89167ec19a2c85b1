//! Writing a backup archive: the database copied first (in one read
//! transaction on SQLite, in an exported snapshot on PostgreSQL), then the
//! manifest, the copy, the keys and the upload files streamed into a
//! gzip-compressed tar file that is renamed into place once complete. The
//! manifest states the bytes of the copy, the keys and the upload files
//! (listed before it is written) and the fingerprints of the keys in force.
//! The
//! database is copied before the files are listed, and an upload stores
//! its files before its record: every upload the copy records has its
//! files in the archive, unless it was deleted meanwhile.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;
use plaza_domain::maintenance::DatabaseContents;
use plaza_domain::{Backend, Database};

use super::archive::{
    BackupError, Counts, FORMAT, FORMAT_VERSION, KEYS, MANIFEST_ENTRY, Manifest, POSTGRES_ENTRY,
    SQLITE_ENTRY, STAGING_PREFIX, Sizes, UploadStore, create_private_file, domain_failed, failed,
    fingerprint, key_in_force, libpq_command, run_tool,
};
use crate::services::storage::Storage;
use crate::settings::Settings;

/// What [`write_backup`] wrote.
#[derive(Debug)]
pub struct Written {
    pub manifest: Manifest,
    pub size_bytes: u64,
    /// The upload files in the archive and their bytes.
    pub upload_files: u64,
    pub upload_bytes: u64,
}

/// Writes the archive of `db`, the keys of the data directory and the files
/// of `store` (when local) to `output`, created 0600, while the server
/// keeps serving. The archive is written under `<output>.partial` and
/// renamed when complete, so `output` is never a half-written archive; an
/// existing `output` is refused.
pub async fn write_backup(
    db: &Database,
    settings: &Settings,
    store: &Storage,
    output: &Path,
) -> Result<Written, BackupError> {
    if output.exists() {
        return Err(BackupError::Refused(format!(
            "{} exists: give the backup another name",
            output.display()
        )));
    }
    let mut partial = output.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let file = match create_private_file(&partial) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            return Err(BackupError::Refused(format!(
                "{} exists: another backup is being written there (remove it if none is)",
                partial.display()
            )));
        }
        Err(error) => return Err(failed(format!("creating {}", partial.display()))(error)),
    };
    let written = write_into(db, settings, store, file, &partial, output).await;
    if written.is_err() {
        let _ = fs::remove_file(&partial);
    }
    written
}

/// How a backup's working folder is named: then the pid of the process
/// writing it, a dash and a random tail.
const SCRATCH_PREFIX: &str = ".plaza-backup-";

/// Removes the working folders in `folder` of backups whose process is
/// gone (killed before it could clean up): they hold a copy of the
/// database. Folders of running backups are left alone, as are any it
/// cannot read.
fn remove_abandoned_scratch(folder: &Path) {
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(SCRATCH_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = rustix::process::Pid::from_raw(pid).is_none_or(|pid| {
            rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
        });
        if gone && entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            match fs::remove_dir_all(entry.path()) {
                Ok(()) => tracing::info!(
                    folder = %entry.path().display(),
                    "removed the working folder of a backup that was stopped"
                ),
                Err(error) => tracing::warn!(
                    folder = %entry.path().display(),
                    %error,
                    "cannot remove the working folder of a backup that was stopped"
                ),
            }
        }
    }
}

/// Creates the empty file `path` readable by its owner only, for a copy of
/// the database to be written into (`VACUUM INTO` and `pg_dump` keep the
/// mode of a file that exists).
fn private_file(path: &Path) -> Result<(), BackupError> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(failed(format!("creating {}", path.display())))
}

async fn write_into(
    db: &Database,
    settings: &Settings,
    store: &Storage,
    file: File,
    partial: &Path,
    output: &Path,
) -> Result<Written, BackupError> {
    let folder = output
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    remove_abandoned_scratch(folder);
    let scratch = tempfile::Builder::new()
        .prefix(&format!("{SCRATCH_PREFIX}{}-", std::process::id()))
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(folder)
        .map_err(failed(format!("creating a folder in {}", folder.display())))?;
    let created_at = time::OffsetDateTime::now_utc();
    let (copy, contents) = copy_database(db, settings, scratch.path()).await?;
    let data_dir = settings.storage.data_dir.clone();
    let uploads = store.local_folder();
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        format_version: FORMAT_VERSION,
        plaza_version: env!("CARGO_PKG_VERSION").to_owned(),
        created_at: created_at
            .format(&time::format_description::well_known::Rfc3339)
            .map_err(|error| BackupError::Failed(error.to_string()))?,
        engine: db.backend().name().to_owned(),
        schema_version: contents.schema_version,
        upload_store: UploadStore {
            location: store.location.clone(),
            files_included: uploads.is_some(),
        },
        keys: KEYS
            .iter()
            .filter(|key| data_dir.join(key).is_file())
            .map(|key| (*key).to_owned())
            .collect(),
        counts: Counts::of(&contents),
        sizes: None,
        key_fingerprints: KEYS
            .iter()
            .filter_map(|key| {
                key_in_force(settings, key)
                    .map(|(_, value)| ((*key).to_owned(), fingerprint(&value)))
            })
            .collect(),
    };
    let engine = db.backend();
    let (manifest, upload_files, upload_bytes) = tokio::task::spawn_blocking(move || {
        let listed = match uploads.as_deref() {
            Some(folder) => list_uploads(folder).map_err(|error| {
                BackupError::Failed(format!(
                    "listing the uploads in {}: {error}",
                    folder.display()
                ))
            })?,
            None => Vec::new(),
        };
        let size = |path: &Path| {
            fs::metadata(path)
                .map(|metadata| metadata.len())
                .map_err(failed(format!("reading {}", path.display())))
        };
        let mut keys = 0;
        for key in &manifest.keys {
            keys += size(&data_dir.join(key))?;
        }
        let manifest = Manifest {
            sizes: Some(Sizes {
                database: size(&copy)?,
                keys,
                uploads: listed.iter().map(|(_, bytes)| bytes).sum(),
            }),
            ..manifest
        };
        let (files, bytes) = write_archive(
            file,
            &manifest,
            engine,
            &copy,
            &data_dir,
            uploads.as_deref().map(|folder| (folder, listed.as_slice())),
        )?;
        Ok::<_, BackupError>((manifest, files, bytes))
    })
    .await
    .map_err(|error| BackupError::Failed(format!("writing the archive: {error}")))??;
    drop(scratch);
    fs::rename(partial, output).map_err(failed(format!(
        "renaming {} to {}",
        partial.display(),
        output.display()
    )))?;
    let size_bytes = fs::metadata(output)
        .map_err(failed(format!("reading {}", output.display())))?
        .len();
    Ok(Written {
        manifest,
        size_bytes,
        upload_files,
        upload_bytes,
    })
}

/// Copies the database into `scratch`: answers the copy's path and what it
/// holds.
async fn copy_database(
    db: &Database,
    settings: &Settings,
    scratch: &Path,
) -> Result<(PathBuf, DatabaseContents), BackupError> {
    match db.backend() {
        Backend::Sqlite => {
            let path = scratch.join(SQLITE_ENTRY);
            private_file(&path)?;
            db.backup_sqlite_into(&path)
                .await
                .map_err(domain_failed("copying the database"))?;
            let contents = Database::sqlite_file_contents(&path, false)
                .await
                .map_err(domain_failed("reading the copy of the database"))?;
            Ok((path, contents))
        }
        Backend::Postgres => {
            let path = scratch.join(POSTGRES_ENTRY);
            private_file(&path)?;
            let url = settings.effective_database_url();
            let (contents, dumped) = db
                .with_postgres_snapshot(|snapshot| pg_dump(&url, &path, snapshot))
                .await
                .map_err(domain_failed("reading the database"))?;
            dumped?;
            Ok((path, contents))
        }
    }
}

/// Streams the archive into `file`: the manifest, the database copy, the
/// keys, then the listed files of the local upload folder. Answers the
/// upload files written and their bytes.
fn write_archive(
    file: File,
    manifest: &Manifest,
    engine: Backend,
    database: &Path,
    data_dir: &Path,
    uploads: Option<(&Path, &[(PathBuf, u64)])>,
) -> Result<(u64, u64), BackupError> {
    let writing = |error: io::Error| BackupError::Failed(format!("writing the archive: {error}"));
    let encoder = GzEncoder::new(BufWriter::new(file), Compression::default());
    let mut archive = tar::Builder::new(encoder);
    // Owners, modes and times of the operator's files stay out of the
    // archive; a restore gives every file 0600.
    archive.mode(tar::HeaderMode::Deterministic);
    let text = serde_json::to_vec_pretty(manifest)
        .map_err(|error| BackupError::Failed(format!("writing the manifest: {error}")))?;
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(text.len() as u64);
    header.set_mode(0o600);
    header.set_cksum();
    archive
        .append_data(&mut header, MANIFEST_ENTRY, text.as_slice())
        .map_err(writing)?;
    let database_entry = match engine {
        Backend::Sqlite => SQLITE_ENTRY,
        Backend::Postgres => POSTGRES_ENTRY,
    };
    archive
        .append_path_with_name(database, Path::new("database").join(database_entry))
        .map_err(writing)?;
    for key in &manifest.keys {
        archive
            .append_path_with_name(data_dir.join(key), Path::new("keys").join(key))
            .map_err(writing)?;
    }
    let (files, bytes) = match uploads {
        Some((folder, listed)) => {
            append_uploads(&mut archive, folder, listed).map_err(|error| {
                BackupError::Failed(format!(
                    "archiving the uploads in {}: {error}",
                    folder.display()
                ))
            })?
        }
        None => (0, 0),
    };
    let encoder = archive.into_inner().map_err(writing)?;
    let buffered = encoder.finish().map_err(writing)?;
    let file = buffered
        .into_inner()
        .map_err(|error| writing(error.into_error()))?;
    file.sync_all().map_err(writing)?;
    Ok((files, bytes))
}

/// Lists every stored file under `folder` with its bytes (its path
/// relative to `folder`), folder by folder in name order. Symbolic links
/// and other special files are no stored uploads and are left out, as are
/// a restore's staging folders and writes in progress.
fn list_uploads(folder: &Path) -> io::Result<Vec<(PathBuf, u64)>> {
    let mut listed = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let listing = match fs::read_dir(folder.join(&relative)) {
            // A folder emptied and removed since it was listed.
            Err(error)
                if error.kind() == io::ErrorKind::NotFound && !relative.as_os_str().is_empty() =>
            {
                continue;
            }
            listing => listing?,
        };
        let mut entries = listing.collect::<io::Result<Vec<_>>>()?;
        entries.sort_by_key(fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name();
            let path = relative.join(&name);
            let kind = entry.file_type()?;
            if kind.is_dir() {
                if !name.to_string_lossy().starts_with(STAGING_PREFIX) {
                    pending.push(path);
                }
                continue;
            }
            // object_store writes a local file as `<key>#<n>` and renames
            // it once complete: such a name is a write in progress.
            if !kind.is_file() || name.to_string_lossy().contains('#') {
                continue;
            }
            match entry.metadata() {
                // An upload deleted since the folder was listed.
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                metadata => listed.push((path, metadata?.len())),
            }
        }
    }
    Ok(listed)
}

/// Appends each listed file of `folder` as `uploads/<key>`. A file deleted
/// since it was listed is left out; one that grew is refused, since the
/// manifest states the bytes listed (stored uploads are never rewritten).
fn append_uploads<W: Write>(
    archive: &mut tar::Builder<W>,
    folder: &Path,
    listed: &[(PathBuf, u64)],
) -> io::Result<(u64, u64)> {
    let (mut files, mut bytes) = (0, 0);
    for (path, listed_bytes) in listed {
        let mut file = match File::open(folder.join(path)) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            opened => opened?,
        };
        let size = file.metadata()?.len();
        if size > *listed_bytes {
            return Err(io::Error::other(format!(
                "{} grew while the backup was written",
                path.display()
            )));
        }
        bytes += size;
        files += 1;
        archive.append_file(Path::new("uploads").join(path), &mut file)?;
    }
    Ok((files, bytes))
}

/// Dumps the PostgreSQL database of `url` into `path` (custom format, for
/// `pg_restore`) as it stands in the exported `snapshot`.
async fn pg_dump(url: &str, path: &Path, snapshot: String) -> Result<(), BackupError> {
    let mut command = libpq_command("pg_dump", url)?;
    command
        .arg("--format=custom")
        .arg(format!("--snapshot={snapshot}"))
        .arg("--file")
        .arg(path);
    run_tool("pg_dump", command).await
}
