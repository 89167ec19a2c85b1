//! Moderating posts: the actions a moderator takes (approve, hide, flag,
//! delete, and lock or unlock the post's thread), the state machine that
//! says what each does from each status, and the unit of work that records
//! the decision and resolves the reports.

use super::model::{Moderation, Post, PostRow, PostStatus, RETURNING_COLUMNS};
use super::writes::{delete, lock};
use crate::holds;
use crate::reports::{self, ReportTarget};
use crate::time::now_millis;
use crate::{DomainError, Tx};

/// Records a moderator's decision (the admin surface's approve, hide and
/// flag actions: approve is [`Moderation::None`], which also publishes a
/// held post and forgets why it entered the queue).
pub async fn set_moderation(
    tx: &mut Tx<'_>,
    id: i64,
    moderation: Moderation,
) -> Result<Post, DomainError> {
    let approval = if moderation == Moderation::None {
        ", published = (published OR held), held = FALSE, review_reason = NULL"
    } else {
        ""
    };
    let row: Option<PostRow> = sqlx::query_as(&format!(
        "UPDATE posts SET moderation = $1, updated_at = $2{approval} WHERE id = $3 \
         RETURNING {RETURNING_COLUMNS}"
    ))
    .bind(moderation.as_str())
    .bind(now_millis())
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or(DomainError::NotFound("post"))?.try_into()
}

/// Records whether a post's thread is locked (a locked thread takes no new
/// replies).
pub async fn set_locked(tx: &mut Tx<'_>, id: i64, locked: bool) -> Result<Post, DomainError> {
    let row: Option<PostRow> = sqlx::query_as(&format!(
        "UPDATE posts SET locked = $1, updated_at = $2 WHERE id = $3 \
         RETURNING {RETURNING_COLUMNS}"
    ))
    .bind(locked)
    .bind(now_millis())
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or(DomainError::NotFound("post"))?.try_into()
}

/// A moderator's action on a post (SPEC.md "States and transitions") or,
/// but for lock and unlock, on a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModerationAction {
    /// Clears a flag or a hide (the author's switch decides between
    /// published and draft), publishes a held post, and marks open reports
    /// resolved.
    Approve,
    Hide,
    /// Permanent: the post and its reports are removed.
    Delete,
    Flag,
    /// The post's thread takes no new replies.
    Lock,
    Unlock,
}

impl ModerationAction {
    pub const ALL: [ModerationAction; 6] = [
        ModerationAction::Approve,
        ModerationAction::Hide,
        ModerationAction::Delete,
        ModerationAction::Flag,
        ModerationAction::Lock,
        ModerationAction::Unlock,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ModerationAction::Approve => "approve",
            ModerationAction::Hide => "hide",
            ModerationAction::Delete => "delete",
            ModerationAction::Flag => "flag",
            ModerationAction::Lock => "lock",
            ModerationAction::Unlock => "unlock",
        }
    }

    pub fn parse(name: &str) -> Option<ModerationAction> {
        ModerationAction::ALL
            .into_iter()
            .find(|action| action.as_str() == name)
    }

    /// Whether it is an action on a reply too (locks are the thread's,
    /// taken on its post).
    pub fn applies_to_replies(self) -> bool {
        !matches!(self, ModerationAction::Lock | ModerationAction::Unlock)
    }
}

/// What a moderation action does to a post.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModerationStep {
    /// Records this decision (the status follows from it and the author's
    /// switch, see [`PostStatus::of`]).
    Decide(Moderation),
    Delete,
    /// Locks (true) or unlocks the thread, whatever the status.
    Lock(bool),
}

/// The moderation state machine: from each status, what each action does,
/// or why it makes no sense (the caller answers 409 with that reason).
pub fn moderation_step(
    status: PostStatus,
    action: ModerationAction,
) -> Result<ModerationStep, &'static str> {
    use ModerationAction as A;
    use PostStatus as S;
    match (status, action) {
        (_, A::Delete) => Ok(ModerationStep::Delete),
        (_, A::Lock) => Ok(ModerationStep::Lock(true)),
        (_, A::Unlock) => Ok(ModerationStep::Lock(false)),
        (S::Published | S::Flagged | S::Hidden | S::Pending, A::Approve) => {
            Ok(ModerationStep::Decide(Moderation::None))
        }
        (S::Draft, A::Approve) => Err(
            "a draft is not public, so there is nothing to approve until its author publishes it",
        ),
        (S::Hidden, A::Hide) => Err("the post is already hidden"),
        (S::Published | S::Flagged | S::Draft | S::Pending, A::Hide) => {
            Ok(ModerationStep::Decide(Moderation::Hidden))
        }
        (S::Published, A::Flag) => Ok(ModerationStep::Decide(Moderation::Flagged)),
        (S::Flagged, A::Flag) => Err("the post is already flagged"),
        (S::Hidden, A::Flag) => {
            Err("a hidden post is out of view already; approve it first to flag it instead")
        }
        (S::Draft, A::Flag) => Err("a draft is not public, so there is nothing to flag yet"),
        (S::Pending, A::Flag) => Err("a pending post is not public yet; approve or hide it"),
    }
}

