//! Moderation actions: the record of each hide, delete, flag or lock of a
//! member's content, ban, silence and warning, with its statement of
//! reasons, written by the unit of work of its effect. A reversal is a
//! record of its own (`reverse`, naming what it undoes); nothing here edits
//! a record, so `reversed` is read from the reversal's presence. The member
//! reads the actions affecting them; anyone reads the public log, which
//! never names the moderator.

use serde_json::Value;
use sqlx::FromRow;

use crate::holds::HoldReason;
use crate::rules;
use crate::time::now_millis;
use crate::webhooks::{self, EventType};
use crate::{Database, DomainError, Flag, Tx};

/// Most actions on one page.
pub const MAX_PAGE: i64 = 100;

/// What a moderator did (DECISIONS.md's action names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    Hide,
    Delete,
    Flag,
    Lock,
    Ban,
    Silence,
    Warning,
    /// Undoes another action, by appeal or by hand.
    Reverse,
}

impl ActionKind {
    pub const ALL: [ActionKind; 8] = [
        ActionKind::Hide,
        ActionKind::Delete,
        ActionKind::Flag,
        ActionKind::Lock,
        ActionKind::Ban,
        ActionKind::Silence,
        ActionKind::Warning,
        ActionKind::Reverse,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Hide => "hide",
            ActionKind::Delete => "delete",
            ActionKind::Flag => "flag",
            ActionKind::Lock => "lock",
            ActionKind::Ban => "ban",
            ActionKind::Silence => "silence",
            ActionKind::Warning => "warning",
            ActionKind::Reverse => "reverse",
        }
    }

    pub fn parse(name: &str) -> Option<ActionKind> {
        ActionKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }
}

impl TryFrom<String> for ActionKind {
    type Error = DomainError;

    fn try_from(name: String) -> Result<Self, DomainError> {
        ActionKind::parse(&name)
            .ok_or_else(|| DomainError::Conflict(format!("unknown moderation action {name}")))
    }
}

/// What an action is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetType {
    Post,
    Reply,
    User,
}

impl TargetType {
    pub fn as_str(self) -> &'static str {
        match self {
            TargetType::Post => "post",
            TargetType::Reply => "reply",
            TargetType::User => "user",
        }
    }
}

impl TryFrom<String> for TargetType {
    type Error = DomainError;

    fn try_from(name: String) -> Result<Self, DomainError> {
        match name.as_str() {
            "post" => Ok(TargetType::Post),
            "reply" => Ok(TargetType::Reply),
            "user" => Ok(TargetType::User),
            _ => Err(DomainError::Conflict(format!("unknown target type {name}"))),
        }
    }
}

/// One recorded action.
#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct ModerationRecord {
    pub id: i64,
    #[sqlx(try_from = "String")]
    pub action: ActionKind,
    #[sqlx(try_from = "String")]
    pub target_type: TargetType,
    pub target_id: i64,
    /// The member affected.
    pub user_id: Option<i64>,
    /// Who acted; `None` when automated (or the moderator was erased).
    pub moderator_id: Option<i64>,
    pub reason: String,
    #[sqlx(rename = "rule_ids")]
    pub stored_rule_ids: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub automated: Flag,
    /// The action a `reverse` undoes.
    pub reverses_id: Option<i64>,
    /// What undoing it needs (JSON), as the effect left it.
    pub undo: Option<String>,
    /// Whether a `reverse` record undoes this one.
    pub reversed: Flag,
}

impl ModerationRecord {
    pub fn rule_ids(&self) -> Vec<i64> {
        rules::read_ids(&self.stored_rule_ids)
    }

    /// The undo data, read back.
    pub fn undo(&self) -> Value {
        self.undo
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or(Value::Null)
    }
}

const COLUMNS: &str = "a.id, a.action, a.target_type, a.target_id, a.user_id, a.moderator_id, \
     a.reason, a.rule_ids, a.created_at, a.expires_at, a.automated, a.reverses_id, a.undo, \
     (SELECT COUNT(*) FROM moderation_actions r WHERE r.reverses_id = a.id) AS reversed";

