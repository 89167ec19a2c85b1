//! Which Emoji version each OS release draws, kept as data with its source.
//!
//! A release draws an emoji when its system emoji font has it; browsers use
//! that font. Each row says: from this OS release on, the font draws this
//! Emoji version. Rows of a family are in ascending order; the answer for a
//! release is the last row at or below it. Only releases whose new emoji
//! came with a vendor announcement are listed; in-between releases inherit
//! the row below. When unsure, a row is left out: a lower answer hides a few
//! new emojis, a higher one shows empty boxes.

use std::fmt;

use crate::{EmojiVersion, OsFamily};

/// An OS release number, "14.4.1" or "10_15_7"; Android rows use the API level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct OsVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl OsVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// Up to three numbers separated by '.' or '_'; parsing stops at the first
    /// part that is not a plain number (of at most 9 digits, so no overflow).
    /// `None` unless the first part is one.
    pub fn parse(s: &str) -> Option<Self> {
        let number = |p: &str| {
            let plain = !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit());
            if plain { p.parse::<u32>().ok() } else { None }
        };
        let mut parts = s.split(['.', '_']).map(number);
        let major = parts.next().flatten()?;
        let minor = parts.next().flatten();
        let patch = minor.and_then(|_| parts.next().flatten());
        Some(Self::new(major, minor.unwrap_or(0), patch.unwrap_or(0)))
    }
}

/// "14.4.1", "14.4", "14": trailing zero parts left out.
impl fmt::Display for OsVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.major)?;
        if self.minor != 0 || self.patch != 0 {
            write!(f, ".{}", self.minor)?;
        }
        if self.patch != 0 {
            write!(f, ".{}", self.patch)?;
        }
        Ok(())
    }
}

pub(crate) struct Row {
    pub family: OsFamily,
    /// The first release with this support (Android: the API level).
    pub since: OsVersion,
    pub emoji: EmojiVersion,
    pub source: &'static str,
}

const fn row(
    family: OsFamily,
    since: (u32, u32, u32),
    emoji: (u16, u16),
    source: &'static str,
) -> Row {
    Row {
        family,
        since: OsVersion::new(since.0, since.1, since.2),
        emoji: EmojiVersion::new(emoji.0, emoji.1),
        source,
    }
}

use OsFamily::{Android, Ios, Linux, Mac, Windows};

