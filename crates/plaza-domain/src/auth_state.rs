//! Short-lived security state shared by every instance: OAuth sign-in
//! attempts in flight, revoked admin tokens and sign-in failure counts.
//! Every change runs in the caller's unit of work
//! ([`Database::write`](crate::Database::write)).

use sqlx::FromRow;

use crate::time::now_millis;
use crate::{DomainError, Tx};

/// An OAuth authorization started by this service, waiting for its callback.
#[derive(Debug, Clone, FromRow)]
pub struct PendingOAuth {
    pub provider: String,
    pub pkce_verifier: String,
    pub callback_url: String,
    pub expires_at: i64,
    /// Hash of the cookie given to the browser that started the sign-in:
    /// only that browser may finish it (login CSRF).
    pub browser_hash: String,
    /// The signed-in user who started it to link a provider to their account.
    pub link_user_id: Option<i64>,
    /// The nonce an OpenID Connect sign-in sent the provider, which its ID
    /// token must carry back; `None` for plain OAuth.
    pub nonce: Option<String>,
}

/// Keeps an OAuth sign-in this service started until its callback, and
/// clears abandoned ones.
pub async fn save_oauth_state(
    tx: &mut Tx<'_>,
    state_hash: &str,
    pending: &PendingOAuth,
) -> Result<(), DomainError> {
    sqlx::query(
        "INSERT INTO oauth_states \
         (state_hash, provider, pkce_verifier, callback_url, expires_at, browser_hash, link_user_id, nonce) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(state_hash)
    .bind(pending.provider.clone())
    .bind(pending.pkce_verifier.clone())
    .bind(pending.callback_url.clone())
    .bind(pending.expires_at)
    .bind(pending.browser_hash.clone())
    .bind(pending.link_user_id)
    .bind(pending.nonce.clone())
    .execute(&mut **tx)
    .await?;
    // Abandoned attempts are cleared as new ones start.
    sqlx::query("DELETE FROM oauth_states WHERE expires_at <= $1")
        .bind(now_millis())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Removes and returns the pending sign-in for this state, so a state
/// works once; expired ones are not returned.
pub async fn take_oauth_state(
    tx: &mut Tx<'_>,
    state_hash: &str,
) -> Result<Option<PendingOAuth>, DomainError> {
    let pending: Option<PendingOAuth> = sqlx::query_as(
        "DELETE FROM oauth_states WHERE state_hash = $1 \
         RETURNING provider, pkce_verifier, callback_url, expires_at, browser_hash, link_user_id, nonce",
    )
    .bind(state_hash)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(pending.filter(|pending| pending.expires_at > now_millis()))
}

/// Revokes an admin token by its `jti` until it would have expired anyway.
pub async fn revoke_token(
    tx: &mut Tx<'_>,
    jti: &str,
    expires_at_millis: i64,
) -> Result<(), DomainError> {
    sqlx::query(
        "INSERT INTO revoked_tokens (jti, revoked_at, expires_at) VALUES ($1, $2, $3) \
         ON CONFLICT (jti) DO NOTHING",
    )
    .bind(jti)
    .bind(now_millis())
    .bind(expires_at_millis)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Most sign-in log entries one purge removes.
pub const SIGN_IN_PURGE_CHUNK: i64 = 10_000;

/// Deletes what can no longer matter: expired sessions, abandoned OAuth
/// attempts and second-factor challenges, revocations of tokens past their
/// expiry, expired mailed tokens and failure counts older than
/// `failure_window_millis`. Returns
/// the rows removed.
pub async fn purge_expired_security_state(
    tx: &mut Tx<'_>,
    failure_window_millis: i64,
    sign_in_retention_millis: i64,
) -> Result<u64, DomainError> {
    let now = now_millis();
    let mut removed = 0;
    // The sign-in log in chunks, oldest first: a purge after a long pause
    // stays a short transaction, and the next run takes the rest.
    removed += sqlx::query(
        "DELETE FROM sign_ins WHERE id IN \
         (SELECT id FROM sign_ins WHERE created_at < $1 ORDER BY created_at LIMIT $2)",
    )
    .bind(now.saturating_sub(sign_in_retention_millis))
    .bind(SIGN_IN_PURGE_CHUNK)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    for (statement, cutoff) in [
        ("DELETE FROM sessions WHERE expires_at <= $1", now),
        ("DELETE FROM oauth_states WHERE expires_at <= $1", now),
        (
            "DELETE FROM second_factor_challenges WHERE expires_at <= $1",
            now,
        ),
        ("DELETE FROM revoked_tokens WHERE expires_at <= $1", now),
        ("DELETE FROM email_tokens WHERE expires_at <= $1", now),
        (
            "DELETE FROM login_failures WHERE window_started_at <= $1",
            now - failure_window_millis,
        ),
    ] {
        removed += sqlx::query(statement)
            .bind(cutoff)
            .execute(&mut **tx)
            .await?
            .rows_affected();
    }
    Ok(removed)
}

/// Reserves one sign-in attempt under `key` before the password is
/// checked, and returns the attempts counted in the current window
/// (this one included). One statement increments and answers, so
/// concurrent guesses each see a distinct count: a burst cannot all pass
/// a check made before any of them is counted.
pub async fn reserve_sign_in_attempt(
    tx: &mut Tx<'_>,
    key: &str,
    window_millis: i64,
) -> Result<i64, DomainError> {
    let now = now_millis();
    let (attempts,): (i64,) = sqlx::query_as(
        "INSERT INTO login_failures (throttle_key, failures, window_started_at) VALUES ($1, 1, $2) \
         ON CONFLICT (throttle_key) DO UPDATE SET \
           failures = CASE WHEN login_failures.window_started_at <= $3 THEN 1 \
                           ELSE login_failures.failures + 1 END, \
           window_started_at = CASE WHEN login_failures.window_started_at <= $3 THEN $2 \
                                    ELSE login_failures.window_started_at END \
         RETURNING failures",
    )
    .bind(key)
    .bind(now)
    .bind(now - window_millis)
    .fetch_one(&mut **tx)
    .await?;
    Ok(attempts)
}

/// Gives back an attempt reserved under `key` that turned out to be a
/// successful sign-in, so shared addresses are not locked out by people
/// who know their passwords.
pub async fn release_sign_in_attempt(tx: &mut Tx<'_>, key: &str) -> Result<(), DomainError> {
    sqlx::query(
        "UPDATE login_failures SET failures = failures - 1 \
         WHERE throttle_key = $1 AND failures > 0",
    )
    .bind(key)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Forgets the attempts counted under `key` (a successful sign-in).
pub async fn clear_sign_in_failures(tx: &mut Tx<'_>, key: &str) -> Result<(), DomainError> {
    sqlx::query("DELETE FROM login_failures WHERE throttle_key = $1")
        .bind(key)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
