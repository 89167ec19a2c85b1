//! Settings of one section: alerts and broadcasts.

use serde::{Deserialize, Serialize};

use super::error::SettingsError;

/// Alerts and broadcasts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AlertSettings {
    /// How often the cluster-wide job looks for scheduled broadcasts that
    /// are due; a broadcast is delivered at most this long after its time.
    pub broadcast_delivery_period_secs: u64,
    /// Most live alert streams one instance keeps open at once; one more
    /// is 503 with `Retry-After`.
    pub alert_stream_max_connections: usize,
    /// Most live alert streams one user keeps open at once (across their
    /// sessions, on one instance); one more is 429. Not a rate limit: it
    /// holds with rate limits off.
    pub alert_stream_max_per_user: usize,
    /// How long a live alert stream lasts before the server ends it (the
    /// client reconnects with `Last-Event-ID`); 0 sends the current alerts
    /// and ends at once.
    pub alert_stream_max_secs: u64,
    /// How often each instance looks for new deliveries and dismissals
    /// while a stream is open: the most a live alert waits.
    pub alert_stream_poll_ms: u64,
}

impl Default for AlertSettings {
    fn default() -> Self {
        AlertSettings {
            broadcast_delivery_period_secs: 5,
            alert_stream_max_connections: 1000,
            alert_stream_max_per_user: 5,
            alert_stream_max_secs: 3600,
            alert_stream_poll_ms: 1000,
        }
    }
}

impl AlertSettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        if !(1..=30).contains(&self.broadcast_delivery_period_secs) {
            return Err(SettingsError::new(
                "broadcast_delivery_period_secs",
                "must be from 1 to 30 (a broadcast is due within 30 s of its time)",
            ));
        }
        if !(50..=60_000).contains(&self.alert_stream_poll_ms) {
            return Err(SettingsError::new(
                "alert_stream_poll_ms",
                "must be from 50 to 60000",
            ));
        }
        if self.alert_stream_max_per_user == 0 {
            return Err(SettingsError::new(
                "alert_stream_max_per_user",
                "must be at least 1",
            ));
        }
        if self.alert_stream_max_secs > 86_400 {
            return Err(SettingsError::new(
                "alert_stream_max_secs",
                "must be at most 86400 (a day)",
            ));
        }
        Ok(())
    }
}
