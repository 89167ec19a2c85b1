//! Finding phrases in text the way members' keyword filters and the
//! site's word filters do: one normalisation of text ([`normalize`]), applied
//! to the phrases once when they are compiled and to each text when it is
//! searched, and one automaton over all the phrases of a set
//! ([`PhraseSet`], Aho-Corasick), so a text is read once whatever the number
//! of phrases.
//!
//! Normalising is, in order: Unicode NFKC (full-width letters, ligatures
//! and other compatibility forms read as their plain letters), removing
//! zero-width and invisible formatting characters, lower case, then folding
//! look-alikes to the Latin letter they imitate: the Greek and Cyrillic
//! letters whose Unicode confusables skeleton (UTS #39, from the
//! `unicode-security` crate) is one Latin letter, and the digits 0, 1, 3, 4
//! and 5 (read as o, i, e, a and s). Text that is all ASCII skips NFKC,
//! which leaves ASCII as it is.
//!
//! The automaton is a DFA: building it costs more than the default, but
//! it is built once per change of a set, and it reads a text at about a
//! byte per step whatever the number of phrases (docs/benchmarks.md,
//! "Word filters").
//!
//! A whole-word phrase matches only where neither the character before nor
//! the one after it is a letter or a digit (of any script), so `cat`
//! matches in `a cat.` but not in `concatenate`; a phrase that is not
//! whole-word matches anywhere.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};
use unicode_security::confusable_detection::skeleton;

/// The Greek and Cyrillic blocks (and their extensions) whose letters are
/// folded when they look like a Latin letter.
const LOOK_ALIKE_BLOCKS: [std::ops::RangeInclusive<u32>; 5] = [
    0x0370..=0x03FF,
    0x0400..=0x04FF,
    0x0500..=0x052F,
    0x1C80..=0x1C8F,
    0x1F00..=0x1FFF,
];

/// Each Greek or Cyrillic letter whose confusables skeleton, in lower
/// case, is a single ASCII letter, with that letter, by code point (built
/// once).
static LOOK_ALIKES: LazyLock<Vec<(char, char)>> = LazyLock::new(|| {
    LOOK_ALIKE_BLOCKS
        .iter()
        .flat_map(|block| block.clone().filter_map(char::from_u32))
        .filter(|letter| letter.is_alphabetic())
        .filter_map(|letter| {
            let letter_text = letter.to_string();
            let mut prototype = skeleton(&letter_text).flat_map(char::to_lowercase);
            match (prototype.next(), prototype.next()) {
                (Some(latin), None) if latin.is_ascii_lowercase() => Some((letter, latin)),
                _ => None,
            }
        })
        .collect()
});

/// Characters that take no space and are dropped: zero-width space,
/// non-joiner and joiner, word joiner, the byte order mark, the soft
/// hyphen, the Mongolian vowel separator and the invisible operators.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200B}'..='\u{200D}'
            | '\u{2060}'..='\u{2064}'
            | '\u{FEFF}'
            | '\u{00AD}'
            | '\u{180E}'
    )
}

/// An ASCII byte as it is read: lower case, and the digits 0, 1, 3, 4 and
/// 5 as o, i, e, a and s.
const fn fold_ascii(byte: u8) -> u8 {
    match byte.to_ascii_lowercase() {
        b'0' => b'o',
        b'1' => b'i',
        b'3' => b'e',
        b'4' => b'a',
        b'5' => b's',
        other => other,
    }
}

/// [`fold_ascii`] of every ASCII byte.
const ASCII_FOLDED: [u8; 128] = {
    let mut table = [0; 128];
    let mut byte = 0;
    while byte < 128 {
        table[byte as usize] = fold_ascii(byte);
        byte += 1;
    }
    table
};

/// The letter a lower-case non-ASCII character is read as: a look-alike's
/// Latin letter, else itself.
fn fold(c: char) -> char {
    let code = u32::from(c);
    if !LOOK_ALIKE_BLOCKS.iter().any(|block| block.contains(&code)) {
        return c;
    }
    LOOK_ALIKES
        .binary_search_by_key(&c, |&(letter, _)| letter)
        .map_or(c, |found| LOOK_ALIKES[found].1)
}

