//! The per-request work every route shares, done in one hand-written layer:
//! request id, tracing span, the refusal of a client an IP block of
//! severity `all` covers, CORS, the cross-origin write check, the refusal
//! of a query parameter holding a NUL byte, the request timeout, panic
//! recovery, error rendering per surface, hardening headers, metrics and the
//! access log line (with the user the request acted as, its user agent and
//! its query string, secrets redacted).
//!
//! One layer instead of nine (`tower_http`'s request id, trace, timeout,
//! catch-panic and CORS layers and three `from_fn` middlewares): axum clones a route's
//! middleware stack for every request, each `from_fn` also boxes it, and
//! `tower_http`'s timeout registers a timer per request; together they cost
//! Plaza half of its throughput on cheap routes (docs/benchmarks.md, "HTTP",
//! measures what the middleware costs today).

use std::any::Any;
use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, MatchedPath, Request};
use axum::http::header::{
    CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use rand::RngCore;
use tower::{Layer, Service};
use tracing::Instrument;

use super::cors::CorsPolicy;
use super::metrics;
use crate::http::cookies::{SESSION_COOKIE, cookie_value, is_same_origin};
use crate::http::error::{AppError, ErrorReport, Surface, SurfaceMap, render_response};
use crate::http::extract::text_input::refuse_nul_in_query;
use crate::http::rate_limit::address::client_behind;
use crate::services::front_door::FrontDoor;
use crate::settings::ServerSettings;
use crate::settings::TrustedProxies;

/// The header that carries a request's id, both ways.
static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Longest client-sent request id kept; a longer one is replaced.
const MAX_CLIENT_ID_LEN: usize = 200;

/// See the module documentation.
#[derive(Clone)]
pub struct RequestLayer {
    shared: Arc<Shared>,
}

/// Everything a request needs from the settings, built once.
struct Shared {
    server: ServerSettings,
    cors: CorsPolicy,
    timeout: Duration,
    surfaces: SurfaceMap,
    /// Whose forwarding headers name the client of the access log line
    /// and of the IP blocks' check.
    proxies: TrustedProxies,
    /// The IP blocks in force.
    front_door: Arc<FrontDoor>,
}

/// The paths an IP block never refuses: the probes of monitors and load
/// balancers (DECISIONS.md "The front door").
fn exempt_from_ip_blocks(path: &str) -> bool {
    path == "/api/health" || path == "/api/version"
}

impl RequestLayer {
    pub fn new(
        server: &ServerSettings,
        proxies: TrustedProxies,
        surfaces: SurfaceMap,
        front_door: Arc<FrontDoor>,
    ) -> Self {
        let shared = Shared {
            front_door,
            cors: CorsPolicy::new(server),
            timeout: Duration::from_secs(server.request_timeout_secs),
            server: server.clone(),
            surfaces,
            proxies,
        };
        RequestLayer {
            shared: Arc::new(shared),
        }
    }
}

impl<S> Layer<S> for RequestLayer {
    type Service = RequestService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestService {
            inner,
            shared: self.shared.clone(),
        }
    }
}

