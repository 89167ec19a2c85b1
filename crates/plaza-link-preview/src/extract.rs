//! Metadata extraction from an HTML document: pure, no I/O.
//!
//! Source order (SPEC.md, link preview rule 3): Open Graph, then Twitter
//! cards, then standard tags (`<title>`, `<meta name="description">`, image
//! meta/link tags), then microdata `itemprop` name, description and image.
//! Each field takes its value from the best-ranked source that gives a
//! non-empty value; within one source the first non-empty occurrence wins.

use std::borrow::Cow;
use std::ops::ControlFlow;

use html5ever::LocalName;
use serde::Serialize;
use url::Url;

use crate::charset;
use crate::html::{StartTag, Token, tokenize};
use crate::text::clean;

/// Longest title returned, in characters; longer ones are cut with `…` so a
/// hostile page cannot make the preview (or the client's layout) huge.
pub const MAX_TITLE_CHARS: usize = 300;
/// Longest description returned, in characters (cut with `…`).
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
/// Longest image URL returned, in bytes. A longer URL is dropped, not cut,
/// because a cut URL points somewhere else.
pub const MAX_IMAGE_URL_LEN: usize = 2048;

/// Image candidates remembered per source; later ones can only matter when
/// all earlier ones are unusable.
const MAX_IMAGE_CANDIDATES: usize = 8;
/// Elements tracked for microdata scoping; deeper nesting is not tracked,
/// which bounds the work per end tag on hostile input.
const MAX_STACK: usize = 256;
/// Bytes of element text gathered for one microdata property.
const MAX_CAPTURE_BYTES: usize = 16 * 1024;

/// Preview metadata of one page: plain text, whitespace-collapsed and
/// bounded; the image is an absolute `http(s)` URL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Metadata {
    /// Page title; empty when the page names none.
    pub title: String,
    /// Page description; empty when the page gives none.
    pub description: String,
    /// Absolute URL of the preview image, if the page names a usable one.
    pub image: Option<String>,
}

/// Metadata sources in priority order (lower is better).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    OpenGraph = 0,
    Twitter = 1,
    Standard = 2,
    Microdata = 3,
}

#[derive(Clone, Copy)]
enum Field {
    Title,
    Description,
    Image,
}

/// Extracts preview metadata from an HTML document.
///
/// `html` is the raw body (any encoding: a BOM, the `charset` of
/// `content_type` or a `<meta charset>` decides, as in a browser);
/// `page_url` is the address the document was fetched from, used with any
/// `<base href>` to make the image URL absolute. Never panics and runs in
/// time linear in the input.
pub fn extract(html: &[u8], content_type: Option<&str>, page_url: &Url) -> Metadata {
    let (encoding, bom_len) = charset::detect(html, content_type);
    let (text, _) = encoding.decode_without_bom_handling(&html[bom_len.min(html.len())..]);
    let mut collector = Collector::new();
    tokenize(&text, |token| {
        collector.token(token);
        if collector.settled() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    collector.finish(page_url)
}

/// An open element, for microdata scoping and text capture.
struct Open {
    /// Tag name (an interned atom: comparing is cheap).
    name: LocalName,
    /// `Some(is_property)` when the element has `itemscope`.
    item: Option<bool>,
    /// The element is an `itemprop="image" itemscope` (an `ImageObject`).
    image_item: bool,
}

impl Open {
    fn matches(&self, name: &str) -> bool {
        &*self.name == name
    }
}

/// Text gathered from an element's content for a microdata property.
struct Capture {
    field: Field,
    /// Stack length while the element is open; the capture ends when the
    /// stack shrinks below it.
    depth: usize,
    text: String,
}

struct Collector {
    title: Option<(Source, String)>,
    description: Option<(Source, String)>,
    images: [Vec<String>; 4],
    base_href: Option<String>,
    /// Text of the HTML `<title>` being read, while one is open and could
    /// still give the title.
    title_text: Option<String>,
    stack: Vec<Open>,
    /// Elements not pushed because the stack was full.
    untracked: usize,
    item_depth: usize,
    property_item_depth: usize,
    image_item_depth: usize,
    captures: Vec<Capture>,
    /// The first Open Graph image is an absolute, usable URL: it is the
    /// image whatever follows, `<base href>` included.
    og_image_settled: bool,
}

const VOID: [&str; 15] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param", "keygen",
];

/// Start tags that close an open `<p>` (the tree builder's rule), so that
/// text captured from a paragraph does not run on into the next block.
const CLOSES_P: [&str; 24] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "div",
    "dl",
    "fieldset",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "main",
    "nav",
    "ol",
    "p",
    "section",
    "table",
];

