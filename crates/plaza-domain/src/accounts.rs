//! Identity-provider accounts linked to users.

use sqlx::FromRow;

use crate::time::now_millis;
use crate::{Database, DomainError, Flag, Tx};

/// One linked provider account.
#[derive(Debug, Clone, FromRow)]
pub struct LinkedAccount {
    pub id: i64,
    pub user_id: i64,
    pub provider: String,
    pub provider_account_id: String,
    pub email: Option<String>,
    pub email_verified: Flag,
    pub last_used_at: Option<i64>,
    pub created_at: i64,
}

/// What a provider told us about the person signing in.
#[derive(Debug, Clone)]
pub struct ProviderIdentity {
    pub provider: String,
    pub provider_account_id: String,
    pub email: Option<String>,
    pub email_verified: bool,
    pub name: Option<String>,
    pub image: Option<String>,
}

const ACCOUNT_COLUMNS: &str =
    "id, user_id, provider, provider_account_id, email, email_verified, last_used_at, created_at";

/// Why an account cannot be unlinked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnlinkOutcome {
    Unlinked,
    NotLinked,
    /// It is the user's last way to sign in.
    LastSignInMethod,
}

impl Database {
    pub async fn account_by_provider(
        &self,
        provider: &str,
        provider_account_id: &str,
    ) -> Result<Option<LinkedAccount>, DomainError> {
        Ok(sqlx::query_as(&format!(
            "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE provider = $1 AND provider_account_id = $2"
        ))
        .bind(provider)
        .bind(provider_account_id)
        .fetch_optional(&mut *self.lease().await?)
        .await?)
    }

    pub async fn accounts_of_user(&self, user_id: i64) -> Result<Vec<LinkedAccount>, DomainError> {
        Ok(sqlx::query_as(&format!(
            "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE user_id = $1 ORDER BY created_at, id"
        ))
        .bind(user_id)
        .fetch_all(&mut *self.lease().await?)
        .await?)
    }
}

pub async fn link(
    tx: &mut Tx<'_>,
    user_id: i64,
    identity: &ProviderIdentity,
) -> Result<(), DomainError> {
    let now = now_millis();
    sqlx::query(
        "INSERT INTO accounts (user_id, provider, provider_account_id, email, email_verified, last_used_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
    )
    .bind(user_id)
    .bind(identity.provider.clone())
    .bind(identity.provider_account_id.clone())
    .bind(identity.email.clone())
    .bind(identity.email_verified)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Records a sign-in through a linked account, refreshing what the
/// provider says about its email.
pub async fn touch(
    tx: &mut Tx<'_>,
    account_id: i64,
    identity: &ProviderIdentity,
) -> Result<(), DomainError> {
    sqlx::query(
        "UPDATE accounts SET last_used_at = $1, email = $2, email_verified = $3 WHERE id = $4",
    )
    .bind(now_millis())
    .bind(identity.email.clone())
    .bind(identity.email_verified)
    .bind(account_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Unlinks `provider` from the user unless it is their last way in (no
/// password and no other linked account). Checked and deleted in the same
/// transaction so two concurrent unlinks cannot both pass the check.
pub async fn unlink(
    tx: &mut Tx<'_>,
    user_id: i64,
    provider: &str,
) -> Result<UnlinkOutcome, DomainError> {
    // Lock the user's row (PostgreSQL) / the database (SQLite) first.
    sqlx::query("UPDATE users SET updated_at = updated_at WHERE id = $1")
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    let (has_password, linked, this_one): (Flag, i64, i64) = sqlx::query_as(
        "SELECT (SELECT password_hash IS NOT NULL FROM users WHERE id = $1), \
         (SELECT COUNT(*) FROM accounts WHERE user_id = $1), \
         (SELECT COUNT(*) FROM accounts WHERE user_id = $1 AND provider = $2)",
    )
    .bind(user_id)
    .bind(provider)
    .fetch_one(&mut **tx)
    .await?;
    if this_one == 0 {
        return Ok(UnlinkOutcome::NotLinked);
    }
    if !has_password.0 && linked - this_one == 0 {
        return Ok(UnlinkOutcome::LastSignInMethod);
    }
    sqlx::query("DELETE FROM accounts WHERE user_id = $1 AND provider = $2")
        .bind(user_id)
        .bind(provider)
        .execute(&mut **tx)
        .await?;
    Ok(UnlinkOutcome::Unlinked)
}
