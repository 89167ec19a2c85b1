//! The system maintenance actions an admin starts with `POST
//! /api/v1/admin/system/maintenance`: what each does to this process, the
//! database and the data directory, and the audit entry it leaves. The SQL
//! is in `plaza_domain` (`search::rebuild`, `Database::backup_sqlite_into`,
//! `maintenance`); this module orders the steps, names the files and runs
//! `pg_dump`.
//!
//! Every action is recorded as `system.maintenance.<action>` once it has
//! succeeded (a failed one records nothing): `rebuild_search` in the same
//! unit of work as the rebuild; the others, which change no rows, right
//! after they finish.

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use crate::services::storage::UPLOAD_GRACE;
use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::users::Role;
use plaza_domain::{Backend, alerts, search};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::http::error::AppError;
use crate::state::AppState;

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

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupReport {
    /// In the data directory's `backups` folder.
    #[schema(example = "plaza-20261123T101500.123Z.db")]
    pub file_name: String,
    pub size_bytes: u64,
    /// `sqlite` (a database file made with `VACUUM INTO`) or `postgres`
    /// (a `pg_dump` custom-format archive, for `pg_restore`).
    #[schema(example = "sqlite")]
    pub engine: String,
    /// Older backups removed so that `backup_keep` remain.
    pub pruned: Vec<String>,
}