#[derive(Clone)]
pub struct RequestService<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S, B> Service<Request> for RequestService<S>
where
    S: Service<Request, Response = axum::http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: axum::body::HttpBody<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let started = Instant::now();
        let id = match request.headers().get(&REQUEST_ID) {
            Some(sent) if !sent.is_empty() && sent.len() <= MAX_CLIENT_ID_LEN => sent.clone(),
            _ => new_request_id(),
        };
        let span = tracing::info_span!(
            "request",
            method = %request.method(),
            path = %request.uri().path(),
            request_id = id.to_str().unwrap_or_default(),
        );
        let route = request.extensions().get::<MatchedPath>().cloned();
        let shared = self.shared.clone();
        let uri = request.uri().clone();
        let user_agent = request
            .headers()
            .get(axum::http::header::USER_AGENT)
            .and_then(|agent| agent.to_str().ok())
            .map(|agent| {
                agent
                    .chars()
                    .take(MAX_LOGGED_AGENT_CHARS)
                    .collect::<String>()
            });
        let access_user = AccessUser::default();
        request.extensions_mut().insert(access_user.clone());
        let client = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(peer)| client_behind(&shared.proxies, peer.ip(), request.headers()));
        // This layer runs after routing (it is put on every route), so the
        // matched route tells the surface its group declared.
        let surface = shared
            .surfaces
            .surface_of(route.as_ref())
            .unwrap_or(Surface::General);
        // For the extractors that record it (audit entries); absent means
        // the general surface.
        if surface != Surface::General {
            request.extensions_mut().insert(surface);
        }
        let method = request.method().clone();
        let origin = shared.cors.allowed_origin(request.headers());
        let answer = if client.is_some_and(|client| {
            shared
                .front_door
                .blocks(client, plaza_domain::ip_blocks::Severity::All)
        }) && !exempt_from_ip_blocks(uri.path())
        {
            Answer::Ready(AppError::IpBlocked.into_response())
        } else if let Some(preflight) =
            shared
                .cors
                .preflight(&method, request.headers(), origin.as_ref())
        {
            Answer::Ready(preflight)
        } else if refuse_cross_origin_write(&request, &shared.server) {
            Answer::Ready(AppError::NotAllowed(CROSS_ORIGIN_WRITE.to_owned()).into_response())
        } else if let Err(refusal) = refuse_nul_in_query(request.uri().query().unwrap_or_default())
        {
            Answer::Ready(refusal.into_response())
        } else {
            // The service that was made ready is the one called; a fresh
            // clone takes its place for the next request.
            let clone = self.inner.clone();
            let mut ready = std::mem::replace(&mut self.inner, clone);
            match std::panic::catch_unwind(AssertUnwindSafe(|| ready.call(request))) {
                Ok(answer) => Answer::Pending(answer),
                Err(panic) => Answer::Ready(panic_response(panic)),
            }
        };
        Box::pin(async move {
            // The request's span covers the handler and the rendering of its
            // errors; the access line below stands outside it, so its fields
            // are the line's own in text and JSON alike.
            let mut response = async {
                let response = match answer {
                    Answer::Pending(answer) => {
                        match within(shared.timeout, AssertUnwindSafe(answer).catch_unwind()).await
                        {
                            Some(Ok(Ok(response))) => response.map(axum::body::Body::new),
                            Some(Ok(Err(never))) => match never {},
                            Some(Err(panic)) => panic_response(panic),
                            None => AppError::Timeout.into_response(),
                        }
                    }
                    Answer::Ready(response) => response,
                };
                render_errors(surface, &method, response)
            }
            .instrument(span)
            .await;
            let headers = response.headers_mut();
            headers.insert(REQUEST_ID.clone(), id);
            shared.cors.decorate(headers, origin);
            harden(headers);
            let elapsed = started.elapsed();
            metrics::record(
                route.as_ref().map_or("unmatched", MatchedPath::as_str),
                &method,
                response.status().as_u16(),
                elapsed.as_secs_f64(),
            );
            tracing::info!(
                target: "plaza::access",
                method = %method,
                path = uri.path(),
                status = response.status().as_u16(),
                duration_ms = elapsed.as_micros() as f64 / 1000.0,
                request_id = response.headers().get(&REQUEST_ID).and_then(|id| id.to_str().ok()),
                client = %Client(client),
                user_id = access_user.get(),
                user_agent = user_agent.as_deref(),
                query = uri.query().map(redacted_query).as_deref(),
                "answered"
            );
            Ok(response)
        })
    }
}

/// Most characters of a user agent the access line keeps.
const MAX_LOGGED_AGENT_CHARS: usize = 256;

/// The user a request acted as, for its access line: the handler's
/// extractors record it (a resolved session, an accepted token) in the slot
/// this layer puts into the request.
#[derive(Clone, Default)]
pub struct AccessUser(Arc<std::sync::Mutex<Option<i64>>>);

impl AccessUser {
    /// Records `user_id` as the request's user (a later credential, the one
    /// the route accepted, replaces an earlier one).
    pub fn record(&self, user_id: i64) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(user_id);
    }

    fn get(&self) -> Option<i64> {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Parameter names whose values are secrets (tokens, codes, keys) and are
/// logged as `REDACTED`.
const SECRET_PARAMETERS: [&str; 7] = [
    "token",
    "code",
    "state",
    "secret",
    "password",
    "key",
    "signature",
];

/// A query string for the access line: each parameter whose name holds one
/// of [`SECRET_PARAMETERS`] (ignoring case) has its value replaced.
fn redacted_query(query: &str) -> String {
    let mut kept = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let lower = name.to_ascii_lowercase();
        if SECRET_PARAMETERS
            .iter()
            .any(|secret| lower.contains(secret))
        {
            kept.append_pair(&name, "REDACTED");
        } else {
            kept.append_pair(&name, &value);
        }
    }
    kept.finish()
}