/// The result of [`moderate`].
#[derive(Debug, Clone)]
pub enum Moderated {
    /// The decision was recorded; `reports_resolved` open reports were
    /// marked resolved.
    Changed {
        before: Post,
        after: Post,
        reports_resolved: u64,
    },
    /// The post and `reports_removed` reports are gone.
    Deleted { before: Post, reports_removed: i64 },
}

/// Applies `action` to post `id` by `moderator_id` following
/// [`moderation_step`]: [`DomainError::InvalidTransition`] when it makes
/// no sense from the post's status (or locks a locked post, unlocks an
/// unlocked one), and nothing is written then. The post's row is read for
/// update, so a reply being written to its thread meanwhile is either
/// before the lock or refused.
pub async fn moderate(
    tx: &mut Tx<'_>,
    id: i64,
    action: ModerationAction,
    moderator_id: i64,
) -> Result<Moderated, DomainError> {
    let before = lock(tx, id).await?;
    let step = moderation_step(before.status(), action).map_err(|reason| {
        DomainError::InvalidTransition(format!(
            "cannot {} a {} post: {reason}",
            action.as_str(),
            before.status().as_str()
        ))
    })?;
    match step {
        ModerationStep::Decide(moderation) => {
            let after = set_moderation(tx, id, moderation).await?;
            if before.held && !after.held {
                holds::approved_writes_of(tx, before.author_id).await?;
            }
            let reports_resolved =
                reports::resolve(tx, ReportTarget::Post, id, moderator_id).await?;
            Ok(Moderated::Changed {
                before,
                after,
                reports_resolved,
            })
        }
        ModerationStep::Lock(locked) if locked == before.locked => {
            Err(DomainError::InvalidTransition(format!(
                "cannot {} the post: it is {} already",
                action.as_str(),
                if locked { "locked" } else { "unlocked" }
            )))
        }
        ModerationStep::Lock(locked) => {
            let after = set_locked(tx, id, locked).await?;
            Ok(Moderated::Changed {
                before,
                after,
                reports_resolved: 0,
            })
        }
        ModerationStep::Delete => {
            let reports_removed = before.report_count;
            delete(tx, id).await?;
            Ok(Moderated::Deleted {
                before,
                reports_removed,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_moderation_action_from_every_status() {
        use ModerationAction as A;
        use ModerationStep::{Decide, Delete, Lock};
        // Rows: published, draft, hidden, flagged, pending; columns: approve, hide,
        // delete, flag. `-` is a refusal.
        let expected = [
            [
                Some(Decide(Moderation::None)),
                Some(Decide(Moderation::Hidden)),
                Some(Delete),
                Some(Decide(Moderation::Flagged)),
            ],
            [None, Some(Decide(Moderation::Hidden)), Some(Delete), None],
            [Some(Decide(Moderation::None)), None, Some(Delete), None],
            [
                Some(Decide(Moderation::None)),
                Some(Decide(Moderation::Hidden)),
                Some(Delete),
                None,
            ],
            [
                Some(Decide(Moderation::None)),
                Some(Decide(Moderation::Hidden)),
                Some(Delete),
                None,
            ],
        ];
        for (status, row) in PostStatus::ALL.into_iter().zip(expected) {
            for (action, want) in [A::Approve, A::Hide, A::Delete, A::Flag]
                .into_iter()
                .zip(row)
            {
                assert_eq!(
                    moderation_step(status, action).ok(),
                    want,
                    "{status:?} {action:?}"
                );
            }
            assert_eq!(moderation_step(status, A::Lock), Ok(Lock(true)));
            assert_eq!(moderation_step(status, A::Unlock), Ok(Lock(false)));
        }
    }
}
