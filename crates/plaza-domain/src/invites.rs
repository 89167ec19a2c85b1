//! Invites (DECISIONS.md "The front door"): a code good for a number of
//! sign-ups until it expires, made by an administrator, or by a member when
//! members may invite. Withdrawing one deletes it, so its code is unknown
//! afterwards. A member holds at most [`MAX_LIVE_INVITES`] invites still
//! usable, so the list of one's invites is bounded.

use sqlx::FromRow;

use crate::time::now_millis;
use crate::{Database, DomainError, Tx};

/// Most uses of one invite.
pub const MAX_USES: i64 = 100;
/// The longest an invite lasts, in milliseconds (30 days).
pub const MAX_LIFETIME_MILLIS: i64 = 30 * DAY_MILLIS;
/// How long an invite lasts unless asked otherwise (7 days).
pub const DEFAULT_LIFETIME_MILLIS: i64 = 7 * DAY_MILLIS;
/// Most invites one user holds that are neither expired nor used up.
pub const MAX_LIVE_INVITES: i64 = 100;
/// How old a member's account must be before they invite (7 days).
pub const MEMBER_AGE_MILLIS: i64 = 7 * DAY_MILLIS;

const DAY_MILLIS: i64 = 24 * 60 * 60 * 1000;

/// A stored invite.
#[derive(Debug, Clone, FromRow)]
pub struct Invite {
    pub id: i64,
    pub code: String,
    pub created_by: i64,
    pub max_uses: i64,
    pub uses: i64,
    pub expires_at: i64,
    pub created_at: i64,
}

const INVITE_COLUMNS: &str = "id, code, created_by, max_uses, uses, expires_at, created_at";

/// What creating an invite needs: the code is made by the caller (random).
#[derive(Debug, Clone)]
pub struct NewInvite {
    pub code: String,
    pub created_by: i64,
    pub max_uses: i64,
    pub expires_at: i64,
}

/// Stores a new invite. A user holding [`MAX_LIVE_INVITES`] usable ones
/// already is refused ([`DomainError::Conflict`]).
pub async fn create(tx: &mut Tx<'_>, new: NewInvite) -> Result<Invite, DomainError> {
    let now = now_millis();
    let (live,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM invites WHERE created_by = $1 AND expires_at > $2 AND uses < max_uses",
    )
    .bind(new.created_by)
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    if live >= MAX_LIVE_INVITES {
        return Err(DomainError::Conflict(format!(
            "you hold {MAX_LIVE_INVITES} usable invites already; withdraw one first"
        )));
    }
    let invite = sqlx::query_as(&format!(
        "INSERT INTO invites (code, created_by, max_uses, uses, expires_at, created_at) \
         VALUES ($1, $2, $3, 0, $4, $5) RETURNING {INVITE_COLUMNS}"
    ))
    .bind(&new.code)
    .bind(new.created_by)
    .bind(new.max_uses)
    .bind(new.expires_at)
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    Ok(invite)
}

/// Uses the invite `code` once for a sign-up: answers who made it, or
/// `None` when the code is unknown, expired or used up.
pub async fn redeem(tx: &mut Tx<'_>, code: &str) -> Result<Option<i64>, DomainError> {
    let used: Option<(i64,)> = sqlx::query_as(
        "UPDATE invites SET uses = uses + 1 \
         WHERE code = $1 AND uses < max_uses AND expires_at > $2 RETURNING created_by",
    )
    .bind(code)
    .bind(now_millis())
    .fetch_optional(&mut **tx)
    .await?;
    Ok(used.map(|(created_by,)| created_by))
}

/// Withdraws `created_by`'s invite `code`; [`DomainError::NotFound`] when
/// they hold no such invite.
pub async fn withdraw(tx: &mut Tx<'_>, created_by: i64, code: &str) -> Result<Invite, DomainError> {
    let deleted: Option<Invite> = sqlx::query_as(&format!(
        "DELETE FROM invites WHERE code = $1 AND created_by = $2 RETURNING {INVITE_COLUMNS}"
    ))
    .bind(code)
    .bind(created_by)
    .fetch_optional(&mut **tx)
    .await?;
    deleted.ok_or(DomainError::NotFound("invite"))
}

impl Database {
    /// `created_by`'s invites, newest first: at most the
    /// [`MAX_LIVE_INVITES`] usable ones and as many of the others.
    pub async fn invites_of(&self, created_by: i64) -> Result<Vec<Invite>, DomainError> {
        let invites = sqlx::query_as(&format!(
            "SELECT {INVITE_COLUMNS} FROM invites WHERE created_by = $1 \
             ORDER BY created_at DESC, id DESC LIMIT $2"
        ))
        .bind(created_by)
        .bind(MAX_LIVE_INVITES * 2)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(invites)
    }
}

/// Reads a lifetime such as `7d`, `12h` or `30m` (a whole number and a
/// unit: `d`, `h` or `m`) in milliseconds; `None` for anything else, or a
/// lifetime of zero or over 30 days.
pub fn parse_lifetime(text: &str) -> Option<i64> {
    let text = text.trim();
    let unit = text.chars().last()?;
    let number: i64 = text[..text.len() - unit.len_utf8()].parse().ok()?;
    let unit_millis = match unit {
        'd' => DAY_MILLIS,
        'h' => 60 * 60 * 1000,
        'm' => 60 * 1000,
        _ => return None,
    };
    let millis = number.checked_mul(unit_millis)?;
    (millis > 0 && millis <= MAX_LIFETIME_MILLIS).then_some(millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_are_a_number_and_a_unit_up_to_thirty_days() {
        assert_eq!(parse_lifetime("7d"), Some(DEFAULT_LIFETIME_MILLIS));
        assert_eq!(parse_lifetime("30d"), Some(MAX_LIFETIME_MILLIS));
        assert_eq!(parse_lifetime("12h"), Some(12 * 60 * 60 * 1000));
        assert_eq!(parse_lifetime("90m"), Some(90 * 60 * 1000));
        for bad in ["", "d", "0d", "31d", "-1d", "7", "7w", "1.5d", "7 d", "é"] {
            assert_eq!(parse_lifetime(bad), None, "{bad}");
        }
    }
}