/// Phrasing elements: their tags do not separate words in captured text;
/// any other tag does (`<p>a</p><p>b</p>` reads "a b", not "ab").
const INLINE: [&str; 22] = [
    "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "i", "kbd", "mark", "q",
    "s", "samp", "small", "span", "strong", "sub", "sup", "u",
];

fn is_any(name: &str, list: &[&str]) -> bool {
    list.contains(&name)
}

impl Collector {
    fn new() -> Self {
        Collector {
            title: None,
            description: None,
            images: Default::default(),
            base_href: None,
            title_text: None,
            stack: Vec::new(),
            untracked: 0,
            item_depth: 0,
            property_item_depth: 0,
            image_item_depth: 0,
            captures: Vec::new(),
            og_image_settled: false,
        }
    }

    /// Offers a text candidate; it is decoded and cleaned only when it
    /// would beat the current value.
    fn offer_text(&mut self, field: Field, source: Source, raw: Cow<'_, str>) {
        let (slot, max) = match field {
            Field::Title => (&mut self.title, MAX_TITLE_CHARS),
            Field::Description => (&mut self.description, MAX_DESCRIPTION_CHARS),
            Field::Image => {
                self.offer_image(source, raw);
                return;
            }
        };
        if slot.as_ref().is_some_and(|(best, _)| *best <= source) {
            return;
        }
        let value = clean(&raw, max);
        if !value.is_empty() {
            *slot = Some((source, value));
        }
    }

    fn offer_image(&mut self, source: Source, raw: Cow<'_, str>) {
        let list = &mut self.images[source as usize];
        let trimmed = raw.trim();
        if !trimmed.is_empty()
            && list.len() < MAX_IMAGE_CANDIDATES
            && trimmed.len() <= MAX_IMAGE_URL_LEN * 2
        {
            if source == Source::OpenGraph && list.is_empty() {
                self.og_image_settled = Url::parse(trimmed)
                    .is_ok_and(|url| absolute_image_url(trimmed, &url).is_some());
            }
            list.push(trimmed.to_owned());
        }
    }

    /// Whether nothing later in the document can change the result, so
    /// tokenizing can stop: Open Graph, the best source, has given the title
    /// and the description (the first non-empty occurrence wins) and an
    /// image that needs no base.
    fn settled(&self) -> bool {
        let from_og = |slot: &Option<(Source, String)>| {
            slot.as_ref()
                .is_some_and(|(source, _)| *source == Source::OpenGraph)
        };
        self.og_image_settled && from_og(&self.title) && from_og(&self.description)
    }

    fn offer_attr(&mut self, field: Field, source: Source, value: Option<&str>) {
        if let Some(value) = value {
            self.offer_text(field, source, Cow::Borrowed(value));
        }
    }

    fn token(&mut self, token: Token<'_>) {
        if let Token::Start(StartTag { name, .. }) | Token::End(name) = &token {
            // A tag ends the raw text of an open `<title>`.
            if let Some(title) = self.title_text.take() {
                self.offer_text(Field::Title, Source::Standard, Cow::Owned(title));
            }
            if !self.captures.is_empty() && !is_any(name, &INLINE) {
                self.captures
                    .iter_mut()
                    .filter(|c| c.text.len() < MAX_CAPTURE_BYTES)
                    .for_each(|c| c.text.push(' '));
            }
        }
        match token {
            Token::Start(tag) => self.start(&tag),
            Token::End(name) => self.end(name),
            Token::RawText(text) => {
                if let Some(title) = &mut self.title_text {
                    title.push_str(text);
                }
            }
            Token::Text(text) => {
                for capture in &mut self.captures {
                    if capture.text.len() < MAX_CAPTURE_BYTES {
                        capture.text.push_str(text);
                    }
                }
            }
        }
    }

