//! The service's own pages, answered in process for link previews: a link
//! to this service is previewed through the app's router and its whole
//! middleware stack, as a request from outside would be, without a trip
//! over the network. A path no route serves is reported as such (the
//! router's fallback marks the request's [`FallbackProbe`]), so the
//! preview fetches it from the base URL: a front end served beside Plaza
//! on the same origin.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, header};
use futures_util::StreamExt;
use plaza_link_preview::{InternalAnswer, InternalFetch, InternalPage, InternalPages};
use tower::ServiceExt;

/// The service's own pages for link previews, answered by the app's router
/// in process (through the whole middleware stack, as a request from
/// outside would be). Holds the router weakly: the router holds the state
/// that holds this, and a strong reference would keep both alive forever.
pub struct OwnPages {
    router: OnceLock<Weak<Router>>,
    /// Sent with every in-process request, as over the network, so the
    /// link-preview route refuses it even if it were ever reached.
    user_agent: HeaderValue,
}

impl OwnPages {
    /// Pages asked for with `user_agent`; answered once [`OwnPages::set`]
    /// has given the router.
    pub fn new(user_agent: &str) -> Self {
        OwnPages {
            router: OnceLock::new(),
            user_agent: HeaderValue::from_str(user_agent)
                .unwrap_or(HeaderValue::from_static("Plaza-LinkPreview/1.0")),
        }
    }

    /// Makes `router` the one answering; called once the app is built.
    /// Later calls are ignored.
    pub fn set(&self, router: &std::sync::Arc<Router>) {
        let _ = self.router.set(std::sync::Arc::downgrade(router));
    }
}

/// Put on an in-process request; the router's fallback marks it, which
/// tells a path no route serves from a route's own 404.
#[derive(Clone, Default)]
pub struct FallbackProbe(Arc<AtomicBool>);

impl FallbackProbe {
    /// Called by the router's fallback.
    pub fn reached(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    fn was_reached(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl InternalPages for OwnPages {
    fn get<'a>(&'a self, path_and_query: &'a str, max_body: usize) -> InternalFetch<'a> {
        Box::pin(async move {
            let router = self.router.get().and_then(Weak::upgrade)?;
            let probe = FallbackProbe::default();
            let request = Request::get(path_and_query)
                .header(header::USER_AGENT, self.user_agent.clone())
                .header(
                    header::ACCEPT,
                    "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8",
                )
                .extension(probe.clone())
                .body(Body::empty())
                .ok()?;
            let response = match (*router).clone().oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            if probe.was_reached() {
                return Some(InternalAnswer::NotServed);
            }
            let (parts, body) = response.into_parts();
            let header = |name| {
                parts
                    .headers
                    .get(name)
                    .and_then(|value: &HeaderValue| value.to_str().ok())
                    .map(str::to_owned)
            };
            let mut page = InternalPage {
                status: parts.status.as_u16(),
                content_type: header(header::CONTENT_TYPE),
                location: header(header::LOCATION),
                body: Vec::new(),
            };
            let mut stream = body.into_data_stream();
            while page.body.len() < max_body {
                let Some(Ok(chunk)) = stream.next().await else {
                    break;
                };
                let room = max_body - page.body.len();
                page.body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Some(InternalAnswer::Page(page))
        })
    }
}