#[rustfmt::skip]
pub(crate) static SUPPORT: &[Row] = &[
    row(Windows, (10, 0, 0), (12, 0), "Windows 10 May 2019 Update (1903) added Emoji 12.0; Windows 10 got no later emoji. Windows 10 before 1903 drew less, but the User-Agent cannot tell them apart"),
    // Windows 11 reports Sec-CH-UA-Platform-Version 13.0.0 or more (Microsoft
    // Learn, "Detect Windows 11 using User-Agent Client Hints"). Later releases
    // added Emoji 14.0-15.1, but which platform version each maps to is not
    // pinned here, so every Windows 11 gets 13.1.
    row(Windows, (11, 0, 0), (13, 1), "Windows 11 (21H2) shipped Emoji 13.1 (Fluent emoji, November 2021 update KB5007262); later Windows 11 emoji releases are not mapped to platform versions"),
    row(Mac, (10, 12, 2), (4, 0), "macOS Sierra 10.12.2 release notes: new emoji (Emoji 4.0)"),
    row(Mac, (10, 13, 1), (5, 0), "macOS High Sierra 10.13.1 release notes: new emoji (Emoji 5.0)"),
    row(Mac, (10, 14, 1), (11, 0), "macOS Mojave 10.14.1 release notes: new emoji (Emoji 11.0)"),
    row(Mac, (10, 15, 1), (12, 0), "macOS Catalina 10.15.1 release notes: new emoji (Emoji 12.0)"),
    row(Mac, (11, 0, 0), (13, 0), "macOS Big Sur 11.0 (11.0.1) release: Emoji 13.0"),
    row(Mac, (11, 3, 0), (13, 1), "macOS Big Sur 11.3 release notes: new emoji (Emoji 13.1)"),
    row(Mac, (12, 3, 0), (14, 0), "macOS Monterey 12.3 release notes: new emoji (Emoji 14.0)"),
    row(Mac, (13, 3, 0), (15, 0), "macOS Ventura 13.3 release notes: 21 new emoji (Emoji 15.0)"),
    row(Mac, (14, 4, 0), (15, 1), "macOS Sonoma 14.4 release notes: new emoji (Emoji 15.1)"),
    row(Mac, (15, 4, 0), (16, 0), "macOS Sequoia 15.4 release notes: new emoji (Emoji 16.0)"),
    row(Ios, (10, 2, 0), (4, 0), "iOS 10.2 release notes: over 100 new and redesigned emoji (Emoji 4.0)"),
    row(Ios, (11, 1, 0), (5, 0), "iOS 11.1 release notes: over 70 new emoji (Emoji 5.0)"),
    row(Ios, (12, 1, 0), (11, 0), "iOS 12.1 release notes: over 70 new emoji (Emoji 11.0)"),
    row(Ios, (13, 2, 0), (12, 0), "iOS 13.2 release notes: over 70 new or updated emoji (Emoji 12.0)"),
    row(Ios, (14, 2, 0), (13, 0), "iOS 14.2 release notes: over 100 new emoji (Emoji 13.0)"),
    row(Ios, (14, 5, 0), (13, 1), "iOS 14.5 release notes: new emoji (Emoji 13.1)"),
    row(Ios, (15, 4, 0), (14, 0), "iOS 15.4 release notes: 37 new emoji (Emoji 14.0)"),
    row(Ios, (16, 4, 0), (15, 0), "iOS 16.4 release notes: 21 new emoji (Emoji 15.0)"),
    row(Ios, (17, 4, 0), (15, 1), "iOS 17.4 release notes: new emoji (Emoji 15.1)"),
    row(Ios, (18, 4, 0), (16, 0), "iOS 18.4 release notes: new emoji (Emoji 16.0)"),
    row(Android, (24, 0, 0), (3, 0), "Android 7.0 Nougat (API 24) release: Unicode 9.0 emoji (Emoji 3.0)"),
    row(Android, (25, 0, 0), (4, 0), "Android 7.1 Nougat (API 25) release: Emoji 4.0"),
    row(Android, (26, 0, 0), (5, 0), "Android 8.0 Oreo (API 26) release: redesigned emoji, Emoji 5.0"),
    row(Android, (28, 0, 0), (11, 0), "Android 9 Pie (API 28) release: Emoji 11.0"),
    row(Android, (29, 0, 0), (12, 0), "Android 10 (API 29) release: Emoji 12.0"),
    row(Android, (30, 0, 0), (13, 0), "Android 11 (API 30) release: Emoji 13.0"),
    row(Android, (31, 0, 0), (13, 1), "Android 12 (API 31) release: Emoji 13.1"),
    row(Android, (33, 0, 0), (14, 0), "Android 13 (API 33) release: Emoji 14.0"),
    row(Android, (34, 0, 0), (15, 0), "Android 14 (API 34) release: Emoji 15.0"),
    row(Android, (35, 0, 0), (15, 1), "Android 15 (API 35) release: Emoji 15.1"),
    row(Android, (36, 0, 0), (16, 0), "Android 16 (API 36) release: Emoji 16.0"),
    row(Linux, (0, 0, 0), (15, 0), "Noto Color Emoji 2.038 (March 2023) draws Emoji 15.0; Debian 12 ships 2.042 (Emoji 15.1), 15.0 is kept for distributions a release behind"),
];

