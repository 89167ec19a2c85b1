//! Two-factor sign-in (TOTP): a user's sealed secret, pending after a setup
//! until a first code turns it on; the time step of the last code
//! accepted, so a code works once; the one-time recovery codes, kept as
//! hashes; and sign-ins waiting for their second factor. Sealing secrets,
//! computing codes and hashing recovery codes are the caller's: this
//! module keeps what they produce, and every change runs in the caller's
//! unit of work ([`Database::write`]).

use sqlx::FromRow;

use crate::time::now_millis;
use crate::{Database, DomainError, Tx};

/// A user's TOTP secret as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TotpSecret {
    /// The secret as the caller sealed it.
    pub sealed: String,
    /// Whether it is on (`false`: set up, waiting for its first code).
    pub enabled: bool,
    /// The time step of the last code accepted.
    pub last_step: Option<i64>,
}

#[derive(FromRow)]
struct TotpRow {
    totp_secret: Option<String>,
    totp_enabled_at: Option<i64>,
    totp_last_step: Option<i64>,
}

/// A sign-in waiting for its second factor.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct SecondFactorChallenge {
    pub user_id: i64,
    /// Where the browser goes once signed in.
    pub callback_url: String,
    pub expires_at: i64,
}

impl Database {
    /// The TOTP secret of `user_id`, pending or on; `None` without one.
    pub async fn totp_secret(&self, user_id: i64) -> Result<Option<TotpSecret>, DomainError> {
        let row: Option<TotpRow> = sqlx::query_as(
            "SELECT totp_secret, totp_enabled_at, totp_last_step FROM users WHERE id = $1",
        )
        .bind(user_id)
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        let row = row.ok_or(DomainError::NotFound("user"))?;
        Ok(row.totp_secret.map(|sealed| TotpSecret {
            sealed,
            enabled: row.totp_enabled_at.is_some(),
            last_step: row.totp_last_step,
        }))
    }

    /// The unexpired sign-in waiting for its second factor under
    /// `token_hash`.
    pub async fn second_factor_challenge(
        &self,
        token_hash: &str,
    ) -> Result<Option<SecondFactorChallenge>, DomainError> {
        let challenge: Option<SecondFactorChallenge> = sqlx::query_as(
            "SELECT user_id, callback_url, expires_at FROM second_factor_challenges \
             WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now_millis())
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        Ok(challenge)
    }
}

/// Keeps `sealed` as the pending secret of `user_id`, replacing a pending
/// one; a user whose TOTP is on is a [`DomainError::Conflict`] (it is
/// turned off first).
pub async fn set_pending_secret(
    tx: &mut Tx<'_>,
    user_id: i64,
    sealed: &str,
) -> Result<(), DomainError> {
    let updated = sqlx::query(
        "UPDATE users SET totp_secret = $1, totp_last_step = NULL \
         WHERE id = $2 AND totp_enabled_at IS NULL",
    )
    .bind(sealed)
    .bind(user_id)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    if updated == 0 {
        return Err(DomainError::Conflict(
            "two-factor sign-in is already on; turn it off first".to_owned(),
        ));
    }
    Ok(())
}

/// Turns TOTP on with the pending secret `sealed` (the one whose code was
/// checked), accepting the code of `step`, and keeps `recovery_code_hashes`
/// as the user's recovery codes in place of any earlier ones. A secret
/// replaced by another setup in the meantime, or TOTP already on, is a
/// [`DomainError::Conflict`].
pub async fn enable(
    tx: &mut Tx<'_>,
    user_id: i64,
    sealed: &str,
    step: i64,
    recovery_code_hashes: &[String],
) -> Result<(), DomainError> {
    let updated = sqlx::query(
        "UPDATE users SET totp_enabled_at = $1, totp_last_step = $2 \
         WHERE id = $3 AND totp_enabled_at IS NULL AND totp_secret = $4",
    )
    .bind(now_millis())
    .bind(step)
    .bind(user_id)
    .bind(sealed)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    if updated == 0 {
        return Err(DomainError::Conflict(
            "the setup changed or two-factor sign-in is already on; set it up again".to_owned(),
        ));
    }
    sqlx::query("DELETE FROM totp_recovery_codes WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    for code_hash in recovery_code_hashes {
        sqlx::query("INSERT INTO totp_recovery_codes (user_id, code_hash) VALUES ($1, $2)")
            .bind(user_id)
            .bind(code_hash)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// Accepts the code of time step `step` for `user_id` when TOTP is on and
/// no code of that step or a later one was accepted before; one statement
/// checks and records, so two requests with the same code cannot both
/// pass. Answers whether it was accepted.
pub async fn accept_step(tx: &mut Tx<'_>, user_id: i64, step: i64) -> Result<bool, DomainError> {
    let updated = sqlx::query(
        "UPDATE users SET totp_last_step = $1 WHERE id = $2 AND totp_enabled_at IS NOT NULL \
         AND (totp_last_step IS NULL OR totp_last_step < $1)",
    )
    .bind(step)
    .bind(user_id)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(updated == 1)
}

/// Uses the unused recovery code hashed `code_hash` of `user_id` (whose
/// TOTP is on); answers whether there was one. Each works once.
pub async fn use_recovery_code(
    tx: &mut Tx<'_>,
    user_id: i64,
    code_hash: &str,
) -> Result<bool, DomainError> {
    let updated = sqlx::query(
        "UPDATE totp_recovery_codes SET used_at = $1 \
         WHERE user_id = $2 AND code_hash = $3 AND used_at IS NULL \
         AND EXISTS (SELECT 1 FROM users WHERE id = $2 AND totp_enabled_at IS NOT NULL)",
    )
    .bind(now_millis())
    .bind(user_id)
    .bind(code_hash)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(updated == 1)
}

/// Turns TOTP off for `user_id`: the secret (pending or on), the last step
/// and the recovery codes go. Answers whether it was on.
pub async fn disable(tx: &mut Tx<'_>, user_id: i64) -> Result<bool, DomainError> {
    let updated = sqlx::query(
        "UPDATE users SET totp_secret = NULL, totp_enabled_at = NULL, totp_last_step = NULL \
         WHERE id = $1 AND totp_enabled_at IS NOT NULL",
    )
    .bind(user_id)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    sqlx::query("DELETE FROM totp_recovery_codes WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    sqlx::query("DELETE FROM second_factor_challenges WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    Ok(updated == 1)
}

/// Keeps a sign-in waiting for its second factor under `token_hash`, and
/// clears expired ones.
pub async fn start_challenge(
    tx: &mut Tx<'_>,
    token_hash: &str,
    challenge: &SecondFactorChallenge,
) -> Result<(), DomainError> {
    sqlx::query(
        "INSERT INTO second_factor_challenges (token_hash, user_id, callback_url, expires_at) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(token_hash)
    .bind(challenge.user_id)
    .bind(&challenge.callback_url)
    .bind(challenge.expires_at)
    .execute(&mut **tx)
    .await?;
    sqlx::query("DELETE FROM second_factor_challenges WHERE expires_at <= $1")
        .bind(now_millis())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Ends the sign-in waiting under `token_hash` (it succeeded); answers
/// whether it was still there, so one challenge starts one session.
pub async fn end_challenge(tx: &mut Tx<'_>, token_hash: &str) -> Result<bool, DomainError> {
    let deleted = sqlx::query("DELETE FROM second_factor_challenges WHERE token_hash = $1")
        .bind(token_hash)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    Ok(deleted == 1)
}
