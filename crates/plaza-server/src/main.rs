use std::process::ExitCode;

use clap::Parser;
use plaza_domain::users::UserStatus;
use plaza_server::app::{Server, shutdown_signal};
use plaza_server::cli::{AnalyticsCommand, Cli, Command, DevCommand, MailCommand, UserCommand};
use plaza_server::cli::{backup, commands};
use plaza_server::serving::refuse_other_database;
use plaza_server::settings::{Settings, config_file, env_file, unknown_environment_variables};
use plaza_server::startup::open_database;
use plaza_server::state::AppState;
use plaza_server::telemetry::init_logging;

/// jemalloc instead of the system allocator: its per-thread caches make
/// the many small, short-lived buffers of a request cheaper (glibc's
/// `malloc`, `free` and consolidation were 8–10% of a cached read's
/// samples, measured with `perf`).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main`: buffers of 1 MiB or more (an
/// upload's decoded pixels, its resized copies, request bodies) come from
/// an arena of their own that gives them back to the system when freed.
/// Left to its defaults, jemalloc kept them for reuse for up to ten
/// seconds, and 4 uploads at once peaked at 190 MiB instead of 120 MiB
/// (docs/benchmarks.md, "Uploads"). A C string: jemalloc reads a
/// `const char *`.
#[cfg(not(target_env = "msvc"))]
#[unsafe(export_name = "_rjem_malloc_conf")]
static ALLOCATOR_OPTIONS: &[u8; 27] = b"oversize_threshold:1048576\0";

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = config_file(cli.config.as_deref());
    match env_file(config.as_deref()) {
        Ok(Some(file)) => {
            for (key, value) in file.variables {
                if std::env::var_os(&key).is_none() {
                    // SAFETY: no other thread runs yet (the runtime starts
                    // below), so nothing reads the environment meanwhile.
                    unsafe { std::env::set_var(key, value) };
                }
            }
        }
        Ok(None) => {}
        Err(error) => {
            eprintln!("plaza: {error}");
            return ExitCode::from(2);
        }
    }
    let settings = match Settings::load(config.as_deref()) {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("plaza: {error}");
            return ExitCode::from(2);
        }
    };
    init_logging(settings.telemetry.log_format);
    for variable in unknown_environment_variables() {
        tracing::warn!(
            %variable,
            "{variable} is no setting and is ignored (misspelled? the README lists the settings)"
        );
    }
    // One TLS crypto provider for the whole process, before any command
    // opens an HTTPS client: the S3 store of `backup` and `restore` needs
    // it as much as `serve`'s identity-provider client, and rustls panics
    // when it must guess between the providers the dependencies enable.
    let _ = rustls::crypto::ring::default_provider().install_default();
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
    let command = cli.command.unwrap_or(Command::Serve);
    if !matches!(command, Command::Restore(_))
        && let Some(unfinished) =
            plaza_server::services::backup::unfinished_restore(&settings.storage.data_dir)
    {
        eprintln!("plaza: {unfinished}");
        return ExitCode::from(2);
    }
    if !matches!(command, Command::Serve)
        && let Err(message) = refuse_other_database(&settings)
    {
        eprintln!("plaza: {message}");
        return ExitCode::FAILURE;
    }
    let outcome = runtime.block_on(async move {
        match command {
            Command::Serve => serve(settings).await,
            Command::Migrate => open_database(&settings)
                .await
                .map(drop)
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
                    UserCommand::DisableTotp(args) => commands::disable_totp(&state, args).await,
                }
            }
            Command::Token(args) => {
                commands::mint_token(&offline_state(settings).await?, args).await
            }
            Command::Mail(MailCommand::Resend(args)) => {
                commands::resend_mail(&offline_state(settings).await?, args).await
            }
            Command::Backup(args) => backup::backup(&settings, args).await,
            Command::Restore(args) => backup::restore(&settings, args).await,
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

/// State for a one-off command: the database and identity services, no server.
async fn offline_state(settings: Settings) -> Result<AppState, String> {
    let database = open_database(&settings)
        .await
        .map_err(|error| error.to_string())?;
    AppState::new(settings, database)
}

async fn serve(settings: Settings) -> Result<(), String> {
    let server = Server::start(settings).await?;
    let address = server.local_addr().map_err(|error| error.to_string())?;
    let shutdown = shutdown_signal();
    tracing::info!(%address, version = env!("CARGO_PKG_VERSION"), "listening on http://{address}");
    server
        .run(shutdown)
        .await
        .map_err(|error| format!("server error: {error}"))
}
