//! Personal access tokens: a member's (or a bot's) credential for programs,
//! sent as `Authorization: Bearer plz_…` (DECISIONS.md "Tokens for members
//! and bots, and webhooks (round 5)"). Only the SHA-256 of a token is
//! kept; revoking or ending one deletes its row, so a token is in force
//! exactly while its row exists and has not expired. A user holds at most
//! [`MAX_PER_USER`] tokens in force. What a token may do is its scopes,
//! checked against the operation by [`crate::policy::token_allows`].

use sqlx::FromRow;

use crate::admin_principal::{Capabilities, capabilities_sql};
use crate::dialect::Dialect;
use crate::notifications;
use crate::policy::TokenScope;
use crate::sessions::SessionUser;
use crate::users::{USER_COLUMNS, User, UserRow};
use crate::{Database, DomainError, Tx};

/// Tokens in force one user may hold.
pub const MAX_PER_USER: i64 = 50;

/// How long a token waits before its `last_used_at` is written again.
pub const LAST_USED_PRECISION_MILLIS: i64 = 60_000;

/// A token as its owner lists it (never its secret).
#[derive(Debug, Clone)]
pub struct AccessToken {
    pub id: i64,
    pub user_id: i64,
    pub name: String,
    pub scopes: Vec<TokenScope>,
    pub created_at: i64,
    pub expires_at: i64,
    pub last_used_at: Option<i64>,
}

#[derive(FromRow)]
struct AccessTokenRow {
    id: i64,
    user_id: i64,
    name: String,
    scopes: String,
    created_at: i64,
    expires_at: i64,
    last_used_at: Option<i64>,
}

impl From<AccessTokenRow> for AccessToken {
    fn from(row: AccessTokenRow) -> Self {
        AccessToken {
            id: row.id,
            user_id: row.user_id,
            name: row.name,
            scopes: parse_scopes(&row.scopes),
            created_at: row.created_at,
            expires_at: row.expires_at,
            last_used_at: row.last_used_at,
        }
    }
}

