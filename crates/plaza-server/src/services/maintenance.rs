//! The system maintenance actions an admin starts with `POST
//! /api/v1/admin/system/maintenance`: what each does to this process, the
//! database and the data directory, and the audit entry it leaves. The SQL
//! is in `plaza_domain` (`search::rebuild`, `maintenance`) and the backup
//! archive in `services::backup`; this module orders the steps, names the
//! backup files and prunes them.
//!
//! Every action is recorded as `system.maintenance.<action>` once it has
//! succeeded (a failed one records nothing): `rebuild_search` in the same
//! unit of work as the rebuild; the others, which change no rows, right
//! after they finish.

use std::path::Path;
use std::time::Instant;

use crate::services::answer_cache::AnswerCaches;
use crate::services::backup::{self, BackupError};
use crate::services::image_cache::ImageCache;
use crate::services::storage::{Storage, UPLOAD_GRACE};
use crate::settings::{Settings, StorageSettings};
use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::users::Role;
use plaza_domain::{Database, DomainError, alerts, search};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

/// What the maintenance actions work on: the database, the upload store,
/// the caches they empty, and the settings (which a backup records, and
/// where it goes and how many are kept). `running` is held while an action
/// runs: one at a time per instance, so a repeated click does not start a
/// second backup or rebuild.
pub struct Maintenance<'a> {
    pub running: &'a tokio::sync::Mutex<()>,
    pub db: &'a Database,
    pub storage: &'a Storage,
    pub answer_caches: &'a AnswerCaches,
    pub image_cache: &'a ImageCache,
    pub settings: &'a Settings,
}

/// Why a maintenance action did not run, or failed.
#[derive(Debug, thiserror::Error)]
pub enum MaintenanceError {
    /// Another action runs on this instance, or the backup was refused.
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// An unexpected failure, for the log.
    #[error("{0}")]
    Failed(String),
}

/// The actions of SPEC.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaintenanceAction {
    CacheClear,
    RebuildSearch,
    CleanupUploads,
    BackupDatabase,
}

impl MaintenanceAction {
    pub const ALL: [MaintenanceAction; 4] = [
        MaintenanceAction::CacheClear,
        MaintenanceAction::RebuildSearch,
        MaintenanceAction::CleanupUploads,
        MaintenanceAction::BackupDatabase,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MaintenanceAction::CacheClear => "cache_clear",
            MaintenanceAction::RebuildSearch => "rebuild_search",
            MaintenanceAction::CleanupUploads => "cleanup_uploads",
            MaintenanceAction::BackupDatabase => "backup_database",
        }
    }

    pub fn parse(name: &str) -> Option<MaintenanceAction> {
        MaintenanceAction::ALL
            .into_iter()
            .find(|action| action.as_str() == name)
    }

    fn audit_name(self) -> &'static str {
        match self {
            MaintenanceAction::CacheClear => "system.maintenance.cache_clear",
            MaintenanceAction::RebuildSearch => "system.maintenance.rebuild_search",
            MaintenanceAction::CleanupUploads => "system.maintenance.cleanup_uploads",
            MaintenanceAction::BackupDatabase => "system.maintenance.backup_database",
        }
    }
}

/// What was asked, as recorded in the audit entry.
#[derive(Debug, Clone)]
pub struct MaintenanceRequest {
    pub action: MaintenanceAction,
    /// Free text, `all` by default (DECISIONS.md).
    pub scope: String,
    pub notify: bool,
}

