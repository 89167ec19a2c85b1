//! Health and version.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::http::error::schema::PlainError;
use crate::state::AppState;

pub fn health_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::documented_routes!(health))
}

/// `GET /api/version`, which answers errors in the plain shape.
pub fn version_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::documented_routes!(version))
}

/// The service's own view of whether it can serve requests.
#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `ok`; `degraded` (still 200: the instance serves) when a shared
    /// dependency does not answer (the upload store; Redis when it holds
    /// the shared rate limits) or the disk is `low`, and the features that
    /// need it fail; `error` (503) when the database does not answer.
    #[schema(example = "ok")]
    pub status: &'static str,
    pub timestamp: String,
    #[schema(example = "0.1.0")]
    pub version: &'static str,
    /// `connected` or `unreachable`, from a real round trip.
    #[schema(example = "connected")]
    pub database: &'static str,
    /// `connected` or `unreachable`; absent when no Redis is configured or
    /// rate limits are off.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "connected")]
    pub redis: Option<&'static str>,
    /// The upload store (local folder or S3): `connected` or `unreachable`.
    #[schema(example = "connected")]
    pub storage: &'static str,
    /// The data directory's filesystem: `ok`, or `low` when its free space
    /// is under `disk_free_min_mb` (writes are about to fail).
    #[schema(example = "ok")]
    pub disk: &'static str,
    /// Free bytes of the data directory's filesystem; absent when they
    /// cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_free_bytes: Option<u64>,
    /// Time since start, e.g. `3h 12m 5s`.
    #[schema(example = "3h 12m 5s")]
    pub uptime: String,
}

/// Health check: the database, the upload store and (when it holds the
/// shared rate limits) Redis, each probed at most once a second per
/// instance, and the data directory's free space. 503 only when the
/// database does not answer: the store and Redis are shared by every
/// instance, so they degrade the features that need them instead.
#[utoipa::path(
    get,
    path = "/api/health",
    tag = "system",
    responses(
        (status = 200, description = "Serving: the database answers; `status` is `degraded` when the upload store or the configured Redis does not answer or the disk is low (named in the body)", body = Health),
        (status = 503, description = "The database does not answer: take the instance out of rotation", body = Health),
    )
)]
pub async fn health(State(state): State<AppState>) -> Response {
    let found = state.health.check(state.health_targets()).await;
    let reach = |up: bool| if up { "connected" } else { "unreachable" };
    let body = Health {
        status: if !found.ready() {
            "error"
        } else if found.all_up() {
            "ok"
        } else {
            "degraded"
        },
        timestamp: now_rfc3339(),
        version: env!("CARGO_PKG_VERSION"),
        database: reach(found.database),
        redis: found.redis.map(reach),
        storage: reach(found.storage),
        disk: if found.disk_low { "low" } else { "ok" },
        disk_free_bytes: found.disk_free_bytes,
        uptime: human_duration(state.started_at.elapsed()),
    };
    let status = if found.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, no_store_headers(), Json(body)).into_response()
}

/// The running application version.
#[derive(Serialize, ToSchema)]
pub struct Version {
    /// `<major>.<minor>.<patch>` from the build's package metadata.
    #[schema(example = "0.1.0")]
    pub version: &'static str,
}

/// Application version. No authentication, no rate limit, never cached, and
/// readable from any origin.
#[utoipa::path(
    get,
    path = "/api/version",
    tag = "system",
    responses(
        (status = 200, description = "The running version", body = Version),
        (status = 500, description = "Version information unreadable", body = PlainError),
    )
)]
pub async fn version() -> Response {
    (
        no_store_headers(),
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            ),
        ],
        VERSION_BODY,
    )
        .into_response()
}

/// [`Version`] as JSON, written once at compile time: the endpoint is polled
/// by every client and load balancer.
const VERSION_BODY: &str = concat!("{\"version\":\"", env!("CARGO_PKG_VERSION"), "\"}");

/// Headers that keep browsers and proxies from caching an answer.
pub fn no_store_headers() -> [(header::HeaderName, HeaderValue); 3] {
    [
        (
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-cache, no-store, must-revalidate"),
        ),
        (header::PRAGMA, HeaderValue::from_static("no-cache")),
        (header::EXPIRES, HeaderValue::from_static("0")),
    ]
}

fn now_rfc3339() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// `93784s` reads as `1d 2h 3m 4s`; leading zero units are left out.
pub fn human_duration(duration: Duration) -> String {
    let total = duration.as_secs();
    let units = [
        (total / 86_400, "d"),
        (total / 3_600 % 24, "h"),
        (total / 60 % 60, "m"),
        (total % 60, "s"),
    ];
    let parts: Vec<String> = units
        .iter()
        .skip_while(|(value, unit)| *value == 0 && *unit != "s")
        .map(|(value, unit)| format!("{value}{unit}"))
        .collect();
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::{VERSION_BODY, Version, human_duration};
    use std::time::Duration;

    #[test]
    fn the_version_body_is_the_documented_schema() {
        let documented = serde_json::to_string(&Version {
            version: env!("CARGO_PKG_VERSION"),
        })
        .unwrap();
        assert_eq!(VERSION_BODY, documented);
    }

    #[test]
    fn uptime_reads_like_a_person_would_write_it() {
        assert_eq!(human_duration(Duration::from_secs(0)), "0s");
        assert_eq!(human_duration(Duration::from_secs(65)), "1m 5s");
        assert_eq!(human_duration(Duration::from_secs(93_784)), "1d 2h 3m 4s");
        assert_eq!(human_duration(Duration::from_secs(3_600)), "1h 0m 0s");
    }
}
