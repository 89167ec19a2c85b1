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
    record_current_figures(&state);
    crate::telemetry::record_mail_queue(&state.db).await;
    crate::telemetry::record_moderation_queues(&state.db).await;
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

/// Reads the figures that are states rather than events, just before a
/// scrape renders them: the process, the database pool, the queues, the
/// content generation's channel and the image cache.
fn record_current_figures(state: &AppState) {
    crate::telemetry::record_process_figures();
    let pool = state.db.pool_stats();
    metrics::gauge!("db_pool_connections", "state" => "open").set(f64::from(pool.size));
    metrics::gauge!("db_pool_connections", "state" => "idle").set(f64::from(pool.idle));
    metrics::gauge!("db_pool_max_connections").set(f64::from(pool.max));
    metrics::counter!("db_pool_waits_total").absolute(pool.waits);
    metrics::counter!("db_pool_timeouts_total").absolute(pool.timeouts);
    metrics::gauge!("plaza_queue_depth", "queue" => "analytics")
        .set(state.analytics.ingest.queued() as f64);
    let content = &state.content_generation;
    metrics::gauge!("plaza_content_notifications_listening", "channel" => content.channel().as_str())
        .set(if content.listening() { 1.0 } else { 0.0 });
    metrics::counter!("plaza_content_notifications_connects_total", "channel" => content.channel().as_str())
        .absolute(content.connects());
    metrics::counter!("plaza_content_notifications_received_total", "channel" => content.channel().as_str())
        .absolute(content.heard());
    metrics::counter!("plaza_content_generation_reads_total").absolute(content.reads());
    state.image_cache.record_figures();
}
