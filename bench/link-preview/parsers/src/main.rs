//! Compares the HTML crates considered for plaza-link-preview's tokenizer
//! (lol_html, html5ever's tokenizer, tl) on the work extraction needs: every
//! start tag with its attributes looked up, end tags, text with entities
//! decoded, and the document `<title>` (HTML namespace, RCDATA). Each walk
//! reads the same decoded text, so the figures compare the parsers alone.
//!
//! Usage: `link-preview-parsers <fixtures-dir> <seconds-per-candidate>`.
//! Prints, per candidate, pages/s and MB/s over the corpus, how many pages
//! give the same walk result as html5ever (the WHATWG reference tokenizer),
//! and its reading of markup that decides correctness for link previews.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// What one walk of a document found.
#[derive(Debug, Default, Clone, PartialEq)]
struct Walk {
    title: String,
    og_title: Option<String>,
    og_description: Option<String>,
    og_image: Option<String>,
    starts: usize,
    text_chars: usize,
    in_title: bool,
}

impl Walk {
    /// A start tag; `attr` returns an attribute's value, entities decoded.
    fn start<'a>(&mut self, name: &str, html: bool, attr: impl Fn(&str) -> Option<Cow<'a, str>>) {
        self.starts += 1;
        self.in_title = html && name.eq_ignore_ascii_case("title");
        if !html || !name.eq_ignore_ascii_case("meta") {
            return;
        }
        let Some(key) = attr("property").or_else(|| attr("name")) else {
            return;
        };
        let slot = match key.trim().to_ascii_lowercase().as_str() {
            "og:title" => &mut self.og_title,
            "og:description" => &mut self.og_description,
            "og:image" => &mut self.og_image,
            _ => return,
        };
        if slot.is_none()
            && let Some(value) = attr("content").or_else(|| attr("value"))
            && !value.trim().is_empty()
        {
            *slot = Some(value.trim().to_owned());
        }
    }

    fn end(&mut self) {
        self.in_title = false;
    }

    /// Text; `title_text` says whether it is RCDATA of the document title.
    fn text(&mut self, text: &str, title_text: bool) {
        self.text_chars += text.chars().count();
        if self.in_title && title_text {
            self.title.push_str(text);
        }
    }

    fn finish(mut self) -> Self {
        self.title = self.title.split_whitespace().collect::<Vec<_>>().join(" ");
        self
    }
}

mod with_html5ever {
    use super::*;
    use html5ever::tendril::StrTendril;
    use html5ever::tokenizer::{
        BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
        states::RawKind,
    };

    struct Sink {
        walk: RefCell<Walk>,
        foreign: Cell<u32>,
        rcdata: Cell<bool>,
    }

    impl TokenSink for Sink {
        type Handle = ();

        fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
            let mut walk = self.walk.borrow_mut();
            match token {
                Token::TagToken(tag) if tag.kind == TagKind::StartTag => {
                    let name: &str = &tag.name;
                    if matches!(name, "svg" | "math") && !tag.self_closing {
                        self.foreign.set(self.foreign.get() + 1);
                    }
                    let html = self.foreign.get() == 0;
                    walk.start(name, html, |n| {
                        tag.attrs
                            .iter()
                            .find(|a| &*a.name.local == n)
                            .map(|a| Cow::Owned(a.value.to_string()))
                    });
                    if !html {
                        return TokenSinkResult::Continue;
                    }
                    self.rcdata.set(matches!(name, "title" | "textarea"));
                    match name {
                        "title" | "textarea" => TokenSinkResult::RawData(RawKind::Rcdata),
                        "style" | "xmp" | "iframe" | "noembed" | "noframes" => {
                            TokenSinkResult::RawData(RawKind::Rawtext)
                        }
                        "script" => TokenSinkResult::RawData(RawKind::ScriptData),
                        "plaintext" => TokenSinkResult::Plaintext,
                        _ => TokenSinkResult::Continue,
                    }
                }
                Token::TagToken(tag) => {
                    if matches!(&*tag.name, "svg" | "math") {
                        self.foreign.set(self.foreign.get().saturating_sub(1));
                    }
                    self.rcdata.set(false);
                    walk.end();
                    TokenSinkResult::Continue
                }
                Token::CharacterTokens(text) => {
                    walk.text(&text, self.rcdata.get());
                    TokenSinkResult::Continue
                }
                _ => TokenSinkResult::Continue,
            }
        }

        fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
            self.foreign.get() > 0
        }
    }

    pub fn walk(text: &str) -> Walk {
        let sink = Sink {
            walk: RefCell::default(),
            foreign: Cell::new(0),
            rcdata: Cell::new(false),
        };
        let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
        let input = BufferQueue::default();
        input.push_back(StrTendril::from_slice(text));
        let _ = tokenizer.feed(&input);
        tokenizer.end();
        tokenizer.sink.walk.take().finish()
    }
}

mod with_lol_html {
    use super::*;
    use lol_html::html_content::TextType;
    use lol_html::{EndTagHandler, HtmlRewriter, Settings, doc_text, element};

    const HTML_NS: &str = "http://www.w3.org/1999/xhtml";

    pub fn walk(text: &str) -> Walk {
        let walk = Rc::new(RefCell::new(Walk::default()));
        let on_element = Rc::clone(&walk);
        let on_text = Rc::clone(&walk);
        let settings = Settings::new()
            .with_strict(false)
            .append_element_content_handler(element!("*", move |el| {
                let html = el.namespace_uri() == HTML_NS;
                on_element
                    .borrow_mut()
                    .start(&el.tag_name(), html, |n| {
                        el.get_attribute(n)
                            .map(|v| Cow::Owned(htmlize::unescape_attribute(v).into_owned()))
                    });
                if let Some(handlers) = el.end_tag_handlers() {
                    let on_end = Rc::clone(&on_element);
                    let handler: EndTagHandler<'static> = Box::new(move |_| {
                        on_end.borrow_mut().end();
                        Ok(())
                    });
                    handlers.push(handler);
                }
                Ok(())
            }))
            .append_document_content_handler(doc_text!(move |chunk| {
                let title_text = chunk.text_type() == TextType::RCData;
                let raw = chunk.as_str();
                let decoded = if chunk.text_type().allows_html_entities() {
                    htmlize::unescape(raw)
                } else {
                    Cow::Borrowed(raw)
                };
                on_text.borrow_mut().text(&decoded, title_text);
                Ok(())
            }));
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        if rewriter.write(text.as_bytes()).is_ok() {
            let _ = rewriter.end();
        }
        walk.take().finish()
    }
}

mod with_tl {
    use super::*;
    use tl::{Node, ParserOptions};

    pub fn walk(text: &str) -> Walk {
        let mut walk = Walk::default();
        let Ok(dom) = tl::parse(text, ParserOptions::default()) else {
            return walk;
        };
        let parser = dom.parser();
        for node in dom.nodes() {
            match node {
                Node::Tag(tag) => {
                    let name = tag.name().as_utf8_str();
                    let attrs = tag.attributes();
                    walk.start(&name, true, |n| {
                        attrs
                            .get(n)
                            .map(|v| v.map_or(Cow::Borrowed(""), |v| v.as_utf8_str()))
                            .map(|v| Cow::Owned(htmlize::unescape_attribute(v).into_owned()))
                    });
                    if walk.in_title {
                        walk.title
                            .push_str(&htmlize::unescape(tag.inner_text(parser)));
                        walk.end();
                    }
                }
                Node::Raw(raw) => {
                    let decoded = htmlize::unescape(raw.as_utf8_str());
                    walk.text_chars += decoded.chars().count();
                }
                Node::Comment(_) => {}
            }
        }
        walk.finish()
    }
}

