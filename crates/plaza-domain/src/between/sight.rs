//! A reader's relations as read at one version
//! ([`Database::relations_of`]), and the rule of what they see of an
//! author's item ([`Relations::sight`]).

use std::collections::{HashMap, HashSet};

use sqlx::FromRow;

use super::filters::{Filter, FilterAction, filters_in_force};
use crate::listing::{Arg, Args};
use crate::phrases::{Phrase, PhraseSet};
use crate::time::now_millis;
use crate::{Database, DomainError};

/// Why an item is not shown to its reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hidden {
    /// The reader blocks its author.
    Blocked,
    /// The reader mutes its author (the mute has not ended).
    Muted,
    /// A `hide` filter of the reader matches it.
    Filtered,
}

impl Hidden {
    /// The status a thread's placeholder shows.
    pub fn as_str(self) -> &'static str {
        match self {
            Hidden::Blocked => "blocked",
            Hidden::Muted => "muted",
            Hidden::Filtered => "filtered",
        }
    }
}

/// What a reader sees of an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sight {
    /// Shown; with the phrases of the reader's `warn` filters it matches,
    /// in the order the filters were made.
    Shown {
        warnings: Vec<String>,
    },
    Hidden(Hidden),
}

/// Everything one reader holds against others, as read at
/// `version` (the reader's `relations_version`).
#[derive(Debug, Clone)]
pub struct Relations {
    pub reader_id: i64,
    pub version: i64,
    blocked: HashSet<i64>,
    /// Muted authors, each with when the mute ends (`None`: never).
    muted: HashMap<i64, Option<i64>>,
    filters: Vec<Filter>,
    /// The filters' phrases, compiled once for this version.
    phrases: PhraseSet,
}

/// The condition a list's statement keeps to for a reader who hides
/// authors (blocked, or muted until after `now`): see [`Screen::sql`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Screen {
    pub reader_id: i64,
    pub now: i64,
}

impl Screen {
    /// An SQL condition true when the author in the column `author` is not
    /// hidden from the reader: one probe of `member_relations`' key.
    pub(crate) fn sql(&self, author: &str, args: &mut Args) -> String {
        let reader = args.push(Arg::Int(self.reader_id));
        let now = args.push(Arg::Int(self.now));
        format!(
            "NOT EXISTS (SELECT 1 FROM member_relations mr \
             WHERE mr.user_id = {reader} AND mr.other_id = {author} \
             AND (mr.blocked_at IS NOT NULL OR (mr.muted_at IS NOT NULL \
             AND (mr.mute_expires_at IS NULL OR mr.mute_expires_at > {now}))))"
        )
    }
}

impl Relations {
    pub fn new(
        reader_id: i64,
        version: i64,
        blocked: impl IntoIterator<Item = i64>,
        muted: impl IntoIterator<Item = (i64, Option<i64>)>,
        filters: Vec<Filter>,
    ) -> Self {
        let phrases = PhraseSet::compile(
            &filters
                .iter()
                .map(|filter| Phrase {
                    text: filter.phrase.clone(),
                    whole_word: filter.whole_word,
                })
                .collect::<Vec<_>>(),
        );
        Relations {
            reader_id,
            version,
            blocked: blocked.into_iter().collect(),
            muted: muted.into_iter().collect(),
            filters,
            phrases,
        }
    }

    /// Whether the mute of `author`, if any, holds at `now`.
    fn mutes(&self, author: i64, now: i64) -> bool {
        self.muted
            .get(&author)
            .is_some_and(|ends| ends.is_none_or(|ends| ends > now))
    }

    /// Whether the reader hides any author at `now`, so lists need their
    /// [`Screen`]; `None` keeps a list's statement as for anyone else.
    pub fn screen(&self, now: i64) -> Option<Screen> {
        let hides = !self.blocked.is_empty()
            || self
                .muted
                .values()
                .any(|ends| ends.is_none_or(|ends| ends > now));
        hides.then_some(Screen {
            reader_id: self.reader_id,
            now,
        })
    }

    /// When what [`Relations::screen`] hides next changes by itself: the
    /// earliest end of a mute after `now`.
    pub fn next_change_after(&self, now: i64) -> Option<i64> {
        self.muted
            .values()
            .filter_map(|ends| ends.filter(|ends| *ends > now))
            .min()
    }

    /// Whether anything applies to this reader at all.
    pub fn is_empty(&self) -> bool {
        self.blocked.is_empty() && self.muted.is_empty() && self.phrases.is_empty()
    }

    /// What the reader sees at `now` of an item by `author` (`None` for a
    /// placeholder without one) whose words are `texts`: their own items
    /// always; else hidden by a block, then by a mute, then by a `hide`
    /// filter that matches; else shown with the phrases of the `warn`
    /// filters that match. Filters that have ended do nothing.
    pub fn sight(&self, author: Option<i64>, texts: &[&str], now: i64) -> Sight {
        if let Some(author) = author {
            if author == self.reader_id {
                return Sight::Shown {
                    warnings: Vec::new(),
                };
            }
            if self.blocked.contains(&author) {
                return Sight::Hidden(Hidden::Blocked);
            }
            if self.mutes(author, now) {
                return Sight::Hidden(Hidden::Muted);
            }
        }
        let mut warnings = Vec::new();
        for index in self.phrases.found(texts.iter().copied()) {
            let filter = &self.filters[index];
            if filter.expires_at.is_some_and(|ends| ends <= now) {
                continue;
            }
            match filter.action {
                FilterAction::Hide => return Sight::Hidden(Hidden::Filtered),
                FilterAction::Warn => warnings.push(filter.phrase.clone()),
            }
        }
        Sight::Shown { warnings }
    }
}

