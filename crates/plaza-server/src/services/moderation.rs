//! A moderator's decision on a post or a reply, as one unit of work shared
//! by every surface that offers it (the versioned admin API and the
//! operator console): under the item's edit lock, the decision, its
//! moderation action record (a hide, delete, flag or lock; an approve or
//! unlock records the reversal of the action it undoes), its audit entry,
//! the author's `moderation` notification (always for a hide or a delete,
//! and for the approval of a held item, which also tells those it
//! mentions) and, when asked, the author's alert are written in one
//! transaction, so either all of them happen or none. Who may decide is
//! asked of `plaza_domain::policy` by the caller before this runs.

use plaza_domain::alerts::{self, AlertType};
use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::locks::Resource;
use plaza_domain::moderation::actions::{self, ActionKind, NewAction, TargetType};
use plaza_domain::notifications::causes::{self, Decided};
use plaza_domain::posts::{self, Moderated, ModerationAction};
use plaza_domain::replies::{self, Removal, Reply, ReplyModerated, ReplyStatus};
use plaza_domain::rules;
use plaza_domain::time::now_millis;
use plaza_domain::{Database, DomainError, Tx};
use serde_json::{Value, json};

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
    /// The site rules the decision cites (422 `rule_ids` for one that is
    /// not a rule).
    pub rule_ids: Vec<i64>,
}