/// `text` as phrases and texts are compared (see the module
/// documentation). Runs of ASCII are copied through a table, and text
/// already in NFKC (the quick check of its non-ASCII characters says so)
/// is not normalised again.
pub fn normalize(text: &str) -> String {
    let mut normalized = Vec::with_capacity(text.len());
    if text.is_ascii() || is_nfkc_quick(text.chars().filter(|c| !c.is_ascii())) == IsNormalized::Yes
    {
        fold_into(&mut normalized, text);
    } else {
        fold_into(&mut normalized, &text.nfkc().collect::<String>());
    }
    String::from_utf8(normalized).unwrap_or_default()
}

/// Appends `text` (in NFKC) to `normalized` as UTF-8, without its
/// invisible characters, in lower case, its look-alikes folded.
fn fold_into(normalized: &mut Vec<u8>, text: &str) {
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = rest
            .bytes()
            .position(|byte| !byte.is_ascii())
            .unwrap_or(rest.len());
        normalized.extend(
            rest.as_bytes()[..ascii]
                .iter()
                .map(|&byte| ASCII_FOLDED[usize::from(byte)]),
        );
        let mut chars = rest[ascii..].chars();
        if let Some(c) = chars.next()
            && !is_invisible(c)
        {
            let mut push = |c: char| {
                let mut buffer = [0; 4];
                normalized.extend_from_slice(fold(c).encode_utf8(&mut buffer).as_bytes());
            };
            // A lower-case letter is its own lower case; asking the case
            // tables only for the others saves most of the lookups.
            if c.is_lowercase() {
                push(c);
            } else {
                c.to_lowercase().for_each(push);
            }
        }
        rest = chars.as_str();
    }
}

/// A phrase to find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phrase {
    pub text: String,
    pub whole_word: bool,
}

/// Phrases compiled together: which of them a text holds.
#[derive(Debug, Clone)]
pub struct PhraseSet {
    /// `None` when no phrase has any character after normalisation.
    automaton: Option<AhoCorasick>,
    /// Per pattern of the automaton: whether it matches whole words only.
    whole_word: Vec<bool>,
}

impl PhraseSet {
    /// The automaton of `phrases`, each normalised; their order is the
    /// order of the indexes [`PhraseSet::found`] answers.
    pub fn compile(phrases: &[Phrase]) -> Self {
        let patterns: Vec<String> = phrases
            .iter()
            .map(|phrase| normalize(&phrase.text))
            .collect();
        let automaton = if patterns.iter().any(|pattern| !pattern.is_empty()) {
            AhoCorasickBuilder::new()
                .match_kind(MatchKind::Standard)
                .kind(Some(AhoCorasickKind::DFA))
                .build(&patterns)
                .ok()
        } else {
            None
        };
        PhraseSet {
            automaton,
            whole_word: phrases.iter().map(|phrase| phrase.whole_word).collect(),
        }
    }

    /// Whether no phrase can match.
    pub fn is_empty(&self) -> bool {
        self.automaton.is_none()
    }

    /// The indexes of the phrases found in the texts, each once, in
    /// ascending order. The texts are searched one by one (a match never
    /// spans two of them).
    pub fn found<'a>(&self, texts: impl IntoIterator<Item = &'a str>) -> Vec<usize> {
        let Some(automaton) = &self.automaton else {
            return Vec::new();
        };
        let mut found = vec![false; self.whole_word.len()];
        for text in texts {
            let text = normalize(text);
            for hit in automaton.find_overlapping_iter(&text) {
                let index = hit.pattern().as_usize();
                if found[index] {
                    continue;
                }
                if !self.whole_word[index] || stands_alone(&text, hit.start(), hit.end()) {
                    found[index] = true;
                }
            }
        }
        found
            .iter()
            .enumerate()
            .filter_map(|(index, hit)| hit.then_some(index))
            .collect()
    }
}

