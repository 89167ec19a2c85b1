//! The upload pipeline: check the bytes, scan them, process them off the
//! async threads in a bounded number of slots, store every file, then
//! record the upload. Files first, record second: a crash in between leaves
//! files no record names, which `cleanup_uploads` removes, and never a
//! record without its files. An upload that fails, or is dropped, while
//! its files are written deletes them all in the background, also the
//! ones whose write was given up (the store may still commit it).

use std::time::Duration;

use plaza_domain::uploads::{NewUpload, StoredVariant, Upload};
use plaza_media::{ImageKind, Inspection, Limits, MediaError, Processed, VariantSize};

use crate::services::blocking::{BlockingSlots, SlotError};
use crate::services::storage::Storage;
use crate::settings::StorageSettings;

/// How long an upload waits for a processing slot before 503.
const SLOT_WAIT: Duration = Duration::from_secs(5);
/// How long clamd may take to answer.
const CLAMD_TIMEOUT: Duration = Duration::from_secs(10);
/// Rounds of deleting the files of a failed upload; a file still left
/// after them is removed by `cleanup_uploads`.
const REMOVAL_ROUNDS: u32 = 5;
/// The pause after the first round that left a file; doubled each round.
const REMOVAL_PAUSE: Duration = Duration::from_secs(2);

/// What the upload routes share.
pub struct Uploads {
    pub storage: Storage,
    pub settings: StorageSettings,
    slots: BlockingSlots,
}

/// The files of an upload, stored but not recorded yet.
pub struct StoredFiles {
    /// The record to write.
    pub upload: NewUpload,
    keys: Vec<String>,
}

/// The keys of an upload whose files are being written: dropped before
/// [`Unfinished::finish`], it deletes them all in the background, so a
/// failed, timed-out or abandoned write leaves no file behind.
struct Unfinished {
    storage: Storage,
    keys: Vec<String>,
}

impl Unfinished {
    fn finish(mut self) {
        self.keys.clear();
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.keys.is_empty() {
            remove_in_background(&self.storage, std::mem::take(&mut self.keys));
        }
    }
}

/// Deletes `keys` off the request's path, in rounds until none is left or
/// the rounds run out.
fn remove_in_background(storage: &Storage, keys: Vec<String>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(
            ?keys,
            "the files of a failed upload are left to cleanup_uploads"
        );
        return;
    };
    let storage = storage.clone();
    runtime.spawn(async move {
        let mut left = keys;
        let mut pause = REMOVAL_PAUSE;
        for round in 1..=REMOVAL_ROUNDS {
            let deletions = left.iter().map(|key| storage.delete(key));
            let outcomes = futures_util::future::join_all(deletions).await;
            let mut failed = Vec::new();
            for (key, outcome) in left.into_iter().zip(outcomes) {
                if let Err(error) = outcome {
                    tracing::warn!(%key, %error, round, "removing a file of a failed upload");
                    failed.push(key);
                }
            }
            if failed.is_empty() {
                return;
            }
            left = failed;
            if round < REMOVAL_ROUNDS {
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
        }
        tracing::warn!(keys = ?left, "the files of a failed upload are left to cleanup_uploads");
    });
}

/// Why an upload is refused or failed, before the upload routes answer it
/// in the upload table's terms.
#[derive(Debug)]
pub enum Refusal {
    /// The file breaks a rule (type, size, dimensions, structure).
    Media(MediaError),
    /// The virus scanner found something.
    Infected(String),
    /// Storing or scanning failed: the server's fault.
    Failed(String),
    /// The upload store was not reached (no connection, no answer in time).
    StoreDown(String),
    /// The database did not take the upload's record (it is down): why.
    DatabaseDown(String),
    Busy,
}

impl Uploads {
    pub fn new(settings: &StorageSettings) -> Result<Uploads, String> {
        Ok(Uploads {
            storage: Storage::open(
                settings.storage_url.as_deref(),
                &settings.data_dir,
                Duration::from_secs(settings.storage_timeout_secs),
            )?,
            settings: settings.clone(),
            slots: BlockingSlots::new(settings.upload_max_concurrent, SLOT_WAIT),
        })
    }

