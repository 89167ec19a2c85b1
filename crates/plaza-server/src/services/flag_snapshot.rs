//! The feature flags as this instance last read them, for
//! `GET /api/feature-flags`: every client asks for its flags, often, and
//! the flags change rarely, so each instance reads the whole table (at most
//! `feature_flags::MAX_FLAGS` rows) at most once per [`FRESH_FOR`] instead of
//! once per request.
//!
//! A change made through any instance shows on every instance within
//! [`FRESH_FOR`] plus one read of the table (the decided bound is 5 s); the
//! instance that made the change drops its snapshot at once
//! ([`FlagSnapshot::forget`]), so its own next answer has it.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use plaza_domain::feature_flags::FeatureFlag;
use plaza_domain::{Database, DomainError};

/// How long a read of the flags is answered from before it is read again.
pub const FRESH_FOR: Duration = Duration::from_secs(2);

/// The last read of the flags, shared by the instance's requests.
pub struct FlagSnapshot {
    kept: RwLock<Kept>,
    /// Held by the one request reading the table; the others wait for its
    /// read instead of reading too.
    reading: tokio::sync::Mutex<()>,
}

struct Kept {
    flags: Option<Arc<[FeatureFlag]>>,
    /// When the read that produced `flags` began.
    read_at: Instant,
    /// When this instance last changed a flag: a read that began before
    /// it may miss the change, so it is not answered from.
    forgotten_at: Instant,
}

impl Default for FlagSnapshot {
    fn default() -> Self {
        let now = Instant::now();
        FlagSnapshot {
            kept: RwLock::new(Kept {
                flags: None,
                read_at: now,
                forgotten_at: now,
            }),
            reading: tokio::sync::Mutex::new(()),
        }
    }
}

impl FlagSnapshot {
    /// Every flag, by name, read at most [`FRESH_FOR`] ago.
    pub async fn flags(&self, db: &Database) -> Result<Arc<[FeatureFlag]>, DomainError> {
        if let Some(flags) = self.fresh() {
            return Ok(flags);
        }
        let _turn = self.reading.lock().await;
        if let Some(flags) = self.fresh() {
            return Ok(flags);
        }
        let read_at = Instant::now();
        let flags: Arc<[FeatureFlag]> = db.all_feature_flags().await?.into();
        if let Ok(mut kept) = self.kept.write() {
            kept.flags = Some(Arc::clone(&flags));
            kept.read_at = read_at;
        }
        Ok(flags)
    }

    /// Drops the snapshot after this instance changed a flag, so the next
    /// answer reads the change.
    pub fn forget(&self) {
        if let Ok(mut kept) = self.kept.write() {
            kept.flags = None;
            kept.forgotten_at = Instant::now();
        }
    }

    /// The kept flags, if their read began within [`FRESH_FOR`] and after
    /// this instance's last change.
    fn fresh(&self) -> Option<Arc<[FeatureFlag]>> {
        let kept = self.kept.read().ok()?;
        let fresh = kept.read_at.elapsed() < FRESH_FOR && kept.read_at > kept.forgotten_at;
        kept.flags.as_ref().filter(|_| fresh).cloned()
    }
}
