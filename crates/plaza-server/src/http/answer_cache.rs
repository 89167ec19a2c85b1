//! Rendered answers of the public post list and post search, kept for
//! anonymous readers: the front page and popular searches are asked for
//! over and over with the same parameters.
//!
//! An answer is reused only while the content generation (bumped by
//! triggers on every write to posts, by any instance or process) is the one
//! it was rendered at. The instance knows the generation without a read
//! while its notifications of writes are connected, for at most a second
//! after its last confirmation
//! ([`crate::services::content_generation`]), so a cached answer is at
//! most a second older than a fresh one; without them it reads the
//! generation for each request, and a cached answer is never older. Signed-in
//! callers see their own drafts and are never served from here; a request
//! with `Cache-Control: no-cache` is rendered afresh.
//!
//! Every answer carries a strong `ETag`, a hash of its bytes kept with a
//! cached answer, so `If-None-Match` with the current tag is answered 304
//! from memory, without rendering.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use base64::Engine;
use headers::{ETag, HeaderMapExt, IfNoneMatch};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::http::error::AppError;
use crate::state::AppState;

/// Most answers kept.
const MAX_ENTRIES: usize = 1024;
/// Largest answer kept (a page of long posts is rendered every time).
const MAX_ANSWER_BYTES: usize = 256 * 1024;
/// Most bytes kept in all.
const MAX_TOTAL_BYTES: usize = 32 * 1024 * 1024;

/// Answers by request key, each with the generation it was rendered at.
#[derive(Default)]
pub struct AnswerCache {
    entries: Mutex<Entries>,
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
    pub fn json<T: Serialize>(value: &T) -> Result<Self, AppError> {
        Ok(Tagged::new(Bytes::from(
            serde_json::to_vec(value).map_err(AppError::internal)?,
        )))
    }

    fn len(&self) -> usize {
        self.body.len()
    }
}

#[derive(Default)]
struct Entries {
    by_key: HashMap<String, (i64, Tagged)>,
    bytes: usize,
    /// Keys whose answer one request is rendering anew (see [`answer_in_slot`]).
    refreshing: HashSet<String>,
}

/// Every answer cache of the process, in [`AppState`]: the routes answer
/// from them and `cache_clear` maintenance empties them all.
#[derive(Default)]
pub struct AnswerCaches {
    /// `GET /api/posts`.
    pub posts: AnswerCache,
    /// `GET /api/search` (posts) and `/api/search/posts`.
    pub search: AnswerCache,
    /// `GET /api/emojis`, per platform (see `controllers::emojis`).
    pub emojis: AnswerCache,
}

impl AnswerCaches {
    /// Empties every cache; answers each one's name and the entries it held.
    pub fn clear_all(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("posts", self.posts.clear()),
            ("search", self.search.clear()),
            ("emojis", self.emojis.clear()),
        ]
    }
}

impl AnswerCache {
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
    fn get_any(&self, key: &str) -> Option<(i64, Tagged)> {
        let entries = self.entries.lock().ok()?;
        entries.by_key.get(key).cloned()
    }

    /// Marks `key` as being rendered; `None` when another request is on it.
    fn claim(&self, key: &str) -> Option<RefreshClaim<'_>> {
        let mut entries = self.entries.lock().ok()?;
        entries
            .refreshing
            .insert(key.to_owned())
            .then(|| RefreshClaim {
                cache: self,
                key: key.to_owned(),
            })
    }

    fn get(&self, key: &str, generation: i64) -> Option<Tagged> {
        let entries = self.entries.lock().ok()?;
        entries
            .by_key
            .get(key)
            .filter(|(rendered_at, _)| *rendered_at == generation)
            .map(|(_, answer)| answer.clone())
    }

    /// Keeps an answer; when full, answers of older generations go first,
    /// then everything.
    fn put(&self, key: String, generation: i64, answer: Tagged) {
        if answer.len() > MAX_ANSWER_BYTES {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.by_key.len() >= MAX_ENTRIES || entries.bytes + answer.len() > MAX_TOTAL_BYTES {
            entries
                .by_key
                .retain(|_, (rendered_at, _)| *rendered_at == generation);
            if entries.by_key.len() >= MAX_ENTRIES {
                entries.by_key.clear();
            }
            entries.bytes = entries.by_key.values().map(|(_, kept)| kept.len()).sum();
            if entries.bytes + answer.len() > MAX_TOTAL_BYTES {
                entries.by_key.clear();
                entries.bytes = 0;
            }
        }
        entries.bytes += answer.len();
        if let Some((_, replaced)) = entries.by_key.insert(key, (generation, answer)) {
            entries.bytes -= replaced.len();
        }
    }
}

