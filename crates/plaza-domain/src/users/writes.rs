//! Writing users: creating one (with a derived username when none is
//! chosen), sign-in bookkeeping, changes of profile, role and status, and
//! deletion. A change that lowers a user's authority ends their sessions
//! or admin tokens in the same unit of work.

use sqlx::Acquire;

use super::model::{
    NewUser, Role, USER_COLUMNS, USERNAME_TAKEN, User, UserChanges, UserRow, UserStatus,
    normalize_email, username_base,
};
use crate::listing::{Arg, bind_all};
use crate::time::now_millis;
use crate::webhooks::{self, EventType};
use crate::{DomainError, Tx};

/// How often a derived username is derived again when concurrent sign-ups
/// race for the same one.
const DERIVED_USERNAME_ATTEMPTS: u32 = 8;

/// Creates a user in `tx`, deriving a free username when none is given. A
/// taken email or chosen username is a [`DomainError::Conflict`]; a derived
/// username that another sign-up took in the meantime is derived again,
/// each attempt inside a savepoint so that a failed insert leaves `tx`
/// usable on PostgreSQL.
pub async fn create(tx: &mut Tx<'_>, new: NewUser) -> Result<User, DomainError> {
    let user = insert_new(tx, new).await?;
    let row = &user.row;
    let data = serde_json::json!({"user": {
        "id": row.id.to_string(),
        "username": row.username,
        "name": row.name,
        "role": user.role.as_str(),
        "status": user.status.as_str(),
        "is_bot": row.is_bot.0,
        "created_at": crate::time::rfc3339(row.created_at),
    }});
    webhooks::enqueue(tx, EventType::UserCreated, &data, row.created_at).await?;
    Ok(user)
}

/// [`create`]'s row, with its username chosen or derived.
async fn insert_new(tx: &mut Tx<'_>, new: NewUser) -> Result<User, DomainError> {
    let email = normalize_email(&new.email);
    let Some(chosen) = new.username.clone() else {
        let base = username_base(new.name.as_deref(), &email);
        let mut attempts = 0;
        loop {
            let username = free_username(tx, &base).await?;
            let mut attempt = tx.begin().await?;
            match insert(&mut attempt, &new, &email, &username).await {
                Ok(user) => {
                    attempt.commit().await?;
                    return Ok(user);
                }
                Err(DomainError::Conflict(message))
                    if message == USERNAME_TAKEN && attempts < DERIVED_USERNAME_ATTEMPTS =>
                {
                    attempt.rollback().await?;
                    attempts += 1;
                }
                Err(error) => return Err(error),
            }
        }
    };
    insert(tx, &new, &email, &chosen).await
}

async fn insert(
    tx: &mut Tx<'_>,
    new: &NewUser,
    email: &str,
    username: &str,
) -> Result<User, DomainError> {
    let now = now_millis();
    let row: UserRow = sqlx::query_as(&format!(
        "INSERT INTO users (email, email_verified_at, username, name, image, password_hash, role, \
         status, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $8) RETURNING {USER_COLUMNS}"
    ))
    .bind(email)
    .bind(new.email_verified.then_some(now))
    .bind(username)
    .bind(&new.name)
    .bind(&new.image)
    .bind(&new.password_hash)
    .bind(new.role.as_str())
    .bind(now)
    .fetch_one(&mut **tx)
    .await
    .map_err(|error| match DomainError::from(error) {
        DomainError::Conflict(message) if message.contains("username") => {
            DomainError::Conflict(USERNAME_TAKEN.to_owned())
        }
        DomainError::Conflict(_) => DomainError::Conflict("email is already registered".to_owned()),
        other => other,
    })?;
    User::try_from(row)
}

/// `base`, or `base` with the smallest numeric suffix that is free.
async fn free_username(tx: &mut Tx<'_>, base: &str) -> Result<String, DomainError> {
    let taken: Vec<(String,)> =
        sqlx::query_as("SELECT username FROM users WHERE username = $1 OR username LIKE $2")
            .bind(base)
            .bind(format!("{base}%"))
            .fetch_all(&mut **tx)
            .await?;
    let taken: std::collections::HashSet<String> = taken.into_iter().map(|(name,)| name).collect();
    if !taken.contains(base) {
        return Ok(base.to_owned());
    }
    Ok((2..)
        .map(|suffix| format!("{base}{suffix}"))
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or_else(|| base.to_owned()))
}