    fn start(&mut self, tag: &StartTag<'_>) {
        let name: &str = tag.name;
        if !tag.foreign {
            if tag.is("meta") {
                self.meta(tag);
            } else if tag.is("title") {
                // Read the text only while it could still give the title.
                let taken = self
                    .title
                    .as_ref()
                    .is_some_and(|(best, _)| *best <= Source::Standard);
                if !taken {
                    self.title_text = Some(String::new());
                }
            } else if tag.is("link") {
                let is_image_src = tag.attr("rel").is_some_and(|rel| {
                    rel.split(|c: char| c.is_ascii_whitespace())
                        .any(|t| t.eq_ignore_ascii_case("image_src"))
                });
                if is_image_src {
                    self.offer_attr(Field::Image, Source::Standard, tag.attr("href"));
                }
            } else if tag.is("base")
                && self.base_href.is_none()
                && let Some(href) = tag.attr("href")
            {
                self.base_href = Some(href.trim().to_owned());
            }
        }
        // Implied end tags for the common cases.
        if let Some(top) = self.stack.last() {
            let closes = (top.matches("p") && is_any(name, &CLOSES_P))
                || (top.matches("li") && tag.is("li"))
                || ((top.matches("dt") || top.matches("dd")) && (tag.is("dt") || tag.is("dd")))
                || (top.matches("option") && tag.is("option"));
            if closes {
                self.pop_to(self.stack.len() - 1);
            }
        }
        let itemscope = tag.has_attr("itemscope");
        let itemprop = tag.attr("itemprop");
        let accepted = self.property_item_depth == 0 && self.item_depth <= 1;
        let in_image_item =
            self.image_item_depth == 1 && self.property_item_depth == 1 && self.item_depth <= 2;
        let mut image_item = false;
        let mut capture = None;
        if let Some(props) = itemprop {
            for prop in props
                .split(|c: char| c.is_ascii_whitespace())
                .filter(|p| !p.is_empty())
            {
                let field = if accepted && prop.eq_ignore_ascii_case("name") {
                    Field::Title
                } else if accepted && prop.eq_ignore_ascii_case("description") {
                    Field::Description
                } else if (accepted && prop.eq_ignore_ascii_case("image"))
                    || (in_image_item
                        && (prop.eq_ignore_ascii_case("url")
                            || prop.eq_ignore_ascii_case("contentUrl")))
                {
                    Field::Image
                } else {
                    continue;
                };
                if itemscope {
                    // The value is an item; only an ImageObject is looked into.
                    image_item |= matches!(field, Field::Image) && accepted;
                    continue;
                }
                match microdata_value(tag) {
                    Some(raw) => self.offer_attr(field, Source::Microdata, Some(raw)),
                    None if !is_any(name, &VOID) => capture = Some(field),
                    None => {}
                }
            }
        }
        let void = is_any(name, &VOID) || (tag.foreign && tag.self_closing);
        if void {
            return;
        }
        if self.stack.len() >= MAX_STACK {
            self.untracked = self.untracked.saturating_add(1);
            return;
        }
        let item = itemscope.then_some(itemprop.is_some());
        if let Some(is_property) = item {
            self.item_depth += 1;
            if is_property {
                self.property_item_depth += 1;
            }
        }
        if image_item {
            self.image_item_depth += 1;
        }
        self.stack.push(Open {
            name: tag.name.clone(),
            item,
            image_item,
        });
        if let Some(field) = capture {
            self.captures.push(Capture {
                field,
                depth: self.stack.len(),
                text: String::new(),
            });
        }
    }

    fn meta(&mut self, tag: &StartTag<'_>) {
        let value = tag.attr("content").or_else(|| tag.attr("value"));
        for key_attr in ["property", "name"] {
            let Some(key) = tag.attr(key_attr) else {
                continue;
            };
            let key = key.trim_ascii();
            let lower = |s: &str| key.eq_ignore_ascii_case(s);
            let target = if lower("og:title") {
                (Field::Title, Source::OpenGraph)
            } else if lower("og:description") {
                (Field::Description, Source::OpenGraph)
            } else if lower("og:image") || lower("og:image:url") || lower("og:image:secure_url") {
                (Field::Image, Source::OpenGraph)
            } else if lower("twitter:title") {
                (Field::Title, Source::Twitter)
            } else if lower("twitter:description") {
                (Field::Description, Source::Twitter)
            } else if lower("twitter:image") || lower("twitter:image:src") {
                (Field::Image, Source::Twitter)
            } else if key_attr == "name" && lower("description") {
                (Field::Description, Source::Standard)
            } else if key_attr == "name" && (lower("image") || lower("thumbnail")) {
                (Field::Image, Source::Standard)
            } else {
                continue;
            };
            self.offer_attr(target.0, target.1, value);
        }
    }

