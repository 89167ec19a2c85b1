//! Behaviour of the public card API: golden SVGs, PNG output, determinism
//! across processes, fallback, and hostile quotes and authors.

use base64::Engine as _;
use plaza_og_image::{
    HEIGHT, MAX_AUTHOR_CHARS, MAX_QUOTE_CHARS, WIDTH, fallback_svg, render_png, render_svg,
};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::process::Command;

/// (seed, quote, author) pinned by golden files.
fn golden_cards() -> Vec<(String, String, String)> {
    [
        (
            "alice",
            "The best way to predict the future is to create it.",
            "Peter Drucker",
        ),
        ("bob", "Short.", ""),
        (
            "carol",
            "千里之行，始于足下。知之为知之，不知为不知，是知也。",
            "孔子",
        ),
        ("dave", "الحياة جميلة عندما نعيشها مع الأصدقاء.", "ابن خلدون"),
        ("erin", "שלום עולם, זה ציטוט בעברית.", "אנונימי"),
        ("frank", "Emoji everywhere 😀🚀👍 👩‍👩‍👧 🇫🇷 ❤️", "Unicode 🙂"),
        (
            "grace",
            "<script>alert('x')</script> & \"quotes\" \u{0}\u{7}",
            "<b onload=\"x\">",
        ),
        ("", "", ""),
    ]
    .iter()
    .map(|(s, q, a)| (s.to_string(), q.to_string(), a.to_string()))
    .chain([(
        "heidi".to_string(),
        "Pneumonoultramicroscopicsilicovolcanoconiosis".repeat(20),
        "A".repeat(400),
    )])
    .collect()
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares against the committed files; `PLAZA_UPDATE_GOLDEN=1` rewrites
/// them after a deliberate change.
#[test]
fn golden_svgs_match() {
    let update = std::env::var_os("PLAZA_UPDATE_GOLDEN").is_some();
    let mut cases: Vec<(String, String)> = golden_cards()
        .iter()
        .enumerate()
        .map(|(i, (s, q, a))| (format!("og-{i:02}.svg"), render_svg(s, q, a)))
        .collect();
    cases.push((
        "fallback.svg".to_string(),
        fallback_svg("Plaza", "Where communities meet"),
    ));
    for (name, svg) in cases {
        let path = golden_dir().join(&name);
        if update {
            std::fs::write(&path, &svg).expect("write golden");
            continue;
        }
        let expected = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("missing golden {}: {e}", path.display()));
        assert_eq!(svg, expected, "{name} changed");
    }
}

fn decode_png(bytes: &[u8]) -> (u32, u32, png::ColorType) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let reader = decoder.read_info().expect("valid PNG header");
    let info = reader.info();
    (info.width, info.height, info.color_type)
}

#[test]
fn png_decodes_to_1200_by_630() {
    for (seed, quote, author) in golden_cards() {
        let png = render_png(&render_svg(&seed, &quote, &author)).expect("renders");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let (w, h, colour) = decode_png(&png);
        assert_eq!((w, h), (WIDTH, HEIGHT));
        assert_eq!(colour, png::ColorType::Rgb, "cards are opaque");
    }
    let fallback = render_png(&fallback_svg("Plaza", "tagline")).expect("renders");
    assert_eq!(decode_png(&fallback).0, WIDTH);
}

#[test]
fn render_png_errors_instead_of_panicking() {
    assert!(render_png("not svg").is_err());
    assert!(render_png("").is_err());
    let huge = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100000\" height=\"100000\"/>";
    assert!(render_png(huge).is_err());
    // A file reference is ignored, never read.
    let file = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\">\
                <image href=\"/etc/passwd\" width=\"10\" height=\"10\"/></svg>";
    let png = render_png(file).expect("renders without the image");
    assert_eq!(decode_png(&png).0, 10);
}

#[test]
fn same_input_same_svg_and_different_seeds_differ() {
    let a = render_svg("x", "q", "a");
    assert_eq!(a, render_svg("x", "q", "a"));
    assert_ne!(a, render_svg("y", "q", "a"));
    assert_eq!(
        render_png(&a).expect("renders"),
        render_png(&a).expect("renders")
    );
}

#[test]
fn avatar_is_embedded_as_base64_svg() {
    let svg = render_svg("embedded", "q", "a");
    let start = svg
        .find("href=\"data:image/svg+xml;base64,")
        .expect("data URI")
        + "href=\"data:image/svg+xml;base64,".len();
    let end = start + svg[start..].find('"').expect("closing quote");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(&svg[start..end])
        .expect("base64");
    let avatar = plaza_avatar::render_svg("embedded", 300).expect("valid");
    assert_eq!(String::from_utf8(decoded).expect("utf-8"), avatar);
}