    /// At start-up: refuses a store other than the one the database's
    /// uploads name (an instance sweeping another store than the shared
    /// one would remove records of files it cannot see), unless
    /// `storage_moved` says the files moved here; then every record is
    /// made to name this store.
    pub async fn confirm_store(&self, db: &plaza_domain::Database) -> Result<(), String> {
        let store = &self.storage.location;
        if self.settings.storage_moved {
            let moved = db
                .move_uploads_to_store(store)
                .await
                .map_err(|error| format!("recording that uploads moved to {store}: {error}"))?;
            tracing::info!(%store, moved, "storage_moved: every upload record names this store");
            return Ok(());
        }
        let mut recorded = db
            .other_upload_store(store)
            .await
            .map_err(|error| format!("reading where uploads are stored: {error}"))?;
        if let Some(earlier) = &self.storage.earlier_location
            && recorded.as_ref() == Some(earlier)
        {
            self.adopt_earlier_name(db, earlier).await?;
            recorded = db
                .other_upload_store(store)
                .await
                .map_err(|error| format!("reading where uploads are stored: {error}"))?;
        }
        match recorded {
            None => Ok(()),
            Some(recorded) => Err(format!(
                "storage_url (PLAZA_STORAGE_URL) is the store {store}, but the database's uploads \
                 are in {recorded}: set storage_url to that store, or, if the files were moved, \
                 start once with storage_moved = true (PLAZA_STORAGE_MOVED=true)"
            )),
        }
    }

    /// Records named `earlier`, this store's name before endpoints were
    /// part of it (the same bucket and prefix on an endpoint then
    /// unnamed): they are made to name this store only when it holds the
    /// original of the oldest of them, as a store behind another endpoint
    /// would not.
    async fn adopt_earlier_name(
        &self,
        db: &plaza_domain::Database,
        earlier: &str,
    ) -> Result<(), String> {
        let store = &self.storage.location;
        let first = db
            .uploads_in_store_after(earlier, 0)
            .await
            .map_err(|error| format!("reading where uploads are stored: {error}"))?;
        let Some(first) = first.first() else {
            return Ok(());
        };
        let holds = self
            .storage
            .exists(&first.storage_key)
            .await
            .map_err(|error| format!("asking {store} for {}: {error}", first.storage_key))?;
        if !holds {
            return Err(format!(
                "the database's uploads are in {earlier}, and {store} does not hold their files                  ({} is missing): set AWS_ENDPOINT_URL to the endpoint of the store the other                  instances use, or, if the files were moved, start once with storage_moved =                  true (PLAZA_STORAGE_MOVED=true)",
                first.storage_key
            ));
        }
        let renamed = db
            .rename_upload_store(earlier, store)
            .await
            .map_err(|error| format!("naming the upload store {store}: {error}"))?;
        tracing::info!(%store, %earlier, renamed, "upload records now name the store with its endpoint");
        Ok(())
    }

    /// The rules for an upload of `kinds`, from the settings.
    pub fn limits(&self, kinds: &'static [ImageKind]) -> Limits {
        Limits {
            min_bytes: self.settings.upload_min_bytes,
            max_bytes: self.settings.upload_max_bytes,
            max_width: self.settings.upload_max_dimension,
            max_height: self.settings.upload_max_dimension,
            kinds,
        }
    }

    /// Checks, scans and processes `bytes` with every variant, stores its
    /// files under a new name and records it for `user_id`.
    pub async fn accept(
        &self,
        db: &plaza_domain::Database,
        bytes: Vec<u8>,
        original_name: String,
        user_id: i64,
        limits: Limits,
    ) -> Result<Upload, Refusal> {
        let stored = self
            .store(bytes, original_name, user_id, limits, &VariantSize::ALL)
            .await?;
        match db.record_upload(stored.upload.clone()).await {
            Ok(upload) => Ok(upload),
            Err(plaza_domain::DomainError::Unavailable(reason)) => {
                self.forget(&stored);
                Err(Refusal::DatabaseDown(reason))
            }
            Err(error) => {
                self.forget(&stored);
                Err(Refusal::Failed(format!("recording the upload: {error}")))
            }
        }
    }

