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

use std::sync::Mutex;

use plaza_domain::Database;
use plaza_domain::analytics::{self, NewEvent};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

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

struct Submission {
    events: Vec<NewEvent>,
    /// Holds the events' places in the queue until they are written.
    _places: OwnedSemaphorePermit,
    done: oneshot::Sender<Result<(), String>>,
}

/// The queue in front of the writer task.
pub struct Ingest {
    group_commit: bool,
    sender: mpsc::UnboundedSender<Submission>,
    receiver: Mutex<Option<mpsc::UnboundedReceiver<Submission>>>,
    places: std::sync::Arc<Semaphore>,
}

impl Ingest {
    pub fn new(max_queued_events: usize, group_commit: bool) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Ingest {
            group_commit,
            sender,
            receiver: Mutex::new(Some(receiver)),
            places: std::sync::Arc::new(Semaphore::new(max_queued_events)),
        }
    }

    /// Queues `events` and waits until they are committed.
    pub async fn submit(&self, db: &Database, events: Vec<NewEvent>) -> Result<(), IngestError> {
        let count = u32::try_from(events.len()).map_err(|_| IngestError::Busy)?;
        let places = std::sync::Arc::clone(&self.places)
            .try_acquire_many_owned(count)
            .map_err(|_| IngestError::Busy)?;
        if !self.group_commit {
            let outcome = write(db, events).await.map_err(IngestError::Failed);
            drop(places);
            return outcome;
        }
        let (done, committed) = oneshot::channel();
        self.sender
            .send(Submission {
                events,
                _places: places,
                done,
            })
            .map_err(|_| IngestError::Stopped)?;
        committed
            .await
            .map_err(|_| IngestError::Stopped)?
            .map_err(IngestError::Failed)
    }

    /// The writer: stores queued events in batches until `stop` fires, then
    /// stores what is still queued and returns. Runs once per process; a
    /// second call returns at once.
    pub async fn run(&self, db: Database, stop: CancellationToken) {
        let taken = self
            .receiver
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let Some(mut receiver) = taken else {
            return;
        };
        loop {
            let first = tokio::select! {
                biased;
                submission = receiver.recv() => submission,
                () = stop.cancelled() => None,
            };
            let Some(first) = first else { break };
            let batch = fill_batch(first, &mut receiver);
            write_batch(&db, batch).await;
        }
        // Refuse new submissions, then store every one already queued.
        receiver.close();
        while let Some(first) = receiver.recv().await {
            let batch = fill_batch(first, &mut receiver);
            write_batch(&db, batch).await;
        }
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

/// `first` and whatever else is queued, up to [`MAX_BATCH_EVENTS`].
fn fill_batch(
    first: Submission,
    receiver: &mut mpsc::UnboundedReceiver<Submission>,
) -> Vec<Submission> {
    let mut events = first.events.len();
    let mut batch = vec![first];
    while events < MAX_BATCH_EVENTS {
        let Ok(next) = receiver.try_recv() else { break };
        events += next.events.len();
        batch.push(next);
    }
    batch
}

async fn write_batch(db: &Database, mut batch: Vec<Submission>) {
    let events: Vec<NewEvent> = batch
        .iter_mut()
        .flat_map(|submission| std::mem::take(&mut submission.events))
        .collect();
    let outcome = write(db, events).await;
    for submission in batch {
        // A request that gave up (its client left) no longer listens.
        let _ = submission.done.send(outcome.clone());
    }
}