/// What an action did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceReport {
    #[schema(example = "cache_clear")]
    pub action: String,
    #[schema(example = "all")]
    pub scope: String,
    /// Whether every administrator was sent an alert of the result.
    pub notify: bool,
    /// How long the action took.
    pub duration_ms: u64,
    /// `cache_clear`: the caches emptied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheReport>,
    /// `rebuild_search`: what the rebuilt indexes hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchReport>,
    /// `cleanup_uploads`: what the sweep found and removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uploads: Option<UploadsReport>,
    /// `backup_database`: the file written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<BackupReport>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CacheReport {
    pub caches: Vec<ClearedCache>,
    /// Entries dropped from all caches together.
    pub entries_cleared: u64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClearedCache {
    #[schema(example = "posts")]
    pub name: String,
    pub entries_cleared: u64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchReport {
    pub posts_indexed: i64,
    pub replies_indexed: i64,
    pub users_indexed: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadsReport {
    pub files_found: u64,
    pub bytes_found: u64,
    pub files_removed: u64,
    pub bytes_removed: u64,
    /// Records removed because their original file is gone.
    pub records_removed: u64,
    /// The store swept (`file:///…` or `s3://…`).
    pub store: String,
    pub note: String,
}

/// A backup archive (`.tar.gz`) holding the database, the generated keys
/// and the files of a local upload store; `plaza restore --input` reads it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupReport {
    /// The archive, in the data directory's `backups` folder.
    #[schema(example = "plaza-20261123T101500.123Z.tar.gz")]
    pub file_name: String,
    /// The archive's size.
    pub size_bytes: u64,
    /// The database engine copied into the archive: `sqlite` (a copy made
    /// with `VACUUM INTO`) or `postgres` (a `pg_dump` custom-format dump).
    #[schema(example = "sqlite")]
    pub engine: String,
    /// Older backups removed so that `backup_keep` remain (archives, and
    /// the `.db` and `.dump` files of earlier versions).
    pub pruned: Vec<String>,
}

impl Maintenance<'_> {
    /// Runs `request` as the admin of `context` and records it.
    pub async fn run(
        &self,
        request: MaintenanceRequest,
        context: AuditContext,
    ) -> Result<MaintenanceReport, MaintenanceError> {
        let Ok(_running) = self.running.try_lock() else {
            return Err(MaintenanceError::Conflict(
                "another maintenance action is running on this instance; retry when it ends"
                    .to_owned(),
            ));
        };
        let started = Instant::now();
        let mut report = MaintenanceReport {
            action: request.action.as_str().to_owned(),
            scope: request.scope.clone(),
            notify: request.notify,
            duration_ms: 0,
            cache: None,
            search: None,
            uploads: None,
            backup: None,
        };
        match request.action {
            MaintenanceAction::CacheClear => report.cache = Some(self.clear_caches()),
            MaintenanceAction::RebuildSearch => {
                let recorded = request.clone();
                let rebuilt = self
                    .db
                    .write(|tx| {
                        Box::pin(async move {
                            let rebuilt = search::rebuild(tx).await?;
                            let result =
                                json!({"postsIndexed": rebuilt.posts, "usersIndexed": rebuilt.users});
                            record(tx, &context, &recorded, result, elapsed_millis(started)).await?;
                            Ok(rebuilt)
                        })
                    })
                    .await?;
                report.search = Some(SearchReport {
                    posts_indexed: rebuilt.posts,
                    replies_indexed: rebuilt.replies,
                    users_indexed: rebuilt.users,
                });
                report.duration_ms = elapsed_millis(started);
                return Ok(report);
            }
            MaintenanceAction::CleanupUploads => {
                report.uploads = Some(self.cleanup_uploads().await?)
            }
            MaintenanceAction::BackupDatabase => {
                report.backup = Some(self.backup_database().await?)
            }
        }
        report.duration_ms = elapsed_millis(started);
        let result = serde_json::to_value(&report)
            .map_err(|error| MaintenanceError::Failed(error.to_string()))?;
        let duration_ms = report.duration_ms;
        self.db
            .write(|tx| {
                Box::pin(async move { record(tx, &context, &request, result, duration_ms).await })
            })
            .await?;
        Ok(report)
    }

    fn clear_caches(&self) -> CacheReport {
        let caches: Vec<ClearedCache> = self
            .answer_caches
            .clear_all()
            .into_iter()
            .chain([("images", self.image_cache.clear())])
            .map(|(name, entries)| ClearedCache {
                name: name.to_owned(),
                entries_cleared: entries as u64,
            })
            .collect();
        CacheReport {
            entries_cleared: caches.iter().map(|cache| cache.entries_cleared).sum(),
            caches,
        }
    }

    /// Removes stored files no record names (older than an hour: an upload
    /// may be between its files and its record) and records of this store
    /// whose original file is gone (with the rest of their files). Records of
    /// another store, or of none, are never removed: this store not holding
    /// their files says nothing about them. A store's name holds its endpoint,
    /// so the same bucket behind another endpoint is another store (and an
    /// instance on it does not start).
    async fn cleanup_uploads(&self) -> Result<UploadsReport, MaintenanceError> {
        let storage = self.storage;
        let failed = |error: object_store::Error| {
            MaintenanceError::Failed(format!("the upload store: {error}"))
        };
        let referenced = self.db.referenced_upload_keys().await?;
        let sweep = storage
            .sweep(&referenced, UPLOAD_GRACE)
            .await
            .map_err(failed)?;
        let mut records_removed = 0;
        let mut after = 0;
        loop {
            let page = self
                .db
                .uploads_in_store_after(&storage.location, after)
                .await?;
            let Some(last) = page.last() else {
                break;
            };
            after = last.id;
            for upload in &page {
                if storage.exists(&upload.storage_key).await.map_err(failed)? {
                    continue;
                }
                for key in upload.keys() {
                    storage.delete(key).await.map_err(failed)?;
                }
                self.db.delete_upload(upload.id).await?;
                records_removed += 1;
            }
        }
        Ok(UploadsReport {
            files_found: sweep.files_found,
            bytes_found: sweep.bytes_found,
            files_removed: sweep.files_removed,
            bytes_removed: sweep.bytes_removed,
            records_removed,
            store: storage.location.clone(),
            note: "files no record names were removed once older than an hour; younger ones are \
                   kept, as an upload may be between storing its files and recording them"
                .to_owned(),
        })
    }

    async fn backup_database(&self) -> Result<BackupReport, MaintenanceError> {
        self.backup_into_data_dir()
            .await
            .map_err(|error| match error {
                BackupError::Refused(problem) => MaintenanceError::Conflict(problem),
                other => MaintenanceError::Failed(other.to_string()),
            })
    }

    /// Writes a backup archive into `<data_dir>/backups` as
    /// `plaza-<UTC time>.tar.gz`, then removes the oldest beyond
    /// `backup_keep`: the maintenance action and the scheduled backup.
    pub async fn backup_into_data_dir(&self) -> Result<BackupReport, BackupError> {
        let folder = self.settings.storage.data_dir.join("backups");
        crate::startup::create_private_dir(&folder).map_err(|error| {
            BackupError::Failed(format!("creating {}: {error}", folder.display()))
        })?;
        let stamp = time::OffsetDateTime::now_utc()
            .format(time::macros::format_description!(
                "[year][month][day]T[hour][minute][second].[subsecond digits:3]Z"
            ))
            .map_err(|error| BackupError::Failed(error.to_string()))?;
        let file_name = format!("plaza-{stamp}.tar.gz");
        let written = backup::write_backup(
            self.db,
            self.settings,
            self.storage,
            &folder.join(&file_name),
        )
        .await?;
        let pruned = prune_backups(&folder, self.settings.storage.backup_keep)?;
        Ok(BackupReport {
            file_name,
            size_bytes: written.size_bytes,
            engine: written.manifest.engine,
            pruned,
        })
    }
}

