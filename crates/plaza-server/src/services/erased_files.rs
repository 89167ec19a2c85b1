//! Deleting the stored files of erased users from the upload store. An
//! erasure lists every object of the user's uploads (`store_deletions`) in
//! its unit of work; right after its commit the erasing instance works
//! through the due objects of its store, and the cluster job
//! `erased_file_retry` takes whatever is left: objects the store could not
//! delete (it was down or slow) are tried again after
//! `erased_file_retry_secs`, a wait that doubles with each attempt up to
//! an hour, until the store has deleted every one.

use std::time::Duration;

use futures_util::StreamExt;
use plaza_domain::Database;
use plaza_domain::time::now_millis;
use tokio_util::task::TaskTracker;

use crate::services::storage::Storage;
use crate::settings::StorageSettings;

/// Objects claimed at a time.
const CLAIM_PAGE: i64 = 100;
/// Deletions asked of the store at once.
const PARALLEL_DELETIONS: usize = 8;
/// How long a claim keeps other instances off its objects when its
/// instance dies before recording how the deletions went.
const CLAIM_LEASE: Duration = Duration::from_secs(300);
/// The longest wait between two attempts at one object.
const LONGEST_WAIT: Duration = Duration::from_secs(3600);

/// What one run did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Deletions {
    pub deleted: u64,
    pub failed: u64,
}

/// Deletes the due objects of this instance's store, a page at a time, at
/// most `max_pages` pages; stops after a page with a failure (the store is
/// likely down: the rest waits for the next run).
pub async fn delete_due(
    db: &Database,
    storage: &Storage,
    settings: &StorageSettings,
    max_pages: usize,
) -> Result<Deletions, String> {
    let first_wait = Duration::from_secs(settings.erased_file_retry_secs);
    let mut done = Deletions::default();
    for _ in 0..max_pages {
        let now = now_millis();
        let claimed = db
            .claim_store_deletions(&storage.location, now, millis(CLAIM_LEASE), CLAIM_PAGE)
            .await
            .map_err(|error| error.to_string())?;
        let claimed_count = claimed.len() as i64;
        let outcomes: Vec<_> = futures_util::stream::iter(claimed)
            .map(|claim| {
                let storage = storage.clone();
                async move {
                    let outcome = storage.delete(&claim.object_key).await;
                    (claim, outcome)
                }
            })
            .buffer_unordered(PARALLEL_DELETIONS)
            .collect()
            .await;
        let mut deleted = Vec::new();
        let mut failed = 0;
        for (claim, outcome) in outcomes {
            match outcome {
                Ok(()) => deleted.push(claim.object_key),
                Err(error) => {
                    failed += 1;
                    let at =
                        now_millis().saturating_add(millis(wait_after(first_wait, claim.attempts)));
                    tracing::warn!(key = %claim.object_key, attempts = claim.attempts, %error,
                        "the store could not delete a file of an erased user; it is tried again");
                    db.retry_store_deletion(&claim.object_key, at, &error.to_string())
                        .await
                        .map_err(|error| error.to_string())?;
                }
            }
        }
        db.finish_store_deletions(&deleted)
            .await
            .map_err(|error| error.to_string())?;
        done.deleted += deleted.len() as u64;
        done.failed += failed;
        if failed > 0 || claimed_count < CLAIM_PAGE {
            break;
        }
    }
    Ok(done)
}

/// Works through the due objects off the request's path (a task of
/// `background`), right after an erasure committed; what is left goes to
/// the retry job.
pub fn delete_soon(
    background: &TaskTracker,
    db: &Database,
    storage: &Storage,
    settings: &StorageSettings,
) {
    let (db, storage, settings) = (db.clone(), storage.clone(), settings.clone());
    background.spawn(async move {
        match delete_due(&db, &storage, &settings, usize::MAX).await {
            Ok(done) => tracing::debug!(
                deleted = done.deleted,
                failed = done.failed,
                "files of an erased user"
            ),
            Err(error) => tracing::warn!(%error, "deleting the files of an erased user"),
        }
    });
}

/// The wait after the `attempts`-th failed attempt: `first`, doubled with
/// each attempt after the first, at most [`LONGEST_WAIT`].
fn wait_after(first: Duration, attempts: i64) -> Duration {
    let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 20)).unwrap_or(20);
    first
        .saturating_mul(1 << doublings)
        .min(LONGEST_WAIT.max(first))
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_up_to_an_hour() {
        let minute = Duration::from_secs(60);
        let waits: Vec<u64> = (1..=9)
            .map(|attempts| wait_after(minute, attempts).as_secs())
            .collect();
        assert_eq!(waits, [60, 120, 240, 480, 960, 1920, 3600, 3600, 3600]);
        assert_eq!(wait_after(minute, 0).as_secs(), 60);
        assert_eq!(wait_after(minute, i64::MAX).as_secs(), 3600);
    }
}