/// Counts a successful sign-in, in the unit of work that starts its session.
pub async fn record_login(tx: &mut Tx<'_>, user_id: i64) -> Result<(), DomainError> {
    sqlx::query("UPDATE users SET login_count = login_count + 1, last_login_at = $1 WHERE id = $2")
        .bind(now_millis())
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Changes a user's status; banning or deactivating ends every session at
/// once, in the same transaction, and any change of status ends the user's
/// admin tokens ([`revoke_credentials_if_lowered`]).
pub async fn set_status(
    tx: &mut Tx<'_>,
    user_id: i64,
    status: UserStatus,
) -> Result<(), DomainError> {
    let before = user_in(tx, user_id).await?;
    sqlx::query("UPDATE users SET status = $1, updated_at = $2 WHERE id = $3")
        .bind(status.as_str())
        .bind(now_millis())
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    if status != UserStatus::Active {
        end_sessions(tx, user_id).await?;
    }
    revoke_credentials_if_lowered(tx, &before, before.role, status).await
}

/// Sets a user's password hash.
pub async fn set_password(
    tx: &mut Tx<'_>,
    user_id: i64,
    password_hash: &str,
) -> Result<(), DomainError> {
    sqlx::query("UPDATE users SET password_hash = $1, updated_at = $2 WHERE id = $3")
        .bind(password_hash)
        .bind(now_millis())
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Sets the password of a user who proved they hold their mailbox (a reset
/// link), and ends every session and admin token of theirs: whoever holds
/// one may be whom the owner is locking out.
pub async fn reset_password(
    tx: &mut Tx<'_>,
    user_id: i64,
    password_hash: &str,
    now: i64,
) -> Result<(), DomainError> {
    set_password(tx, user_id, password_hash).await?;
    end_sessions(tx, user_id).await?;
    revoke_credentials(tx, user_id, now).await
}

/// Marks the email of `user_id` verified at `now` (an earlier time stays)
/// if it is still `email`, the address a verification link was mailed to;
/// answers the user, or `None` when their address is another one now.
async fn mark_email_verified(
    tx: &mut Tx<'_>,
    user_id: i64,
    email: &str,
    now: i64,
) -> Result<Option<User>, DomainError> {
    let row: Option<UserRow> = sqlx::query_as(&format!(
        "UPDATE users SET email_verified_at = COALESCE(email_verified_at, $3), updated_at = $3 \
         WHERE id = $1 AND email = $2 RETURNING {USER_COLUMNS}"
    ))
    .bind(user_id)
    .bind(email)
    .bind(now)
    .fetch_optional(&mut **tx)
    .await?;
    row.map(User::try_from).transpose()
}

/// What verifying an address did beyond marking it verified.
#[derive(Debug, Clone)]
pub struct Verified {
    pub user: User,
    /// The address was unverified until now: the account's other sessions
    /// ended.
    pub first_verification: bool,
    /// The password set while the address was unverified was dropped: the
    /// person who proved the mailbox chooses the account's password.
    pub password_dropped: bool,
}

/// Marks the email of `user_id` verified ([`mark_email_verified`]) and,
/// when it was unverified until now, secures the account for the owner of
/// the mailbox: anyone may sign up with someone else's address, so every
/// session but `kept_session` (the token hash of the verifying request's
/// own session of this user, if any) ends, and unless the verification
/// comes from such a session (whose holder knew the password), a password
/// set before the address was verified is dropped and the admin tokens of
/// the user end. `None` when the user's address is another one now.
pub async fn verify_email_securely(
    tx: &mut Tx<'_>,
    user_id: i64,
    email: &str,
    kept_session: Option<&str>,
    now: i64,
) -> Result<Option<Verified>, DomainError> {
    let before = user_in(tx, user_id).await?;
    let Some(user) = mark_email_verified(tx, user_id, email, now).await? else {
        return Ok(None);
    };
    let first_verification = before.row.email_verified_at.is_none();
    let mut password_dropped = false;
    if first_verification {
        match kept_session {
            Some(kept) => end_sessions_but(tx, user_id, kept).await?,
            None => end_sessions(tx, user_id).await?,
        }
        if kept_session.is_none() && before.row.password_hash.is_some() {
            sqlx::query("UPDATE users SET password_hash = NULL, updated_at = $1 WHERE id = $2")
                .bind(now)
                .bind(user_id)
                .execute(&mut **tx)
                .await?;
            revoke_credentials(tx, user_id, now).await?;
            password_dropped = true;
        }
    }
    let user = if password_dropped {
        user_in(tx, user_id).await?
    } else {
        user
    };
    Ok(Some(Verified {
        user,
        first_verification,
        password_dropped,
    }))
}

/// Changes a user's role; a lower role ends the user's admin tokens
/// ([`revoke_credentials_if_lowered`]).
pub async fn set_role(tx: &mut Tx<'_>, user_id: i64, role: Role) -> Result<(), DomainError> {
    let before = user_in(tx, user_id).await?;
    sqlx::query("UPDATE users SET role = $1, updated_at = $2 WHERE id = $3")
        .bind(role.as_str())
        .bind(now_millis())
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    revoke_credentials_if_lowered(tx, &before, role, before.status).await
}

/// Ends every admin token issued to `before`'s user until now when their
/// role drops below `before.role` or their status changes: a token carries
/// the authority of its minting, so one minted before a demotion must not
/// work again after a re-promotion. Tokens issued before the user's
/// `credentials_valid_after` are refused.
async fn revoke_credentials_if_lowered(
    tx: &mut Tx<'_>,
    before: &User,
    role: Role,
    status: UserStatus,
) -> Result<(), DomainError> {
    if role < before.role || status != before.status {
        revoke_credentials(tx, before.id(), now_millis()).await?;
    }
    Ok(())
}

/// Refuses every admin token of the user issued before `now`.
pub async fn revoke_credentials(
    tx: &mut Tx<'_>,
    user_id: i64,
    now: i64,
) -> Result<(), DomainError> {
    sqlx::query("UPDATE users SET credentials_valid_after = $1 WHERE id = $2")
        .bind(now)
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Applies `changes`. A taken username is a [`DomainError::Conflict`]; a
/// status other than active ends every session of the user at once, and a
/// lower role or another status their admin tokens, as [`set_status`] and
/// [`set_role`] do.
pub async fn update(tx: &mut Tx<'_>, id: i64, changes: UserChanges) -> Result<User, DomainError> {
    let before = if changes.role.is_some() || changes.status.is_some() {
        Some(user_in(tx, id).await?)
    } else {
        None
    };
    let mut sets = Vec::new();
    let mut args = Vec::new();
    let mut set = |column: &str, value: Option<Arg>| match value {
        Some(value) => {
            args.push(value);
            sets.push(format!("{column} = ${}", args.len()));
        }
        None => sets.push(format!("{column} = NULL")),
    };
    if let Some(name) = changes.name {
        set("name", name.map(Arg::Text));
    }
    if let Some(username) = changes.username {
        set("username", Some(Arg::Text(username)));
    }
    if let Some(image) = changes.image {
        set("image", image.map(Arg::Text));
    }
    if let Some(bio) = changes.bio {
        set("bio", Some(Arg::Text(bio)));
    }
    if let Some(location) = changes.location {
        set("location", Some(Arg::Text(location)));
    }
    if let Some(profile_public) = changes.profile_public {
        set("profile_public", Some(Arg::Bool(profile_public)));
    }
    if let Some(role) = changes.role {
        set("role", Some(Arg::Text(role.as_str().to_owned())));
    }
    if let Some(status) = changes.status {
        set("status", Some(Arg::Text(status.as_str().to_owned())));
    }
    let now = now_millis();
    if let Some(verified) = changes.email_verified {
        set("email_verified_at", verified.then_some(Arg::Int(now)));
    }
    if let Some(notes) = changes.admin_notes {
        set("admin_notes", notes.map(Arg::Text));
    }
    if let Some(is_bot) = changes.is_bot {
        set("is_bot", Some(Arg::Bool(is_bot)));
    }
    set("updated_at", Some(Arg::Int(now)));
    args.push(Arg::Int(id));
    let sql = format!(
        "UPDATE users SET {} WHERE id = ${} RETURNING {USER_COLUMNS}",
        sets.join(", "),
        args.len()
    );
    let row: Option<UserRow> = bind_all(sqlx::query_as(&sql), args)
        .fetch_optional(&mut **tx)
        .await
        .map_err(|error| match DomainError::from(error) {
            DomainError::Conflict(_) => DomainError::Conflict(USERNAME_TAKEN.to_owned()),
            other => other,
        })?;
    let user = User::try_from(row.ok_or(DomainError::NotFound("user"))?)?;
    if !user.is_active() {
        end_sessions(tx, id).await?;
    }
    if let Some(before) = before {
        revoke_credentials_if_lowered(tx, &before, user.role, user.status).await?;
    }
    Ok(user)
}

/// The user `id` as `tx` sees it.
pub async fn user_in(tx: &mut Tx<'_>, id: i64) -> Result<User, DomainError> {
    let row: Option<UserRow> =
        sqlx::query_as(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1"))
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
    User::try_from(row.ok_or(DomainError::NotFound("user"))?)
}

/// Deletes a user and, by cascade, everything that is theirs: posts (with
/// their tags and the reports on them), reports they made, sessions, linked
/// accounts and direct capability grants. Returns the user as they were.
pub async fn delete(tx: &mut Tx<'_>, id: i64) -> Result<User, DomainError> {
    let row: Option<UserRow> = sqlx::query_as(&format!(
        "DELETE FROM users WHERE id = $1 RETURNING {USER_COLUMNS}"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    User::try_from(row.ok_or(DomainError::NotFound("user"))?)
}

/// Ends every session of `user_id` but the one whose token hash is `kept`.
async fn end_sessions_but(tx: &mut Tx<'_>, user_id: i64, kept: &str) -> Result<(), DomainError> {
    sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2")
        .bind(user_id)
        .bind(kept)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Ends every session and personal access token of `user_id`.
async fn end_sessions(tx: &mut Tx<'_>, user_id: i64) -> Result<(), DomainError> {
    sqlx::query("DELETE FROM sessions WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    // Personal access tokens end with the sessions (`access_tokens` reads
    // users, so the statement is written here rather than called there).
    sqlx::query("DELETE FROM access_tokens WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
