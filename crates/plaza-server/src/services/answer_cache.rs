//! Rendered answers kept for anonymous readers: the public post list,
//! post search and thread pages, asked for over and over with the same
//! parameters, and the emoji list per platform. Beside them, the public
//! part of thread pages as data, over which each signed-in member's own
//! part is laid ([`PublicThreadPage`]).
//!
//! An answer kept by content generation is reused only while the content
//! generation (bumped by triggers on every write to posts, by any instance
//! or process) is the one it was rendered at. The instance knows the
//! generation without a read while its notifications of writes are
//! connected, for at most a second after its last confirmation
//! ([`crate::services::content_generation`]), so a cached answer is at
//! most a second older than a fresh one; without them it reads the
//! generation for each request, and a cached answer is never older.
//!
//! Every answer keeps its strong `ETag`, a hash of its bytes, so a request
//! naming the current tag is answered from memory, without rendering.
//!
//! A key missing at the current generation is rendered by one request at a
//! time: the requests that arrive meanwhile wait for its answer instead of
//! each rendering the same page (after every write to a hot thread, say).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use base64::Engine;
use headers::ETag;
use plaza_domain::DomainError;
use plaza_domain::replies::{ReplyExtras, ThreadPage};
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use crate::services::content_generation::ContentGeneration;

/// Most answers kept.
const MAX_ENTRIES: usize = 1024;
/// Largest answer kept (a page of long posts is rendered every time).
const MAX_ANSWER_BYTES: usize = 256 * 1024;
/// Most bytes kept in all.
const MAX_TOTAL_BYTES: usize = 32 * 1024 * 1024;

/// What a cache keeps: cheap to clone, with the bytes it holds.
pub trait Kept: Clone {
    /// The bytes kept, for the cache's bounds.
    fn bytes(&self) -> usize;
}

/// Answers by request key, each with the generation it was rendered at.
pub struct AnswerCache<V = Tagged> {
    entries: Mutex<Entries<V>>,
}

impl<V> Default for AnswerCache<V> {
    fn default() -> Self {
        AnswerCache {
            entries: Mutex::new(Entries {
                by_key: HashMap::new(),
                bytes: 0,
                refreshing: HashSet::new(),
                flights: HashMap::new(),
            }),
        }
    }
}

/// A rendered answer and its tag.
#[derive(Clone, Debug, PartialEq)]
pub struct Tagged {
    body: Bytes,
    etag: ETag,
}

impl Tagged {
    /// `body` tagged with the hash of its bytes.
    pub fn new(body: Bytes) -> Self {
        let digest = Sha256::digest(&body);
        let tag = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..16]);
        let etag = format!("\"{tag}\"")
            .parse()
            .expect("a quoted base64url string is an entity tag");
        Tagged { body, etag }
    }

    /// The value as JSON, tagged.
    pub fn json<T: Serialize>(value: &T) -> Result<Self, serde_json::Error> {
        Ok(Tagged::new(Bytes::from(serde_json::to_vec(value)?)))
    }

    /// The answer's bytes.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The tag of those bytes.
    pub fn etag(&self) -> &ETag {
        &self.etag
    }
}

impl Kept for Tagged {
    fn bytes(&self) -> usize {
        self.body.len()
    }
}

/// What anyone sees of a thread page (read as an anonymous reader): the
/// page and its replies' extras. A signed-in member's page is this with
/// their own reactions and sight laid over it, unless they hold a reply of
/// the thread only they see.
#[derive(Debug)]
pub struct PublicThreadPage {
    pub page: ThreadPage,
    /// The extras of each of `page.replies`, in the same order.
    pub extras: Vec<ReplyExtras>,
}

impl Kept for Arc<PublicThreadPage> {
    fn bytes(&self) -> usize {
        self.page
            .replies
            .iter()
            .map(|reply| reply.content.len() + reply.path.len() + 256)
            .sum()
    }
}

struct Entries<V> {
    by_key: HashMap<String, (i64, V)>,
    bytes: usize,
    /// Keys whose answer one request is rendering anew (see [`AnswerCache::in_slot`]).
    refreshing: HashSet<String>,
    /// Keys being rendered for a generation, and the cell their answer
    /// lands in (see [`AnswerCache::at_generation`]).
    flights: HashMap<String, (i64, Arc<OnceCell<V>>)>,
}

