//! Settings of one section: moderation: whether the public moderation log
//! is served, and how long a member may appeal an action.

use serde::{Deserialize, Serialize};

use super::error::SettingsError;

/// Graduated moderation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModerationSettings {
    /// Serves `GET /api/modlog` to anyone; off, it answers 404.
    pub public_modlog: bool,
    /// Days after a moderation action during which its member may appeal
    /// it (1 to 3650).
    pub appeal_window_days: u32,
}

impl Default for ModerationSettings {
    fn default() -> Self {
        ModerationSettings {
            public_modlog: true,
            appeal_window_days: 30,
        }
    }
}

impl ModerationSettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        if !(1..=3650).contains(&self.appeal_window_days) {
            return Err(SettingsError::new(
                "appeal_window_days",
                "must be from 1 to 3650 days",
            ));
        }
        Ok(())
    }

    /// Whether the public moderation log is served: the one place that
    /// reads it.
    pub fn public_modlog(&self) -> bool {
        self.public_modlog
    }

    /// The appeal window in milliseconds.
    pub fn appeal_window_millis(&self) -> i64 {
        i64::from(self.appeal_window_days) * 24 * 3600 * 1000
    }
}
