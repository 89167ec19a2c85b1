//! Finding phrases in text the way members' keyword filters do, and the
//! site's word filters can: one normalisation of text ([`normalize`]:
//! Unicode NFKC, then lower case), applied to the phrases once when they
//! are compiled and to each text when it is searched, and one automaton
//! over all the phrases of a set ([`PhraseSet`], Aho-Corasick), so a text
//! is read once whatever the number of phrases.
//!
//! A whole-word phrase matches only where neither the character before nor
//! the one after it is a letter or a digit (of any script), so `cat`
//! matches in `a cat.` but not in `concatenate`; a phrase that is not
//! whole-word matches anywhere.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use unicode_normalization::UnicodeNormalization;

/// `text` as phrases and texts are compared: NFKC (so full-width letters,
/// ligatures and other compatibility forms read as their plain letters),
/// then lower case.
pub fn normalize(text: &str) -> String {
    text.nfkc().flat_map(char::to_lowercase).collect()
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
