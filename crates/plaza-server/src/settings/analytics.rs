//! Settings of one section: analytics collection and retention.

use serde::{Deserialize, Serialize};

use super::error::{SettingsError, at_least_one};

/// Analytics collection and retention.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnalyticsSettings {
    /// Event types allowed besides the seven built in.
    pub analytics_extra_event_types: Vec<String>,
    /// The most bytes an event's `event_data` may take as JSON.
    pub analytics_max_event_data_bytes: usize,
    /// How long events are kept; older ones are purged, and an event whose
    /// timestamp is already older is refused.
    pub analytics_retention_days: u64,
    /// Events waiting for the writer at most; collect answers 503 beyond.
    pub analytics_queue_max_events: usize,
    /// How long collect trusts a session a lookup confirmed, in
    /// milliseconds (0: a lookup per request, like every other route; at
    /// most 1000, so a session ended on another instance stops sending
    /// events within a second).
    pub analytics_session_recheck_ms: u64,
    /// Key of the hash that replaces client addresses. Unset: generated
    /// once into `<data_dir>/analytics-salt`. Set it when several instances
    /// share a database, so they hash one address alike.
    pub analytics_salt: Option<String>,
    /// Header a trusted proxy names the client's country in (ISO 3166
    /// alpha-2), such as `CF-IPCountry`.
    pub analytics_country_header: Option<String>,
    /// Header a trusted proxy flags VPN clients with (`1`/`true`/`yes`).
    pub analytics_vpn_header: Option<String>,
}

impl Default for AnalyticsSettings {
    fn default() -> Self {
        AnalyticsSettings {
            analytics_extra_event_types: Vec::new(),
            analytics_max_event_data_bytes: 4096,
            analytics_retention_days: 90,
            analytics_queue_max_events: 50_000,
            analytics_session_recheck_ms: 1000,
            analytics_salt: None,
            analytics_country_header: None,
            analytics_vpn_header: None,
        }
    }
}

impl AnalyticsSettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        at_least_one([
            (
                "analytics_max_event_data_bytes",
                self.analytics_max_event_data_bytes,
            ),
            (
                "analytics_retention_days",
                usize::try_from(self.analytics_retention_days).unwrap_or(usize::MAX),
            ),
            (
                "analytics_queue_max_events",
                self.analytics_queue_max_events,
            ),
        ])?;
        if self.analytics_retention_days > 36_500 {
            return Err(SettingsError::new(
                "analytics_retention_days",
                "must be at most 36500 (a century)",
            ));
        }
        if self.analytics_session_recheck_ms > 1000 {
            return Err(SettingsError::new(
                "analytics_session_recheck_ms",
                "must be at most 1000 (a second), so an ended session stops sending events within a second",
            ));
        }
        if self.analytics_queue_max_events > 10_000_000 {
            return Err(SettingsError::new(
                "analytics_queue_max_events",
                "must be at most 10000000 (about 5 GB of queued events)",
            ));
        }
        if let Some(salt) = &self.analytics_salt
            && salt.len() < 32
        {
            return Err(SettingsError::new(
                "analytics_salt",
                "must be at least 32 characters",
            ));
        }
        for (key, header) in [
            ("analytics_country_header", &self.analytics_country_header),
            ("analytics_vpn_header", &self.analytics_vpn_header),
        ] {
            if let Some(name) = header
                && axum::http::HeaderName::try_from(name.as_str()).is_err()
            {
                return Err(SettingsError::new(key, "is not a valid header name"));
            }
        }
        if let Some(bad) = self.analytics_extra_event_types.iter().find(|name| {
            name.is_empty()
                || name.len() > 64
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        }) {
            return Err(SettingsError::new(
                "analytics_extra_event_types",
                format!("{bad:?} is not an event type name (1 to 64 of a-z, 0-9 and _)"),
            ));
        }
        Ok(())
    }
}
