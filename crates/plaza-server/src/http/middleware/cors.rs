//! Cross-origin resource sharing: browsers may call the API with credentials
//! from the base URL's origin and the configured extra origins only. Public
//! endpoints such as `/api/version` set their own
//! `Access-Control-Allow-Origin: *`, which is left as it is.
//!
//! Part of [`RequestLayer`](super::RequestLayer) rather than `tower_http`'s
//! `CorsLayer`: axum clones a route's whole middleware stack for every
//! request, and cloning and dropping `CorsLayer` (its origin list and header
//! values) plus building its `Vary` header was 7% of the CPU time of a cheap
//! request. Here everything is built once.

use axum::http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_METHOD, ORIGIN, VARY,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::settings::ServerSettings;

/// Which origins may call with credentials, and the headers answered to them.
pub struct CorsPolicy {
    allowed_origins: Vec<HeaderValue>,
}

/// A preflight's answer depends on all three request headers, an actual
/// response's only on `Origin`.
static PREFLIGHT_VARY: HeaderValue = HeaderValue::from_static(
    "origin, access-control-request-method, access-control-request-headers",
);
static VARY_ORIGIN: HeaderValue = HeaderValue::from_static("origin");
static TRUE: HeaderValue = HeaderValue::from_static("true");
static EXPOSED: HeaderValue = HeaderValue::from_static(
    "x-request-id, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, retry-after",
);
static METHODS: HeaderValue = HeaderValue::from_static("GET,POST,PUT,PATCH,DELETE");
/// Besides the API's own, the headers next-auth's client
/// (`x-auth-return-redirect`) and cache-busting fetch helpers
/// (`cache-control`, `pragma`, `x-request-id`) send.
static HEADERS: HeaderValue = HeaderValue::from_static(
    "content-type,authorization,x-auth-return-redirect,cache-control,pragma,x-request-id",
);
/// How long a browser may keep a preflight answer, in seconds.
static MAX_AGE: HeaderValue = HeaderValue::from_static("600");

impl CorsPolicy {
    pub fn new(server: &ServerSettings) -> Self {
        let allowed_origins = std::iter::once(server.base_origin())
            .chain(server.cors_allowed_origins.iter().cloned())
            .filter_map(|origin| HeaderValue::from_str(origin.trim_end_matches('/')).ok())
            .collect();
        CorsPolicy { allowed_origins }
    }

    /// The request's `Origin` when it is one that may call with credentials.
    pub fn allowed_origin(&self, headers: &HeaderMap) -> Option<HeaderValue> {
        let origin = headers.get(ORIGIN)?;
        self.allowed_origins
            .iter()
            .any(|allowed| allowed == origin)
            .then(|| origin.clone())
    }

    /// The answer to a preflight request, or `None` when the request is not
    /// one. A preflight from an origin that is not allowed gets no allow
    /// headers, so the browser refuses the real request.
    pub fn preflight(
        &self,
        method: &Method,
        headers: &HeaderMap,
        origin: Option<&HeaderValue>,
    ) -> Option<Response> {
        if method != Method::OPTIONS
            || !headers.contains_key(ORIGIN)
            || !headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD)
        {
            return None;
        }
        let mut response = StatusCode::OK.into_response();
        let answer = response.headers_mut();
        if let Some(origin) = origin {
            answer.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
            answer.insert(ACCESS_CONTROL_ALLOW_CREDENTIALS, TRUE.clone());
            answer.insert(ACCESS_CONTROL_ALLOW_METHODS, METHODS.clone());
            answer.insert(ACCESS_CONTROL_ALLOW_HEADERS, HEADERS.clone());
            answer.insert(ACCESS_CONTROL_MAX_AGE, MAX_AGE.clone());
        }
        answer.append(VARY, PREFLIGHT_VARY.clone());
        Some(response)
    }

    /// Adds the allow headers for an allowed origin to an actual response,
    /// unless the route already allows every origin.
    pub fn decorate(&self, headers: &mut HeaderMap, origin: Option<HeaderValue>) {
        if let Some(origin) = origin
            && !headers.contains_key(ACCESS_CONTROL_ALLOW_ORIGIN)
        {
            headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            headers.insert(ACCESS_CONTROL_ALLOW_CREDENTIALS, TRUE.clone());
            headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSED.clone());
        }
        headers.append(VARY, VARY_ORIGIN.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> CorsPolicy {
        CorsPolicy::new(&ServerSettings {
            cors_allowed_origins: vec!["https://app.example/".to_owned()],
            ..ServerSettings::default()
        })
    }

    fn with_origin(origin: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(ORIGIN, HeaderValue::from_str(origin).unwrap());
        headers
    }

    #[test]
    fn only_configured_origins_are_allowed() {
        let policy = policy();
        assert!(
            policy
                .allowed_origin(&with_origin("https://app.example"))
                .is_some()
        );
        assert!(
            policy
                .allowed_origin(&with_origin("http://localhost:3000"))
                .is_some()
        );
        assert!(
            policy
                .allowed_origin(&with_origin("https://evil.example"))
                .is_none()
        );
        assert!(policy.allowed_origin(&HeaderMap::new()).is_none());
    }

    #[test]
    fn an_open_route_keeps_its_wildcard_without_credentials() {
        let policy = policy();
        let mut headers = HeaderMap::new();
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        policy.decorate(
            &mut headers,
            Some(HeaderValue::from_static("https://app.example")),
        );
        assert_eq!(headers[ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert!(!headers.contains_key(ACCESS_CONTROL_ALLOW_CREDENTIALS));
        assert!(headers.contains_key(VARY));
    }
}
