//! The SQL that differs between SQLite and PostgreSQL, in one place: JSON
//! pages, query plans, full-text search (FTS5 against `tsvector`), index
//! maintenance and bulk-load tuning. Every other statement is written once
//! in the SQL both engines understand, in its resource's module.

use crate::Backend;
use crate::listing::{Arg, Args};
use crate::search::{SEARCH_WINDOW, SearchTerms};

/// Words of a query whose presence in a title or name is scored on SQLite.
const SCORED_WORDS: usize = 4;

/// The engine-specific fragments, for one engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dialect(pub Backend);

/// What a full-text search of one table looks for; see
/// [`Dialect::full_text_hits`].
pub(crate) struct FullTextSearch<'a> {
    /// `posts` or `users`; its index is `<table>_fts` on SQLite and its
    /// `search_vector` column on PostgreSQL.
    pub table: &'static str,
    /// The alias of `table` in `visibility` and `exact`.
    pub alias: &'static str,
    /// FTS5 columns whose matches earn the per-word bonus (SQLite).
    pub bonus_columns: &'static str,
    /// `tags` earn a bonus too (posts).
    pub tag_bonus: bool,
    /// ` AND …` conditions on `alias` that the viewer may see.
    pub visibility: &'a str,
    /// A boolean expression on `alias`: an exact match, ranked first.
    pub exact: &'a str,
}

impl Dialect {
    /// The dialect of an open connection or transaction (domain functions
    /// that take a [`Tx`](crate::Tx) have no [`Database`](crate::Database)
    /// to ask).
    pub fn of(connection: &sqlx::AnyConnection) -> Dialect {
        if connection.backend_name().eq_ignore_ascii_case("sqlite") {
            Dialect(Backend::Sqlite)
        } else {
            Dialect(Backend::Postgres)
        }
    }

