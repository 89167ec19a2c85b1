//! Bans: timed records behind a user's `banned` status. Imposing one sets
//! the status, ends every session and revokes every admin token the user
//! holds (tokens issued before `users.credentials_valid_after` are refused),
//! all in the caller's unit of work; lifting one, by an admin or by the
//! expiry job ([`expire_due`]), makes the user active again. At most one
//! ban of a user is in force; a new ban on a banned user supersedes it.

use serde_json::json;
use sqlx::FromRow;

use crate::audit::{self, AuditAction, AuditContext};
use crate::policy::{self, Actor};
use crate::time::{now_millis, rfc3339};
use crate::users::{self, User, UserStatus};
use crate::webhooks::{self, EventType};
use crate::{Database, DomainError, Tx};

/// How long a ban lasts: `permanent`, or a number and a unit of `m`
/// (minutes), `h`, `d`, `w` or `y` (365 days), as DECISIONS.md writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BanLength {
    Permanent,
    Millis(i64),
}

/// The longest timed ban: anything longer is written `permanent`.
const MAX_BAN_MILLIS: i64 = 100 * 365 * DAY_MILLIS;
const DAY_MILLIS: i64 = 24 * 60 * 60 * 1000;

impl BanLength {
    /// Parses `30d`, `12h`, `permanent`; `None` for anything else (a zero,
    /// a missing or unknown unit, more than a hundred years).
    pub fn parse(text: &str) -> Option<BanLength> {
        let text = text.trim();
        if text == "permanent" {
            return Some(BanLength::Permanent);
        }
        let unit_at = text.find(|c: char| !c.is_ascii_digit())?;
        let (number, unit) = text.split_at(unit_at);
        let number: i64 = number.parse().ok().filter(|n| *n > 0)?;
        let unit_millis = match unit {
            "m" => 60 * 1000,
            "h" => 60 * 60 * 1000,
            "d" => DAY_MILLIS,
            "w" => 7 * DAY_MILLIS,
            "y" => 365 * DAY_MILLIS,
            _ => return None,
        };
        number
            .checked_mul(unit_millis)
            .filter(|millis| *millis <= MAX_BAN_MILLIS)
            .map(BanLength::Millis)
    }

    /// When a ban of this length imposed at `now` ends (`None`: never).
    pub fn expires_at(self, now: i64) -> Option<i64> {
        match self {
            BanLength::Permanent => None,
            BanLength::Millis(millis) => Some(now + millis),
        }
    }
}

/// One ban, in force or lifted.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct Ban {
    pub id: i64,
    pub user_id: i64,
    pub banned_by: Option<i64>,
    pub reason: String,
    pub notes: Option<String>,
    pub created_at: i64,
    /// `None`: permanent.
    pub expires_at: Option<i64>,
    /// When it stopped being in force: lifted by an admin, superseded, or
    /// expired (`lifted_by` is then `None`).
    pub lifted_at: Option<i64>,
    pub lifted_by: Option<i64>,
    pub lift_reason: Option<String>,
}

const BAN_COLUMNS: &str = "id, user_id, banned_by, reason, notes, created_at, expires_at, \
                           lifted_at, lifted_by, lift_reason";

/// The terms of a new ban.
#[derive(Debug, Clone)]
pub struct NewBan {
    pub user_id: i64,
    /// The admin imposing it.
    pub banned_by: Option<i64>,
    pub reason: String,
    pub notes: Option<String>,
    pub length: BanLength,
}

/// Bans `ban.user_id` in `tx`: a ban already in force is superseded by this
/// one, the status becomes `banned`, every session ends and every admin
/// token issued until now stops working.
pub async fn impose(tx: &mut Tx<'_>, ban: NewBan) -> Result<Ban, DomainError> {
    let now = now_millis();
    lift_in_force(
        tx,
        ban.user_id,
        ban.banned_by,
        "superseded by a new ban",
        now,
    )
    .await?;
    users::set_status(tx, ban.user_id, UserStatus::Banned).await?;
    users::revoke_credentials(tx, ban.user_id, now).await?;
    let row: Ban = sqlx::query_as(&format!(
        "INSERT INTO user_bans (user_id, banned_by, reason, notes, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING {BAN_COLUMNS}"
    ))
    .bind(ban.user_id)
    .bind(ban.banned_by)
    .bind(ban.reason)
    .bind(ban.notes)
    .bind(now)
    .bind(ban.length.expires_at(now))
    .fetch_one(&mut **tx)
    .await?;
    let data = json!({
        "user": {"id": row.user_id.to_string()},
        "ban": {
            "id": row.id.to_string(),
            "reason": row.reason,
            "banned_by": row.banned_by.map(|id| id.to_string()),
            "expires_at": row.expires_at.map(rfc3339),
        },
    });
    webhooks::enqueue(tx, EventType::UserBanned, &data, now).await?;
    Ok(row)
}

