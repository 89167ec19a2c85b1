//! The site's word filters (DECISIONS.md "The front door (round 5)"):
//! phrases an administrator keeps out of posts, replies, usernames and
//! profiles, each with what it does when a write holds it (`block` refuses
//! the write naming the field, `hold` stores the post or reply pending,
//! `flag` stores it published and flagged), their rows and writes, and
//! [`WordFilterSet`], all of them compiled into one [`PhraseSet`] so that
//! checking a write reads each of its texts once whatever the number of
//! filters (at most [`MAX_FILTERS`]).
//!
//! On usernames and profiles only `block` acts: an account has no pending
//! or flagged state, so `hold` and `flag` filters act on posts and replies.

use sqlx::FromRow;

use crate::dialect::Dialect;
use crate::phrases::{Phrase, PhraseSet, normalize};
use crate::time::now_millis;
use crate::{Database, DomainError, Flag, Tx};

/// Most filters that can exist.
pub const MAX_FILTERS: i64 = 1000;
/// Most characters in a phrase.
pub const MAX_PHRASE_CHARS: usize = 100;

/// What a filter does to a write whose text holds its phrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FilterAction {
    /// The post or reply is stored, published and flagged into the queue.
    Flag,
    /// The post or reply is stored `pending` until a moderator approves it.
    Hold,
    /// The write is refused (422 naming the field).
    Block,
}

impl FilterAction {
    pub const ALL: [FilterAction; 3] =
        [FilterAction::Block, FilterAction::Hold, FilterAction::Flag];

    pub fn as_str(self) -> &'static str {
        match self {
            FilterAction::Block => "block",
            FilterAction::Hold => "hold",
            FilterAction::Flag => "flag",
        }
    }

    pub fn parse(name: &str) -> Option<FilterAction> {
        FilterAction::ALL
            .into_iter()
            .find(|action| action.as_str() == name)
    }
}

/// The kinds of text a filter applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FilterScope {
    /// A post's title and content.
    Post,
    /// A reply's content.
    Reply,
    Username,
    /// A member's display name and bio.
    Profile,
}

impl FilterScope {
    pub const ALL: [FilterScope; 4] = [
        FilterScope::Post,
        FilterScope::Reply,
        FilterScope::Username,
        FilterScope::Profile,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FilterScope::Post => "post",
            FilterScope::Reply => "reply",
            FilterScope::Username => "username",
            FilterScope::Profile => "profile",
        }
    }

    pub fn parse(name: &str) -> Option<FilterScope> {
        FilterScope::ALL
            .into_iter()
            .find(|scope| scope.as_str() == name)
    }

    fn bit(self) -> u8 {
        match self {
            FilterScope::Post => 1,
            FilterScope::Reply => 2,
            FilterScope::Username => 4,
            FilterScope::Profile => 8,
        }
    }
}

/// A word filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordFilter {
    pub id: i64,
    pub phrase: String,
    pub action: FilterAction,
    pub whole_word: bool,
    /// In [`FilterScope::ALL`] order, never empty.
    pub applies_to: Vec<FilterScope>,
    pub created_at: i64,
    pub created_by: Option<i64>,
}

/// What creating a filter needs; the caller has checked the phrase's
/// length and that `applies_to` is not empty.
#[derive(Debug, Clone)]
pub struct NewWordFilter {
    pub phrase: String,
    pub action: FilterAction,
    pub whole_word: bool,
    pub applies_to: Vec<FilterScope>,
}

#[derive(FromRow)]
struct FilterRow {
    id: i64,
    phrase: String,
    action: String,
    whole_word: Flag,
    applies_to: String,
    created_at: i64,
    created_by: Option<i64>,
}

impl TryFrom<FilterRow> for WordFilter {
    type Error = DomainError;

    fn try_from(row: FilterRow) -> Result<Self, DomainError> {
        let action = FilterAction::parse(&row.action).ok_or_else(|| {
            DomainError::Conflict(format!(
                "word filter {} has unknown action {}",
                row.id, row.action
            ))
        })?;
        let named: Vec<&str> = row.applies_to.split(' ').collect();
        Ok(WordFilter {
            id: row.id,
            phrase: row.phrase,
            action,
            whole_word: row.whole_word.0,
            applies_to: FilterScope::ALL
                .into_iter()
                .filter(|scope| named.contains(&scope.as_str()))
                .collect(),
            created_at: row.created_at,
            created_by: row.created_by,
        })
    }
}

