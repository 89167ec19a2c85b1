//! Sign-in sessions. Only a hash of each session token is stored, so a copy
//! of the database does not let anyone sign in.

use std::collections::HashMap;
use std::sync::OnceLock;

use sqlx::FromRow;

use crate::admin_principal::{Capabilities, capabilities_sql};
use crate::dialect::Dialect;
use crate::notifications;
use crate::time::now_millis;
use crate::users::{Role, USER_COLUMNS, User, UserRow};
use crate::{Backend, Database, DomainError, Tx};

/// A live session and its user.
#[derive(Debug, Clone)]
pub struct SessionUser {
    pub session_id: i64,
    pub expires_at: i64,
    /// When the session was signed in.
    pub created_at: i64,
    /// When the session passed a second factor, if it did.
    pub second_factor_at: Option<i64>,
    pub user: User,
    pub capabilities: Capabilities,
    /// The user's `relations_version` (see [`crate::between`]): which
    /// copy of their blocks, mutes and filters is current.
    pub relations_version: i64,
    /// How many of the user's notifications were unread when the session
    /// was looked up (with the request it answers).
    pub unread_notifications: i64,
}

#[derive(FromRow)]
struct SessionUserRow {
    session_token_hash: String,
    session_id: i64,
    session_expires_at: i64,
    session_last_seen_at: i64,
    session_created_at: i64,
    session_second_factor_at: Option<i64>,
    session_capabilities: Option<String>,
    session_relations_version: i64,
    session_unread_notifications: i64,
    #[sqlx(flatten)]
    user: UserRow,
}

/// Token hashes one lookup statement takes at most.
pub const MAX_LOOKUP_BATCH: usize = 64;

/// The numbers of token hashes a lookup statement is written for: a batch
/// is padded up to the next one (repeating its last hash), so each engine
/// prepares four statements, not one per batch size.
const LOOKUP_SIZES: [usize; 4] = [1, 4, 16, MAX_LOOKUP_BATCH];

/// The statement that resolves up to `size` sessions (a size of
/// [`LOOKUP_SIZES`]), written once per engine and size (it runs on nearly
/// every request).
fn session_users_sql(dialect: Dialect, size_index: usize) -> &'static str {
    fn build(dialect: Dialect, size: usize) -> String {
        let columns = USER_COLUMNS
            .split(", ")
            .map(|column| format!("u.{column}"))
            .collect::<Vec<_>>()
            .join(", ");
        let hashes = (0..size)
            .map(|index| format!("${}", index + 3))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "SELECT s.token_hash AS session_token_hash, s.id AS session_id, \
             s.expires_at AS session_expires_at, \
             s.last_seen_at AS session_last_seen_at, s.created_at AS session_created_at, \
             s.second_factor_at AS session_second_factor_at, {capabilities} AS session_capabilities, \
             u.relations_version AS session_relations_version, \
             {unread} AS session_unread_notifications, {columns} \
             FROM sessions s JOIN users u ON u.id = s.user_id \
             WHERE s.token_hash IN ({hashes}) AND s.expires_at > $1 AND s.created_at > $2",
            capabilities = capabilities_sql(dialect, "u"),
            unread = notifications::UNREAD_OF_USER_SQL,
        )
    }
    static SQLITE: [OnceLock<String>; LOOKUP_SIZES.len()] =
        [const { OnceLock::new() }; LOOKUP_SIZES.len()];
    static POSTGRES: [OnceLock<String>; LOOKUP_SIZES.len()] =
        [const { OnceLock::new() }; LOOKUP_SIZES.len()];
    let built = match dialect.0 {
        Backend::Sqlite => &SQLITE[size_index],
        Backend::Postgres => &POSTGRES[size_index],
    };
    built.get_or_init(|| build(dialect, LOOKUP_SIZES[size_index]))
}

/// A session still in force, as [`Database::live_sessions`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveSession {
    pub session_id: i64,
    /// Its user's role now.
    pub role: Role,
}