    fn end(&mut self, name: &str) {
        if self.untracked > 0 {
            // Assume the end tag closes one of the untracked elements.
            self.untracked -= 1;
            return;
        }
        if let Some(index) = self.stack.iter().rposition(|open| open.matches(name)) {
            self.pop_to(index);
        }
    }

    /// Closes the elements from `index` up.
    fn pop_to(&mut self, index: usize) {
        while self.stack.len() > index {
            let Some(open) = self.stack.pop() else { break };
            if let Some(is_property) = open.item {
                self.item_depth = self.item_depth.saturating_sub(1);
                if is_property {
                    self.property_item_depth = self.property_item_depth.saturating_sub(1);
                }
            }
            if open.image_item {
                self.image_item_depth = self.image_item_depth.saturating_sub(1);
            }
            let depth = self.stack.len();
            while self.captures.last().is_some_and(|c| c.depth > depth) {
                if let Some(capture) = self.captures.pop() {
                    self.offer_text(capture.field, Source::Microdata, Cow::Owned(capture.text));
                }
            }
        }
    }

    fn finish(mut self, page_url: &Url) -> Metadata {
        // A `<title>` left open runs to the end of the document.
        if let Some(title) = self.title_text.take() {
            self.offer_text(Field::Title, Source::Standard, Cow::Owned(title));
        }
        self.pop_to(0);
        for capture in std::mem::take(&mut self.captures) {
            self.offer_text(capture.field, Source::Microdata, Cow::Owned(capture.text));
        }
        let base = self
            .base_href
            .as_deref()
            .and_then(|href| page_url.join(href).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"));
        let base = base.as_ref().unwrap_or(page_url);
        let image = self
            .images
            .iter()
            .flatten()
            .find_map(|candidate| absolute_image_url(candidate, base));
        Metadata {
            title: self.title.map(|(_, t)| t).unwrap_or_default(),
            description: self.description.map(|(_, d)| d).unwrap_or_default(),
            image,
        }
    }
}

/// The microdata value carried by an attribute of `tag`, by element type, or
/// `None` when the value is the element's text content.
fn microdata_value<'a>(tag: &StartTag<'a>) -> Option<&'a str> {
    let name: &str = tag.name;
    if tag.is("meta") {
        Some(
            tag.attr("content")
                .or_else(|| tag.attr("value"))
                .unwrap_or_default(),
        )
    } else if is_any(
        name,
        &[
            "img", "audio", "embed", "iframe", "source", "track", "video",
        ],
    ) {
        Some(tag.attr("src").unwrap_or_default())
    } else if is_any(name, &["a", "area", "link"]) {
        Some(tag.attr("href").unwrap_or_default())
    } else if tag.is("object") {
        Some(tag.attr("data").unwrap_or_default())
    } else if tag.is("data") || tag.is("meter") {
        Some(tag.attr("value").unwrap_or_default())
    } else if tag.is("time") {
        tag.attr("datetime")
    } else {
        // Sloppy but common: `<span itemprop="image" content="...">`.
        tag.attr("content")
    }
}

