//! Silencing a member and lifting it, as a moderator's units of work: the
//! policy, the silence ([`crate::silences`]), its moderation action (or the
//! reversal of it), the member's `moderation` notification and the audit
//! entry, together.

use serde_json::json;

use super::actions::{self, ActionKind, ModerationRecord, NewAction, TargetType};
use crate::audit::{self, AuditAction, AuditContext};
use crate::bans::BanLength;
use crate::notifications::causes::{self, Decided};
use crate::policy::{self, Actor};
use crate::reports::{self, ReportTarget};
use crate::silences::{self, Silence};
use crate::time::{now_millis, rfc3339};
use crate::users::{self, User};
use crate::{DomainError, Tx};

const REFUSAL: &str = "moderators silence members of a lower role, never themselves";

/// Silences `user_id` as `actor` for `length` and `reason`, in `tx`,
/// audited as `user.silence`. Answers the user, the silence and its action.
pub async fn silence_user(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    actor: Actor,
    user_id: i64,
    reason: String,
    length: BanLength,
) -> Result<(User, Silence, ModerationRecord), DomainError> {
    let target = users::user_in(tx, user_id).await?;
    policy::discipline(actor, &target).check("user", REFUSAL)?;
    let expires_at = length.expires_at(now_millis());
    let silence = silences::impose(tx, user_id, Some(actor.user_id), &reason, expires_at).await?;
    let record = actions::record(
        tx,
        NewAction {
            expires_at,
            undo: json!({"silence_id": silence.id}),
            ..NewAction::by(
                actor.user_id,
                ActionKind::Silence,
                TargetType::User,
                user_id,
                Some(user_id),
                reason.clone(),
            )
        },
    )
    .await?;
    reports::resolve(tx, ReportTarget::User, user_id, actor.user_id).await?;
    let until = match expires_at {
        Some(at) => format!("until {}", rfc3339(at)),
        None => "until a moderator lifts it".to_owned(),
    };
    causes::moderated(
        tx,
        Decided {
            author_id: user_id,
            moderator_id: actor.user_id,
            post_id: None,
            reply_id: None,
            statement: format!(
                "A moderator silenced your account {until}: what you write waits for review, \
                 and your reactions, follows and mentions notify nobody. Reason: {reason}"
            ),
        },
    )
    .await?;
    audit::record(
        tx,
        context,
        AuditAction {
            action: "user.silence",
            target_type: "user",
            target_id: Some(user_id.to_string()),
            changes: json!({
                "silence": {
                    "id": silence.id.to_string(),
                    "reason": silence.reason,
                    "expiresAt": silence.expires_at.map(rfc3339),
                },
                "moderationActionId": record.id.to_string(),
            }),
        },
    )
    .await?;
    Ok((users::user_in(tx, user_id).await?, silence, record))
}

/// Lifts the silence of `user_id` as `actor`, in `tx`, audited as
/// `user.unsilence`; the silence's action is reversed by a `reverse`
/// record. A member who is not silenced is a [`DomainError::Conflict`].
pub async fn unsilence_user(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    actor: Actor,
    user_id: i64,
    reason: Option<String>,
) -> Result<(User, Silence), DomainError> {
    let target = users::user_in(tx, user_id).await?;
    policy::discipline(actor, &target).check("user", REFUSAL)?;
    let reason = reason.unwrap_or_else(|| "lifted".to_owned());
    let Some(lifted) =
        silences::lift_in_force(tx, user_id, Some(actor.user_id), &reason, now_millis()).await?
    else {
        return Err(DomainError::Conflict("the user is not silenced".to_owned()));
    };
    let reversal = actions::reverse_by_hand(
        tx,
        Some(actor.user_id),
        TargetType::User,
        user_id,
        &[ActionKind::Silence],
        &reason,
    )
    .await?;
    causes::moderated(
        tx,
        Decided {
            author_id: user_id,
            moderator_id: actor.user_id,
            post_id: None,
            reply_id: None,
            statement: format!("A moderator lifted the silence on your account. {reason}"),
        },
    )
    .await?;
    audit::record(
        tx,
        context,
        AuditAction {
            action: "user.unsilence",
            target_type: "user",
            target_id: Some(user_id.to_string()),
            changes: json!({
                "silence": {"id": lifted.id.to_string(), "reason": lifted.reason},
                "liftReason": reason,
                "moderationActionId": reversal.map(|record| record.id.to_string()),
            }),
        },
    )
    .await?;
    Ok((users::user_in(tx, user_id).await?, lifted))
}
