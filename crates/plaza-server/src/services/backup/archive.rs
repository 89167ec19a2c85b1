//! What writing and restoring an archive share: the format and its
//! entries, the manifest, the generated keys and their fingerprints, the
//! errors, and running PostgreSQL's client tools.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::process::Stdio;

use std::collections::BTreeMap;

use plaza_domain::DomainError;
use plaza_domain::maintenance::DatabaseContents;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::settings::Settings;

/// What the manifest says the archive is.
pub(super) const FORMAT: &str = "plaza-backup";
/// The layout's version: raised when an older Plaza could no longer read
/// what a newer one writes.
pub(super) const FORMAT_VERSION: u32 = 1;
pub(super) const MANIFEST_ENTRY: &str = "manifest.json";
pub(super) const SQLITE_ENTRY: &str = "plaza.db";
pub(super) const POSTGRES_ENTRY: &str = "plaza.dump";
/// The keys Plaza generates into the data directory.
pub(super) const KEYS: [&str; 5] = [
    "jwt-secret",
    "analytics-salt",
    "totp-key",
    "vapid-key",
    "webhook-key",
];
/// The folders a restore stages its files in start with this; a backup
/// leaves them out.
pub(super) const STAGING_PREFIX: &str = ".plaza-restore-";

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
    /// The bytes of each part, which a restore writes no more than
    /// (absent from archives of earlier versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Sizes>,
    /// The fingerprint ([`fingerprint`]) of each key in force when the
    /// backup was taken, set or generated, by its file's name (absent from
    /// archives of earlier versions).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub key_fingerprints: BTreeMap<String, String>,
}

/// The bytes of an archive's parts as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sizes {
    /// The database copy (`database/…`).
    pub database: u64,
    /// The generated keys together (`keys/…`).
    pub keys: u64,
    /// The upload files together (`uploads/…`).
    pub uploads: u64,
}

impl Sizes {
    pub fn total(&self) -> u64 {
        self.database
            .saturating_add(self.keys)
            .saturating_add(self.uploads)
    }
}

/// A key's fingerprint: the first 64 bits of a SHA-256 of the key as Plaza
/// reads it (trimmed), in hex, so two installs can tell whether they hold
/// the same key without showing it.
pub fn fingerprint(secret: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"plaza key fingerprint\n")
        .chain_update(secret.trim().as_bytes())
        .finalize();
    digest[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The setting that replaces the generated key file `name`, when set.
fn key_setting<'a>(settings: &'a Settings, name: &str) -> Option<&'a str> {
    match name {
        "jwt-secret" => settings.auth.jwt_secret.as_deref(),
        "totp-key" => settings.auth.totp_key.as_deref(),
        "analytics-salt" => settings.analytics.analytics_salt.as_deref(),
        "vapid-key" => settings.notifications.vapid_private_key.as_deref(),
        "webhook-key" => settings.webhooks.webhook_key.as_deref(),
        _ => None,
    }
}

/// Where a key in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// The setting (`jwt_secret`, `totp_key`, `analytics_salt`,
    /// `vapid_private_key`, `webhook_key`).
    Setting,
    /// The file Plaza generated into the data directory.
    File,
}

/// The key `name` that `settings` put in force now, with its source: the
/// setting, else the data directory's file; `None` when neither exists
/// yet.
pub fn key_in_force(settings: &Settings, name: &str) -> Option<(KeySource, String)> {
    if let Some(value) = key_setting(settings, name) {
        return Some((KeySource::Setting, value.to_owned()));
    }
    std::fs::read_to_string(settings.storage.data_dir.join(name))
        .ok()
        .filter(|value| !value.trim().is_empty())
        .map(|value| (KeySource::File, value))
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

/// Rows of the main tables of a database copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub users: i64,
    pub posts: i64,
    pub uploads: i64,
    pub sessions: i64,
}

impl Counts {
    pub(super) fn of(contents: &DatabaseContents) -> Counts {
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

/// An I/O error while doing `what`.
pub(super) fn failed(what: impl std::fmt::Display) -> impl FnOnce(io::Error) -> BackupError {
    move |error| BackupError::Failed(format!("{what}: {error}"))
}

/// A database error while doing `what`; a conflict (no Plaza schema, an
/// engine without the feature) is the operator's to fix.
pub(super) fn domain_failed(
    what: impl std::fmt::Display,
) -> impl FnOnce(DomainError) -> BackupError {
    move |error| match error {
        DomainError::Conflict(problem) => BackupError::Refused(format!("{what}: {problem}")),
        other => BackupError::Failed(format!("{what}: {other}")),
    }
}

/// Creates `path` for writing, readable by the owner only; an existing
/// file is an error of kind `AlreadyExists`.
pub(super) fn create_private_file(path: &Path) -> io::Result<File> {
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
pub(super) fn libpq_command(
    program: &str,
    url: &str,
) -> Result<std::process::Command, BackupError> {
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
    let named = kept.iter().any(|(key, _)| key == "application_name");
    if !kept.is_empty() {
        parsed.query_pairs_mut().extend_pairs(kept);
    }
    if !named {
        // Named as Plaza's own connections are, so that a restore sees a
        // backup being taken.
        parsed.query_pairs_mut().append_pair(
            "application_name",
            &format!("{}-{program}", plaza_domain::db::APPLICATION_NAME),
        );
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
pub(super) fn tool_command(program: &str) -> std::process::Command {
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

/// Runs `command` to its end; a program missing from the `PATH` is refused
/// with a line saying what PostgreSQL backups need. Dropping the future
/// (the command was interrupted) kills the program, so a `pg_restore` or
/// `pg_dump` never goes on alone after the command that started it.
pub(super) async fn run_tool(
    program: &str,
    command: std::process::Command,
) -> Result<(), BackupError> {
    let output = tokio::process::Command::from(command)
        .kill_on_drop(true)
        .output()
        .await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_tell_keys_apart_and_ignore_the_trailing_newline() {
        let key = "k".repeat(64);
        assert_eq!(fingerprint(&key), fingerprint(&format!("{key}\n")));
        assert_ne!(fingerprint(&key), fingerprint(&"j".repeat(64)));
        assert_eq!(fingerprint(&key).len(), 16);
    }

    #[test]
    fn passwords_are_decoded_for_pgpassword() {
        assert_eq!(percent_decode("p%40ss+w%2Ford"), "p@ss+w/ord");
    }
}
