//! `plaza backup` and `plaza restore`: the command-line ends of the backup
//! archives of `services::backup`, and what they tell the operator. Both
//! leave the schema as they find it; `plaza serve` migrates a restored
//! database that an older Plaza wrote.

use std::time::Duration;

use crate::cli::{BackupArgs, RestoreArgs};
use crate::services::backup::{self, Manifest};
use crate::services::storage::Storage;
use crate::settings::Settings;

/// Writes the archive `args.output`, beside a running server or not.
pub async fn backup(settings: &Settings, args: BackupArgs) -> Result<(), String> {
    let url = settings.effective_database_url();
    if let Some(file) = crate::startup::sqlite_file(&url)
        && !file.exists()
    {
        return Err(format!(
            "there is no database at {}: nothing to back up",
            file.display()
        ));
    }
    let store = Storage::open(
        settings.storage.storage_url.as_deref(),
        &settings.storage.data_dir,
        Duration::from_secs(settings.storage.storage_timeout_secs),
    )?;
    let database = crate::startup::connect_database(settings)
        .await
        .map_err(|error| error.to_string())?;
    let written = tokio::select! {
        written = backup::write_backup(&database, settings, &store, &args.output) => written,
        signal = interrupted() => {
            return Err(format!(
                "{signal}: the backup stopped and {} was not written",
                args.output.display()
            ));
        }
    };
    database.close().await;
    let written = written.map_err(|error| error.to_string())?;
    let manifest = &written.manifest;
    let uploads = if manifest.upload_store.files_included {
        format!(
            "{} upload files ({} bytes) of {}",
            written.upload_files, written.upload_bytes, manifest.upload_store.location
        )
    } else {
        format!(
            "no upload files: they stay in {}, whose own versioning keeps their history",
            manifest.upload_store.location
        )
    };
    eprintln!(
        "wrote {} ({} bytes): {}; {uploads}",
        args.output.display(),
        written.size_bytes,
        describe(manifest)
    );
    Ok(())
}

/// Fills the data directory (and PostgreSQL database) the settings name
/// from the archive `args.input`.
pub async fn restore(settings: &Settings, args: RestoreArgs) -> Result<(), String> {
    let restoring = backup::restore(
        settings,
        &args.input,
        args.force,
        crate::cli::commands::command_context(),
    );
    let restored = tokio::select! {
        restored = restoring => restored.map_err(|error| error.to_string())?,
        signal = interrupted() => {
            let unfinished = backup::unfinished_restore(&settings.storage.data_dir)
                .unwrap_or_else(|| "nothing was changed".to_owned());
            return Err(format!("{signal}: the restore stopped. {unfinished}"));
        }
    };
    eprintln!(
        "restored {} into {}: {}; {} upload files ({} bytes)",
        args.input.display(),
        settings.storage.data_dir.display(),
        describe(&restored.manifest),
        restored.upload_files,
        restored.upload_bytes
    );
    for key in &restored.keys {
        eprintln!("{}", key.line());
    }
    if !restored.replaced.is_empty() {
        eprintln!("replaced (--force): {}", restored.replaced.join(", "));
    }
    match &restored.store_renamed {
        Some((before, records)) => eprintln!(
            "the upload records named the store {before}; {records} of them now name {}, this \
             install's",
            restored.store
        ),
        None => eprintln!("the upload records name the store {}", restored.store),
    }
    for note in &restored.notes {
        eprintln!("note: {note}");
    }
    eprintln!(
        "start the server with `plaza serve` (it migrates the schema when this Plaza is newer \
         than the archive's)"
    );
    Ok(())
}

/// Completes when the command is asked to stop (SIGINT, SIGTERM, SIGHUP),
/// naming the signal; the command then drops its work, which kills the
/// PostgreSQL tool it runs.
async fn interrupted() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = interrupt.recv() => "interrupted (SIGINT)",
            _ = terminate.recv() => "stopped (SIGTERM)",
            _ = hangup.recv() => "stopped (SIGHUP)",
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "interrupted"
    }
}

/// One line on what an archive holds.
fn describe(manifest: &Manifest) -> String {
    let keys = if manifest.keys.is_empty() {
        "no generated keys".to_owned()
    } else {
        format!("keys {}", manifest.keys.join(", "))
    };
    format!(
        "{} database at schema version {} taken {} by Plaza {} ({} users, {} posts, {} uploads, \
         {} sessions), {keys}",
        manifest.engine,
        manifest.schema_version,
        manifest.created_at,
        manifest.plaza_version,
        manifest.counts.users,
        manifest.counts.posts,
        manifest.counts.uploads,
        manifest.counts.sessions
    )
}