    /// Appended to a `SELECT` of one row that the transaction then updates
    /// from what it read: PostgreSQL locks the row until the commit;
    /// SQLite's units of work already hold the write lock (`BEGIN
    /// IMMEDIATE`).
    pub fn for_update(self) -> &'static str {
        match self.0 {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR UPDATE",
        }
    }

    /// A statement that makes every other transaction writing `table`
    /// wait until this one commits, while readers go on, for a rule over
    /// the whole table (a cap on its rows): PostgreSQL takes a `SHARE ROW
    /// EXCLUSIVE` lock; SQLite's units of work already hold the write lock
    /// (`BEGIN IMMEDIATE`), so it needs none.
    pub fn queue_writers_of(self, table: &str) -> Option<String> {
        match self.0 {
            Backend::Sqlite => None,
            Backend::Postgres => Some(format!("LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE")),
        }
    }

    /// The statement that opens a unit of work. SQLite's plain `BEGIN`
    /// takes the write lock only at the first write, and two units that
    /// both read first then both want it fail at once with `SQLITE_BUSY`
    /// (the busy timeout does not apply to that upgrade); `IMMEDIATE`
    /// takes the write lock at the start, so units of work queue instead.
    pub fn begin_write(self) -> &'static str {
        match self.0 {
            Backend::Sqlite => "BEGIN IMMEDIATE",
            Backend::Postgres => "BEGIN",
        }
    }

    /// A statement that lets the current transaction commit without
    /// waiting for its write to reach the disk, for entries whose loss in a
    /// crash costs nothing but the entry itself. PostgreSQL waits for an
    /// fsync at every commit unless told (`synchronous_commit`); SQLite in
    /// WAL mode with `synchronous = NORMAL` already does not, so it needs
    /// no statement.
    pub fn unflushed_commit(self) -> Option<&'static str> {
        match self.0 {
            Backend::Sqlite => None,
            Backend::Postgres => Some("SET LOCAL synchronous_commit = off"),
        }
    }

    /// The rows of `source` (a subquery with its alias) as one JSON text:
    /// an array of `element` per row (a [`Dialect::json_array`] of columns,
    /// or a [`Dialect::record_object`]), in `order`. A page read this way crosses from the database in one value
    /// instead of one message per row, which is most of the cost of a page
    /// on SQLite.
    pub fn json_rows(self, element: &str, order: &str, source: &str) -> String {
        match self.0 {
            Backend::Sqlite => {
                format!("(SELECT json_group_array({element} ORDER BY {order}) FROM {source})")
            }
            Backend::Postgres => format!(
                "(SELECT CAST(COALESCE(json_agg({element} ORDER BY {order}), '[]'::json) AS TEXT) \
                 FROM {source})"
            ),
        }
    }

    /// A JSON array of `element` over the rows of `source`, as a value to
    /// nest inside another JSON value (not as text), in no particular order:
    /// the reader sorts it. `NULL` on PostgreSQL when there are no rows.
    pub fn nested_json_rows(self, element: &str, source: &str) -> String {
        match self.0 {
            Backend::Sqlite => format!("json((SELECT json_group_array({element}) FROM {source}))"),
            Backend::Postgres => format!("(SELECT json_agg({element}) FROM {source})"),
        }
    }

    /// A subquery of one column, `id`: the integers of `parameter`, a JSON
    /// array bound as text. A page's ids passed this way keep the statement
    /// that reads the page's details the same whatever the page: PostgreSQL
    /// plans it once (a generic plan, which expects 100 ids) instead of at
    /// every call, as it must when a `LIMIT` parameter decides how many rows
    /// the joins see.
    pub fn json_integers(self, parameter: &str) -> String {
        match self.0 {
            Backend::Sqlite => {
                format!("SELECT CAST(value AS INTEGER) AS id FROM json_each({parameter})")
            }
            Backend::Postgres => format!(
                "SELECT CAST(value AS BIGINT) AS id \
                 FROM json_array_elements_text(CAST({parameter} AS json))"
            ),
        }
    }

    /// Whether a page of wide rows (the admin user list's 100 rows of 24
    /// columns) is best read as one JSON text ([`Dialect::json_rows`]) or
    /// as rows. SQLite hands each row across from its worker thread, so one
    /// value is cheaper; PostgreSQL streams rows in one reply, and the page
    /// took it 1.17 ms as JSON against 0.90 ms as rows (pgbench, one client,
    /// prepared).
    pub fn rows_as_json(self) -> bool {
        self.0 == Backend::Sqlite
    }

    /// `json_array` on SQLite, `json_build_array` on PostgreSQL.
    pub fn json_array(self, items: &str) -> String {
        match self.0 {
            Backend::Sqlite => format!("json_array({items})"),
            Backend::Postgres => format!("json_build_array({items})"),
        }
    }

    /// A JSON object of `pairs` (`'key', value, …`): `json_object` on
    /// SQLite, `json_build_object` on PostgreSQL.
    pub fn json_object(self, pairs: &str) -> String {
        match self.0 {
            Backend::Sqlite => format!("json_object({pairs})"),
            Backend::Postgres => format!("json_build_object({pairs})"),
        }
    }

    /// The aggregate joining the text `expression` of a group's rows with
    /// `, ` in `order` (`NULL` for no rows).
    pub fn string_agg(self, expression: &str, order: &str) -> String {
        match self.0 {
            Backend::Sqlite => format!("group_concat({expression}, ', ' ORDER BY {order})"),
            Backend::Postgres => format!("string_agg({expression}, ', ' ORDER BY {order})"),
        }
    }

    /// Follows a text operand of a comparison that must order strings as
    /// Rust and SQLite do, byte by byte (PostgreSQL's default collation
    /// orders by language rules).
    pub fn byte_order(self) -> &'static str {
        match self.0 {
            Backend::Sqlite => "",
            Backend::Postgres => " COLLATE \"C\"",
        }
    }

    /// The size of the database in bytes.
    pub fn database_size(self) -> &'static str {
        match self.0 {
            Backend::Sqlite => {
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
            }
            Backend::Postgres => "SELECT pg_database_size(current_database())",
        }
    }

    /// The statement that shows the plan of `sql`; its rows are read with
    /// [`Dialect::plan_has_detail_column`].
    pub fn explain(self, sql: &str) -> String {
        match self.0 {
            Backend::Sqlite => format!("EXPLAIN QUERY PLAN {sql}"),
            Backend::Postgres => format!("EXPLAIN {sql}"),
        }
    }

    /// SQLite's plan rows are `(id, parent, notused, detail)`; PostgreSQL's
    /// are one text column.
    pub fn plan_has_detail_column(self) -> bool {
        self.0 == Backend::Sqlite
    }

    /// The `hits` common table expression of a full-text search (with a
    /// `recent` one before it on SQLite): `(id, exact, score)` of the
    /// [`SEARCH_WINDOW`] newest matches the viewer may see. The query's
    /// values are pushed to `args` after those `visibility` and `exact`
    /// already hold.
    pub fn full_text_hits(
        self,
        search: &FullTextSearch<'_>,
        terms: &SearchTerms,
        prefix: bool,
        args: &mut Args,
    ) -> String {
        let FullTextSearch {
            table,
            alias,
            visibility,
            exact,
            ..
        } = search;
        match self.0 {
            Backend::Sqlite => {
                let index = format!("{table}_fts");
                let query = args.push(Arg::Text(terms.fts5(&terms.words, prefix, None)));
                let mut score = vec!["0".to_owned()];
                for word in terms.words.iter().take(SCORED_WORDS) {
                    let bonus = args.push(Arg::Text(terms.fts5(
                        std::slice::from_ref(word),
                        prefix,
                        Some(search.bonus_columns),
                    )));
                    score.push(format!(
                        "2 * (r.id IN (SELECT rowid FROM {index} \
                         WHERE {index} MATCH {bonus} AND rowid >= (SELECT MIN(id) FROM recent)))"
                    ));
                    if search.tag_bonus {
                        let tag = args.push(Arg::Text(format!("% {word} %")));
                        score.push(format!("((' ' || {alias}.tags || ' ') LIKE {tag})"));
                    }
                }
                format!(
                    "recent AS ( \
                       SELECT {index}.rowid AS id FROM {index} \
                       JOIN {table} {alias} ON {alias}.id = {index}.rowid \
                       WHERE {index} MATCH {query}{visibility} \
                       ORDER BY {index}.rowid DESC LIMIT {SEARCH_WINDOW}), \
                     hits AS ( \
                       SELECT r.id AS id, {exact} AS exact, \
                         CAST({} AS DOUBLE PRECISION) AS score \
                       FROM recent r JOIN {table} {alias} ON {alias}.id = r.id)",
                    score.join(" + ")
                )
            }
            Backend::Postgres => {
                let query = args.push(Arg::Text(terms.tsquery(prefix)));
                let tsquery = format!("to_tsquery('simple', {query})");
                format!(
                    "hits AS ( \
                       SELECT {alias}.id, {exact} AS exact, \
                         CAST(ts_rank({alias}.search_vector, {tsquery}) AS DOUBLE PRECISION) AS score \
                       FROM {table} {alias} WHERE {alias}.search_vector @@ {tsquery}{visibility} \
                       ORDER BY {alias}.id DESC LIMIT {SEARCH_WINDOW})"
                )
            }
        }
    }

    /// Rebuilds the full-text indexes from the rows: FTS5 `rebuild` (which
    /// also leaves each index in one segment, the fastest to read) on
    /// SQLite, `REINDEX` of the GIN indexes on PostgreSQL (whose vectors are
    /// generated columns and cannot drift).
    pub fn rebuild_full_text(self) -> &'static [&'static str] {
        match self.0 {
            Backend::Sqlite => &[
                "INSERT INTO posts_fts (posts_fts) VALUES ('rebuild')",
                "INSERT INTO users_fts (users_fts) VALUES ('rebuild')",
            ],
            Backend::Postgres => &["REINDEX INDEX posts_search", "REINDEX INDEX users_search"],
        }
    }

    /// Bound values per bulk INSERT statement. SQLite looks each numbered
    /// parameter up by a linear scan, so binding costs grow with the square
    /// of the count per statement: a few hundred keeps that negligible
    /// there, while PostgreSQL takes many more (its limit is 65535).
    pub fn values_per_statement(self) -> usize {
        match self.0 {
            Backend::Sqlite => 200,
            Backend::Postgres => 10_000,
        }
    }

    /// Run before a bulk load's transactions: index pages of a million rows
    /// do not fit SQLite's default 2 MiB page cache.
    pub fn before_bulk_load(self) -> &'static [&'static str] {
        match self.0 {
            Backend::Sqlite => &["PRAGMA cache_size = -262144"],
            Backend::Postgres => &[],
        }
    }

    /// Run after a bulk load with explicit ids: SQLite merges the full-text
    /// segments the batches left into one; PostgreSQL moves the identity
    /// sequences past the loaded ids and refreshes the planner statistics.
    pub fn after_bulk_load(self) -> &'static [&'static str] {
        match self.0 {
            Backend::Sqlite => &[
                "INSERT INTO posts_fts (posts_fts) VALUES ('optimize')",
                "INSERT INTO users_fts (users_fts) VALUES ('optimize')",
            ],
            Backend::Postgres => &[
                "SELECT setval(pg_get_serial_sequence('users', 'id'), (SELECT MAX(id) FROM users))",
                "SELECT setval(pg_get_serial_sequence('posts', 'id'), \
                 GREATEST((SELECT MAX(id) FROM posts), 1))",
                "ANALYZE users",
                "ANALYZE accounts",
                "ANALYZE subscriptions",
                "ANALYZE user_bans",
                "ANALYZE posts",
                "ANALYZE post_tags",
            ],
        }
    }
}
