//! The catalog: every Unicode emoji of the `emojis` crate, shaped as the rows
//! the server stores.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::OnceLock;

use crate::EmojiVersion;

/// The category that holds custom emojis; no Unicode emoji is in it.
pub const CUSTOM_CATEGORY: &str = "custom";

/// One category (an Emoji group) as stored and listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Category {
    /// Slug, e.g. "smileys_emotion": stable, used as the key in the database.
    pub name: &'static str,
    /// CLDR's group name, e.g. "Smileys & Emotion".
    pub display_name: &'static str,
    pub description: &'static str,
    /// Position for listing: CLDR order, `custom` last.
    pub sort_order: i64,
}

const fn category(
    order: i64,
    name: &'static str,
    display: &'static str,
    about: &'static str,
) -> Category {
    Category {
        name,
        display_name: display,
        description: about,
        sort_order: order,
    }
}

#[rustfmt::skip]
static CATEGORIES: [Category; 10] = [
    category(0, "smileys_emotion", "Smileys & Emotion", "Faces, hearts and other emotions"),
    category(1, "people_body", "People & Body", "People, hands, gestures and roles"),
    category(2, "animals_nature", "Animals & Nature", "Animals, plants and weather"),
    category(3, "food_drink", "Food & Drink", "Food, drink and dishware"),
    category(4, "travel_places", "Travel & Places", "Places, buildings, transport and time"),
    category(5, "activities", "Activities", "Events, sports, games and arts"),
    category(6, "objects", "Objects", "Clothing, tools, devices and other things"),
    category(7, "symbols", "Symbols", "Signs, arrows, keycaps and other symbols"),
    category(8, "flags", "Flags", "Country, regional and other flags"),
    category(9, CUSTOM_CATEGORY, "Custom", "Emojis uploaded for this Plaza"),
];

/// The Unicode groups in CLDR order, then `custom` (for custom emojis; no
/// Unicode emoji in it).
pub fn categories() -> &'static [Category] {
    &CATEGORIES
}

fn category_of(group: emojis::Group) -> &'static str {
    use emojis::Group as G;
    let index = match group {
        G::SmileysAndEmotion => 0,
        G::PeopleAndBody => 1,
        G::AnimalsAndNature => 2,
        G::FoodAndDrink => 3,
        G::TravelAndPlaces => 4,
        G::Activities => 5,
        G::Objects => 6,
        G::Symbols => 7,
        G::Flags => 8,
    };
    CATEGORIES[index].name
}

/// One Unicode emoji of the catalog (default skin tone only: the other tones
/// are variants of the same entry, not entries of their own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEmoji {
    /// Stable identifier: the code points in lowercase hex joined by '-', e.g.
    /// "1f600", "1f468-200d-1f469-200d-1f467" (including FE0F if present in
    /// the string).
    pub emoji_id: String,
    /// "U+1F600" style, space separated for sequences: "U+1F468 U+200D U+1F469".
    pub unicode_codepoint: String,
    pub unicode_char: &'static str,
    /// CLDR short name, e.g. "grinning face".
    pub name: &'static str,
    /// The category slug (one of `categories()` names).
    pub category: &'static str,
    /// gemoji shortcodes without colons.
    pub aliases: Vec<String>,
    /// Search words: the name's words and the shortcodes' words, lowercase,
    /// deduplicated, in order. The `emojis` crate carries no CLDR keyword
    /// annotations, so these are all the words there are.
    pub keywords: Vec<String>,
    /// Tags: the category slug. The crate exposes no CLDR subgroup, so that is
    /// the only tag.
    pub tags: Vec<String>,
    /// The Emoji version it first appeared in (UTS #51, not the Unicode version).
    pub version: EmojiVersion,
    /// Position in CLDR order (0-based), for the default sort.
    pub sort_order: i64,
}

/// Whether `text` is exactly one emoji of the catalog, spelled as
/// [`CatalogEmoji::unicode_char`] spells it (a default skin tone only, as
/// the catalog holds them).
pub fn is_catalog_emoji(text: &str) -> bool {
    static CHARACTERS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    CHARACTERS
        .get_or_init(|| emojis::iter().map(emojis::Emoji::as_str).collect())
        .contains(text)
}

