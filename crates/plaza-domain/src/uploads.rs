//! Records of uploaded images. The files themselves are in the object
//! store the record names; a record is written only after all of its files
//! are stored, so a record never points at a missing file unless the store
//! lost it (which `cleanup_uploads` finds).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use sqlx::FromRow;

use crate::time::now_millis;
use crate::{Database, DomainError, Tx};

/// One stored size of an upload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredVariant {
    /// `thumbnail`, `medium`, `large`, each with a `-webp` twin.
    pub name: String,
    pub key: String,
    pub mime_type: String,
    pub width: u32,
    pub height: u32,
    pub size: u64,
}

/// An upload to record.
#[derive(Debug, Clone)]
pub struct NewUpload {
    pub user_id: i64,
    /// The store holding the files (`file://…` or `s3://…`).
    pub store: String,
    pub storage_key: String,
    pub original_name: String,
    pub mime_type: String,
    pub size: i64,
    pub width: i64,
    pub height: i64,
    pub file_hash: String,
    pub variants: Vec<StoredVariant>,
}

/// A recorded upload. Times are Unix milliseconds.
#[derive(Debug, Clone)]
pub struct Upload {
    pub id: i64,
    pub user_id: Option<i64>,
    pub storage_key: String,
    pub original_name: String,
    pub mime_type: String,
    pub size: i64,
    pub width: i64,
    pub height: i64,
    pub file_hash: String,
    pub variants: Vec<StoredVariant>,
    pub created_at: i64,
}

impl Upload {
    /// Every key this upload's files are stored under.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.storage_key.as_str())
            .chain(self.variants.iter().map(|variant| variant.key.as_str()))
    }
}

#[derive(FromRow)]
struct UploadRow {
    id: i64,
    user_id: Option<i64>,
    storage_key: String,
    original_name: String,
    mime_type: String,
    size: i64,
    width: i64,
    height: i64,
    file_hash: String,
    variants: String,
    created_at: i64,
}

impl From<UploadRow> for Upload {
    fn from(row: UploadRow) -> Self {
        Upload {
            id: row.id,
            user_id: row.user_id,
            storage_key: row.storage_key,
            original_name: row.original_name,
            mime_type: row.mime_type,
            size: row.size,
            width: row.width,
            height: row.height,
            file_hash: row.file_hash,
            variants: serde_json::from_str(&row.variants).unwrap_or_default(),
            created_at: row.created_at,
        }
    }
}

const COLUMNS: &str = "id, user_id, storage_key, original_name, mime_type, size, width, height, \
                       file_hash, variants, created_at";

/// Uploads read per statement while sweeping.
const SWEEP_PAGE: i64 = 1000;

impl Database {
    /// Records an upload whose files are stored.
    pub async fn record_upload(&self, new: NewUpload) -> Result<Upload, DomainError> {
        self.write(move |tx| Box::pin(record(tx, new))).await
    }