type Candidate = (&'static str, fn(&str) -> Walk);

const CANDIDATES: [Candidate; 3] = [
    ("html5ever 0.40 tokenizer", with_html5ever::walk),
    ("lol_html 3", with_lol_html::walk),
    ("tl 0.7", with_tl::walk),
];

/// Markup where a parser's reading decides a link preview: each case names
/// what a browser takes as the result.
const CASES: [(&str, &str, &str); 7] = [
    (
        "script decoy",
        r#"<script>"<meta property=og:title content=Decoy>"</script><meta property=og:title content=Real>"#,
        "og:title Real",
    ),
    (
        "comment decoy",
        "<!-- <meta property=og:title content=Decoy> --><meta property=og:title content=Real>",
        "og:title Real",
    ),
    (
        "svg <title>",
        "<svg><title>Icon</title></svg><title>Real</title>",
        "title Real",
    ),
    (
        "markup in <title>",
        "<title>a <b>c</b> &amp; d</title>",
        "title a <b>c</b> & d",
    ),
    (
        "attribute entities",
        "<meta property=og:image content='/i?a=1&copy=2&amp;b'>",
        "og:image /i?a=1&copy=2&b",
    ),
    (
        "<noscript> read as markup (a crawler runs no scripts)",
        "<noscript><meta property=og:title content=Real></noscript>",
        "og:title Real",
    ),
    (
        "textarea decoy",
        "<textarea><meta property=og:title content=Decoy></textarea><meta property=og:title content=Real>",
        "og:title Real",
    ),
];

fn reading(walk: &Walk, expected: &str) -> String {
    let got = if expected.starts_with("title") {
        format!("title {}", walk.title)
    } else if expected.starts_with("og:image") {
        format!("og:image {}", walk.og_image.as_deref().unwrap_or(""))
    } else {
        format!("og:title {}", walk.og_title.as_deref().unwrap_or(""))
    };
    if got == expected {
        "ok".to_owned()
    } else {
        format!("WRONG ({got})")
    }
}

/// Decodes a fixture as plaza-link-preview would (BOM, header charset, meta
/// charset, UTF-8, windows-1252), closely enough to feed every parser the
/// same text.
fn decode(bytes: &[u8], content_type: Option<&str>) -> String {
    let declared = content_type
        .and_then(|ct| ct.split_once("charset="))
        .and_then(|(_, l)| Encoding::for_label(l.trim().as_bytes()));
    let head = &bytes[..bytes.len().min(64 * 1024)];
    let meta = head
        .windows(8)
        .position(|w| w.eq_ignore_ascii_case(b"charset="))
        .and_then(|i| {
            let rest = &head[i + 8..];
            let rest = rest.strip_prefix(b"\"").unwrap_or(rest);
            let end = rest
                .iter()
                .position(|b| !(b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_'))?;
            Encoding::for_label(&rest[..end])
        });
    let encoding = if let Some((encoding, _)) = Encoding::for_bom(bytes) {
        encoding
    } else if let Some(encoding) = declared.or(meta) {
        encoding.output_encoding()
    } else if std::str::from_utf8(bytes).is_ok() {
        UTF_8
    } else {
        WINDOWS_1252
    };
    encoding.decode(bytes).0.into_owned()
}

fn load(dir: &Path) -> Result<Vec<(String, String)>, Box<dyn std::error::Error>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    paths.sort();
    let mut pages = Vec::new();
    for path in paths {
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path.with_extension("json"))?)?;
        let text = decode(&std::fs::read(&path)?, expected["content_type"].as_str());
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        pages.push((name.into_owned(), text));
    }
    Ok(pages)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, seconds] = args.as_slice() else {
        return Err("usage: link-preview-parsers <fixtures-dir> <seconds-per-candidate>".into());
    };
    let pages = load(Path::new(dir))?;
    let budget = Duration::from_secs_f64(seconds.parse()?);
    let bytes: usize = pages.iter().map(|(_, t)| t.len()).sum();
    let reference: Vec<Walk> = pages.iter().map(|(_, t)| with_html5ever::walk(t)).collect();
    println!(
        "{} pages, {:.2} MB decoded; {seconds} s per candidate",
        pages.len(),
        bytes as f64 / 1e6
    );
    println!("| crate | pages/s | MB/s | same walk as html5ever | cases right |");
    println!("|---|---|---|---|---|");
    let mut details = Vec::new();
    for (name, walk) in CANDIDATES {
        let mut differ = Vec::new();
        for ((page, text), want) in pages.iter().zip(&reference) {
            let got = walk(text);
            if got != *want {
                differ.push(page.as_str());
            }
        }
        let readings: Vec<String> = CASES
            .iter()
            .map(|(_, html, expected)| reading(&walk(html), expected))
            .collect();
        let started = Instant::now();
        let mut done = 0u64;
        while started.elapsed() < budget {
            for (_, text) in &pages {
                std::hint::black_box(walk(std::hint::black_box(text)));
            }
            done += pages.len() as u64;
        }
        let secs = started.elapsed().as_secs_f64();
        let rounds = done as f64 / pages.len() as f64;
        println!(
            "| {name} | {:.0} | {:.0} | {}/{} | {}/{} |",
            done as f64 / secs,
            rounds * bytes as f64 / secs / 1e6,
            pages.len() - differ.len(),
            pages.len(),
            readings.iter().filter(|r| *r == "ok").count(),
            CASES.len()
        );
        details.push((name, differ, readings));
    }
    for (name, differ, readings) in details {
        println!("\n{name}:");
        if !differ.is_empty() {
            println!("  walk differs from html5ever on: {}", differ.join(", "));
        }
        for ((case, _, _), reading) in CASES.iter().zip(readings) {
            println!("  {case}: {reading}");
        }
    }
    Ok(())
}
