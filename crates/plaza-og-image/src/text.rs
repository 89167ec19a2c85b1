//! User text made safe and laid out: cleaning, bounding, escaping, measuring,
//! wrapping and fitting, all in integer arithmetic so the SVG is the same on
//! every machine.

use crate::fonts::{EM, Fonts, Weight, is_zero_width};

/// Longest quote kept, in characters; longer quotes end with an ellipsis.
pub const MAX_QUOTE_CHARS: usize = 500;
/// Longest author kept, in characters; longer names end with an ellipsis.
pub const MAX_AUTHOR_CHARS: usize = 100;
/// How many input characters are looked at, per kept character, before the
/// rest is ignored: bounds the work on hostile 100 KB inputs made mostly of
/// characters that are dropped.
const SCAN_FACTOR: usize = 64;
const ELLIPSIS: char = '…';

/// Cleans user text for the card: every run of whitespace becomes one space,
/// control characters, bidirectional overrides and non-characters are
/// dropped, and the result is at most `max_chars` characters, ending with an
/// ellipsis when it was cut.
pub fn clean(input: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(input.len().min(max_chars * 4));
    let mut kept = 0usize;
    let mut pending_space = false;
    let mut truncated = false;
    let scan_limit = max_chars.saturating_mul(SCAN_FACTOR).max(4096);
    for (scanned, c) in input.chars().enumerate() {
        if scanned >= scan_limit {
            truncated = true;
            break;
        }
        if c.is_whitespace() {
            pending_space = kept > 0;
            continue;
        }
        if is_dropped(c) {
            continue;
        }
        let needed = if pending_space { 2 } else { 1 };
        if kept + needed > max_chars {
            truncated = true;
            break;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.push(c);
        kept += needed;
    }
    if truncated && max_chars > 0 {
        while kept >= max_chars {
            out.pop();
            kept -= 1;
        }
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        if !out.is_empty() {
            out.push(ELLIPSIS);
        }
    }
    out
}

/// Characters never written to the card: C0/C1 controls, bidirectional
/// marks, embedding, override and isolate controls (they could reorder the
/// rest of the card), interlinear annotation controls, Unicode
/// non-characters (not allowed in XML) and emoji skin-tone modifiers (the
/// shipped emoji font is monochrome and would draw them as swatches).
fn is_dropped(c: char) -> bool {
    let code = u32::from(c);
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
                | '\u{FFF9}'..='\u{FFFB}' | '\u{FDD0}'..='\u{FDEF}' | '\u{1F3FB}'..='\u{1F3FF}'
        )
        || code & 0xFFFE == 0xFFFE
}

/// Escapes text for XML character data and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Whether the text's first strong character is right-to-left (Hebrew,
/// Arabic, Syriac, Thaana, N'Ko and their presentation forms).
pub fn is_rtl(text: &str) -> bool {
    for c in text.chars() {
        if matches!(c, '\u{0590}'..='\u{08FF}' | '\u{FB1D}'..='\u{FDFF}' | '\u{FE70}'..='\u{FEFF}' | '\u{10800}'..='\u{10FFF}' | '\u{1E800}'..='\u{1EFFF}')
        {
            return true;
        }
        if c.is_alphabetic() {
            return false;
        }
    }
    false
}

/// Scripts written without spaces, where a line may break between any two
/// characters (Han, kana, Hangul, CJK punctuation and full-width forms).
fn breaks_anywhere(c: char) -> bool {
    matches!(c,
        '\u{1100}'..='\u{11FF}'
        | '\u{2E80}'..='\u{303F}'
        | '\u{3040}'..='\u{30FF}'
        | '\u{3100}'..='\u{31FF}'
        | '\u{3200}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{A960}'..='\u{A97F}'
        | '\u{AC00}'..='\u{D7FF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{FF00}'..='\u{FFEF}'
        | '\u{20000}'..='\u{3FFFF}'
    )
}

/// Closing punctuation that must not begin a line in CJK text.
fn no_line_start(c: char) -> bool {
    matches!(
        c,
        '、' | '。'
            | '，'
            | '．'
            | '！'
            | '？'
            | '）'
            | '」'
            | '』'
            | '】'
            | '〉'
            | '》'
            | '：'
            | '；'
            | 'ー'
            | '々'
    )
}

/// Whether `c` belongs to the character before it (no line break between).
fn joins_previous(prev: Option<char>, c: char) -> bool {
    is_zero_width(c) || prev == Some('\u{200D}')
}

/// A piece of text that is never split unless it is wider than a line.
struct Atom<'a> {
    text: &'a str,
    width: u64,
    space_before: bool,
}

