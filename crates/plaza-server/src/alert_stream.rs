//! The live alert stream (`GET /api/alerts/stream`, Server-Sent Events).
//!
//! Alerts are written by any instance (a broadcast delivered by the
//! cluster's job, a moderator's note, a dismissal), so a stream cannot wait
//! for a signal from its own process only. Instead one job per instance
//! (`alert_stream_watch`) reads two index lookups, the newest delivery and
//! the newest dismissal, while any stream is open, and wakes every stream
//! of the instance when they change; each stream then reads what changed
//! for its own user. An idle instance costs nothing; an instance with open
//! streams costs one small query per period plus one per stream per change.
//!
//! Event ids are the event's time in Unix milliseconds. A row's time is
//! taken before its transaction commits, so a stream always looks back
//! [`LOOK_BACK_MS`] and drops what it already sent; a client resuming with
//! `Last-Event-ID` may get an event of those seconds again (delivery is at
//! least once; the alert `id` in the data tells duplicates apart).

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::Event;
use futures_util::Stream;
use plaza_domain::Database;
use plaza_domain::alerts::{Alert, Reader};
use plaza_domain::time::now_millis;
use serde::Serialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::controllers::alerts::AlertItem;
use crate::settings::AlertSettings;

/// How far back a stream looks each time it reads (see the module docs).
pub const LOOK_BACK_MS: i64 = 5_000;

/// The streams of this instance: their slots, the change marker they wait
/// on, and the signal that ends them all at shutdown.
pub struct AlertStreams {
    slots: Arc<Semaphore>,
    changes: watch::Sender<(i64, i64)>,
    stopping: CancellationToken,
    max_lifetime: Duration,
}

impl AlertStreams {
    pub fn new(settings: &AlertSettings) -> Self {
        AlertStreams {
            slots: Arc::new(Semaphore::new(settings.alert_stream_max_connections)),
            changes: watch::Sender::new((0, 0)),
            stopping: CancellationToken::new(),
            max_lifetime: Duration::from_secs(settings.alert_stream_max_secs),
        }
    }

    /// Ends every open stream (the server is shutting down: a stream would
    /// otherwise hold its connection open through the drain).
    pub fn stop(&self) {
        self.stopping.cancel();
    }

    /// Whether any stream is open, so the watch job has something to do.
    pub fn is_watched(&self) -> bool {
        self.changes.receiver_count() > 0
    }

    /// Publishes the newest delivery and dismissal times; streams wake
    /// when they differ from the last ones.
    pub fn publish(&self, marker: (i64, i64)) {
        self.changes.send_if_modified(|current| {
            let changed = *current != marker;
            *current = marker;
            changed
        });
    }

    /// A stream for `reader`, or `None` when every slot is taken.
    /// `resume_from` is the client's `Last-Event-ID`: without one the
    /// stream starts with the reader's current alerts.
    pub fn open(
        &self,
        db: Database,
        reader: Reader,
        resume_from: Option<i64>,
    ) -> Option<impl Stream<Item = Result<Event, Infallible>> + use<>> {
        let slot = self.slots.clone().try_acquire_owned().ok()?;
        let mut changes = self.changes.subscribe();
        changes.mark_unchanged();
        let follower = Follower {
            db,
            reader,
            since: resume_from.map(|from| from.saturating_sub(LOOK_BACK_MS)),
            sent: HashMap::new(),
            pending: VecDeque::new(),
            changes,
            stopping: self.stopping.clone(),
            ends_at: Instant::now() + self.max_lifetime,
            snapshot_only: self.max_lifetime.is_zero(),
            started: false,
            _slot: slot,
        };
        Some(futures_util::stream::unfold(follower, Follower::next))
    }
}

/// What the stream sent, keyed so that a look-back does not send it twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Sent {
    Alert(i64),
    Dismissed(i64),
}

/// The `dismissed` event's data.
#[derive(Serialize)]
struct DismissedItem {
    id: i64,
}

/// One open stream.
struct Follower {
    db: Database,
    reader: Reader,
    /// Where the next read starts (Unix milliseconds); `None` before the
    /// first read of a stream that did not resume.
    since: Option<i64>,
    /// What was sent, with its time, forgotten once it is older than the
    /// look-back window.
    sent: HashMap<Sent, i64>,
    pending: VecDeque<Event>,
    changes: watch::Receiver<(i64, i64)>,
    stopping: CancellationToken,
    ends_at: Instant,
    /// A lifetime of 0: send what there is, then end.
    snapshot_only: bool,
    started: bool,
    _slot: OwnedSemaphorePermit,
}

impl Follower {
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Follower)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some((Ok(event), self));
            }
            if self.started {
                if self.snapshot_only {
                    return None;
                }
                tokio::select! {
                    () = self.stopping.cancelled() => return None,
                    () = tokio::time::sleep_until(self.ends_at) => return None,
                    changed = self.changes.changed() => changed.ok()?,
                }
            }
            self.started = true;
            if let Err(error) = self.read().await {
                tracing::warn!(%error, user = self.reader.user_id, "alert stream ended: cannot read alerts");
                return None;
            }
        }
    }

    /// Queues what changed since the last read.
    async fn read(&mut self) -> Result<(), plaza_domain::DomainError> {
        let now = now_millis();
        let mut events: Vec<(i64, Sent, Event)> = Vec::new();
        match self.since {
            None => {
                let mut current = self.db.alerts_for(self.reader).await?;
                current.reverse();
                events.extend(current.into_iter().filter_map(alert_event));
            }
            Some(since) => {
                let changes = self.db.alert_changes_since(self.reader, since).await?;
                events.extend(changes.delivered.into_iter().filter_map(alert_event));
                for dismissal in changes.dismissed {
                    let data = DismissedItem {
                        id: dismissal.alert_id,
                    };
                    if let Some(event) = json_event("dismissed", dismissal.dismissed_at, data) {
                        events.push((
                            dismissal.dismissed_at,
                            Sent::Dismissed(dismissal.alert_id),
                            event,
                        ));
                    }
                }
            }
        }
        events.sort_by_key(|(at, _, _)| *at);
        for (at, key, event) in events {
            if self.sent.insert(key, at).is_none() {
                self.pending.push_back(event);
            }
        }
        let since = now.saturating_sub(LOOK_BACK_MS);
        self.since = Some(since);
        self.sent.retain(|_, at| *at >= since);
        Ok(())
    }
}

fn alert_event(alert: Alert) -> Option<(i64, Sent, Event)> {
    let at = alert.delivered_at;
    let key = Sent::Alert(alert.id);
    json_event("alert", at, AlertItem::from(alert)).map(|event| (at, key, event))
}

/// An event named `name` with id `at` and `data` as JSON (`None` if it
/// would not serialize, which these plain structs always do).
fn json_event(name: &str, at: i64, data: impl Serialize) -> Option<Event> {
    Event::default()
        .event(name)
        .id(at.to_string())
        .json_data(data)
        .ok()
}
