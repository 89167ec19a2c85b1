//! Settings of one section: logs and metrics.

use serde::{Deserialize, Serialize};

use super::error::SettingsError;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// Logs and metrics.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TelemetrySettings {
    pub log_format: LogFormat,
    /// Serves `/api/metrics` without an admin token.
    pub metrics_public: bool,
    /// A scrape credential for `/api/metrics` (at least 32 characters),
    /// sent as `Authorization: Bearer …`: it does not expire as admin
    /// tokens do.
    pub metrics_token: Option<String>,
}

impl TelemetrySettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        if let Some(token) = &self.metrics_token
            && token.len() < 32
        {
            return Err(SettingsError::new(
                "metrics_token",
                "must be at least 32 characters",
            ));
        }
        Ok(())
    }
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        TelemetrySettings {
            log_format: LogFormat::Text,
            metrics_public: false,
            metrics_token: None,
        }
    }
}
