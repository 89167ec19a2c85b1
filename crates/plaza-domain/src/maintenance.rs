//! Maintenance an admin starts (`POST /api/v1/admin/system/maintenance`)
//! that touches the database file: a consistent online copy of an SQLite
//! database. (The sweep of stored uploads is the server's, as the files
//! live in its object store.)

use std::path::Path;

use crate::{Backend, Database, DomainError};

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
}
