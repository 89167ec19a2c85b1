//! Migrated database templates. A test's fresh database starts as a copy
//! of a template that holds the migrations and the emoji catalog
//! (`CREATE DATABASE … TEMPLATE` on PostgreSQL, a file copy on SQLite), so
//! the schema is written once per set of migrations rather than once per
//! test. The server still runs its start-up migration on the copy and
//! finds it current. A template is named by a hash of its engine's
//! migration files, so a changed migration gets a template of its own;
//! test processes that start together build it once, under a PostgreSQL
//! advisory lock or by an atomic rename of the SQLite file.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use sqlx::Connection;

use super::Backend;

/// The advisory lock key held while a PostgreSQL template is built.
const POSTGRES_TEMPLATE_LOCK: i64 = 0x706c_617a_6174_706c;

/// A hash of `backend`'s migration files (names and contents, in order).
fn migrations_hash(backend: Backend) -> String {
    let engine = match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plaza-domain/migrations")
        .join(engine);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap_or_else(|error| panic!("read {}: {error}", folder.display()))
        .map(|entry| entry.expect("migration entry").path())
        .collect();
    files.sort();
    let mut hash = Sha256::new();
    for file in files {
        hash.update(file.file_name().expect("file name").as_encoded_bytes());
        hash.update(std::fs::read(&file).expect("read a migration"));
    }
    hash.update(plaza_emoji::catalog_fingerprint().as_bytes());
    hash.finalize()[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Migrates the empty database at `url` and loads the emoji catalog, as
/// the server's start does.
async fn migrate(url: &str) {
    let database = plaza_domain::Database::connect(url, &plaza_domain::DatabaseOptions::default())
        .await
        .expect("connect to the template database");
    database.migrate().await.expect("migrate the template");
    database
        .load_emoji_catalog()
        .await
        .expect("load the emoji catalog into the template");
    database.close().await;
}

/// The name of the migrated PostgreSQL template on the server of
/// `admin_url`, built when missing.
pub async fn postgres_template(admin_url: &str) -> String {
    let name = format!("plaza_template_{}", migrations_hash(Backend::Postgres));
    let mut admin = sqlx::PgConnection::connect(admin_url)
        .await
        .expect("connect to the PostgreSQL test server");
    if postgres_database_exists(&mut admin, &name).await {
        return name;
    }
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(POSTGRES_TEMPLATE_LOCK)
        .execute(&mut admin)
        .await
        .expect("template lock");
    if !postgres_database_exists(&mut admin, &name).await {
        drop_other_templates(&mut admin).await;
        let building = format!("{name}_building");
        admin_execute(
            &mut admin,
            &format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"),
        )
        .await;
        admin_execute(&mut admin, &format!("CREATE DATABASE {building}")).await;
        let mut url = url::Url::parse(admin_url).expect("valid PostgreSQL URL");
        url.set_path(&building);
        migrate(url.as_str()).await;
        admin_execute(
            &mut admin,
            &format!("ALTER DATABASE {building} RENAME TO {name}"),
        )
        .await;
        admin_execute(
            &mut admin,
            &format!("ALTER DATABASE {name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"),
        )
        .await;
    }
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(POSTGRES_TEMPLATE_LOCK)
        .execute(&mut admin)
        .await
        .expect("template unlock");
    name
}

async fn postgres_database_exists(admin: &mut sqlx::PgConnection, name: &str) -> bool {
    sqlx::query_scalar::<_, bool>("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(name)
        .fetch_one(admin)
        .await
        .expect("look up a database")
}

/// Drops the templates of other migrations, left by earlier trees. One
/// that another tree's tests are copying at this moment stays a template.
async fn drop_other_templates(admin: &mut sqlx::PgConnection) {
    let stale: Vec<String> = sqlx::query_scalar(
        "SELECT datname FROM pg_database WHERE datname LIKE 'plaza\\_template\\_%' AND datistemplate",
    )
    .fetch_all(&mut *admin)
    .await
    .expect("list the templates");
    for name in stale {
        admin_execute(admin, &format!("ALTER DATABASE {name} IS_TEMPLATE false")).await;
        let dropped =
            sqlx::Executor::execute(&mut *admin, &*format!("DROP DATABASE IF EXISTS {name}")).await;
        if dropped.is_err() {
            admin_execute(admin, &format!("ALTER DATABASE {name} IS_TEMPLATE true")).await;
        }
    }
}

async fn admin_execute(admin: &mut sqlx::PgConnection, statement: &str) {
    sqlx::Executor::execute(admin, statement)
        .await
        .unwrap_or_else(|error| panic!("{statement}: {error}"));
}

/// Copies the migrated SQLite template to `path`, building the template
/// when missing.
pub async fn copy_sqlite_template(path: &Path) {
    let template = std::env::temp_dir().join(format!(
        "plaza-test-template-{}.db",
        migrations_hash(Backend::Sqlite)
    ));
    if !template.exists() {
        let building = template.with_extension(format!("{}.building", std::process::id()));
        migrate(&format!("sqlite://{}?mode=rwc", building.display())).await;
        std::fs::rename(&building, &template).expect("publish the SQLite template");
    }
    std::fs::copy(&template, path).expect("copy the SQLite template");
}
