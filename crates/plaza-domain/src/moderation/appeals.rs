//! Appeals (DECISIONS.md "Graduated moderation"): a member contests an
//! action affecting them, once, within the appeal window; a banned member
//! does it with the token of the link their ban mail carried. Someone
//! other than who took the action decides: `uphold` leaves it, `reverse`
//! undoes its effect ([`undo`]) and records a `reverse` action. The member
//! is told (`appeal`) and the decision audited (`appeal.decide`), in one
//! unit of work.

use serde_json::{Value, json};
use sqlx::FromRow;

use super::actions::{self, ActionKind, ModerationRecord, NewAction, TargetType};
use super::warnings;
use crate::audit::{self, AuditAction, AuditContext};
use crate::bans;
use crate::holds::Review;
use crate::notifications::causes;
use crate::policy::{self, Actor};
use crate::posts::{self, Moderation, NewPost};
use crate::replies::{self, NewReply, ReplyStatus};
use crate::silences;
use crate::time::now_millis;
use crate::users::{self, UserStatus};
use crate::webhooks::{self, EventType};
use crate::{Database, DomainError, Tx};

/// Shortest and longest text of an appeal.
pub const MIN_TEXT_CHARS: usize = 10;
pub const MAX_TEXT_CHARS: usize = 2000;
/// Most appeals on one page of the admin list.
pub const MAX_PAGE: i64 = 100;

/// Whether an appeal waits for a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppealStatus {
    Open,
    Decided,
}

impl AppealStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AppealStatus::Open => "open",
            AppealStatus::Decided => "decided",
        }
    }

    pub fn parse(name: &str) -> Option<AppealStatus> {
        match name {
            "open" => Some(AppealStatus::Open),
            "decided" => Some(AppealStatus::Decided),
            _ => None,
        }
    }
}

/// What the one who decides an appeal decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppealDecision {
    Uphold,
    Reverse,
}

impl AppealDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            AppealDecision::Uphold => "uphold",
            AppealDecision::Reverse => "reverse",
        }
    }

    pub fn parse(name: &str) -> Option<AppealDecision> {
        match name {
            "uphold" => Some(AppealDecision::Uphold),
            "reverse" => Some(AppealDecision::Reverse),
            _ => None,
        }
    }
}

/// One appeal.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct Appeal {
    pub id: i64,
    pub moderation_action_id: i64,
    pub user_id: i64,
    pub text: String,
    pub status: String,
    pub created_at: i64,
    pub decision: Option<String>,
    pub decision_reason: Option<String>,
    pub decided_at: Option<i64>,
    pub decided_by: Option<i64>,
}

const COLUMNS: &str = "id, moderation_action_id, user_id, text, status, created_at, decision, \
                       decision_reason, decided_at, decided_by";

/// Files `user_id`'s appeal of action `action_id` with `text`, in `tx`:
/// an action that is not theirs is not found; a reversal is not appealed
/// (422); after `window_millis` from the action it is too late (422); a
/// second appeal of the same action is a [`DomainError::Conflict`].
pub async fn file(
    tx: &mut Tx<'_>,
    actor: Actor,
    action_id: i64,
    text: String,
    window_millis: i64,
) -> Result<Appeal, DomainError> {
    let action = actions::action_in(tx, action_id).await?;
    policy::appeal_action(actor, action.user_id).check("moderation action", "")?;
    if action.action == ActionKind::Reverse {
        return Err(DomainError::Invalid {
            field: "moderation_action_id",
            reason: "a reversal is not appealed".to_owned(),
        });
    }
    let now = now_millis();
    if now > action.created_at.saturating_add(window_millis) {
        return Err(DomainError::Invalid {
            field: "moderation_action_id",
            reason: "the time to appeal this action is over".to_owned(),
        });
    }
    let appeal: Appeal = sqlx::query_as(&format!(
        "INSERT INTO appeals (moderation_action_id, user_id, text, status, created_at) \
         VALUES ($1, $2, $3, 'open', $4) RETURNING {COLUMNS}"
    ))
    .bind(action_id)
    .bind(actor.user_id)
    .bind(text)
    .bind(now)
    .fetch_one(&mut **tx)
    .await
    .map_err(|error| match DomainError::from(error) {
        DomainError::Conflict(_) => {
            DomainError::Conflict("this action is appealed already".to_owned())
        }
        other => other,
    })?;
    let data = json!({"appeal": {
        "id": appeal.id.to_string(),
        "moderation_action_id": appeal.moderation_action_id.to_string(),
        "user_id": appeal.user_id.to_string(),
        "created_at": crate::time::rfc3339(appeal.created_at),
    }});
    webhooks::enqueue(tx, EventType::AppealCreated, &data, now).await?;
    Ok(appeal)
}