#[test]
fn hostile_quote_and_author_are_escaped_and_bounded() {
    let big = "<script>alert(1)</script>\u{0}\u{1b}[2J\u{202e}&amp;\"'>".repeat(4_000);
    assert!(big.len() > 100_000);
    let cases = [
        (big.clone(), big.clone()),
        ("a".repeat(100_000), "b".repeat(100_000)),
        ("\u{7}".repeat(100_000), "\u{0}".repeat(100_000)),
        ("]]><!-- --><![CDATA[".to_string(), "<?xml ?>".to_string()),
    ];
    for (quote, author) in cases {
        let started = std::time::Instant::now();
        let svg = render_svg("hostile", &quote, &author);
        assert!(started.elapsed().as_secs() < 2, "slow on hostile input");
        let doc = roxmltree::Document::parse(&svg).expect("well-formed");
        let mut text_chars = 0;
        for node in doc.descendants().filter(|n| n.is_element()) {
            let name = node.tag_name().name();
            assert!(
                !matches!(name, "script" | "foreignObject" | "a" | "style"),
                "{name}"
            );
            for attr in node.attributes() {
                assert!(!attr.name().starts_with("on"), "{}", attr.name());
            }
            if name == "text" {
                let text = node.text().unwrap_or_default();
                assert!(!text.chars().any(|c| c.is_control()), "control char kept");
                assert!(!text.contains('\u{202e}'), "bidi override kept");
                text_chars += text.chars().count();
            }
        }
        assert!(
            text_chars <= MAX_QUOTE_CHARS + MAX_AUTHOR_CHARS + 4,
            "{text_chars} characters of text"
        );
        assert!(svg.len() < 64 * 1024, "{} bytes", svg.len());
        assert!(render_png(&svg).is_ok());
    }
}

#[test]
fn fallback_is_a_dark_card_with_title_and_tagline() {
    let svg = fallback_svg("Plaza <admin>", "A place & a \"tagline\"");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed");
    let root = doc.root_element();
    assert_eq!(root.attribute("width"), Some("1200"));
    assert_eq!(root.attribute("height"), Some("630"));
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(texts, ["Plaza <admin>", "A place & a \"tagline\""]);
    let long = fallback_svg(&"T".repeat(10_000), &"t\u{0}".repeat(10_000));
    assert!(long.len() < 4 * 1024);
    assert!(long.contains('…'));
}

/// Digests of a few cards, printed by the child processes of
/// `cards_are_identical_across_processes`.
fn digests() -> String {
    let mut out = String::new();
    for (seed, quote, author) in golden_cards().into_iter().take(4) {
        let svg = render_svg(&seed, &quote, &author);
        let png = render_png(&svg).expect("renders");
        let hex = |bytes: &[u8]| {
            Sha256::digest(bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        out.push_str(&format!(
            "digest {seed}: svg {} png {}\n",
            hex(svg.as_bytes()),
            hex(&png)
        ));
    }
    out
}

/// Only prints when run as a child of the test below.
#[test]
fn child_prints_digests() {
    if std::env::var_os("PLAZA_OG_DIGEST_CHILD").is_some() {
        print!("{}", digests());
    }
}

#[test]
fn cards_are_identical_across_processes() {
    let run = || {
        let output = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "child_prints_digests",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("PLAZA_OG_DIGEST_CHILD", "1")
            .output()
            .expect("child runs");
        assert!(output.status.success());
        String::from_utf8_lossy(&output.stdout)
            .lines()
            // The harness may print its "test ... " prefix on the same line.
            .filter_map(|l| l.find("digest ").map(|i| format!("{}\n", &l[i..])))
            .collect::<String>()
    };
    let first = run();
    let second = run();
    assert_eq!(first.lines().count(), 4, "{first}");
    assert_eq!(first, second);
    assert_eq!(first, digests());
}

/// The SVG this `RENDERER_VERSION` makes, pinned: when the drawing or the
/// text layout change it, this fails until the version is raised and the
/// new digest pinned, so that caches keyed by the version let go of old
/// cards. (PNG bytes are not pinned: the rasteriser's may differ between
/// processors.)
#[test]
fn the_renderer_version_pins_the_output() {
    let mut hasher = Sha256::new();
    for (seed, quote, author) in golden_cards() {
        hasher.update(render_svg(&seed, &quote, &author).as_bytes());
    }
    let digest: String = hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(
        (plaza_og_image::RENDERER_VERSION, digest.as_str()),
        (
            "1",
            "219e06e047940fd4b213e8522f24861e46abb5ee30c8c8584ec96b5fddf59094"
        ),
        "the cards changed: raise RENDERER_VERSION and pin the new digest"
    );
}

/// Parameters are normalised by their clean forms: a card from cleaned text
/// is the card of the text as given.
#[test]
fn cleaning_first_gives_the_same_card() {
    for (seed, quote, author) in golden_cards() {
        let cleaned = render_svg(
            &seed,
            &plaza_og_image::clean_quote(&quote),
            &plaza_og_image::clean_author(&author),
        );
        assert_eq!(cleaned, render_svg(&seed, &quote, &author), "{seed}");
    }
    let spaced = render_svg("s", "  Hello \n\t world  ", "\u{202e}Me ");
    assert_eq!(spaced, render_svg("s", "Hello world", "Me"));
}
