//! The live alert stream (`GET /api/alerts/stream`, Server-Sent Events),
//! which also carries its user's new notifications (event `notification`).
//!
//! Alerts and notifications are written by any instance (a broadcast
//! delivered by the cluster's job, a moderator's note, a dismissal, a
//! reply), so a stream cannot wait for a signal from its own process only.
//! Instead one job per instance (`alert_stream_watch`) reads three index
//! lookups, the newest delivery, the newest dismissal and the newest
//! notification, while any stream is open, and wakes every stream of the
//! instance when they change; each stream then reads what changed for its
//! own user.
//!
//! A stream holds no more right than its session: the same job checks the
//! sessions of the instance's open streams (one statement for up to 512)
//! at least every [`REAUTHORISE_PERIOD`], and right after reading the
//! change marker, before it wakes anyone. A stream whose session ended
//! (sign-out, revocation, expiry) or whose user is no longer active
//! (banned, deleted) ends; the others read with their user's role as the
//! check found it, so a stream delivers what `GET /api/alerts` shows its
//! user now (a demoted administrator gets no later admin broadcast).
//! An idle instance costs nothing; an instance with open streams costs one
//! small statement per `alert_stream_poll_ms` for the marker, one per
//! period for the sessions, and one per stream per change.
//!
//! Event ids are the event's time in Unix milliseconds. A row's time is
//! taken before its transaction commits, so a stream always looks back
//! [`LOOK_BACK_MS`] and drops what it already sent; a client resuming with
//! `Last-Event-ID` may get an event of those seconds again (delivery is at
//! least once; the alert `id` in the data tells duplicates apart).

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::response::sse::Event;
use futures_util::Stream;
use plaza_domain::alerts::{Alert, Reader};
use plaza_domain::notifications::Notification;
use plaza_domain::sessions::SessionLifetime;
use plaza_domain::time::{now_millis, rfc3339};
use plaza_domain::users::Role;
use plaza_domain::{Database, DomainError};
use serde::Serialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use crate::services::notifications::NotificationItem;
use crate::settings::{AlertSettings, ServerSettings};

/// How far back a stream looks each time it reads (see the module docs).
pub const LOOK_BACK_MS: i64 = 5_000;

/// The longest an open stream goes without its session being checked, so
/// that it ends within a second of its session ending or its user being
/// banned or deleted.
pub const REAUTHORISE_PERIOD: Duration = Duration::from_millis(500);

/// How often the watch job runs: every `alert_stream_poll_ms` or every
/// [`REAUTHORISE_PERIOD`], whichever is shorter.
pub fn watch_period(settings: &AlertSettings) -> Duration {
    Duration::from_millis(settings.alert_stream_poll_ms).min(REAUTHORISE_PERIOD)
}

/// The streams of this instance: their slots, who holds them, the change
/// marker they wait on, and the signal that ends them all at shutdown.
pub struct AlertStreams {
    slots: Arc<Semaphore>,
    max_per_user: usize,
    holders: Arc<Mutex<Holders>>,
    changes: watch::Sender<(i64, i64, i64)>,
    stopping: CancellationToken,
    max_lifetime: Duration,
    /// Watch runs per read of the change marker (at least 1), so the marker
    /// is read at least every `alert_stream_poll_ms`.
    runs_per_poll: u64,
    runs: AtomicU64,
}

/// Why a stream was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The user holds `alert_stream_max_per_user` streams already.
    UserLimit,
    /// Every slot of the instance is taken.
    Full,
}

/// The open streams, by a key of their own, and how many each user holds.
#[derive(Default)]
struct Holders {
    next_key: u64,
    streams: HashMap<u64, Holder>,
    per_user: HashMap<i64, usize>,
}

/// What the watch job knows of an open stream.
struct Holder {
    session_id: i64,
    grant: Arc<Grant>,
}

/// What an open stream may still read: its user's role as last checked,
/// and the signal that ends it (its session no longer stands, or shutdown).
struct Grant {
    role: Mutex<Role>,
    ended: CancellationToken,
}

impl Grant {
    fn role(&self) -> Role {
        *self.role.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A stream's place among the holders, given up when the stream is dropped
/// (it ended, or the client went away).
struct Registration {
    key: u64,
    user_id: i64,
    holders: Arc<Mutex<Holders>>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut holders = self.holders.lock().unwrap_or_else(PoisonError::into_inner);
        holders.streams.remove(&self.key);
        if let Some(count) = holders.per_user.get_mut(&self.user_id) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                holders.per_user.remove(&self.user_id);
            }
        }
    }
}

