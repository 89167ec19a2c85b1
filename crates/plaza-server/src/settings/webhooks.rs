//! Settings of one section: webhooks: where their targets may be, how
//! deliveries are retried, and the key sealing their secrets.

use serde::{Deserialize, Serialize};

use super::error::SettingsError;
use crate::secrets::MIN_SECRET_LENGTH;

/// Webhooks (DECISIONS.md "Tokens for members and bots, and webhooks
/// (round 5)").
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WebhookSettings {
    /// Accepts webhook targets on loopback, private and other non-public
    /// addresses (tests, internal deployments). Off, such a URL is refused
    /// at creation and at each delivery.
    pub webhooks_allow_private: bool,
    /// Seconds before a failed delivery is tried again; the wait doubles
    /// after each further failure.
    pub webhook_retry_initial_secs: u64,
    /// Seconds after its creation within which a delivery is retried;
    /// then it is `failed`.
    pub webhook_retry_window_secs: u64,
    /// The key sealing webhook secrets in the database (at least 32
    /// characters). Unset: the key kept in `<data_dir>/webhook-key`,
    /// generated on first start (and archived by backups). Several
    /// instances need the same key.
    pub webhook_key: Option<String>,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            webhooks_allow_private: false,
            webhook_retry_initial_secs: 10,
            webhook_retry_window_secs: 24 * 3600,
            webhook_key: None,
        }
    }
}

impl WebhookSettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        if self.webhook_retry_initial_secs == 0 {
            return Err(SettingsError::new(
                "webhook_retry_initial_secs",
                "must be at least 1",
            ));
        }
        if self.webhook_retry_window_secs > 30 * 24 * 3600 {
            return Err(SettingsError::new(
                "webhook_retry_window_secs",
                "must be at most 30 days (2592000)",
            ));
        }
        if let Some(key) = &self.webhook_key
            && key.trim().len() < MIN_SECRET_LENGTH
        {
            return Err(SettingsError::new(
                "webhook_key",
                format!("must be at least {MIN_SECRET_LENGTH} characters"),
            ));
        }
        Ok(())
    }
}
