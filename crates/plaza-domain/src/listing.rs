//! Building blocks of list queries: sort direction, paging, numbered
//! placeholders for values (so user input only ever travels bound), and
//! JSON aggregation of a page into one value and reading it back.

use std::borrow::Cow;

use serde::Deserialize;
use sqlx::Any;
use sqlx::any::AnyArguments;
use sqlx::query::QueryAs;

use crate::{Database, DomainError};

/// Sort direction of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortOrder {
    Asc,
    #[default]
    Desc,
}

impl SortOrder {
    /// The only two spellings a request may use.
    pub fn parse(name: &str) -> Option<SortOrder> {
        match name {
            "asc" => Some(SortOrder::Asc),
            "desc" => Some(SortOrder::Desc),
            _ => None,
        }
    }

    /// Fixed SQL text; never built from input.
    pub(crate) fn sql(self) -> &'static str {
        match self {
            SortOrder::Asc => "ASC",
            SortOrder::Desc => "DESC",
        }
    }
}

/// One page of a list: at most `limit` rows after skipping `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: i64,
    pub offset: i64,
}

/// A value bound to a numbered placeholder.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Int(i64),
    Text(String),
    Bool(bool),
}

/// The values of one statement, numbered in the order they are added.
#[derive(Debug, Default)]
pub(crate) struct Args(Vec<Arg>);

impl Args {
    /// Registers a value and returns its placeholder (`$1`, `$2`, …).
    pub(crate) fn push(&mut self, value: Arg) -> String {
        self.0.push(value);
        format!("${}", self.0.len())
    }

    pub(crate) fn into_vec(self) -> Vec<Arg> {
        self.0
    }
}

/// ` WHERE a AND b` from fixed SQL fragments, or nothing without any.
pub(crate) fn where_clause(conditions: &[String]) -> String {
    if conditions.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conditions.join(" AND "))
    }
}

/// `LIKE` pattern text matching `text` literally (`\` escapes).
pub(crate) fn escape_like(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// Binds owned values in order (owned, so the future stays `Send`).
pub(crate) fn bind_all<'q, O>(
    mut query: QueryAs<'q, Any, O, AnyArguments<'q>>,
    args: Vec<Arg>,
) -> QueryAs<'q, Any, O, AnyArguments<'q>> {
    for value in args {
        query = match value {
            Arg::Int(number) => query.bind(number),
            Arg::Text(text) => query.bind(text),
            Arg::Bool(flag) => query.bind(flag),
        };
    }
    query
}

/// A flag inside JSON built by the database: `true`/`false` from
/// PostgreSQL, `1`/`0` from SQLite. Read by a visitor of both kinds rather
/// than as an untagged enum, which buffers every value before trying each
/// variant (three flags per user of a 100-user admin page).
#[derive(Debug, Clone, Copy)]
pub(crate) struct JsonFlag(bool);

impl From<JsonFlag> for bool {
    fn from(JsonFlag(flag): JsonFlag) -> bool {
        flag
    }
}

impl<'de> Deserialize<'de> for JsonFlag {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FlagVisitor;
        impl serde::de::Visitor<'_> for FlagVisitor {
            type Value = JsonFlag;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a boolean or an integer")
            }

            fn visit_bool<E: serde::de::Error>(self, flag: bool) -> Result<JsonFlag, E> {
                Ok(JsonFlag(flag))
            }

            fn visit_i64<E: serde::de::Error>(self, number: i64) -> Result<JsonFlag, E> {
                Ok(JsonFlag(number != 0))
            }

            fn visit_u64<E: serde::de::Error>(self, number: u64) -> Result<JsonFlag, E> {
                Ok(JsonFlag(number != 0))
            }
        }
        deserializer.deserialize_any(FlagVisitor)
    }
}

/// A string of JSON built by the database, borrowed from its text unless
/// it holds escapes. Serde copies a bare `Cow` inside an `Option`; this
/// wrapper borrows there too.
#[derive(Debug, Deserialize)]
pub(crate) struct BorrowedText<'a>(#[serde(borrow)] pub Cow<'a, str>);

/// Reads a page written by [`crate::dialect::Dialect::json_rows`], its
/// elements borrowing from `json` where they can; a page that does not
/// parse is a bug, reported as a decoding error.
pub(crate) fn parse_json_page<'a, T: Deserialize<'a>>(
    json: &'a str,
) -> Result<Vec<T>, DomainError> {
    serde_json::from_str(json)
        .map_err(|error| DomainError::Database(sqlx::Error::Decode(Box::new(error))))
}

/// An optional string of JSON built by the database, borrowed where it can
/// be (see [`BorrowedText`]).
pub(crate) fn optional_text<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    Option::<BorrowedText<'a>>::deserialize(deserializer)
        .map(|text| text.map(|BorrowedText(text)| text))
}

impl Database {
    /// One page as one JSON text, with how many rows match in all. A first
    /// page is one statement, `total` (an SQL expression of the count) and
    /// `rows` (an SQL expression of the page's JSON text) together; a later
    /// page counts first, so a page past the end reads nothing more and
    /// answers no text.
    pub(crate) async fn counted_page(
        &self,
        page: Page,
        total: impl Fn(&mut Args) -> String,
        rows: impl Fn(&mut Args) -> String,
    ) -> Result<(i64, Option<String>), DomainError> {
        let mut args = Args::default();
        let total_sql = total(&mut args);
        if page.offset == 0 && page.limit > 0 {
            let rows_sql = rows(&mut args);
            let sql = format!("SELECT {total_sql} AS total, {rows_sql} AS page");
            let (total, json): (i64, String) = bind_all(sqlx::query_as(&sql), args.into_vec())
                .fetch_one(&mut *self.lease().await?)
                .await?;
            return Ok((total, Some(json)));
        }
        let sql = format!("SELECT {total_sql}");
        let (total,): (i64,) = bind_all(sqlx::query_as(&sql), args.into_vec())
            .fetch_one(&mut *self.lease().await?)
            .await?;
        if page.offset >= total || page.limit == 0 {
            return Ok((total, None));
        }
        let mut args = Args::default();
        let sql = format!("SELECT {}", rows(&mut args));
        let (json,): (String,) = bind_all(sqlx::query_as(&sql), args.into_vec())
            .fetch_one(&mut *self.lease().await?)
            .await?;
        Ok((total, Some(json)))
    }

    /// `EXPLAIN QUERY PLAN` (SQLite) or `EXPLAIN` (PostgreSQL) of one
    /// statement, as text lines: how the integration tests check that every
    /// list and search reads an index.
    #[cfg(feature = "testing")]
    pub(crate) async fn explain(
        &self,
        sql: &str,
        args: Vec<Arg>,
    ) -> Result<Vec<String>, DomainError> {
        let dialect = self.dialect();
        let explain = dialect.explain(sql);
        let mut lease = self.lease().await?;
        if dialect.plan_has_detail_column() {
            let rows: Vec<(i64, i64, i64, String)> = bind_all(sqlx::query_as(&explain), args)
                .fetch_all(&mut *lease)
                .await?;
            Ok(rows.into_iter().map(|(_, _, _, detail)| detail).collect())
        } else {
            let rows: Vec<(String,)> = bind_all(sqlx::query_as(&explain), args)
                .fetch_all(&mut *lease)
                .await?;
            Ok(rows.into_iter().map(|(line,)| line).collect())
        }
    }
}