/// Stores, in `tx`, the hash of the token a ban mail carries, good for
/// appealing action `action_id` of `user_id` until `expires_at`.
pub async fn issue_token(
    tx: &mut Tx<'_>,
    token_hash: String,
    action_id: i64,
    user_id: i64,
    expires_at: i64,
) -> Result<(), DomainError> {
    sqlx::query(
        "INSERT INTO appeal_tokens (token_hash, moderation_action_id, user_id, created_at, \
           expires_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_hash)
    .bind(action_id)
    .bind(user_id)
    .bind(now_millis())
    .bind(expires_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The action and member a mailed token names, read in `tx`; `None` for a
/// token that is unknown or has run out.
pub async fn token_in(
    tx: &mut Tx<'_>,
    token_hash: &str,
) -> Result<Option<(i64, i64)>, DomainError> {
    Ok(sqlx::query_as(
        "SELECT moderation_action_id, user_id FROM appeal_tokens \
         WHERE token_hash = $1 AND expires_at > $2",
    )
    .bind(token_hash.to_owned())
    .bind(now_millis())
    .fetch_optional(&mut **tx)
    .await?)
}

/// Files the appeal a ban mail's token (stored as `token_hash`) allows,
/// with `text`, in `tx`, as its member; `None` when the token is unknown or
/// has run out. Otherwise as [`file`]: a second appeal of the action is a
/// [`DomainError::Conflict`].
pub async fn file_by_token(
    tx: &mut Tx<'_>,
    token_hash: &str,
    text: String,
    window_millis: i64,
) -> Result<Option<Appeal>, DomainError> {
    let Some((action_id, user_id)) = token_in(tx, token_hash).await? else {
        return Ok(None);
    };
    let member = users::user_in(tx, user_id).await?;
    let actor = Actor {
        user_id,
        role: member.role,
    };
    file(tx, actor, action_id, text, window_millis)
        .await
        .map(Some)
}

/// Where a ban mail's token stands, for the page its link opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenState {
    /// No link carried it.
    Unknown,
    /// Its appeal window is over.
    Expired,
    /// The action it names is appealed already.
    Used,
    /// It may appeal now.
    Usable,
}

/// Decides appeal `id` as `actor`, in `tx`: someone other than who took
/// the action (403 otherwise), once (409 when decided); `reverse` undoes
/// the action and records its reversal. Answers the appeal as decided and
/// the reversal, if any.
pub async fn decide(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    actor: Actor,
    id: i64,
    decision: AppealDecision,
    reason: String,
) -> Result<(Appeal, Option<ModerationRecord>), DomainError> {
    let appeal = appeal_in(tx, id).await?;
    let action = actions::action_in(tx, appeal.moderation_action_id).await?;
    policy::decide_appeal(actor, action.moderator_id).check(
        "appeal",
        "an appeal is decided by someone other than who took the action",
    )?;
    if appeal.status != AppealStatus::Open.as_str() {
        return Err(DomainError::InvalidTransition(
            "the appeal is decided already".to_owned(),
        ));
    }
    let reversal = match decision {
        AppealDecision::Uphold => None,
        AppealDecision::Reverse => {
            let undone = undo(tx, actor, &action).await?;
            Some(
                actions::record(
                    tx,
                    NewAction {
                        reverses_id: Some(action.id),
                        undo: undone,
                        ..NewAction::by(
                            actor.user_id,
                            ActionKind::Reverse,
                            action.target_type,
                            action.target_id,
                            action.user_id,
                            reason.clone(),
                        )
                    },
                )
                .await?,
            )
        }
    };
    let decided: Appeal = sqlx::query_as(&format!(
        "UPDATE appeals SET status = 'decided', decision = $1, decision_reason = $2, \
         decided_at = $3, decided_by = $4 WHERE id = $5 AND status = 'open' RETURNING {COLUMNS}"
    ))
    .bind(decision.as_str())
    .bind(reason.clone())
    .bind(now_millis())
    .bind(actor.user_id)
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or_else(|| DomainError::InvalidTransition("the appeal is decided already".to_owned()))?;
    let statement = match decision {
        AppealDecision::Uphold => format!(
            "Your appeal of the {} was reviewed and the decision stands. {reason}",
            action.action.as_str()
        ),
        AppealDecision::Reverse => format!(
            "Your appeal of the {} was upheld and the action reversed. {reason}",
            action.action.as_str()
        ),
    };
    causes::appeal_decided(tx, appeal.user_id, actor.user_id, statement).await?;
    audit::record(
        tx,
        context,
        AuditAction {
            action: "appeal.decide",
            target_type: "appeal",
            target_id: Some(id.to_string()),
            changes: json!({
                "decision": decision.as_str(),
                "reason": reason,
                "moderationActionId": action.id.to_string(),
                "action": action.action.as_str(),
                "reversalId": reversal.as_ref().map(|record| record.id.to_string()),
            }),
        },
    )
    .await?;
    Ok((decided, reversal))
}

/// Undoes `action`'s effect in `tx` as far as it still stands: unhides or
/// unflags the item, unlocks the thread, restores a deleted item (a post
/// comes back as a new post with its title, content, tags and state; a
/// reply as a new answer in its thread), lifts the ban or silence it
/// imposed, withdraws the warning. Answers what was undone.
pub async fn undo(
    tx: &mut Tx<'_>,
    actor: Actor,
    action: &ModerationRecord,
) -> Result<Value, DomainError> {
    let data = action.undo();
    let reason = "reversed on appeal";
    let undone = match (action.action, action.target_type) {
        (ActionKind::Hide | ActionKind::Flag, TargetType::Post) => {
            let post = posts::lock(tx, action.target_id).await?;
            if post.moderation != Moderation::None {
                posts::set_moderation(tx, post.id, Moderation::None).await?;
            }
            json!({"post_id": post.id})
        }
        (ActionKind::Hide | ActionKind::Flag, TargetType::Reply) => {
            let reply = replies::reply_in(tx, action.target_id).await?;
            if matches!(reply.status, ReplyStatus::Hidden | ReplyStatus::Flagged) {
                replies::set_status(tx, &reply, ReplyStatus::Published).await?;
            }
            json!({"reply_id": reply.id})
        }
        (ActionKind::Lock, _) => {
            let post = posts::lock(tx, action.target_id).await?;
            if post.locked {
                posts::set_locked(tx, post.id, false).await?;
            }
            json!({"post_id": post.id})
        }
        (ActionKind::Delete, TargetType::Post) => {
            let kept = &data["post"];
            let restored = posts::create(
                tx,
                NewPost {
                    author_id: action.user_id.ok_or(DomainError::NotFound("user"))?,
                    title: kept["title"].as_str().unwrap_or_default().to_owned(),
                    content: kept["content"].as_str().unwrap_or_default().to_owned(),
                    tags: kept["tags"]
                        .as_array()
                        .map(|tags| {
                            tags.iter()
                                .filter_map(|tag| tag.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default(),
                    published: kept["published"].as_bool().unwrap_or(true),
                    // A reversal restores what a moderator removed: no
                    // hold or filter stands between it and its readers.
                    review: Review::Publish,
                },
            )
            .await?;
            json!({"restored_post_id": restored.post.id})
        }
        (ActionKind::Delete, TargetType::Reply) => {
            let kept = &data["reply"];
            let author_id = action.user_id.ok_or(DomainError::NotFound("user"))?;
            let author = users::user_in(tx, author_id).await?;
            let restored = replies::create(
                tx,
                NewReply {
                    post_id: kept["post_id"]
                        .as_i64()
                        .ok_or(DomainError::NotFound("post"))?,
                    parent_id: kept["parent_id"].as_i64(),
                    author_id,
                    content: kept["content"].as_str().unwrap_or_default().to_owned(),
                    review: Review::Publish,
                },
                posts::Viewer::new(Some((author_id, author.role))),
            )
            .await?;
            json!({"restored_reply_id": restored.reply.id})
        }
        (ActionKind::Ban, _) => {
            let user = users::user_in(tx, action.target_id).await?;
            let ban_id = data["ban_id"].as_i64();
            let in_force: Option<(i64,)> =
                sqlx::query_as("SELECT id FROM user_bans WHERE user_id = $1 AND lifted_at IS NULL")
                    .bind(user.id())
                    .fetch_optional(&mut **tx)
                    .await?;
            if user.status == UserStatus::Banned && in_force.map(|(id,)| id) == ban_id {
                bans::lift(tx, user.id(), Some(actor.user_id), reason).await?;
            }
            json!({"ban_id": ban_id})
        }
        (ActionKind::Silence, _) => {
            let silence_id = data["silence_id"].as_i64().unwrap_or_default();
            silences::lift_one(tx, silence_id, Some(actor.user_id), reason).await?;
            json!({"silence_id": silence_id})
        }
        (ActionKind::Warning, _) => {
            let warning_id = data["warning_id"].as_i64().unwrap_or_default();
            warnings::withdraw(tx, warning_id).await?;
            json!({"warning_id": warning_id})
        }
        (ActionKind::Reverse, _)
        | (ActionKind::Hide | ActionKind::Flag | ActionKind::Delete, _) => {
            return Err(DomainError::InvalidTransition(format!(
                "a {} of a {} cannot be reversed",
                action.action.as_str(),
                action.target_type.as_str()
            )));
        }
    };
    Ok(undone)
}

/// Appeal `id`, read in `tx` for its decision.
async fn appeal_in(tx: &mut Tx<'_>, id: i64) -> Result<Appeal, DomainError> {
    let row: Option<Appeal> =
        sqlx::query_as(&format!("SELECT {COLUMNS} FROM appeals WHERE id = $1"))
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
    row.ok_or(DomainError::NotFound("appeal"))
}

/// A page of appeals with the action each contests.
#[derive(Debug, Clone)]
pub struct AppealPage {
    pub appeals: Vec<(Appeal, ModerationRecord)>,
    pub total: i64,
}

impl Database {
    /// Appeals of `status` (`None`: all), oldest first when open (the queue
    /// order), newest first when decided, `limit` from `offset`.
    pub async fn appeals(
        &self,
        status: Option<AppealStatus>,
        limit: i64,
        offset: i64,
    ) -> Result<AppealPage, DomainError> {
        let (filter, order) = match status {
            Some(AppealStatus::Open) => ("WHERE status = 'open'", "ASC"),
            Some(AppealStatus::Decided) => ("WHERE status = 'decided'", "DESC"),
            None => ("", "DESC"),
        };
        let mut lease = self.lease().await?;
        let (total,): (i64,) = sqlx::query_as(&format!("SELECT COUNT(*) FROM appeals {filter}"))
            .fetch_one(&mut *lease)
            .await?;
        let rows: Vec<Appeal> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM appeals {filter} ORDER BY created_at {order}, id {order} \
             LIMIT $1 OFFSET $2"
        ))
        .bind(limit.clamp(1, MAX_PAGE))
        .bind(offset.max(0))
        .fetch_all(&mut *lease)
        .await?;
        drop(lease);
        let mut appeals = Vec::with_capacity(rows.len());
        for appeal in rows {
            let action = self.moderation_action(appeal.moderation_action_id).await?;
            appeals.push((appeal, action));
        }
        Ok(AppealPage { appeals, total })
    }

    /// Appeal `id` with the action it contests.
    pub async fn appeal(&self, id: i64) -> Result<(Appeal, ModerationRecord), DomainError> {
        let row: Option<Appeal> =
            sqlx::query_as(&format!("SELECT {COLUMNS} FROM appeals WHERE id = $1"))
                .bind(id)
                .fetch_optional(&mut *self.lease().await?)
                .await?;
        let appeal = row.ok_or(DomainError::NotFound("appeal"))?;
        let action = self.moderation_action(appeal.moderation_action_id).await?;
        Ok((appeal, action))
    }

    /// Where the token stored as `token_hash` stands at `now`.
    pub async fn appeal_token_state(
        &self,
        token_hash: &str,
        now: i64,
    ) -> Result<TokenState, DomainError> {
        let row: Option<(i64, i64)> = sqlx::query_as(
            "SELECT t.expires_at, (SELECT COUNT(*) FROM appeals a \
               WHERE a.moderation_action_id = t.moderation_action_id) \
             FROM appeal_tokens t WHERE t.token_hash = $1",
        )
        .bind(token_hash.to_owned())
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        Ok(match row {
            None => TokenState::Unknown,
            Some((_, appealed)) if appealed > 0 => TokenState::Used,
            Some((expires_at, _)) if expires_at <= now => TokenState::Expired,
            Some(_) => TokenState::Usable,
        })
    }

    /// How long the open appeals have waited: their count and the oldest's
    /// age at `now`, in milliseconds.
    pub async fn open_appeal_wait(&self, now: i64) -> Result<(i64, Option<i64>), DomainError> {
        let (count, oldest): (i64, Option<i64>) =
            sqlx::query_as("SELECT COUNT(*), MIN(created_at) FROM appeals WHERE status = 'open'")
                .fetch_one(&mut *self.lease().await?)
                .await?;
        Ok((count, oldest.map(|at| now - at)))
    }
}
