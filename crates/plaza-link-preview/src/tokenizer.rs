//! A zero-copy HTML tokenizer covering the WHATWG tokenizer states that decide
//! where tags, attributes and text are: data, tag and attribute states,
//! comments, doctypes and bogus comments, RAWTEXT/RCDATA elements, PLAINTEXT
//! and CDATA in foreign content.
//!
//! Metadata extraction only needs start tags with their attributes, end tags
//! and text, so the tokenizer builds no tree and copies nothing: tokens are
//! slices of the input. It works on bytes so the same code serves the
//! `<meta charset>` prescan on undecoded input (every encoding the prescan
//! can meet is ASCII-compatible for the bytes that make up markup) and the
//! extraction on decoded UTF-8 text, where every slice boundary is an ASCII
//! byte and therefore a character boundary.

use memchr::{memchr, memmem};

/// Attributes kept per tag; further ones are parsed (so the tag ends in the
/// right place) but not stored, which bounds memory on hostile input. The
/// first occurrence of a duplicated attribute wins, as in the HTML spec, so
/// dropping late attributes never changes a stored one.
const MAX_ATTRS: usize = 64;

/// A byte range of the input.
type Span = (usize, usize);

/// One token of the input.
pub(crate) enum Token<'a> {
    /// A start tag; its attributes are read through [`StartTag::attr`].
    Start(StartTag<'a>),
    /// An end tag, with its name as written (compare case-insensitively).
    End(&'a [u8]),
    /// Character data outside raw-text elements, entities not yet decoded.
    Text(&'a [u8]),
    /// The content of a RAWTEXT or RCDATA element (`<title>`, `<script>`,
    /// `<style>`, `<textarea>`, ...), entities not yet decoded.
    RawText(&'a [u8]),
}

/// A start tag borrowed from the input and the tokenizer's attribute buffer.
pub(crate) struct StartTag<'a> {
    input: &'a [u8],
    /// The tag name as written (compare case-insensitively).
    pub name: &'a [u8],
    attrs: &'a [(Span, Option<Span>)],
    /// Whether the tag ended in `/>`.
    pub self_closing: bool,
    /// Whether the tag is inside `<svg>` or `<math>`, where `<title>` is not
    /// the document title and `/>` does close an element.
    pub foreign: bool,
}

impl<'a> StartTag<'a> {
    /// The raw value of the first attribute called `name` (ASCII
    /// case-insensitive); an attribute without a value gives an empty slice.
    pub fn attr(&self, name: &str) -> Option<&'a [u8]> {
        self.attrs.iter().find_map(|&((s, e), value)| {
            if self.input[s..e].eq_ignore_ascii_case(name.as_bytes()) {
                Some(value.map_or(&self.input[0..0], |(vs, ve)| &self.input[vs..ve]))
            } else {
                None
            }
        })
    }

    /// Whether the tag has an attribute called `name`.
    pub fn has_attr(&self, name: &str) -> bool {
        self.attr(name).is_some()
    }

    /// Whether the tag name equals `name` (which must be lower case).
    pub fn is(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name.as_bytes())
    }
}

/// Elements whose content is RAWTEXT or RCDATA in HTML content.
const RAW_TEXT_ELEMENTS: [&str; 8] = [
    "script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes",
];

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

/// Streaming-style tokenizer over a complete buffer.
pub(crate) struct Tokenizer<'a> {
    input: &'a [u8],
    pos: usize,
    attrs: Vec<(Span, Option<Span>)>,
    /// Set after a raw-text start tag: the element whose end tag ends the text.
    raw_end: Option<&'static str>,
    /// Nesting depth of `<svg>`/`<math>`.
    foreign_depth: u32,
    /// After `<plaintext>` everything is text.
    plaintext: bool,
}

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

impl<'a> Tokenizer<'a> {
    /// A tokenizer positioned at the start of `input`.
    pub fn new(input: &'a [u8]) -> Self {
        Tokenizer {
            input,
            pos: 0,
            attrs: Vec::new(),
            raw_end: None,
            foreign_depth: 0,
            plaintext: false,
        }
    }

