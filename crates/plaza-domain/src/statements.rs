//! Several writing statements sent to the database as one: on PostgreSQL
//! one statement whose parts are data-modifying `WITH` clauses, on SQLite
//! the parts separated by semicolons, which sqlx runs in one call to the
//! connection's thread. Each statement otherwise costs a round trip, and
//! under load a round trip waits for the other side to be scheduled: the
//! analytics writer spent 0.2–0.5 ms on each of the eleven of a batch
//! while requests queued behind it (`bench/analytics.sh`).
//!
//! On PostgreSQL the parts of one group run against one snapshot, in no
//! promised order; so, on both engines, a part must not depend on another
//! part's changes, and two parts must not change one row. A part that
//! answers rows (`RETURNING`) ends its group, since on PostgreSQL only the
//! last part's rows come back.

use sqlx::any::{AnyArguments, AnyRow};
use sqlx::{Any, Arguments, Encode, Type};

use crate::dialect::Dialect;
use crate::{Backend, DomainError, Tx};

/// Bound values per group at most on PostgreSQL, well under its 65,535.
/// (SQLite counts values per part, and each part is kept small by its
/// writer.)
const POSTGRES_GROUP_VALUES: usize = 30_000;

struct Group<'q> {
    parts: Vec<String>,
    arguments: AnyArguments<'q>,
    values: usize,
    /// The last part answers rows: the next part starts a group.
    closed: bool,
}

/// Statements to run together, in order, as few groups as the engine allows.
pub(crate) struct Statements<'q> {
    dialect: Dialect,
    groups: Vec<Group<'q>>,
    /// The first value that could not be encoded, reported by `execute`.
    encode_error: Option<String>,
}

impl<'q> Statements<'q> {
    pub(crate) fn new(dialect: Dialect) -> Self {
        Statements {
            dialect,
            groups: Vec::new(),
            encode_error: None,
        }
    }

    /// Adds `sql`, whose placeholders are `$1` to `$n`, each used once and in
    /// that order (as the multi-row `VALUES` writers number them). Its `n`
    /// values follow with [`Statements::bind`], in order.
    pub(crate) fn add(&mut self, sql: &str) -> &mut Self {
        self.push(sql, false)
    }

    /// Adds `sql` as [`Statements::add`] does, for a statement whose rows
    /// [`Statements::fetch_all`] answers.
    pub(crate) fn add_returning(&mut self, sql: &str) -> &mut Self {
        self.push(sql, true)
    }

    fn push(&mut self, sql: &str, returning: bool) -> &mut Self {
        let values = placeholder_count(sql);
        let starts_group = match self.groups.last() {
            None => true,
            Some(group) => {
                group.closed
                    || (self.dialect.0 == Backend::Postgres
                        && group.values + values > POSTGRES_GROUP_VALUES)
            }
        };
        if starts_group {
            self.groups.push(Group {
                parts: Vec::new(),
                arguments: AnyArguments::default(),
                values: 0,
                closed: false,
            });
        }
        if let Some(group) = self.groups.last_mut() {
            group.parts.push(renumber(self.dialect, sql, group.values));
            group.values += values;
            group.closed = returning;
        }
        self
    }

    /// The next value of the statement added last.
    pub(crate) fn bind<T>(&mut self, value: T) -> &mut Self
    where
        T: 'q + Encode<'q, Any> + Type<Any>,
    {
        if let Some(group) = self.groups.last_mut()
            && let Err(error) = group.arguments.add(value)
        {
            self.encode_error.get_or_insert_with(|| error.to_string());
        }
        self
    }

