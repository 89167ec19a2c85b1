//! Keyword filters: a member's phrases that hide or mark what they read
//! (at most [`MAX_FILTERS`]).

use sqlx::{AnyConnection, FromRow};

use crate::time::now_millis;
use crate::{Database, DomainError, Flag, Tx};

/// Most filters one member keeps.
pub const MAX_FILTERS: i64 = 100;

/// Most characters in a filter's phrase.
pub const MAX_PHRASE_CHARS: usize = 100;

/// What a filter does to what it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterAction {
    /// Left out of lists; a placeholder in threads.
    Hide,
    /// Shown, marked with the phrase.
    Warn,
}

impl FilterAction {
    pub fn as_str(self) -> &'static str {
        match self {
            FilterAction::Hide => "hide",
            FilterAction::Warn => "warn",
        }
    }

    pub fn parse(name: &str) -> Option<FilterAction> {
        match name {
            "hide" => Some(FilterAction::Hide),
            "warn" => Some(FilterAction::Warn),
            _ => None,
        }
    }
}

/// A keyword filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub id: i64,
    pub phrase: String,
    pub whole_word: bool,
    pub action: FilterAction,
    /// When it ends; `None`: when deleted.
    pub expires_at: Option<i64>,
    pub created_at: i64,
}

#[derive(FromRow)]
struct FilterRow {
    id: i64,
    phrase: String,
    whole_word: Flag,
    action: String,
    expires_at: Option<i64>,
    created_at: i64,
}

impl TryFrom<FilterRow> for Filter {
    type Error = DomainError;

    fn try_from(row: FilterRow) -> Result<Self, DomainError> {
        Ok(Filter {
            id: row.id,
            action: FilterAction::parse(&row.action).ok_or_else(|| {
                DomainError::Conflict(format!(
                    "filter {} has unknown action {}",
                    row.id, row.action
                ))
            })?,
            phrase: row.phrase,
            whole_word: row.whole_word.0,
            expires_at: row.expires_at,
            created_at: row.created_at,
        })
    }
}

/// A filter to add; the HTTP layer has checked the phrase (1 to
/// [`MAX_PHRASE_CHARS`] characters) and that `expires_at` is in the future.
#[derive(Debug, Clone)]
pub struct NewFilter {
    pub phrase: String,
    pub whole_word: bool,
    pub action: FilterAction,
    pub expires_at: Option<i64>,
}

const FILTER_COLUMNS: &str = "id, phrase, whole_word, action, expires_at, created_at";

/// Adds a filter of `user_id`: at most [`MAX_FILTERS`] in force (422
/// `phrase`); filters that have ended are deleted first.
pub async fn add_filter(
    tx: &mut Tx<'_>,
    user_id: i64,
    new: NewFilter,
) -> Result<Filter, DomainError> {
    let now = now_millis();
    sqlx::query("DELETE FROM member_filters WHERE user_id = $1 AND expires_at <= $2")
        .bind(user_id)
        .bind(now)
        .execute(&mut **tx)
        .await?;
    let (held,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM member_filters WHERE user_id = $1")
        .bind(user_id)
        .fetch_one(&mut **tx)
        .await?;
    if held >= MAX_FILTERS {
        return Err(DomainError::Invalid {
            field: "phrase",
            reason: format!("a member keeps at most {MAX_FILTERS} filters"),
        });
    }
    let row: FilterRow = sqlx::query_as(&format!(
        "INSERT INTO member_filters (user_id, phrase, whole_word, action, expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING {FILTER_COLUMNS}"
    ))
    .bind(user_id)
    .bind(new.phrase)
    .bind(new.whole_word)
    .bind(new.action.as_str())
    .bind(new.expires_at)
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    Filter::try_from(row)
}

/// Deletes `user_id`'s filter `id`: 404 when they have none of that id.
pub async fn remove_filter(tx: &mut Tx<'_>, user_id: i64, id: i64) -> Result<(), DomainError> {
    let deleted = sqlx::query("DELETE FROM member_filters WHERE id = $1 AND user_id = $2")
        .bind(id)
        .bind(user_id)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    if deleted == 0 {
        return Err(DomainError::NotFound("filter"));
    }
    Ok(())
}

impl Database {
    /// `user_id`'s filters in force, oldest first.
    pub async fn filters_of(&self, user_id: i64) -> Result<Vec<Filter>, DomainError> {
        filters_in_force(&mut *self.lease().await?, user_id, now_millis()).await
    }
}

/// `user_id`'s filters in force at `now`, oldest first.
pub(super) async fn filters_in_force(
    connection: &mut AnyConnection,
    user_id: i64,
    now: i64,
) -> Result<Vec<Filter>, DomainError> {
    let rows: Vec<FilterRow> = sqlx::query_as(&format!(
        "SELECT {FILTER_COLUMNS} FROM member_filters \
         WHERE user_id = $1 AND (expires_at IS NULL OR expires_at > $2) ORDER BY id"
    ))
    .bind(user_id)
    .bind(now)
    .fetch_all(connection)
    .await?;
    rows.into_iter().map(Filter::try_from).collect()
}