/// Applies `decision` to post `post_id` as `moderator_id`, audited as
/// `post.moderate.<action>` with `context`.
pub async fn moderate_post(
    db: &Database,
    lock_ttl: std::time::Duration,
    context: AuditContext,
    moderator_id: i64,
    post_id: i64,
    decision: Decision,
) -> Result<Moderated, DomainError> {
    let moderated = db
        .write_locked(Resource::Post(post_id), moderator_id, lock_ttl, move |tx| {
            Box::pin(async move {
                let Decision {
                    action,
                    reason,
                    notes,
                    notify_author,
                    rule_ids,
                } = decision;
                let rule_ids = rules::check_cited(tx, &rule_ids).await?;
                let moderated = posts::moderate(tx, post_id, action, moderator_id).await?;
                let (subject, undo) = match &moderated {
                    Moderated::Changed { after, .. } => (after, Value::Null),
                    Moderated::Deleted { before, .. } => (
                        before,
                        json!({"post": {
                            "title": before.title,
                            "content": before.content,
                            "tags": before.tags,
                            "published": before.published,
                        }}),
                    ),
                };
                let record_id = record_action(
                    tx,
                    moderator_id,
                    action,
                    (TargetType::Post, post_id),
                    subject.author_id,
                    Recorded {
                        reason: &reason,
                        rule_ids,
                        undo,
                    },
                )
                .await?;
                let mut changes = match &moderated {
                    Moderated::Changed {
                        before,
                        after,
                        reports_resolved,
                    } if before.locked != after.locked => json!({
                        "locked": audit::change(before.locked, after.locked),
                    }),
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
                note_decision(&mut changes, &reason, &notes, notify_author);
                changes["moderationActionId"] = json!(record_id.map(|id| id.to_string()));
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
                let (post, still_there) = match &moderated {
                    Moderated::Changed { after, .. } => (after, true),
                    Moderated::Deleted { before, .. } => (before, false),
                };
                let quoted = format!("post \u{201c}{}\u{201d}", post.title);
                let alert = author_alert(action, "post", &quoted, reason.as_deref());
                // A held post approved is public now: its author is told
                // whatever the moderator chose, and those it mentions as
                // on any publication.
                let published_after_hold = matches!(
                    &moderated,
                    Moderated::Changed { before, after, .. } if before.held && after.is_public()
                );
                if published_after_hold {
                    causes::published_after_hold(tx, post, None).await?;
                }
                if always_told(action) || published_after_hold || notify_author {
                    causes::moderated(
                        tx,
                        Decided {
                            author_id: post.author_id,
                            moderator_id,
                            post_id: still_there.then_some(post_id),
                            reply_id: None,
                            statement: alert.2.clone(),
                        },
                    )
                    .await?;
                }
                if notify_author {
                    notify(tx, post.author_id, alert, moderator_id).await?;
                }
                Ok(moderated)
            })
        })
        .await?;
    Ok(moderated)
}

/// Applies `decision` (approve, hide, flag or delete; the caller has
/// refused lock and unlock) to reply `reply_id` as `moderator_id`, under
/// the reply's edit lock (`lock_ttl`) in `db`, audited as `reply.moderate`
/// with `context`.
pub async fn moderate_reply(
    db: &Database,
    lock_ttl: std::time::Duration,
    context: AuditContext,
    moderator_id: i64,
    reply_id: i64,
    decision: Decision,
) -> Result<ReplyModerated, DomainError> {
    let moderated = db
        .write_locked(
            Resource::Reply(reply_id),
            moderator_id,
            lock_ttl,
            move |tx| {
                Box::pin(async move {
                    let Decision {
                        action,
                        reason,
                        notes,
                        notify_author,
                        rule_ids,
                    } = decision;
                    let rule_ids = rules::check_cited(tx, &rule_ids).await?;
                    let moderated = replies::moderate(tx, reply_id, action, moderator_id).await?;
                    let undo = match &moderated {
                        ReplyModerated::Changed { .. } => Value::Null,
                        ReplyModerated::Deleted { before, .. } => json!({"reply": {
                            "post_id": before.post_id,
                            "parent_id": before.parent_id,
                            "content": before.content,
                        }}),
                    };
                    let (before, mut changes) = match &moderated {
                        ReplyModerated::Changed {
                            before,
                            after,
                            reports_resolved,
                        } => (
                            before,
                            json!({
                                "status": audit::change(before.status.as_str(), after.status.as_str()),
                                "reportsResolved": reports_resolved,
                            }),
                        ),
                        ReplyModerated::Deleted { before, removal } => (
                            before,
                            json!({
                                "before": {
                                    "postId": before.post_id.to_string(),
                                    "authorId": before.author_id().map(|id| id.to_string()),
                                    "status": before.status.as_str(),
                                    "reportCount": before.report_count,
                                },
                                "after": match removal {
                                    Removal::Placeholder { .. } => json!({"status": "deleted"}),
                                    Removal::Gone => Value::Null,
                                },
                            }),
                        ),
                    };
                    let record_id = match before.author_id() {
                        Some(author_id) => {
                            record_action(
                                tx,
                                moderator_id,
                                action,
                                (TargetType::Reply, reply_id),
                                author_id,
                                Recorded {
                                    reason: &reason,
                                    rule_ids,
                                    undo,
                                },
                            )
                            .await?
                        }
                        None => None,
                    };
                    changes["action"] = json!(action.as_str());
                    changes["postId"] = json!(before.post_id.to_string());
                    note_decision(&mut changes, &reason, &notes, notify_author);
                    changes["moderationActionId"] = json!(record_id.map(|id| id.to_string()));
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: "reply.moderate",
                            target_type: "reply",
                            target_id: Some(reply_id.to_string()),
                            changes,
                        },
                    )
                    .await?;
                    // A held reply approved is public now: told as for a
                    // held post.
                    let published_after_hold = match &moderated {
                        ReplyModerated::Changed { before, after, .. }
                            if before.status == ReplyStatus::Pending
                                && after.status.is_visible() =>
                        {
                            let post = posts::lock(tx, after.post_id).await?;
                            causes::published_after_hold(tx, &post, Some(after)).await?;
                            true
                        }
                        _ => false,
                    };
                    if let Some(author_id) = before.author_id() {
                        let alert =
                            author_alert(action, "reply", &reply_excerpt(before), reason.as_deref());
                        if always_told(action) || published_after_hold || notify_author {
                            let still_there = matches!(moderated, ReplyModerated::Changed { .. });
                            causes::moderated(
                                tx,
                                Decided {
                                    author_id,
                                    moderator_id,
                                    post_id: Some(before.post_id),
                                    reply_id: still_there.then_some(reply_id),
                                    statement: alert.2.clone(),
                                },
                            )
                            .await?;
                        }
                        if notify_author {
                            notify(tx, author_id, alert, moderator_id).await?;
                        }
                    }
                    Ok(moderated)
                })
            },
        )
        .await?;
    Ok(moderated)
}

/// What a decision's record states besides its kind and target.
struct Recorded<'a> {
    reason: &'a Option<String>,
    rule_ids: String,
    undo: Value,
}

