//! Backup archives. `plaza backup`, the `backup_database` maintenance
//! action and the scheduled backup write one `.tar.gz` holding a
//! consistent copy of the database, the generated keys and the files of a
//! local upload store; `plaza restore` fills an empty data directory (and,
//! on PostgreSQL, an empty database) from one.
//!
//! An archive holds `manifest.json` first, then `database/plaza.db` (an
//! SQLite copy made with `VACUUM INTO`) or `database/plaza.dump` (`pg_dump
//! --format=custom`, taken in the snapshot the manifest's counts were read
//! in), then `keys/jwt-secret` and `keys/analytics-salt` when the data
//! directory holds them, then `uploads/<key>` for each file of a local
//! store. The database is copied before the files are listed, and an
//! upload stores its files before its record: every upload the copy
//! records has its files in the archive, unless it was deleted meanwhile.
//! An S3 store's objects are not copied; the manifest names the store.
//!
//! A restore writes nothing in place before the whole archive has been
//! read and checked: files go to a `.plaza-restore-*` folder beside their
//! destination (inside it for the upload folder, which may be a mount
//! point), then are renamed into place; a failure puts back whatever had
//! been moved, and a failure that cannot be undone says what it left.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::maintenance::DatabaseContents;
use plaza_domain::{Backend, Database, DatabaseOptions, DomainError};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tempfile::TempDir;

use crate::services::storage::Storage;
use crate::settings::Settings;
use crate::startup::{StartupError, create_private_dir};

/// What the manifest says the archive is.
const FORMAT: &str = "plaza-backup";
/// The layout's version: raised when an older Plaza could no longer read
/// what a newer one writes.
const FORMAT_VERSION: u32 = 1;
const MANIFEST_ENTRY: &str = "manifest.json";
const SQLITE_ENTRY: &str = "plaza.db";
const POSTGRES_ENTRY: &str = "plaza.dump";
/// The keys Plaza generates into the data directory.
const KEYS: [&str; 2] = ["jwt-secret", "analytics-salt"];
/// A manifest is a few hundred bytes; a larger first entry is no manifest.
const MANIFEST_MAX_BYTES: u64 = 1 << 20;
/// The folders a restore stages its files in start with this.
const STAGING_PREFIX: &str = ".plaza-restore-";
/// What a data directory may hold and still count as empty, besides empty
/// folders, the serve lock and the archive being restored.
const ALLOWED_IN_EMPTY: [&str; 2] = ["plaza.toml", "backups"];

/// The first entry of an archive.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always `plaza-backup`.
    pub format: String,
    pub format_version: u32,
    /// The Plaza that wrote the archive.
    pub plaza_version: String,
    /// When the database was copied (RFC 3339, UTC).
    pub created_at: String,
    /// `sqlite` or `postgres`.
    pub engine: String,
    /// The newest migration the copied database had applied.
    pub schema_version: i64,
    pub upload_store: UploadStore,
    /// The generated keys in the archive (`keys/<name>`).
    pub keys: Vec<String>,
    /// The rows of the copied database.
    pub counts: Counts,
}

/// The store the upload records name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadStore {
    /// `file:///…` or `s3://bucket/prefix`.
    pub location: String,
    /// Whether its files are in the archive: a local store's are; an S3
    /// store's objects stay in the store.
    pub files_included: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub users: i64,
    pub posts: i64,
    pub uploads: i64,
    pub sessions: i64,
}

impl Counts {
    fn of(contents: &DatabaseContents) -> Counts {
        Counts {
            users: contents.users,
            posts: contents.posts,
            uploads: contents.uploads,
            sessions: contents.sessions,
        }
    }
}

/// Why a backup or a restore did not happen.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// Not done as asked, and nothing written: the operator can change
    /// something (a name, a setting, a tool) and try again.
    #[error("{0}")]
    Refused(String),
    /// The archive is damaged or not a Plaza backup.
    #[error("{0}")]
    BadArchive(String),
    /// Reading, writing or a tool failed.
    #[error("{0}")]
    Failed(String),
}

fn failed(what: impl std::fmt::Display) -> impl FnOnce(io::Error) -> BackupError {
    move |error| BackupError::Failed(format!("{what}: {error}"))
}

