use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use axum::http::Method;
use metrics::{Counter, Histogram};

/// The series of one (method, status) under a route.
struct Series {
    method: &'static str,
    status: u16,
    requests: Counter,
    duration: Histogram,
}

/// Metric handles by route template, so a request costs one map lookup
/// instead of building label sets and registry keys on every call.
static SERIES: LazyLock<RwLock<HashMap<Box<str>, Vec<Series>>>> = LazyLock::new(Default::default);

/// Counts a request and records its latency by route template (never the raw
/// path, which would explode the number of series), method and status.
///
/// Every label has a bounded set of values, since every label value is a
/// series kept for the life of the process: routes are templates (one
/// `unmatched` for the rest), methods the standard ones or `OTHER` (any
/// token is a valid method to hyper: 40,000 made-up methods once grew
/// memory by 96 MiB and `/api/metrics` to 539 MB), statuses 100–599 (`0`
/// for anything else, which hyper does not produce).
pub(super) fn record(route: &str, method: &Method, status: u16, seconds: f64) {
    let method = method_label(method);
    let status = if (100..600).contains(&status) {
        status
    } else {
        0
    };
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
        ("method", method.to_owned()),
        ("route", route.to_owned()),
        ("status", status.to_string()),
    ];
    let created = Series {
        method,
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

/// The `method` label: a standard method's name, else `OTHER`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "OTHER",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_up_methods_share_one_label() {
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        for made_up in ["PURGE", "get", "XYZZY123"] {
            let method = Method::from_bytes(made_up.as_bytes()).unwrap();
            assert_eq!(method_label(&method), "OTHER", "{made_up}");
        }
    }
}
