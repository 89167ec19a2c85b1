use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

use crate::error::{AppError, ErrorReport, Surface, render_response};

/// Gives every error response the body shape of its surface: reports left by
/// [`AppError`], and bare error statuses from the framework (405, 408, 413, a
/// caught panic) alike.
pub async fn render_errors(request: Request, next: Next) -> Response {
    let surface = Surface::for_path(request.uri().path());
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    match response.extensions().get::<ErrorReport>().cloned() {
        Some(report) => render_response(surface, &report, response),
        None if is_json(&response) => response,
        None => {
            let report = ErrorReport::from(&AppError::from_status(status));
            render_response(surface, &report, response)
        }
    }
}

/// A handler that already wrote its own JSON error body (a health check
/// reporting 503) is left alone.
fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"))
}