    /// Checks, scans and processes `bytes` with the variants of `sizes`
    /// and stores every file under a new name; the caller records the
    /// upload (or calls [`Uploads::forget`] when it cannot).
    pub async fn store(
        &self,
        bytes: Vec<u8>,
        original_name: String,
        user_id: i64,
        limits: Limits,
        sizes: &'static [VariantSize],
    ) -> Result<StoredFiles, Refusal> {
        let inspection = plaza_media::inspect(&bytes, &limits).map_err(Refusal::Media)?;
        if let Some(address) = &self.settings.upload_clamd_address {
            scan_with_clamd(address, &bytes).await?;
        }
        let processed = self.process(bytes, inspection, sizes).await?;
        let name = uuid::Uuid::new_v4().simple().to_string();
        let original_key = format!("{name}.{}", processed.original.extension);
        let mut stored = Vec::new();
        let mut writes = vec![(original_key.clone(), processed.original.bytes)];
        for variant in processed.variants {
            let copies = std::iter::once(("", variant.image))
                .chain(variant.webp.map(|webp| ("-webp", webp)));
            for (suffix, image) in copies {
                let key = format!("{name}-{}.{}", variant.size.name(), image.extension);
                stored.push(StoredVariant {
                    name: format!("{}{suffix}", variant.size.name()),
                    key: key.clone(),
                    mime_type: image.mime_type.to_owned(),
                    width: image.width,
                    height: image.height,
                    size: image.bytes.len() as u64,
                });
                writes.push((key, image.bytes));
            }
        }
        let size = writes[0].1.len() as i64;
        let files = StoredFiles {
            keys: writes.iter().map(|(key, _)| key.clone()).collect(),
            upload: NewUpload {
                user_id,
                store: self.storage.location.clone(),
                storage_key: original_key,
                original_name,
                mime_type: processed.original.mime_type.to_owned(),
                size,
                width: i64::from(processed.original.width),
                height: i64::from(processed.original.height),
                file_hash: processed.sha256,
                variants: stored,
            },
        };
        let unfinished = Unfinished {
            storage: self.storage.clone(),
            keys: files.keys.clone(),
        };
        // All at once, so the upload fails within one store timeout.
        let puts = writes.into_iter().map(|(key, bytes)| async move {
            self.storage.put(&key, bytes).await.map_err(|error| {
                let cause = format!("storing {key}: {error}");
                if crate::services::storage::unreachable(&error) {
                    Refusal::StoreDown(cause)
                } else {
                    Refusal::Failed(cause)
                }
            })
        });
        futures_util::future::try_join_all(puts).await?;
        unfinished.finish();
        Ok(files)
    }

    /// Decodes and encodes on the blocking pool, in one of the slots.
    async fn process(
        &self,
        bytes: Vec<u8>,
        inspection: Inspection,
        sizes: &'static [VariantSize],
    ) -> Result<Processed, Refusal> {
        let (width, height) = (inspection.width, inspection.height);
        self.slots
            .run(move || {
                let started = std::time::Instant::now();
                tracing::debug!(width, height, "upload processing started");
                let processed = plaza_media::process(&bytes, inspection, sizes);
                tracing::debug!(
                    width,
                    height,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "upload processing ended"
                );
                processed
            })
            .await
            .map_err(|error| match error {
                SlotError::Busy => Refusal::Busy,
                SlotError::Panicked(error) => {
                    Refusal::Failed(format!("processing panicked: {error}"))
                }
            })?
            .map_err(Refusal::Media)
    }

    /// Removes, in the background, the files of an upload that could not
    /// be recorded (the sweep gets any left).
    pub fn forget(&self, files: &StoredFiles) {
        remove_in_background(&self.storage, files.keys.clone());
    }
}

/// Sends `bytes` to clamd with `INSTREAM` (chunks of a 4-byte big-endian
/// length and data, then a zero length) and reads its verdict, on the
/// blocking pool with socket timeouts.
async fn scan_with_clamd(address: &str, bytes: &[u8]) -> Result<(), Refusal> {
    let target = address.to_owned();
    let data = bytes.to_vec();
    let reply = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
        use std::io::{Read, Write};
        let socket = std::net::ToSocketAddrs::to_socket_addrs(&target)?
            .next()
            .ok_or_else(|| std::io::Error::other("the address resolves to nothing"))?;
        let mut stream = std::net::TcpStream::connect_timeout(&socket, CLAMD_TIMEOUT)?;
        stream.set_read_timeout(Some(CLAMD_TIMEOUT))?;
        stream.set_write_timeout(Some(CLAMD_TIMEOUT))?;
        stream.write_all(b"zINSTREAM\0")?;
        for chunk in data.chunks(64 * 1024) {
            stream.write_all(&(chunk.len() as u32).to_be_bytes())?;
            stream.write_all(chunk)?;
        }
        stream.write_all(&0u32.to_be_bytes())?;
        let mut reply = Vec::new();
        stream.take(4096).read_to_end(&mut reply)?;
        Ok(reply)
    })
    .await
    .map_err(|error| Refusal::Failed(format!("the clamd exchange panicked: {error}")))?
    .map_err(|error| Refusal::Failed(format!("clamd at {address}: {error}")))?;
    let reply = String::from_utf8_lossy(&reply);
    let reply = reply.trim_end_matches('\0').trim();
    if reply.ends_with("OK") {
        Ok(())
    } else if let Some(found) = reply.strip_suffix("FOUND") {
        let name = found.trim().trim_start_matches("stream:").trim();
        Err(Refusal::Infected(name.to_owned()))
    } else {
        Err(Refusal::Failed(format!("clamd answered {reply:?}")))
    }
}
