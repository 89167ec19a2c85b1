//! Whether the services this instance depends on answer: the database
//! always, the object store of uploads always (uploads and stored files
//! need it), and Redis when it holds the shared rate limits (sign-in fails
//! closed without it); and whether the data directory's disk has room.
//! `GET /api/health` reports each. Only the database makes the instance
//! unready (503): the store and Redis are shared by every instance, so
//! taking this one out of rotation for them would take the whole site down
//! while posts and reads still work; they, and a disk running out of
//! space, make it `degraded` (200). Start-up logs each that is down as an
//! error.
//!
//! `/api/health` is unauthenticated and never rate limited, so the probes
//! run at most once per [`PROBE_INTERVAL`] per instance, and one at a time:
//! a flood of health requests costs the dependencies nothing more.

use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use plaza_domain::Database;
use tokio::sync::Mutex;

use crate::services::storage::Storage;
use crate::settings::StorageSettings;

/// How long one round of probes is reused.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// How long a probe may take before its dependency counts as down.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What one round of probes found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dependencies {
    pub database: bool,
    /// `None` when no Redis is configured, or rate limits are off.
    pub redis: Option<bool>,
    pub storage: bool,
    /// Free bytes of the data directory's filesystem; `None` when it
    /// cannot be read.
    pub disk_free_bytes: Option<u64>,
    /// Whether that is under `disk_free_min_mb`.
    pub disk_low: bool,
}

impl Dependencies {
    /// Whether the instance can serve: its database answers.
    pub fn ready(&self) -> bool {
        self.database
    }

    /// Whether everything answers and the disk has room.
    pub fn all_up(&self) -> bool {
        self.database && self.redis != Some(false) && self.storage && !self.disk_low
    }
}

/// What a round of probes asks: the database, the upload store, the data
/// directory's disk, and Redis when it holds the shared rate limits.
pub struct Targets<'a> {
    pub db: &'a Database,
    pub storage: &'a Storage,
    pub settings: &'a StorageSettings,
    /// Whether Redis answers a ping, when limits are on and counted there;
    /// asked only when the probes run.
    pub redis: Option<BoxFuture<'a, bool>>,
}

/// The last round of probes, shared by the requests of one interval.
#[derive(Default)]
pub struct HealthProbe {
    last: Mutex<Option<(Instant, Dependencies)>>,
}

impl HealthProbe {
    /// The dependencies' state, probed afresh when the last round is older
    /// than [`PROBE_INTERVAL`].
    pub async fn check(&self, targets: Targets<'_>) -> Dependencies {
        let mut last = self.last.lock().await;
        if let Some((at, found)) = *last
            && at.elapsed() < PROBE_INTERVAL
        {
            return found;
        }
        let found = probe(targets).await;
        *last = Some((Instant::now(), found));
        found
    }
}

/// Probes every dependency at once, each within [`PROBE_TIMEOUT`].
async fn probe(targets: Targets<'_>) -> Dependencies {
    let database = answers(async { targets.db.ping().await.is_ok() });
    // A missing key answers as readily as a present one: only reaching the
    // store counts.
    let storage = answers(async { targets.storage.exists("health-probe").await.is_ok() });
    let redis = async {
        match targets.redis {
            Some(ping) => Some(answers(ping).await),
            None => None,
        }
    };
    let (database, storage, redis) = tokio::join!(database, storage, redis);
    let disk_free_bytes = rustix::fs::statvfs(&targets.settings.data_dir)
        .ok()
        .map(|stats| stats.f_bavail.saturating_mul(stats.f_frsize));
    let minimum = targets
        .settings
        .disk_free_min_mb
        .saturating_mul(1024 * 1024);
    Dependencies {
        database,
        redis,
        storage,
        disk_free_bytes,
        disk_low: disk_free_bytes.is_some_and(|free| free < minimum),
    }
}

/// Whether `probe` succeeds within [`PROBE_TIMEOUT`].
async fn answers(probe: impl Future<Output = bool>) -> bool {
    matches!(tokio::time::timeout(PROBE_TIMEOUT, probe).await, Ok(true))
}

/// Logs each dependency that does not answer at start-up as an error (the
/// server still starts: it reports them in `/api/health` until they answer).
pub async fn log_at_start_up(probe: &HealthProbe, targets: Targets<'_>) {
    let (location, data_dir) = (&targets.storage.location, &targets.settings.data_dir);
    let found = probe.check(targets).await;
    if !found.database {
        tracing::error!("the database does not answer");
    }
    if found.redis == Some(false) {
        tracing::error!(
            "redis_url does not answer: sign-in is refused (503) and the other limits are not counted until it does"
        );
    }
    if !found.storage {
        tracing::error!(
            store = %location,
            "the upload store does not answer: uploads fail and stored files are not served until it does"
        );
    }
    if found.disk_low {
        tracing::error!(
            data_dir = %data_dir.display(),
            free_bytes = found.disk_free_bytes.unwrap_or(0),
            "the data directory's disk is almost full (under disk_free_min_mb): writes may fail"
        );
    }
}
