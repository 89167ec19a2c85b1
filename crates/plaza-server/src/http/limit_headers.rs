//! The headers of a limited route's answers: `X-RateLimit-Limit`,
//! `X-RateLimit-Remaining`, `X-RateLimit-Reset`, and `X-Admin-Tier` on the
//! versioned admin surface; written by the limiter ([`super::rate_limit`])
//! on its answers and by every 429, whatever refused
//! ([`super::error::AppError::RateLimited`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderName, HeaderValue};

pub const LIMIT_HEADER: HeaderName = HeaderName::from_static("x-ratelimit-limit");
pub const REMAINING_HEADER: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
pub const RESET_HEADER: HeaderName = HeaderName::from_static("x-ratelimit-reset");
pub const ADMIN_TIER_HEADER: HeaderName = HeaderName::from_static("x-admin-tier");

/// Writes the `X-RateLimit-*` headers: the quota's count, the requests
/// left, and the Unix second when the quota is full again (`reset_after`
/// from now). The one place they are written, for answers and refusals.
pub fn write_headers(headers: &mut HeaderMap, limit: u32, remaining: u32, reset_after: Duration) {
    let reset = SystemTime::now()
        .checked_add(reset_after)
        .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_secs_f64().ceil() as u64);
    headers.insert(LIMIT_HEADER, HeaderValue::from(limit));
    headers.insert(REMAINING_HEADER, HeaderValue::from(remaining));
    headers.insert(RESET_HEADER, HeaderValue::from(reset));
}