    /// Runs the statements in `tx`, one round trip per group.
    pub(crate) async fn execute(self, tx: &mut Tx<'_>) -> Result<(), DomainError> {
        if let Some(error) = self.encode_error {
            return Err(DomainError::Database(sqlx::Error::Encode(error.into())));
        }
        for group in self.groups {
            let sql = join(self.dialect, &group.parts);
            sqlx::query_with(&sql, group.arguments)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Runs the statements in `tx` as [`Statements::execute`] does, and
    /// answers the rows of those added with [`Statements::add_returning`].
    pub(crate) async fn fetch_all(self, tx: &mut Tx<'_>) -> Result<Vec<AnyRow>, DomainError> {
        if let Some(error) = self.encode_error {
            return Err(DomainError::Database(sqlx::Error::Encode(error.into())));
        }
        let mut rows = Vec::new();
        for group in self.groups {
            let sql = join(self.dialect, &group.parts);
            rows.extend(
                sqlx::query_with(&sql, group.arguments)
                    .fetch_all(&mut **tx)
                    .await?,
            );
        }
        Ok(rows)
    }
}

/// How many `$n` placeholders `sql` holds.
fn placeholder_count(sql: &str) -> usize {
    let bytes = sql.as_bytes();
    (0..bytes.len())
        .filter(|&at| bytes[at] == b'$' && bytes.get(at + 1).is_some_and(u8::is_ascii_digit))
        .count()
}

/// `sql` with its `$n` placeholders as the group needs them: `$(n +
/// offset)` on PostgreSQL, where the group is one statement; `?` on SQLite,
/// where sqlx binds unnumbered placeholders in order across the parts
/// (numbered ones would each name a value of the whole group, and a part
/// naming `$300` would make SQLite bind it 299 unused slots).
fn renumber(dialect: Dialect, sql: &str, offset: usize) -> String {
    let mut out = String::with_capacity(sql.len() + sql.len() / 8);
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if digits == 0 {
            out.push('$');
            rest = &rest[at + 1..];
            continue;
        }
        let number: usize = rest[at + 1..at + 1 + digits].parse().unwrap_or(0);
        match dialect.0 {
            Backend::Postgres => {
                out.push('$');
                out.push_str(&(number + offset).to_string());
            }
            Backend::Sqlite => out.push('?'),
        }
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    out
}

/// One group's parts as one statement.
fn join(dialect: Dialect, parts: &[String]) -> String {
    match (dialect.0, parts) {
        (_, [only]) => only.clone(),
        (Backend::Sqlite, _) => parts.join(";\n"),
        (Backend::Postgres, [first @ .., last]) => {
            let clauses: Vec<String> = first
                .iter()
                .enumerate()
                .map(|(index, part)| format!("part{index} AS ({part})"))
                .collect();
            format!("WITH {} {last}", clauses.join(", "))
        }
        (Backend::Postgres, []) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_parts_become_with_clauses_numbered_on() {
        let mut statements = Statements::new(Dialect(Backend::Postgres));
        statements.add("INSERT INTO a (x, y) VALUES ($1, $2), ($3, $4)");
        statements.add("INSERT INTO b (z) VALUES ($1) ON CONFLICT (z) DO NOTHING");
        let group = &statements.groups[0];
        assert_eq!(group.values, 5);
        assert_eq!(
            join(statements.dialect, &group.parts),
            "WITH part0 AS (INSERT INTO a (x, y) VALUES ($1, $2), ($3, $4)) \
             INSERT INTO b (z) VALUES ($5) ON CONFLICT (z) DO NOTHING"
        );
    }

    #[test]
    fn sqlite_parts_are_joined_with_unnumbered_placeholders() {
        let mut statements = Statements::new(Dialect(Backend::Sqlite));
        statements.add("INSERT INTO a (x) VALUES ($1), ($2)");
        statements.add("DELETE FROM b WHERE z <= $1 AND n <= 0");
        let group = &statements.groups[0];
        assert_eq!(
            join(statements.dialect, &group.parts),
            "INSERT INTO a (x) VALUES (?), (?);\nDELETE FROM b WHERE z <= ? AND n <= 0"
        );
    }

    #[test]
    fn a_postgres_group_stays_under_the_value_limit() {
        let mut statements = Statements::new(Dialect(Backend::Postgres));
        let mut sql = "INSERT INTO a (x) VALUES ($1)".to_owned();
        for number in 2..=20_000 {
            sql.push_str(&format!(", (${number})"));
        }
        statements.add(&sql).add(&sql).add(&sql);
        let sizes: Vec<usize> = statements.groups.iter().map(|group| group.values).collect();
        assert_eq!(sizes, vec![20_000, 20_000, 20_000]);
        assert_eq!(
            statements.groups[1].parts[0], sql,
            "each group numbers from $1"
        );
    }

    #[test]
    fn a_part_that_answers_rows_ends_its_group() {
        let mut statements = Statements::new(Dialect(Backend::Postgres));
        statements
            .add("INSERT INTO a (x) VALUES ($1)")
            .add_returning("INSERT INTO b (y) VALUES ($1) RETURNING y")
            .add("INSERT INTO c (z) VALUES ($1)");
        let groups: Vec<String> = statements
            .groups
            .iter()
            .map(|group| join(statements.dialect, &group.parts))
            .collect();
        assert_eq!(
            groups,
            [
                "WITH part0 AS (INSERT INTO a (x) VALUES ($1)) \
                 INSERT INTO b (y) VALUES ($2) RETURNING y",
                "INSERT INTO c (z) VALUES ($1)",
            ]
        );
    }

    #[test]
    fn dollar_signs_that_are_not_placeholders_stay() {
        assert_eq!(
            renumber(Dialect(Backend::Postgres), "SELECT '$' || $1", 2),
            "SELECT '$' || $3"
        );
    }
}
