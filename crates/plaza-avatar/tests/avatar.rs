//! Behaviour of the public avatar API: golden files, variety, size limits and
//! the safety of the markup.

use plaza_avatar::{AvatarError, DEFAULT_SIZE, MAX_SIZE, MIN_SIZE, render_svg};
use std::collections::HashSet;
use std::path::PathBuf;

/// Seeds pinned by golden files; they include hostile and unusual strings.
const GOLDEN_SEEDS: [&str; 12] = [
    "alice",
    "bob",
    "Plaza",
    "seed-42",
    "",
    " ",
    "Ünïcødé 😀 شكرا 你好",
    "<script>alert(1)</script>",
    "\"quoted\" & 'apostrophe'",
    "x\u{0}y\u{7}z",
    "https://example.com/a?b=c",
    "0123456789",
];

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares against the committed files; `PLAZA_UPDATE_GOLDEN=1` rewrites them
/// (only after a deliberate change of the drawing, which needs a new major
/// release).
#[test]
fn golden_files_match() {
    let update = std::env::var_os("PLAZA_UPDATE_GOLDEN").is_some();
    for (index, seed) in GOLDEN_SEEDS.iter().enumerate() {
        for size in [DEFAULT_SIZE, MIN_SIZE, 333, MAX_SIZE] {
            let svg = render_svg(seed, size).expect("valid size");
            let path = golden_dir().join(format!("avatar-{index:02}-{size}.svg"));
            if update {
                std::fs::write(&path, &svg).expect("write golden");
                continue;
            }
            let expected = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("missing golden {}: {e}", path.display()));
            assert_eq!(
                svg, expected,
                "avatar for seed #{index} size {size} changed"
            );
        }
    }
}

#[test]
fn same_seed_same_bytes_and_size_changes_only_the_frame() {
    let a = render_svg("determinism", 200).expect("valid");
    let b = render_svg("determinism", 200).expect("valid");
    assert_eq!(a, b);
    let big = render_svg("determinism", 400).expect("valid");
    assert_ne!(a, big);
    // Only the frame differs: the drawing after the scale group is the same.
    let body = |s: &str| s.split_once(")\">").map(|(_, rest)| rest.to_string());
    assert_eq!(body(&a), body(&big));
    assert!(body(&a).is_some());
}

#[test]
fn ten_thousand_seeds_give_at_least_9900_distinct_images() {
    let distinct: HashSet<String> = (0..10_000)
        .map(|i| render_svg(&format!("user-{i}"), DEFAULT_SIZE).expect("valid"))
        .collect();
    assert!(distinct.len() >= 9_900, "only {} distinct", distinct.len());
    let distinct_choices: HashSet<_> = (0..10_000)
        .map(|i| plaza_avatar::choices(&format!("{i}")))
        .collect();
    assert!(
        distinct_choices.len() >= 9_900,
        "only {} distinct",
        distinct_choices.len()
    );
}

#[test]
fn size_limits() {
    assert!(render_svg("s", MIN_SIZE).is_ok());
    assert!(render_svg("s", MAX_SIZE).is_ok());
    assert_eq!(
        render_svg("s", MIN_SIZE - 1),
        Err(AvatarError::SizeOutOfRange(49))
    );
    assert_eq!(
        render_svg("s", MAX_SIZE + 1),
        Err(AvatarError::SizeOutOfRange(1001))
    );
    assert_eq!(render_svg("s", 0), Err(AvatarError::SizeOutOfRange(0)));
    assert_eq!(
        render_svg("s", u32::MAX),
        Err(AvatarError::SizeOutOfRange(u64::from(u32::MAX)))
    );
    let message = AvatarError::SizeOutOfRange(7).to_string();
    assert!(
        message.contains("50") && message.contains("1000"),
        "{message}"
    );
}

#[test]
fn output_is_well_formed_square_svg_without_active_content() {
    let long_seed = "🙂<&>\"'".repeat(20_000);
    let seeds = GOLDEN_SEEDS
        .iter()
        .map(|s| s.to_string())
        .chain([long_seed])
        .chain((0..300).map(|i| format!("variety-{i}")));
    for seed in seeds {
        for size in [MIN_SIZE, 123, MAX_SIZE] {
            let svg = render_svg(&seed, size).expect("valid");
            let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
            let root = doc.root_element();
            assert_eq!(root.tag_name().name(), "svg");
            assert_eq!(
                root.tag_name().namespace(),
                Some("http://www.w3.org/2000/svg")
            );
            let size_text = size.to_string();
            assert_eq!(root.attribute("width"), Some(size_text.as_str()));
            assert_eq!(root.attribute("height"), Some(size_text.as_str()));
            assert_eq!(
                root.attribute("viewBox"),
                Some(format!("0 0 {size} {size}").as_str())
            );
            for node in doc.descendants().filter(|n| n.is_element()) {
                let name = node.tag_name().name();
                assert!(
                    !matches!(
                        name,
                        "script" | "foreignObject" | "image" | "use" | "a" | "style"
                    ),
                    "unexpected element {name}"
                );
                for attr in node.attributes() {
                    assert!(
                        !attr.name().starts_with("on"),
                        "event handler {}",
                        attr.name()
                    );
                    assert!(attr.name() != "href", "reference in {name}");
                    assert!(!attr.value().contains("url("), "url() in {name}");
                }
                assert!(
                    node.text().is_none_or(|t| t.trim().is_empty()),
                    "text in {name}"
                );
            }
            assert!(svg.len() < 8 * 1024, "{} bytes", svg.len());
        }
    }
}

/// The output this `RENDERER_VERSION` draws, pinned: when the drawing
/// changes, this fails until the version is raised and the new digest
/// pinned, so that caches keyed by the version let go of old avatars.
#[test]
fn the_renderer_version_pins_the_output() {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for seed in GOLDEN_SEEDS {
        for size in [DEFAULT_SIZE, MIN_SIZE, 333, MAX_SIZE] {
            hasher.update(render_svg(seed, size).expect("valid size"));
        }
    }
    let digest: String = hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(
        (plaza_avatar::RENDERER_VERSION, digest.as_str()),
        (
            "1",
            "b059ffe5944a31011fe8fe1ea13d538c706e6de5c59afa480f4248e03eb0415e"
        ),
        "the avatars changed: raise RENDERER_VERSION and pin the new digest"
    );
}
