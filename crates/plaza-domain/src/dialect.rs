//! The SQL that differs between SQLite and PostgreSQL, in one place: JSON
//! pages, query plans, full-text index maintenance (FTS5 against
//! `tsvector`) and bulk-load tuning. Every other statement is written once
//! in the SQL both engines understand, in its resource's module; the
//! exceptions are the full-text search statement, which the search module
//! builds for each engine from a query's words, and the user lists'
//! narrowing to SQLite's trigram table. This module uses no other
//! module of the domain, so every module may use it.

/// Which database engine is behind the pool; the few statements that differ
/// between the two (full-text search, schema introspection) branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// Tells the engine from a database URL, or `None` for one Plaza cannot use.
    pub fn from_url(url: &str) -> Option<Self> {
        if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Backend::Postgres)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// The engine-specific fragments, for one engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dialect(pub Backend);

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

    /// Appended to a `SELECT` that rows of another table are written
    /// from, locking the rows it reads of `alias` against deletion until
    /// the commit: on PostgreSQL a deletion waits for the writes and its
    /// triggers then see them, and a row deleted meanwhile is skipped;
    /// SQLite's units of work already hold the write lock (`BEGIN
    /// IMMEDIATE`).
    pub fn key_share_of(self, alias: &str) -> String {
        match self.0 {
            Backend::Sqlite => String::new(),
            Backend::Postgres => format!(" FOR KEY SHARE OF {alias}"),
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

    /// A subquery of one column, `value`: the strings of `parameter`, a
    /// JSON array bound as text (the paths of a reply's ancestors, the
    /// usernames a content mentions: one statement however many).
    pub fn json_texts(self, parameter: &str) -> String {
        match self.0 {
            Backend::Sqlite => format!("SELECT value FROM json_each({parameter})"),
            Backend::Postgres => {
                format!("SELECT value FROM json_array_elements_text(CAST({parameter} AS json))")
            }
        }
    }

    /// Whether a page of wide rows (the admin user list's 100 rows of 24
    /// columns) is best read as one JSON text ([`Dialect::json_rows`]) or
    /// as rows. SQLite hands each row across from its worker thread, so one
    /// value is cheaper; PostgreSQL streams rows in one reply, so building
    /// the JSON text costs more than it saves.
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
    #[cfg(feature = "testing")]
    pub fn explain(self, sql: &str) -> String {
        match self.0 {
            Backend::Sqlite => format!("EXPLAIN QUERY PLAN {sql}"),
            Backend::Postgres => format!("EXPLAIN {sql}"),
        }
    }

    /// SQLite's plan rows are `(id, parent, notused, detail)`; PostgreSQL's
    /// are one text column.
    #[cfg(feature = "testing")]
    pub fn plan_has_detail_column(self) -> bool {
        self.0 == Backend::Sqlite
    }

    /// Rebuilds the full-text indexes from the rows: FTS5 `rebuild` (which
    /// also leaves each index in one segment, the fastest to read) on
    /// SQLite, `REINDEX` of the GIN indexes on PostgreSQL (whose vectors are
    /// generated columns and cannot drift).
    pub fn rebuild_full_text(self) -> &'static [&'static str] {
        match self.0 {
            Backend::Sqlite => &[
                "INSERT INTO posts_fts (posts_fts) VALUES ('rebuild')",
                "INSERT INTO replies_fts (replies_fts) VALUES ('rebuild')",
                "INSERT INTO users_fts (users_fts) VALUES ('rebuild')",
                "INSERT INTO users_substring_fts (users_substring_fts) VALUES ('rebuild')",
            ],
            Backend::Postgres => &[
                "REINDEX INDEX posts_search",
                "REINDEX INDEX replies_search",
                "REINDEX INDEX users_search",
                "REINDEX INDEX users_username_trigram_search",
                "REINDEX INDEX users_email_trigram_search",
            ],
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
                "INSERT INTO users_substring_fts (users_substring_fts) VALUES ('optimize')",
                "INSERT INTO replies_fts (replies_fts) VALUES ('optimize')",
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
                "SELECT setval(pg_get_serial_sequence('replies', 'id'), \
                 GREATEST((SELECT MAX(id) FROM replies), 1))",
                "ANALYZE replies",
            ],
        }
    }
}

/// `items` as the JSON array, bound as text, that [`Dialect::json_integers`]
/// and [`Dialect::json_texts`] read.
pub(crate) fn json_list<T: serde::Serialize>(items: &[T]) -> Result<String, crate::DomainError> {
    serde_json::to_string(items)
        .map_err(|error| crate::DomainError::Database(sqlx::Error::Encode(Box::new(error))))
}
