//! The content generation (bumped by triggers on every write to posts) as
//! this instance knows it, so cached public answers are checked in memory
//! instead of by a read per request.
//!
//! The instance learns of writes through a channel: PostgreSQL's
//! `LISTEN/NOTIFY` on a connection of its own, or Redis pub/sub
//! (`content_notifications = "redis"`); on SQLite, and for its own writes
//! everywhere, its units of work as they commit. Every announced write,
//! every unit of work committed here, and every connect or loss of the
//! channel count as events. A read of the generation
//! confirms it for [`TRUST`] from when the read began, provided the channel
//! was listening throughout and no event came meanwhile; the generation is
//! then answered from memory until the next event or the end of that
//! second. So a cached answer is at most [`TRUST`] older than a fresh one
//! even if an announcement is lost unseen (a write committed after the
//! confirming read began, answered at most [`TRUST`] after it began), and,
//! while the channel is known to be down, every request reads the
//! generation as before. A read every [`HEARTBEAT`] on the channel's own
//! task keeps the confirmation current (on PostgreSQL over the listening
//! connection, which also proves that connection alive).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use plaza_domain::content_notifications::ContentListener;
use plaza_domain::{Backend, Database, DomainError};
use tokio_util::sync::CancellationToken;

use crate::settings::ContentNotifications;

/// How long a confirmed generation is trusted, from when its read began:
/// the most a cached public answer may lag a fresh one.
pub const TRUST: Duration = Duration::from_secs(1);

/// How often the channel's task confirms the generation.
const HEARTBEAT: Duration = Duration::from_millis(250);

/// The longest a connect or a confirming read of the channel's task may
/// take before the channel counts as lost.
const CHANNEL_TIMEOUT: Duration = Duration::from_secs(1);

/// The first wait before connecting again, doubled after each failure up
/// to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// The Redis channel instances announce their writes on.
const REDIS_CHANNEL: &str = "plaza:content";

/// How this instance learns of writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Postgres,
    Redis,
    InProcess,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Postgres => "postgres",
            Channel::Redis => "redis",
            Channel::InProcess => "in_process",
        }
    }
}

/// A generation read and how far it is trusted.
#[derive(Debug, Clone, Copy)]
struct Confirmed {
    generation: i64,
    /// The event count when its read began.
    events: u64,
    /// When trust in it ends: its read's start plus [`TRUST`].
    until: Instant,
}

/// The generation as this instance knows it (the app state holds one).
pub struct ContentGeneration {
    db: Database,
    channel: Channel,
    redis: Option<redis::Client>,
    /// Announced writes, and connects and losses of the channel.
    events: AtomicU64,
    /// Whether the channel is connected (on SQLite: whether its task runs).
    listening: AtomicBool,
    confirmed: RwLock<Option<Confirmed>>,
    /// Times the channel connected, writes it announced, and reads of the
    /// generation made for requests, for the metrics.
    connects: AtomicU64,
    heard: AtomicU64,
    reads: AtomicU64,
}

impl ContentGeneration {
    /// The channel follows the engine and `setting`: Redis pub/sub needs
    /// `redis` (the client of `redis_url`).
    pub fn new(db: Database, setting: ContentNotifications, redis: Option<redis::Client>) -> Self {
        let channel = match (db.backend(), setting, &redis) {
            (Backend::Sqlite, _, _) => Channel::InProcess,
            (Backend::Postgres, ContentNotifications::Redis, Some(_)) => Channel::Redis,
            (Backend::Postgres, _, _) => Channel::Postgres,
        };
        ContentGeneration {
            db,
            channel,
            redis,
            events: AtomicU64::new(0),
            listening: AtomicBool::new(false),
            confirmed: RwLock::new(None),
            connects: AtomicU64::new(0),
            heard: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        }
    }

    pub fn channel(&self) -> Channel {
        self.channel
    }

    /// Whether the channel is connected now.
    pub fn listening(&self) -> bool {
        self.listening.load(Ordering::SeqCst)
    }

    /// Times the channel connected since start.
    pub fn connects(&self) -> u64 {
        self.connects.load(Ordering::Relaxed)
    }

    /// Writes the channel announced since start.
    pub fn heard(&self) -> u64 {
        self.heard.load(Ordering::Relaxed)
    }

    /// Reads of the generation made for requests since start.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// The current generation: from memory while trusted, else read (and
    /// the read confirms it when the channel listened throughout).
    pub async fn current(&self) -> Result<i64, DomainError> {
        if let Some(generation) = self.trusted() {
            return Ok(generation);
        }
        self.reads.fetch_add(1, Ordering::Relaxed);
        let events = self.events();
        let started = Instant::now();
        let generation = self.db.content_generation().await?;
        self.confirm(generation, events, started);
        Ok(generation)
    }