/// Every answer cache of the process, in the app's state: the routes
/// answer from them and `cache_clear` maintenance empties them all.
#[derive(Default)]
pub struct AnswerCaches {
    /// `GET /api/posts`.
    pub posts: AnswerCache,
    /// `GET /api/search` (posts) and `/api/search/posts`.
    pub search: AnswerCache,
    /// `GET /api/emojis`, per platform (see `controllers::emojis`).
    pub emojis: AnswerCache,
    /// `GET /api/posts/{id}/replies`, per post.
    pub replies: AnswerCache,
    /// The public part of the same pages, for signed-in members.
    pub thread_pages: AnswerCache<Arc<PublicThreadPage>>,
}

impl AnswerCaches {
    /// Empties every cache; answers each one's name and the entries it held.
    pub fn clear_all(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("posts", self.posts.clear()),
            ("search", self.search.clear()),
            ("emojis", self.emojis.clear()),
            ("replies", self.replies.clear()),
            ("thread_pages", self.thread_pages.clear()),
        ]
    }
}

impl<V: Kept> AnswerCache<V> {
    /// Drops every answer (the next request renders afresh); answers how
    /// many there were.
    pub fn clear(&self) -> usize {
        let Ok(mut entries) = self.entries.lock() else {
            return 0;
        };
        let cleared = entries.by_key.len();
        entries.by_key.clear();
        entries.bytes = 0;
        cleared
    }

    /// The answer kept for `key` whatever its stamp, with that stamp.
    fn get_any(&self, key: &str) -> Option<(i64, V)> {
        let entries = self.entries.lock().ok()?;
        entries.by_key.get(key).cloned()
    }

    /// Marks `key` as being rendered; `None` when another request is on it.
    fn claim(&self, key: &str) -> Option<RefreshClaim<'_, V>> {
        let mut entries = self.entries.lock().ok()?;
        entries
            .refreshing
            .insert(key.to_owned())
            .then(|| RefreshClaim {
                cache: self,
                key: key.to_owned(),
            })
    }

    fn get(&self, key: &str, generation: i64) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        entries
            .by_key
            .get(key)
            .filter(|(rendered_at, _)| *rendered_at == generation)
            .map(|(_, answer)| answer.clone())
    }

    /// Keeps an answer; when full, answers of older generations go first,
    /// then everything.
    fn put(&self, key: String, generation: i64, answer: V) {
        if answer.bytes() > MAX_ANSWER_BYTES {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.by_key.len() >= MAX_ENTRIES || entries.bytes + answer.bytes() > MAX_TOTAL_BYTES {
            entries
                .by_key
                .retain(|_, (rendered_at, _)| *rendered_at == generation);
            if entries.by_key.len() >= MAX_ENTRIES {
                entries.by_key.clear();
            }
            entries.bytes = entries.by_key.values().map(|(_, kept)| kept.bytes()).sum();
            if entries.bytes + answer.bytes() > MAX_TOTAL_BYTES {
                entries.by_key.clear();
                entries.bytes = 0;
            }
        }
        entries.bytes += answer.bytes();
        if let Some((_, replaced)) = entries.by_key.insert(key, (generation, answer)) {
            entries.bytes -= replaced.bytes();
        }
    }

    /// The answer kept for `key` at the current content generation (as
    /// `content` knows it); otherwise the one `render` makes, kept when
    /// there is a key. At most a second older than a fresh answer (see the
    /// module's documentation). While one request renders a key at a
    /// generation, the others asking for it wait for that answer; should
    /// that request fail or go away, the next of them renders.
    pub async fn at_generation<E: From<DomainError>>(
        &self,
        content: &ContentGeneration,
        key: Option<String>,
        render: impl Future<Output = Result<V, E>>,
    ) -> Result<V, E> {
        let Some(key) = key else {
            return render.await;
        };
        let generation = content.current().await?;
        self.kept_or_rendered(key, generation, render).await
    }

    /// The answer kept for `key` at `generation`, or the one rendered for
    /// it by the first request of a flight.
    async fn kept_or_rendered<E>(
        &self,
        key: String,
        generation: i64,
        render: impl Future<Output = Result<V, E>>,
    ) -> Result<V, E> {
        if let Some(answer) = self.get(&key, generation) {
            return Ok(answer);
        }
        let Some(flight) = self.board(&key, generation) else {
            return render.await;
        };
        let answer = flight
            .cell
            .get_or_try_init(|| async {
                let answer = render.await?;
                self.put(key.clone(), generation, answer.clone());
                Ok::<V, E>(answer)
            })
            .await?;
        Ok(answer.clone())
    }

    /// The flight rendering `key` at `generation`, joined or begun.
    fn board(&self, key: &str, generation: i64) -> Option<Flight<'_, V>> {
        let mut entries = self.entries.lock().ok()?;
        let cell = match entries.flights.get(key) {
            Some((flying_at, cell)) if *flying_at == generation => cell.clone(),
            _ => {
                let cell = Arc::new(OnceCell::new());
                entries
                    .flights
                    .insert(key.to_owned(), (generation, cell.clone()));
                cell
            }
        };
        Some(Flight {
            cache: self,
            key: key.to_owned(),
            cell,
        })
    }
}

