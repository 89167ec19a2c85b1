//! Fixed-seed random HTML: a stable-toolchain companion of the cargo-fuzz
//! target. Documents are built from fragments that stress the tokenizer
//! (unterminated tags, quotes, comments, raw-text elements, foreign
//! content, entities, invalid bytes); the extractor must never panic and
//! must keep its output guarantees.

use plaza_link_preview::extract;
use plaza_link_preview::extract::{MAX_DESCRIPTION_CHARS, MAX_TITLE_CHARS};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use url::Url;

const FRAGMENTS: &[&str] = &[
    "<",
    ">",
    "</",
    "/>",
    "<!--",
    "-->",
    "<!",
    "<?",
    "<![CDATA[",
    "]]>",
    "\"",
    "'",
    "=",
    " ",
    "\n",
    "&",
    "&amp;",
    "&#",
    "&#x",
    "&#1114112;",
    "&eacute",
    "&notin;",
    "<html>",
    "<head>",
    "</head>",
    "<body>",
    "<title>",
    "</title>",
    "<TITLE>",
    "<script>",
    "</script>",
    "<style>",
    "</style>",
    "<textarea>",
    "<plaintext>",
    "<svg>",
    "</svg>",
    "<math>",
    "<meta property=og:title content=",
    "<meta property=\"og:image\" content=\"",
    "<meta name=description content='",
    "<meta name=twitter:image value=",
    "<meta charset=",
    "shift_jis",
    "windows-1251",
    "utf-16",
    "<base href=",
    "<link rel=image_src href=",
    "<div itemscope>",
    "<div itemprop=name>",
    "<span itemprop=description>",
    "<img itemprop=image src=",
    "<div itemprop=image itemscope>",
    "<meta itemprop=url content=",
    "</div>",
    "</span>",
    "<p>",
    "<li>",
    "javascript:x",
    "//cdn.example/i.png",
    "../a.png",
    "https://e.example/x.jpg",
    "\u{0}",
    "\u{feff}",
    "日本語",
    "Ünï",
    "\r\n",
    "\t",
];

fn document(rng: &mut StdRng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.random_range(0..120) {
        match rng.random_range(0..10) {
            0 => {
                // Raw bytes, including invalid UTF-8.
                for _ in 0..rng.random_range(0..16) {
                    out.push(rng.random());
                }
            }
            1 => {
                // A long run, to exercise length bounds.
                let byte = if rng.random_bool(0.5) { b' ' } else { b'a' };
                out.extend(std::iter::repeat_n(byte, rng.random_range(0..5000)));
            }
            _ => out.extend_from_slice(FRAGMENTS[rng.random_range(0..FRAGMENTS.len())].as_bytes()),
        }
    }
    out
}

#[test]
fn random_documents_keep_the_output_guarantees() {
    let mut rng = StdRng::seed_from_u64(0x5eed_f00d);
    let page = Url::parse("https://gen.example/dir/page.html").expect("url");
    let content_types = [
        None,
        Some("text/html; charset=shift_jis"),
        Some("text/html; charset=utf-16le"),
    ];
    for i in 0..4000 {
        let doc = document(&mut rng);
        let ct = content_types[i % content_types.len()];
        let m = extract(&doc, ct, &page);
        assert!(m.title.chars().count() <= MAX_TITLE_CHARS);
        assert!(m.description.chars().count() <= MAX_DESCRIPTION_CHARS);
        for text in [&m.title, &m.description] {
            assert_eq!(text.trim(), text.as_str());
            assert!(
                !text.chars().any(char::is_control),
                "control character in {text:?}"
            );
        }
        if let Some(image) = &m.image {
            let url = Url::parse(image).expect("image is an absolute URL");
            assert!(matches!(url.scheme(), "http" | "https"), "{image}");
        }
    }
}
