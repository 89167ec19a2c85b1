//! Where uploaded files live: the `object_store` crate over a local folder
//! (`file://<data_dir>/uploads`, the default) or any S3-compatible store
//! (`s3://bucket/prefix`, configured through the standard `AWS_*`
//! variables), so several instances can share one store. Every call ends
//! within `storage_timeout_secs`, and a file read as a stream gets that
//! long for each chunk (not for the whole transfer), so a store that hangs
//! fails a request instead of holding it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use object_store::path::Path as StorePath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload};
use plaza_domain::time::now_millis;

/// The `store` of the error a call that outlived `storage_timeout_secs`
/// ends with.
const TIMED_OUT: &str = "uploads";

/// Whether `error` says the store was not reached (no connection, or no
/// answer in time) rather than that it answered with a refusal: the
/// former is the store being down, the latter a fault of its settings or
/// of the request.
pub fn unreachable(error: &object_store::Error) -> bool {
    use object_store::client::{HttpError, HttpErrorKind};
    if matches!(
        error,
        object_store::Error::Generic {
            store: TIMED_OUT,
            ..
        }
    ) {
        return true;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        if let Some(http) = current.downcast_ref::<HttpError>() {
            return matches!(
                http.kind(),
                HttpErrorKind::Connect
                    | HttpErrorKind::Request
                    | HttpErrorKind::Timeout
                    | HttpErrorKind::Interrupted
            );
        }
        cause = current.source();
    }
    false
}

/// A file younger than this is never swept: an upload may be between
/// writing its files and committing its record.
pub const UPLOAD_GRACE: Duration = Duration::from_secs(3600);

/// The longest an S3 request may take as a whole, body included: the
/// backstop behind the per-call and per-chunk bounds.
const WHOLE_REQUEST_BACKSTOP: Duration = Duration::from_secs(6 * 3600);

/// The object store of uploads.
#[derive(Clone, Debug)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
    /// Which store this is, as upload records name it: `file://` and the
    /// folder's absolute path, or `s3://bucket` and the prefix, if any,
    /// followed by `?endpoint=` and the endpoint when one is configured
    /// (`AWS_ENDPOINT_URL`): the same bucket behind another endpoint is
    /// another store.
    pub location: String,
    /// The name earlier versions gave this store (without its endpoint),
    /// when it differs from `location`.
    pub earlier_location: Option<String>,
    /// How long one call may take.
    timeout: Duration,
}

/// A stored file, or part of one.
pub struct StoredFile {
    pub bytes: axum::body::Bytes,
    /// The whole file's size.
    pub size: u64,
    /// The byte range returned, when a range was asked for.
    pub range: Option<std::ops::Range<u64>>,
}

/// A stored file read chunk by chunk ([`Storage::read_chunks`]).
pub struct FileChunks {
    chunks:
        futures_util::stream::BoxStream<'static, Result<axum::body::Bytes, object_store::Error>>,
    timeout: Duration,
}

impl FileChunks {
    /// The next chunk, `None` at the end; each must come within the store's
    /// timeout.
    pub async fn next(&mut self) -> Result<Option<axum::body::Bytes>, object_store::Error> {
        match tokio::time::timeout(self.timeout, self.chunks.next()).await {
            Ok(chunk) => chunk.transpose(),
            Err(_) => Err(object_store::Error::Generic {
                store: "uploads",
                source: format!("no chunk within {} s", self.timeout.as_secs()).into(),
            }),
        }
    }
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
    /// `<data_dir>/uploads`, created 0700 when missing), each call limited
    /// to `timeout`.
    pub fn open(
        url: Option<&str>,
        data_dir: &std::path::Path,
        timeout: Duration,
    ) -> Result<Storage, String> {
        let url = url.map(str::trim).filter(|url| !url.is_empty());
        match url {
            None => {
                let folder = data_dir.join("uploads");
                Storage::local(&folder, timeout)
            }
            Some(url) if url.starts_with("file://") => {
                Storage::local(std::path::Path::new(&url["file://".len()..]), timeout)
            }
            Some(url) if url.starts_with("s3://") => {
                let rest = &url["s3://".len()..];
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                let prefix = prefix.trim_matches('/');
                if bucket.is_empty() {
                    return Err(format!("storage_url {url:?} names no bucket"));
                }
                // Retries and each HTTP request end within the call's
                // time, not after the default three minutes of retries.
                let retry = object_store::RetryConfig {
                    max_retries: 3,
                    retry_timeout: timeout,
                    ..object_store::RetryConfig::default()
                };
                let seconds = format!("{}s", timeout.as_secs());
                // The client bounds each read of a body, not a whole
                // request: a call is bounded by `timed` and a streamed
                // file chunk by chunk ([`FileChunks`]), so a long file is
                // not cut off mid-transfer. Its request timeout is only a
                // backstop.
                let backstop = format!("{}s", WHOLE_REQUEST_BACKSTOP.as_secs());
                let client = |key| object_store::aws::AmazonS3ConfigKey::Client(key);
                let builder = object_store::aws::AmazonS3Builder::from_env();
                let endpoint = builder
                    .get_config_value(&object_store::aws::AmazonS3ConfigKey::Endpoint)
                    .map(|endpoint| endpoint.trim().trim_end_matches('/').to_ascii_lowercase())
                    .filter(|endpoint| !endpoint.is_empty());
                let store = builder
                    .with_bucket_name(bucket)
                    .with_retry(retry)
                    .with_config(client(object_store::ClientConfigKey::Timeout), &backstop)
                    .with_config(client(object_store::ClientConfigKey::ReadTimeout), &seconds)
                    .with_config(
                        client(object_store::ClientConfigKey::ConnectTimeout),
                        &seconds,
                    )
                    .build()
                    .map_err(|error| format!("storage_url {url:?}: {error}"))?;
                let (store, name): (Arc<dyn ObjectStore>, String) = if prefix.is_empty() {
                    (Arc::new(store), format!("s3://{bucket}"))
                } else {
                    (
                        Arc::new(object_store::prefix::PrefixStore::new(store, prefix)),
                        format!("s3://{bucket}/{prefix}"),
                    )
                };
                let (location, earlier_location) = match endpoint {
                    Some(endpoint) => (format!("{name}?endpoint={endpoint}"), Some(name)),
                    None => (name, None),
                };
                Ok(Storage {
                    store,
                    location,
                    earlier_location,
                    timeout,
                })
            }
            Some(url) => Err(format!(
                "storage_url {url:?} is neither file:///folder nor s3://bucket/prefix"
            )),
        }
    }