    /// Every upload record, oldest first, a page at a time (`after`: the
    /// last id seen).
    pub async fn uploads_after(&self, after: i64) -> Result<Vec<Upload>, DomainError> {
        let rows: Vec<UploadRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM uploads WHERE id > $1 ORDER BY id LIMIT $2"
        ))
        .bind(after)
        .bind(SWEEP_PAGE)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows.into_iter().map(Upload::from).collect())
    }

    /// The uploads recorded in `store`, oldest first, a page at a time
    /// (`after`: the last id seen).
    pub async fn uploads_in_store_after(
        &self,
        store: &str,
        after: i64,
    ) -> Result<Vec<Upload>, DomainError> {
        let rows: Vec<UploadRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM uploads WHERE store = $1 AND id > $2 ORDER BY id LIMIT $3"
        ))
        .bind(store)
        .bind(after)
        .bind(SWEEP_PAGE)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows.into_iter().map(Upload::from).collect())
    }

    /// A store other than `store` that recorded uploads name, if any
    /// (records that name no store are not counted).
    pub async fn other_upload_store(&self, store: &str) -> Result<Option<String>, DomainError> {
        Ok(sqlx::query_scalar(
            "SELECT store FROM uploads WHERE store IS NOT NULL AND store <> $1 LIMIT 1",
        )
        .bind(store)
        .fetch_optional(&mut *self.lease().await?)
        .await?)
    }

    /// Makes every upload record name `store` (its files were moved
    /// there); answers how many records changed.
    pub async fn move_uploads_to_store(&self, store: &str) -> Result<u64, DomainError> {
        let store = store.to_owned();
        self.write(move |tx| {
            Box::pin(async move {
                let moved =
                    sqlx::query("UPDATE uploads SET store = $1 WHERE store IS NULL OR store <> $1")
                        .bind(&store)
                        .execute(&mut **tx)
                        .await?;
                // The objects waiting for deletion moved with the files.
                crate::store_deletions::move_to(tx, &store).await?;
                Ok(moved.rows_affected())
            })
        })
        .await
    }

    /// Makes the records (and objects waiting for deletion) of the store
    /// `from` name `to`, the same store under the name of an earlier
    /// version; answers how many records changed.
    pub async fn rename_upload_store(&self, from: &str, to: &str) -> Result<u64, DomainError> {
        let (from, to) = (from.to_owned(), to.to_owned());
        self.write(move |tx| {
            Box::pin(async move {
                let renamed = rename_store(tx, &from, &to).await?;
                sqlx::query("UPDATE store_deletions SET store = $2 WHERE store = $1")
                    .bind(&from)
                    .bind(&to)
                    .execute(&mut **tx)
                    .await?;
                Ok(renamed)
            })
        })
        .await
    }

    /// Every key a record names (originals and variants).
    pub async fn referenced_upload_keys(&self) -> Result<HashSet<String>, DomainError> {
        let mut keys = HashSet::new();
        let mut after = 0;
        loop {
            let page = self.uploads_after(after).await?;
            let Some(last) = page.last() else {
                return Ok(keys);
            };
            after = last.id;
            for upload in &page {
                keys.extend(upload.keys().map(str::to_owned));
            }
        }
    }

    pub async fn delete_upload(&self, id: i64) -> Result<(), DomainError> {
        sqlx::query("DELETE FROM uploads WHERE id = $1")
            .bind(id)
            .execute(&mut *self.lease().await?)
            .await?;
        Ok(())
    }

    /// A page of `user_id`'s uploads (custom emoji images among them),
    /// oldest first, after the upload `after` (its `created_at` and id).
    pub async fn uploads_of_user(
        &self,
        user_id: i64,
        after: Option<(i64, i64)>,
        limit: i64,
    ) -> Result<Vec<Upload>, DomainError> {
        let (created_at, id) = after.unwrap_or((i64::MIN, i64::MIN));
        let rows: Vec<UploadRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM uploads WHERE user_id = $1 \
             AND (created_at > $2 OR (created_at = $2 AND id > $3)) \
             ORDER BY created_at, id LIMIT $4"
        ))
        .bind(user_id)
        .bind(created_at)
        .bind(id)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows.into_iter().map(Upload::from).collect())
    }

    /// How many uploads are recorded and their originals' bytes.
    pub async fn upload_totals(&self) -> Result<(i64, i64), DomainError> {
        Ok(
            sqlx::query_as("SELECT COUNT(*), CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM uploads")
                .fetch_one(&mut *self.lease().await?)
                .await?,
        )
    }
}

/// Records, in `tx`, an upload whose files are stored.
pub async fn record(tx: &mut Tx<'_>, new: NewUpload) -> Result<Upload, DomainError> {
    let variants = serde_json::to_string(&new.variants)
        .map_err(|error| DomainError::Database(sqlx::Error::Encode(Box::new(error))))?;
    let row: UploadRow = sqlx::query_as(&format!(
        "INSERT INTO uploads (user_id, storage_key, original_name, mime_type, size, width, \
         height, file_hash, variants, created_at, store) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING {COLUMNS}"
    ))
    .bind(new.user_id)
    .bind(new.storage_key)
    .bind(new.original_name)
    .bind(new.mime_type)
    .bind(new.size)
    .bind(new.width)
    .bind(new.height)
    .bind(new.file_hash)
    .bind(variants)
    .bind(now_millis())
    .bind(new.store)
    .fetch_one(&mut **tx)
    .await?;
    Ok(row.into())
}

/// Deletes, in `tx`, up to `limit` of the uploads of `user_id` (theirs, and
/// the images of their custom emojis) and answers them: the caller goes on
/// until a page comes back short.
pub async fn take_of_user(
    tx: &mut Tx<'_>,
    user_id: i64,
    limit: i64,
) -> Result<Vec<Upload>, DomainError> {
    let rows: Vec<UploadRow> = sqlx::query_as(&format!(
        "DELETE FROM uploads WHERE id IN (SELECT id FROM uploads WHERE user_id = $1 \
           OR id IN (SELECT upload_id FROM emojis WHERE owner_id = $1 AND upload_id IS NOT NULL) \
           LIMIT $2) \
         RETURNING {COLUMNS}"
    ))
    .bind(user_id)
    .bind(limit)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(Upload::from).collect())
}

/// Makes the upload records that name the store `from` name `to` instead
/// (their files were restored there); answers how many changed. Records
/// of other stores, or of none, are left as they are.
pub async fn rename_store(tx: &mut Tx<'_>, from: &str, to: &str) -> Result<u64, DomainError> {
    let renamed = sqlx::query("UPDATE uploads SET store = $2 WHERE store = $1")
        .bind(from)
        .bind(to)
        .execute(&mut **tx)
        .await?;
    Ok(renamed.rows_affected())
}
