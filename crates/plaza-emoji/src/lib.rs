//! The Unicode emoji catalog and which part of it the requesting device can draw.
//!
//! Two halves, no HTTP and no database:
//! - [`catalog()`] and [`categories()`] turn the maintained `emojis` crate
//!   into rows the server loads into its tables on first start;
//!   [`catalog_fingerprint()`] tells it when a new crate version changed them.
//! - [`PlatformDetector::detect`] reads the User-Agent and the
//!   `Sec-CH-UA-Platform*` client hints and answers with the highest
//!   [`EmojiVersion`] that OS draws, from the vendor-sourced table in
//!   `support.rs`, so `GET /api/emojis` can leave out what would show as boxes.

#![forbid(unsafe_code)]

mod catalog;
mod platform;
mod support;

use std::fmt;

pub use catalog::{
    CUSTOM_CATEGORY, CatalogEmoji, Category, catalog, catalog_fingerprint, categories,
    is_catalog_emoji,
};
pub use platform::{ClientHints, OsFamily, Platform, PlatformDetector};

/// An Emoji version such as 13.1; ordered.
///
/// This is the UTS #51 Emoji version, not the Unicode version: vendors
/// announce support in Emoji versions, and the two differ before 11.0
/// (grinning face is Emoji 1.0 but Unicode 6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EmojiVersion {
    pub major: u16,
    pub minor: u16,
}

impl EmojiVersion {
    pub const fn new(major: u16, minor: u16) -> Self {
        Self { major, minor }
    }

    /// major * 100 + minor: an integer column databases can compare, so the
    /// listing can filter with `WHERE version_rank <= ?` (minors stay below 100).
    pub fn rank(self) -> i64 {
        i64::from(self.major) * 100 + i64::from(self.minor)
    }

    fn from_crate(v: emojis::EmojiVersion) -> Self {
        let narrow = |n: u32| u16::try_from(n).unwrap_or(u16::MAX);
        Self::new(narrow(v.major()), narrow(v.minor()))
    }
}

impl fmt::Display for EmojiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::EmojiVersion;

    #[test]
    fn version_orders_displays_and_ranks() {
        assert!(EmojiVersion::new(0, 7) < EmojiVersion::new(1, 0));
        assert!(EmojiVersion::new(13, 0) < EmojiVersion::new(13, 1));
        assert_eq!(EmojiVersion::new(13, 1).to_string(), "13.1");
        assert_eq!(EmojiVersion::new(0, 6).to_string(), "0.6");
        assert_eq!(EmojiVersion::new(13, 1).rank(), 1301);
        assert_eq!(EmojiVersion::new(0, 6).rank(), 6);
    }
}