/// What a reader holds against one other member.
#[derive(FromRow)]
struct RelationRow {
    other_id: i64,
    blocked_at: Option<i64>,
    muted_at: Option<i64>,
    mute_expires_at: Option<i64>,
}

impl Database {
    /// Everything `user_id` holds against others (blocks, mutes in force,
    /// filters in force) with the version it was read at. The version is
    /// read first, so a change committed meanwhile leaves the rows newer
    /// than the version, never older: the next request sees a newer
    /// version and reads again.
    pub async fn relations_of(&self, user_id: i64) -> Result<Relations, DomainError> {
        let mut lease = self.lease().await?;
        let (version,): (i64,) =
            sqlx::query_as("SELECT relations_version FROM users WHERE id = $1")
                .bind(user_id)
                .fetch_optional(&mut *lease)
                .await?
                .ok_or(DomainError::NotFound("user"))?;
        let now = now_millis();
        let rows: Vec<RelationRow> = sqlx::query_as(
            "SELECT other_id, blocked_at, muted_at, mute_expires_at FROM member_relations \
             WHERE user_id = $1 AND (blocked_at IS NOT NULL \
             OR (muted_at IS NOT NULL AND (mute_expires_at IS NULL OR mute_expires_at > $2)))",
        )
        .bind(user_id)
        .bind(now)
        .fetch_all(&mut *lease)
        .await?;
        let filters = filters_in_force(&mut lease, user_id, now).await?;
        let blocked = rows
            .iter()
            .filter(|row| row.blocked_at.is_some())
            .map(|row| row.other_id);
        let muted = rows
            .iter()
            .filter(|row| row.muted_at.is_some())
            .map(|row| (row.other_id, row.mute_expires_at));
        Ok(Relations::new(user_id, version, blocked, muted, filters))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(id: i64, phrase: &str, action: FilterAction, expires_at: Option<i64>) -> Filter {
        Filter {
            id,
            phrase: phrase.to_owned(),
            whole_word: true,
            action,
            expires_at,
            created_at: 0,
        }
    }

    fn shown(warnings: &[&str]) -> Sight {
        Sight::Shown {
            warnings: warnings.iter().map(|phrase| (*phrase).to_owned()).collect(),
        }
    }

    #[test]
    fn blocks_then_mutes_then_filters_decide() {
        let relations = Relations::new(
            1,
            7,
            [2],
            [(3, None), (4, Some(100)), (2, None)],
            vec![
                filter(1, "Spoiler", FilterAction::Warn, None),
                filter(2, "crypto", FilterAction::Hide, None),
                filter(3, "gone", FilterAction::Hide, Some(50)),
            ],
        );
        let sight = |author, text: &str, now| relations.sight(author, &[text], now);
        assert_eq!(sight(Some(2), "hello", 0), Sight::Hidden(Hidden::Blocked));
        assert_eq!(sight(Some(3), "hello", 0), Sight::Hidden(Hidden::Muted));
        assert_eq!(sight(Some(4), "hello", 99), Sight::Hidden(Hidden::Muted));
        assert_eq!(sight(Some(4), "hello", 100), shown(&[]), "the mute ended");
        assert_eq!(sight(Some(5), "a SPOILER", 0), shown(&["Spoiler"]));
        assert_eq!(
            sight(Some(5), "spoiler: crypto", 0),
            Sight::Hidden(Hidden::Filtered)
        );
        assert_eq!(sight(Some(5), "gone", 49), Sight::Hidden(Hidden::Filtered));
        assert_eq!(sight(Some(5), "gone", 50), shown(&[]), "the filter ended");
        assert_eq!(sight(None, "crypto", 0), Sight::Hidden(Hidden::Filtered));
        assert_eq!(sight(Some(1), "crypto spoiler", 0), shown(&[]), "one's own");
    }

    #[test]
    fn lists_screen_only_readers_who_hide_authors() {
        let none = Relations::new(1, 0, [], [], vec![filter(1, "x", FilterAction::Hide, None)]);
        assert_eq!(none.screen(0), None);
        assert!(!none.is_empty());
        let muting = Relations::new(1, 0, [], [(3, Some(100))], Vec::new());
        assert_eq!(
            muting.screen(99),
            Some(Screen {
                reader_id: 1,
                now: 99
            })
        );
        assert_eq!(muting.screen(100), None, "every mute has ended");
        assert_eq!(muting.next_change_after(10), Some(100));
        assert_eq!(muting.next_change_after(100), None);
        assert!(Relations::new(1, 0, [], [], Vec::new()).is_empty());
    }
}
