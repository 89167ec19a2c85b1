//! Settings of one section: logs and metrics.

use serde::{Deserialize, Serialize};

use super::LogFormat;

/// Logs and metrics.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TelemetrySettings {
    pub log_format: LogFormat,
    /// Serves `/api/metrics` without an admin token.
    pub metrics_public: bool,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        TelemetrySettings {
            log_format: LogFormat::Text,
            metrics_public: false,
        }
    }
}