/// Whether the bytes `start..end` of `text` are a whole word: no letter or
/// digit right before or right after.
fn stands_alone(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phrase(text: &str, whole_word: bool) -> Phrase {
        Phrase {
            text: text.to_owned(),
            whole_word,
        }
    }

    fn found(phrases: &[Phrase], text: &str) -> Vec<usize> {
        PhraseSet::compile(phrases).found([text])
    }

    #[test]
    fn case_and_compatibility_forms_do_not_matter() {
        let set = [phrase("Spoiler", true)];
        assert_eq!(found(&set, "a SPOILER here"), [0]);
        assert_eq!(found(&set, "ａ ｓｐｏｉｌｅｒ"), [0], "full-width letters");
        assert_eq!(found(&[phrase("ﬁsh", true)], "Fish"), [0], "a ligature");
        assert_eq!(found(&[phrase("fish", true)], "ﬁsh"), [0], "either side");
        assert_eq!(normalize("Ⅻ Ǆ"), "xii dž");
    }

    #[test]
    fn invisible_characters_are_dropped() {
        let set = [phrase("spam", true)];
        assert_eq!(found(&set, "s\u{200B}p\u{200D}a\u{FEFF}m"), [0]);
        assert_eq!(found(&set, "sp\u{00AD}am"), [0], "a soft hyphen");
        assert_eq!(normalize("a\u{2060}b"), "ab");
    }

    #[test]
    fn look_alike_letters_and_digits_read_as_latin() {
        let set = [phrase("spam", true), phrase("casino", true)];
        // Cyrillic ѕ, р, а; Greek Ι and Ο.
        assert_eq!(found(&set, "\u{0455}\u{0440}\u{0430}m"), [0], "Cyrillic");
        assert_eq!(found(&set, "CAS\u{0399}N\u{039F}"), [1], "Greek capitals");
        assert_eq!(found(&set, "c4s1n0"), [1], "digits");
        assert_eq!(found(&set, "5P4M"), [0]);
        assert_eq!(normalize("h3ll0 w0rld"), "hello world");
        assert_eq!(normalize("\u{0435}\u{0445}\u{043E}"), "exo");
        assert_eq!(normalize("\u{03B1}\u{03BF}"), "ao");
        assert_eq!(normalize("2"), "2", "other digits stay");
        assert_eq!(
            normalize("\u{0436}"),
            "\u{0436}",
            "a Cyrillic letter like no Latin one"
        );
        let greek_phrase = [phrase("\u{03BF}k", true)];
        assert_eq!(found(&greek_phrase, "OK"), [0], "phrases fold too");
    }

    #[test]
    fn whole_words_need_no_letter_or_digit_around_them() {
        let whole = [phrase("cat", true)];
        assert_eq!(found(&whole, "a cat."), [0]);
        assert_eq!(found(&whole, "cat"), [0]);
        assert_eq!(found(&whole, "(cat)"), [0]);
        assert!(found(&whole, "concatenate").is_empty());
        assert!(found(&whole, "cats").is_empty());
        assert!(found(&whole, "cat2").is_empty());
        assert!(found(&whole, "écat").is_empty(), "a letter of any script");
        assert_eq!(found(&[phrase("cat", false)], "concatenate"), [0]);
        assert_eq!(found(&[phrase("new york", true)], "in New York!"), [0]);
    }

    #[test]
    fn a_later_whole_word_occurrence_counts_after_an_embedded_one() {
        assert_eq!(found(&[phrase("cat", true)], "concat and cat"), [0]);
    }

    #[test]
    fn overlapping_phrases_are_each_found_once_in_order() {
        let set = [
            phrase("new york city", true),
            phrase("york", true),
            phrase("new", false),
        ];
        assert_eq!(found(&set, "New York City, new york"), [0, 1, 2]);
        let compiled = PhraseSet::compile(&set);
        assert_eq!(compiled.found(["title: york", "body: renewal"]), [1, 2]);
        assert!(
            compiled.found(["yo", "rk"]).is_empty(),
            "never across texts"
        );
    }

    #[test]
    fn nothing_to_find_finds_nothing() {
        assert!(PhraseSet::compile(&[]).is_empty());
        assert!(found(&[], "anything").is_empty());
        assert!(PhraseSet::compile(&[phrase("", true)]).is_empty());
    }
}
