//! The analytics writer: requests hand their events to one task that stores
//! them in batches, one transaction each (a group commit). A request is
//! answered only after the commit of the batch holding its events, so an
//! acknowledged event is stored even if the process is killed right after
//! the answer. Under load the events that arrive while one batch commits
//! form the next, so a commit's cost is shared by many requests.
//!
//! Memory is bounded: the queue holds at most `analytics_queue_max_events`
//! events; a request that finds it full is 503 with `Retry-After`. At
//! shutdown the writer stores everything queued before it stops.
//!
//! With `analytics_group_commit` off, each request writes its own events in
//! its own transaction instead: the baseline `bench/analytics.sh` measures
//! the group commit against.

use plaza_domain::Database;
use plaza_domain::analytics::{self, NewEvent};
use tokio_util::sync::CancellationToken;

use crate::group_commit::{GroupCommit, Refused};

/// Events per transaction at most: big enough to share a commit among many
/// requests, small enough that one batch's transaction stays short.
const MAX_BATCH_EVENTS: usize = 1000;

/// Why events were not stored.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("the analytics queue is full")]
    Busy,
    #[error("the analytics writer is stopped")]
    Stopped,
    #[error("the events could not be stored: {0}")]
    Failed(String),
}

impl From<Refused> for IngestError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Busy => IngestError::Busy,
            Refused::Stopped => IngestError::Stopped,
            Refused::Failed(error) => IngestError::Failed(error),
        }
    }
}

/// The queue in front of the writer task.
pub struct Ingest {
    group_commit: bool,
    queue: GroupCommit<NewEvent>,
}

impl Ingest {
    pub fn new(max_queued_events: usize, group_commit: bool) -> Self {
        Ingest {
            group_commit,
            queue: GroupCommit::new(max_queued_events, MAX_BATCH_EVENTS),
        }
    }

    /// Queues `events` and waits until they are committed.
    pub async fn submit(&self, db: &Database, events: Vec<NewEvent>) -> Result<(), IngestError> {
        let places = self.queue.reserve(events.len())?;
        if !self.group_commit {
            let outcome = write(db, events).await.map_err(IngestError::Failed);
            drop(places);
            return outcome;
        }
        Ok(self.queue.submit(events, places).await?)
    }

    /// The writer: stores queued events in batches until `stop` fires, then
    /// stores what is still queued and returns. Runs once per process; a
    /// second call returns at once.
    pub async fn run(&self, db: Database, stop: CancellationToken) {
        self.queue.run(|events| write(&db, events), stop).await;
    }
}

/// Stores `events` in one transaction, counted in the metrics.
async fn write(db: &Database, events: Vec<NewEvent>) -> Result<(), String> {
    let count = events.len();
    let outcome = db
        .write(move |tx| Box::pin(async move { analytics::insert(tx, &events).await }))
        .await
        .map_err(|error| error.to_string());
    match &outcome {
        Ok(()) => {
            metrics::counter!("plaza_analytics_events_stored_total").increment(count as u64);
            metrics::histogram!("plaza_analytics_batch_events").record(count as f64);
        }
        Err(error) => {
            tracing::warn!(%error, events = count, "analytics events were not stored");
        }
    }
    outcome
}
