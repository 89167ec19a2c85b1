use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::{SESSION_COOKIE, cookie_value, is_same_origin};
use crate::error::AppError;
use crate::settings::Settings;

/// Refuses cookie-authenticated writes (POST, PUT, PATCH, DELETE) sent from
/// another origin, so a page elsewhere cannot act with a visitor's session.
/// Bearer-token requests carry no ambient credential and pass.
pub async fn refuse_cross_origin_writes(
    State(settings): State<Arc<Settings>>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method();
    let is_write = !(method.is_safe() || method == axum::http::Method::OPTIONS);
    if is_write
        && cookie_value(request.headers(), SESSION_COOKIE).is_some()
        && !is_same_origin(request.headers(), &settings)
    {
        return AppError::Forbidden.into_response();
    }
    next.run(request).await
}
