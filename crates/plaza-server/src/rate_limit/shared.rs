//! Counts shared by every instance, in Redis: one script per check (one
//! round trip), running the same GCRA step as [`super::gcra`] on Redis's own
//! clock, so instances with skewed clocks still agree.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::Mutex;

use super::gcra::{Outcome, Quota};

/// KEYS[1]: the client's key. ARGV: period and interval in microseconds,
/// and the cost (requests counted at once).
/// Returns {allowed, remaining, reset_after_us, retry_after_us}. The key
/// expires when its bucket is full again, so Redis holds only clients seen
/// within their period.
const GCRA_SCRIPT: &str = r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local period = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local next = tat + interval * tonumber(ARGV[3])
local allow_at = next - period
if now < allow_at then
  return {0, 0, tat - now, allow_at - now}
end
redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', math.ceil((next - now) / 1000))
return {1, math.floor((now + period - next) / interval), next - now, 0}
";

/// Why a shared check gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[error("redis did not answer within {0:?}")]
    Timeout(Duration),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("redis is not connected; next attempt in under a second")]
    NotConnected,
}

/// A connection to Redis, made when first needed; until it is made, one
/// request a second tries while the others fail at once (the limiter's
/// documented direction). Once made, it reconnects by itself.
pub struct SharedStore {
    client: redis::Client,
    script: redis::Script,
    timeout: Duration,
    /// The connection once made; read on every check without waiting.
    ready: RwLock<Option<ConnectionManager>>,
    /// Held while connecting: when the last attempt started.
    connecting: Mutex<Option<Instant>>,
}

impl SharedStore {
    /// Checks the URL only; the connection is made on first use.
    pub fn new(url: &str, timeout: Duration) -> Result<Arc<Self>, String> {
        let client = redis::Client::open(url).map_err(|error| error.to_string())?;
        Ok(Arc::new(SharedStore {
            client,
            script: redis::Script::new(GCRA_SCRIPT),
            timeout,
            ready: RwLock::new(None),
            connecting: Mutex::new(None),
        }))
    }

    async fn manager(&self) -> Result<ConnectionManager, SharedError> {
        if let Some(manager) = self.connected() {
            return Ok(manager);
        }
        let Ok(mut last_attempt) = self.connecting.try_lock() else {
            return Err(SharedError::NotConnected);
        };
        if let Some(manager) = self.connected() {
            return Ok(manager);
        }
        if last_attempt.is_some_and(|at| at.elapsed() < Duration::from_secs(1)) {
            return Err(SharedError::NotConnected);
        }
        *last_attempt = Some(Instant::now());
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
            .set_number_of_retries(1);
        let manager = tokio::time::timeout(
            self.timeout,
            ConnectionManager::new_with_config(self.client.clone(), config),
        )
        .await
        .map_err(|_| SharedError::Timeout(self.timeout))??;
        *self
            .ready
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(manager.clone());
        Ok(manager)
    }

    fn connected(&self) -> Option<ConnectionManager> {
        self.ready
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// One check of `cost` requests of `key`, within the timeout.
    pub async fn check(&self, key: &str, quota: Quota, cost: u32) -> Result<Outcome, SharedError> {
        let mut manager = self.manager().await?;
        let period = u64::try_from(quota.period.as_micros()).unwrap_or(u64::MAX);
        let interval = period / u64::from(quota.count.max(1));
        let mut invocation = self.script.key(key);
        invocation.arg(period).arg(interval).arg(cost);
        let answer: (i64, i64, i64, i64) =
            tokio::time::timeout(self.timeout, invocation.invoke_async(&mut manager))
                .await
                .map_err(|_| SharedError::Timeout(self.timeout))??;
        let micros = |value: i64| Duration::from_micros(u64::try_from(value).unwrap_or(0));
        Ok(Outcome {
            allowed: answer.0 == 1,
            limit: quota.count,
            remaining: u32::try_from(answer.1.max(0))
                .unwrap_or(u32::MAX)
                .min(quota.count),
            reset_after: micros(answer.2),
            retry_after: micros(answer.3),
        })
    }
}
