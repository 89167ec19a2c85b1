use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use axum::http::Method;
use metrics::{Counter, Histogram};

/// The series of one (method, status) under a route.
struct Series {
    method: Method,
    status: u16,
    requests: Counter,
    duration: Histogram,
}

/// Metric handles by route template, so a request costs one map lookup
/// instead of building label sets and registry keys on every call.
static SERIES: LazyLock<RwLock<HashMap<Box<str>, Vec<Series>>>> = LazyLock::new(Default::default);

/// Counts a request and records its latency by route template (never the raw
/// path, which would explode the number of series), method and status.
pub(super) fn record(route: &str, method: &Method, status: u16, seconds: f64) {
    if let Ok(series) = SERIES.read()
        && let Some(found) = series.get(route).and_then(|all| {
            all.iter()
                .find(|s| s.status == status && s.method == method)
        })
    {
        found.requests.increment(1);
        found.duration.record(seconds);
        return;
    }
    let labels = [
        ("method", method.to_string()),
        ("route", route.to_owned()),
        ("status", status.to_string()),
    ];
    let created = Series {
        method: method.clone(),
        status,
        requests: metrics::counter!("http_requests_total", &labels),
        duration: metrics::histogram!("http_request_duration_seconds", &labels),
    };
    created.requests.increment(1);
    created.duration.record(seconds);
    if let Ok(mut series) = SERIES.write() {
        series.entry(route.into()).or_default().push(created);
    }
}