/// An action to record.
#[derive(Debug, Clone)]
pub struct NewAction {
    pub action: ActionKind,
    pub target_type: TargetType,
    pub target_id: i64,
    pub user_id: Option<i64>,
    pub moderator_id: Option<i64>,
    pub reason: String,
    /// As stored ([`rules::check_cited`] answers it).
    pub rule_ids: String,
    pub expires_at: Option<i64>,
    pub automated: bool,
    pub reverses_id: Option<i64>,
    pub undo: Value,
}

impl NewAction {
    /// A moderator's action on `target` affecting `user_id`, for `reason`,
    /// citing no rule, not timed, nothing to undo with.
    pub fn by(
        moderator_id: i64,
        action: ActionKind,
        target_type: TargetType,
        target_id: i64,
        user_id: Option<i64>,
        reason: String,
    ) -> NewAction {
        NewAction {
            action,
            target_type,
            target_id,
            user_id,
            moderator_id: Some(moderator_id),
            reason,
            rule_ids: "[]".to_owned(),
            expires_at: None,
            automated: false,
            reverses_id: None,
            undo: Value::Null,
        }
    }
}

/// Records the flag a write of `target_type` `target_id` by `author_id`
/// made, when a word filter flagged it (`flagged`, the write's answer):
/// an automated `flag` stating why, with no moderator. A moderator's
/// approve reverses it as it does a moderator's flag.
pub async fn record_filter_flag(
    tx: &mut Tx<'_>,
    flagged: Option<&HoldReason>,
    target_type: TargetType,
    target_id: i64,
    author_id: i64,
) -> Result<(), DomainError> {
    let Some(why) = flagged else {
        return Ok(());
    };
    record(
        tx,
        NewAction {
            moderator_id: None,
            automated: true,
            ..NewAction::by(
                0,
                ActionKind::Flag,
                target_type,
                target_id,
                Some(author_id),
                why.describe(),
            )
        },
    )
    .await?;
    Ok(())
}

/// Records `new` in `tx`; answers the record.
pub async fn record(tx: &mut Tx<'_>, new: NewAction) -> Result<ModerationRecord, DomainError> {
    let undo = (!new.undo.is_null()).then(|| new.undo.to_string());
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO moderation_actions (action, target_type, target_id, user_id, moderator_id, \
           reason, rule_ids, created_at, expires_at, automated, reverses_id, undo) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
    )
    .bind(new.action.as_str())
    .bind(new.target_type.as_str())
    .bind(new.target_id)
    .bind(new.user_id)
    .bind(new.moderator_id)
    .bind(new.reason)
    .bind(new.rule_ids)
    .bind(now_millis())
    .bind(new.expires_at)
    .bind(new.automated)
    .bind(new.reverses_id)
    .bind(undo)
    .fetch_one(&mut **tx)
    .await
    .map_err(|error| match DomainError::from(error) {
        DomainError::Conflict(_) => {
            DomainError::Conflict("the action is reversed already".to_owned())
        }
        other => other,
    })?;
    let recorded = action_in(tx, id).await?;
    let data = serde_json::json!({"moderation_action": {
        "id": recorded.id.to_string(),
        "action": recorded.action.as_str(),
        "target_type": recorded.target_type.as_str(),
        "target_id": recorded.target_id.to_string(),
        "reason": recorded.reason,
        "rule_ids": recorded.rule_ids().iter().map(i64::to_string).collect::<Vec<_>>(),
        "automated": recorded.automated.0,
        "created_at": crate::time::rfc3339(recorded.created_at),
    }});
    webhooks::enqueue(tx, EventType::ModerationAction, &data, recorded.created_at).await?;
    Ok(recorded)
}

/// Action `id`, read in `tx`.
pub async fn action_in(tx: &mut Tx<'_>, id: i64) -> Result<ModerationRecord, DomainError> {
    let row: Option<ModerationRecord> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM moderation_actions a WHERE a.id = $1"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or(DomainError::NotFound("moderation action"))
}