/// Runs `request` as the admin of `context` and records it.
pub async fn run(
    state: &AppState,
    request: MaintenanceRequest,
    context: AuditContext,
) -> Result<MaintenanceReport, AppError> {
    let Ok(_running) = state.maintenance_running.try_lock() else {
        return Err(AppError::Conflict(
            "another maintenance action is running on this instance; retry when it ends".to_owned(),
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
        MaintenanceAction::CacheClear => report.cache = Some(clear_caches(state)),
        MaintenanceAction::RebuildSearch => {
            let recorded = request.clone();
            let rebuilt = state
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
                users_indexed: rebuilt.users,
            });
            report.duration_ms = elapsed_millis(started);
            return Ok(report);
        }
        MaintenanceAction::CleanupUploads => report.uploads = Some(cleanup_uploads(state).await?),
        MaintenanceAction::BackupDatabase => report.backup = Some(backup_database(state).await?),
    }
    report.duration_ms = elapsed_millis(started);
    let result = serde_json::to_value(&report).map_err(AppError::internal)?;
    let duration_ms = report.duration_ms;
    state
        .db
        .write(|tx| {
            Box::pin(async move { record(tx, &context, &request, result, duration_ms).await })
        })
        .await?;
    Ok(report)
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

fn clear_caches(state: &AppState) -> CacheReport {
    let caches: Vec<ClearedCache> = state
        .answer_caches
        .clear_all()
        .into_iter()
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
/// their files says nothing about them.
async fn cleanup_uploads(state: &AppState) -> Result<UploadsReport, AppError> {
    let storage = &state.uploads.storage;
    let failed =
        |error: object_store::Error| AppError::internal(format!("the upload store: {error}"));
    let referenced = state.db.referenced_upload_keys().await?;
    let sweep = storage
        .sweep(&referenced, UPLOAD_GRACE)
        .await
        .map_err(failed)?;
    let mut records_removed = 0;
    let mut after = 0;
    loop {
        let page = state
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
            state.db.delete_upload(upload.id).await?;
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

async fn backup_database(state: &AppState) -> Result<BackupReport, AppError> {
    let folder = state.settings.storage.data_dir.join("backups");
    crate::startup::create_private_dir(&folder)
        .map_err(|error| AppError::internal(format!("creating {}: {error}", folder.display())))?;
    let backend = state.db.backend();
    let stamp = time::OffsetDateTime::now_utc()
        .format(time::macros::format_description!(
            "[year][month][day]T[hour][minute][second].[subsecond digits:3]Z"
        ))
        .map_err(AppError::internal)?;
    let file_name = match backend {
        Backend::Sqlite => format!("plaza-{stamp}.db"),
        Backend::Postgres => format!("plaza-{stamp}.dump"),
    };
    let path = folder.join(&file_name);
    create_private_file(&path)?;
    let written = match backend {
        Backend::Sqlite => state
            .db
            .backup_sqlite_into(&path)
            .await
            .map_err(AppError::from),
        Backend::Postgres => pg_dump(&state.settings.effective_database_url(), &path).await,
    };
    if let Err(error) = written {
        let _ = std::fs::remove_file(&path);
        return Err(error);
    }
    let size_bytes = std::fs::metadata(&path)
        .map_err(|error| AppError::internal(format!("reading {}: {error}", path.display())))?
        .len();
    let pruned = prune_backups(&folder, state.settings.storage.backup_keep)?;
    Ok(BackupReport {
        file_name,
        size_bytes,
        engine: backend.name().to_owned(),
        pruned,
    })
}

/// Removes all but the newest `keep` backups in `folder` (their names
/// carry their time, so they sort oldest first) and answers the names
/// removed. Files of other names are left alone.
fn prune_backups(folder: &Path, keep: usize) -> Result<Vec<String>, AppError> {
    let unreadable = |error: std::io::Error| {
        AppError::internal(format!("reading {}: {error}", folder.display()))
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
    let excess = backups.len().saturating_sub(keep);
    let pruned: Vec<String> = backups.into_iter().take(excess).collect();
    for name in &pruned {
        std::fs::remove_file(folder.join(name)).map_err(|error| {
            AppError::internal(format!("removing the old backup {name}: {error}"))
        })?;
    }
    Ok(pruned)
}

/// Whether `name` is one `backup_database` writes: `plaza-<time>.db` or
/// `plaza-<time>.dump`.
fn is_backup_name(name: &str) -> bool {
    name.strip_prefix("plaza-").is_some_and(|rest| {
        rest.strip_suffix(".db")
            .or_else(|| rest.strip_suffix(".dump"))
            .is_some_and(|stamp| {
                stamp.ends_with('Z') && stamp.starts_with(|c: char| c.is_ascii_digit())
            })
    })
}

/// Creates the empty backup file readable by the owner only, before the
/// database or `pg_dump` fills it; a name taken already is a conflict.
fn create_private_file(path: &Path) -> Result<(), AppError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Err(AppError::Conflict(
            "a backup of this name is being written; retry".to_owned(),
        )),
        Err(error) => Err(AppError::internal(format!(
            "creating {}: {error}",
            path.display()
        ))),
    }
}

/// The libpq connection parameters `pg_dump` understands; sqlx's own
/// (`statement-cache-capacity`, …) would make it refuse the URL.
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

/// Dumps the PostgreSQL database of `url` into `path` (custom format, for
/// `pg_restore`) with the `pg_dump` on the `PATH`. The password travels in
/// `PGPASSWORD`, not on the command line other users can read.
async fn pg_dump(url: &str, path: &Path) -> Result<(), AppError> {
    let mut parsed = url::Url::parse(url).map_err(AppError::internal)?;
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
    let mut command = std::process::Command::new("pg_dump");
    command
        .arg("--format=custom")
        .arg("--no-password")
        .arg("--file")
        .arg(path)
        .arg("--dbname")
        .arg(parsed.as_str())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(password) = password {
        command.env("PGPASSWORD", password);
    }
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .map_err(AppError::internal)?;
    match output {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Err(AppError::Conflict(
            "pg_dump is not installed on this server: back up PostgreSQL with pg_dump (or your \
             provider's snapshots) from a machine that has it"
                .to_owned(),
        )),
        Err(error) => Err(AppError::internal(format!("running pg_dump: {error}"))),
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(AppError::internal(format!(
            "pg_dump failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))),
    }
}

/// A URL's percent-encoded user-info part, decoded.
fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("p={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
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
    fn passwords_are_decoded_for_pgpassword() {
        assert_eq!(percent_decode("p%40ss+w%2Ford"), "p@ss+w/ord");
    }
}
