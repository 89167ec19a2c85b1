//! The audit entries of reads (an admin viewing the user list), committed
//! together: each read waits until its entry is stored, but the entries of
//! concurrent reads share one transaction. On SQLite every commit also
//! makes each reading connection drop its cache and memory map, so one
//! commit per read cost the audited list a third of its throughput.

use plaza_domain::audit::{AuditAction, AuditContext};
use plaza_domain::{Database, DomainError};
use tokio_util::sync::CancellationToken;

use crate::services::group_commit::{GroupCommit, Refused, Unwritten};

/// Entries waiting at most; beyond, a read commits its own entry.
const MAX_QUEUED_ENTRIES: usize = 10_000;

/// Entries per transaction at most.
const MAX_BATCH_ENTRIES: usize = 500;

type ReadEntry = (AuditContext, AuditAction<'static>);

pub struct AuditReads {
    queue: GroupCommit<ReadEntry>,
}

impl Default for AuditReads {
    fn default() -> Self {
        AuditReads {
            queue: GroupCommit::new(MAX_QUEUED_ENTRIES, MAX_BATCH_ENTRIES),
        }
    }
}

impl AuditReads {
    /// Records one read, stored when this returns: with the entries of
    /// concurrent reads, or alone when the queue is full.
    pub async fn record(
        &self,
        db: &Database,
        context: AuditContext,
        action: AuditAction<'static>,
    ) -> Result<(), DomainError> {
        let Ok(places) = self.queue.reserve(1) else {
            return db.record_reads(vec![(context, action)]).await;
        };
        self.queue
            .submit(vec![(context, action)], places)
            .await
            .map_err(|refused| match refused {
                Refused::Failed(error) => DomainError::Unavailable(error),
                other => DomainError::Unavailable(other.to_string()),
            })
    }

    /// The writer, until `stop` fires (then it stores what is queued).
    pub async fn run(&self, db: Database, stop: CancellationToken) {
        self.queue
            .run(
                |entries| async {
                    // The entries are the server's own, never split for
                    // a refusal: every read of the batch gets the error.
                    db.record_reads(entries).await.map_err(|error| Unwritten {
                        error: error.to_string(),
                        rows: None,
                    })
                },
                stop,
            )
            .await;
    }
}