/// The whole catalog in CLDR order.
pub fn catalog() -> Vec<CatalogEmoji> {
    emojis::iter()
        .enumerate()
        .map(|(position, emoji)| {
            let category = category_of(emoji.group());
            let aliases: Vec<String> = emoji.shortcodes().map(str::to_owned).collect();
            CatalogEmoji {
                emoji_id: code_points(emoji.as_str(), "-", |out, c| write!(out, "{c:x}")),
                unicode_codepoint: code_points(emoji.as_str(), " ", |out, c| {
                    write!(out, "U+{c:04X}")
                }),
                unicode_char: emoji.as_str(),
                name: emoji.name(),
                category,
                keywords: keywords(emoji.name(), &aliases),
                aliases,
                tags: vec![category.to_owned()],
                version: EmojiVersion::from_crate(emoji.emoji_version()),
                sort_order: i64::try_from(position).unwrap_or(i64::MAX),
            }
        })
        .collect()
}

fn code_points(
    s: &str,
    separator: &str,
    each: impl Fn(&mut String, u32) -> std::fmt::Result,
) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        // Writing to a String cannot fail.
        let _ = each(&mut out, u32::from(c));
    }
    out
}

fn keywords(name: &str, aliases: &[String]) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let sources = std::iter::once(name).chain(aliases.iter().map(String::as_str));
    for source in sources {
        // Split on punctuation and '_' but keep '#' and '*' (the keycaps) and
        // apostrophes inside words ("woman’s").
        let parts =
            source.split(|c: char| !(c.is_alphanumeric() || matches!(c, '#' | '*' | '\'' | '’')));
        for part in parts {
            let word = part.trim_matches(['\'', '’']).to_lowercase();
            if !word.is_empty() && !words.contains(&word) {
                words.push(word);
            }
        }
    }
    words
}