/// The latest action of one of `kinds` on a target that no reversal
/// undoes yet, read in `tx`: what a moderator's hand undoing it (an
/// approve, an unlock, an unban, a lift) reverses.
pub async fn latest_standing(
    tx: &mut Tx<'_>,
    target_type: TargetType,
    target_id: i64,
    kinds: &[ActionKind],
) -> Result<Option<ModerationRecord>, DomainError> {
    let names: Vec<String> = kinds
        .iter()
        .map(|kind| format!("'{}'", kind.as_str()))
        .collect();
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM moderation_actions a WHERE a.target_type = $1 \
         AND a.target_id = $2 AND a.action IN ({}) \
         AND NOT EXISTS (SELECT 1 FROM moderation_actions r WHERE r.reverses_id = a.id) \
         ORDER BY a.id DESC LIMIT 1",
        names.join(", ")
    ))
    .bind(target_type.as_str())
    .bind(target_id)
    .fetch_optional(&mut **tx)
    .await?)
}

/// Records, in `tx`, that `moderator_id` undid by hand the latest standing
/// action of `kinds` on a target (if there is one), for `reason`.
pub async fn reverse_by_hand(
    tx: &mut Tx<'_>,
    moderator_id: Option<i64>,
    target_type: TargetType,
    target_id: i64,
    kinds: &[ActionKind],
    reason: &str,
) -> Result<Option<ModerationRecord>, DomainError> {
    let Some(original) = latest_standing(tx, target_type, target_id, kinds).await? else {
        return Ok(None);
    };
    let reversal = record(
        tx,
        NewAction {
            action: ActionKind::Reverse,
            target_type,
            target_id,
            user_id: original.user_id,
            moderator_id,
            reason: reason.to_owned(),
            rule_ids: "[]".to_owned(),
            expires_at: None,
            automated: false,
            reverses_id: Some(original.id),
            undo: Value::Null,
        },
    )
    .await?;
    Ok(Some(reversal))
}

/// A page of actions, newest first.
#[derive(Debug, Clone)]
pub struct ActionPage {
    pub actions: Vec<ModerationRecord>,
    /// The id the next page continues below; `None` on the last page.
    pub next: Option<i64>,
}

impl Database {
    /// Action `id`.
    pub async fn moderation_action(&self, id: i64) -> Result<ModerationRecord, DomainError> {
        let row: Option<ModerationRecord> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM moderation_actions a WHERE a.id = $1"
        ))
        .bind(id)
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        row.ok_or(DomainError::NotFound("moderation action"))
    }

    /// A page of the actions affecting `user_id` (`None`: every action, the
    /// public log), newest first, below id `before` (`None`: from the
    /// newest), at most `limit` (1 to [`MAX_PAGE`]).
    pub async fn moderation_actions(
        &self,
        user_id: Option<i64>,
        before: Option<i64>,
        limit: i64,
    ) -> Result<ActionPage, DomainError> {
        let limit = limit.clamp(1, MAX_PAGE);
        let whose = if user_id.is_some() {
            "a.user_id = $3 AND "
        } else {
            ""
        };
        let sql = format!(
            "SELECT {COLUMNS} FROM moderation_actions a \
             WHERE {whose}a.id < $1 ORDER BY a.id DESC LIMIT $2"
        );
        let mut query = sqlx::query_as(&sql)
            .bind(before.unwrap_or(i64::MAX))
            .bind(limit + 1);
        if let Some(user_id) = user_id {
            query = query.bind(user_id);
        }
        let mut rows: Vec<ModerationRecord> = query.fetch_all(&mut *self.lease().await?).await?;
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next = more.then(|| rows.last().map(|row| row.id)).flatten();
        Ok(ActionPage {
            actions: rows,
            next,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_names_read_back() {
        for kind in ActionKind::ALL {
            assert_eq!(ActionKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(ActionKind::parse("approve"), None);
    }
}
