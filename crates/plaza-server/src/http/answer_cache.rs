//! Answers with their `ETag`, from the answer caches
//! ([`crate::services::answer_cache`]) or rendered afresh: the cache key of
//! a request, 304 when `If-None-Match` names the answer's tag, and the
//! `Cache-Control` that tells caches who the answer is for. Signed-in
//! callers see their own drafts and are never served a kept answer (a
//! member's thread page is laid over kept data, see
//! `controllers::replies`); a request with `Cache-Control: no-cache` is
//! rendered afresh.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use headers::{HeaderMapExt, IfNoneMatch};
use serde::Serialize;

use crate::http::error::AppError;
use crate::services::answer_cache::{AnswerCache, Tagged};
use crate::services::content_generation::ContentGeneration;

/// The cache key of a request, or `None` when it must be rendered for the
/// caller: signed in, or asking with `Cache-Control: no-cache`.
pub fn key(
    anonymous: bool,
    headers: &HeaderMap,
    route: &str,
    query: Option<&str>,
) -> Option<String> {
    shared_key(headers, route, query).filter(|_| anonymous)
}

/// The key of what anyone's request for `route?query` shares, whoever
/// asks; `None` with `Cache-Control: no-cache`, which asks for a fresh
/// rendering.
pub fn shared_key(headers: &HeaderMap, route: &str, query: Option<&str>) -> Option<String> {
    let no_cache = headers
        .get_all(header::CACHE_CONTROL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.to_ascii_lowercase().contains("no-cache"));
    (!no_cache).then(|| format!("{route}?{}", query.unwrap_or_default()))
}

/// Answers from `cache` when `key` is cached at the current content
/// generation (as `content` knows it); otherwise renders with `render`
/// (and keeps the answer when there is a key). `If-None-Match` naming the
/// answer's tag is answered 304; for a cached answer without rendering.
pub async fn answer<T: Serialize>(
    content: &ContentGeneration,
    cache: &AnswerCache,
    key: Option<String>,
    request: (&HeaderMap, Audience),
    render: impl Future<Output = Result<T, AppError>>,
) -> Result<Response, AppError> {
    let (headers, audience) = request;
    let answer = cache
        .at_generation(content, key, async { tagged(&render.await?) })
        .await?;
    Ok(tagged_response(&answer, headers, audience))
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
    Ok(tagged_response(&tagged(value)?, headers, audience))
}

/// The answer, or 304 when `If-None-Match` names its tag (compared weakly,
/// as RFC 9110 says). Either way with the tag, `Cache-Control: no-cache`
/// (a cache must ask again before reusing it, and may with the tag) and
/// `Vary` on the credentials that change what the route answers.
fn tagged_response(answer: &Tagged, request: &HeaderMap, audience: Audience) -> Response {
    let unchanged = request
        .typed_get::<IfNoneMatch>()
        .is_some_and(|if_none_match| !if_none_match.precondition_passes(answer.etag()));
    let mut response = if unchanged {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        *response.headers_mut() = HeaderMap::with_capacity(10);
        response
    } else {
        json_response(answer.body().clone())
    };
    let headers = response.headers_mut();
    headers.typed_insert(answer.etag().clone());
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

/// The answer kept in `cache` for a time slot, or rendered once the slot
/// has passed ([`AnswerCache::in_slot`]).
pub async fn answer_in_slot<T: Serialize>(
    cache: &AnswerCache,
    keyed: Option<(String, i64)>,
    render: impl Future<Output = Result<T, AppError>>,
) -> Result<Response, AppError> {
    let body = cache
        .in_slot(keyed, async { tagged(&render.await?) })
        .await?;
    Ok(json_response(body))
}

/// `value` as JSON with its tag; a value that does not serialize is the
/// server's fault.
fn tagged<T: Serialize>(value: &T) -> Result<Tagged, AppError> {
    Tagged::json(value).map_err(AppError::internal)
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
    fn a_tag_names_the_bytes_and_if_none_match_with_it_answers_304() {
        let answer = Tagged::new(Bytes::from_static(b"[1]"));
        assert_eq!(answer, Tagged::new(Bytes::from_static(b"[1]")));
        assert_ne!(
            answer.etag(),
            Tagged::new(Bytes::from_static(b"[2]")).etag()
        );
        let mut tagged = HeaderMap::new();
        tagged.typed_insert(answer.etag().clone());
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