/// Tells the webhooks that `user_id` is no longer banned (`lifted_by`:
/// `None` when the ban ran out).
async fn announce_unban(
    tx: &mut Tx<'_>,
    user_id: i64,
    lifted_by: Option<i64>,
    reason: &str,
    now: i64,
) -> Result<(), DomainError> {
    let data = json!({
        "user": {"id": user_id.to_string()},
        "lifted_by": lifted_by.map(|id| id.to_string()),
        "reason": reason,
    });
    webhooks::enqueue(tx, EventType::UserUnbanned, &data, now).await
}

/// Unbans `user_id` in `tx`: the ban in force (if the status came from one)
/// is lifted and the user is active again. A user who is not banned is a
/// [`DomainError::Conflict`].
pub async fn lift(
    tx: &mut Tx<'_>,
    user_id: i64,
    lifted_by: Option<i64>,
    reason: &str,
) -> Result<Option<Ban>, DomainError> {
    let user = users::user_in(tx, user_id).await?;
    if user.status != UserStatus::Banned {
        return Err(DomainError::Conflict("the user is not banned".to_owned()));
    }
    let now = now_millis();
    let lifted = lift_in_force(tx, user_id, lifted_by, reason, now).await?;
    users::set_status(tx, user_id, UserStatus::Active).await?;
    announce_unban(tx, user_id, lifted_by, reason, now).await?;
    Ok(lifted)
}

/// An admin's ban: why, for how long, with optional notes.
#[derive(Debug, Clone)]
pub struct BanOrder {
    pub reason: String,
    pub notes: Option<String>,
    pub length: BanLength,
}

/// Why nobody may be banned by `actor`, for the policy's refusal.
const BAN_REFUSAL: &str =
    "nobody bans themself or a super admin, and an admin bans only users of a lower role";

/// Bans a user on an admin's order, in `tx`: the policy decides, the ban
/// is imposed and the change audited as `user.ban`. Both admin surfaces
/// ban through here. Answers the user after the ban and the ban.
pub async fn ban_user(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    actor: Actor,
    user_id: i64,
    order: BanOrder,
) -> Result<(User, Ban), DomainError> {
    let target = users::user_in(tx, user_id).await?;
    policy::ban(actor, &target).check("user", BAN_REFUSAL)?;
    let ban = impose(
        tx,
        NewBan {
            user_id,
            banned_by: Some(actor.user_id),
            reason: order.reason,
            notes: order.notes,
            length: order.length,
        },
    )
    .await?;
    audit::record(
        tx,
        context,
        AuditAction {
            action: "user.ban",
            target_type: "user",
            target_id: Some(user_id.to_string()),
            changes: json!({
                "status": audit::change(target.status.as_str(), UserStatus::Banned.as_str()),
                "ban": {"id": ban.id, "reason": ban.reason, "expiresAt": ban.expires_at.map(rfc3339)},
            }),
        },
    )
    .await?;
    Ok((users::user_in(tx, user_id).await?, ban))
}

/// Lifts a user's ban on an admin's order, in `tx`, audited as
/// `user.unban`; the policy that guards banning guards this too. A user
/// who is not banned is a [`DomainError::Conflict`]. Answers the user
/// after and the ban lifted (none when the status came without one).
pub async fn unban_user(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    actor: Actor,
    user_id: i64,
    reason: Option<&str>,
) -> Result<(User, Option<Ban>), DomainError> {
    let target = users::user_in(tx, user_id).await?;
    policy::ban(actor, &target).check("user", BAN_REFUSAL)?;
    let lifted = lift(
        tx,
        user_id,
        Some(actor.user_id),
        reason.unwrap_or("unbanned"),
    )
    .await?;
    audit::record(
        tx,
        context,
        AuditAction {
            action: "user.unban",
            target_type: "user",
            target_id: Some(user_id.to_string()),
            changes: json!({
                "status": audit::change(target.status.as_str(), UserStatus::Active.as_str()),
                "ban": lifted.as_ref().map(|ban| json!({"id": ban.id, "reason": ban.reason})),
            }),
        },
    )
    .await?;
    Ok((users::user_in(tx, user_id).await?, lifted))
}

