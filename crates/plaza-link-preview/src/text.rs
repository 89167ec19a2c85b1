//! Turning text and attribute values (references already decoded by the
//! tokenizer) into bounded plain text.

/// Makes display text: removes anything shaped like a tag (sites often
/// double-escape markup into `og:description`, and the result must be plain
/// text for any client), turns every run of whitespace and control
/// characters into one space, trims, and bounds the result to `max_chars`
/// characters, ending a cut text with `…`.
pub(crate) fn clean(raw: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(raw.len().min(max_chars.saturating_mul(4)));
    let mut chars_out = 0usize;
    let mut pending_space = false;
    let mut truncated = false;
    let mut rest = raw;
    while let Some(c) = rest.chars().next() {
        let width = c.len_utf8();
        if c == '<'
            && let Some(skip) = tag_len(rest)
        {
            rest = &rest[skip..];
            pending_space = true;
            continue;
        }
        rest = &rest[width..];
        if c.is_whitespace() || c.is_control() || c == '\u{FEFF}' {
            pending_space = true;
            continue;
        }
        let needed = if pending_space && chars_out > 0 { 2 } else { 1 };
        if chars_out + needed > max_chars {
            truncated = true;
            break;
        }
        if pending_space && chars_out > 0 {
            out.push(' ');
            chars_out += 1;
        }
        pending_space = false;
        out.push(c);
        chars_out += 1;
    }
    if truncated && max_chars > 0 {
        // Make room for the ellipsis, never leaving a trailing space.
        while chars_out + 1 > max_chars || out.ends_with(' ') {
            if out.pop().is_none() {
                break;
            }
            chars_out = chars_out.saturating_sub(1);
        }
        out.push('…');
    }
    out
}

/// Longest tag-shaped sequence [`clean`] removes; the bound keeps the work
/// linear on input full of unclosed `<`.
const MAX_TAG_LEN: usize = 512;

/// If `s` starts with something shaped like a tag, comment or doctype
/// (`<` then a letter, `/`, `!` or `?`, up to the next `>`), its length.
fn tag_len(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let next = *bytes.get(1)?;
    if !(next.is_ascii_alphabetic() || matches!(next, b'/' | b'!' | b'?')) {
        return None;
    }
    let end = memchr::memchr(b'>', &bytes[..bytes.len().min(MAX_TAG_LEN)])?;
    // A `<` before the `>` means this was not a tag (`a <b <c>`).
    if memchr::memchr(b'<', &bytes[1..end]).is_some() {
        return None;
    }
    Some(end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_collapsed_and_trimmed() {
        assert_eq!(clean("  a \n\t b\u{a0}\u{0}c  ", 100), "a b c");
        assert_eq!(clean("\n\n", 100), "");
    }

    #[test]
    fn tags_removed_but_comparisons_kept() {
        assert_eq!(clean("<p>Hello <b>world</b></p>", 100), "Hello world");
        assert_eq!(clean("a < b and c<d", 100), "a < b and c<d");
        assert_eq!(clean("x <script>alert(1)</script> y", 100), "x alert(1) y");
    }

    #[test]
    fn bounded_with_ellipsis() {
        assert_eq!(clean("abcdef", 4), "abc…");
        assert_eq!(clean("ab cdef", 4), "ab…");
        assert_eq!(clean("abcd", 4), "abcd");
        assert_eq!(clean("日本語のタイトル", 3), "日本…");
        let huge = "x".repeat(10_000_000);
        assert_eq!(clean(&huge, 300).chars().count(), 300);
    }
}
