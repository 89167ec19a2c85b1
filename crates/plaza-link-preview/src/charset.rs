//! Character-set detection in the order the HTML spec gives a browser: byte
//! order mark, then the `charset` parameter of `Content-Type`, then a prescan
//! of the document for `<meta charset>` or
//! `<meta http-equiv="Content-Type" content="...; charset=...">`, then a
//! fallback. Real pages often carry a late `<meta charset>` (which browsers
//! honour by re-parsing), so the prescan reads up to the end of the head
//! rather than the spec's first 1024 bytes.

use std::ops::ControlFlow;

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252, X_USER_DEFINED};

use crate::html::{Token, tokenize};

/// How far into the document the `<meta charset>` prescan looks.
const PRESCAN_LIMIT: usize = 64 * 1024;

/// Picks the encoding of `bytes` and the length of its byte order mark.
pub(crate) fn detect(bytes: &[u8], content_type: Option<&str>) -> (&'static Encoding, usize) {
    if let Some((encoding, bom_len)) = Encoding::for_bom(bytes) {
        return (encoding, bom_len);
    }
    if let Some(encoding) = content_type
        .and_then(charset_param)
        .and_then(|l| Encoding::for_label(l.as_bytes()))
    {
        return (encoding, 0);
    }
    if let Some(encoding) = prescan(&bytes[..bytes.len().min(PRESCAN_LIMIT)]) {
        return (encoding, 0);
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => (UTF_8, 0),
        // A body cut at the read limit may end inside a UTF-8 sequence.
        Err(e) if e.error_len().is_none() => (UTF_8, 0),
        Err(_) => (WINDOWS_1252, 0),
    }
}

/// The value of a `charset=` parameter in a `Content-Type`-like string.
pub(crate) fn charset_param(value: &str) -> Option<&str> {
    value.split(';').skip(1).find_map(|param| {
        let (key, val) = param.split_once('=')?;
        if key.trim().eq_ignore_ascii_case("charset") {
            let val = val.trim().trim_matches(|c| c == '"' || c == '\'').trim();
            (!val.is_empty()).then_some(val)
        } else {
            None
        }
    })
}

/// The spec's rule for an encoding named in the document itself: UTF-16
/// cannot be declared from inside (the markup would not be readable as
/// ASCII), so it means UTF-8; `x-user-defined` means windows-1252.
fn from_meta_label(label: &[u8]) -> Option<&'static Encoding> {
    let encoding = Encoding::for_label(label)?;
    Some(if encoding == X_USER_DEFINED {
        WINDOWS_1252
    } else {
        encoding.output_encoding()
    })
}

/// Looks for an encoding declared in the head of the undecoded `bytes`.
///
/// Markup is ASCII in every encoding a document can declare from inside, so
/// the bytes are read as windows-1252 (which maps every byte to a character
/// and ASCII to itself) for the tokenizer; only the ASCII labels matter.
fn prescan(bytes: &[u8]) -> Option<&'static Encoding> {
    let (text, _) = WINDOWS_1252.decode_without_bom_handling(bytes);
    let mut found = None;
    tokenize(&text, |token| match token {
        Token::Start(tag) if tag.is("meta") => {
            found = meta_encoding(
                tag.attr("charset"),
                tag.attr("http-equiv"),
                tag.attr("content"),
            );
            if found.is_some() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
        Token::Start(tag) if tag.is("body") => ControlFlow::Break(()),
        Token::End(name) if &**name == "head" => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    });
    found
}

/// The encoding a `<meta>` declares through `charset`, or through
/// `http-equiv="Content-Type"` with a `charset=` in `content`.
fn meta_encoding(
    charset: Option<&str>,
    http_equiv: Option<&str>,
    content: Option<&str>,
) -> Option<&'static Encoding> {
    if let Some(encoding) = charset.and_then(|label| from_meta_label(label.trim_ascii().as_bytes()))
    {
        return Some(encoding);
    }
    let is_content_type =
        http_equiv.is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case("content-type"));
    if is_content_type {
        content
            .and_then(charset_param)
            .and_then(|label| from_meta_label(label.as_bytes()))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoding_rs::{SHIFT_JIS, UTF_16LE, WINDOWS_1251};

    #[test]
    fn order_bom_header_meta_fallback() {
        assert_eq!(
            detect(
                b"\xEF\xBB\xBF<meta charset=sjis>",
                Some("text/html; charset=koi8-r")
            ),
            (UTF_8, 3)
        );
        assert_eq!(detect(b"\xFF\xFE<\x00", None), (UTF_16LE, 2));
        assert_eq!(
            detect(
                b"<meta charset=sjis>",
                Some("text/html; Charset=\"windows-1251\"")
            )
            .0,
            WINDOWS_1251
        );
        assert_eq!(
            detect(b"<meta charset=' Shift_JIS '>", Some("text/html")).0,
            SHIFT_JIS
        );
        assert_eq!(
            detect(
                b"<meta http-equiv=Content-Type content='text/html; charset=windows-1251'>",
                None
            )
            .0,
            WINDOWS_1251
        );
        assert_eq!(detect(b"<meta charset=utf-16>", None).0, UTF_8);
        assert_eq!(detect(b"plain \xE9t\xE9", None).0, WINDOWS_1252);
        assert_eq!(detect("caf\u{e9}".as_bytes(), None).0, UTF_8);
        assert_eq!(detect(b"caf\xC3", None).0, UTF_8);
    }

    #[test]
    fn prescan_stops_at_body() {
        assert_eq!(
            detect(b"<body><meta charset=windows-1251>\xE9\xE9", None).0,
            WINDOWS_1252
        );
    }
}
