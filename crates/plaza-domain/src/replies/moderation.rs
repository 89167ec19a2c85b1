//! Moderating replies with the actions of post moderation (approve, hide,
//! flag, delete): the state machine of what each does from each status,
//! and the unit of work's step that applies it, moves the counts and
//! resolves the reports.

use super::model::{Reply, ReplyStatus};
use super::writes::{Removal, lock_thread_of, remove, set_status};
use crate::holds;
use crate::posts::ModerationAction;
use crate::reports::{self, ReportTarget};
use crate::{DomainError, Tx};

/// What a moderation action does to a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyStep {
    /// Gives it this status (published, hidden or flagged).
    Become(ReplyStatus),
    /// Deletes it as its author would ([`remove`]).
    Delete,
}

/// From each status, what each action does, or why it makes no sense (the
/// caller answers 409 with that reason). Lock and unlock are actions on a
/// post's thread, not on a reply.
pub fn reply_moderation_step(
    status: ReplyStatus,
    action: ModerationAction,
) -> Result<ReplyStep, &'static str> {
    use ModerationAction as A;
    use ReplyStatus as S;
    match (status, action) {
        (S::Deleted, _) => Err("the reply is deleted already"),
        (_, A::Lock | A::Unlock) => Err("locking is an action on the post"),
        (_, A::Delete) => Ok(ReplyStep::Delete),
        (_, A::Approve) => Ok(ReplyStep::Become(S::Published)),
        (S::Hidden, A::Hide) => Err("the reply is already hidden"),
        (_, A::Hide) => Ok(ReplyStep::Become(S::Hidden)),
        (S::Published, A::Flag) => Ok(ReplyStep::Become(S::Flagged)),
        (S::Flagged, A::Flag) => Err("the reply is already flagged"),
        (S::Hidden, A::Flag) => {
            Err("a hidden reply is out of view already; approve it first to flag it instead")
        }
        (S::Pending, A::Flag) => Err("a pending reply is not public yet; approve or hide it"),
    }
}

/// The result of [`moderate`].
#[derive(Debug, Clone)]
pub enum ReplyModerated {
    /// The new status was recorded; `reports_resolved` open reports were
    /// marked resolved.
    Changed {
        before: Reply,
        after: Box<Reply>,
        reports_resolved: u64,
    },
    /// The reply was deleted (see [`Removal`]).
    Deleted { before: Reply, removal: Removal },
}

/// Applies `action` to reply `id` by `moderator_id` following
/// [`reply_moderation_step`]: [`DomainError::InvalidTransition`] when it
/// makes no sense from the reply's status, and nothing is written then. A
/// deleted reply without visible replies below is not found.
pub async fn moderate(
    tx: &mut Tx<'_>,
    id: i64,
    action: ModerationAction,
    moderator_id: i64,
) -> Result<ReplyModerated, DomainError> {
    let (_, before) = lock_thread_of(tx, id).await?;
    if before.status == ReplyStatus::Deleted && before.reply_count == 0 {
        return Err(DomainError::NotFound("reply"));
    }
    let step = reply_moderation_step(before.status, action).map_err(|reason| {
        DomainError::InvalidTransition(format!(
            "cannot {} a {} reply: {reason}",
            action.as_str(),
            before.status.as_str()
        ))
    })?;
    match step {
        ReplyStep::Become(status) => {
            let after = Box::new(set_status(tx, &before, status).await?);
            if before.status == ReplyStatus::Pending
                && after.status == ReplyStatus::Published
                && let Some(author_id) = before.author_id()
            {
                holds::approved_writes_of(tx, author_id).await?;
            }
            let reports_resolved =
                reports::resolve(tx, ReportTarget::Reply, id, moderator_id).await?;
            Ok(ReplyModerated::Changed {
                before,
                after,
                reports_resolved,
            })
        }
        ReplyStep::Delete => {
            let removal = remove(tx, &before).await?;
            Ok(ReplyModerated::Deleted { before, removal })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_moderation_action_from_every_status() {
        use ModerationAction as A;
        use ReplyStatus as S;
        use ReplyStep::{Become, Delete};
        // Rows: published, pending, hidden, flagged, deleted; columns:
        // approve, hide, delete, flag, lock, unlock. `None` is a refusal.
        let expected = [
            [
                Some(Become(S::Published)),
                Some(Become(S::Hidden)),
                Some(Delete),
                Some(Become(S::Flagged)),
                None,
                None,
            ],
            [
                Some(Become(S::Published)),
                Some(Become(S::Hidden)),
                Some(Delete),
                None,
                None,
                None,
            ],
            [
                Some(Become(S::Published)),
                None,
                Some(Delete),
                None,
                None,
                None,
            ],
            [
                Some(Become(S::Published)),
                Some(Become(S::Hidden)),
                Some(Delete),
                None,
                None,
                None,
            ],
            [None; 6],
        ];
        for (status, row) in ReplyStatus::ALL.into_iter().zip(expected) {
            for (action, want) in A::ALL.into_iter().zip(row) {
                assert_eq!(
                    reply_moderation_step(status, action).ok(),
                    want,
                    "{status:?} {action:?}"
                );
            }
        }
    }
}