async fn lift_in_force(
    tx: &mut Tx<'_>,
    user_id: i64,
    lifted_by: Option<i64>,
    reason: &str,
    now: i64,
) -> Result<Option<Ban>, DomainError> {
    let row: Option<Ban> = sqlx::query_as(&format!(
        "UPDATE user_bans SET lifted_at = $1, lifted_by = $2, lift_reason = $3 \
         WHERE user_id = $4 AND lifted_at IS NULL RETURNING {BAN_COLUMNS}"
    ))
    .bind(now)
    .bind(lifted_by)
    .bind(reason)
    .bind(user_id)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row)
}

/// Lifts, in `tx`, the ban `ban_id` if it is still in force and has run out
/// by `now`, making its user active again. `None` when another run (or an
/// admin) got there first, so each expiry happens once.
pub async fn expire(tx: &mut Tx<'_>, ban_id: i64, now: i64) -> Result<Option<Ban>, DomainError> {
    let row: Option<Ban> = sqlx::query_as(&format!(
        "UPDATE user_bans SET lifted_at = expires_at, lift_reason = 'expired' \
         WHERE id = $1 AND lifted_at IS NULL AND expires_at <= $2 RETURNING {BAN_COLUMNS}"
    ))
    .bind(ban_id)
    .bind(now)
    .fetch_optional(&mut **tx)
    .await?;
    if let Some(ban) = &row {
        users::set_status(tx, ban.user_id, UserStatus::Active).await?;
        announce_unban(tx, ban.user_id, None, "expired", now).await?;
    }
    Ok(row)
}

/// Bans lifted per batch of [`expire_due`].
const EXPIRY_BATCH: i64 = 100;

/// Lifts every ban that has run out by `now`, each in its own unit of work
/// with its audit entry (`user.ban.expire`, by the system); answers how many
/// this run lifted. Safe to run on several instances at once: a ban another
/// run lifted first is skipped.
pub async fn expire_due(db: &Database, now: i64) -> Result<usize, DomainError> {
    let mut lifted = 0;
    loop {
        let due = db.due_bans(now, EXPIRY_BATCH).await?;
        let batch = due.len();
        for ban in due {
            let expired = db
                .write(|tx| {
                    Box::pin(async move {
                        let Some(expired) = expire(tx, ban.id, now).await? else {
                            return Ok(false);
                        };
                        audit::record(
                            tx,
                            &AuditContext::system(),
                            AuditAction {
                                action: "user.ban.expire",
                                target_type: "user",
                                target_id: Some(expired.user_id.to_string()),
                                changes: serde_json::json!({
                                    "status": audit::change("banned", "active"),
                                    "ban": {"id": expired.id, "reason": expired.reason},
                                }),
                            },
                        )
                        .await?;
                        Ok(true)
                    })
                })
                .await?;
            lifted += usize::from(expired);
        }
        if batch < EXPIRY_BATCH as usize {
            return Ok(lifted);
        }
    }
}

impl Database {
    /// Bans in force whose time has come by `now`, oldest first, at most
    /// `limit` (the expiry job takes them in batches).
    pub async fn due_bans(&self, now: i64, limit: i64) -> Result<Vec<Ban>, DomainError> {
        let rows = sqlx::query_as(&format!(
            "SELECT {BAN_COLUMNS} FROM user_bans \
             WHERE lifted_at IS NULL AND expires_at <= $1 ORDER BY expires_at LIMIT $2"
        ))
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows)
    }

    /// A user's bans, newest first, at most `limit`.
    pub async fn ban_history(&self, user_id: i64, limit: i64) -> Result<Vec<Ban>, DomainError> {
        let rows = sqlx::query_as(&format!(
            "SELECT {BAN_COLUMNS} FROM user_bans WHERE user_id = $1 \
             ORDER BY created_at DESC, id DESC LIMIT $2"
        ))
        .bind(user_id)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_take_a_number_and_a_unit_or_permanent() {
        assert_eq!(BanLength::parse("permanent"), Some(BanLength::Permanent));
        assert_eq!(
            BanLength::parse("30m"),
            Some(BanLength::Millis(30 * 60_000))
        );
        assert_eq!(
            BanLength::parse("7d"),
            Some(BanLength::Millis(7 * DAY_MILLIS))
        );
        assert_eq!(
            BanLength::parse("2w"),
            Some(BanLength::Millis(14 * DAY_MILLIS))
        );
        assert_eq!(
            BanLength::parse("1y"),
            Some(BanLength::Millis(365 * DAY_MILLIS))
        );
        for bad in [
            "",
            "d",
            "0d",
            "7",
            "7x",
            "7 d",
            "-1d",
            "1.5d",
            "101y",
            "99999999999999999999d",
        ] {
            assert_eq!(BanLength::parse(bad), None, "{bad:?}");
        }
        assert_eq!(BanLength::Permanent.expires_at(5), None);
        assert_eq!(BanLength::Millis(10).expires_at(5), Some(15));
    }
}