/// Records what ran in the audit trail and, when the request asked to
/// `notify`, tells the administrators (every `admin` and `super_admin`)
/// with an alert in `GET /api/alerts`, in the same unit of work.
async fn record(
    tx: &mut plaza_domain::Tx<'_>,
    context: &AuditContext,
    request: &MaintenanceRequest,
    result: Value,
    duration_ms: u64,
) -> Result<(), plaza_domain::DomainError> {
    audit::record(tx, context, audit_action(request, result)).await?;
    if let (true, Some(admin_id)) = (request.notify, context.actor_id) {
        let now = plaza_domain::time::now_millis();
        let by = context.actor_email.as_deref().unwrap_or("an administrator");
        let broadcast = alerts::NewBroadcast {
            title: format!("Maintenance: {}", request.action.as_str()),
            message: format!(
                "{} (scope: {}) ran in {duration_ms} ms, started by {by}.",
                request.action.as_str(),
                request.scope
            ),
            alert_type: alerts::AlertType::Info,
            audience: alerts::Audience {
                roles: vec![Role::Admin, Role::SuperAdmin],
                ..alerts::Audience::default()
            },
            created_by: admin_id,
            deliver_at: None,
        };
        let created = alerts::create_broadcast(tx, broadcast, now).await?;
        alerts::deliver(tx, created.id, now).await?;
    }
    Ok(())
}

