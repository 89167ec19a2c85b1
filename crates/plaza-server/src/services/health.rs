//! Whether the services this instance depends on answer: the database
//! always, the object store of uploads always (uploads and stored files
//! need it), and Redis when it holds the shared rate limits (sign-in fails
//! closed without it). `GET /api/health` reports each and is 503 when one
//! of them is down, so a load balancer takes the instance out of rotation;
//! start-up logs each that is down as an error.
//!
//! `/api/health` is unauthenticated and never rate limited, so the probes
//! run at most once per [`PROBE_INTERVAL`] per instance, and one at a time:
//! a flood of health requests costs the dependencies nothing more.

use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use crate::state::AppState;

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
}

impl Dependencies {
    /// Whether every dependency the instance needs answers.
    pub fn all_up(&self) -> bool {
        self.database && self.redis != Some(false) && self.storage
    }
}

/// The last round of probes, shared by the requests of one interval.
#[derive(Default)]
pub struct HealthProbe {
    last: Mutex<Option<(Instant, Dependencies)>>,
}

impl HealthProbe {
    /// The dependencies' state, probed afresh when the last round is older
    /// than [`PROBE_INTERVAL`].
    pub async fn check(&self, state: &AppState) -> Dependencies {
        let mut last = self.last.lock().await;
        if let Some((at, found)) = *last
            && at.elapsed() < PROBE_INTERVAL
        {
            return found;
        }
        let found = probe(state).await;
        *last = Some((Instant::now(), found));
        found
    }
}

/// Probes every dependency at once, each within [`PROBE_TIMEOUT`].
async fn probe(state: &AppState) -> Dependencies {
    let database = answers(async { state.db.ping().await.is_ok() });
    // A missing key answers as readily as a present one: only reaching the
    // store counts.
    let storage = answers(async { state.uploads.storage.exists("health-probe").await.is_ok() });
    let redis = async {
        match state.rate_limiter.redis_ping() {
            Some(ping) => Some(answers(async { ping.await.is_ok() }).await),
            None => None,
        }
    };
    let (database, storage, redis) = tokio::join!(database, storage, redis);
    Dependencies {
        database,
        redis,
        storage,
    }
}

/// Whether `probe` succeeds within [`PROBE_TIMEOUT`].
async fn answers(probe: impl Future<Output = bool>) -> bool {
    matches!(tokio::time::timeout(PROBE_TIMEOUT, probe).await, Ok(true))
}

/// Logs each dependency that does not answer at start-up as an error (the
/// server still starts: it reports them in `/api/health` until they answer).
pub async fn log_at_start_up(state: &AppState) {
    let found = state.health.check(state).await;
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
            store = %state.uploads.storage.location,
            "the upload store does not answer: uploads fail and stored files are not served until it does"
        );
    }
}