/// Records the moderation action a decision on `target` by `moderator_id`
/// makes, affecting `author_id`: a hide, delete, flag or lock records
/// itself; an approve reverses the item's standing hide or flag and an
/// unlock its lock (when there is one). Answers the record's id.
async fn record_action(
    tx: &mut Tx<'_>,
    moderator_id: i64,
    action: ModerationAction,
    (target_type, target_id): (TargetType, i64),
    author_id: i64,
    recorded: Recorded<'_>,
) -> Result<Option<i64>, DomainError> {
    let reason = recorded.reason.clone().unwrap_or_default();
    let kind = match action {
        ModerationAction::Hide => ActionKind::Hide,
        ModerationAction::Delete => ActionKind::Delete,
        ModerationAction::Flag => ActionKind::Flag,
        ModerationAction::Lock => ActionKind::Lock,
        ModerationAction::Approve | ModerationAction::Unlock => {
            let undone: &[ActionKind] = if action == ModerationAction::Approve {
                &[ActionKind::Hide, ActionKind::Flag]
            } else {
                &[ActionKind::Lock]
            };
            let reversal = actions::reverse_by_hand(
                tx,
                Some(moderator_id),
                target_type,
                target_id,
                undone,
                &reason,
            )
            .await?;
            return Ok(reversal.map(|record| record.id));
        }
    };
    let record = actions::record(
        tx,
        NewAction {
            rule_ids: recorded.rule_ids,
            undo: recorded.undo,
            ..NewAction::by(
                moderator_id,
                kind,
                target_type,
                target_id,
                Some(author_id),
                reason,
            )
        },
    )
    .await?;
    Ok(Some(record.id))
}

/// A hide or a delete is always told to the author as a `moderation`
/// notification (with its statement of reasons); the other decisions when
/// the moderator asks to notify the author.
fn always_told(action: ModerationAction) -> bool {
    matches!(action, ModerationAction::Hide | ModerationAction::Delete)
}

/// Adds what the moderator said to an audit entry's changes.
fn note_decision(
    changes: &mut Value,
    reason: &Option<String>,
    notes: &Option<String>,
    notify_author: bool,
) {
    changes["reason"] = json!(reason);
    changes["notes"] = json!(notes);
    changes["notifyAuthor"] = json!(notify_author);
}

/// How an alert names a reply: its opening words.
fn reply_excerpt(reply: &Reply) -> String {
    const EXCERPT_CHARS: usize = 60;
    let mut excerpt: String = reply.content.chars().take(EXCERPT_CHARS).collect();
    if reply.content.chars().count() > EXCERPT_CHARS {
        excerpt.push('\u{2026}');
    }
    format!("reply \u{201c}{excerpt}\u{201d}")
}

/// Sends the author the alert about a decision, in the decision's unit of
/// work.
async fn notify(
    tx: &mut Tx<'_>,
    author_id: i64,
    (alert_type, title, message): (AlertType, String, String),
    moderator_id: i64,
) -> Result<(), plaza_domain::DomainError> {
    alerts::notify_user(
        tx,
        author_id,
        alert_type,
        &title,
        &message,
        moderator_id,
        now_millis(),
    )
    .await?;
    Ok(())
}

/// The alert that tells an author about a decision on their post or
/// reply (`kind`), named by `quoted` (`post “Title”`).
fn author_alert(
    action: ModerationAction,
    kind: &str,
    quoted: &str,
    reason: Option<&str>,
) -> (AlertType, String, String) {
    let (alert_type, title, mut message) = match action {
        ModerationAction::Approve => (
            AlertType::Success,
            format!("Your {kind} was approved"),
            format!("A moderator reviewed and approved your {quoted}."),
        ),
        ModerationAction::Hide => (
            AlertType::Warning,
            format!("Your {kind} was hidden"),
            format!("A moderator hid your {quoted}; only you and moderators can see it now."),
        ),
        ModerationAction::Flag => (
            AlertType::Warning,
            format!("Your {kind} was flagged for review"),
            format!("A moderator flagged your {quoted} for review."),
        ),
        ModerationAction::Delete => (
            AlertType::Error,
            format!("Your {kind} was removed"),
            format!("A moderator permanently removed your {quoted}."),
        ),
        ModerationAction::Lock => (
            AlertType::Info,
            format!("Your {kind} was locked"),
            format!("A moderator locked your {quoted}: it takes no new replies."),
        ),
        ModerationAction::Unlock => (
            AlertType::Info,
            format!("Your {kind} was unlocked"),
            format!("A moderator unlocked your {quoted}: it takes replies again."),
        ),
    };
    if let Some(reason) = reason {
        message.push_str(" Reason: ");
        message.push_str(reason);
    }
    (alert_type, title, message)
}
