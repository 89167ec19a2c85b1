//! Sending and withdrawing broadcasts, each one unit of work with its
//! audit entry, shared by the versioned admin API and the operator
//! console. Who may is asked of `plaza_domain::policy::send_broadcast`,
//! and the fields are checked, by the caller.

use plaza_domain::alerts::{self, Broadcast, BroadcastStatus, NewBroadcast};
use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::time::{now_millis, rfc3339};
use plaza_domain::{Database, DomainError};
use serde_json::json;

/// Sends `new` at `now`: delivered at once, or stored until it is due;
/// audited as `broadcast.create` with the `targets` as given.
pub async fn send(
    db: &Database,
    context: AuditContext,
    new: NewBroadcast,
    targets: Vec<String>,
    now: i64,
) -> Result<Broadcast, DomainError> {
    let (alert_type, deliver_at) = (new.alert_type, new.deliver_at);
    db.write(|tx| {
        Box::pin(async move {
            let broadcast = alerts::create_broadcast(tx, new, now).await?;
            audit::record(
                tx,
                &context,
                AuditAction {
                    action: "broadcast.create",
                    target_type: "broadcast",
                    target_id: Some(broadcast.id.to_string()),
                    changes: json!({"after": {
                        "title": broadcast.title,
                        "type": alert_type.as_str(),
                        "targets": targets,
                        "schedule": deliver_at.map(rfc3339),
                        "recipients": broadcast.recipient_count,
                    }}),
                },
            )
            .await?;
            Ok(broadcast)
        })
    })
    .await
}

/// Withdraws the scheduled broadcast `id`; audited as `broadcast.cancel`.
pub async fn cancel(
    db: &Database,
    context: AuditContext,
    id: i64,
) -> Result<Broadcast, DomainError> {
    db.write(|tx| {
        Box::pin(async move {
            let cancelled = alerts::cancel_broadcast(tx, id, now_millis()).await?;
            audit::record(
                tx,
                &context,
                AuditAction {
                    action: "broadcast.cancel",
                    target_type: "broadcast",
                    target_id: Some(id.to_string()),
                    changes: json!({
                        "status": audit::change(
                            BroadcastStatus::Scheduled.as_str(),
                            BroadcastStatus::Cancelled.as_str(),
                        ),
                        "title": cancelled.title,
                        "schedule": cancelled.schedule().map(rfc3339),
                    }),
                },
            )
            .await?;
            Ok(cancelled)
        })
    })
    .await
}