/// The numbers of session ids a [`Database::live_sessions`] statement is
/// written for: a batch is padded up to the next one (repeating its last
/// id), so each engine prepares three statements whatever the count; the
/// largest is the most ids one statement takes.
const LIVE_SESSION_SIZES: [usize; 3] = [8, 64, 512];

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
        let mut found = self
            .session_users(&[token_hash.to_owned()], lifetime)
            .await?;
        Ok(found.pop().flatten())
    }

    /// [`Database::session_user`] for up to [`MAX_LOOKUP_BATCH`] token
    /// hashes in one statement, answered in their order: requests that
    /// arrive together share one round trip. Each answer is as fresh as a
    /// lookup of its own would be, since the statement runs after all of
    /// them were asked.
    pub async fn session_users(
        &self,
        token_hashes: &[String],
        lifetime: &SessionLifetime,
    ) -> Result<Vec<Option<SessionUser>>, DomainError> {
        let Some(last) = token_hashes.last() else {
            return Ok(Vec::new());
        };
        if token_hashes.len() > MAX_LOOKUP_BATCH {
            return Err(DomainError::Invalid {
                field: "token_hashes",
                reason: format!("at most {MAX_LOOKUP_BATCH} at once"),
            });
        }
        let size_index = LOOKUP_SIZES
            .iter()
            .position(|size| *size >= token_hashes.len())
            .unwrap_or(LOOKUP_SIZES.len() - 1);
        let now = now_millis();
        let mut query = sqlx::query_as(session_users_sql(self.dialect(), size_index))
            .bind(now)
            .bind(now.saturating_sub(lifetime.max_lifetime_millis));
        for index in 0..LOOKUP_SIZES[size_index] {
            query = query.bind(token_hashes.get(index).unwrap_or(last).as_str());
        }
        let rows: Vec<SessionUserRow> = query.fetch_all(&mut *self.lease().await?).await?;
        let mut found: HashMap<String, SessionUser> = HashMap::with_capacity(rows.len());
        for row in rows {
            let token_hash = row.session_token_hash.clone();
            found.insert(token_hash, self.refreshed(row, now, lifetime).await?);
        }
        Ok(token_hashes
            .iter()
            .map(|token_hash| found.get(token_hash).cloned())
            .collect())
    }

    /// Which of `session_ids` are still in force (unexpired, within their
    /// absolute lifetime, their user active), each with its user's role
    /// now: one statement per 512 ids. A read only: checking a session
    /// does not extend it.
    pub async fn live_sessions(
        &self,
        session_ids: &[i64],
        lifetime: &SessionLifetime,
    ) -> Result<Vec<LiveSession>, DomainError> {
        let now = now_millis();
        let oldest = now.saturating_sub(lifetime.max_lifetime_millis);
        let largest = LIVE_SESSION_SIZES[LIVE_SESSION_SIZES.len() - 1];
        let mut live = Vec::new();
        let mut lease = self.lease().await?;
        for batch in session_ids.chunks(largest) {
            let Some(last) = batch.last() else {
                continue;
            };
            let size = LIVE_SESSION_SIZES
                .into_iter()
                .find(|size| *size >= batch.len())
                .unwrap_or(largest);
            let ids = (0..size)
                .map(|index| format!("${}", index + 3))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "SELECT s.id, u.role FROM sessions s JOIN users u ON u.id = s.user_id \
                 WHERE s.id IN ({ids}) AND s.expires_at > $1 AND s.created_at > $2 \
                 AND u.status = 'active'"
            );
            let mut query = sqlx::query_as::<_, (i64, String)>(&sql)
                .bind(now)
                .bind(oldest);
            for index in 0..size {
                query = query.bind(*batch.get(index).unwrap_or(last));
            }
            let rows = query.fetch_all(&mut *lease).await?;
            // A role this build does not know grants nothing: not in force.
            live.extend(rows.into_iter().filter_map(|(session_id, role)| {
                Role::parse(&role).map(|role| LiveSession { session_id, role })
            }));
        }
        Ok(live)
    }

    /// The session of `row`, its expiry extended first when due.
    async fn refreshed(
        &self,
        row: SessionUserRow,
        now: i64,
        lifetime: &SessionLifetime,
    ) -> Result<SessionUser, DomainError> {
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
        Ok(SessionUser {
            session_id: row.session_id,
            expires_at,
            created_at: row.session_created_at,
            second_factor_at: row.session_second_factor_at,
            user: User::try_from(row.user)?,
            capabilities: Capabilities::from_names(row.session_capabilities),
            relations_version: row.session_relations_version,
            unread_notifications: notifications::unread_count(row.session_unread_notifications),
        })
    }
}

/// How a sign-in proved who is signing in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInProof {
    /// A password, a provider or a mailed link alone.
    FirstFactor,
    /// That and a code of the user's second factor.
    SecondFactor,
}

