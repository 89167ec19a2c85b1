//! Fuzzes the HTML metadata extractor: it must never panic, and its output
//! must keep the guarantees the link-preview endpoint relies on (bounded,
//! trimmed plain text; an absolute http(s) image URL).

#![no_main]

use libfuzzer_sys::fuzz_target;
use plaza_link_preview::extract;
use plaza_link_preview::extract::{MAX_DESCRIPTION_CHARS, MAX_IMAGE_URL_LEN, MAX_TITLE_CHARS};

/// Content types the first input byte chooses from, so the header path of
/// charset detection is fuzzed too.
const CONTENT_TYPES: [Option<&str>; 4] = [
    None,
    Some("text/html; charset=utf-8"),
    Some("text/html; charset=shift_jis"),
    Some("text/html; charset=utf-16le"),
];

fuzz_target!(|data: &[u8]| {
    let Ok(page) = url::Url::parse("https://fuzz.example/dir/page.html") else {
        return;
    };
    let (content_type, html) = match data.split_first() {
        Some((selector, rest)) => (CONTENT_TYPES[usize::from(*selector) % CONTENT_TYPES.len()], rest),
        None => (None, data),
    };
    let metadata = extract(html, content_type, &page);
    assert!(metadata.title.chars().count() <= MAX_TITLE_CHARS);
    assert!(metadata.description.chars().count() <= MAX_DESCRIPTION_CHARS);
    assert_eq!(metadata.title.trim(), metadata.title);
    assert_eq!(metadata.description.trim(), metadata.description);
    if let Some(image) = metadata.image {
        assert!(image.len() <= MAX_IMAGE_URL_LEN);
        assert!(image.starts_with("http://") || image.starts_with("https://"));
    }
});
