//! Building blocks of list queries: sort direction, paging, numbered
//! placeholders for values (so user input only ever travels bound), and
//! JSON aggregation of a page into one value.

use serde::Deserialize;
use sqlx::Any;
use sqlx::any::AnyArguments;
use sqlx::query::QueryAs;

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
/// PostgreSQL, `1`/`0` from SQLite.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub(crate) enum JsonFlag {
    Bool(bool),
    Int(i64),
}

impl From<JsonFlag> for bool {
    fn from(flag: JsonFlag) -> bool {
        match flag {
            JsonFlag::Bool(value) => value,
            JsonFlag::Int(value) => value != 0,
        }
    }
}
