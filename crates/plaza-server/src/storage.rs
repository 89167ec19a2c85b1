//! Where uploaded files live: the `object_store` crate over a local folder
//! (`file://<data_dir>/uploads`, the default) or any S3-compatible store
//! (`s3://bucket/prefix`, configured through the standard `AWS_*`
//! variables), so several instances can share one store.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use object_store::path::Path as StorePath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload};

/// A file younger than this is never swept: an upload may be between
/// writing its files and committing its record.
pub const UPLOAD_GRACE: Duration = Duration::from_secs(3600);

/// The object store of uploads.
#[derive(Clone, Debug)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
    /// For logs and the README: `file:///…` or `s3://bucket/prefix`.
    pub location: String,
}

/// A stored file, or part of one.
pub struct StoredFile {
    pub bytes: axum::body::Bytes,
    /// The whole file's size.
    pub size: u64,
    /// The byte range returned, when a range was asked for.
    pub range: Option<std::ops::Range<u64>>,
}

/// What [`Storage::sweep`] found and removed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sweep {
    pub files_found: u64,
    pub bytes_found: u64,
    pub files_removed: u64,
    pub bytes_removed: u64,
}

impl Storage {
    /// Opens the store `url` names (`None`: the local folder
    /// `<data_dir>/uploads`, created 0700 when missing).
    pub fn open(url: Option<&str>, data_dir: &std::path::Path) -> Result<Storage, String> {
        let url = url.map(str::trim).filter(|url| !url.is_empty());
        match url {
            None => {
                let folder = data_dir.join("uploads");
                Storage::local(&folder)
            }
            Some(url) if url.starts_with("file://") => {
                Storage::local(std::path::Path::new(&url["file://".len()..]))
            }
            Some(url) if url.starts_with("s3://") => {
                let rest = &url["s3://".len()..];
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(format!("storage_url {url:?} names no bucket"));
                }
                // A store that is down fails an upload within seconds,
                // not after the default three minutes of retries.
                let retry = object_store::RetryConfig {
                    max_retries: 3,
                    retry_timeout: Duration::from_secs(10),
                    ..object_store::RetryConfig::default()
                };
                let store = object_store::aws::AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .with_retry(retry)
                    .build()
                    .map_err(|error| format!("storage_url {url:?}: {error}"))?;
                let store: Arc<dyn ObjectStore> = if prefix.trim_matches('/').is_empty() {
                    Arc::new(store)
                } else {
                    Arc::new(object_store::prefix::PrefixStore::new(
                        store,
                        prefix.trim_matches('/'),
                    ))
                };
                Ok(Storage {
                    store,
                    location: url.to_owned(),
                })
            }
            Some(url) => Err(format!(
                "storage_url {url:?} is neither file:///folder nor s3://bucket/prefix"
            )),
        }
    }

    fn local(folder: &std::path::Path) -> Result<Storage, String> {
        crate::startup::create_private_dir(folder)
            .map_err(|error| format!("creating {}: {error}", folder.display()))?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(folder)
            .map_err(|error| format!("opening {}: {error}", folder.display()))?;
        Ok(Storage {
            store: Arc::new(store),
            location: format!("file://{}", folder.display()),
        })
    }

    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), object_store::Error> {
        self.store
            .put(&StorePath::from(key), PutPayload::from(bytes))
            .await
            .map(|_| ())
    }

    /// The file at `key`, whole or the byte `range` of it; `None` when
    /// there is no such file.
    pub async fn get(
        &self,
        key: &str,
        range: Option<GetRange>,
    ) -> Result<Option<StoredFile>, object_store::Error> {
        let options = GetOptions {
            range,
            ..GetOptions::default()
        };
        match self.store.get_opts(&StorePath::from(key), options).await {
            Ok(result) => {
                let size = result.meta.size;
                let range = result.range.clone();
                let bytes = result.bytes().await?;
                Ok(Some(StoredFile {
                    bytes,
                    size,
                    range: (range.end - range.start != size).then_some(range),
                }))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    pub async fn exists(&self, key: &str) -> Result<bool, object_store::Error> {
        match self.store.head(&StorePath::from(key)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Removes `key`; a missing file is not an error.
    pub async fn delete(&self, key: &str) -> Result<(), object_store::Error> {
        match self.store.delete(&StorePath::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Lists every file and removes those `referenced` does not hold that
    /// are older than `grace`.
    pub async fn sweep(
        &self,
        referenced: &HashSet<String>,
        grace: Duration,
    ) -> Result<Sweep, object_store::Error> {
        let cutoff = chrono::Utc::now()
            - chrono::Duration::from_std(grace).unwrap_or(chrono::Duration::hours(1));
        let mut sweep = Sweep::default();
        let mut listing = self.store.list(None);
        let mut orphans = Vec::new();
        while let Some(meta) = listing.next().await {
            let meta = meta?;
            sweep.files_found += 1;
            sweep.bytes_found += meta.size;
            if !referenced.contains(meta.location.as_ref()) && meta.last_modified < cutoff {
                orphans.push((meta.location, meta.size));
            }
        }
        for (location, size) in orphans {
            match self.store.delete(&location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                    sweep.files_removed += 1;
                    sweep.bytes_removed += size;
                }
                Err(error) => return Err(error),
            }
        }
        Ok(sweep)
    }
}