    /// The next token, or `None` at the end of the input.
    pub fn next_token(&mut self) -> Option<Token<'_>> {
        loop {
            let input = self.input;
            let len = input.len();
            if self.pos >= len {
                return None;
            }
            if self.plaintext {
                let text = &input[self.pos..];
                self.pos = len;
                return Some(Token::Text(text));
            }
            if let Some(name) = self.raw_end.take() {
                let start = self.pos;
                let end = find_end_tag(input, start, name);
                self.pos = end;
                if end > start {
                    return Some(Token::RawText(&input[start..end]));
                }
                continue;
            }
            let start = self.pos;
            let Some(lt) = memchr(b'<', &input[start..]).map(|i| start + i) else {
                self.pos = len;
                return Some(Token::Text(&input[start..]));
            };
            if lt > start {
                self.pos = lt;
                return Some(Token::Text(&input[start..lt]));
            }
            match input.get(lt + 1).copied() {
                Some(b) if b.is_ascii_alphabetic() => return self.start_tag(lt + 1),
                Some(b'/') => match input.get(lt + 2).copied() {
                    Some(b) if b.is_ascii_alphabetic() => {
                        if let Some(token) = self.end_tag(lt + 2) {
                            return Some(token);
                        }
                    }
                    Some(b'>') => self.pos = lt + 3,
                    Some(_) => self.pos = skip_past(input, lt + 2, b'>'),
                    None => {
                        self.pos = len;
                        return Some(Token::Text(&input[lt..]));
                    }
                },
                Some(b'!') => self.markup_declaration(lt + 2),
                Some(b'?') => self.pos = skip_past(input, lt + 2, b'>'),
                _ => {
                    // A lone `<` is text; it runs to the next `<`.
                    let next = memchr(b'<', &input[lt + 1..]).map_or(len, |i| lt + 1 + i);
                    self.pos = next;
                    return Some(Token::Text(&input[lt..next]));
                }
            }
        }
    }

    /// `<!` has been read; `at` is just after it.
    fn markup_declaration(&mut self, at: usize) {
        let input = self.input;
        let rest = &input[at..];
        if rest.starts_with(b"--") {
            let body = at + 2;
            // `<!-->` and `<!--->` are complete (empty) comments.
            if input.get(body) == Some(&b'>') {
                self.pos = body + 1;
            } else if input.get(body..body + 2) == Some(b"->") {
                self.pos = body + 2;
            } else {
                self.pos =
                    memmem::find(&input[body..], b"-->").map_or(input.len(), |i| body + i + 3);
            }
        } else if self.foreign_depth > 0 && rest.starts_with(b"[CDATA[") {
            // CDATA text inside <svg>/<math> carries no metadata we use.
            let body = at + 7;
            self.pos = memmem::find(&input[body..], b"]]>").map_or(input.len(), |i| body + i + 3);
        } else {
            // Doctype and bogus comments end at the next `>`.
            self.pos = skip_past(input, at, b'>');
        }
    }

    /// Reads the tag name starting at `at`; returns its end.
    fn tag_name_end(&self, at: usize) -> usize {
        let input = self.input;
        input[at..]
            .iter()
            .position(|&b| is_space(b) || b == b'/' || b == b'>')
            .map_or(input.len(), |i| at + i)
    }

    fn start_tag(&mut self, at: usize) -> Option<Token<'_>> {
        let input = self.input;
        let name_end = self.tag_name_end(at);
        let name = &input[at..name_end];
        let Some((end, self_closing)) = self.attributes(name_end, true) else {
            // End of input inside a tag: the tag is dropped.
            self.pos = input.len();
            return None;
        };
        self.pos = end;
        let mut foreign = self.foreign_depth > 0;
        if foreign
            && FOREIGN_BREAKOUT
                .iter()
                .any(|n| name.eq_ignore_ascii_case(n.as_bytes()))
        {
            self.foreign_depth = 0;
            foreign = false;
        }
        if name.eq_ignore_ascii_case(b"svg") || name.eq_ignore_ascii_case(b"math") {
            if !self_closing {
                self.foreign_depth = self.foreign_depth.saturating_add(1);
            }
        } else if !foreign {
            if let Some(raw) = RAW_TEXT_ELEMENTS
                .iter()
                .find(|n| name.eq_ignore_ascii_case(n.as_bytes()))
            {
                self.raw_end = Some(raw);
            } else if name.eq_ignore_ascii_case(b"plaintext") {
                self.plaintext = true;
            }
        }
        Some(Token::Start(StartTag {
            input,
            name,
            attrs: &self.attrs,
            self_closing,
            foreign,
        }))
    }

    fn end_tag(&mut self, at: usize) -> Option<Token<'a>> {
        let input = self.input;
        let name_end = self.tag_name_end(at);
        let name = &input[at..name_end];
        let Some((end, _)) = self.attributes(name_end, false) else {
            self.pos = input.len();
            return None;
        };
        self.pos = end;
        if self.foreign_depth > 0
            && (name.eq_ignore_ascii_case(b"svg") || name.eq_ignore_ascii_case(b"math"))
        {
            self.foreign_depth -= 1;
        }
        Some(Token::End(name))
    }

    /// Parses attributes from `at` up to and including the closing `>`.
    /// Returns the position after `>` and whether the tag was self-closing,
    /// or `None` when the input ends inside the tag. Attributes are stored
    /// only when `keep` is set (end tags' attributes are meaningless).
    fn attributes(&mut self, at: usize, keep: bool) -> Option<(usize, bool)> {
        let input = self.input;
        let len = input.len();
        self.attrs.clear();
        let mut i = at;
        loop {
            // Before attribute name.
            while i < len && (is_space(input[i]) || input[i] == b'/') {
                if input[i] == b'/' && input.get(i + 1) == Some(&b'>') {
                    return Some((i + 2, true));
                }
                i += 1;
            }
            if i >= len {
                return None;
            }
            if input[i] == b'>' {
                return Some((i + 1, false));
            }
            // Attribute name: the first character may be `=`.
            let name_start = i;
            i += 1;
            while i < len && !is_space(input[i]) && !matches!(input[i], b'/' | b'>' | b'=') {
                i += 1;
            }
            let name = (name_start, i);
            // After attribute name.
            while i < len && is_space(input[i]) {
                i += 1;
            }
            let mut value = None;
            if i < len && input[i] == b'=' {
                i += 1;
                while i < len && is_space(input[i]) {
                    i += 1;
                }
                match input.get(i).copied() {
                    None => return None,
                    Some(q @ (b'"' | b'\'')) => {
                        let start = i + 1;
                        let end = memchr(q, &input[start..]).map(|j| start + j)?;
                        value = Some((start, end));
                        i = end + 1;
                    }
                    Some(b'>') => {}
                    Some(_) => {
                        let start = i;
                        while i < len && !is_space(input[i]) && input[i] != b'>' {
                            i += 1;
                        }
                        value = Some((start, i));
                    }
                }
            }
            if keep && self.attrs.len() < MAX_ATTRS {
                self.attrs.push((name, value));
            }
        }
    }
}

