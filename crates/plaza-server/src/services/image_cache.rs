//! Generated images (avatars and share cards) kept in memory by their
//! normalised parameters, and the HTTP validators that go with them.
//!
//! Each image is named by an [`ImageKey`]: a SHA-256 digest of the
//! renderers' versions, Plaza's version and the parameters as the renderer
//! reads them, so the key is also the image's strong `ETag` and an upgrade
//! that may change the pixels changes every tag. The cache holds at most
//! `image_cache_bytes` (bodies plus a fixed bookkeeping share per entry);
//! the least used entries go first. Requests for an image that is being
//! rendered wait for that rendering instead of starting their own, so a
//! crawler storm on one share link renders it once; the wait is bounded.

use std::future::Future;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, header};
use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, OptionsBuilder, Weighter};
use sha2::{Digest, Sha256};

/// What one entry costs besides its body: the key, the body's handle and
/// the cache's own slot and table entry.
const ENTRY_OVERHEAD_BYTES: u64 = 128;

/// The typical size of an entry (a share card PNG is 60 to 150 KiB, an
/// avatar 5 to 10 KiB), from which the cache sizes its tables.
const TYPICAL_ENTRY_BYTES: u64 = 32 * 1024;

/// Most shards the cache is split into; each holds an equal share of the
/// bytes, so fewer shards let a large card fit a small cache.
const MAX_SHARDS: usize = 8;

/// What every image's key starts with: whatever changes the bytes of the
/// same parameters (a renderer's drawing, or any upgrade of Plaza, which
/// may bring another rasteriser).
const RENDERERS: [&str; 3] = [
    env!("CARGO_PKG_VERSION"),
    plaza_avatar::RENDERER_VERSION,
    plaza_og_image::RENDERER_VERSION,
];

/// The `Cache-Control` of a PNG share card named by its URL: it never
/// changes, so browsers and shared caches may keep it for a year without
/// asking. (SPEC.md states no header for it; avatars and SVG cards are
/// not to be cached.)
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// One generated image: a digest of the renderers and its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ImageKey([u8; 32]);