/// The cache key of a request, or `None` when it must be rendered for the
/// caller: signed in, or asking with `Cache-Control: no-cache`.
pub fn key(
    anonymous: bool,
    headers: &HeaderMap,
    route: &str,
    query: Option<&str>,
) -> Option<String> {
    let no_cache = headers
        .get_all(header::CACHE_CONTROL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.to_ascii_lowercase().contains("no-cache"));
    (anonymous && !no_cache).then(|| format!("{route}?{}", query.unwrap_or_default()))
}

/// Answers from `cache` when `key` is cached at the current content
/// generation; otherwise renders with `render` (and keeps the answer when
/// there is a key). At most a second older than a fresh answer (see the
/// module's documentation). `If-None-Match` naming the answer's tag is
/// answered 304; for a cached answer without rendering.
pub async fn answer<T: Serialize>(
    state: &AppState,
    cache: &AnswerCache,
    key: Option<String>,
    request: (&HeaderMap, Audience),
    render: impl Future<Output = Result<T, AppError>>,
) -> Result<Response, AppError> {
    let (headers, audience) = request;
    let generation = match &key {
        Some(key) => {
            let generation = state.content_generation.current().await?;
            if let Some(answer) = cache.get(key, generation) {
                return Ok(tagged_response(&answer, headers, audience));
            }
            Some(generation)
        }
        None => None,
    };
    let answer = Tagged::json(&render.await?)?;
    let response = tagged_response(&answer, headers, audience);
    if let (Some(key), Some(generation)) = (key, generation) {
        cache.put(key, generation, answer);
    }
    Ok(response)
}

/// Who an answer is for, as its `Cache-Control` tells caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The same for every anonymous reader: a shared cache may keep it.
    Anyone,
    /// Rendered for this signed-in caller: only the caller's own cache may
    /// keep it.
    Caller,
    /// One user's private data (an email): no cache keeps it
    /// ([`crate::http::personal`]).
    Personal,
}

impl Audience {
    /// Anyone for an anonymous caller, else the caller.
    pub fn of(anonymous: bool) -> Self {
        if anonymous {
            Audience::Anyone
        } else {
            Audience::Caller
        }
    }
}

/// `value` as JSON with its strong `ETag`, or 304 when `If-None-Match`
/// names that tag; for answers rendered every time.
pub fn tagged_json<T: Serialize>(
    value: &T,
    headers: &HeaderMap,
    audience: Audience,
) -> Result<Response, AppError> {
    Ok(tagged_response(&Tagged::json(value)?, headers, audience))
}

/// The answer, or 304 when `If-None-Match` names its tag (compared weakly,
/// as RFC 9110 says). Either way with the tag, `Cache-Control: no-cache`
/// (a cache must ask again before reusing it, and may with the tag) and
/// `Vary` on the credentials that change what the route answers.
fn tagged_response(answer: &Tagged, request: &HeaderMap, audience: Audience) -> Response {
    let unchanged = request
        .typed_get::<IfNoneMatch>()
        .is_some_and(|if_none_match| !if_none_match.precondition_passes(&answer.etag));
    let mut response = if unchanged {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        *response.headers_mut() = HeaderMap::with_capacity(10);
        response
    } else {
        json_response(answer.body.clone())
    };
    let headers = response.headers_mut();
    headers.typed_insert(answer.etag.clone());
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(match audience {
            Audience::Anyone => "no-cache",
            Audience::Caller => "private, no-cache",
            Audience::Personal => crate::http::personal::PRIVATE_NO_STORE,
        }),
    );
    headers.insert(
        header::VARY,
        HeaderValue::from_static("cookie, authorization"),
    );
    response
}

/// A request rendering a key's answer anew; dropped (rendered, failed or
/// cancelled), the key is free for the next one.
struct RefreshClaim<'a> {
    cache: &'a AnswerCache,
    key: String,
}

impl Drop for RefreshClaim<'_> {
    fn drop(&mut self) {
        if let Ok(mut entries) = self.cache.entries.lock() {
            entries.refreshing.remove(&self.key);
        }
    }
}

