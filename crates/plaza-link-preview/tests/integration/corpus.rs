//! Every fixture page through the pure extractor, against its `.json`.

use plaza_link_preview::extract;
use url::Url;

use crate::support::load_fixtures;

/// Origin the fixtures are pretended to come from.
const ORIGIN: &str = "https://fixtures.example";

#[test]
fn corpus_has_at_least_thirty_pages() {
    assert!(load_fixtures().len() >= 30);
}

#[test]
fn every_fixture_matches_its_expected_result() {
    let mut failures = Vec::new();
    for f in load_fixtures() {
        let page = Url::parse(&format!("{ORIGIN}/pages/{}.html", f.name)).expect("url");
        let got = extract(&f.html, Some(&f.content_type), &page);
        let want_image = f.expected_image(ORIGIN);
        if got.title != f.title || got.description != f.description || got.image != want_image {
            failures.push(format!(
                "{}:\n  got  {:?} | {:?} | {:?}\n  want {:?} | {:?} | {:?}",
                f.name, got.title, got.description, got.image, f.title, f.description, want_image
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture(s) differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn output_is_plain_bounded_text() {
    for f in load_fixtures() {
        let page = Url::parse(&format!("{ORIGIN}/pages/{}.html", f.name)).expect("url");
        let got = extract(&f.html, Some(&f.content_type), &page);
        assert!(got.title.chars().count() <= plaza_link_preview::extract::MAX_TITLE_CHARS);
        assert!(
            got.description.chars().count() <= plaza_link_preview::extract::MAX_DESCRIPTION_CHARS
        );
        for text in [&got.title, &got.description] {
            assert_eq!(text.trim(), text.as_str(), "{}: untrimmed", f.name);
            assert!(
                !text.contains("  ") && !text.contains('\n'),
                "{}: whitespace not collapsed",
                f.name
            );
        }
    }
}