impl AlertStreams {
    pub fn new(settings: &AlertSettings) -> Self {
        let period = watch_period(settings).as_millis();
        let poll = u128::from(settings.alert_stream_poll_ms);
        AlertStreams {
            slots: Arc::new(Semaphore::new(settings.alert_stream_max_connections)),
            max_per_user: settings.alert_stream_max_per_user,
            holders: Arc::new(Mutex::new(Holders::default())),
            changes: watch::Sender::new((0, 0, 0)),
            stopping: CancellationToken::new(),
            max_lifetime: Duration::from_secs(settings.alert_stream_max_secs),
            runs_per_poll: u64::try_from(poll / period.max(1)).unwrap_or(1).max(1),
            runs: AtomicU64::new(0),
        }
    }

    /// Ends every open stream (the server is shutting down: a stream would
    /// otherwise hold its connection open through the drain).
    pub fn stop(&self) {
        self.stopping.cancel();
    }

    /// One run of the watch job (see the module docs): nothing while no
    /// stream is open; else the change marker when due, then the check of
    /// every open stream's session, then the wake-up. Checking after the
    /// marker is read means a stream woken for a change reads it with a
    /// role at least as recent as the change.
    pub async fn watch(
        &self,
        db: &Database,
        lifetime: &SessionLifetime,
    ) -> Result<(), DomainError> {
        let sessions = self.open_sessions();
        if sessions.is_empty() {
            return Ok(());
        }
        let run = self.runs.fetch_add(1, Ordering::Relaxed);
        let marker = if run.is_multiple_of(self.runs_per_poll) {
            Some(db.alerts_changed_at().await?)
        } else {
            None
        };
        let ids: Vec<i64> = sessions.iter().copied().collect();
        let live: HashMap<i64, Role> = db
            .live_sessions(&ids, lifetime)
            .await?
            .into_iter()
            .map(|session| (session.session_id, session.role))
            .collect();
        self.reauthorise(&sessions, &live);
        if let Some(marker) = marker {
            self.publish(marker);
        }
        Ok(())
    }

    /// The sessions of the open streams.
    fn open_sessions(&self) -> HashSet<i64> {
        let holders = self.holders.lock().unwrap_or_else(PoisonError::into_inner);
        holders
            .streams
            .values()
            .map(|holder| holder.session_id)
            .collect()
    }

    /// Ends the streams of the `checked` sessions that are not `live`, and
    /// gives the others their user's role now. A stream opened since the
    /// check began is left alone: its own request checked its session.
    fn reauthorise(&self, checked: &HashSet<i64>, live: &HashMap<i64, Role>) {
        let holders = self.holders.lock().unwrap_or_else(PoisonError::into_inner);
        for holder in holders.streams.values() {
            if !checked.contains(&holder.session_id) {
                continue;
            }
            match live.get(&holder.session_id) {
                Some(role) => {
                    *holder
                        .grant
                        .role
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = *role;
                }
                None => holder.grant.ended.cancel(),
            }
        }
    }

    /// Publishes the newest delivery, dismissal and notification times;
    /// streams wake when they differ from the last ones.
    fn publish(&self, marker: (i64, i64, i64)) {
        self.changes.send_if_modified(|current| {
            let changed = *current != marker;
            *current = marker;
            changed
        });
    }

    /// A stream for `reader` in session `session_id`, unless the user holds
    /// `alert_stream_max_per_user` streams already or every slot is taken.
    /// `resume_from` is the client's `Last-Event-ID`: without one the
    /// stream starts with the reader's current alerts (and notifications
    /// from then on). `server` renders notifications' links.
    pub fn open(
        &self,
        db: Database,
        server: ServerSettings,
        session_id: i64,
        reader: Reader,
        resume_from: Option<i64>,
    ) -> Result<impl Stream<Item = Result<Event, Infallible>> + use<>, Refusal> {
        let grant = Arc::new(Grant {
            role: Mutex::new(reader.role),
            ended: self.stopping.child_token(),
        });
        let (slot, registration) = {
            let mut holders = self.holders.lock().unwrap_or_else(PoisonError::into_inner);
            let held = holders.per_user.get(&reader.user_id).copied().unwrap_or(0);
            if held >= self.max_per_user {
                return Err(Refusal::UserLimit);
            }
            let slot = self
                .slots
                .clone()
                .try_acquire_owned()
                .map_err(|_| Refusal::Full)?;
            let key = holders.next_key;
            holders.next_key += 1;
            holders.streams.insert(
                key,
                Holder {
                    session_id,
                    grant: grant.clone(),
                },
            );
            *holders.per_user.entry(reader.user_id).or_default() += 1;
            let registration = Registration {
                key,
                user_id: reader.user_id,
                holders: self.holders.clone(),
            };
            (slot, registration)
        };
        let mut changes = self.changes.subscribe();
        changes.mark_unchanged();
        let follower = Follower {
            db,
            server,
            reader,
            since: resume_from.map(|from| from.saturating_sub(LOOK_BACK_MS)),
            sent: HashMap::new(),
            pending: VecDeque::new(),
            changes,
            grant,
            ends_at: Instant::now() + self.max_lifetime,
            snapshot_only: self.max_lifetime.is_zero(),
            started: false,
            _slot: slot,
            _registration: registration,
        };
        Ok(futures_util::stream::unfold(follower, Follower::next))
    }
}

