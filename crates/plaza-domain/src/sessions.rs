//! Sign-in sessions. Only a hash of each session token is stored, so a copy
//! of the database does not let anyone sign in.

use std::sync::LazyLock;

use sqlx::FromRow;

use crate::admin_principal::{Capabilities, capabilities_sql};
use crate::dialect::Dialect;
use crate::time::now_millis;
use crate::users::{USER_COLUMNS, User, UserRow};
use crate::{Backend, Database, DomainError, Tx};

/// A live session and its user.
#[derive(Debug, Clone)]
pub struct SessionUser {
    pub session_id: i64,
    pub expires_at: i64,
    pub user: User,
    pub capabilities: Capabilities,
}

#[derive(FromRow)]
struct SessionUserRow {
    session_id: i64,
    session_expires_at: i64,
    session_last_seen_at: i64,
    session_created_at: i64,
    session_capabilities: Option<String>,
    #[sqlx(flatten)]
    user: UserRow,
}

/// The statement that resolves a session, written once per engine (it
/// runs on nearly every request).
fn session_user_sql(dialect: Dialect) -> &'static str {
    fn build(dialect: Dialect) -> String {
        let columns = USER_COLUMNS
            .split(", ")
            .map(|column| format!("u.{column}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "SELECT s.id AS session_id, s.expires_at AS session_expires_at, \
             s.last_seen_at AS session_last_seen_at, s.created_at AS session_created_at, \
             {capabilities} AS session_capabilities, {columns} \
             FROM sessions s JOIN users u ON u.id = s.user_id \
             WHERE s.token_hash = $1 AND s.expires_at > $2 AND s.created_at > $3",
            capabilities = capabilities_sql(dialect, "u"),
        )
    }
    static SQLITE: LazyLock<String> = LazyLock::new(|| build(Dialect(Backend::Sqlite)));
    static POSTGRES: LazyLock<String> = LazyLock::new(|| build(Dialect(Backend::Postgres)));
    match dialect.0 {
        Backend::Sqlite => &SQLITE,
        Backend::Postgres => &POSTGRES,
    }
}

/// How long sessions live: they slide forward by `ttl_millis` while used
/// (written at most every `refresh_after_millis`), but never past
/// `max_lifetime_millis` after sign-in, so a stolen cookie that is kept
/// busy still dies.
#[derive(Debug, Clone, Copy)]
pub struct SessionLifetime {
    pub ttl_millis: i64,
    pub refresh_after_millis: i64,
    pub max_lifetime_millis: i64,
}

/// Request metadata kept with a session, for the user's device list.
#[derive(Debug, Clone, Default)]
pub struct SessionClient {
    pub user_agent: Option<String>,
    pub ip_address: Option<String>,
}

impl Database {
    /// The unexpired session with this token hash and its user (a read that
    /// may touch the session's expiry, outside any unit of work, like a
    /// cache refresh). Expiry slides:
    /// a session used after `refresh_after_millis` is extended to a full
    /// `ttl_millis` again (not on every request, to spare the database
    /// writes), up to its absolute end.
    pub async fn session_user(
        &self,
        token_hash: &str,
        lifetime: &SessionLifetime,
    ) -> Result<Option<SessionUser>, DomainError> {
        let now = now_millis();
        let row: Option<SessionUserRow> = sqlx::query_as(session_user_sql(self.dialect()))
            .bind(token_hash)
            .bind(now)
            .bind(now.saturating_sub(lifetime.max_lifetime_millis))
            .fetch_optional(&mut *self.lease().await?)
            .await?;
        let Some(row) = row else { return Ok(None) };
        let mut expires_at = row.session_expires_at;
        let absolute_end = row
            .session_created_at
            .saturating_add(lifetime.max_lifetime_millis);
        if now - row.session_last_seen_at >= lifetime.refresh_after_millis
            && expires_at < absolute_end
        {
            expires_at = now.saturating_add(lifetime.ttl_millis).min(absolute_end);
            sqlx::query("UPDATE sessions SET last_seen_at = $1, expires_at = $2 WHERE id = $3")
                .bind(now)
                .bind(expires_at)
                .bind(row.session_id)
                .execute(&mut *self.lease().await?)
                .await?;
        }
        Ok(Some(SessionUser {
            session_id: row.session_id,
            expires_at,
            user: User::try_from(row.user)?,
            capabilities: Capabilities::from_names(row.session_capabilities),
        }))
    }
}

/// Stores, in `tx`, a new session for `user_id` that expires after
/// `ttl_millis`.
pub async fn create(
    tx: &mut Tx<'_>,
    token_hash: &str,
    user_id: i64,
    ttl_millis: i64,
    client: &SessionClient,
) -> Result<i64, DomainError> {
    let now = now_millis();
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO sessions (token_hash, user_id, created_at, expires_at, last_seen_at, user_agent, ip_address) \
         VALUES ($1, $2, $3, $4, $3, $5, $6) RETURNING id",
    )
    .bind(token_hash)
    .bind(user_id)
    .bind(now)
    .bind(now + ttl_millis)
    .bind(client.user_agent.clone())
    .bind(client.ip_address.clone())
    .fetch_one(&mut **tx)
    .await?;
    sqlx::query(
        "INSERT INTO sign_ins (user_id, created_at, ip_address, user_agent) VALUES ($1, $2, $3, $4)",
    )
    .bind(user_id)
    .bind(now)
    .bind(client.ip_address.clone())
    .bind(client.user_agent.clone())
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

/// Ends one session (sign-out) in `tx`.
pub async fn delete(tx: &mut Tx<'_>, token_hash: &str) -> Result<(), DomainError> {
    sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
        .bind(token_hash)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