const FILTER_COLUMNS: &str = "id, phrase, action, whole_word, applies_to, created_at, created_by";

/// Whether `phrase` has anything left to find once normalised (a phrase of
/// invisible characters only has not).
pub fn is_findable(phrase: &str) -> bool {
    !normalize(phrase).trim().is_empty()
}

impl Database {
    /// Every filter, oldest first.
    pub async fn word_filters(&self) -> Result<Vec<WordFilter>, DomainError> {
        let rows: Vec<FilterRow> = sqlx::query_as(&format!(
            "SELECT {FILTER_COLUMNS} FROM word_filters ORDER BY id"
        ))
        .fetch_all(&mut *self.lease().await?)
        .await?;
        rows.into_iter().map(WordFilter::try_from).collect()
    }

    /// What tells whether the filters changed: their number and their
    /// highest id. Ids are never reused, so between two reads the filters
    /// are the same exactly when this is: a filter added has a higher id
    /// than any before it, and one removed lowers the number unless one is
    /// added, which moves the highest id.
    pub async fn word_filter_stamp(&self) -> Result<(i64, i64), DomainError> {
        let (count, highest): (i64, Option<i64>) =
            sqlx::query_as("SELECT COUNT(*), MAX(id) FROM word_filters")
                .fetch_one(&mut *self.lease().await?)
                .await?;
        Ok((count, highest.unwrap_or(0)))
    }
}

/// Creates a filter by `admin_id`. One more than [`MAX_FILTERS`] is
/// [`DomainError::Conflict`]; filter writes queue behind one another, so
/// the count the cap reads cannot change under it.
pub async fn create(
    tx: &mut Tx<'_>,
    new: NewWordFilter,
    admin_id: i64,
) -> Result<WordFilter, DomainError> {
    if let Some(statement) = Dialect::of(tx).queue_writers_of("word_filters") {
        sqlx::query(&statement).execute(&mut **tx).await?;
    }
    let applies_to: Vec<&str> = new.applies_to.iter().map(|scope| scope.as_str()).collect();
    let row: Option<FilterRow> = sqlx::query_as(&format!(
        "INSERT INTO word_filters (phrase, action, whole_word, applies_to, created_at, created_by) \
         SELECT $1, $2, $3, $4, $5, $6 WHERE (SELECT COUNT(*) FROM word_filters) < $7 \
         RETURNING {FILTER_COLUMNS}"
    ))
    .bind(new.phrase)
    .bind(new.action.as_str())
    .bind(new.whole_word)
    .bind(applies_to.join(" "))
    .bind(now_millis())
    .bind(admin_id)
    .bind(MAX_FILTERS)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or_else(|| {
        DomainError::Conflict(format!(
            "at most {MAX_FILTERS} word filters can exist; delete one first"
        ))
    })?
    .try_into()
}