impl ImageKey {
    /// The key of the image `kind` (`avatar`, `og-png`, …) drawn from
    /// `parameters`, each already normalised the way the renderer reads it.
    /// Every part is prefixed by its length, so no two lists of parameters
    /// give the same input.
    pub fn new(kind: &str, parameters: &[&str]) -> Self {
        let mut hasher = Sha256::new();
        for part in RENDERERS.iter().chain([&kind]).chain(parameters) {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        ImageKey(hasher.finalize().into())
    }

    /// The strong `ETag` of the image: the first 128 bits of the key.
    pub fn etag(&self) -> HeaderValue {
        let mut tag = String::with_capacity(34);
        tag.push('"');
        for byte in &self.0[..16] {
            tag.push(char::from(HEX[usize::from(byte >> 4)]));
            tag.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        tag.push('"');
        HeaderValue::from_str(&tag).expect("hexadecimal digits are a valid header value")
    }

    /// Whether the request's `If-None-Match` names this image (or any
    /// image, `*`): the client holds these bytes already. Tags compare
    /// weakly, as RFC 9110 asks of `If-None-Match`.
    pub fn is_held_by(&self, headers: &HeaderMap) -> bool {
        let etag = self.etag();
        let etag = etag.to_str().unwrap_or_default();
        headers
            .get_all(header::IF_NONE_MATCH)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Which route an image comes from, for the metrics' `image` label.
#[derive(Clone, Copy, Debug)]
pub enum ImageKind {
    /// `GET /api/avatar-image`.
    Avatar,
    /// `GET /api/og-image`.
    ShareCard,
}

impl ImageKind {
    fn label(self) -> &'static str {
        match self {
            ImageKind::Avatar => "avatar",
            ImageKind::ShareCard => "og",
        }
    }
}

/// Why [`ImageCache::get_or_render`] has no image.
#[derive(Debug)]
pub enum CacheError<E> {
    /// Another request was rendering the same image and did not finish
    /// within the wait.
    Busy,
    /// The rendering failed (nothing is kept; the next request tries again).
    Render(E),
}

/// Weighs an entry by its body and its bookkeeping.
#[derive(Clone)]
struct BodyBytes;

impl Weighter<ImageKey, Bytes> for BodyBytes {
    fn weight(&self, _key: &ImageKey, body: &Bytes) -> u64 {
        body.len() as u64 + ENTRY_OVERHEAD_BYTES
    }
}

/// Counts the entries that made room for others (or were too large to keep).
#[derive(Clone)]
struct CountEvictions(metrics::Counter);

impl Lifecycle<ImageKey, Bytes> for CountEvictions {
    type RequestState = ();

    fn on_evict(&self, _state: &mut (), _key: ImageKey, _body: Bytes) {
        self.0.increment(1);
    }
}

type Entries = Cache<ImageKey, Bytes, BodyBytes, DefaultHashBuilder, CountEvictions>;

/// The rendered images of this process (the app state holds one).
pub struct ImageCache {
    /// `None` when `image_cache_bytes` is 0.
    entries: Option<Entries>,
    /// How long a request waits for another's rendering of its image.
    wait: Duration,
    /// Hits and misses by [`ImageKind`], in its order.
    hits: [metrics::Counter; 2],
    misses: [metrics::Counter; 2],
}

impl ImageCache {
    /// A cache of at most `bytes`; requests wait at most `wait` for a
    /// rendering another request started.
    pub fn new(bytes: u64, wait: Duration) -> Self {
        let counters = |name: &'static str| {
            [ImageKind::Avatar, ImageKind::ShareCard]
                .map(|kind| metrics::counter!(name, "image" => kind.label()))
        };
        let entries = (bytes > 0).then(|| {
            let options = OptionsBuilder::new()
                .weight_capacity(bytes)
                .estimated_items_capacity(
                    usize::try_from((bytes / TYPICAL_ENTRY_BYTES).max(1)).unwrap_or(usize::MAX),
                )
                .shards(MAX_SHARDS)
                .build()
                .expect("a weight capacity and an item estimate are set");
            Cache::with_options(
                options,
                BodyBytes,
                DefaultHashBuilder::default(),
                CountEvictions(metrics::counter!("plaza_image_cache_evictions_total")),
            )
        });
        ImageCache {
            entries,
            wait,
            hits: counters("plaza_image_cache_hits_total"),
            misses: counters("plaza_image_cache_misses_total"),
        }
    }

    /// The image of `key`: kept, or rendered by `render` and kept. While one
    /// request renders an image, others for the same key wait for it (up to
    /// the wait) rather than render it again.
    pub async fn get_or_render<E, F, Fut>(
        &self,
        key: ImageKey,
        kind: ImageKind,
        render: F,
    ) -> Result<Bytes, CacheError<E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Bytes, E>>,
    {
        let index = kind as usize;
        let Some(entries) = &self.entries else {
            self.misses[index].increment(1);
            return render().await.map_err(CacheError::Render);
        };
        let guard =
            match tokio::time::timeout(self.wait, entries.get_value_or_guard_async(&key)).await {
                Err(_) => return Err(CacheError::Busy),
                Ok(Ok(body)) => {
                    self.hits[index].increment(1);
                    return Ok(body);
                }
                Ok(Err(guard)) => guard,
            };
        self.misses[index].increment(1);
        // On failure the guard is dropped unfilled: one waiting request
        // takes it over and renders, the others go on waiting.
        let body = render().await.map_err(CacheError::Render)?;
        let _ = guard.insert(body.clone());
        Ok(body)
    }

    /// Drops every image; answers how many there were.
    pub fn clear(&self) -> usize {
        let Some(entries) = &self.entries else {
            return 0;
        };
        let held = entries.len();
        entries.clear();
        held
    }

    /// Sets the gauges of what the cache holds, before a scrape.
    pub fn record_figures(&self) {
        let (bytes, count, capacity) = self.entries.as_ref().map_or((0, 0, 0), |entries| {
            (entries.weight(), entries.len(), entries.capacity())
        });
        metrics::gauge!("plaza_image_cache_bytes").set(bytes as f64);
        metrics::gauge!("plaza_image_cache_entries").set(count as f64);
        metrics::gauge!("plaza_image_cache_capacity_bytes").set(capacity as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_by_kind_and_by_every_parameter() {
        let card = ImageKey::new("og-png", &["seed", "quote", "author"]);
        assert_eq!(card, ImageKey::new("og-png", &["seed", "quote", "author"]));
        for other in [
            ImageKey::new("og-svg", &["seed", "quote", "author"]),
            ImageKey::new("og-png", &["seed", "quote", "autho"]),
            ImageKey::new("og-png", &["seedq", "uote", "author"]),
            ImageKey::new("og-png", &["seed", "quoteauthor", ""]),
        ] {
            assert_ne!(card, other);
            assert_ne!(card.etag(), other.etag());
        }
    }

    #[test]
    fn if_none_match_names_the_image_in_a_list_weakly_or_with_a_star() {
        let key = ImageKey::new("avatar", &["Alice", "200"]);
        let etag = key.etag().to_str().unwrap().to_owned();
        assert!(etag.len() == 34 && etag.starts_with('"') && etag.ends_with('"'));
        let held = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::IF_NONE_MATCH, HeaderValue::from_str(value).unwrap());
            key.is_held_by(&headers)
        };
        assert!(held(&etag));
        assert!(held(&format!("W/{etag}")));
        assert!(held(&format!("\"other\", {etag}")));
        assert!(held("*"));
        assert!(!held("\"other\""));
        assert!(!held(etag.trim_matches('"')));
        assert!(!key.is_held_by(&HeaderMap::new()));
    }

    #[tokio::test]
    async fn the_cache_keeps_its_bytes_and_renders_a_key_once() {
        let cache = ImageCache::new(64 * 1024, Duration::from_secs(1));
        let body = Bytes::from(vec![7u8; 10 * 1024]);
        let render = |name: &str| {
            let key = ImageKey::new("avatar", &[name]);
            let body = body.clone();
            let cache = &cache;
            async move {
                cache
                    .get_or_render(key, ImageKind::Avatar, || async { Ok::<_, ()>(body) })
                    .await
            }
        };
        assert!(render("first").await.is_ok());
        let again = cache
            .get_or_render(
                ImageKey::new("avatar", &["first"]),
                ImageKind::Avatar,
                || async { Err::<Bytes, _>("rendered again") },
            )
            .await;
        assert!(again.is_ok(), "a kept image is not rendered again");
        for round in 0..50u32 {
            assert!(render(&round.to_string()).await.is_ok());
        }
        let entries = cache.entries.as_ref().unwrap();
        assert!(entries.weight() <= 64 * 1024, "{}", entries.weight());
        assert!(entries.len() >= 2, "{}", entries.len());
        let held = entries.len();
        assert_eq!(cache.clear(), held);
        assert_eq!(entries.len(), 0);
    }
}
