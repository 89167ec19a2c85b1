//! Maintenance that touches the database as a whole: a consistent online
//! copy of an SQLite database, what a database holds (the summary a backup
//! records and a restore checks), the snapshot a PostgreSQL dump is taken
//! in, and emptying a PostgreSQL schema before a forced restore. (The
//! sweep of stored uploads is the server's, as the files live in its
//! object store.)

use std::future::Future;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sqlx::AnyConnection;

use crate::{Backend, Database, DomainError};

/// What a database holds, as a backup's manifest records it and a restore
/// checks it: the schema version (the newest migration applied) and the
/// rows of the main tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseContents {
    pub schema_version: i64,
    pub users: i64,
    pub posts: i64,
    pub uploads: i64,
    pub sessions: i64,
}

/// Reads [`DatabaseContents`] on `connection`; a database without Plaza's
/// schema is a [`DomainError::Conflict`] saying so.
async fn read_contents(connection: &mut AnyConnection) -> Result<DatabaseContents, DomainError> {
    let no_schema = |error: sqlx::Error| match error {
        sqlx::Error::Database(_) => DomainError::Conflict(format!(
            "the database holds no Plaza schema (or a damaged one): {error}"
        )),
        other => DomainError::from(other),
    };
    let schema_version: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(MAX(version), 0) AS BIGINT) FROM _sqlx_migrations WHERE success",
    )
    .fetch_one(&mut *connection)
    .await
    .map_err(no_schema)?;
    let (users, posts, uploads, sessions): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM users), (SELECT COUNT(*) FROM posts), \
                (SELECT COUNT(*) FROM uploads), (SELECT COUNT(*) FROM sessions)",
    )
    .fetch_one(&mut *connection)
    .await
    .map_err(no_schema)?;
    Ok(DatabaseContents {
        schema_version,
        users,
        posts,
        uploads,
        sessions,
    })
}

impl Database {
    /// Writes a consistent copy of the SQLite database to `target` with
    /// `VACUUM INTO`, while the service keeps serving (readers and writers
    /// go on; the copy is one read transaction). `target` must not exist or
    /// be empty. PostgreSQL has no such statement: a [`DomainError::Conflict`].
    pub async fn backup_sqlite_into(&self, target: &Path) -> Result<(), DomainError> {
        if self.backend() != Backend::Sqlite {
            return Err(DomainError::Conflict(
                "VACUUM INTO is an SQLite statement; back up PostgreSQL with pg_dump".to_owned(),
            ));
        }
        let target = target.to_str().ok_or_else(|| {
            DomainError::Conflict("the backup path is not valid UTF-8".to_owned())
        })?;
        sqlx::query("VACUUM INTO $1")
            .bind(target.to_owned())
            .execute(&mut *self.lease().await?)
            .await?;
        Ok(())
    }

    /// What this database holds now, read in one transaction.
    pub async fn contents(&self) -> Result<DatabaseContents, DomainError> {
        let mut lease = self.lease().await?;
        let mut tx = sqlx::Connection::begin(&mut *lease).await?;
        let contents = read_contents(&mut tx).await;
        tx.rollback().await?;
        contents
    }

    /// What the SQLite database file at `path` holds, read without changing
    /// the file (opened read-only, its journal mode left as it is): for a
    /// copy [`Database::backup_sqlite_into`] wrote. With `verify`, SQLite's
    /// `integrity_check` reads every page first, and a damaged file is a
    /// [`DomainError::Conflict`] naming its first problems.
    pub async fn sqlite_file_contents(
        path: &Path,
        verify: bool,
    ) -> Result<DatabaseContents, DomainError> {
        sqlx::any::install_default_drivers();
        let url = format!("sqlite://{}?mode=ro", path.display());
        let mut connection = <AnyConnection as sqlx::Connection>::connect(&url).await?;
        let contents = async {
            if verify {
                let problems: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check(5)")
                    .fetch_all(&mut connection)
                    .await?;
                if problems != ["ok"] {
                    return Err(DomainError::Conflict(format!(
                        "the database is damaged: {}",
                        problems.join("; ")
                    )));
                }
            }
            read_contents(&mut connection).await
        }
        .await;
        sqlx::Connection::close(connection).await?;
        contents
    }