    /// This process's own units of work count as announcements as soon as
    /// they commit (on SQLite they are the announcements), so a write is
    /// seen at once by the anonymous readers of the instance that made it.
    fn events(&self) -> u64 {
        self.events.load(Ordering::SeqCst) + self.db.commits()
    }

    fn trusted(&self) -> Option<i64> {
        if !self.listening() {
            return None;
        }
        let confirmed = (*self.confirmed.read().ok()?)?;
        (confirmed.events == self.events() && Instant::now() < confirmed.until)
            .then_some(confirmed.generation)
    }

    /// Trusts `generation`, read from `started` on, when nothing happened
    /// since `events` was counted before that read; of two confirmations
    /// the later-begun read stands.
    fn confirm(&self, generation: i64, events: u64, started: Instant) {
        let Ok(mut confirmed) = self.confirmed.write() else {
            return;
        };
        if !self.listening() || self.events() != events {
            return;
        }
        let until = started + TRUST;
        if confirmed.is_none_or(|known| known.events != events || known.until <= until) {
            *confirmed = Some(Confirmed {
                generation,
                events,
                until,
            });
        }
    }

    fn announced(&self) {
        self.events.fetch_add(1, Ordering::SeqCst);
    }

    /// A write announced on the channel.
    fn hear(&self) {
        self.announced();
        self.heard.fetch_add(1, Ordering::Relaxed);
    }

    /// A connect counts as an event before the channel listens, so a read
    /// begun before it cannot confirm; a loss stops trust at once.
    fn set_listening(&self, on: bool) {
        if on {
            self.announced();
            self.connects.fetch_add(1, Ordering::Relaxed);
            self.listening.store(true, Ordering::SeqCst);
        } else {
            self.listening.store(false, Ordering::SeqCst);
            self.announced();
        }
    }

    /// Follows the channel until `stop`: connects, reconnects with backoff
    /// when it is lost, and confirms the generation every [`HEARTBEAT`].
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        if self.channel == Channel::InProcess {
            self.set_listening(true);
            self.beat_through_pool(&stop).await;
            self.set_listening(false);
            return;
        }
        let mut retry = RETRY_FIRST;
        loop {
            let lost = match self.channel {
                Channel::Postgres => self.follow_postgres(&stop).await,
                Channel::Redis => self.follow_redis(&stop).await,
                Channel::InProcess => return,
            };
            if stop.is_cancelled() {
                return;
            }
            match lost {
                Lost::AfterConnecting(error) => {
                    retry = RETRY_FIRST;
                    tracing::warn!(channel = self.channel.as_str(), %error, "content notifications lost; cached public answers are checked by a read each until they are back");
                }
                Lost::BeforeConnecting(error) => {
                    tracing::warn!(channel = self.channel.as_str(), %error, retry_ms = retry.as_millis() as u64, "content notifications cannot connect");
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(retry) => {}
            }
            retry = (retry * 2).min(RETRY_MAX);
        }
    }

    /// SQLite: confirms through the pool until `stop`.
    async fn beat_through_pool(&self, stop: &CancellationToken) {
        loop {
            let events = self.events();
            let started = Instant::now();
            if let Ok(Ok(generation)) =
                tokio::time::timeout(CHANNEL_TIMEOUT, self.db.content_generation()).await
            {
                self.confirm(generation, events, started);
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(HEARTBEAT) => {}
            }
        }
    }

    /// PostgreSQL: one listening connection, read on every [`HEARTBEAT`]
    /// and after every notification.
    async fn follow_postgres(&self, stop: &CancellationToken) -> Lost {
        let mut listener = match ContentListener::connect(&self.db, CHANNEL_TIMEOUT).await {
            Ok(listener) => listener,
            Err(error) => return Lost::BeforeConnecting(error.to_string()),
        };
        self.set_listening(true);
        let lost = loop {
            let events = self.events();
            let started = Instant::now();
            match tokio::time::timeout(CHANNEL_TIMEOUT, listener.generation()).await {
                Ok(Ok(generation)) => self.confirm(generation, events, started),
                Ok(Err(error)) => break error.to_string(),
                Err(_) => break "a confirming read timed out".to_owned(),
            }
            let beat = tokio::time::sleep(HEARTBEAT);
            tokio::pin!(beat);
            let next = tokio::select! {
                () = stop.cancelled() => break String::new(),
                () = &mut beat => Ok(()),
                next = listener.next() => next.map(|()| self.hear()),
            };
            if let Err(error) = next {
                break error.to_string();
            }
        };
        self.set_listening(false);
        Lost::AfterConnecting(lost)
    }