fn audit_action(request: &MaintenanceRequest, result: Value) -> AuditAction<'static> {
    AuditAction {
        action: request.action.audit_name(),
        target_type: "system",
        target_id: Some(request.action.as_str().to_owned()),
        changes: json!({"scope": request.scope, "notify": request.notify, "result": result}),
    }
}

fn elapsed_millis(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Removes all but the newest `keep` backups in `folder` and answers the
/// names removed. Files of other names are left alone; one another backup
/// removed meanwhile is not an error.
fn prune_backups(folder: &Path, keep: usize) -> Result<Vec<String>, BackupError> {
    let backups = backup_names(folder)?;
    let excess = backups.len().saturating_sub(keep);
    let pruned: Vec<String> = backups.into_iter().take(excess).collect();
    for name in &pruned {
        match std::fs::remove_file(folder.join(name)) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(BackupError::Failed(format!(
                    "removing the old backup {name}: {error}"
                )));
            }
        }
    }
    Ok(pruned)
}

/// The backups in `folder`, oldest first (their names carry their time).
fn backup_names(folder: &Path) -> Result<Vec<String>, BackupError> {
    let unreadable = |error: std::io::Error| {
        BackupError::Failed(format!("reading {}: {error}", folder.display()))
    };
    let mut backups = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(unreadable)? {
        let name = entry.map_err(unreadable)?.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_backup_name(name) {
            backups.push(name.to_owned());
        }
    }
    backups.sort_unstable();
    Ok(backups)
}

/// A backup in `<data_dir>/backups`.
#[derive(Debug, Serialize)]
pub struct StoredBackup {
    pub file_name: String,
    pub size_bytes: u64,
}

/// The backups in `<data_dir>/backups`, newest first; none when the folder
/// does not exist yet.
pub fn stored_backups(settings: &StorageSettings) -> Result<Vec<StoredBackup>, BackupError> {
    let folder = settings.data_dir.join("backups");
    if !folder.exists() {
        return Ok(Vec::new());
    }
    let mut names = backup_names(&folder)?;
    names.reverse();
    Ok(names
        .into_iter()
        .map(|file_name| {
            let size_bytes =
                std::fs::metadata(folder.join(&file_name)).map_or(0, |meta| meta.len());
            StoredBackup {
                file_name,
                size_bytes,
            }
        })
        .collect())
}

/// Whether `name` is a backup `backup_database` writes,
/// `plaza-<time>.tar.gz`, or wrote in earlier versions, `plaza-<time>.db`
/// (SQLite) and `plaza-<time>.dump` (PostgreSQL).
fn is_backup_name(name: &str) -> bool {
    name.strip_prefix("plaza-").is_some_and(|rest| {
        [".tar.gz", ".db", ".dump"]
            .iter()
            .find_map(|extension| rest.strip_suffix(extension))
            .is_some_and(|stamp| {
                stamp.ends_with('Z') && stamp.starts_with(|c: char| c.is_ascii_digit())
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_parse_only_their_names() {
        for action in MaintenanceAction::ALL {
            assert_eq!(MaintenanceAction::parse(action.as_str()), Some(action));
            assert!(action.audit_name().ends_with(action.as_str()));
        }
        assert_eq!(MaintenanceAction::parse("CACHE_CLEAR"), None);
    }

    #[test]
    fn backups_of_every_version_are_recognised() {
        for name in [
            "plaza-20261123T101500.123Z.tar.gz",
            "plaza-20261123T101500.123Z.db",
            "plaza-20261123T101500.123Z.dump",
        ] {
            assert!(is_backup_name(name), "{name}");
        }
        for name in [
            "plaza-20261123T101500.123Z.tar.gz.partial",
            "plaza-notes.txt",
            "operator.db",
        ] {
            assert!(!is_backup_name(name), "{name}");
        }
    }
}