/// A fingerprint of the catalog, e.g. "emojis-0.9:1923:18.0:15af168a0451f827":
/// the number of emojis, the newest Emoji version and a hash (64-bit FNV-1a)
/// of every field [`catalog()`] derives, so that the loader can tell when a
/// new crate version brings new emojis, names or shortcodes. Deterministic
/// across builds and platforms; the "emojis-0.9" label is fixed text.
pub fn catalog_fingerprint() -> String {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = FNV_OFFSET;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes.iter().chain(&[0x1f]) {
            hash = (hash ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        }
    };
    let (mut count, mut newest) = (0usize, EmojiVersion::new(0, 0));
    for emoji in emojis::iter() {
        let version = EmojiVersion::from_crate(emoji.emoji_version());
        count += 1;
        newest = newest.max(version);
        feed(emoji.as_str().as_bytes());
        feed(emoji.name().as_bytes());
        feed(category_of(emoji.group()).as_bytes());
        feed(&version.rank().to_le_bytes());
        for shortcode in emoji.shortcodes() {
            feed(shortcode.as_bytes());
        }
    }
    format!("emojis-0.9:{count}:{newest}:{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_complete_and_consistent() {
        let all = catalog();
        assert!(all.len() > 1800, "only {} emojis", all.len());
        let ids: HashSet<&str> = all.iter().map(|e| e.emoji_id.as_str()).collect();
        assert_eq!(ids.len(), all.len(), "emoji ids are not unique");
        let slugs: HashSet<&str> = categories().iter().map(|c| c.name).collect();
        let crate_unicode = emojis::UNICODE_VERSION;
        let newest_possible = EmojiVersion::new(
            u16::try_from(crate_unicode.major()).unwrap(),
            u16::try_from(crate_unicode.minor()).unwrap(),
        );
        for (i, e) in all.iter().enumerate() {
            assert!(
                slugs.contains(e.category),
                "{} has category {}",
                e.name,
                e.category
            );
            assert_ne!(e.category, CUSTOM_CATEGORY);
            assert!(e.version <= newest_possible, "{} is {}", e.name, e.version);
            assert_eq!(e.sort_order, i64::try_from(i).unwrap());
            assert_eq!(e.tags, [e.category]);
            assert!(!e.keywords.is_empty(), "{} has no keywords", e.name);
        }
        let old = all
            .iter()
            .filter(|e| e.version <= EmojiVersion::new(12, 0))
            .count();
        assert!(old < all.len());
    }

    /// Lists ordered by `sort_order` alone come out category by category
    /// in the categories' order (the database sorts without a join).
    #[test]
    fn catalog_order_keeps_the_categories_in_their_order() {
        let rank = |slug: &str| {
            categories()
                .iter()
                .find(|category| category.name == slug)
                .map(|category| category.sort_order)
                .unwrap()
        };
        let ranks: Vec<i64> = catalog().iter().map(|e| rank(e.category)).collect();
        assert!(ranks.windows(2).all(|pair| pair[0] <= pair[1]));
    }

    #[test]
    fn grinning_face_and_sequences() {
        let all = catalog();
        let grinning = &all[0];
        assert_eq!(grinning.emoji_id, "1f600");
        assert_eq!(grinning.unicode_codepoint, "U+1F600");
        assert_eq!(grinning.unicode_char, "😀");
        assert_eq!(grinning.name, "grinning face");
        assert_eq!(grinning.category, "smileys_emotion");
        assert_eq!(grinning.aliases, ["grinning"]);
        assert_eq!(grinning.keywords, ["grinning", "face"]);
        assert_eq!(grinning.version, EmojiVersion::new(1, 0));

        let family = all.iter().find(|e| e.unicode_char == "👨‍👩‍👧").unwrap();
        assert_eq!(family.emoji_id, "1f468-200d-1f469-200d-1f467");
        assert_eq!(
            family.unicode_codepoint,
            "U+1F468 U+200D U+1F469 U+200D U+1F467"
        );
        let copyright = all.iter().find(|e| e.name == "copyright").unwrap();
        assert_eq!(copyright.emoji_id, "a9-fe0f");
        assert_eq!(copyright.unicode_codepoint, "U+00A9 U+FE0F");
        let laughing = all.iter().find(|e| e.unicode_char == "😆").unwrap();
        assert_eq!(laughing.aliases, ["laughing", "satisfied"]);
        assert_eq!(
            laughing.keywords,
            ["grinning", "squinting", "face", "laughing", "satisfied"]
        );
    }

    #[test]
    fn categories_are_in_order_with_custom_last() {
        let cats = categories();
        assert_eq!(cats.len(), 10);
        assert_eq!(cats[0].name, "smileys_emotion");
        assert_eq!(cats[9].name, CUSTOM_CATEGORY);
        assert!(cats.windows(2).all(|w| w[0].sort_order < w[1].sort_order));
        // Every Unicode category holds at least one emoji.
        let all = catalog();
        for c in &cats[..9] {
            assert!(
                all.iter().any(|e| e.category == c.name),
                "{} is empty",
                c.name
            );
        }
    }

    #[test]
    fn fingerprint_is_stable_and_describes_the_catalog() {
        let fingerprint = catalog_fingerprint();
        assert_eq!(fingerprint, catalog_fingerprint());
        let newest = catalog().iter().map(|e| e.version).max().unwrap();
        let expected = format!("emojis-0.9:{}:{newest}:", catalog().len());
        assert!(fingerprint.starts_with(&expected), "{fingerprint}");
    }

    #[test]
    fn a_catalog_emoji_is_one_of_its_characters_exactly() {
        assert!(is_catalog_emoji("👍"));
        assert!(is_catalog_emoji("❤️"));
        assert!(
            catalog()
                .iter()
                .all(|emoji| is_catalog_emoji(emoji.unicode_char))
        );
        for other in ["👍🏽", "👍👍", "a", "", ":thumbsup:", " 👍"] {
            assert!(!is_catalog_emoji(other), "{other:?}");
        }
    }
}
