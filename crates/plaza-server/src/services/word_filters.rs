//! The site's word filters as this instance enforces them: compiled into
//! one matcher ([`WordFilterSet`]), rebuilt only when the filters change.
//! At most once per [`FRESH_FOR`] one request reads the filters' stamp
//! (their number and highest id, one indexed read); when it moved, the
//! filters are read whole and compiled again. So a filter added or removed
//! through any instance is in force on every instance within [`FRESH_FOR`]
//! plus one read (the decided bound is 5 s); the instance that changed
//! them forgets its copy at once ([`WordFilterSnapshot::forget`]).
//!
//! Beside them, writing and removing a filter, each one unit of work with
//! its audit entry, shared by the versioned admin API and the console.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::word_filters::{self, NewWordFilter, WordFilter, WordFilterSet};
use plaza_domain::{Database, DomainError};

/// How long a check of the filters' stamp is trusted.
pub const FRESH_FOR: Duration = Duration::from_secs(2);

/// The compiled filters of this instance.
pub struct WordFilterSnapshot {
    kept: RwLock<Kept>,
    /// Held by the one request reading the filters; the others wait for
    /// its read instead of reading too.
    reading: tokio::sync::Mutex<()>,
}

struct Kept {
    compiled: Arc<WordFilterSet>,
    /// The stamp of the filters `compiled` was built from; `None` before
    /// the first read and after [`WordFilterSnapshot::forget`].
    stamp: Option<(i64, i64)>,
    /// When the read that confirmed `stamp` began.
    checked_at: Instant,
}

impl Default for WordFilterSnapshot {
    fn default() -> Self {
        WordFilterSnapshot {
            kept: RwLock::new(Kept {
                compiled: Arc::new(WordFilterSet::default()),
                stamp: None,
                checked_at: Instant::now(),
            }),
            reading: tokio::sync::Mutex::new(()),
        }
    }
}

impl WordFilterSnapshot {
    /// The filters in force, checked against the database at most
    /// [`FRESH_FOR`] ago.
    pub async fn current(&self, db: &Database) -> Result<Arc<WordFilterSet>, DomainError> {
        if let Some(compiled) = self.fresh() {
            return Ok(compiled);
        }
        let _turn = self.reading.lock().await;
        if let Some(compiled) = self.fresh() {
            return Ok(compiled);
        }
        let checked_at = Instant::now();
        let stamp = db.word_filter_stamp().await?;
        let kept = self
            .kept
            .read()
            .ok()
            .filter(|kept| kept.stamp == Some(stamp))
            .map(|kept| Arc::clone(&kept.compiled));
        let (compiled, stamp) = match kept {
            Some(compiled) => (compiled, stamp),
            None => {
                let filters = db.word_filters().await?;
                // The stamp of what was read, which a change between the
                // two reads may have moved past.
                let read = (
                    i64::try_from(filters.len()).unwrap_or(i64::MAX),
                    filters.iter().map(|filter| filter.id).max().unwrap_or(0),
                );
                (Arc::new(WordFilterSet::compile(&filters)), read)
            }
        };
        if let Ok(mut kept) = self.kept.write() {
            kept.compiled = Arc::clone(&compiled);
            kept.stamp = Some(stamp);
            kept.checked_at = checked_at;
        }
        Ok(compiled)
    }

    /// Makes the next [`WordFilterSnapshot::current`] read the filters,
    /// after this instance changed them.
    pub fn forget(&self) {
        if let Ok(mut kept) = self.kept.write() {
            kept.stamp = None;
        }
    }

    fn fresh(&self) -> Option<Arc<WordFilterSet>> {
        let kept = self.kept.read().ok()?;
        let fresh = kept.stamp.is_some() && kept.checked_at.elapsed() < FRESH_FOR;
        fresh.then(|| Arc::clone(&kept.compiled))
    }
}

/// Creates a filter as `admin_id`; audited as `word_filter.create`.
pub async fn create(
    db: &Database,
    snapshot: &WordFilterSnapshot,
    context: AuditContext,
    new: NewWordFilter,
    admin_id: i64,
) -> Result<WordFilter, DomainError> {
    let created = db
        .write(|tx| {
            Box::pin(async move {
                let created = word_filters::create(tx, new, admin_id).await?;
                audit::record(
                    tx,
                    &context,
                    AuditAction {
                        action: "word_filter.create",
                        target_type: "word_filter",
                        target_id: Some(created.id.to_string()),
                        changes: serde_json::json!({
                            "before": null,
                            "after": word_filters::snapshot(&created),
                        }),
                    },
                )
                .await?;
                Ok(created)
            })
        })
        .await?;
    snapshot.forget();
    Ok(created)
}

/// Removes filter `id`; audited as `word_filter.delete` with what it was.
pub async fn delete(
    db: &Database,
    snapshot: &WordFilterSnapshot,
    context: AuditContext,
    id: i64,
) -> Result<WordFilter, DomainError> {
    let deleted = db
        .write(|tx| {
            Box::pin(async move {
                let deleted = word_filters::delete(tx, id).await?;
                audit::record(
                    tx,
                    &context,
                    AuditAction {
                        action: "word_filter.delete",
                        target_type: "word_filter",
                        target_id: Some(id.to_string()),
                        changes: serde_json::json!({
                            "before": word_filters::snapshot(&deleted),
                            "after": null,
                        }),
                    },
                )
                .await?;
                Ok(deleted)
            })
        })
        .await?;
    snapshot.forget();
    Ok(deleted)
}

/// What a write of a post, reply, username or profile is checked against:
/// the filters in force and the new-account hold.
#[derive(Clone)]
pub struct Screening {
    pub filters: Arc<WordFilterSet>,
    /// `newAccountHoldCount`.
    pub new_account_hold_count: i64,
}