/// Position after the next `byte` from `at`, or the end of the input.
fn skip_past(input: &[u8], at: usize, byte: u8) -> usize {
    memchr(byte, &input[at.min(input.len())..]).map_or(input.len(), |i| at + i + 1)
}

/// Finds the start of the end tag `</name` (ASCII case-insensitive, followed
/// by whitespace, `/` or `>`) from `at`, or the end of the input.
fn find_end_tag(input: &[u8], at: usize, name: &str) -> usize {
    let name = name.as_bytes();
    let mut from = at;
    while let Some(i) = memchr(b'<', &input[from..]).map(|i| from + i) {
        let after = i + 2 + name.len();
        if input.get(i + 1) == Some(&b'/')
            && input
                .get(i + 2..after)
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
            && input
                .get(after)
                .is_none_or(|&b| is_space(b) || b == b'/' || b == b'>')
        {
            return i;
        }
        from = i + 1;
    }
    input.len()
}

/// Whether `haystack` contains the end tag `</head` or the start tag `<body`
/// (ASCII case-insensitive, as whole tag names): the fetcher's cheap signal
/// that the document head is complete.
pub(crate) fn contains_head_end(haystack: &[u8]) -> bool {
    let ends_name = |b: Option<&u8>| b.is_none_or(|&b| is_space(b) || b == b'/' || b == b'>');
    let mut from = 0;
    while let Some(i) = memchr(b'<', &haystack[from..]).map(|i| from + i) {
        let rest = &haystack[i + 1..];
        if rest
            .get(..5)
            .is_some_and(|r| r.eq_ignore_ascii_case(b"/head"))
            && ends_name(rest.get(5))
        {
            return true;
        }
        if rest
            .get(..4)
            .is_some_and(|r| r.eq_ignore_ascii_case(b"body"))
            && ends_name(rest.get(4))
        {
            return true;
        }
        from = i + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: &str) -> Vec<String> {
        let mut t = Tokenizer::new(input.as_bytes());
        let mut out = Vec::new();
        while let Some(tok) = t.next_token() {
            out.push(match tok {
                Token::Start(tag) => {
                    let mut s = format!("<{}", String::from_utf8_lossy(tag.name));
                    for name in ["a", "b", "content"] {
                        if let Some(v) = tag.attr(name) {
                            s.push_str(&format!(" {name}={}", String::from_utf8_lossy(v)));
                        }
                    }
                    if tag.self_closing {
                        s.push('/');
                    }
                    s
                }
                Token::End(name) => format!("</{}", String::from_utf8_lossy(name)),
                Token::Text(text) => format!("T:{}", String::from_utf8_lossy(text)),
                Token::RawText(text) => format!("R:{}", String::from_utf8_lossy(text)),
            });
        }
        out
    }

    #[test]
    fn attributes_quoted_unquoted_and_bare() {
        assert_eq!(
            tokens(r#"<x a='1>2' b=3 content>"#),
            vec!["<x a=1>2 b=3 content="]
        );
        assert_eq!(tokens("<X A=\"v\"/>"), vec!["<X a=v/"]);
        assert_eq!(tokens("<x a=1 a=2>"), vec!["<x a=1"]);
    }

    #[test]
    fn comments_doctype_and_raw_text() {
        assert_eq!(
            tokens("<!DOCTYPE html><!-- <x a=1> -->t<script>if (a<b) '</x>'</SCRIPT >y"),
            vec!["T:t", "<script", "R:if (a<b) '</x>'", "</SCRIPT", "T:y"]
        );
        assert_eq!(tokens("<!-->a<!--->b"), vec!["T:a", "T:b"]);
        assert_eq!(tokens("a < b <3"), vec!["T:a ", "T:< b ", "T:<3"]);
    }

    #[test]
    fn title_in_svg_is_not_raw_text() {
        assert_eq!(
            tokens("<svg><title>i</title></svg><title>a<b></title>"),
            vec![
                "<svg", "<title", "T:i", "</title", "</svg", "<title", "R:a<b>", "</title"
            ]
        );
    }

    #[test]
    fn truncated_input_never_panics() {
        for input in [
            "<", "</", "<a", "<a b", "<a b=", "<a b='", "<!--", "<!", "<script>", "</a",
        ] {
            let _ = tokens(input);
        }
    }

    #[test]
    fn head_end_detection() {
        assert!(contains_head_end(b"<meta></HEAD>"));
        assert!(contains_head_end(b"<Body>"));
        assert!(!contains_head_end(b"<header></headline>"));
    }
}
