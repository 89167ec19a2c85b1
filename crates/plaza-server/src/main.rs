use std::process::ExitCode;

use clap::Parser;
use plaza_domain::users::UserStatus;
use plaza_server::app::{Server, shutdown_signal};
use plaza_server::cli::{AnalyticsCommand, Cli, Command, DevCommand, UserCommand};
use plaza_server::commands;
use plaza_server::settings::Settings;
use plaza_server::startup::open_database;
use plaza_server::state::AppState;
use plaza_server::telemetry::init_logging;

fn main() -> ExitCode {
    map_big_buffers_alone();
    let cli = Cli::parse();
    let settings = match Settings::load(cli.config.as_deref()) {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("plaza: {error}");
            return ExitCode::from(2);
        }
    };
    init_logging(settings.telemetry.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("plaza: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        match cli.command.unwrap_or(Command::Serve) {
            Command::Serve => serve(settings).await,
            Command::Migrate => open_database(&settings)
                .await
                .map(|_| tracing::info!("schema is up to date"))
                .map_err(|error| error.to_string()),
            Command::User(command) => {
                let state = offline_state(settings).await?;
                match command {
                    UserCommand::Create(args) => commands::create_user(&state, args).await,
                    UserCommand::Ban(args) => {
                        commands::set_status(&state, args, UserStatus::Banned).await
                    }
                    UserCommand::Unban(args) => {
                        commands::set_status(&state, args, UserStatus::Active).await
                    }
                    UserCommand::Role(args) => commands::set_role(&state, args).await,
                }
            }
            Command::Token(args) => {
                commands::mint_token(&offline_state(settings).await?, args).await
            }
            Command::Analytics(AnalyticsCommand::RebuildRollups) => {
                let database = open_database(&settings)
                    .await
                    .map_err(|error| error.to_string())?;
                database
                    .rebuild_analytics_rollups()
                    .await
                    .map(|()| tracing::info!("analytics rollups rebuilt"))
                    .map_err(|error| error.to_string())
            }
            Command::Dev(DevCommand::Seed(args)) => {
                commands::seed(&offline_state(settings).await?, args).await
            }
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("plaza: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Gives every buffer of 1 MiB or more its own mapping, returned to the
/// system when freed. By default glibc raises that threshold to the largest
/// buffer freed so far (up to 32 MiB) and serves such buffers from
/// per-thread arenas, which keep them: an upload's decoded pixels (18 MB
/// for 3000 × 2000) then stayed resident after every upload, and 4 uploads
/// at once peaked at 273 MiB instead of 109 MiB (README, "Uploads").
///
/// Fixing the threshold also stops glibc from raising the trim threshold
/// with it, which then stays at 128 KiB: every free that left that much at
/// the top of a thread's heap handed the pages back with `madvise`, a TLB
/// shootdown across the cores, and the next page faulted them in again
/// (2.4% of the moderation queue's samples, a 35 KB page of JSON freed per
/// request). The trim threshold is set to twice the mapping threshold, as
/// glibc's own adjustment would.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn map_big_buffers_alone() {
    const MAPPING_THRESHOLD: libc::c_int = 1 << 20;
    // SAFETY: mallopt only changes a setting of the allocator, and runs
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MAPPING_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 2 * MAPPING_THRESHOLD);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn map_big_buffers_alone() {}

/// State for a one-off command: the database and identity services, no server.
async fn offline_state(settings: Settings) -> Result<AppState, String> {
    let database = open_database(&settings)
        .await
        .map_err(|error| error.to_string())?;
    AppState::new(settings, database)
}

async fn serve(settings: Settings) -> Result<(), String> {
    let bind = settings.server.bind;
    let database = open_database(&settings)
        .await
        .map_err(|error| error.to_string())?;
    let state = AppState::new(settings, database)?;
    let server = Server::bind(state)
        .await
        .map_err(|error| format!("cannot listen on {bind}: {error}"))?;
    let address = server.local_addr().map_err(|error| error.to_string())?;
    let shutdown = shutdown_signal();
    tracing::info!(%address, "listening on http://{address}");
    server
        .run(shutdown)
        .await
        .map_err(|error| format!("server error: {error}"))
}