impl AnswerCache {
    /// The bytes of the answer kept for a time slot (`stamp`, such as the
    /// current 2 s): an answer of the current slot is served; once the slot
    /// has passed, one request renders the new answer while the others that
    /// arrive meanwhile get the previous one, so a busy key is rendered once
    /// per slot instead of by every request waiting at the slot's turn.
    /// Without a key, renders.
    pub async fn in_slot<E>(
        &self,
        keyed: Option<(String, i64)>,
        render: impl Future<Output = Result<Tagged, E>>,
    ) -> Result<Bytes, E> {
        let mut claim = None;
        if let Some((key, stamp)) = &keyed
            && let Some((rendered_in, answer)) = self.get_any(key)
        {
            if rendered_in == *stamp {
                return Ok(answer.body);
            }
            claim = self.claim(key);
            if claim.is_none() {
                return Ok(answer.body);
            }
        }
        let answer = render.await?;
        let body = answer.body.clone();
        if let Some((key, stamp)) = keyed {
            self.put(key, stamp, answer);
        }
        drop(claim);
        Ok(body)
    }
}

/// A request rendering a key's answer anew; dropped (rendered, failed or
/// cancelled), the key is free for the next one.
struct RefreshClaim<'a, V> {
    cache: &'a AnswerCache<V>,
    key: String,
}

/// A request on a flight; once every request that boarded it is done
/// (answered, failed or gone), the key's next miss begins a new one.
struct Flight<'a, V> {
    cache: &'a AnswerCache<V>,
    key: String,
    cell: Arc<OnceCell<V>>,
}

impl<V> Drop for Flight<'_, V> {
    fn drop(&mut self) {
        if let Ok(mut entries) = self.cache.entries.lock()
            && entries
                .flights
                .get(&self.key)
                .is_some_and(|(_, cell)| Arc::ptr_eq(cell, &self.cell))
            && Arc::strong_count(&self.cell) <= 2
        {
            entries.flights.remove(&self.key);
        }
    }
}

