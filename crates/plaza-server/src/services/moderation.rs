//! A moderator's decision on a post, as one unit of work shared by every
//! surface that offers it (the versioned admin API and the operator
//! console): under the post's edit lock, the decision, its audit entry and,
//! when asked, the author's alert are written in one transaction, so
//! either all of them happen or none. Who may decide is asked of
//! `plaza_domain::policy` by the caller before this runs.

use std::time::Duration;

use plaza_domain::alerts::{self, AlertType};
use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::locks::Resource;
use plaza_domain::posts::{self, Moderated, ModerationAction, Post};
use plaza_domain::time::now_millis;
use plaza_domain::{Database, DomainError};
use serde_json::json;

/// Longest reason a moderator gives (shown to the author when notified).
pub const MAX_REASON_CHARS: usize = 1000;
/// Longest notes a moderator keeps for the audit trail.
pub const MAX_NOTES_CHARS: usize = 5000;

/// What a moderator decided, checked by the surface that took it.
pub struct Decision {
    pub action: ModerationAction,
    /// Why; recorded in the audit entry and told to the author.
    pub reason: Option<String>,
    /// The moderator's own notes; recorded in the audit entry only.
    pub notes: Option<String>,
    /// Send the author an alert about the decision.
    pub notify_author: bool,
}

/// Applies `decision` to post `post_id` as `moderator_id`, audited as
/// `post.moderate.<action>` with `context`, under the post's edit lock
/// (held at most `lock_ttl`: `admin_lock_ttl_secs`).
pub async fn moderate_post(
    db: &Database,
    lock_ttl: Duration,
    context: AuditContext,
    moderator_id: i64,
    post_id: i64,
    decision: Decision,
) -> Result<Moderated, DomainError> {
    db.write_locked(Resource::Post(post_id), moderator_id, lock_ttl, move |tx| {
        Box::pin(async move {
            let Decision {
                action,
                reason,
                notes,
                notify_author,
            } = decision;
            let moderated = posts::moderate(tx, post_id, action, moderator_id).await?;
            let mut changes = match &moderated {
                Moderated::Changed {
                    before,
                    after,
                    reports_resolved,
                } => json!({
                    "status": audit::change(before.status().as_str(), after.status().as_str()),
                    "reportsResolved": reports_resolved,
                }),
                Moderated::Deleted {
                    before,
                    reports_removed,
                } => json!({
                    "before": {
                        "title": before.title,
                        "authorId": before.author_id.to_string(),
                        "status": before.status().as_str(),
                        "reportCount": reports_removed,
                    },
                    "after": null,
                }),
            };
            changes["reason"] = json!(reason);
            changes["notes"] = json!(notes);
            changes["notifyAuthor"] = json!(notify_author);
            audit::record(
                tx,
                &context,
                AuditAction {
                    action: &format!("post.moderate.{}", action.as_str()),
                    target_type: "post",
                    target_id: Some(post_id.to_string()),
                    changes,
                },
            )
            .await?;
            if notify_author {
                let post = match &moderated {
                    Moderated::Changed { after, .. } => after,
                    Moderated::Deleted { before, .. } => before,
                };
                let (alert_type, title, message) = author_alert(action, post, reason.as_deref());
                alerts::notify_user(
                    tx,
                    post.author_id,
                    alert_type,
                    title,
                    &message,
                    moderator_id,
                    now_millis(),
                )
                .await?;
            }
            Ok(moderated)
        })
    })
    .await
}

/// The alert that tells an author about a decision on their post.
fn author_alert(
    action: ModerationAction,
    post: &Post,
    reason: Option<&str>,
) -> (AlertType, &'static str, String) {
    let quoted = format!("\u{201c}{}\u{201d}", post.title);
    let (alert_type, title, mut message) = match action {
        ModerationAction::Approve => (
            AlertType::Success,
            "Your post was approved",
            format!("A moderator reviewed and approved your post {quoted}."),
        ),
        ModerationAction::Hide => (
            AlertType::Warning,
            "Your post was hidden",
            format!("A moderator hid your post {quoted}; only you and moderators can see it now."),
        ),
        ModerationAction::Flag => (
            AlertType::Warning,
            "Your post was flagged for review",
            format!("A moderator flagged your post {quoted} for review."),
        ),
        ModerationAction::Delete => (
            AlertType::Error,
            "Your post was removed",
            format!("A moderator permanently removed your post {quoted}."),
        ),
    };
    if let Some(reason) = reason {
        message.push_str(" Reason: ");
        message.push_str(reason);
    }
    (alert_type, title, message)
}
