//! Settings of one section: holding new accounts' first posts and replies
//! for a moderator.

use serde::{Deserialize, Serialize};

use super::error::SettingsError;

/// Most of an account's first posts and replies that can be held.
pub const MAX_NEW_ACCOUNT_HOLD_COUNT: u32 = 50;

/// The new-account hold (DECISIONS.md "The front door (round 5)").
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HoldSettings {
    /// How many of each account's first posts and replies are stored
    /// `pending` until a moderator approves one (0 to 50; 0: none). The
    /// default of the site setting `newAccountHoldCount`.
    pub new_account_hold_count: u32,
}

impl HoldSettings {
    pub(super) fn validate(&self) -> Result<(), SettingsError> {
        if self.new_account_hold_count > MAX_NEW_ACCOUNT_HOLD_COUNT {
            return Err(SettingsError::new(
                "new_account_hold_count",
                format!("must be 0 to {MAX_NEW_ACCOUNT_HOLD_COUNT}"),
            ));
        }
        Ok(())
    }
}
