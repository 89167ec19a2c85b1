//! The twin migration trees describe one schema: an empty SQLite and an
//! empty PostgreSQL database, each migrated by Plaza, have the same tables,
//! columns (name, nullability, type family), primary keys, unique
//! constraints, indexes and foreign keys. The one designed difference is
//! full-text search (FTS5 virtual tables on SQLite; `search_vector` columns
//! and their GIN indexes on PostgreSQL), left out of the comparison.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{Backend, TestServer, postgres_enabled};
use sqlx::Row;

/// What one table is made of, engine-neutral.
#[derive(Debug, Default, PartialEq, Eq)]
struct Table {
    /// name → (type family, nullable)
    columns: BTreeMap<String, (&'static str, bool)>,
    primary_key: Vec<String>,
    unique: BTreeSet<Vec<String>>,
    /// (name, unique, columns; `<expr>` for an expression)
    indexes: BTreeSet<(String, bool, Vec<String>)>,
    /// (column, referenced table, referenced column, on delete)
    foreign_keys: BTreeSet<(String, String, String, String)>,
}

type Schema = BTreeMap<String, Table>;

/// Full-text search artifacts, which differ by design.
fn is_full_text(name: &str) -> bool {
    name.contains("_fts") || name == "search_vector" || name.ends_with("_search")
}

/// Bookkeeping that is not Plaza's schema.
fn is_bookkeeping(table: &str) -> bool {
    table == "_sqlx_migrations" || table.starts_with("sqlite_")
}

/// Flags are INTEGER 0/1 on SQLite and BOOLEAN on PostgreSQL
/// (docs/architecture.md, "Data"), so both are the integer family.
fn family(declared: &str) -> &'static str {
    let declared = declared.to_ascii_lowercase();
    if declared.contains("int") || declared == "boolean" {
        "integer"
    } else if declared.contains("char") || declared == "text" {
        "text"
    } else if declared.contains("real") || declared.contains("double") || declared == "numeric" {
        "float"
    } else if declared == "blob" || declared == "bytea" {
        "bytes"
    } else {
        "other"
    }
}

async fn sqlite_schema(url: &str) -> Schema {
    use sqlx::Connection;
    let mut db = sqlx::SqliteConnection::connect(url).await.unwrap();
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .fetch_all(&mut db)
            .await
            .unwrap();
    let mut schema = Schema::new();
    for name in tables
        .into_iter()
        .filter(|name| !is_full_text(name) && !is_bookkeeping(name))
    {
        let mut table = Table::default();
        let mut key: Vec<(i64, String)> = Vec::new();
        for column in sqlx::query(&format!("PRAGMA table_info('{name}')"))
            .fetch_all(&mut db)
            .await
            .unwrap()
        {
            let column_name: String = column.get("name");
            let declared: String = column.get("type");
            let not_null: i64 = column.get("notnull");
            let pk: i64 = column.get("pk");
            if pk > 0 {
                key.push((pk, column_name.clone()));
            }
            table
                .columns
                .insert(column_name, (family(&declared), not_null == 0 && pk == 0));
        }
        key.sort();
        table.primary_key = key.into_iter().map(|(_, column)| column).collect();
        for index in sqlx::query(&format!("PRAGMA index_list('{name}')"))
            .fetch_all(&mut db)
            .await
            .unwrap()
        {
            let index_name: String = index.get("name");
            let unique: i64 = index.get("unique");
            let origin: String = index.get("origin");
            let columns: Vec<String> = sqlx::query(&format!("PRAGMA index_info('{index_name}')"))
                .fetch_all(&mut db)
                .await
                .unwrap()
                .iter()
                .map(|column| {
                    column
                        .get::<Option<String>, _>("name")
                        .unwrap_or_else(|| "<expr>".to_owned())
                })
                .collect();
            match origin.as_str() {
                "u" => {
                    table.unique.insert(columns);
                }
                "c" => {
                    table.indexes.insert((index_name, unique != 0, columns));
                }
                _ => {}
            }
        }
        for key in sqlx::query(&format!("PRAGMA foreign_key_list('{name}')"))
            .fetch_all(&mut db)
            .await
            .unwrap()
        {
            table.foreign_keys.insert((
                key.get("from"),
                key.get("table"),
                key.get("to"),
                key.get("on_delete"),
            ));
        }
        schema.insert(name, table);
    }
    schema
}