/// Android release → API level: the UA and the client hint give the release,
/// the emoji rows are by API level. Releases above the last entry count as it.
static ANDROID_API_LEVELS: &[(OsVersion, u32)] = &[
    (OsVersion::new(7, 0, 0), 24),
    (OsVersion::new(7, 1, 0), 25),
    (OsVersion::new(8, 0, 0), 26),
    (OsVersion::new(8, 1, 0), 27),
    (OsVersion::new(9, 0, 0), 28),
    (OsVersion::new(10, 0, 0), 29),
    (OsVersion::new(11, 0, 0), 30),
    (OsVersion::new(12, 0, 0), 31),
    (OsVersion::new(13, 0, 0), 33),
    (OsVersion::new(14, 0, 0), 34),
    (OsVersion::new(15, 0, 0), 35),
    (OsVersion::new(16, 0, 0), 36),
];

/// Used for an unknown OS, and for releases older than a family's first row.
pub(crate) const FALLBACK: EmojiVersion = EmojiVersion::new(11, 0);
pub(crate) const FALLBACK_SOURCE: &str = "Unknown or older OS: Emoji 11.0 (2018) is drawn by every Windows, Apple and Android release their vendors still support";

pub(crate) fn android_api_level(release: OsVersion) -> Option<u32> {
    ANDROID_API_LEVELS
        .iter()
        .rev()
        .find(|(v, _)| *v <= release)
        .map(|&(_, api)| api)
}

pub(crate) fn android_release(api: u32) -> Option<OsVersion> {
    ANDROID_API_LEVELS
        .iter()
        .find(|&&(_, level)| level == api)
        .map(|&(v, _)| v)
}

fn rows(family: OsFamily) -> impl DoubleEndedIterator<Item = &'static Row> {
    SUPPORT.iter().filter(move |r| r.family == family)
}

/// The row in force for `version` (for Android: the API level).
pub(crate) fn lookup(family: OsFamily, version: OsVersion) -> Option<&'static Row> {
    rows(family).rev().find(|r| r.since <= version)
}

pub(crate) fn oldest(family: OsFamily) -> Option<&'static Row> {
    rows(family).next()
}

pub(crate) fn newest(family: OsFamily) -> Option<&'static Row> {
    rows(family).next_back()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_ascend_within_each_family() {
        for pair in SUPPORT.windows(2) {
            if pair[0].family == pair[1].family {
                assert!(pair[0].since < pair[1].since, "{:?}", pair[1].since);
                assert!(pair[0].emoji < pair[1].emoji, "{}", pair[1].source);
            }
        }
        assert!(
            ANDROID_API_LEVELS
                .windows(2)
                .all(|p| p[0].0 < p[1].0 && p[0].1 < p[1].1)
        );
        let newest_known = crate::catalog().iter().map(|e| e.version).max().unwrap();
        assert!(
            SUPPORT
                .iter()
                .all(|r| r.emoji <= newest_known && !r.source.is_empty())
        );
    }

    #[test]
    fn versions_parse_leniently() {
        assert_eq!(OsVersion::parse("10_15_7"), Some(OsVersion::new(10, 15, 7)));
        assert_eq!(OsVersion::parse("14.4.1.9"), Some(OsVersion::new(14, 4, 1)));
        assert_eq!(OsVersion::parse("14"), Some(OsVersion::new(14, 0, 0)));
        assert_eq!(OsVersion::parse("12.x.3"), Some(OsVersion::new(12, 0, 0)));
        assert_eq!(OsVersion::parse("99999999999"), None);
        assert_eq!(OsVersion::parse("-1"), None);
        assert_eq!(OsVersion::parse(""), None);
        assert_eq!(OsVersion::new(14, 4, 0).to_string(), "14.4");
        assert_eq!(OsVersion::new(10, 15, 7).to_string(), "10.15.7");
        assert_eq!(OsVersion::new(14, 0, 0).to_string(), "14");
    }

    #[test]
    fn android_releases_map_to_api_levels() {
        let api = |s| android_api_level(OsVersion::parse(s).unwrap());
        assert_eq!(api("14"), Some(34));
        assert_eq!(api("8.1.0"), Some(27));
        assert_eq!(api("12.1"), Some(31));
        assert_eq!(api("17"), Some(36));
        assert_eq!(api("6.0"), None);
        assert_eq!(android_release(36), Some(OsVersion::new(16, 0, 0)));
    }
}
