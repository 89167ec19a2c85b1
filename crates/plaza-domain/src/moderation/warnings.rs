//! Warnings: a moderator tells a member, with a reason and the rules
//! broken, that something they did was wrong. A warning is a moderation
//! action (`warning`) of its own, notified as `warning` only, counted on
//! the member's admin detail until an appeal withdraws it.

use serde_json::json;
use sqlx::FromRow;

use super::actions::{self, ActionKind, ModerationRecord, NewAction, TargetType};
use crate::audit::{self, AuditAction, AuditContext};
use crate::notifications::causes;
use crate::policy::{self, Actor};
use crate::reports::{self, ReportTarget};
use crate::rules;
use crate::time::now_millis;
use crate::users;
use crate::{Database, DomainError, Tx};

/// Shortest and longest reason of a warning.
pub const MIN_REASON_CHARS: usize = 10;
pub const MAX_REASON_CHARS: usize = 2000;

/// One warning.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct Warning {
    pub id: i64,
    pub user_id: i64,
    pub reason: String,
    #[sqlx(rename = "rule_ids")]
    pub stored_rule_ids: String,
    pub post_id: Option<i64>,
    pub reply_id: Option<i64>,
    pub created_at: i64,
    pub created_by: Option<i64>,
    pub withdrawn_at: Option<i64>,
}

impl Warning {
    pub fn rule_ids(&self) -> Vec<i64> {
        rules::read_ids(&self.stored_rule_ids)
    }
}

const COLUMNS: &str =
    "id, user_id, reason, rule_ids, post_id, reply_id, created_at, created_by, withdrawn_at";

/// A warning as a moderator gives it (reason checked by the surface).
#[derive(Debug, Clone)]
pub struct WarningOrder {
    pub reason: String,
    pub rule_ids: Vec<i64>,
    pub post_id: Option<i64>,
    pub reply_id: Option<i64>,
}

/// Warns `user_id` as `actor`, in `tx`: the policy decides, the cited
/// rules are checked (422 `rule_ids`), the warning and its action are
/// recorded, open reports on the member resolved, the member told
/// (`warning`) and the change audited as `user.warn`.
pub async fn warn(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    actor: Actor,
    user_id: i64,
    order: WarningOrder,
) -> Result<(Warning, ModerationRecord), DomainError> {
    let target = users::user_in(tx, user_id).await?;
    policy::discipline(actor, &target).check(
        "user",
        "moderators warn members of a lower role, never themselves",
    )?;
    let rule_ids = rules::check_cited(tx, &order.rule_ids).await?;
    let warning: Warning = sqlx::query_as(&format!(
        "INSERT INTO warnings (user_id, reason, rule_ids, post_id, reply_id, created_at, \
           created_by) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {COLUMNS}"
    ))
    .bind(user_id)
    .bind(order.reason.clone())
    .bind(rule_ids.clone())
    .bind(order.post_id)
    .bind(order.reply_id)
    .bind(now_millis())
    .bind(actor.user_id)
    .fetch_one(&mut **tx)
    .await?;
    let record = actions::record(
        tx,
        NewAction {
            rule_ids,
            undo: json!({"warning_id": warning.id}),
            ..NewAction::by(
                actor.user_id,
                ActionKind::Warning,
                TargetType::User,
                user_id,
                Some(user_id),
                order.reason.clone(),
            )
        },
    )
    .await?;
    reports::resolve(tx, ReportTarget::User, user_id, actor.user_id).await?;
    causes::warned(tx, user_id, actor.user_id, order.reason.clone()).await?;
    audit::record(
        tx,
        context,
        AuditAction {
            action: "user.warn",
            target_type: "user",
            target_id: Some(user_id.to_string()),
            changes: json!({
                "warning": {
                    "id": warning.id.to_string(),
                    "reason": warning.reason,
                    "ruleIds": warning.rule_ids(),
                    "postId": warning.post_id.map(|id| id.to_string()),
                    "replyId": warning.reply_id.map(|id| id.to_string()),
                },
                "moderationActionId": record.id.to_string(),
            }),
        },
    )
    .await?;
    Ok((warning, record))
}

/// Withdraws warning `id` in `tx` (an appeal reversed it); answers whether
/// it still counted.
pub async fn withdraw(tx: &mut Tx<'_>, id: i64) -> Result<bool, DomainError> {
    let done =
        sqlx::query("UPDATE warnings SET withdrawn_at = $1 WHERE id = $2 AND withdrawn_at IS NULL")
            .bind(now_millis())
            .bind(id)
            .execute(&mut **tx)
            .await?;
    Ok(done.rows_affected() > 0)
}

impl Database {
    /// The warnings of `user_id` that still count, newest first.
    pub async fn warnings_of(&self, user_id: i64) -> Result<Vec<Warning>, DomainError> {
        Ok(sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM warnings WHERE user_id = $1 AND withdrawn_at IS NULL \
             ORDER BY created_at DESC, id DESC"
        ))
        .bind(user_id)
        .fetch_all(&mut *self.lease().await?)
        .await?)
    }

    /// How many warnings of `user_id` count.
    pub async fn warning_count(&self, user_id: i64) -> Result<i64, DomainError> {
        let (count,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM warnings WHERE user_id = $1 AND withdrawn_at IS NULL",
        )
        .bind(user_id)
        .fetch_one(&mut *self.lease().await?)
        .await?;
        Ok(count)
    }
}