fn domain_failed(what: impl std::fmt::Display) -> impl FnOnce(DomainError) -> BackupError {
    move |error| match error {
        DomainError::Conflict(problem) => BackupError::Refused(format!("{what}: {problem}")),
        other => BackupError::Failed(format!("{what}: {other}")),
    }
}

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
    let scratch = tempfile::Builder::new()
        .prefix(".plaza-backup-")
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
    };
    let archived = manifest.clone();
    let engine = db.backend();
    let (upload_files, upload_bytes) = tokio::task::spawn_blocking(move || {
        write_archive(
            file,
            &archived,
            engine,
            &copy,
            &data_dir,
            uploads.as_deref(),
        )
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
/// keys, then every file of the local upload folder. Answers the upload
/// files written and their bytes.
fn write_archive(
    file: File,
    manifest: &Manifest,
    engine: Backend,
    database: &Path,
    data_dir: &Path,
    uploads: Option<&Path>,
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
        Some(folder) => append_uploads(&mut archive, folder).map_err(|error| {
            BackupError::Failed(format!(
                "archiving the uploads in {}: {error}",
                folder.display()
            ))
        })?,
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

/// Appends every stored file under `folder` as `uploads/<key>`, folder by
/// folder in name order. Symbolic links and other special files are no
/// stored uploads and are left out, as are a restore's staging folders.
fn append_uploads<W: Write>(
    archive: &mut tar::Builder<W>,
    folder: &Path,
) -> io::Result<(u64, u64)> {
    let (mut files, mut bytes) = (0, 0);
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
            let mut file = match File::open(folder.join(&path)) {
                // An upload deleted since the folder was listed.
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                opened => opened?,
            };
            bytes += file.metadata()?.len();
            files += 1;
            archive.append_file(Path::new("uploads").join(&path), &mut file)?;
        }
    }
    Ok((files, bytes))
}

/// Creates `path` for writing, readable by the owner only; an existing
/// file is an error of kind `AlreadyExists`.
fn create_private_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// The libpq connection parameters `pg_dump` and `pg_restore` understand;
/// sqlx's own (`statement-cache-capacity`, …) would make them refuse the
/// URL.
const LIBPQ_PARAMETERS: &[&str] = &[
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "host",
    "hostaddr",
    "port",
    "user",
    "dbname",
    "options",
    "application_name",
    "connect_timeout",
    "target_session_attrs",
];

/// `program` (`pg_dump`, `pg_restore`) connecting to the database of
/// `url`. The password travels in `PGPASSWORD`, not on the command line
/// other users can read.
fn libpq_command(program: &str, url: &str) -> Result<std::process::Command, BackupError> {
    let mut parsed = url::Url::parse(url)
        .map_err(|error| BackupError::Refused(format!("database_url: {error}")))?;
    let password = parsed.password().map(percent_decode);
    let _ = parsed.set_password(None);
    let kept: Vec<(String, String)> = parsed
        .query_pairs()
        .filter(|(key, _)| LIBPQ_PARAMETERS.contains(&key.as_ref()))
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    parsed.set_query(None);
    if !kept.is_empty() {
        parsed.query_pairs_mut().extend_pairs(kept);
    }
    let mut command = tool_command(program);
    command
        .arg("--no-password")
        .arg("--dbname")
        .arg(parsed.as_str());
    if let Some(password) = password {
        command.env("PGPASSWORD", password);
    }
    Ok(command)
}

/// `program` with no input, its output discarded and its errors kept.
fn tool_command(program: &str) -> std::process::Command {
    let mut command = std::process::Command::new(program);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// A URL's percent-encoded user-info part, decoded.
fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("p={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// Runs `command` off the async threads; a program missing from the
/// `PATH` is refused with a line saying what PostgreSQL backups need.
async fn run_tool(program: &str, mut command: std::process::Command) -> Result<(), BackupError> {
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .map_err(|error| BackupError::Failed(format!("running {program}: {error}")))?;
    match output {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            Err(BackupError::Refused(format!(
                "{program} is not installed on this machine (not on the PATH): backups of PostgreSQL \
             need its client tools (pg_dump, pg_restore) of the server's major version or newer"
            )))
        }
        Err(error) => Err(BackupError::Failed(format!("running {program}: {error}"))),
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(BackupError::Failed(format!(
            "{program} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))),
    }
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

/// What [`restore`] did.
#[derive(Debug)]
pub struct Restored {
    pub manifest: Manifest,
    pub upload_files: u64,
    pub upload_bytes: u64,
    /// The store the upload records named before, when the restore made
    /// them name this install's local store, and how many it changed.
    pub store_renamed: Option<(String, u64)>,
    /// The store the upload records name now.
    pub store: String,
    /// What `--force` replaced (the database, keys, upload files).
    pub replaced: Vec<String>,
    /// Things the operator should know (an S3 store, another store than
    /// the configured one).
    pub notes: Vec<String>,
}

/// Where a restore puts things.
struct Destinations {
    data_dir: PathBuf,
    /// The SQLite database file; `None` on PostgreSQL.
    sqlite: Option<PathBuf>,
    /// The local upload folder; `None` for an S3 store.
    uploads: Option<PathBuf>,
    /// This install's upload store, as records name it.
    store: String,
}

/// The staging folders of one restore; dropped, they are removed with
/// whatever they still hold (files not moved into place, or the ones
/// `--force` replaced).
struct Staging {
    /// In the data directory: the keys, the PostgreSQL dump and, when it
    /// lives there, the SQLite database.
    main: TempDir,
    /// Beside an SQLite database outside the data directory.
    database: Option<TempDir>,
    /// Inside the upload folder.
    uploads: Option<TempDir>,
}

impl Staging {
    fn database_file(&self, backend: Backend) -> PathBuf {
        match backend {
            Backend::Sqlite => self
                .database
                .as_ref()
                .unwrap_or(&self.main)
                .path()
                .join(SQLITE_ENTRY),
            Backend::Postgres => self.main.path().join(POSTGRES_ENTRY),
        }
    }

    fn key(&self, name: &str) -> PathBuf {
        self.main.path().join("keys").join(name)
    }

    fn uploads(&self) -> Option<PathBuf> {
        self.uploads.as_ref().map(|stage| stage.path().join("new"))
    }
}

/// Restores the archive at `input` into the data directory and database
/// `settings` name, recording it in the restored database's audit trail as
/// `context`. Refused while a server serves that SQLite database, and,
/// unless `force`, when the data directory is not empty or the PostgreSQL
/// database holds tables.
pub async fn restore(
    settings: &Settings,
    input: &Path,
    force: bool,
    context: AuditContext,
) -> Result<Restored, BackupError> {
    let _serving =
        crate::startup::lock_embedded_database(settings).map_err(|error| match error {
            StartupError::DatabaseServed {
                database, holder, ..
            } => BackupError::Refused(format!(
                "a Plaza server (pid {holder}) serves the database {database}: stop it before \
             restoring into it"
            )),
            other => BackupError::Failed(other.to_string()),
        })?;
    let archive = File::open(input).map_err(|error| {
        BackupError::Refused(format!("cannot read {}: {error}", input.display()))
    })?;
    let url = settings.effective_database_url();
    let backend = Backend::from_url(&url).ok_or_else(|| {
        BackupError::Refused("database_url is neither sqlite:// nor postgres://".to_owned())
    })?;
    let data_dir = settings.storage.data_dir.clone();
    create_private_dir(&data_dir).map_err(failed(format!("creating {}", data_dir.display())))?;
    let store = Storage::open(
        settings.storage.storage_url.as_deref(),
        &data_dir,
        std::time::Duration::from_secs(settings.storage.storage_timeout_secs),
    )
    .map_err(BackupError::Refused)?;
    let sqlite = match backend {
        Backend::Sqlite => Some(crate::startup::sqlite_file(&url).ok_or_else(|| {
            BackupError::Refused(format!(
                "database_url {url:?} names no database file to restore into"
            ))
        })?),
        Backend::Postgres => None,
    };
    let destinations = Destinations {
        data_dir,
        sqlite,
        uploads: store.local_folder(),
        store: store.location.clone(),
    };
    remove_stale_staging(&destinations);
    let database = match backend {
        Backend::Postgres => Some(
            crate::startup::connect_database(settings)
                .await
                .map_err(|error| BackupError::Failed(error.to_string()))?,
        ),
        Backend::Sqlite => None,
    };
    let mut occupied = occupied_paths(&destinations, input).map_err(failed(format!(
        "reading {}",
        destinations.data_dir.display()
    )))?;
    if let Some(database) = &database
        && database
            .holds_tables()
            .await
            .map_err(domain_failed("reading the database"))?
    {
        occupied.push(format!(
            "the database {} (it holds tables)",
            plaza_domain::db::redact_url(&url)
        ));
    }
    if !occupied.is_empty() && !force {
        return Err(BackupError::Refused(format!(
            "the data directory {} is not empty: it holds {}. Restore into an empty one (holding \
             at most plaza.toml, backups/ and empty folders) and an empty database, or pass \
             --force to replace the database, the keys and the uploads",
            destinations.data_dir.display(),
            occupied.join(", ")
        )));
    }
    let staging = stage(&destinations).map_err(failed("creating the staging folders"))?;
    let expected = Expected {
        backend,
        latest_schema: plaza_domain::db::latest_schema_version(backend),
        local_store: destinations.uploads.is_some(),
        store: destinations.store.clone(),
    };
    let targets = Targets {
        database: staging.database_file(backend),
        keys: staging.main.path().join("keys"),
        uploads: staging.uploads(),
    };
    let unpacked = tokio::task::spawn_blocking(move || unpack(archive, &expected, &targets))
        .await
        .map_err(|error| BackupError::Failed(format!("reading the archive: {error}")))??;
    let archive_name = input
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let restoring = Restoring {
        destinations: &destinations,
        staging: &staging,
        unpacked: &unpacked,
        archive_name: &archive_name,
        context,
        backend,
    };
    let (store_renamed, replaced) = match database {
        None => restoring.sqlite().await?,
        Some(database) => {
            restoring
                .postgres(&database, &url, !occupied.is_empty())
                .await?
        }
    };
    let mut notes = Vec::new();
    let recorded = &unpacked.manifest.upload_store;
    if !recorded.files_included {
        notes.push(format!(
            "the uploads' files are not in the archive: they stay in {}, whose own versioning \
             keeps their history",
            recorded.location
        ));
        if recorded.location != destinations.store {
            notes.push(format!(
                "the upload records name {}, but storage_url names {}: point storage_url at {} \
                 (or move the files and start once with storage_moved)",
                recorded.location, destinations.store, recorded.location
            ));
        }
    }
    Ok(Restored {
        store: if recorded.files_included {
            destinations.store.clone()
        } else {
            recorded.location.clone()
        },
        manifest: unpacked.manifest,
        upload_files: unpacked.upload_files,
        upload_bytes: unpacked.upload_bytes,
        store_renamed,
        replaced,
        notes,
    })
}

/// Removes the staging folders a restore that crashed left behind. Only
/// one restore runs at a time on an SQLite database (it holds the serve
/// lock); on PostgreSQL the operator runs one at a time.
fn remove_stale_staging(destinations: &Destinations) {
    let mut folders = vec![destinations.data_dir.clone()];
    folders.extend(destinations.uploads.clone());
    folders.extend(
        destinations
            .sqlite
            .as_deref()
            .and_then(Path::parent)
            .filter(|parent| !parent.as_os_str().is_empty())
            .map(Path::to_path_buf),
    );
    for folder in folders {
        let Ok(listing) = fs::read_dir(&folder) else {
            continue;
        };
        for entry in listing.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(STAGING_PREFIX)
            {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// What makes the destination not empty: the entries of the data directory
/// other than `plaza.toml`, `backups`, the serve lock, the archive being
/// restored and empty folders; an SQLite database elsewhere that exists;
/// an upload folder elsewhere that holds anything.
fn occupied_paths(destinations: &Destinations, input: &Path) -> io::Result<Vec<String>> {
    let input = fs::canonicalize(input).ok();
    let lock_name = destinations.sqlite.as_ref().and_then(|database| {
        let mut name = database.file_name()?.to_owned();
        name.push(".lock");
        Some(name)
    });
    let mut occupied: Vec<PathBuf> = Vec::new();
    for entry in fs::read_dir(&destinations.data_dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let path = entry.path();
        let allowed = ALLOWED_IN_EMPTY.iter().any(|allowed| name == *allowed)
            || lock_name.as_ref() == Some(&name)
            || input.is_some() && fs::canonicalize(&path).ok() == input
            || entry.file_type()?.is_dir() && fs::read_dir(&path)?.next().is_none();
        if !allowed {
            occupied.push(path);
        }
    }
    if let Some(database) = &destinations.sqlite
        && database.exists()
    {
        occupied.push(database.clone());
    }
    if let Some(folder) = &destinations.uploads
        && fs::read_dir(folder)?.next().is_some()
    {
        occupied.push(folder.clone());
    }
    occupied.sort();
    let mut seen = Vec::new();
    let mut described = Vec::new();
    for path in occupied {
        let key = fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !seen.contains(&key) {
            described.push(path.display().to_string());
            seen.push(key);
        }
    }
    Ok(described)
}

fn stage(destinations: &Destinations) -> io::Result<Staging> {
    let in_folder = |folder: &Path| {
        tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(folder)
    };
    let main = in_folder(&destinations.data_dir)?;
    create_private_dir(&main.path().join("keys"))?;
    let database = match destinations.sqlite.as_deref().and_then(Path::parent) {
        Some(parent) if !same_folder(parent, &destinations.data_dir) => {
            create_private_dir(parent)?;
            Some(in_folder(parent)?)
        }
        _ => None,
    };
    let uploads = match &destinations.uploads {
        Some(folder) => {
            let stage = in_folder(folder)?;
            create_private_dir(&stage.path().join("new"))?;
            Some(stage)
        }
        None => None,
    };
    Ok(Staging {
        main,
        database,
        uploads,
    })
}

fn same_folder(one: &Path, other: &Path) -> bool {
    let one = if one.as_os_str().is_empty() {
        Path::new(".")
    } else {
        one
    };
    match (fs::canonicalize(one), fs::canonicalize(other)) {
        (Ok(one), Ok(other)) => one == other,
        _ => false,
    }
}

/// What the archive must match.
struct Expected {
    backend: Backend,
    latest_schema: i64,
    /// Whether this install's upload store is a local folder.
    local_store: bool,
    store: String,
}

/// Where [`unpack`] writes each kind of entry.
struct Targets {
    database: PathBuf,
    keys: PathBuf,
    uploads: Option<PathBuf>,
}

/// What [`unpack`] read.
struct Unpacked {
    manifest: Manifest,
    keys: Vec<String>,
    upload_files: u64,
    upload_bytes: u64,
}

fn bad(error: impl std::fmt::Display) -> BackupError {
    BackupError::BadArchive(format!(
        "the archive is damaged or not a Plaza backup (.tar.gz): {error}"
    ))
}

/// Reads the whole archive into the staging folders, checking its
/// manifest against `expected` first and every entry's path and kind.
fn unpack(archive: File, expected: &Expected, targets: &Targets) -> Result<Unpacked, BackupError> {
    let mut reader = tar::Archive::new(GzDecoder::new(BufReader::new(archive)));
    let mut manifest: Option<Manifest> = None;
    let mut database = false;
    let mut keys = Vec::new();
    let (mut upload_files, mut upload_bytes) = (0, 0);
    for entry in reader.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let path = entry.path().map_err(bad)?.into_owned();
        let kind = entry.header().entry_type();
        let Some(read) = &manifest else {
            if path != Path::new(MANIFEST_ENTRY) || !kind.is_file() {
                return Err(BackupError::BadArchive(format!(
                    "not a Plaza backup: its first entry is {}, not {MANIFEST_ENTRY}",
                    path.display()
                )));
            }
            let mut text = Vec::new();
            entry
                .by_ref()
                .take(MANIFEST_MAX_BYTES + 1)
                .read_to_end(&mut text)
                .map_err(bad)?;
            if text.len() as u64 > MANIFEST_MAX_BYTES {
                return Err(BackupError::BadArchive(format!(
                    "not a Plaza backup: its {MANIFEST_ENTRY} is over {MANIFEST_MAX_BYTES} bytes"
                )));
            }
            let parsed: Manifest = serde_json::from_slice(&text).map_err(|error| {
                BackupError::BadArchive(format!("its {MANIFEST_ENTRY} cannot be read: {error}"))
            })?;
            check_manifest(&parsed, expected)?;
            manifest = Some(parsed);
            continue;
        };
        let parts = entry_parts(&path)?;
        let (destination, part) = match parts.as_slice() {
            [folder, name] if folder == "database" => {
                let wanted = match expected.backend {
                    Backend::Sqlite => SQLITE_ENTRY,
                    Backend::Postgres => POSTGRES_ENTRY,
                };
                if name != wanted || database {
                    return Err(unexpected(&path));
                }
                database = true;
                (targets.database.clone(), Part::Database)
            }
            [folder, name] if folder == "keys" && KEYS.contains(&name.as_str()) => {
                keys.push(name.clone());
                (targets.keys.join(name), Part::Key)
            }
            [folder, rest @ ..] if folder == "uploads" && !rest.is_empty() => {
                let Some(uploads) = targets
                    .uploads
                    .as_ref()
                    .filter(|_| read.upload_store.files_included)
                else {
                    return Err(unexpected(&path));
                };
                (
                    rest.iter()
                        .fold(uploads.clone(), |path, part| path.join(part)),
                    Part::Upload,
                )
            }
            _ => return Err(unexpected(&path)),
        };
        match kind {
            tar::EntryType::Directory if part == Part::Upload => {
                create_private_dir(&destination)
                    .map_err(failed(format!("creating {}", destination.display())))?;
            }
            kind if kind.is_file() => {
                let written = write_entry(&mut entry, &destination).map_err(|error| {
                    if error.kind() == io::ErrorKind::AlreadyExists {
                        BackupError::BadArchive(format!(
                            "the archive holds {} twice",
                            path.display()
                        ))
                    } else if error.kind() == io::ErrorKind::UnexpectedEof
                        || error.kind() == io::ErrorKind::InvalidData
                        || error.kind() == io::ErrorKind::InvalidInput
                    {
                        bad(error)
                    } else {
                        BackupError::Failed(format!("writing {}: {error}", destination.display()))
                    }
                })?;
                if part == Part::Upload {
                    upload_files += 1;
                    upload_bytes += written;
                }
            }
            other => {
                return Err(BackupError::BadArchive(format!(
                    "the archive's entry {} is a {other:?}: a Plaza backup holds files and \
                     folders only",
                    path.display()
                )));
            }
        }
    }
    // The rest of the compressed stream, so its checksum is verified.
    io::copy(&mut reader.into_inner(), &mut io::sink()).map_err(bad)?;
    let Some(manifest) = manifest else {
        return Err(BackupError::BadArchive(
            "the archive is empty: not a Plaza backup".to_owned(),
        ));
    };
    if !database {
        return Err(BackupError::BadArchive(
            "the archive ends before its database: it is incomplete".to_owned(),
        ));
    }
    keys.sort();
    let mut listed = manifest.keys.clone();
    listed.sort();
    if keys != listed {
        return Err(BackupError::BadArchive(format!(
            "the archive holds the keys {keys:?}, its manifest lists {listed:?}"
        )));
    }
    Ok(Unpacked {
        manifest,
        keys,
        upload_files,
        upload_bytes,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Database,
    Key,
    Upload,
}

fn unexpected(path: &Path) -> BackupError {
    BackupError::BadArchive(format!(
        "the archive holds {}, which is not part of a Plaza backup",
        path.display()
    ))
}

/// The parts of an entry's path: plain names only (no root, no `..`, no
/// `.`), each valid UTF-8.
fn entry_parts(path: &Path) -> Result<Vec<String>, BackupError> {
    path.components()
        .map(|component| match component {
            Component::Normal(part) => part.to_str().map(str::to_owned),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .filter(|parts| !parts.is_empty())
        .ok_or_else(|| {
            BackupError::BadArchive(format!(
                "the archive's entry {:?} is not a plain relative path",
                path.display()
            ))
        })
}

/// Copies one entry into a new file at `destination` (0600); answers its
/// bytes.
fn write_entry(entry: &mut impl Read, destination: &Path) -> io::Result<u64> {
    if let Some(parent) = destination.parent() {
        create_private_dir(parent)?;
    }
    let mut file = create_private_file(destination)?;
    let written = io::copy(entry, &mut file)?;
    file.sync_all()?;
    Ok(written)
}

fn check_manifest(manifest: &Manifest, expected: &Expected) -> Result<(), BackupError> {
    if manifest.format != FORMAT {
        return Err(BackupError::BadArchive(format!(
            "not a Plaza backup: its manifest's format is {:?}",
            manifest.format
        )));
    }
    if manifest.format_version > FORMAT_VERSION {
        return Err(BackupError::Refused(format!(
            "the archive is of format {}, newer than this Plaza ({}) reads: restore it with \
             Plaza {} or newer",
            manifest.format_version,
            env!("CARGO_PKG_VERSION"),
            manifest.plaza_version
        )));
    }
    if manifest.engine != expected.backend.name() {
        return Err(BackupError::Refused(format!(
            "the archive holds a {} database, but database_url names {}: restore it into the \
             engine it was taken from",
            manifest.engine,
            expected.backend.name()
        )));
    }
    if manifest.schema_version > expected.latest_schema {
        return Err(BackupError::Refused(format!(
            "the archive's schema version {} is newer than this Plaza's ({}): restore it with \
             Plaza {} or newer",
            manifest.schema_version, expected.latest_schema, manifest.plaza_version
        )));
    }
    if manifest.upload_store.files_included && !expected.local_store {
        return Err(BackupError::Refused(format!(
            "the archive holds the files of the local store {}, but storage_url names {}: \
             restore with a local store (storage_url unset or file://…), then move the files",
            manifest.upload_store.location, expected.store
        )));
    }
    Ok(())
}

/// The archive read and staged, about to be put in place.
struct Restoring<'a> {
    destinations: &'a Destinations,
    staging: &'a Staging,
    unpacked: &'a Unpacked,
    archive_name: &'a str,
    context: AuditContext,
    backend: Backend,
}

/// Renames done so far, to undo on failure.
#[derive(Default)]
struct Moves {
    done: Vec<(PathBuf, PathBuf)>,
    /// The destinations whose former contents were moved aside.
    replaced: Vec<String>,
}

impl Moves {
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to).map_err(|error| {
            io::Error::new(
                error.kind(),
                format!("moving {} to {}: {error}", from.display(), to.display()),
            )
        })?;
        self.done.push((from.to_path_buf(), to.to_path_buf()));
        Ok(())
    }

    /// Moves `path`, if it exists, into `aside`.
    fn set_aside(&mut self, path: &Path, aside: &Path) -> io::Result<()> {
        if fs::symlink_metadata(path).is_err() {
            return Ok(());
        }
        create_private_dir(aside)?;
        let name = path.file_name().unwrap_or_default();
        self.rename(path, &aside.join(name))?;
        self.replaced.push(path.display().to_string());
        Ok(())
    }

    /// Puts back everything moved, newest first; answers what could not be.
    fn undo(self) -> Vec<String> {
        let mut left = Vec::new();
        for (from, to) in self.done.into_iter().rev() {
            if let Err(error) = fs::rename(&to, &from) {
                left.push(format!(
                    "{} (still at {}: {error})",
                    from.display(),
                    to.display()
                ));
            }
        }
        left
    }
}

impl Restoring<'_> {
    /// SQLite: checks the staged database, points its upload records at
    /// this install's store and records the restore in it, then moves
    /// everything into place.
    async fn sqlite(&self) -> Result<(Option<(String, u64)>, Vec<String>), BackupError> {
        let staged = self.staging.database_file(Backend::Sqlite);
        let contents = Database::sqlite_file_contents(&staged, true)
            .await
            .map_err(|error| bad(format!("its database cannot be read: {error}")))?;
        self.check_contents(&contents)?;
        let database = Database::connect(
            &format!("sqlite://{}", staged.display()),
            &DatabaseOptions {
                max_connections: 1,
                ..DatabaseOptions::default()
            },
        )
        .await
        .map_err(domain_failed("opening the restored database"))?;
        let renamed = self.record(&database).await;
        database.close().await;
        let renamed = renamed.map_err(domain_failed("recording the restore"))?;
        let mut moves = Moves::default();
        match self.move_into_place(&mut moves) {
            Ok(()) => Ok((renamed, moves.replaced)),
            Err(error) => Err(self.undone(moves, error, "")),
        }
    }

    /// PostgreSQL: checks the dump, moves the files into place, empties
    /// the database when `replace` (it held tables), restores the dump in
    /// one transaction, then points the upload records at this install's
    /// store and records the restore. A failing `pg_restore` changes
    /// nothing in the database and puts the files back.
    async fn postgres(
        &self,
        database: &Database,
        url: &str,
        replace: bool,
    ) -> Result<(Option<(String, u64)>, Vec<String>), BackupError> {
        let dump = self.staging.database_file(Backend::Postgres);
        let mut listing = tool_command("pg_restore");
        listing.arg("--list").arg(&dump);
        run_tool("pg_restore", listing)
            .await
            .map_err(|error| match error {
                BackupError::Failed(problem) => bad(format!("its database dump: {problem}")),
                other => other,
            })?;
        let mut moves = Moves::default();
        if let Err(error) = self.move_into_place(&mut moves) {
            return Err(self.undone(moves, error, ""));
        }
        let mut emptied = "";
        if replace {
            if let Err(error) = database.drop_schema_objects().await {
                return Err(self.undone(
                    moves,
                    io::Error::other(format!("emptying the database: {error}")),
                    "",
                ));
            }
            moves.replaced.push(format!(
                "the database {}",
                plaza_domain::db::redact_url(url)
            ));
            emptied = " The database was emptied (--force) and is empty now.";
        }
        let mut restoring = libpq_command("pg_restore", url)?;
        restoring
            .arg("--single-transaction")
            .arg("--exit-on-error")
            .arg("--no-owner")
            .arg("--no-privileges")
            .arg(&dump);
        if let Err(error) = run_tool("pg_restore", restoring).await {
            return Err(self.undone(moves, io::Error::other(error.to_string()), emptied));
        }
        let contents = database
            .contents()
            .await
            .map_err(domain_failed("reading the restored database"))?;
        self.check_contents(&contents)?;
        let renamed = self.record(database).await.map_err(domain_failed(
            "the database and files are restored, but recording the restore failed",
        ))?;
        Ok((renamed, moves.replaced))
    }

    fn check_contents(&self, contents: &DatabaseContents) -> Result<(), BackupError> {
        let manifest = &self.unpacked.manifest;
        if contents.schema_version != manifest.schema_version
            || Counts::of(contents) != manifest.counts
        {
            return Err(BackupError::BadArchive(format!(
                "the archive's database (schema {}, {:?}) is not the one its manifest describes \
                 (schema {}, {:?})",
                contents.schema_version,
                Counts::of(contents),
                manifest.schema_version,
                manifest.counts
            )));
        }
        Ok(())
    }

    /// Makes the upload records that named the archived local store name
    /// this install's, and records the restore in the audit trail, in one
    /// unit of work. Answers the store renamed and the records changed.
    async fn record(&self, database: &Database) -> Result<Option<(String, u64)>, DomainError> {
        let manifest = &self.unpacked.manifest;
        let from = manifest.upload_store.location.clone();
        let to = (manifest.upload_store.files_included && from != self.destinations.store)
            .then(|| self.destinations.store.clone());
        let context = self.context.clone();
        let changes = json!({
            "archive": self.archive_name,
            "createdAt": manifest.created_at,
            "plazaVersion": manifest.plaza_version,
            "schemaVersion": manifest.schema_version,
            "engine": manifest.engine,
            "uploadStore": {"before": from, "after": to.as_deref().unwrap_or(&from)},
        });
        let renamed = database
            .write(|tx| {
                Box::pin(async move {
                    let renamed = match &to {
                        Some(to) => plaza_domain::uploads::rename_store(tx, &from, to).await?,
                        None => 0,
                    };
                    let mut changes = changes;
                    changes["uploadsRenamed"] = json!(renamed);
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: "system.restore",
                            target_type: "system",
                            target_id: None,
                            changes,
                        },
                    )
                    .await?;
                    Ok(to.map(|_| (from, renamed)))
                })
            })
            .await?;
        Ok(renamed)
    }

    /// Renames the staged database, keys and upload files into place,
    /// moving what they replace into the staging folders first.
    fn move_into_place(&self, moves: &mut Moves) -> io::Result<()> {
        let main = self.staging.main.path();
        if let (Backend::Sqlite, Some(database)) = (self.backend, &self.destinations.sqlite) {
            let stage = self.staging.database.as_ref().map_or(main, TempDir::path);
            let staged = stage.join(SQLITE_ENTRY);
            for suffix in ["", "-wal", "-shm", "-journal"] {
                moves.set_aside(&with_suffix(database, suffix), &stage.join("replaced"))?;
            }
            for suffix in ["-wal", "-shm"] {
                let sidecar = with_suffix(&staged, suffix);
                if sidecar.exists() {
                    moves.rename(&sidecar, &with_suffix(database, suffix))?;
                }
            }
            moves.rename(&staged, database)?;
        }
        for key in &self.unpacked.keys {
            let destination = self.destinations.data_dir.join(key);
            moves.set_aside(&destination, &main.join("replaced"))?;
            moves.rename(&self.staging.key(key), &destination)?;
        }
        if let (Some(folder), Some(stage)) = (&self.destinations.uploads, &self.staging.uploads)
            && self.unpacked.manifest.upload_store.files_included
        {
            let aside = stage.path().join("replaced");
            let mut set_aside = 0;
            for entry in fs::read_dir(folder)? {
                let entry = entry?;
                if entry.path() != stage.path() {
                    create_private_dir(&aside)?;
                    moves.rename(&entry.path(), &aside.join(entry.file_name()))?;
                    set_aside += 1;
                }
            }
            if set_aside > 0 {
                moves
                    .replaced
                    .push(format!("the {set_aside} entries of {}", folder.display()));
            }
            for entry in fs::read_dir(stage.path().join("new"))? {
                let entry = entry?;
                moves.rename(&entry.path(), &folder.join(entry.file_name()))?;
            }
        }
        Ok(())
    }

    /// The error of a restore that failed after moving files: everything
    /// moved is put back, and the error says whether that worked.
    fn undone(&self, moves: Moves, error: io::Error, database_state: &str) -> BackupError {
        let left = moves.undo();
        if left.is_empty() {
            BackupError::Failed(format!(
                "the restore failed and nothing was changed in {}: {error}.{database_state}",
                self.destinations.data_dir.display()
            ))
        } else {
            BackupError::Failed(format!(
                "the restore failed ({error}) and could not put everything back: {}. The data \
                 directory {} is half restored: restore again with --force.{database_state}",
                left.join("; "),
                self.destinations.data_dir.display()
            ))
        }
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_decoded_for_pgpassword() {
        assert_eq!(percent_decode("p%40ss+w%2Ford"), "p@ss+w/ord");
    }

    #[test]
    fn entry_paths_are_plain_relative_names() {
        assert_eq!(
            entry_parts(Path::new("uploads/a/b.png")).unwrap(),
            ["uploads", "a", "b.png"]
        );
        for refused in ["/etc/passwd", "uploads/../../x", "./x", ""] {
            assert!(
                matches!(
                    entry_parts(Path::new(refused)),
                    Err(BackupError::BadArchive(_))
                ),
                "{refused}"
            );
        }
    }
}
