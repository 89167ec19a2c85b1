//! HTML tokens for metadata extraction, from html5ever's WHATWG tokenizer
//! (no tree building: extraction needs tags, attributes and text in document
//! order, not a DOM).
//!
//! The tokenizer does everything inside a token: tag and attribute syntax,
//! comments, doctypes, character references (with the attribute rule for
//! legacy references) and the RCDATA/RAWTEXT/script/PLAINTEXT states. Which
//! of those states follows a start tag is a tree-builder decision, so the
//! sink here makes it, the way the tree builder would for the cases that
//! matter to metadata: `<title>`, `<script>`, `<style>` and the other
//! raw-text elements switch state in HTML content but not inside `<svg>` or
//! `<math>` (where `<title>` is an SVG element, not the document title), and
//! `<noscript>` stays markup, as for a crawler that runs no scripts.

use std::cell::{Cell, RefCell};
use std::ops::ControlFlow;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token as H5Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::{Attribute, LocalName, local_name};

/// Bytes handed to the tokenizer at a time, which keeps every buffer far
/// below the tokenizer's 4 GiB buffer limit whatever the input size.
const FEED_BYTES: usize = 64 * 1024;

/// One token of a document, borrowed from the tokenizer.
pub(crate) enum Token<'a> {
    /// A start tag with its attributes.
    Start(StartTag<'a>),
    /// An end tag (name lower-cased by the tokenizer).
    End(&'a LocalName),
    /// Character data in markup content, character references decoded. A run
    /// of text may arrive as several tokens.
    Text(&'a str),
    /// Content of a raw-text element (`<title>`, `<script>`, `<style>`,
    /// `<textarea>`, ...); references decoded where the element allows them
    /// (RCDATA: `<title>`, `<textarea>`). May arrive as several tokens.
    RawText(&'a str),
}

/// A start tag borrowed from the tokenizer.
pub(crate) struct StartTag<'a> {
    /// The tag name, lower-cased by the tokenizer.
    pub name: &'a LocalName,
    attrs: &'a [Attribute],
    /// Whether the tag ended in `/>` (which closes an element only in
    /// foreign content).
    pub self_closing: bool,
    /// Whether the tag is inside `<svg>` or `<math>`, where `<title>` is not
    /// the document title and `/>` does close an element.
    pub foreign: bool,
}

impl<'a> StartTag<'a> {
    /// The value of the attribute `name` (lower case), references decoded;
    /// an attribute without a value gives `""`. Duplicates were dropped by
    /// the tokenizer, so this is the first occurrence, as in the HTML spec.
    pub fn attr(&self, name: &str) -> Option<&'a str> {
        self.attrs
            .iter()
            .find(|a| &*a.name.local == name)
            .map(|a| &*a.value)
    }

    /// Whether the tag has an attribute called `name` (lower case).
    pub fn has_attr(&self, name: &str) -> bool {
        self.attr(name).is_some()
    }

    /// Whether the tag name is `name` (lower case).
    pub fn is(&self, name: &str) -> bool {
        &**self.name == name
    }
}

/// HTML start tags that end foreign (`<svg>`/`<math>`) content, per the
/// tree-construction rules for foreign content.
const FOREIGN_BREAKOUT: [&str; 45] = [
    "b",
    "big",
    "blockquote",
    "body",
    "br",
    "center",
    "code",
    "dd",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "hr",
    "i",
    "img",
    "li",
    "listing",
    "menu",
    "meta",
    "nobr",
    "ol",
    "p",
    "pre",
    "ruby",
    "s",
    "small",
    "span",
    "strong",
    "strike",
    "sub",
    "sup",
    "table",
    "tt",
    "u",
    "ul",
    "var",
    "font",
];

/// Receives html5ever's tokens, keeps the little tree-builder state the
/// tokenizer needs (raw-text switches, foreign-content depth) and hands
/// [`Token`]s to `handler` until it breaks.
struct Sink<F> {
    handler: RefCell<F>,
    /// Nesting depth of `<svg>`/`<math>`.
    foreign_depth: Cell<u32>,
    /// The last start tag switched the tokenizer to a raw-text state.
    raw: Cell<bool>,
    /// The handler asked to stop.
    stopped: Cell<bool>,
}

impl<F: FnMut(Token<'_>) -> ControlFlow<()>> Sink<F> {
    fn emit(&self, token: Token<'_>) {
        if self.stopped.get() {
            return;
        }
        if let Ok(mut handler) = self.handler.try_borrow_mut()
            && handler(token).is_break()
        {
            self.stopped.set(true);
        }
    }

    fn start(&self, name: &LocalName, attrs: &[Attribute], self_closing: bool) -> RawState {
        let depth = self.foreign_depth.get();
        let mut foreign = depth > 0;
        if foreign && FOREIGN_BREAKOUT.contains(&&**name) {
            self.foreign_depth.set(0);
            foreign = false;
        }
        let state = if *name == local_name!("svg") || *name == local_name!("math") {
            if !self_closing {
                self.foreign_depth
                    .set(self.foreign_depth.get().saturating_add(1));
            }
            RawState::None
        } else if foreign {
            RawState::None
        } else {
            raw_state(name)
        };
        self.emit(Token::Start(StartTag {
            name,
            attrs,
            self_closing,
            foreign,
        }));
        state
    }
}

/// The tokenizer state an HTML start tag switches to.
enum RawState {
    None,
    Raw(RawKind),
    Plaintext,
}

fn raw_state(name: &LocalName) -> RawState {
    match &**name {
        "title" | "textarea" => RawState::Raw(RawKind::Rcdata),
        "style" | "xmp" | "iframe" | "noembed" | "noframes" => RawState::Raw(RawKind::Rawtext),
        "script" => RawState::Raw(RawKind::ScriptData),
        "plaintext" => RawState::Plaintext,
        _ => RawState::None,
    }
}

/// Answers a tag token. Only tag tokens may get an answer other than
/// `Continue` (html5ever asserts it for the others). Once the handler has
/// stopped, the answer is `Script`: the pause the tree builder uses to run a
/// script, which makes `feed` return at once; [`tokenize`] then does not
/// resume.
impl<F: FnMut(Token<'_>) -> ControlFlow<()>> TokenSink for Sink<F> {
    type Handle = ();

    fn process_token(&self, token: H5Token, _line: u64) -> TokenSinkResult<()> {
        match token {
            H5Token::TagToken(tag) if tag.kind == TagKind::StartTag => {
                let state = self.start(&tag.name, &tag.attrs, tag.self_closing);
                self.raw.set(!matches!(state, RawState::None));
                match state {
                    _ if self.stopped.get() => TokenSinkResult::Script(()),
                    RawState::None => TokenSinkResult::Continue,
                    RawState::Raw(kind) => TokenSinkResult::RawData(kind),
                    RawState::Plaintext => TokenSinkResult::Plaintext,
                }
            }
            H5Token::TagToken(tag) => {
                self.raw.set(false);
                if self.foreign_depth.get() > 0
                    && (tag.name == local_name!("svg") || tag.name == local_name!("math"))
                {
                    self.foreign_depth.set(self.foreign_depth.get() - 1);
                }
                self.emit(Token::End(&tag.name));
                if self.stopped.get() {
                    TokenSinkResult::Script(())
                } else {
                    TokenSinkResult::Continue
                }
            }
            H5Token::CharacterTokens(text) if self.raw.get() => {
                self.emit(Token::RawText(&text));
                TokenSinkResult::Continue
            }
            H5Token::CharacterTokens(text) => {
                self.emit(Token::Text(&text));
                TokenSinkResult::Continue
            }
            _ => TokenSinkResult::Continue,
        }
    }

    /// CDATA sections exist only in foreign content; elsewhere `<![CDATA[`
    /// is a bogus comment.
    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.foreign_depth.get() > 0
    }
}