/// The stored form of `scopes`: their names joined by spaces.
fn stored_scopes(scopes: &[TokenScope]) -> String {
    scopes
        .iter()
        .map(|scope| scope.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The scopes of a stored list; a name this build does not know grants
/// nothing.
fn parse_scopes(stored: &str) -> Vec<TokenScope> {
    stored
        .split_whitespace()
        .filter_map(TokenScope::parse)
        .collect()
}

const TOKEN_COLUMNS: &str = "id, user_id, name, scopes, created_at, expires_at, last_used_at";

/// A token to store.
#[derive(Debug, Clone)]
pub struct NewAccessToken {
    pub user_id: i64,
    pub name: String,
    /// The SHA-256 of the secret, as `secrets::hash_token` writes it.
    pub token_hash: String,
    pub scopes: Vec<TokenScope>,
    pub expires_at: i64,
}

/// Stores `token` in `tx` at `now`, unless its user already holds
/// [`MAX_PER_USER`] tokens in force (a [`DomainError::Conflict`]). The
/// user's row is locked first, so concurrent creations count one after
/// another; the user's expired tokens are deleted on the way.
pub async fn create(
    tx: &mut Tx<'_>,
    token: &NewAccessToken,
    now: i64,
) -> Result<AccessToken, DomainError> {
    let lock = format!(
        "SELECT id FROM users WHERE id = $1{}",
        Dialect::of(tx).for_update()
    );
    sqlx::query(&lock)
        .bind(token.user_id)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(DomainError::NotFound("user"))?;
    sqlx::query("DELETE FROM access_tokens WHERE user_id = $1 AND expires_at <= $2")
        .bind(token.user_id)
        .bind(now)
        .execute(&mut **tx)
        .await?;
    let (held,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM access_tokens WHERE user_id = $1")
        .bind(token.user_id)
        .fetch_one(&mut **tx)
        .await?;
    if held >= MAX_PER_USER {
        return Err(DomainError::Conflict(format!(
            "a user holds at most {MAX_PER_USER} tokens; revoke one first"
        )));
    }
    let row: AccessTokenRow = sqlx::query_as(&format!(
        "INSERT INTO access_tokens (user_id, name, token_hash, scopes, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING {TOKEN_COLUMNS}"
    ))
    .bind(token.user_id)
    .bind(token.name.clone())
    .bind(token.token_hash.clone())
    .bind(stored_scopes(&token.scopes))
    .bind(now)
    .bind(token.expires_at)
    .fetch_one(&mut **tx)
    .await?;
    Ok(row.into())
}

/// Revokes the token `id` of `user_id`; someone else's token, or none, is
/// [`DomainError::NotFound`].
pub async fn revoke(tx: &mut Tx<'_>, user_id: i64, id: i64) -> Result<(), DomainError> {
    let deleted = sqlx::query("DELETE FROM access_tokens WHERE id = $1 AND user_id = $2")
        .bind(id)
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    if deleted.rows_affected() == 0 {
        return Err(DomainError::NotFound("token"));
    }
    Ok(())
}

/// Ends every token of `user_id`: a ban, a password change or reset, a
/// deactivation.
pub async fn end_all(tx: &mut Tx<'_>, user_id: i64) -> Result<(), DomainError> {
    sqlx::query("DELETE FROM access_tokens WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// A token in force and the user it acts as.
#[derive(Debug, Clone)]
pub struct TokenUser {
    pub token_id: i64,
    pub scopes: Vec<TokenScope>,
    /// The user as a session would carry them (no session: `session_id`
    /// is 0, and the times are the token's).
    pub user: SessionUser,
}

#[derive(FromRow)]
struct TokenUserRow {
    token_id: i64,
    token_scopes: String,
    token_created_at: i64,
    token_expires_at: i64,
    token_last_used_at: Option<i64>,
    token_capabilities: Option<String>,
    token_relations_version: i64,
    token_unread_notifications: i64,
    #[sqlx(flatten)]
    user: UserRow,
}

impl Database {
    /// The token with this hash, when in force at `now`, and its user;
    /// its `last_used_at` is written when unset or older than
    /// [`LAST_USED_PRECISION_MILLIS`] (a read that touches, like a
    /// session's sliding expiry).
    pub async fn token_user(
        &self,
        token_hash: &str,
        now: i64,
    ) -> Result<Option<TokenUser>, DomainError> {
        let columns = USER_COLUMNS
            .split(", ")
            .map(|column| format!("u.{column}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT t.id AS token_id, t.scopes AS token_scopes, t.created_at AS token_created_at, \
             t.expires_at AS token_expires_at, t.last_used_at AS token_last_used_at, \
             {capabilities} AS token_capabilities, u.relations_version AS token_relations_version, \
             {unread} AS token_unread_notifications, {columns} FROM access_tokens t JOIN users u ON u.id = t.user_id \
             WHERE t.token_hash = $1 AND t.expires_at > $2",
            capabilities = capabilities_sql(self.dialect(), "u"),
            unread = notifications::UNREAD_OF_USER_SQL,
        );
        let mut lease = self.lease().await?;
        let row: Option<TokenUserRow> = sqlx::query_as(&sql)
            .bind(token_hash)
            .bind(now)
            .fetch_optional(&mut *lease)
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        if row
            .token_last_used_at
            .is_none_or(|used| now - used >= LAST_USED_PRECISION_MILLIS)
        {
            sqlx::query(
                "UPDATE access_tokens SET last_used_at = $1 WHERE id = $2 \
                 AND (last_used_at IS NULL OR last_used_at <= $3)",
            )
            .bind(now)
            .bind(row.token_id)
            .bind(now - LAST_USED_PRECISION_MILLIS)
            .execute(&mut *lease)
            .await?;
        }
        Ok(Some(TokenUser {
            token_id: row.token_id,
            scopes: parse_scopes(&row.token_scopes),
            user: SessionUser {
                session_id: 0,
                expires_at: row.token_expires_at,
                created_at: row.token_created_at,
                second_factor_at: None,
                user: User::try_from(row.user)?,
                capabilities: Capabilities::from_names(row.token_capabilities),
                relations_version: row.token_relations_version,
                unread_notifications: notifications::unread_count(row.token_unread_notifications),
            },
        }))
    }

    /// The tokens of `user_id` in force at `now`, newest first.
    pub async fn access_tokens_of(
        &self,
        user_id: i64,
        now: i64,
    ) -> Result<Vec<AccessToken>, DomainError> {
        let rows: Vec<AccessTokenRow> = sqlx::query_as(&format!(
            "SELECT {TOKEN_COLUMNS} FROM access_tokens WHERE user_id = $1 AND expires_at > $2 \
             ORDER BY id DESC"
        ))
        .bind(user_id)
        .bind(now)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows.into_iter().map(AccessToken::from).collect())
    }
}
