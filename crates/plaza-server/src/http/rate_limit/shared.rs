//! Counts shared by every instance, in Redis, running the same GCRA step as
//! [`super::gcra`] on Redis's own clock, so instances with skewed clocks
//! still agree.
//!
//! Checks go through one task that owns the connection: it takes every
//! check waiting when it is free (up to [`BATCH_MAX`]) and answers them all
//! with one script call, one round trip. Under load that turns hundreds of
//! round trips a second into a few, which is most of what Redis costs a
//! request on a busy machine (the script's work per key is small beside the
//! socket reads and writes on both ends); a lone check still goes at once.
//! The script runs the batch's checks atomically, grouped by quota and
//! charge and in order within a group, so two checks of one key in one
//! batch count as two.

use std::path::Path;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::{OnceCell, mpsc, oneshot};
use tokio::time::Instant;

use super::gcra::Outcome;
use crate::settings::Quota;

/// KEYS: the clients' keys, group by group. ARGV: for each group of keys
/// with one quota and charge, the number of its keys, its period and its
/// charge (the quota's interval times the requests counted at once) in
/// microseconds, and the milliseconds a fresh key of that charge lives.
/// Returns one number per key: for an allowed check the microseconds until
/// its new arrival time, for a refused one minus one minus those until the
/// stored arrival time; the rest of the outcome follows from the quota
/// ([`Outcome::allowed`], [`Outcome::refused`]), so the script does no more
/// than it must (its Lua was half of what a check cost Redis). A key
/// expires when its bucket is full again, so Redis holds only clients seen
/// within their period (at least a millisecond: a quota of more than one
/// request a microsecond has no interval, and `PX 0` is an error).
///
/// What made a check cost Redis most, measured with
/// `bench/rate-limit.sh` and `bench/rate-limit-instructions.sh`:
/// - Most checks are a client's first within its period, so a charge that
///   a fresh bucket allows is first offered with `SET … NX GET`: one call
///   that stores a new key, or answers the stored arrival time and leaves
///   the key to the full step (`NX` with `GET` needs Redis 7.0).
/// - Lua hands a number to `redis.call` as text written like a float
///   (`%.17g`, a tenth of Redis's time); arrival times and expiries go as
///   integers written with `%d` instead (exact: below 2^53), and a fresh
///   key's expiry comes ready in ARGV.
/// - Every argument is a string Redis reads, keeps and hands to Lua: a
///   batch's checks mostly share one quota, so its numbers come once per
///   group, not once per key (7.0 → 5.5 µs of Redis's CPU a check), and a
///   fresh key's arrival time is written once per group.
const GCRA_SCRIPT: &str = r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local format = string.format
local answers = {}
local i, a = 0, 1
while a <= #ARGV do
  local count = tonumber(ARGV[a])
  local period = tonumber(ARGV[a + 1])
  local charge = tonumber(ARGV[a + 2])
  local lifetime = ARGV[a + 3]
  a = a + 4
  local fresh = charge <= period and format('%d', now + charge)
  for _ = 1, count do
    i = i + 1
    local key = KEYS[i]
    local stored
    if fresh then
      stored = redis.call('SET', key, fresh, 'PX', lifetime, 'NX', 'GET')
      answers[i] = charge
    else
      stored = redis.call('GET', key)
      answers[i] = -1
    end
    if stored then
      local tat = math.max(tonumber(stored), now)
      local next = tat + charge
      if now < next - period then
        answers[i] = now - tat - 1
      else
        local expiry = math.max(1, math.ceil((next - now) / 1000))
        redis.call('SET', key, format('%d', next), 'PX', format('%d', expiry))
        answers[i] = next - now
      end
    end
  end
end
return answers
";

/// Checks answered by one script call at most.
const BATCH_MAX: usize = 128;

/// Checks waiting for the connection at most; a check beyond them fails at
/// once (the limiter's direction decides), so a stalled Redis cannot grow
/// memory.
const QUEUE_CAPACITY: usize = 8192;

/// Why a shared check gave no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SharedError {
    #[error("redis did not answer within {0:?}")]
    Timeout(Duration),
    #[error("redis: {0}")]
    Redis(String),
    #[error("redis is not connected; next attempt in under a second")]
    NotConnected,
    #[error("more than {QUEUE_CAPACITY} checks are waiting for redis")]
    Overloaded,
}

impl From<redis::RedisError> for SharedError {
    fn from(error: redis::RedisError) -> Self {
        SharedError::Redis(error.to_string())
    }
}

/// One check waiting for the connection's next round trip.
struct PendingCheck {
    key: String,
    period_micros: u64,
    charge_micros: u64,
    /// When the check is answered at the latest, counted or not.
    deadline: Instant,
    answer: oneshot::Sender<Result<i64, SharedError>>,
}

/// The way to Redis. The task that answers checks starts with the first
/// check (it needs the runtime) and ends when the store is dropped.
pub struct SharedStore {
    client: redis::Client,
    timeout: Duration,
    queue: OnceCell<mpsc::Sender<PendingCheck>>,
}

impl SharedStore {
    /// Checks the settings only; the connection is made on first use.
    pub fn new(url: &str, ca_file: Option<&Path>, timeout: Duration) -> Result<Self, String> {
        Ok(SharedStore {
            client: crate::settings::redis_client(url, ca_file).map_err(|error| error.problem)?,
            timeout,
            queue: OnceCell::new(),
        })
    }

    /// A `PING` over a connection of its own, for the health check (the
    /// checks' connection is the link task's).
    pub async fn ping(&self) -> Result<(), SharedError> {
        let mut connection = self.client.get_multiplexed_async_connection().await?;
        redis::cmd("PING")
            .query_async::<()>(&mut connection)
            .await?;
        Ok(())
    }