/// Removes filter `id` and answers what it was.
pub async fn delete(tx: &mut Tx<'_>, id: i64) -> Result<WordFilter, DomainError> {
    let row: Option<FilterRow> = sqlx::query_as(&format!(
        "DELETE FROM word_filters WHERE id = $1 RETURNING {FILTER_COLUMNS}"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or(DomainError::NotFound("word filter"))?.try_into()
}

/// A filter as its audit entry records it.
pub fn snapshot(filter: &WordFilter) -> serde_json::Value {
    serde_json::json!({
        "phrase": filter.phrase,
        "action": filter.action.as_str(),
        "wholeWord": filter.whole_word,
        "appliesTo": filter.applies_to.iter().map(|scope| scope.as_str()).collect::<Vec<_>>(),
    })
}

/// What the filters say of one write: the first field a `block` filter
/// found a phrase in, else the phrase of a `hold` filter, and the phrase of
/// a `flag` filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The field named in the 422 and the phrase found in it.
    pub blocked: Option<(&'static str, String)>,
    pub hold: Option<String>,
    pub flag: Option<String>,
}

impl Verdict {
    /// The write refused, naming the field, when a `block` filter matched.
    pub fn refusal(&self) -> Result<(), DomainError> {
        match &self.blocked {
            Some((field, _)) => Err(DomainError::Invalid {
                field,
                reason: "contains a word or phrase that is not allowed here".to_owned(),
            }),
            None => Ok(()),
        }
    }
}

/// Every filter compiled together.
#[derive(Debug, Clone)]
pub struct WordFilterSet {
    phrases: PhraseSet,
    /// Per phrase of `phrases`: its filter's action, phrase and scopes.
    filters: Vec<(FilterAction, String, u8)>,
}

impl Default for WordFilterSet {
    fn default() -> Self {
        WordFilterSet::compile(&[])
    }
}

impl WordFilterSet {
    pub fn compile(filters: &[WordFilter]) -> Self {
        let phrases: Vec<Phrase> = filters
            .iter()
            .map(|filter| Phrase {
                text: filter.phrase.clone(),
                whole_word: filter.whole_word,
            })
            .collect();
        WordFilterSet {
            phrases: PhraseSet::compile(&phrases),
            filters: filters
                .iter()
                .map(|filter| {
                    let scopes = filter
                        .applies_to
                        .iter()
                        .fold(0, |bits, scope| bits | scope.bit());
                    (filter.action, filter.phrase.clone(), scopes)
                })
                .collect(),
        }
    }

    /// What the filters applying to `scope` say of `fields` (each a field's
    /// name, as a 422 names it, and its text).
    pub fn check(&self, scope: FilterScope, fields: &[(&'static str, &str)]) -> Verdict {
        let mut verdict = Verdict::default();
        if self.phrases.is_empty() {
            return verdict;
        }
        for &(field, text) in fields {
            for index in self.phrases.found([text]) {
                let (action, phrase, scopes) = &self.filters[index];
                if scopes & scope.bit() == 0 {
                    continue;
                }
                let slot = match action {
                    FilterAction::Block if verdict.blocked.is_none() => {
                        verdict.blocked = Some((field, phrase.clone()));
                        continue;
                    }
                    FilterAction::Block => continue,
                    FilterAction::Hold => &mut verdict.hold,
                    FilterAction::Flag => &mut verdict.flag,
                };
                if slot.is_none() {
                    *slot = Some(phrase.clone());
                }
            }
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(phrase: &str, action: FilterAction, applies_to: &[FilterScope]) -> WordFilter {
        WordFilter {
            id: 0,
            phrase: phrase.to_owned(),
            action,
            whole_word: true,
            applies_to: applies_to.to_vec(),
            created_at: 0,
            created_by: None,
        }
    }

    #[test]
    fn each_action_on_the_scopes_it_applies_to() {
        let set = WordFilterSet::compile(&[
            filter("casino", FilterAction::Block, &[FilterScope::Post]),
            filter("crypto", FilterAction::Hold, &FilterScope::ALL),
            filter("promo", FilterAction::Flag, &FilterScope::ALL),
        ]);
        let post = set.check(
            FilterScope::Post,
            &[("title", "Hello"), ("content", "best CAS1NO promo crypto")],
        );
        assert_eq!(post.blocked, Some(("content", "casino".to_owned())));
        assert!(post.refusal().is_err());
        assert_eq!(post.hold.as_deref(), Some("crypto"));
        assert_eq!(post.flag.as_deref(), Some("promo"));
        let reply = set.check(FilterScope::Reply, &[("content", "casino")]);
        assert_eq!(reply, Verdict::default(), "the block filter is for posts");
        assert!(reply.refusal().is_ok());
    }

    #[test]
    fn the_first_field_blocked_is_named() {
        let set =
            WordFilterSet::compile(&[filter("spam", FilterAction::Block, &[FilterScope::Profile])]);
        let verdict = set.check(
            FilterScope::Profile,
            &[("name", "ok"), ("bio", "sp\u{200B}am")],
        );
        assert_eq!(verdict.blocked, Some(("bio", "spam".to_owned())));
    }

    #[test]
    fn invisible_phrases_find_nothing() {
        assert!(!is_findable("\u{200B}\u{200D}"));
        assert!(!is_findable("   "));
        assert!(is_findable("ok"));
    }
}