    /// Runs `work` while a PostgreSQL transaction holds an exported
    /// snapshot (`pg_export_snapshot`), handing it the snapshot's name:
    /// `pg_dump --snapshot` then dumps exactly what the answered
    /// [`DatabaseContents`], read in that same snapshot, count. SQLite has
    /// no exported snapshots: a [`DomainError::Conflict`].
    pub async fn with_postgres_snapshot<T, F, Fut>(
        &self,
        work: F,
    ) -> Result<(DatabaseContents, T), DomainError>
    where
        F: FnOnce(String) -> Fut,
        Fut: Future<Output = T>,
    {
        if self.backend() != Backend::Postgres {
            return Err(DomainError::Conflict(
                "exported snapshots are a PostgreSQL feature".to_owned(),
            ));
        }
        let mut lease = self.lease().await?;
        let mut tx = sqlx::Connection::begin_with(
            &mut *lease,
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        )
        .await?;
        let snapshot: String = sqlx::query_scalar("SELECT pg_export_snapshot()")
            .fetch_one(&mut *tx)
            .await?;
        let contents = match read_contents(&mut tx).await {
            Ok(contents) => contents,
            Err(error) => {
                tx.rollback().await?;
                return Err(error);
            }
        };
        let outcome = work(snapshot).await;
        tx.rollback().await?;
        Ok((contents, outcome))
    }

    /// Whether the database's current schema holds any table (PostgreSQL)
    /// or the database file any table (SQLite).
    pub async fn holds_tables(&self) -> Result<bool, DomainError> {
        let statement = match self.backend() {
            Backend::Postgres => {
                "SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema()"
            }
            Backend::Sqlite => {
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            }
        };
        let tables: i64 = sqlx::query_scalar(statement)
            .fetch_one(&mut *self.lease().await?)
            .await?;
        Ok(tables > 0)
    }

    /// The other connections of a Plaza to this PostgreSQL database (a
    /// server, a command, the content listener: `application_name`
    /// starting with `plaza`, or equal to `also`, the name the settings'
    /// URL gives), other than those named `own`: one line per name and
    /// client, with its count. SQLite has none to tell (its serve lock
    /// does that).
    pub async fn other_plaza_connections(
        &self,
        own: &str,
        also: Option<&str>,
    ) -> Result<Vec<String>, DomainError> {
        if self.backend() != Backend::Postgres {
            return Ok(Vec::new());
        }
        let rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT application_name, \
             COALESCE(host(client_addr), 'a local socket (or an address hidden from this role)') \
             AS client, COUNT(*) AS connections FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid() \
             AND application_name <> $1 \
             AND (application_name LIKE 'plaza%' OR application_name = $2) \
             GROUP BY application_name, client ORDER BY application_name, client",
        )
        .bind(own)
        .bind(also.unwrap_or(own))
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(name, client, count)| format!("{count} × {name:?} from {client}"))
            .collect())
    }

    /// Drops every table, extension and function of the PostgreSQL
    /// database's current schema, in one transaction: what a forced restore
    /// replaces, so that objects of a newer schema do not outlive the
    /// restore of an older one. An extension goes whole (its functions and
    /// types with it, as PostgreSQL refuses to drop them one by one), after
    /// the tables whose indexes use it, and only when nothing of another
    /// schema uses it: then the whole change is refused. The dump being
    /// restored creates the extensions its schema uses again.
    /// On SQLite, whose restore replaces the file: a [`DomainError::Conflict`].
    pub async fn drop_schema_objects(&self) -> Result<(), DomainError> {
        if self.backend() != Backend::Postgres {
            return Err(DomainError::Conflict(
                "an SQLite restore replaces the database file".to_owned(),
            ));
        }
        self.write(|tx| {
            Box::pin(async move {
                let statements: Vec<String> = sqlx::query_scalar(
                    "SELECT statement FROM ( \
                       SELECT 1 AS step, format('DROP TABLE IF EXISTS %I.%I CASCADE', \
                                                schemaname, tablename) AS statement \
                       FROM pg_tables WHERE schemaname = current_schema() \
                       UNION ALL \
                       SELECT 2, format('DROP EXTENSION IF EXISTS %I RESTRICT', e.extname) \
                       FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace \
                       WHERE n.nspname = current_schema() \
                       UNION ALL \
                       SELECT 3, format('DROP FUNCTION IF EXISTS %s CASCADE', \
                                        p.oid::regprocedure) \
                       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
                       WHERE n.nspname = current_schema() AND p.prokind = 'f' \
                         AND NOT EXISTS ( \
                           SELECT 1 FROM pg_depend d \
                           WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid \
                             AND d.deptype = 'e') \
                     ) AS drops ORDER BY step",
                )
                .fetch_all(&mut **tx)
                .await?;
                for statement in statements {
                    sqlx::query(&statement).execute(&mut **tx).await?;
                }
                Ok(())
            })
        })
        .await
    }
}