/// Tokenizes `text`, passing each token to `handler` in document order until
/// the input ends or `handler` returns [`ControlFlow::Break`]. A break on a
/// tag stops the tokenizer there (the charset prescan stops at the first
/// `<meta charset>`, extraction once nothing can change its result); a break
/// on text stops it at the next tag.
pub(crate) fn tokenize(text: &str, handler: impl FnMut(Token<'_>) -> ControlFlow<()>) {
    let sink = Sink {
        handler: RefCell::new(handler),
        foreign_depth: Cell::new(0),
        raw: Cell::new(false),
        stopped: Cell::new(false),
    };
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let queue = BufferQueue::default();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest.floor_char_boundary(FEED_BYTES.min(rest.len()));
        // The boundary is 0 only if the first character were longer than
        // FEED_BYTES, which no character is; never loop on an empty piece.
        let cut = if cut == 0 { rest.len() } else { cut };
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        queue.push_back(StrTendril::from_slice(piece));
        // Feeding runs until the queue is drained or the sink pauses, which
        // it does only once stopped.
        let _ = tokenizer.feed(&queue);
        if tokenizer.sink.stopped.get() {
            return;
        }
    }
    tokenizer.end();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tokens as strings; consecutive text tokens of one kind are joined,
    /// since the tokenizer may split a run of text.
    fn tokens(input: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        tokenize(input, |token| {
            let (kind, s) = match token {
                Token::Start(tag) => {
                    let mut s = format!("<{}", &**tag.name);
                    for name in ["a", "b", "content"] {
                        if let Some(v) = tag.attr(name) {
                            s.push_str(&format!(" {name}={v}"));
                        }
                    }
                    if tag.self_closing {
                        s.push('/');
                    }
                    (None, s)
                }
                Token::End(name) => (None, format!("</{}", &**name)),
                Token::Text(text) => (Some("T:"), text.to_owned()),
                Token::RawText(text) => (Some("R:"), text.to_owned()),
            };
            match (kind, out.last_mut()) {
                (Some(prefix), Some(last)) if last.starts_with(prefix) => last.push_str(&s),
                (Some(prefix), _) => out.push(format!("{prefix}{s}")),
                (None, _) => out.push(s),
            }
            ControlFlow::Continue(())
        });
        out
    }

    #[test]
    fn attributes_quoted_unquoted_and_bare() {
        assert_eq!(
            tokens(r#"<x a='1>2' b=3 content>"#),
            vec!["<x a=1>2 b=3 content="]
        );
        assert_eq!(tokens("<X A=\"v\"/>"), vec!["<x a=v/"]);
        assert_eq!(tokens("<x a=1 a=2>"), vec!["<x a=1"]);
        assert_eq!(
            tokens("<x a='?q=1&copy=2&amp;r' b=&lt;>&lt;&copy"),
            vec!["<x a=?q=1&copy=2&r b=<", "T:<©"]
        );
    }

    #[test]
    fn comments_doctype_and_raw_text() {
        assert_eq!(
            tokens("<!DOCTYPE html><!-- <x a=1> -->t<script>if (a<b) '</x>'</SCRIPT >y"),
            vec!["T:t", "<script", "R:if (a<b) '</x>'", "</script", "T:y"]
        );
        assert_eq!(tokens("<!-->a<!--->b"), vec!["T:ab"]);
        assert_eq!(tokens("a < b <3"), vec!["T:a < b <3"]);
        assert_eq!(
            tokens("<title>a<b>&amp;</title><noscript><b>"),
            vec!["<title", "R:a<b>&", "</title", "<noscript", "<b"]
        );
    }

    #[test]
    fn title_in_svg_is_not_raw_text() {
        assert_eq!(
            tokens("<svg><title>i</title></svg><title>a<b></title>"),
            vec![
                "<svg", "<title", "T:i", "</title", "</svg", "<title", "R:a<b>", "</title"
            ]
        );
        assert_eq!(
            tokens("<math><![CDATA[<x>]]></math><![CDATA[<y>]]>"),
            // Outside foreign content it is a bogus comment up to the first `>`.
            vec!["<math", "T:<x>", "</math", "T:]]>"]
        );
    }

    #[test]
    fn stops_when_asked() {
        let mut seen = 0;
        tokenize(&"<a>".repeat(100_000), |_| {
            seen += 1;
            if seen == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(seen, 3);
        // A break on text takes effect at the next tag.
        let mut seen = Vec::new();
        tokenize("a&amp;b<i>c", |token| {
            seen.push(matches!(token, Token::Text(_)));
            ControlFlow::Break(())
        });
        assert_eq!(seen, vec![true]);
    }

    #[test]
    fn truncated_input_never_panics() {
        for input in [
            "<",
            "</",
            "<a",
            "<a b",
            "<a b=",
            "<a b='",
            "<!--",
            "<!",
            "<script>",
            "</a",
            "&",
            "&#",
            "&#x",
            "&am",
            "<svg><![CDATA[",
        ] {
            let _ = tokens(input);
        }
        let long = "é".repeat(FEED_BYTES);
        assert_eq!(tokens(&long), vec![format!("T:{long}")]);
    }
}