async fn postgres_schema(url: &str) -> Schema {
    use sqlx::Connection;
    let mut db = sqlx::PgConnection::connect(url).await.unwrap();
    let mut schema = Schema::new();
    for column in sqlx::query(
        "SELECT table_name::text AS t, column_name::text AS c, data_type::text AS d, \
         is_nullable::text AS n FROM information_schema.columns WHERE table_schema = 'public'",
    )
    .fetch_all(&mut db)
    .await
    .unwrap()
    {
        let table: String = column.get("t");
        let name: String = column.get("c");
        if is_bookkeeping(&table) || is_full_text(&name) {
            continue;
        }
        let declared: String = column.get("d");
        let nullable: String = column.get("n");
        schema
            .entry(table)
            .or_default()
            .columns
            .insert(name, (family(&declared), nullable == "YES"));
    }
    for index in sqlx::query(
        "SELECT t.relname::text AS t, i.relname::text AS i, ix.indisunique AS u, \
         ix.indisprimary AS p, c.contype::text AS k, \
         array_agg(COALESCE(a.attname::text, '<expr>') ORDER BY k.n) AS cols \
         FROM pg_index ix \
         JOIN pg_class t ON t.oid = ix.indrelid \
         JOIN pg_class i ON i.oid = ix.indexrelid \
         JOIN pg_namespace ns ON ns.oid = t.relnamespace \
         CROSS JOIN LATERAL unnest(ix.indkey) WITH ORDINALITY AS k(attnum, n) \
         LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum \
         LEFT JOIN pg_constraint c ON c.conindid = ix.indexrelid AND c.contype IN ('p', 'u') \
         WHERE ns.nspname = 'public' GROUP BY 1, 2, 3, 4, 5",
    )
    .fetch_all(&mut db)
    .await
    .unwrap()
    {
        let table_name: String = index.get("t");
        let index_name: String = index.get("i");
        if is_bookkeeping(&table_name) || is_full_text(&index_name) {
            continue;
        }
        let table = schema.entry(table_name).or_default();
        let columns: Vec<String> = index.get("cols");
        let constraint: Option<String> = index.get("k");
        match constraint.as_deref() {
            Some("p") => table.primary_key = columns,
            Some(_) => {
                table.unique.insert(columns);
            }
            None => {
                table.indexes.insert((index_name, index.get("u"), columns));
            }
        }
    }
    for key in sqlx::query(
        "SELECT tc.table_name::text AS t, kcu.column_name::text AS c, ccu.table_name::text AS rt, \
         ccu.column_name::text AS rc, rc.delete_rule::text AS d \
         FROM information_schema.table_constraints tc \
         JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name \
         JOIN information_schema.constraint_column_usage ccu ON ccu.constraint_name = tc.constraint_name \
         JOIN information_schema.referential_constraints rc ON rc.constraint_name = tc.constraint_name \
         WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = 'public'",
    )
    .fetch_all(&mut db)
    .await
    .unwrap()
    {
        let table: String = key.get("t");
        schema.entry(table).or_default().foreign_keys.insert((
            key.get("c"),
            key.get("rt"),
            key.get("rc"),
            key.get("d"),
        ));
    }
    schema
}

#[tokio::test]
async fn both_migration_trees_describe_one_schema() {
    if !postgres_enabled("both_migration_trees_describe_one_schema") {
        return;
    }
    let sqlite = TestServer::start(Backend::Sqlite).await;
    let postgres = TestServer::start(Backend::Postgres).await;
    let postgres_schema = postgres_schema(&postgres.database_url).await;
    let sqlite_now = sqlite_schema(&sqlite.database_url).await;
    assert!(sqlite_now["users"].columns["email"] == ("text", false));
    assert!(
        sqlite_now["audit_log"]
            .indexes
            .iter()
            .any(|(name, _, _)| name == "audit_log_created_at")
    );
    let differences = differences(&sqlite_now, &postgres_schema);
    assert!(
        differences.is_empty(),
        "the migration trees disagree:\n{}",
        differences.join("\n")
    );
    // The comparison notices a drift: an index and a nullable column that
    // only one engine has.
    sqlite
        .sql("CREATE INDEX users_bio ON users (bio); ALTER TABLE sessions ADD COLUMN device TEXT")
        .await;
    let drifted = differences_now(&sqlite, &postgres_schema).await;
    assert_eq!(drifted.len(), 2, "{drifted:?}");
}

async fn differences_now(sqlite: &TestServer, postgres: &Schema) -> Vec<String> {
    differences(&sqlite_schema(&sqlite.database_url).await, postgres)
}

fn differences(sqlite: &Schema, postgres: &Schema) -> Vec<String> {
    let tables: BTreeSet<_> = sqlite.keys().chain(postgres.keys()).collect();
    tables
        .into_iter()
        .filter(|table| sqlite.get(*table) != postgres.get(*table))
        .map(|table| {
            format!(
                "table {table}:\n  SQLite:     {:?}\n  PostgreSQL: {:?}",
                sqlite.get(table),
                postgres.get(table)
            )
        })
        .collect()
}
