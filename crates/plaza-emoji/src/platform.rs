//! Which OS a request comes from, and so which Emoji version it can draw.

use crate::EmojiVersion;
use crate::support::{self, OsVersion, Row};

/// User-Agents longer than this are cut (at a character boundary) before
/// parsing: real ones are far shorter, and parsing time stays bounded.
const MAX_USER_AGENT: usize = 512;
/// Client hint values longer than this are ignored.
const MAX_HINT: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsFamily {
    Windows,
    Mac,
    Ios,
    Android,
    /// Linux desktops and ChromeOS: both draw with Noto Color Emoji.
    Linux,
    Unknown,
}

impl OsFamily {
    const KNOWN: [OsFamily; 5] = [
        Self::Windows,
        Self::Mac,
        Self::Ios,
        Self::Android,
        Self::Linux,
    ];

    /// The `?os=` override values: windows, mac, ios, android, linux (any
    /// case). None for anything else, so a bad value can be rejected.
    pub fn parse(value: &str) -> Option<OsFamily> {
        Self::KNOWN
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(value.trim()))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Windows => "windows",
            Self::Mac => "mac",
            Self::Ios => "ios",
            Self::Android => "android",
            Self::Linux => "linux",
            Self::Unknown => "unknown",
        }
    }
}

/// What the requesting device can draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    pub os: OsFamily,
    /// Human-readable version: "10", "11", "14.4", "14" (Android), "" when unknown.
    pub version: String,
    /// False for an unknown OS or a release older than the support table;
    /// `max_emoji_version` is then a conservative 11.0.
    pub is_supported: bool,
    pub max_emoji_version: EmojiVersion,
    /// Where the figure comes from (vendor release notes), for the documentation.
    pub source: &'static str,
}

/// The request's headers that tell the platform; `None` for a header that is
/// absent or not valid text.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClientHints<'a> {
    pub user_agent: Option<&'a str>,
    /// `Sec-CH-UA-Platform`, quoted like "\"Windows\"".
    pub platform: Option<&'a str>,
    /// `Sec-CH-UA-Platform-Version`, quoted like "\"15.0.0\"".
    pub platform_version: Option<&'a str>,
}

/// Holds the woothee parser (it is not free to build); build once and share
/// (it is Send + Sync).
///
/// Chromium browsers send `Sec-CH-UA-Platform` on every request, but
/// `Sec-CH-UA-Platform-Version` only after the server asked for it with
/// `Accept-CH: Sec-CH-UA-Platform-Version` (add `Critical-CH` to have it on
/// the first request). Without it Windows 11 looks like Windows 10, every Mac
/// like macOS 10.15.7 and Chrome on Android like Android 10, and the answers
/// are the conservative ones for those.
pub struct PlatformDetector {
    parser: woothee::parser::Parser,
}

impl Default for PlatformDetector {
    fn default() -> Self {
        Self::new()
    }
}

impl PlatformDetector {
    pub fn new() -> Self {
        Self {
            parser: woothee::parser::Parser::new(),
        }
    }

    /// The platform of a request; `family_override` (the `?os=` value) wins
    /// over the headers for the family; the version then comes from the
    /// headers when they name the same family, else the family's newest entry
    /// in the table.
    ///
    /// A known family whose release the headers do not tell gets its oldest
    /// table entry, with `version` "". Never panics, whatever the headers hold.
    pub fn detect(&self, hints: ClientHints<'_>, family_override: Option<OsFamily>) -> Platform {
        let (family, version) = self.read_headers(hints);
        match family_override {
            Some(wanted) if wanted != family => newest(wanted),
            _ => resolve(family, version),
        }
    }

    fn read_headers(&self, hints: ClientHints<'_>) -> (OsFamily, Option<OsVersion>) {
        let (ua_family, ua_version) = hints
            .user_agent
            .map_or((OsFamily::Unknown, None), |ua| self.read_user_agent(ua));
        let Some(family) = hints.platform.and_then(unquote).and_then(hinted_family) else {
            return (ua_family, ua_version);
        };
        let ua_version = ua_version.filter(|_| family == ua_family);
        let hinted = hints
            .platform_version
            .and_then(unquote)
            .and_then(OsVersion::parse);
        let version = match (family, hinted) {
            // Windows 11 sends Windows 10's User-Agent; its platform version
            // is 13 or more, Windows 10's 1 to 12 (0 is Windows 7/8/8.1 and
            // adds nothing to the User-Agent).
            (OsFamily::Windows, Some(v)) if v.major >= 13 => Some(OsVersion::new(11, 0, 0)),
            (OsFamily::Windows, Some(v)) if v.major >= 1 => Some(OsVersion::new(10, 0, 0)),
            (OsFamily::Mac | OsFamily::Android, Some(v)) if v.major > 0 => Some(v),
            _ => ua_version,
        };
        (family, version)
    }