fn atoms<'a>(text: &'a str, fonts: &Fonts, weight: Weight) -> Vec<Atom<'a>> {
    let mut out: Vec<Atom<'a>> = Vec::new();
    let mut start: Option<usize> = None;
    let mut space_before = false;
    let mut prev: Option<char> = None;
    let push = |out: &mut Vec<Atom<'a>>, from: usize, to: usize, space: bool| {
        if let Some(piece) = text.get(from..to).filter(|p| !p.is_empty()) {
            out.push(Atom {
                text: piece,
                width: fonts.width(piece, weight),
                space_before: space,
            });
        }
    };
    for (index, c) in text.char_indices() {
        if c == ' ' {
            if let Some(from) = start.take() {
                push(&mut out, from, index, space_before);
            }
            space_before = true;
            prev = Some(c);
            continue;
        }
        let glued = joins_previous(prev, c) || (no_line_start(c) && start.is_some());
        let break_before =
            !glued && start.is_some() && (breaks_anywhere(c) || prev.is_some_and(breaks_anywhere));
        if break_before && let Some(from) = start.take() {
            push(&mut out, from, index, space_before);
            space_before = false;
        }
        if start.is_none() {
            start = Some(index);
        }
        prev = Some(c);
    }
    if let Some(from) = start {
        push(&mut out, from, text.len(), space_before);
    }
    out
}

/// Splits an over-long atom into the smallest pieces a line may break
/// between (a character with its marks, joiners and modifiers).
fn clusters(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev: Option<char> = None;
    // A regional indicator that opened a flag and waits for its pair.
    let mut open_flag = false;
    for (index, c) in text.char_indices() {
        let regional = matches!(c, '\u{1F1E6}'..='\u{1F1FF}');
        let glued = joins_previous(prev, c) || (regional && open_flag);
        if index > start && !glued {
            if let Some(piece) = text.get(start..index) {
                out.push(piece);
            }
            start = index;
        }
        open_flag = regional && !open_flag;
        prev = Some(c);
    }
    if let Some(piece) = text.get(start..).filter(|p| !p.is_empty()) {
        out.push(piece);
    }
    out
}

/// One wrapped line and its width in EM units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The text of the line (not escaped).
    pub text: String,
    /// Its width, in 1/EM of the font size.
    pub width: u64,
}

/// Wraps `text` into lines no wider than `limit` EM units.
fn wrap(text: &str, fonts: &Fonts, weight: Weight, limit: u64) -> Vec<Line> {
    let space = fonts.advance(' ', weight);
    let mut lines = Vec::new();
    let mut line = Line {
        text: String::new(),
        width: 0,
    };
    let place =
        |lines: &mut Vec<Line>, line: &mut Line, piece: &str, width: u64, space_before: bool| {
            let gap = if space_before && !line.text.is_empty() {
                space
            } else {
                0
            };
            if !line.text.is_empty() && line.width + gap + width > limit {
                lines.push(std::mem::replace(
                    line,
                    Line {
                        text: String::new(),
                        width: 0,
                    },
                ));
            }
            if space_before && !line.text.is_empty() {
                line.text.push(' ');
                line.width += space;
            }
            line.text.push_str(piece);
            line.width += width;
        };
    for atom in atoms(text, fonts, weight) {
        if atom.width <= limit {
            place(
                &mut lines,
                &mut line,
                atom.text,
                atom.width,
                atom.space_before,
            );
            continue;
        }
        for (index, piece) in clusters(atom.text).into_iter().enumerate() {
            let width = fonts.width(piece, weight);
            place(
                &mut lines,
                &mut line,
                piece,
                width,
                atom.space_before && index == 0,
            );
        }
    }
    if !line.text.is_empty() {
        lines.push(line);
    }
    lines
}

/// Shortens `text` from the end until it plus an ellipsis fits in `limit`.
fn ellipsize(text: &str, fonts: &Fonts, weight: Weight, limit: u64) -> Line {
    let ellipsis = fonts.advance(ELLIPSIS, weight);
    let mut kept = text.trim_end().to_string();
    let mut width = fonts.width(&kept, weight);
    while !kept.is_empty() && width + ellipsis > limit {
        kept.pop();
        let trimmed = kept.trim_end().len();
        kept.truncate(trimmed);
        width = fonts.width(&kept, weight);
    }
    kept.push(ELLIPSIS);
    Line {
        text: kept,
        width: width + ellipsis,
    }
}

/// A block of text fitted into a box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Font size in pixels.
    pub size: u32,
    /// Distance between baselines in pixels.
    pub line_height: u32,
    /// The lines, top to bottom.
    pub lines: Vec<Line>,
}

/// Line height as a multiple of the font size, in tenths.
const LINE_HEIGHT_TENTHS: u32 = 13;

/// Fits `text` into a box of `width` by `height` pixels: the largest font
/// size from `max_size` down to `min_size` (in steps of 2) at which the
/// wrapped text fits; at `min_size` the lines that do not fit are cut and
/// the last one ends with an ellipsis, so no text ever leaves the box.
pub fn fit_block(
    text: &str,
    weight: Weight,
    width: u32,
    height: u32,
    max_size: u32,
    min_size: u32,
) -> Block {
    let fonts = Fonts::get();
    let min_size = min_size.max(1);
    let mut size = max_size.max(min_size);
    loop {
        let limit = u64::from(width) * EM / u64::from(size);
        let line_height = size * LINE_HEIGHT_TENTHS / 10;
        let mut lines = wrap(text, fonts, weight, limit);
        let fits = u64::from(line_height) * lines.len() as u64 <= u64::from(height);
        if fits || size <= min_size {
            let max_lines = usize::try_from((height / line_height.max(1)).max(1)).unwrap_or(1);
            if lines.len() > max_lines {
                lines.truncate(max_lines);
                if let Some(last) = lines.pop() {
                    lines.push(ellipsize(&last.text, fonts, weight, limit));
                }
            }
            return Block {
                size,
                line_height,
                lines,
            };
        }
        size = size.saturating_sub(2).max(min_size);
    }
}

