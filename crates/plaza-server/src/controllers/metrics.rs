//! Prometheus metrics.

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::MetricsAccess;
use crate::http::error::schema::GeneralError;
use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::documented_routes!(metrics))
}

/// Request counts and latency histograms by route template and status, the
/// process (memory, open files, CPU), the database pool, queue depths and
/// background job runs, in the Prometheus text format. Open to an admin
/// token with `admin:read`, or to anyone when `metrics_public` is on.
#[utoipa::path(
    get,
    path = "/api/metrics",
    tag = "system",
    security((), ("admin_jwt" = ["admin:read"])),
    responses(
        (status = 200, description = "Prometheus text exposition format", content_type = "text/plain", body = String),
        (status = 401, description = "No valid admin token", body = GeneralError),
        (status = 403, description = "Token lacks admin:read", body = GeneralError),
    )
)]
pub async fn metrics(_access: MetricsAccess, State(state): State<AppState>) -> Response {
    crate::telemetry::record_current_figures(&state);
    crate::telemetry::record_mail_queue(&state).await;
    state.metrics.run_upkeep();
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        state.metrics.render(),
    )
        .into_response()
}