    fn read_user_agent(&self, user_agent: &str) -> (OsFamily, Option<OsVersion>) {
        let mut end = user_agent.len().min(MAX_USER_AGENT);
        while !user_agent.is_char_boundary(end) {
            end -= 1;
        }
        let Some(parsed) = self.parser.parse(&user_agent[..end]) else {
            return (OsFamily::Unknown, None);
        };
        let version = OsVersion::parse(&parsed.os_version);
        match parsed.os {
            // Browsers froze the macOS version at 10.15.7 (Firefox: 10.15).
            // It stands for "Catalina or later", read as its lowest release:
            // Emoji 12.0, never a box, but Macs that send no version hint
            // (Safari, Firefox) miss Emoji 13.0 and later.
            "Mac OSX" => (OsFamily::Mac, version.map(unfreeze_mac)),
            // Safari on iOS 26 freezes the UA at iOS 18.6: read as 18.6,
            // which is right for 26.0 and conservative after it.
            "iPhone" | "iPad" | "iPod" | "iOS" => (OsFamily::Ios, version),
            // Chrome's reduced UA always says "Android 10; K": read as
            // Android 10 (Emoji 12.0) unless the version hint tells more.
            "Android" => (OsFamily::Android, version),
            "Linux" | "ChromeOS" => (OsFamily::Linux, None),
            os => match os.strip_prefix("Windows ") {
                Some(v @ ("10" | "8.1" | "8" | "7")) => (OsFamily::Windows, OsVersion::parse(v)),
                Some("UNKNOWN Ver") => (OsFamily::Windows, None),
                Some("Phone OS" | "CE") | None => (OsFamily::Unknown, None),
                // Vista, XP and older: before every row.
                Some(_) => (OsFamily::Windows, Some(OsVersion::new(0, 0, 0))),
            },
        }
    }
}

fn unfreeze_mac(v: OsVersion) -> OsVersion {
    if (v.major, v.minor) == (10, 15) {
        OsVersion::new(10, 15, 7)
    } else {
        v
    }
}

/// A structured-header string without its quotes; None when too long.
fn unquote(value: &str) -> Option<&str> {
    if value.len() > MAX_HINT {
        return None;
    }
    let value = value.trim();
    let inner = value.strip_prefix('"').and_then(|v| v.strip_suffix('"'));
    Some(inner.unwrap_or(value).trim())
}

/// `Sec-CH-UA-Platform` values; "Unknown" and others tell nothing.
fn hinted_family(platform: &str) -> Option<OsFamily> {
    use OsFamily::{Android, Ios, Linux, Mac, Windows};
    const NAMES: [(&str, OsFamily); 7] = [
        ("Windows", Windows),
        ("macOS", Mac),
        ("iOS", Ios),
        ("Android", Android),
        ("Linux", Linux),
        ("Chrome OS", Linux),
        ("Chromium OS", Linux),
    ];
    NAMES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(platform))
        .map(|&(_, family)| family)
}

fn display(version: OsVersion) -> String {
    if version == OsVersion::new(0, 0, 0) {
        String::new()
    } else {
        version.to_string()
    }
}

/// The answer for a row of the table; no row: not supported, the fallback.
fn answer(os: OsFamily, version: String, row: Option<&Row>) -> Platform {
    let (is_supported, max_emoji_version, source) = match row {
        Some(row) => (true, row.emoji, row.source),
        None => (false, support::FALLBACK, support::FALLBACK_SOURCE),
    };
    Platform {
        os,
        version,
        is_supported,
        max_emoji_version,
        source,
    }
}

fn resolve(family: OsFamily, version: Option<OsVersion>) -> Platform {
    let Some(version) = version else {
        return answer(family, String::new(), support::oldest(family));
    };
    let key = if family == OsFamily::Android {
        support::android_api_level(version).map(|api| OsVersion::new(api, 0, 0))
    } else {
        Some(version)
    };
    answer(
        family,
        display(version),
        key.and_then(|key| support::lookup(family, key)),
    )
}

fn newest(family: OsFamily) -> Platform {
    let row = support::newest(family);
    let release = match row {
        Some(row) if family == OsFamily::Android => support::android_release(row.since.major),
        row => row.map(|row| row.since),
    };
    answer(family, release.map(display).unwrap_or_default(), row)
}