/// Headers that keep browsers from misusing an answer: no content-type
/// sniffing on any response (a JSON body or an uploaded file is never run
/// as a script or page); for HTML pages (sign-in, sign-out, the share
/// image viewer, Swagger UI) no framing by other sites (clickjacking of
/// the sign-in form); and for SVG images (avatars, share cards) a policy
/// that runs no script and loads nothing, should one be opened as a page.
/// A response that sets its own `Content-Security-Policy` keeps it.
fn harden(headers: &mut HeaderMap) {
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    let content_type_is = |prefix: &[u8]| {
        headers
            .get(CONTENT_TYPE)
            .is_some_and(|value| value.as_bytes().starts_with(prefix))
    };
    let (html, svg) = (
        content_type_is(b"text/html"),
        content_type_is(b"image/svg+xml"),
    );
    if html {
        headers
            .entry(X_FRAME_OPTIONS)
            .or_insert(HeaderValue::from_static("DENY"));
        headers
            .entry(CONTENT_SECURITY_POLICY)
            .or_insert(HeaderValue::from_static("frame-ancestors 'none'"));
    } else if svg {
        headers
            .entry(CONTENT_SECURITY_POLICY)
            .or_insert(HeaderValue::from_static(
                "default-src 'none'; style-src 'unsafe-inline'",
            ));
    }
}

/// The client's address in the access log, `-` off a socket.
struct Client(Option<IpAddr>);

impl fmt::Display for Client {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(address) => address.fmt(formatter),
            None => formatter.write_str("-"),
        }
    }
}

/// What the inner service answers, or an answer given without it.
enum Answer<F> {
    Pending(F),
    Ready(Response),
}

/// `None` when `work` is not done within `limit`. The timer is only started
/// if the first poll leaves the work pending: registering a timer wakes the
/// runtime's timer driver, which costs more than a whole cheap request
/// (`tower_http`'s timeout does it for every request).
async fn within<T>(limit: Duration, work: impl Future<Output = T>) -> Option<T> {
    let mut work = std::pin::pin!(work);
    let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = None;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(done) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(done));
        }
        let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// A panic in a handler is logged (by [`AppError::Internal`]) and answered
/// as a 500 with nothing internal in the body.
fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
        .unwrap_or_else(|| "unknown panic".to_owned());
    AppError::Internal(format!("handler panicked: {message}")).into_response()
}

/// Why a cross-origin write is refused, in words that point an operator
/// behind a proxy at the setting to check.
const CROSS_ORIGIN_WRITE: &str = "a write signed in by cookie must come from this site's origin \
     (its base URL, or one of cors_allowed_origins)";

/// Cookie-authenticated writes (POST, PUT, PATCH, DELETE) sent from another
/// origin are refused, so a page elsewhere cannot act with a visitor's
/// session. Bearer-token requests carry no ambient credential and pass.
fn refuse_cross_origin_write(request: &Request, server: &ServerSettings) -> bool {
    let method = request.method();
    let is_write = !(method.is_safe() || method == axum::http::Method::OPTIONS);
    is_write
        && cookie_value(request.headers(), SESSION_COOKIE).is_some()
        && !is_same_origin(request.headers(), server)
}

/// A UUID v4 from the thread-local generator: unique without a system call
/// per request.
fn new_request_id() -> HeaderValue {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
    let mut text = uuid::Uuid::encode_buffer();
    HeaderValue::from_str(id.hyphenated().encode_lower(&mut text))
        .expect("a hyphenated UUID is a valid header value")
}

/// Gives every error response the body shape of its surface: reports left by
/// [`AppError`], and bare error statuses from the framework (405, 408, 413, a
/// caught panic) alike. A handler that already wrote its own JSON error body
/// (a health check reporting 503) or an HTML page for a browser (a mailed
/// link that no longer works) is left alone.
fn render_errors(surface: Surface, method: &axum::http::Method, response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    match response.extensions().get::<ErrorReport>().cloned() {
        Some(mut report) => {
            // The unversioned admin surface titles its 400s by what was
            // wrong: the query of a read, the body of a write.
            if surface == Surface::Admin
                && report.title.is_none()
                && !report.status_on_every_surface
                && !method.is_safe()
                && matches!(report.code, "VALIDATION_ERROR" | "BAD_REQUEST")
            {
                report.title = Some("Invalid request body");
            }
            render_response(surface, &report, response)
        }
        None if is_json(&response) || is_html(&response) => response,
        None => {
            let report = ErrorReport::from(&AppError::from_status(status));
            render_response(surface, &report, response)
        }
    }
}

fn is_json(response: &Response) -> bool {
    content_type_starts_with(response, "application/json")
}

fn is_html(response: &Response) -> bool {
    content_type_starts_with(response, "text/html")
}

fn content_type_starts_with(response: &Response, prefix: &str) -> bool {
    response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_distinct_uuids() {
        let first = new_request_id();
        let second = new_request_id();
        assert_ne!(first, second);
        assert!(uuid::Uuid::parse_str(first.to_str().unwrap()).is_ok());
    }
}