    /// One check of `cost` requests of `key`, answered or failed within the
    /// timeout.
    pub async fn check(
        &self,
        key: String,
        quota: Quota,
        cost: u32,
    ) -> Result<Outcome, SharedError> {
        let queue = self
            .queue
            .get_or_init(|| async {
                let (sender, receiver) = mpsc::channel(QUEUE_CAPACITY);
                let link = Link {
                    client: self.client.clone(),
                    timeout: self.timeout,
                    manager: None,
                    last_attempt: None,
                };
                tokio::spawn(link.serve(receiver));
                sender
            })
            .await;
        let (answer, answered) = oneshot::channel();
        queue
            .try_send(PendingCheck {
                key,
                period_micros: quota.period_micros(),
                charge_micros: quota.interval_micros().saturating_mul(u64::from(cost)),
                deadline: Instant::now() + self.timeout,
                answer,
            })
            .map_err(|_| SharedError::Overloaded)?;
        // The link answers by the deadline (see `Link::serve`); a dropped
        // sender means its task ended.
        let answer = answered.await.map_err(|_| SharedError::NotConnected)??;
        Ok(match u64::try_from(answer) {
            Ok(until_next) => Outcome::allowed(quota, until_next),
            Err(_) => Outcome::refused(quota, cost, answer.unsigned_abs() - 1),
        })
    }
}

/// The connection, owned by the one task that answers checks. Until it is
/// made, one batch a second tries while the others fail at once; once made,
/// it reconnects by itself.
struct Link {
    client: redis::Client,
    timeout: Duration,
    manager: Option<ConnectionManager>,
    last_attempt: Option<Instant>,
}

impl Link {
    async fn serve(mut self, mut queue: mpsc::Receiver<PendingCheck>) {
        let script = redis::Script::new(GCRA_SCRIPT);
        let mut batch = Vec::with_capacity(BATCH_MAX);
        while queue.recv_many(&mut batch, BATCH_MAX).await > 0 {
            // Let the requests already running reach their checks, so they
            // join this round trip instead of each waiting for the next.
            // (Redis then spent 6.0 instead of 7.2 µs of CPU a request.)
            tokio::task::yield_now().await;
            while batch.len() < BATCH_MAX {
                match queue.try_recv() {
                    Ok(check) => batch.push(check),
                    Err(_) => break,
                }
            }
            // A caller that stopped waiting went on without an answer, and
            // one whose deadline passed in the queue is answered so; neither
            // request is counted.
            batch.retain(|check: &PendingCheck| !check.answer.is_closed());
            let now = Instant::now();
            for expired in batch.extract_if(.., |check| check.deadline <= now) {
                let _ = expired.answer.send(Err(SharedError::Timeout(self.timeout)));
            }
            // The round trip ends by the earliest deadline in the batch, so
            // every check is answered by its own with one timer a batch,
            // not one a check (a tenth of the instructions Redis added to a
            // request in Plaza, by `bench/rate-limit-instructions.sh`). A check queued
            // behind this batch has a later deadline than its earliest, so
            // it too is answered in time.
            let Some(deadline) = batch.iter().map(|check| check.deadline).min() else {
                continue;
            };
            match self.run(&script, &batch, deadline).await {
                Ok(values) => {
                    for (check, answer) in batch.drain(..).zip(values) {
                        let _ = check.answer.send(Ok(answer));
                    }
                }
                Err(error) => {
                    for check in batch.drain(..) {
                        let _ = check.answer.send(Err(error.clone()));
                    }
                }
            }
        }
    }

    async fn run(
        &mut self,
        script: &redis::Script,
        batch: &[PendingCheck],
        deadline: Instant,
    ) -> Result<Vec<i64>, SharedError> {
        let mut manager = self.manager(deadline).await?;
        // Grouped by quota and charge, in order within a group; checks of
        // different groups were concurrent, so no order binds them.
        let terms = |index: usize| (batch[index].period_micros, batch[index].charge_micros);
        let mut order: Vec<usize> = (0..batch.len()).collect();
        order.sort_by_key(|&index| terms(index));
        let mut invocation = script.prepare_invoke();
        for group in order.chunk_by(|&one, &other| terms(one) == terms(other)) {
            let first = &batch[group[0]];
            invocation
                .arg(group.len())
                .arg(first.period_micros)
                .arg(first.charge_micros)
                .arg(first.charge_micros.div_ceil(1000).max(1));
            for &index in group {
                invocation.key(&batch[index].key);
            }
        }
        let values: Vec<i64> =
            tokio::time::timeout_at(deadline, invocation.invoke_async(&mut manager))
                .await
                .map_err(|_| SharedError::Timeout(self.timeout))??;
        if values.len() != batch.len() {
            return Err(SharedError::Redis(format!(
                "the script answered {} values for {} checks",
                values.len(),
                batch.len()
            )));
        }
        let mut answers = vec![0; batch.len()];
        for (index, value) in order.into_iter().zip(values) {
            answers[index] = value;
        }
        Ok(answers)
    }

    async fn manager(&mut self, deadline: Instant) -> Result<ConnectionManager, SharedError> {
        if let Some(manager) = &self.manager {
            return Ok(manager.clone());
        }
        if self
            .last_attempt
            .is_some_and(|at| at.elapsed() < Duration::from_secs(1))
        {
            return Err(SharedError::NotConnected);
        }
        self.last_attempt = Some(Instant::now());
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
            .set_number_of_retries(1);
        let manager = tokio::time::timeout_at(
            deadline,
            ConnectionManager::new_with_config(self.client.clone(), config),
        )
        .await
        .map_err(|_| SharedError::Timeout(self.timeout))??;
        self.manager = Some(manager.clone());
        Ok(manager)
    }
}