    fn local(folder: &std::path::Path, timeout: Duration) -> Result<Storage, String> {
        crate::startup::create_private_dir(folder)
            .map_err(|error| format!("creating {}: {error}", folder.display()))?;
        let folder = std::fs::canonicalize(folder)
            .map_err(|error| format!("opening {}: {error}", folder.display()))?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(&folder)
            .map_err(|error| format!("opening {}: {error}", folder.display()))?;
        Ok(Storage {
            store: Arc::new(store),
            location: format!("file://{}", folder.display()),
            earlier_location: None,
            timeout,
        })
    }

    /// The folder of a local store; `None` for an S3 store.
    pub fn local_folder(&self) -> Option<std::path::PathBuf> {
        self.location
            .strip_prefix("file://")
            .map(std::path::PathBuf::from)
    }

    /// `call`, failed when it takes longer than the store's timeout.
    async fn timed<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, object_store::Error>>,
    ) -> Result<T, object_store::Error> {
        tokio::time::timeout(self.timeout, call)
            .await
            .unwrap_or_else(|_| {
                Err(object_store::Error::Generic {
                    store: TIMED_OUT,
                    source: format!("no answer within {} s", self.timeout.as_secs()).into(),
                })
            })
    }

    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), object_store::Error> {
        self.timed(
            self.store
                .put(&StorePath::from(key), PutPayload::from(bytes)),
        )
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
        let read = async {
            let result = self.store.get_opts(&StorePath::from(key), options).await?;
            let size = result.meta.size;
            let range = result.range.clone();
            Ok((result.bytes().await?, size, range))
        };
        match self.timed(read).await {
            Ok((bytes, size, range)) => Ok(Some(StoredFile {
                bytes,
                size,
                range: (range.end - range.start != size).then_some(range),
            })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// The file at `key` as its store hands it out, chunk by chunk;
    /// `None` when there is no such file.
    pub async fn read_chunks(&self, key: &str) -> Result<Option<FileChunks>, object_store::Error> {
        match self
            .timed(
                self.store
                    .get_opts(&StorePath::from(key), GetOptions::default()),
            )
            .await
        {
            Ok(result) => Ok(Some(FileChunks {
                chunks: result.into_stream(),
                timeout: self.timeout,
            })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    pub async fn exists(&self, key: &str) -> Result<bool, object_store::Error> {
        match self.timed(self.store.head(&StorePath::from(key))).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Removes `key`; a missing file is not an error.
    pub async fn delete(&self, key: &str) -> Result<(), object_store::Error> {
        match self.timed(self.store.delete(&StorePath::from(key))).await {
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
        let grace_millis = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now_millis().saturating_sub(grace_millis);
        let mut sweep = Sweep::default();
        let mut listing = self.store.list(None);
        let mut orphans = Vec::new();
        while let Some(meta) = self.timed(async { Ok(listing.next().await) }).await? {
            let meta = meta?;
            sweep.files_found += 1;
            sweep.bytes_found += meta.size;
            if !referenced.contains(meta.location.as_ref())
                && meta.last_modified.timestamp_millis() < cutoff
            {
                orphans.push((meta.location, meta.size));
            }
        }
        for (location, size) in orphans {
            match self.timed(self.store.delete(&location)).await {
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
