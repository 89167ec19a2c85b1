//! Answers that hold one user's private data (their sessions, alerts,
//! email, export, or anything of the admin surfaces) carry
//! `Cache-Control: private, no-store`, so neither a shared cache nor the
//! browser's own keeps them: a shared computer's next user, or a proxy
//! that ignores `Vary`, never sees them. Whole route groups are marked by
//! [`personal`]; a route whose answer is private only for some callers
//! (a user's entry, with the email shown to that user and to
//! administrators) marks those answers with [`mark`].

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;

/// The `Cache-Control` of a personal answer.
pub const PRIVATE_NO_STORE: &str = "private, no-store";

/// Marks every answer of `routes` personal, unless a route set its own
/// `Cache-Control` (`no-store` pages keep theirs).
pub fn personal<S>(routes: OpenApiRouter<S>) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes.route_layer(axum::middleware::map_response(
        |mut response: Response| async move {
            response
                .headers_mut()
                .entry(header::CACHE_CONTROL)
                .or_insert(HeaderValue::from_static(PRIVATE_NO_STORE));
            response
        },
    ))
}

/// Marks one answer personal, replacing the `Cache-Control` it had.
pub fn mark(headers: &mut HeaderMap) {
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(PRIVATE_NO_STORE),
    );
}
