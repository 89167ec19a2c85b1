//! Session cookies resolved together: requests hand their token hashes to
//! one task, which looks up every hash waiting in one statement
//! ([`Database::session_users`]), with at most [`IN_FLIGHT`] statements
//! running at once; the hashes that arrive meanwhile form the next one.
//! Under load this turns a round trip per signed-in request into one per
//! batch (single analytics events on PostgreSQL: the session statement was
//! 57 of the database's 93 µs of CPU per event).
//!
//! [`SessionLookups::lookup`] caches nothing: each answer comes from a
//! statement that ran after its request asked, so a sign-out, a ban or a
//! role change counts from the next request on, as with a lookup of its
//! own. Only analytics collection uses [`SessionLookups::lookup_recent`],
//! which also takes an answer confirmed within a window the caller gives.
//!
//! A batch that found the database unavailable answers every lookup in it
//! so (503), rather than each trying again alone and waiting twice. A
//! lookup that finds the queue full, or whose batch failed otherwise,
//! looks itself up alone, so its answer and its error are what they were
//! without the queue.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hashlink::LruCache;
use plaza_domain::sessions::{MAX_LOOKUP_BATCH, SessionLifetime, SessionUser};
use plaza_domain::{Database, DomainError};
use tokio::sync::{OnceCell, Semaphore, mpsc, oneshot};

/// Lookup statements running at once at most: enough that one slow
/// statement does not hold up the others, few enough that batches form.
const IN_FLIGHT: usize = 4;

/// Lookups waiting at most; beyond them a lookup goes alone.
const QUEUE_CAPACITY: usize = 4096;

/// Recently confirmed sessions kept at most (least recently used go first),
/// so a flood of distinct cookies cannot grow memory.
const RECENT_CAPACITY: usize = 10_000;

/// `Err(Some(_))` when the batch found the database unavailable, `Err(None)`
/// when it failed otherwise (the lookup then goes alone).
type Answer = Result<Option<SessionUser>, Option<DomainError>>;

struct PendingLookup {
    token_hash: String,
    answer: oneshot::Sender<Answer>,
}

/// The queue in front of the lookup task, which starts with the first
/// lookup (it needs the runtime) and ends when the queue is dropped.
pub struct SessionLookups {
    queue: OnceCell<mpsc::Sender<PendingLookup>>,
    recent: Mutex<Recent>,
}

impl Default for SessionLookups {
    fn default() -> Self {
        SessionLookups {
            queue: OnceCell::new(),
            recent: Mutex::new(Recent {
                confirmed: LruCache::new(RECENT_CAPACITY),
                forgotten_at: None,
            }),
        }
    }
}

/// What [`SessionLookups::lookup_recent`] remembers.
struct Recent {
    confirmed: LruCache<String, Confirmed>,
    /// When sessions were last forgotten: an answer asked for before then
    /// may predate the sign-out or ban, so it is not kept.
    forgotten_at: Option<Instant>,
}

/// A lookup's answer and when it was asked (the statement ran after that).
struct Confirmed {
    session: Option<SessionUser>,
    asked_at: Instant,
}

impl SessionLookups {
    /// The unexpired session with this token hash and its user, as
    /// [`Database::session_user`] answers it.
    pub async fn lookup(
        &self,
        db: &Database,
        lifetime: &SessionLifetime,
        token_hash: &str,
    ) -> Result<Option<SessionUser>, DomainError> {
        let queue = self
            .queue
            .get_or_init(|| async {
                let (sender, receiver) = mpsc::channel(QUEUE_CAPACITY);
                tokio::spawn(serve(db.clone(), *lifetime, receiver));
                sender
            })
            .await;
        let (answer, answered) = oneshot::channel();
        let queued = queue
            .try_send(PendingLookup {
                token_hash: token_hash.to_owned(),
                answer,
            })
            .is_ok();
        if queued && let Ok(answer) = answered.await {
            match answer {
                Ok(found) => return Ok(found),
                Err(Some(unavailable)) => return Err(unavailable),
                Err(None) => {}
            }
        }
        db.session_user(token_hash, lifetime).await
    }
}