    /// Redis: a subscription, pinged on every [`HEARTBEAT`] before the
    /// generation is confirmed through the pool; this instance's own
    /// writes are published by a second task while subscribed.
    async fn follow_redis(&self, stop: &CancellationToken) -> Lost {
        let Some(client) = &self.redis else {
            return Lost::BeforeConnecting("redis_url is not set".to_owned());
        };
        let subscribed = async {
            let publisher = client.get_multiplexed_async_connection().await?;
            let (mut sink, stream) = client.get_async_pubsub().await?.split();
            sink.subscribe(REDIS_CHANNEL).await?;
            Ok::<_, redis::RedisError>((publisher, sink, stream))
        };
        let (publisher, mut sink, mut stream) =
            match tokio::time::timeout(CHANNEL_TIMEOUT, subscribed).await {
                Ok(Ok(connected)) => connected,
                Ok(Err(error)) => return Lost::BeforeConnecting(error.to_string()),
                Err(_) => return Lost::BeforeConnecting("connecting timed out".to_owned()),
            };
        self.set_listening(true);
        let publishing = self.publish_own_writes(publisher);
        tokio::pin!(publishing);
        let lost = loop {
            let events = self.events();
            let started = Instant::now();
            let confirmed = async {
                sink.ping::<redis::Value>()
                    .await
                    .map_err(|error| error.to_string())?;
                self.db
                    .content_generation()
                    .await
                    .map_err(|error| error.to_string())
            };
            match tokio::time::timeout(CHANNEL_TIMEOUT, confirmed).await {
                Ok(Ok(generation)) => self.confirm(generation, events, started),
                Ok(Err(error)) => break error,
                Err(_) => break "a confirming ping timed out".to_owned(),
            }
            let beat = tokio::time::sleep(HEARTBEAT);
            tokio::pin!(beat);
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = &mut beat => break,
                    error = &mut publishing => {
                        self.set_listening(false);
                        return Lost::AfterConnecting(error);
                    }
                    message = stream.next() => match message {
                        Some(_) => self.hear(),
                        None => {
                            self.set_listening(false);
                            return Lost::AfterConnecting("the subscription was closed".to_owned());
                        }
                    },
                }
            }
            if stop.is_cancelled() {
                break String::new();
            }
        };
        self.set_listening(false);
        Lost::AfterConnecting(lost)
    }

    /// Publishes the generation after this process's units of work commit,
    /// when it moved; answers why publishing stopped.
    async fn publish_own_writes(&self, mut publisher: redis::aio::MultiplexedConnection) -> String {
        let mut published = None;
        loop {
            self.db.committed().await;
            let generation = match self.db.content_generation().await {
                Ok(generation) => generation,
                Err(error) => return error.to_string(),
            };
            if published == Some(generation) {
                continue;
            }
            let mut publish = redis::cmd("PUBLISH");
            publish.arg(REDIS_CHANNEL).arg(generation);
            let sent = publish.query_async::<i64>(&mut publisher);
            match tokio::time::timeout(CHANNEL_TIMEOUT, sent).await {
                Ok(Ok(_)) => published = Some(generation),
                Ok(Err(error)) => return error.to_string(),
                Err(_) => return "publishing timed out".to_owned(),
            }
        }
    }
}

/// Why following the channel ended.
enum Lost {
    BeforeConnecting(String),
    AfterConnecting(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn sqlite() -> (tempfile::TempDir, ContentGeneration) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("plaza.db").display());
        let db = Database::connect(&url, &Default::default()).await.unwrap();
        db.migrate().await.unwrap();
        (
            dir,
            ContentGeneration::new(db, ContentNotifications::Database, None),
        )
    }

    #[tokio::test]
    async fn without_a_listening_channel_every_answer_is_read() {
        let (_dir, known) = sqlite().await;
        known.current().await.unwrap();
        known.current().await.unwrap();
        assert_eq!(known.reads(), 2);
    }

    #[tokio::test]
    async fn a_confirmed_generation_is_trusted_until_an_event_or_the_end_of_its_second() {
        let (_dir, known) = sqlite().await;
        known.set_listening(true);
        let generation = known.current().await.unwrap();
        assert_eq!(known.current().await.unwrap(), generation);
        assert_eq!(known.reads(), 1, "the second from memory");
        known.announced();
        known.current().await.unwrap();
        assert_eq!(known.reads(), 2, "an event ends trust");
        known.announced();
        let events = known.events();
        known.confirm(generation, events, Instant::now() - TRUST);
        assert_eq!(known.trusted(), None, "a second after its read began");
        known.confirm(generation, events - 1, Instant::now());
        assert_eq!(known.trusted(), None, "a read begun before an event");
        known.confirm(generation, events, Instant::now());
        assert_eq!(known.trusted(), Some(generation));
        known.set_listening(false);
        assert_eq!(known.trusted(), None, "a lost channel ends trust");
        known.confirm(generation, known.events(), Instant::now());
        assert_eq!(known.trusted(), None, "nothing is confirmed while lost");
    }
}