/// What the stream sent, keyed so that a look-back does not send it twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Sent {
    Alert(i64),
    Dismissed(i64),
    /// A notification as of its newest event (a group that grows is sent
    /// again).
    Notification(i64, i64),
}

/// The `dismissed` event's data.
#[derive(Serialize)]
struct DismissedItem {
    id: i64,
}

/// One open stream.
struct Follower {
    db: Database,
    server: ServerSettings,
    /// Whose alerts; the role is the grant's, as last checked.
    reader: Reader,
    /// Where the next read starts (Unix milliseconds); `None` before the
    /// first read of a stream that did not resume.
    since: Option<i64>,
    /// What was sent, with its time, forgotten once it is older than the
    /// look-back window.
    sent: HashMap<Sent, i64>,
    pending: VecDeque<Event>,
    changes: watch::Receiver<(i64, i64, i64)>,
    grant: Arc<Grant>,
    ends_at: Instant,
    /// A lifetime of 0: send what there is, then end.
    snapshot_only: bool,
    started: bool,
    _slot: OwnedSemaphorePermit,
    _registration: Registration,
}

impl Follower {
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Follower)> {
        loop {
            // What was queued before the session ended is not sent.
            if self.grant.ended.is_cancelled() {
                return None;
            }
            if let Some(event) = self.pending.pop_front() {
                return Some((Ok(event), self));
            }
            if self.started {
                if self.snapshot_only {
                    return None;
                }
                tokio::select! {
                    () = self.grant.ended.cancelled() => return None,
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
    async fn read(&mut self) -> Result<(), DomainError> {
        let now = now_millis();
        let reader = Reader {
            role: self.grant.role(),
            ..self.reader
        };
        let mut events: Vec<(i64, Sent, Event)> = Vec::new();
        match self.since {
            None => {
                let mut current = self.db.alerts_for(reader).await?;
                current.reverse();
                events.extend(current.into_iter().filter_map(alert_event));
            }
            Some(since) => {
                let changes = self.db.alert_changes_since(reader, since).await?;
                events.extend(changes.delivered.into_iter().filter_map(alert_event));
                for notification in self
                    .db
                    .notification_changes_since(reader.user_id, since)
                    .await?
                {
                    events.extend(notification_event(&notification, &self.server));
                }
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

fn notification_event(
    notification: &Notification,
    server: &ServerSettings,
) -> Option<(i64, Sent, Event)> {
    let at = notification.updated_at;
    let key = Sent::Notification(notification.id, at);
    json_event(
        "notification",
        at,
        NotificationItem::new(notification, server),
    )
    .map(|event| (at, key, event))
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

/// One alert.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlertItem {
    /// The `alertId` to dismiss it with.
    #[schema(example = 3)]
    pub id: i64,
    /// `info`, `success`, `warning` or `error`.
    #[serde(rename = "type")]
    #[schema(example = "info")]
    pub alert_type: String,
    pub title: String,
    pub message: String,
    /// When it was delivered.
    pub created_at: String,
    /// `broadcast` or `moderation`.
    #[schema(example = "broadcast")]
    pub source: String,
}

impl From<Alert> for AlertItem {
    fn from(alert: Alert) -> Self {
        AlertItem {
            id: alert.id,
            alert_type: alert.alert_type,
            title: alert.title,
            message: alert.message,
            created_at: rfc3339(alert.delivered_at),
            source: alert.source,
        }
    }
}