/// Stores, in `tx`, a new session for `user_id` that expires after
/// `ttl_millis`, signed in with `proof`.
pub async fn create(
    tx: &mut Tx<'_>,
    token_hash: &str,
    user_id: i64,
    ttl_millis: i64,
    proof: SignInProof,
    client: &SessionClient,
) -> Result<i64, DomainError> {
    let now = now_millis();
    let second_factor_at = (proof == SignInProof::SecondFactor).then_some(now);
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO sessions (token_hash, user_id, created_at, expires_at, last_seen_at, user_agent, ip_address, second_factor_at) \
         VALUES ($1, $2, $3, $4, $3, $5, $6, $7) RETURNING id",
    )
    .bind(token_hash)
    .bind(user_id)
    .bind(now)
    .bind(now + ttl_millis)
    .bind(client.user_agent.clone())
    .bind(client.ip_address.clone())
    .bind(second_factor_at)
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

/// Records, in `tx`, that the session with this token hash passed a second
/// factor now (the code that turned two-factor sign-in on in it).
pub async fn record_second_factor(tx: &mut Tx<'_>, token_hash: &str) -> Result<(), DomainError> {
    sqlx::query("UPDATE sessions SET second_factor_at = $1 WHERE token_hash = $2")
        .bind(now_millis())
        .bind(token_hash)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Ends one session (sign-out) in `tx`.
pub async fn delete(tx: &mut Tx<'_>, token_hash: &str) -> Result<(), DomainError> {
    sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
        .bind(token_hash)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Most sessions a user's own list shows: the most recently used.
pub const MAX_LISTED_SESSIONS: i64 = 100;

/// One of a user's live sessions, as its owner sees it.
#[derive(Debug, Clone, FromRow)]
pub struct OwnSession {
    pub id: i64,
    /// To tell the caller's own session; never shown.
    pub token_hash: String,
    pub created_at: i64,
    pub last_seen_at: i64,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
}

impl Database {
    /// The live sessions of `user_id` (neither expired nor past their
    /// longest lifetime), most recently used first, at most
    /// [`MAX_LISTED_SESSIONS`].
    pub async fn sessions_of_user(
        &self,
        user_id: i64,
        lifetime: SessionLifetime,
    ) -> Result<Vec<OwnSession>, DomainError> {
        let now = now_millis();
        Ok(sqlx::query_as(
            "SELECT id, token_hash, created_at, last_seen_at, ip_address, user_agent \
             FROM sessions WHERE user_id = $1 AND expires_at > $2 AND created_at > $3 \
             ORDER BY last_seen_at DESC, id DESC LIMIT $4",
        )
        .bind(user_id)
        .bind(now)
        .bind(now.saturating_sub(lifetime.max_lifetime_millis))
        .bind(MAX_LISTED_SESSIONS)
        .fetch_all(&mut *self.lease().await?)
        .await?)
    }
}

/// A stored session of a user, without its token's hash.
#[derive(Debug, Clone, FromRow)]
pub struct StoredSession {
    pub id: i64,
    pub created_at: i64,
    pub last_seen_at: i64,
    pub expires_at: i64,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
}

impl Database {
    /// A page of every stored session of `user_id`, oldest first, after
    /// the session `after_id`.
    pub async fn stored_sessions_of_user(
        &self,
        user_id: i64,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<StoredSession>, DomainError> {
        Ok(sqlx::query_as(
            "SELECT id, created_at, last_seen_at, expires_at, ip_address, user_agent \
             FROM sessions WHERE user_id = $1 AND id > $2 ORDER BY id LIMIT $3",
        )
        .bind(user_id)
        .bind(after_id)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?)
    }
}

/// Ends, in `tx`, the session `session_id` if it is one of `user_id`'s;
/// answers its token hash, or `None` when `user_id` has no such session.
pub async fn end_own(
    tx: &mut Tx<'_>,
    user_id: i64,
    session_id: i64,
) -> Result<Option<String>, DomainError> {
    let ended: Option<(String,)> =
        sqlx::query_as("DELETE FROM sessions WHERE id = $1 AND user_id = $2 RETURNING token_hash")
            .bind(session_id)
            .bind(user_id)
            .fetch_optional(&mut **tx)
            .await?;
    Ok(ended.map(|(token_hash,)| token_hash))
}

/// Ends, in `tx`, every session of `user_id` but the one whose token hash
/// is `kept`.
pub async fn end_others(tx: &mut Tx<'_>, user_id: i64, kept: &str) -> Result<(), DomainError> {
    sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2")
        .bind(user_id)
        .bind(kept)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
