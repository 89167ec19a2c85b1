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
//! The writer runs on a thread of its own (a single-threaded runtime, with
//! connections of its own on PostgreSQL), so a batch's round trips to the
//! database never wait behind the request runtime's work; its answers go
//! back to the request runtime as one task per batch.
//!
//! One submission's events never fail another's: a batch the database
//! refuses is written again in parts until the submission at fault stands
//! alone ([`crate::services::group_commit`]).

use std::sync::Arc;

use plaza_domain::analytics::{self, NewEvent};
use plaza_domain::{Database, DomainError};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::services::group_commit::{GroupCommit, Refused, Unwritten};

/// PostgreSQL connections the writer's thread opens: one for the batch
/// being written, one to replace it should it fail.
const WRITER_CONNECTIONS: u32 = 2;

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
    queue: GroupCommit<NewEvent>,
}

impl Ingest {
    pub fn new(max_queued_events: usize) -> Self {
        Ingest {
            queue: GroupCommit::new(max_queued_events, MAX_BATCH_EVENTS),
        }
    }

    /// Events queued or being written now.
    pub fn queued(&self) -> usize {
        self.queue.queued()
    }

    /// Queues `events` and waits until they are committed.
    pub async fn submit(&self, _db: &Database, events: Vec<NewEvent>) -> Result<(), IngestError> {
        let places = self.queue.reserve(events.len())?;
        Ok(self.queue.submit(events, places).await?)
    }

    /// The writer: stores queued events in batches until `stop` fires, then
    /// stores what is still queued and returns. Runs once per process; a
    /// second call returns at once.
    pub async fn run(&self, db: Database, stop: CancellationToken) {
        self.queue.run(|events| write(&db, events), stop).await;
    }

    /// [`Ingest::run`] on a thread of its own, answering the requests on
    /// `requests`, the runtime they wait on.
    async fn run_apart(&self, db: Database, stop: CancellationToken, requests: Handle) {
        self.queue
            .run_answering_on(Some(requests), |events| write(&db, events), stop)
            .await;
    }
}

/// Runs the writer of `ingest` into `db` on a thread of its own until
/// `stop` fires and the queue is stored; should the thread not start, on
/// the caller's runtime.
pub async fn run_writer(ingest: Arc<Ingest>, db: Database, stop: CancellationToken) {
    let (stopped, on_stop) = oneshot::channel();
    let (own_ingest, own_db, own_stop, requests) =
        (ingest.clone(), db.clone(), stop.clone(), Handle::current());
    let spawned = std::thread::Builder::new()
        .name("plaza-analytics-writer".to_owned())
        .spawn(move || {
            let ran = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|runtime| {
                    runtime.block_on(run_on_own_connections(
                        &own_ingest,
                        own_db,
                        own_stop,
                        requests,
                    ))
                });
            let _ = stopped.send(ran.is_ok());
        });
    let ran = spawned.is_ok() && on_stop.await.unwrap_or(false);
    if !ran {
        tracing::warn!(
            "the analytics writer runs on the request runtime: its thread did not start"
        );
        ingest.run(db, stop).await;
    }
}

async fn run_on_own_connections(
    ingest: &Ingest,
    db: Database,
    stop: CancellationToken,
    requests: Handle,
) {
    let own = db
        .with_own_connections(WRITER_CONNECTIONS)
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "the analytics writer shares the request pool");
            db.clone()
        });
    ingest.run_apart(own, stop, requests).await;
}

/// Stores `events` in one transaction, counted in the metrics. When the
/// database refuses them, they are handed back to be written in parts.
async fn write(db: &Database, events: Vec<NewEvent>) -> Result<(), Unwritten<NewEvent>> {
    let count = events.len();
    let events = Arc::new(events);
    let inserted = Arc::clone(&events);
    let outcome = db
        .write(move |tx| Box::pin(async move { analytics::insert(tx, &inserted).await }))
        .await;
    match outcome {
        Ok(()) => {
            metrics::counter!("plaza_analytics_events_stored_total").increment(count as u64);
            metrics::histogram!("plaza_analytics_batch_events").record(count as f64);
            Ok(())
        }
        Err(error) => {
            tracing::warn!(%error, events = count, "analytics events were not stored");
            let refused = !matches!(error, DomainError::Unavailable(_));
            Err(Unwritten {
                error: error.to_string(),
                // The transaction has ended, so `events` is the last handle.
                rows: refused.then(|| Arc::into_inner(events)).flatten(),
            })
        }
    }
}