impl SessionLookups {
    /// As [`SessionLookups::lookup`], but an answer asked for less than
    /// `max_age` ago is taken again without the database (a session past
    /// its expiry still counts as none). For routes where a sign-out or a
    /// ban elsewhere may take `max_age` to be seen.
    pub async fn lookup_recent(
        &self,
        db: &Database,
        lifetime: &SessionLifetime,
        token_hash: &str,
        max_age: Duration,
    ) -> Result<Option<SessionUser>, DomainError> {
        if max_age.is_zero() {
            return self.lookup(db, lifetime, token_hash).await;
        }
        if let Some(confirmed) = self.recent().confirmed.get(token_hash)
            && confirmed.asked_at.elapsed() < max_age
        {
            let now = plaza_domain::time::now_millis();
            return Ok(confirmed
                .session
                .clone()
                .filter(|session| session.expires_at > now));
        }
        let asked_at = Instant::now();
        let session = self.lookup(db, lifetime, token_hash).await?;
        let mut recent = self.recent();
        if recent.forgotten_at.is_none_or(|at| at < asked_at) {
            recent.confirmed.insert(
                token_hash.to_owned(),
                Confirmed {
                    session: session.clone(),
                    asked_at,
                },
            );
        }
        Ok(session)
    }

    /// Drops what [`SessionLookups::lookup_recent`] remembers of this
    /// session (it was signed out here).
    pub fn forget(&self, token_hash: &str) {
        let mut recent = self.recent();
        recent.confirmed.remove(token_hash);
        recent.forgotten_at = Some(Instant::now());
    }

    /// Drops what [`SessionLookups::lookup_recent`] remembers of every
    /// session of `user_id`, whose sessions a ban, a deactivation or a
    /// deletion on this instance just ended: analytics collection stops at
    /// their next event, not a window later. (Other instances still take
    /// up to the window: docs/api.md, "Analytics".)
    pub fn forget_user(&self, user_id: i64) {
        let mut recent = self.recent();
        let held: Vec<String> = recent
            .confirmed
            .iter()
            .filter(|(_, confirmed)| {
                confirmed
                    .session
                    .as_ref()
                    .is_some_and(|session| session.user.id() == user_id)
            })
            .map(|(token_hash, _)| token_hash.clone())
            .collect();
        for token_hash in held {
            recent.confirmed.remove(&token_hash);
        }
        recent.forgotten_at = Some(Instant::now());
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.recent.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn serve(db: Database, lifetime: SessionLifetime, mut queue: mpsc::Receiver<PendingLookup>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let mut batch = Vec::with_capacity(MAX_LOOKUP_BATCH);
        if queue.recv_many(&mut batch, MAX_LOOKUP_BATCH).await == 0 {
            return;
        }
        let db = db.clone();
        tokio::spawn(async move {
            // A request that stopped waiting needs no answer.
            batch.retain(|pending: &PendingLookup| !pending.answer.is_closed());
            if batch.is_empty() {
                return;
            }
            let token_hashes: Vec<String> = batch
                .iter()
                .map(|pending| pending.token_hash.clone())
                .collect();
            match db.session_users(&token_hashes, &lifetime).await {
                Ok(found) => {
                    for (pending, session) in batch.into_iter().zip(found) {
                        let _ = pending.answer.send(Ok(session));
                    }
                }
                Err(error) => {
                    let unavailable = match error {
                        DomainError::Unavailable(reason) => Some(reason),
                        _ => None,
                    };
                    for pending in batch {
                        let answer = unavailable.clone().map(DomainError::Unavailable);
                        let _ = pending.answer.send(Err(answer));
                    }
                }
            }
            drop(slot);
        });
    }
}
