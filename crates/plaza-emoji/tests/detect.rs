//! Platform detection from real User-Agents and client hints.

use plaza_emoji::{ClientHints, EmojiVersion, OsFamily, Platform, PlatformDetector};

const WINDOWS_CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const WINDOWS_7_CHROME: &str = "Mozilla/5.0 (Windows NT 6.1; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Safari/537.36";
const MAC_SAFARI: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 Safari/605.1.15";
const MAC_FIREFOX: &str =
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:125.0) Gecko/20100101 Firefox/125.0";
const MAC_CHROME: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const ANDROID_14_CHROME: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.6045.163 Mobile Safari/537.36";
const ANDROID_REDUCED_CHROME: &str = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36";
const LINUX_FIREFOX: &str =
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0";

fn iphone(version: &str) -> String {
    format!(
        "Mozilla/5.0 (iPhone; CPU iPhone OS {version} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/{} Mobile/15E148 Safari/604.1",
        version.replace('_', ".")
    )
}

fn detect(user_agent: &str, platform: Option<&str>, version: Option<&str>) -> Platform {
    let hints = ClientHints {
        user_agent: Some(user_agent),
        platform,
        platform_version: version,
    };
    PlatformDetector::new().detect(hints, None)
}

fn assert_platform(p: &Platform, os: OsFamily, version: &str, max: (u16, u16)) {
    assert_eq!((p.os, p.version.as_str()), (os, version), "{p:?}");
    assert_eq!(
        p.max_emoji_version,
        EmojiVersion::new(max.0, max.1),
        "{p:?}"
    );
    assert!(p.is_supported, "{p:?}");
    assert!(!p.source.is_empty());
}

#[test]
fn windows_10_and_11() {
    assert_platform(
        &detect(WINDOWS_CHROME, None, None),
        OsFamily::Windows,
        "10",
        (12, 0),
    );
    let win11 = detect(WINDOWS_CHROME, Some("\"Windows\""), Some("\"15.0.0\""));
    assert_platform(&win11, OsFamily::Windows, "11", (13, 1));
    assert!(win11.max_emoji_version >= EmojiVersion::new(13, 1));
    let win10 = detect(WINDOWS_CHROME, Some("\"Windows\""), Some("\"10.0.0\""));
    assert_platform(&win10, OsFamily::Windows, "10", (12, 0));
    // 0.0.0 (Windows 7/8/8.1) tells nothing: the UA decides.
    let zero = detect(WINDOWS_CHROME, Some("\"Windows\""), Some("\"0.0.0\""));
    assert_platform(&zero, OsFamily::Windows, "10", (12, 0));
    // The hint alone, without a version: Windows, oldest entry.
    let hinted = PlatformDetector::new().detect(
        ClientHints {
            platform: Some("\"Windows\""),
            ..ClientHints::default()
        },
        None,
    );
    assert_platform(&hinted, OsFamily::Windows, "", (12, 0));
}

#[test]
fn old_windows_is_not_supported() {
    let p = detect(WINDOWS_7_CHROME, None, None);
    assert_eq!(
        (p.os, p.version.as_str(), p.is_supported),
        (OsFamily::Windows, "7", false)
    );
    assert_eq!(p.max_emoji_version, EmojiVersion::new(11, 0));
}

#[test]
fn iphone_by_ios_version() {
    assert_platform(
        &detect(&iphone("16_4"), None, None),
        OsFamily::Ios,
        "16.4",
        (15, 0),
    );
    assert_platform(
        &detect(&iphone("17_0"), None, None),
        OsFamily::Ios,
        "17",
        (15, 0),
    );
    assert_platform(
        &detect(&iphone("13_0"), None, None),
        OsFamily::Ios,
        "13",
        (11, 0),
    );
    assert_platform(
        &detect(&iphone("18_4_1"), None, None),
        OsFamily::Ios,
        "18.4.1",
        (16, 0),
    );
    assert_platform(
        &detect(&iphone("14_5"), None, None),
        OsFamily::Ios,
        "14.5",
        (13, 1),
    );
}

#[test]
fn android_by_api_level() {
    let p = detect(ANDROID_14_CHROME, None, None);
    assert_platform(&p, OsFamily::Android, "14", (15, 0));
    // Chrome's reduced UA says Android 10 whatever the release; the hint tells.
    assert_platform(
        &detect(ANDROID_REDUCED_CHROME, None, None),
        OsFamily::Android,
        "10",
        (12, 0),
    );
    let hinted = detect(
        ANDROID_REDUCED_CHROME,
        Some("\"Android\""),
        Some("\"14.0.0\""),
    );
    assert_platform(&hinted, OsFamily::Android, "14", (15, 0));
    let old = detect(
        "Mozilla/5.0 (Linux; Android 6.0; Nexus 5) Chrome/90.0 Mobile",
        None,
        None,
    );
    assert_eq!((old.os, old.is_supported), (OsFamily::Android, false));
}

