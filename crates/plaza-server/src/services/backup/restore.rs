//! Restoring a backup archive. Nothing is written in place before the
//! whole archive has been read and checked: files go to a
//! `.plaza-restore-*` folder beside their destination (inside it for the
//! upload folder, which may be a mount point), the database copy is
//! checked against the manifest, then everything is renamed into place; a
//! failure puts back whatever had been moved, and a failure that cannot be
//! undone says what it left. A PostgreSQL restore is refused while another
//! Plaza is connected to the database (its connections are named `plaza…`
//! in `pg_stat_activity`), and any restore whose archive's keys are not
//! the install's needs `--force`.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::db::{APPLICATION_NAME, application_name_of};
use plaza_domain::maintenance::DatabaseContents;
use plaza_domain::{Backend, Database, DatabaseOptions, DomainError};
use serde_json::json;
use tempfile::TempDir;

use super::archive::{
    BackupError, Counts, KEYS, KeySource, Manifest, POSTGRES_ENTRY, SQLITE_ENTRY, STAGING_PREFIX,
    domain_failed, failed, fingerprint, key_in_force, libpq_command, run_tool, tool_command,
};
use super::unpack::{Expected, Targets, Unpacked, bad, unpack};
use crate::services::storage::Storage;
use crate::settings::Settings;
use crate::startup::{StartupError, create_private_dir};

