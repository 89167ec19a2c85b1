//! Settings of one section: outbound fetches for link previews.

use serde::{Deserialize, Serialize};

use super::error::{SettingsError, at_least_one};

/// Outbound fetches for link previews.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LinkPreviewSettings {
    /// Lets link preview reach loopback and private addresses.
    pub link_preview_allow_private: bool,
    /// Ports link preview may fetch besides 80 and 443.
    pub link_preview_allowed_ports: Vec<u16>,
    /// Link previews in progress at once; a request that cannot start one
    /// within two seconds is answered 503. Each preview may hold an
    /// outbound connection for up to 10 s, so this bounds the file
    /// descriptors and memory anonymous callers can tie up.
    pub link_preview_max_concurrent: usize,
}

impl Default for LinkPreviewSettings {
    fn default() -> Self {
        LinkPreviewSettings {
            link_preview_allow_private: false,
            link_preview_allowed_ports: Vec::new(),
            link_preview_max_concurrent: 32,
        }
    }
}

impl LinkPreviewSettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        at_least_one([(
            "link_preview_max_concurrent",
            self.link_preview_max_concurrent,
        )])
    }
}
