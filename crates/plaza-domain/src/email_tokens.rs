//! One-time tokens mailed to a user: email verification and password reset.
//! Only a hash of each token is stored (the caller hashes it), a token is
//! deleted by the statement that uses it, so it works once, and an expired
//! token is worth as much as an unknown one. Every change runs in the
//! caller's unit of work.

use crate::{Database, DomainError, Tx};

/// What a token proves when it comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenPurpose {
    VerifyEmail,
    ResetPassword,
}

impl TokenPurpose {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenPurpose::VerifyEmail => "verify_email",
            TokenPurpose::ResetPassword => "reset_password",
        }
    }
}

/// A token to store, by its hash.
#[derive(Debug, Clone)]
pub struct NewEmailToken {
    pub token_hash: String,
    pub purpose: TokenPurpose,
    pub user_id: i64,
    /// The address the token is mailed to.
    pub email: String,
    pub created_at: i64,
    pub expires_at: i64,
}

/// Stores a token.
pub async fn issue(tx: &mut Tx<'_>, token: &NewEmailToken) -> Result<(), DomainError> {
    sqlx::query(
        "INSERT INTO email_tokens (token_hash, purpose, user_id, email, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(token.token_hash.clone())
    .bind(token.purpose.as_str())
    .bind(token.user_id)
    .bind(token.email.clone())
    .bind(token.created_at)
    .bind(token.expires_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A token that was used: whose it was and the address it was mailed to.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RedeemedToken {
    pub user_id: i64,
    pub email: String,
}

impl Database {
    /// Whose unexpired token for `purpose` this is, without using it.
    pub async fn email_token(
        &self,
        purpose: TokenPurpose,
        token_hash: &str,
        now: i64,
    ) -> Result<Option<RedeemedToken>, DomainError> {
        Ok(sqlx::query_as(
            "SELECT user_id, email FROM email_tokens \
             WHERE token_hash = $1 AND purpose = $2 AND expires_at > $3",
        )
        .bind(token_hash)
        .bind(purpose.as_str())
        .bind(now)
        .fetch_optional(&mut *self.lease().await?)
        .await?)
    }
}

/// Uses the token with this hash for `purpose`: deletes it and answers
/// whose it was, or `None` when there is no such token or it expired
/// before `now` (an expired one is deleted all the same).
pub async fn redeem(
    tx: &mut Tx<'_>,
    purpose: TokenPurpose,
    token_hash: &str,
    now: i64,
) -> Result<Option<RedeemedToken>, DomainError> {
    let redeemed: Option<(i64, String, i64)> = sqlx::query_as(
        "DELETE FROM email_tokens WHERE token_hash = $1 AND purpose = $2 \
         RETURNING user_id, email, expires_at",
    )
    .bind(token_hash)
    .bind(purpose.as_str())
    .fetch_optional(&mut **tx)
    .await?;
    Ok(redeemed
        .filter(|(_, _, expires_at)| *expires_at > now)
        .map(|(user_id, email, _)| RedeemedToken { user_id, email }))
}

/// Deletes every token of `user_id` for `purpose` (the other reset links
/// once the password was reset).
pub async fn revoke_all(
    tx: &mut Tx<'_>,
    user_id: i64,
    purpose: TokenPurpose,
) -> Result<u64, DomainError> {
    Ok(
        sqlx::query("DELETE FROM email_tokens WHERE user_id = $1 AND purpose = $2")
            .bind(user_id)
            .bind(purpose.as_str())
            .execute(&mut **tx)
            .await?
            .rows_affected(),
    )
}