/// What a data directory may hold and still count as empty, besides empty
/// folders, the serve lock and the archive being restored.
const ALLOWED_IN_EMPTY: [&str; 2] = ["plaza.toml", "backups"];

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
    /// The archive's keys against this install's.
    pub keys: Vec<KeyComparison>,
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
        Backend::Postgres => {
            let own = format!("{APPLICATION_NAME}-restore-{}", std::process::id());
            let database = crate::startup::connect_database_as(settings, Some(own.clone()))
                .await
                .map_err(|error| BackupError::Failed(error.to_string()))?;
            let others = other_plaza_connections(&database, &own, &url).await?;
            if !others.is_empty() {
                database.close().await;
                return Err(BackupError::Refused(format!(
                    "another Plaza is connected to the database {}: {}. Stop every instance \
                     (and every plaza command) using it before restoring; --force does not \
                     override this",
                    plaza_domain::db::redact_url(&url),
                    others.join(", ")
                )));
            }
            Some(database)
        }
        Backend::Sqlite => None,
    };
    let mut occupied = occupied_paths(&destinations, input).map_err(failed(format!(
        "reading {}",
        destinations.data_dir.display()
    )))?;
    let holds_tables = match &database {
        Some(database) => database
            .holds_tables()
            .await
            .map_err(domain_failed("reading the database"))?,
        None => false,
    };
    if holds_tables {
        occupied.push(format!(
            "the database {} (it holds tables)",
            plaza_domain::db::redact_url(&url)
        ));
    }
    if !occupied.is_empty() && !force {
        return Err(BackupError::Refused(format!(
            "the install is not empty: found {}. Restore into an empty data directory (holding \
             at most plaza.toml, backups/ and empty folders) and an empty database, or pass \
             --force to replace the database, the keys and the uploads",
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
    let keys = compare_keys(settings, &unpacked, &staging);
    if !force && keys.iter().any(KeyComparison::differs) {
        return Err(BackupError::Refused(format!(
            "the archive's keys are not this install's:\n{}\nWhat the archive's keys sealed, \
             signed or hashed (two-factor secrets, admin tokens, client hashes, push \
             subscriptions, webhook secrets) would not be read with other keys. Set the \
             settings that name keys (jwt_secret, totp_key, analytics_salt, vapid_private_key, \
             webhook_key) as the archived install had them, or pass --force to restore anyway",
            keys.iter()
                .map(|key| format!("  {}", key.line()))
                .collect::<Vec<_>>()
                .join("\n")
        )));
    }
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
        Some(database) => restoring.postgres(&database, &url, holds_tables).await?,
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
        keys,
    })
}

/// One generated key of the archive against this install's, by
/// fingerprint ([`fingerprint`]).
#[derive(Debug)]
pub struct KeyComparison {
    /// The key file's name (`jwt-secret`, `totp-key`, `analytics-salt`,
    /// `vapid-key`, `webhook-key`).
    pub name: &'static str,
    /// The archive's key in force when it was taken (for an archive of an
    /// earlier version, its key file's), if known.
    pub archive: Option<String>,
    /// This install's key in force now, and where it comes from.
    pub install: Option<(KeySource, String)>,
    /// The key in force after the restore: the setting, else the archive's
    /// file, else this install's file; `None` when a new one would be
    /// generated.
    pub after: Option<String>,
}

impl KeyComparison {
    /// Whether the archive's key and this install's are not the same, or
    /// the key in force after the restore would not be the archive's.
    pub fn differs(&self) -> bool {
        let Some(archive) = &self.archive else {
            return false;
        };
        let install_differs = self
            .install
            .as_ref()
            .is_some_and(|(_, install)| install != archive);
        install_differs || self.after.as_ref() != Some(archive)
    }

    /// One line for the operator.
    pub fn line(&self) -> String {
        let install = match &self.install {
            Some((KeySource::Setting, fingerprint)) => format!("{fingerprint} (its setting)"),
            Some((KeySource::File, fingerprint)) => format!("{fingerprint} (its file)"),
            None => "none".to_owned(),
        };
        format!(
            "key {}: archive {}, this install {install}, in force after the restore {}{}",
            self.name,
            self.archive.as_deref().unwrap_or("not recorded"),
            self.after.as_deref().unwrap_or("a new one"),
            if self.differs() { ": DIFFERS" } else { "" }
        )
    }
}

/// Each generated key of the archive (`keys/…`, or the manifest's
/// fingerprints) against this install's.
fn compare_keys(settings: &Settings, unpacked: &Unpacked, staging: &Staging) -> Vec<KeyComparison> {
    KEYS.iter()
        .map(|name| {
            let archived = unpacked
                .keys
                .iter()
                .any(|key| key == name)
                .then(|| fs::read_to_string(staging.key(name)).ok())
                .flatten()
                .map(|value| fingerprint(&value));
            let archive = unpacked
                .manifest
                .key_fingerprints
                .get(*name)
                .cloned()
                .or_else(|| archived.clone());
            let install =
                key_in_force(settings, name).map(|(source, value)| (source, fingerprint(&value)));
            let after = match &install {
                Some((KeySource::Setting, fingerprint)) => Some(fingerprint.clone()),
                _ => archived
                    .or_else(|| install.as_ref().map(|(_, fingerprint)| fingerprint.clone())),
            };
            KeyComparison {
                name,
                archive,
                install,
                after,
            }
        })
        .filter(|key| key.archive.is_some() || key.install.is_some())
        .collect()
}

/// How long a restore waits for other Plaza connections to go before it
/// refuses: a server just stopped leaves its connections in
/// `pg_stat_activity` until their backends have exited.
const CONNECTIONS_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The other Plaza connections to the PostgreSQL database of `url` that
/// are still there after [`CONNECTIONS_GRACE`] (see
/// [`Database::other_plaza_connections`]).
async fn other_plaza_connections(
    database: &Database,
    own: &str,
    url: &str,
) -> Result<Vec<String>, BackupError> {
    let configured = application_name_of(url);
    let deadline = tokio::time::Instant::now() + CONNECTIONS_GRACE;
    loop {
        let others = database
            .other_plaza_connections(own, configured.as_deref())
            .await
            .map_err(domain_failed("reading the database's connections"))?;
        if others.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok(others);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
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
        let marker = self.begin_marker()?;
        let mut moves = Moves::default();
        match self.move_into_place(&mut moves) {
            Ok(()) => {
                marker.finish();
                Ok((renamed, moves.replaced))
            }
            Err(error) => Err(self.undone(moves, error, "", marker)),
        }
    }

    fn begin_marker(&self) -> Result<RestoreMarker, BackupError> {
        RestoreMarker::begin(&self.destinations.data_dir, self.archive_name).map_err(failed(
            format!(
                "writing {}",
                self.destinations.data_dir.join(RESTORE_MARKER).display()
            ),
        ))
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
        let marker = self.begin_marker()?;
        let mut moves = Moves::default();
        if let Err(error) = self.move_into_place(&mut moves) {
            return Err(self.undone(moves, error, "", marker));
        }
        let mut emptied = "";
        if replace {
            if let Err(error) = database.drop_schema_objects().await {
                return Err(self.undone(
                    moves,
                    io::Error::other(format!("emptying the database: {error}")),
                    "",
                    marker,
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
            return Err(self.undone(moves, io::Error::other(error.to_string()), emptied, marker));
        }
        let contents = database
            .contents()
            .await
            .map_err(domain_failed("reading the restored database"))?;
        self.check_contents(&contents)?;
        let recorded = self.record(database).await;
        marker.finish();
        let renamed = recorded.map_err(domain_failed(
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
    /// moved is put back, and the error says whether that worked. The
    /// marker goes only when the install is as it was (an emptied database
    /// is not).
    fn undone(
        &self,
        moves: Moves,
        error: io::Error,
        database_state: &str,
        marker: RestoreMarker,
    ) -> BackupError {
        let left = moves.undo();
        if left.is_empty() && database_state.is_empty() {
            marker.finish();
        }
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

/// The file in the data directory that says a restore has begun to put
/// files in place and has not finished: while it exists the install may be
/// half restored, and every command but `plaza restore` refuses to start
/// (see [`unfinished_restore`]).
pub const RESTORE_MARKER: &str = "restore-in-progress";

/// Why the install in `data_dir` must not be used yet: a restore into it
/// began and did not finish (it was killed, or failed and could not put
/// everything back). `None` when no restore is unfinished.
pub fn unfinished_restore(data_dir: &Path) -> Option<String> {
    let path = data_dir.join(RESTORE_MARKER);
    let began = fs::read_to_string(&path).ok()?;
    Some(format!(
        "{} did not finish, so the database, the keys or the uploads may be half restored. \
         Run `plaza restore --force` with that archive again; or, if you know the install is \
         whole, remove {}",
        began.trim(),
        path.display()
    ))
}

/// The marker of a restore under way ([`RESTORE_MARKER`]). It is removed
/// only when the install is whole again, restored or put back; a restore
/// that is killed or cannot undo its moves leaves it behind.
struct RestoreMarker {
    path: PathBuf,
}

impl RestoreMarker {
    fn begin(data_dir: &Path, archive_name: &str) -> io::Result<RestoreMarker> {
        let path = data_dir.join(RESTORE_MARKER);
        let began = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let text = format!(
            "a restore of {archive_name} (plaza restore, pid {}) began at {began}\n",
            std::process::id()
        );
        let _ = fs::remove_file(&path);
        let mut file = super::archive::create_private_file(&path)?;
        io::Write::write_all(&mut file, text.as_bytes())?;
        file.sync_all()?;
        Ok(RestoreMarker { path })
    }

    /// The install is whole: a restore into it is no longer unfinished.
    fn finish(self) {
        if let Err(error) = fs::remove_file(&self.path)
            && error.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!(path = %self.path.display(), %error, "cannot remove the restore marker");
        }
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