impl<V> Drop for RefreshClaim<'_, V> {
    fn drop(&mut self) {
        if let Ok(mut entries) = self.cache.entries.lock() {
            entries.refreshing.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_served_only_at_their_generation() {
        let cache = AnswerCache::default();
        cache.put("posts?".into(), 7, Tagged::new(Bytes::from_static(b"[1]")));
        assert_eq!(
            cache.get("posts?", 7),
            Some(Tagged::new(Bytes::from_static(b"[1]")))
        );
        assert_eq!(cache.get("posts?", 8), None);
        assert_eq!(cache.get("posts?limit=1", 7), None);
    }

    #[tokio::test]
    async fn a_passed_slot_is_rendered_by_one_request_while_others_get_the_last_answer() {
        let cache = AnswerCache::default();
        let rendering = |value: i32| async move { Tagged::json(&value) };
        let first = cache.in_slot(Some(("k".into(), 1)), rendering(1)).await;
        assert_eq!(first.unwrap(), "1");
        let claim = cache.claim("k").expect("free");
        let rendered = std::sync::atomic::AtomicBool::new(false);
        let stale = cache
            .in_slot(Some(("k".into(), 2)), async {
                rendered.store(true, std::sync::atomic::Ordering::Relaxed);
                Tagged::json(&9)
            })
            .await;
        assert_eq!(stale.unwrap(), "1", "the previous answer");
        assert!(
            !rendered.into_inner(),
            "not rendered while another request renders"
        );
        drop(claim);
        let fresh = cache.in_slot(Some(("k".into(), 2)), rendering(2)).await;
        assert_eq!(fresh.unwrap(), "2");
        let kept = cache.in_slot(Some(("k".into(), 2)), rendering(3)).await;
        assert_eq!(kept.unwrap(), "2", "the slot's answer");
        assert!(cache.claim("k").is_some(), "released after rendering");
    }

    #[tokio::test]
    async fn requests_missing_a_key_together_share_one_rendering() {
        let cache = AnswerCache::default();
        let renders = std::sync::atomic::AtomicUsize::new(0);
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let first = cache.kept_or_rendered("k".into(), 1, async {
            renders.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            released.await.ok();
            Tagged::json(&1)
        });
        let second = cache.kept_or_rendered("k".into(), 1, async {
            renders.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Tagged::json(&2)
        });
        let releasing = async {
            tokio::task::yield_now().await;
            release.send(()).ok();
        };
        let (first, second, ()) = tokio::join!(first, second, releasing);
        assert_eq!(first.unwrap().body(), "1");
        assert_eq!(second.unwrap().body(), "1", "the first request's answer");
        assert_eq!(renders.into_inner(), 1);
        assert_eq!(cache.get("k", 1), Some(Tagged::json(&1).unwrap()));
        assert!(cache.entries.lock().unwrap().flights.is_empty());
    }

    #[tokio::test]
    async fn when_the_rendering_request_fails_the_next_one_renders() {
        let cache = AnswerCache::default();
        let events = Mutex::new(Vec::new());
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let first = cache.kept_or_rendered("k".into(), 1, async {
            events.lock().unwrap().push("first renders");
            released.await.ok();
            events.lock().unwrap().push("first fails");
            Err::<Tagged, &str>("gone")
        });
        let second = cache.kept_or_rendered("k".into(), 1, async {
            events.lock().unwrap().push("second renders");
            Ok::<Tagged, &str>(Tagged::json(&2).unwrap())
        });
        let releasing = async {
            tokio::task::yield_now().await;
            release.send(()).ok();
        };
        let (first, second, ()) = tokio::join!(first, second, releasing);
        assert_eq!(first, Err("gone"));
        assert_eq!(second.unwrap().body(), "2");
        assert_eq!(
            events.into_inner().unwrap(),
            ["first renders", "first fails", "second renders"],
            "the second request waited for the first"
        );
        assert!(cache.entries.lock().unwrap().flights.is_empty());
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache = AnswerCache::default();
        for n in 0..(MAX_ENTRIES + 10) {
            cache.put(format!("k{n}"), 1, Tagged::new(Bytes::from_static(b"x")));
        }
        let entries = cache.entries.lock().unwrap();
        assert!(entries.by_key.len() <= MAX_ENTRIES);
        drop(entries);
        cache.put(
            "big".into(),
            1,
            Tagged::new(Bytes::from(vec![0; MAX_ANSWER_BYTES + 1])),
        );
        assert_eq!(cache.get("big", 1), None);
    }

    #[test]
    fn clearing_drops_every_answer_and_counts_them() {
        let caches = AnswerCaches::default();
        caches
            .posts
            .put("posts?".into(), 1, Tagged::new(Bytes::from_static(b"[1]")));
        caches.posts.put(
            "posts?limit=1".into(),
            1,
            Tagged::new(Bytes::from_static(b"[]")),
        );
        caches.search.put(
            "search?q=a".into(),
            1,
            Tagged::new(Bytes::from_static(b"{}")),
        );
        caches.emojis.put(
            "windows|10|".into(),
            1,
            Tagged::new(Bytes::from_static(b"{}")),
        );
        caches.replies.put(
            "replies/7?limit=50".into(),
            1,
            Tagged::new(Bytes::from_static(b"{}")),
        );
        assert_eq!(
            caches.clear_all(),
            vec![
                ("posts", 2),
                ("search", 1),
                ("emojis", 1),
                ("replies", 1),
                ("thread_pages", 0)
            ]
        );
        assert_eq!(caches.posts.get("posts?", 1), None);
        assert_eq!(
            caches.clear_all(),
            vec![
                ("posts", 0),
                ("search", 0),
                ("emojis", 0),
                ("replies", 0),
                ("thread_pages", 0)
            ]
        );
    }
}