/// Resolves an image reference against the document base; only `http` and
/// `https` results of bounded length are usable.
pub(crate) fn absolute_image_url(candidate: &str, base: &Url) -> Option<String> {
    let url = base.join(candidate).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return None;
    }
    let url = String::from(url);
    (url.len() <= MAX_IMAGE_URL_LEN).then_some(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Url {
        Url::parse("https://example.com/a/b.html").unwrap_or_else(|_| unreachable!())
    }

    fn run(html: &str) -> Metadata {
        extract(html.as_bytes(), None, &page())
    }

    #[test]
    fn priority_og_twitter_standard_microdata() {
        let html = r#"<head><title>Std</title><meta name="twitter:title" content="Tw">
            <meta property="og:title" content="OG"><meta name=description content="d">
            <meta name="twitter:image" content="/tw.png"></head>
            <body><div itemscope><span itemprop=name>Micro</span><img itemprop=image src="m.png"></div>"#;
        let m = run(html);
        assert_eq!(m.title, "OG");
        assert_eq!(m.description, "d");
        assert_eq!(m.image.as_deref(), Some("https://example.com/tw.png"));
    }

    #[test]
    fn empty_and_duplicate_tags() {
        let m = run(
            r#"<meta property="og:title" content=" "><meta property="og:title" content="First">
            <meta property="og:title" content="Second"><title></title><title>T2</title>
            <meta property=og:description value="from value">"#,
        );
        assert_eq!(m.title, "First");
        assert_eq!(m.description, "from value");
    }

    #[test]
    fn microdata_scoping_skips_nested_items() {
        let m = run(r#"<div itemscope itemtype="https://schema.org/Recipe">
            <div itemprop="author" itemscope><span itemprop="name">Alice</span></div>
            <h1 itemprop="name">Cake &amp; <b>Cream</b></h1>
            <p itemprop="description">Rich
               and moist<div>not this</div></p>
            <div itemprop="image" itemscope><meta itemprop="url" content="//cdn.example.net/c.jpg"></div>
            </div>"#);
        assert_eq!(m.title, "Cake & Cream");
        assert_eq!(m.description, "Rich and moist");
        assert_eq!(m.image.as_deref(), Some("https://cdn.example.net/c.jpg"));
    }

    #[test]
    fn base_href_and_bad_schemes() {
        let m = run(r#"<meta property="og:image" content="javascript:alert(1)">
            <meta property="og:image" content="img/x.png"><base href="/static/">"#);
        assert_eq!(
            m.image.as_deref(),
            Some("https://example.com/static/img/x.png")
        );
    }

    #[test]
    fn references_decoded_in_text_and_attributes() {
        let m = run(r#"<title>Tom &amp; Jerry &eacute;&#x27;&#39;</title>
            <meta property="og:image" content="/a?b=1&copy=2&amp;c">"#);
        assert_eq!(m.title, "Tom & Jerry é''");
        assert_eq!(
            m.image.as_deref(),
            Some("https://example.com/a?b=1&copy=2&c")
        );
    }

    #[test]
    fn stopping_early_changes_nothing() {
        let og =
            r#"<meta property="og:title" content="T"><meta property="og:description" content="D">"#;
        // Settled: an absolute first image; later tags cannot change it.
        let m = run(&format!(
            r#"{og}<meta property="og:image" content="https://cdn.example.net/i.png">
            <base href="https://other.example/"><meta property="og:title" content="Later">"#
        ));
        assert_eq!(m.title, "T");
        assert_eq!(m.image.as_deref(), Some("https://cdn.example.net/i.png"));
        // Not settled: a relative or unusable first image still depends on
        // what follows.
        let m = run(&format!(
            r#"{og}<meta property="og:image" content="i.png"><base href="/static/">"#
        ));
        assert_eq!(m.image.as_deref(), Some("https://example.com/static/i.png"));
        let m = run(&format!(
            r#"{og}<meta property="og:image" content="javascript:x">
            <meta property="og:image" content="https://cdn.example.net/j.png">"#
        ));
        assert_eq!(m.image.as_deref(), Some("https://cdn.example.net/j.png"));
    }

    #[test]
    fn long_element_names_and_nul() {
        let m = run("<div itemscope><custom-element-aaaa itemprop=name>T \
            <custom-element-aaab>u</custom-element-aaab></custom-element-aaaa> after</div>");
        assert_eq!(m.title, "T u");
        // U+0000 as the spec says: U+FFFD in RCDATA, dropped from text.
        assert_eq!(run("<title>a\0b</title>").title, "a\u{fffd}b");
        let m = run("<div itemscope><p itemprop=description>x\0y</p></div>");
        assert_eq!(m.description, "xy");
    }

    #[test]
    fn svg_title_is_not_the_document_title() {
        let m = run("<body><svg><title>icon</title></svg><title>Real</title>");
        assert_eq!(m.title, "Real");
    }

    #[test]
    fn huge_title_is_bounded() {
        let html = format!("<title>{}</title>", "word ".repeat(2_000_000));
        let m = run(&html);
        assert!(m.title.chars().count() <= MAX_TITLE_CHARS);
        assert!(m.title.ends_with('…'));
    }
}
