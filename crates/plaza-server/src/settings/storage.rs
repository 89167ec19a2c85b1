//! Settings of one section: the data directory and uploaded files.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::error::{SettingsError, at_least_one};

/// The longest `backup_interval_hours`: a year.
const MAX_BACKUP_INTERVAL_HOURS: u64 = 366 * 24;

/// Files Plaza keeps: the data directory and uploads.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct StorageSettings {
    /// Holds the SQLite database, generated keys, uploads and backups.
    pub data_dir: PathBuf,
    /// Where uploads live: `file:///folder` or `s3://bucket/prefix`
    /// (`AWS_*` variables configure S3); unset: `<data_dir>/uploads`.
    pub storage_url: Option<String>,
    /// Largest upload in bytes (SPEC.md: 5 MB).
    pub upload_max_bytes: usize,
    /// Smallest upload in bytes (SPEC.md: 1 KB).
    pub upload_min_bytes: usize,
    /// Largest width and height of an uploaded image.
    pub upload_max_dimension: u32,
    /// Uploads decoded and encoded at once; more wait up to 5 s, then 503.
    pub upload_max_concurrent: usize,
    /// `host:port` of a ClamAV `clamd` that scans every upload; unset: the
    /// built-in structure check only.
    pub upload_clamd_address: Option<String>,
    /// How many backups `backup_database` and the scheduled backup keep in
    /// `<data_dir>/backups`; older ones are removed after each new one.
    pub backup_keep: usize,
    /// Hours between scheduled backups into `<data_dir>/backups` (once per
    /// cluster, by whichever instance claims the run); 0: none.
    pub backup_interval_hours: u64,
    /// How long one call to the upload store (a write, read, delete or a
    /// page of a listing) may take before it fails.
    pub storage_timeout_secs: u64,
    /// Set once, after the files of every upload were moved to the store
    /// `storage_url` names: the records then name that store. Without it,
    /// Plaza refuses to start when the database's uploads name another
    /// store.
    pub storage_moved: bool,
    /// User data exports written at once by one instance; one more is 503
    /// with `Retry-After`.
    pub export_max_concurrent: usize,
    /// The longest one export may take to send; then its answer is cut off.
    pub export_timeout_secs: u64,
    /// How long an export may wait for its client to read before it ends
    /// (its pipe and the socket full, nothing taken): a client that stops
    /// reading gives its slot back.
    pub export_idle_secs: u64,
    /// How long after a failed attempt the store is first asked again to
    /// delete a file of an erased user (and how often the retry job runs);
    /// the wait doubles with each attempt, up to an hour.
    pub erased_file_retry_secs: u64,
    /// How often stored files that no upload record names (left by an
    /// upload the store hung on, or a crash) are removed, once older than
    /// an hour.
    pub orphan_file_sweep_secs: u64,
    /// Free space of the data directory's filesystem (MiB) under which
    /// `/api/health` reports the disk `low` (writes are about to fail).
    pub disk_free_min_mb: u64,
}

impl Default for StorageSettings {
    fn default() -> Self {
        StorageSettings {
            data_dir: PathBuf::from("./data"),
            storage_url: None,
            upload_max_bytes: 5_242_880,
            upload_min_bytes: 1024,
            upload_max_dimension: 4096,
            upload_max_concurrent: 2,
            upload_clamd_address: None,
            backup_keep: 7,
            backup_interval_hours: 0,
            storage_timeout_secs: 10,
            storage_moved: false,
            export_max_concurrent: 2,
            export_timeout_secs: 3600,
            export_idle_secs: 60,
            erased_file_retry_secs: 60,
            orphan_file_sweep_secs: 21_600,
            disk_free_min_mb: 256,
        }
    }
}

impl StorageSettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        at_least_one([
            ("upload_max_concurrent", self.upload_max_concurrent),
            ("backup_keep", self.backup_keep),
            ("export_max_concurrent", self.export_max_concurrent),
        ])?;
        if self.export_timeout_secs == 0 || self.export_timeout_secs > 86_400 {
            return Err(SettingsError::new(
                "export_timeout_secs",
                "must be 1 to 86400",
            ));
        }
        if self.export_idle_secs == 0 || self.export_idle_secs > 3600 {
            return Err(SettingsError::new("export_idle_secs", "must be 1 to 3600"));
        }
        if self.erased_file_retry_secs == 0 || self.erased_file_retry_secs > 3600 {
            return Err(SettingsError::new(
                "erased_file_retry_secs",
                "must be 1 to 3600",
            ));
        }
        if self.orphan_file_sweep_secs == 0 || self.orphan_file_sweep_secs > 604_800 {
            return Err(SettingsError::new(
                "orphan_file_sweep_secs",
                "must be 1 to 604800",
            ));
        }
        if self.storage_timeout_secs == 0 || self.storage_timeout_secs > 300 {
            return Err(SettingsError::new(
                "storage_timeout_secs",
                "must be 1 to 300",
            ));
        }
        if self.backup_interval_hours > MAX_BACKUP_INTERVAL_HOURS {
            return Err(SettingsError::new(
                "backup_interval_hours",
                format!("must be 0 (off) to {MAX_BACKUP_INTERVAL_HOURS} (a year)"),
            ));
        }
        if self.upload_min_bytes > self.upload_max_bytes {
            return Err(SettingsError::new(
                "upload_min_bytes",
                "must not be above upload_max_bytes",
            ));
        }
        if self.upload_max_dimension == 0 || self.upload_max_dimension > 16_384 {
            return Err(SettingsError::new(
                "upload_max_dimension",
                "must be 1 to 16384",
            ));
        }
        Ok(())
    }
}