/// Answers kept for a time slot (`stamp`, such as the current 2 s): an
/// answer of the current slot is served; once the slot has passed, one
/// request renders the new answer while the others that arrive meanwhile
/// get the previous one, so a busy key is rendered once per slot instead
/// of by every request waiting at the slot's turn. Without a key, renders.
pub async fn answer_in_slot<T: Serialize>(
    cache: &AnswerCache,
    keyed: Option<(String, i64)>,
    render: impl Future<Output = Result<T, AppError>>,
) -> Result<Response, AppError> {
    let mut claim = None;
    if let Some((key, stamp)) = &keyed
        && let Some((rendered_in, answer)) = cache.get_any(key)
    {
        if rendered_in == *stamp {
            return Ok(json_response(answer.body));
        }
        claim = cache.claim(key);
        if claim.is_none() {
            return Ok(json_response(answer.body));
        }
    }
    let answer = Tagged::json(&render.await?)?;
    let body = answer.body.clone();
    if let Some((key, stamp)) = keyed {
        cache.put(key, stamp, answer);
    }
    drop(claim);
    Ok(json_response(body))
}

/// The answer's header map starts with room for the headers the layers add
/// on the way out (rate limit, request id, CORS, `nosniff`): one that grows
/// on the way is allocated and filled twice, a tenth of what the in-process
/// rate limiter cost a cached answer.
fn json_response(body: Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    let headers = response.headers_mut();
    *headers = HeaderMap::with_capacity(12);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
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
        let first = answer_in_slot(&cache, Some(("k".into(), 1)), async { Ok(1) }).await;
        assert_eq!(body_of(first.unwrap()).await, "1");
        let claim = cache.claim("k").expect("free");
        let rendered = std::sync::atomic::AtomicBool::new(false);
        let stale = answer_in_slot(&cache, Some(("k".into(), 2)), async {
            rendered.store(true, std::sync::atomic::Ordering::Relaxed);
            Ok(9)
        })
        .await;
        assert_eq!(body_of(stale.unwrap()).await, "1", "the previous answer");
        assert!(
            !rendered.into_inner(),
            "not rendered while another request renders"
        );
        drop(claim);
        let fresh = answer_in_slot(&cache, Some(("k".into(), 2)), async { Ok(2) }).await;
        assert_eq!(body_of(fresh.unwrap()).await, "2");
        let kept = answer_in_slot(&cache, Some(("k".into(), 2)), async { Ok(3) }).await;
        assert_eq!(body_of(kept.unwrap()).await, "2", "the slot's answer");
        assert!(cache.claim("k").is_some(), "released after rendering");
    }

    async fn body_of(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
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
        assert_eq!(
            caches.clear_all(),
            vec![("posts", 2), ("search", 1), ("emojis", 1)]
        );
        assert_eq!(caches.posts.get("posts?", 1), None);
        assert_eq!(
            caches.clear_all(),
            vec![("posts", 0), ("search", 0), ("emojis", 0)]
        );
    }

    #[test]
    fn a_tag_names_the_bytes_and_if_none_match_with_it_answers_304() {
        let answer = Tagged::new(Bytes::from_static(b"[1]"));
        assert_eq!(answer, Tagged::new(Bytes::from_static(b"[1]")));
        assert_ne!(answer.etag, Tagged::new(Bytes::from_static(b"[2]")).etag);
        let mut tagged = HeaderMap::new();
        tagged.typed_insert(answer.etag.clone());
        let tag = tagged[header::ETAG].to_str().unwrap().to_owned();
        let status = |if_none_match: Option<&str>| {
            let mut request = HeaderMap::new();
            if let Some(value) = if_none_match {
                request.insert(header::IF_NONE_MATCH, value.parse().unwrap());
            }
            let response = tagged_response(&answer, &request, Audience::Anyone);
            assert_eq!(response.headers()[header::ETAG].to_str().unwrap(), tag);
            response.status().as_u16()
        };
        assert_eq!(status(None), 200);
        assert_eq!(status(Some(&tag)), 304);
        assert_eq!(status(Some(&format!("\"other\", W/{tag}"))), 304);
        assert_eq!(status(Some("*")), 304);
        assert_eq!(status(Some("\"other\"")), 200);
    }

    #[test]
    fn signed_in_and_no_cache_requests_have_no_key() {
        let mut headers = HeaderMap::new();
        assert_eq!(
            key(true, &headers, "posts", Some("limit=20")).as_deref(),
            Some("posts?limit=20")
        );
        assert_eq!(key(false, &headers, "posts", None), None);
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("No-Cache"));
        assert_eq!(key(true, &headers, "posts", None), None);
    }
}