/// Fits `text` on one line of `width` pixels: the largest size from
/// `max_size` down to `min_size` at which it fits, else `min_size` with the
/// end cut and an ellipsis.
pub fn fit_line(
    text: &str,
    weight: Weight,
    width: u32,
    max_size: u32,
    min_size: u32,
) -> (Line, u32) {
    let fonts = Fonts::get();
    let measured = fonts.width(text, weight);
    let min_size = min_size.max(1);
    let mut size = max_size.max(min_size);
    while size > min_size && measured * u64::from(size) > u64::from(width) * EM {
        size = size.saturating_sub(2).max(min_size);
    }
    let limit = u64::from(width) * EM / u64::from(size);
    let line = if measured <= limit {
        Line {
            text: text.to_string(),
            width: measured,
        }
    } else {
        ellipsize(text, fonts, weight, limit)
    };
    (line, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_collapses_drops_and_bounds() {
        assert_eq!(clean("  a\n\tb  c ", 100), "a b c");
        assert_eq!(clean("x\u{0}y\u{7}z\u{1b}[31m", 100), "xyz[31m");
        assert_eq!(clean("\u{202E}evil\u{2066}", 100), "evil");
        assert_eq!(clean("abcdef", 4), "abc…");
        assert_eq!(clean("ab cdef", 4), "ab…");
        assert_eq!(clean("abcd", 4), "abcd");
        assert_eq!(clean("", 4), "");
        assert_eq!(clean("\u{FFFF}\u{FDD0}ok", 10), "ok");
        assert_eq!(clean("👍🏽", 10), "👍");
        assert_eq!(clean(&"a".repeat(100_000), 500).chars().count(), 500);
        assert_eq!(clean(&"\u{1}".repeat(100_000), 500), "");
    }

    #[test]
    fn escape_covers_markup() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn rtl_detection() {
        assert!(is_rtl("שלום עולם"));
        assert!(is_rtl("\"مرحبا\" hello"));
        assert!(!is_rtl("hello مرحبا"));
        assert!(!is_rtl("123"));
    }

    #[test]
    fn wrapping_keeps_every_line_inside() {
        let fonts = Fonts::get();
        for text in [
            "The quick brown fox jumps over the lazy dog again and again",
            "Supercalifragilisticexpialidocious-antidisestablishmentarianism-pneumonoultramicroscopic",
            "千里之行，始于足下。千里之行，始于足下。千里之行，始于足下。",
            "👩‍👩‍👧‍👦👩‍👩‍👧‍👦👩‍👩‍👧‍👦👍👍👍🇫🇷🇫🇷🇫🇷🇫🇷🇫🇷",
            "الحياة جميلة عندما نعيشها مع الأصدقاء والعائلة في كل يوم",
        ] {
            let limit = 6 * EM;
            let lines = wrap(text, fonts, Weight::Regular, limit);
            assert!(lines.len() > 1, "{text}");
            for line in &lines {
                assert!(line.width <= limit, "{line:?}");
                assert!(!line.text.starts_with(' ') && !line.text.ends_with(' '));
                assert!(!line.text.starts_with('，') && !line.text.starts_with('。'));
            }
            assert!(
                lines.iter().all(|l| !l.text.starts_with('\u{1F1F7}')),
                "flag split"
            );
            let joined: String = lines.iter().map(|l| l.text.replace(' ', "")).collect();
            assert_eq!(joined, text.replace(' ', ""));
        }
    }

    #[test]
    fn fit_block_shrinks_then_cuts() {
        let short = fit_block("Hello", Weight::Regular, 600, 300, 60, 20);
        assert_eq!(short.size, 60);
        assert_eq!(short.lines.len(), 1);
        let long = fit_block(&"word ".repeat(400), Weight::Regular, 600, 300, 60, 20);
        assert_eq!(long.size, 20);
        assert!(u64::from(long.line_height) * long.lines.len() as u64 <= 300);
        assert!(long.lines.last().is_some_and(|l| l.text.ends_with('…')));
        for line in &long.lines {
            assert!(line.width * 20 <= 600 * EM);
        }
    }

    #[test]
    fn fit_line_shrinks_then_cuts() {
        let (line, size) = fit_line("Ada Lovelace", Weight::Bold, 600, 34, 18);
        assert_eq!((line.text.as_str(), size), ("Ada Lovelace", 34));
        let (line, size) = fit_line(&"M".repeat(200), Weight::Bold, 600, 34, 18);
        assert_eq!(size, 18);
        assert!(line.text.ends_with('…'));
        assert!(line.width * 18 <= 600 * EM);
    }
}
