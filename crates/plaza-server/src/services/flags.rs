//! Writing and removing feature flags, each one unit of work with its
//! audit entry, shared by the versioned admin API and the operator
//! console; after each, this instance forgets its flag snapshot (the
//! others' snapshots expire within 5 s). The caller checks the fields and
//! who may write.

use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::feature_flags::{self, FeatureFlag, FlagChanges, WrittenFlag};
use plaza_domain::{Database, DomainError};

use crate::services::flag_snapshot::FlagSnapshot;

/// Creates flag `name` or changes it as `admin_id`; audited as
/// `feature_flag.create` or `feature_flag.update` with what changed.
pub async fn put(
    db: &Database,
    snapshot: &FlagSnapshot,
    context: AuditContext,
    name: String,
    changes: FlagChanges,
    admin_id: i64,
) -> Result<WrittenFlag, DomainError> {
    let written = db
        .write(|tx| {
            Box::pin(async move {
                let written = feature_flags::put(tx, &name, changes, admin_id).await?;
                audit::record(
                    tx,
                    &context,
                    AuditAction {
                        action: if written.created {
                            "feature_flag.create"
                        } else {
                            "feature_flag.update"
                        },
                        target_type: "feature_flag",
                        target_id: Some(name),
                        changes: written.changes.clone(),
                    },
                )
                .await?;
                Ok(written)
            })
        })
        .await?;
    snapshot.forget();
    Ok(written)
}

/// Removes flag `name`; audited as `feature_flag.delete` with its last
/// state.
pub async fn delete(
    db: &Database,
    snapshot: &FlagSnapshot,
    context: AuditContext,
    name: String,
) -> Result<FeatureFlag, DomainError> {
    let deleted = db
        .write(|tx| {
            Box::pin(async move {
                let deleted = feature_flags::delete(tx, &name).await?;
                audit::record(
                    tx,
                    &context,
                    AuditAction {
                        action: "feature_flag.delete",
                        target_type: "feature_flag",
                        target_id: Some(name),
                        changes: serde_json::json!({"before": feature_flags::snapshot(&deleted)}),
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
