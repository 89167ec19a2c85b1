//! Building blocks of list queries: sort direction, paging, and WHERE
//! clauses assembled from optional filters with numbered placeholders, so
//! user input only ever travels as a bound value.

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

/// A WHERE clause under construction: fragments joined with AND, each
/// referring to its values by `$n`.
#[derive(Debug, Default)]
pub(crate) struct Filters {
    clauses: Vec<String>,
    args: Vec<Arg>,
}

impl Filters {
    /// Registers a value and returns its placeholder (`$1`, `$2`, …).
    pub(crate) fn arg(&mut self, value: Arg) -> String {
        self.args.push(value);
        format!("${}", self.args.len())
    }

    /// Adds a condition (fixed SQL text with placeholders from [`Filters::arg`]).
    pub(crate) fn push(&mut self, clause: impl Into<String>) {
        self.clauses.push(clause.into());
    }

    /// ` WHERE a AND b`, or nothing when there is no condition.
    pub(crate) fn where_sql(&self) -> String {
        if self.clauses.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.clauses.join(" AND "))
        }
    }

    /// The values in placeholder order, to bind with [`bind_all`].
    pub(crate) fn args(&self) -> Vec<Arg> {
        self.args.clone()
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