#[test]
fn mac_with_and_without_version_hint() {
    // Frozen 10.15.7: read as Catalina, the lowest release it can mean.
    assert_platform(
        &detect(MAC_SAFARI, None, None),
        OsFamily::Mac,
        "10.15.7",
        (12, 0),
    );
    assert_platform(
        &detect(MAC_FIREFOX, None, None),
        OsFamily::Mac,
        "10.15.7",
        (12, 0),
    );
    let hinted = detect(MAC_CHROME, Some("\"macOS\""), Some("\"14.4.1\""));
    assert_platform(&hinted, OsFamily::Mac, "14.4.1", (15, 1));
    let sequoia = detect(MAC_CHROME, Some("\"macOS\""), Some("\"15.4.0\""));
    assert_platform(&sequoia, OsFamily::Mac, "15.4", (16, 0));
    // An empty version hint leaves the UA's answer.
    assert_platform(
        &detect(MAC_CHROME, Some("\"macOS\""), Some("\"\"")),
        OsFamily::Mac,
        "10.15.7",
        (12, 0),
    );
}

#[test]
fn linux_and_chromeos() {
    assert_platform(
        &detect(LINUX_FIREFOX, None, None),
        OsFamily::Linux,
        "",
        (15, 0),
    );
    let cros = "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
    assert_platform(&detect(cros, None, None), OsFamily::Linux, "", (15, 0));
    assert_platform(
        &detect(cros, Some("\"Chrome OS\""), Some("\"14541.0.0\"")),
        OsFamily::Linux,
        "",
        (15, 0),
    );
}

#[test]
fn garbage_and_empty_are_unknown() {
    let huge = "Mozilla/5.0 (é".repeat(10_000);
    let inputs = [
        "",
        "-",
        "garbage",
        "\u{0}\u{ffff}(((;;;",
        "curl/8.5.0",
        &huge,
    ];
    for ua in inputs {
        let p = detect(ua, None, None);
        assert_eq!(
            (p.os, p.is_supported),
            (OsFamily::Unknown, false),
            "{ua:.40}"
        );
        assert_eq!(p.max_emoji_version, EmojiVersion::new(11, 0));
        assert_eq!(p.version, "");
    }
    let none = PlatformDetector::new().detect(ClientHints::default(), None);
    assert_eq!((none.os, none.is_supported), (OsFamily::Unknown, false));
    let unknown_hint = detect("garbage", Some("\"Unknown\""), Some("\"1.2.3\""));
    assert_eq!(unknown_hint.os, OsFamily::Unknown);
}

#[test]
fn hostile_headers_never_panic() {
    let parts = [
        "Windows NT 10.0",
        "Android ",
        "14",
        "_",
        ".",
        "\"",
        "Mac OS X 10_",
        "iPhone; CPU iPhone OS ",
        " like Mac OS X",
        "Linux",
        "99999999999999999999",
        "é",
        ";",
        ")",
        "(",
        "\u{0}",
        "macOS",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let detector = PlatformDetector::new();
    for _ in 0..3000 {
        let mut value = String::new();
        for _ in 0..6 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            value.push_str(parts[usize::try_from(seed % parts.len() as u64).unwrap()]);
        }
        let hints = ClientHints {
            user_agent: Some(&value),
            platform: Some(&value),
            platform_version: Some(&value),
        };
        let p = detector.detect(hints, None);
        assert!(p.max_emoji_version <= EmojiVersion::new(16, 0));
        let ua_only = ClientHints {
            user_agent: Some(&value),
            ..ClientHints::default()
        };
        detector.detect(ua_only, OsFamily::parse(&value));
    }
}

#[test]
fn os_override() {
    assert_eq!(OsFamily::parse("windows"), Some(OsFamily::Windows));
    assert_eq!(OsFamily::parse("IOS"), Some(OsFamily::Ios));
    assert_eq!(OsFamily::parse("unknown"), None);
    assert_eq!(OsFamily::parse(""), None);
    for family in ["windows", "mac", "ios", "android", "linux"] {
        assert_eq!(OsFamily::parse(family).map(OsFamily::as_str), Some(family));
    }
    let detector = PlatformDetector::new();
    let with = |ua: &str, platform, version, os: &str| {
        let hints = ClientHints {
            user_agent: Some(ua),
            platform,
            platform_version: version,
        };
        detector.detect(hints, OsFamily::parse(os))
    };
    // A different family than the headers: that family's newest entry.
    assert_platform(
        &with(LINUX_FIREFOX, None, None, "ios"),
        OsFamily::Ios,
        "18.4",
        (16, 0),
    );
    assert_platform(
        &with(WINDOWS_CHROME, None, None, "android"),
        OsFamily::Android,
        "16",
        (16, 0),
    );
    assert_platform(
        &with("", None, None, "windows"),
        OsFamily::Windows,
        "11",
        (13, 1),
    );
    assert_platform(&with("", None, None, "mac"), OsFamily::Mac, "15.4", (16, 0));
    assert_platform(&with("", None, None, "linux"), OsFamily::Linux, "", (15, 0));
    // The same family: the headers' version.
    assert_platform(
        &with(WINDOWS_CHROME, None, None, "windows"),
        OsFamily::Windows,
        "10",
        (12, 0),
    );
    let win11 = with(
        WINDOWS_CHROME,
        Some("\"Windows\""),
        Some("\"15.0.0\""),
        "windows",
    );
    assert_platform(&win11, OsFamily::Windows, "11", (13, 1));
    assert_platform(
        &with(&iphone("16_4"), None, None, "ios"),
        OsFamily::Ios,
        "16.4",
        (15, 0),
    );
}

#[test]
fn detector_is_shareable() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<PlatformDetector>();
}
