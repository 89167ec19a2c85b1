//! User accounts: creation, lookup, status and sign-in bookkeeping.

use sqlx::FromRow;

use crate::time::now_millis;
use crate::{Database, DomainError, Flag};

/// The roles Plaza knows, lowest first. `super_admin` is only granted from the
/// command line or the database.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Moderator,
    Admin,
    SuperAdmin,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::User, Role::Moderator, Role::Admin, Role::SuperAdmin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Moderator => "moderator",
            Role::Admin => "admin",
            Role::SuperAdmin => "super_admin",
        }
    }

    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.as_str() == name)
    }

    /// "Administrator or higher" in the spec.
    pub fn is_admin(self) -> bool {
        self >= Role::Admin
    }

    pub fn is_moderator(self) -> bool {
        self >= Role::Moderator
    }
}

/// Account state as the admin surfaces show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserStatus {
    Active,
    Inactive,
    Banned,
}

impl UserStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            UserStatus::Active => "active",
            UserStatus::Inactive => "inactive",
            UserStatus::Banned => "banned",
        }
    }

    pub fn parse(name: &str) -> Option<UserStatus> {
        [UserStatus::Active, UserStatus::Inactive, UserStatus::Banned]
            .into_iter()
            .find(|status| status.as_str() == name)
    }
}

/// A user row.
#[derive(Debug, Clone, FromRow)]
pub struct UserRow {
    pub id: i64,
    pub email: String,
    pub email_verified_at: Option<i64>,
    pub username: String,
    pub name: Option<String>,
    pub image: Option<String>,
    pub bio: String,
    pub location: String,
    pub profile_public: Flag,
    pub password_hash: Option<String>,
    pub role: String,
    pub status: String,
    pub admin_notes: Option<String>,
    pub login_count: i64,
    pub last_login_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A user with typed role and status.
#[derive(Debug, Clone)]
pub struct User {
    pub row: UserRow,
    pub role: Role,
    pub status: UserStatus,
}

impl TryFrom<UserRow> for User {
    type Error = DomainError;

    fn try_from(row: UserRow) -> Result<Self, DomainError> {
        let role = Role::parse(&row.role).ok_or_else(|| {
            DomainError::Conflict(format!("user {} has unknown role {}", row.id, row.role))
        })?;
        let status = UserStatus::parse(&row.status).ok_or_else(|| {
            DomainError::Conflict(format!("user {} has unknown status {}", row.id, row.status))
        })?;
        Ok(User { row, role, status })
    }
}

impl User {
    pub fn id(&self) -> i64 {
        self.row.id
    }

    pub fn is_active(&self) -> bool {
        self.status == UserStatus::Active
    }
}

pub(crate) const USER_COLUMNS: &str = "id, email, email_verified_at, username, name, image, bio, location, \
     profile_public, password_hash, role, status, admin_notes, login_count, last_login_at, \
     created_at, updated_at";

/// What creating a user needs; the email is stored lower-cased.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub email_verified: bool,
    pub username: Option<String>,
    pub name: Option<String>,
    pub image: Option<String>,
    pub password_hash: Option<String>,
    pub role: Role,
}

/// The canonical form emails are stored and compared in.
pub fn normalize_email(email: &str) -> String {
    email.trim().to_lowercase()
}

/// Usernames: 3–30 characters of `a-z`, `0-9`, `_`, `-`, `.`, starting with a
/// letter or digit. Sign-up checks the chosen one with this.
pub fn is_valid_username(username: &str) -> bool {
    let length = username.chars().count();
    (3..=30).contains(&length)
        && username
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
        && username
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
}

/// A username derived from a display name or an email's local part: lower
/// case, other characters dropped, padded to 3, cut to 24 so a numeric suffix
/// still fits.
pub fn username_base(name: Option<&str>, email: &str) -> String {
    let source = name
        .filter(|name| name.chars().any(|c| c.is_ascii_alphanumeric()))
        .unwrap_or_else(|| email.split('@').next().unwrap_or(email));
    let mut base: String = source
        .to_lowercase()
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
        .collect();
    base = base
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned();
    base.truncate(24);
    while base.len() < 3 {
        base.push('0');
    }
    base
}

impl Database {
    /// Creates a user, deriving a free username when none is given. A taken
    /// email or chosen username is a [`DomainError::Conflict`].
    pub async fn create_user(&self, new: NewUser) -> Result<User, DomainError> {
        let email = normalize_email(&new.email);
        let username = match new.username {
            Some(username) => username,
            None => {
                self.free_username(&username_base(new.name.as_deref(), &email))
                    .await?
            }
        };
        let now = now_millis();
        let row: UserRow = sqlx::query_as(&format!(
            "INSERT INTO users (email, email_verified_at, username, name, image, password_hash, role, \
             status, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $8) RETURNING {USER_COLUMNS}"
        ))
        .bind(&email)
        .bind(new.email_verified.then_some(now))
        .bind(&username)
        .bind(&new.name)
        .bind(&new.image)
        .bind(&new.password_hash)
        .bind(new.role.as_str())
        .bind(now)
        .fetch_one(self.pool())
        .await
        .map_err(|error| match DomainError::from(error) {
            DomainError::Conflict(message) if message.contains("username") => {
                DomainError::Conflict("username is taken".to_owned())
            }
            DomainError::Conflict(_) => DomainError::Conflict("email is already registered".to_owned()),
            other => other,
        })?;
        User::try_from(row)
    }

    /// `base`, or `base` with the smallest numeric suffix that is free.
    async fn free_username(&self, base: &str) -> Result<String, DomainError> {
        let taken: Vec<(String,)> =
            sqlx::query_as("SELECT username FROM users WHERE username = $1 OR username LIKE $2")
                .bind(base)
                .bind(format!("{base}%"))
                .fetch_all(self.pool())
                .await?;
        let taken: std::collections::HashSet<String> =
            taken.into_iter().map(|(name,)| name).collect();
        if !taken.contains(base) {
            return Ok(base.to_owned());
        }
        Ok((2..)
            .map(|suffix| format!("{base}{suffix}"))
            .find(|candidate| !taken.contains(candidate))
            .unwrap_or_else(|| base.to_owned()))
    }

    pub async fn user_by_id(&self, id: i64) -> Result<User, DomainError> {
        let row: Option<UserRow> =
            sqlx::query_as(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1"))
                .bind(id)
                .fetch_optional(self.pool())
                .await?;
        row.ok_or(DomainError::NotFound("user"))?.try_into()
    }

    pub async fn user_by_email(&self, email: &str) -> Result<Option<User>, DomainError> {
        let row: Option<UserRow> = sqlx::query_as(&format!(
            "SELECT {USER_COLUMNS} FROM users WHERE email = $1"
        ))
        .bind(normalize_email(email))
        .fetch_optional(self.pool())
        .await?;
        row.map(User::try_from).transpose()
    }

    /// Counts a successful sign-in.
    pub async fn record_login(&self, user_id: i64) -> Result<(), DomainError> {
        let now = now_millis();
        sqlx::query(
            "UPDATE users SET login_count = login_count + 1, last_login_at = $1 WHERE id = $2",
        )
        .bind(now)
        .bind(user_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Changes a user's status; banning or deactivating ends every session at
    /// once, in the same transaction.
    pub async fn set_user_status(
        &self,
        user_id: i64,
        status: UserStatus,
    ) -> Result<(), DomainError> {
        let mut tx = self.pool().begin().await?;
        let updated = sqlx::query("UPDATE users SET status = $1, updated_at = $2 WHERE id = $3")
            .bind(status.as_str())
            .bind(now_millis())
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        if updated.rows_affected() == 0 {
            return Err(DomainError::NotFound("user"));
        }
        if status != UserStatus::Active {
            sqlx::query("DELETE FROM sessions WHERE user_id = $1")
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn set_user_role(&self, user_id: i64, role: Role) -> Result<(), DomainError> {
        let updated = sqlx::query("UPDATE users SET role = $1, updated_at = $2 WHERE id = $3")
            .bind(role.as_str())
            .bind(now_millis())
            .bind(user_id)
            .execute(self.pool())
            .await?;
        if updated.rows_affected() == 0 {
            return Err(DomainError::NotFound("user"));
        }
        Ok(())
    }

    /// Sets a new password hash and ends every session of the user.
    pub async fn set_user_password(
        &self,
        user_id: i64,
        password_hash: &str,
    ) -> Result<(), DomainError> {
        let mut tx = self.pool().begin().await?;
        sqlx::query("UPDATE users SET password_hash = $1, updated_at = $2 WHERE id = $3")
            .bind(password_hash)
            .bind(now_millis())
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM sessions WHERE user_id = $1")
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Marks the email as verified (a provider vouched for it).
    pub async fn mark_email_verified(&self, user_id: i64) -> Result<(), DomainError> {
        sqlx::query(
            "UPDATE users SET email_verified_at = $1 WHERE id = $2 AND email_verified_at IS NULL",
        )
        .bind(now_millis())
        .bind(user_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_derive_from_names_then_emails() {
        assert_eq!(username_base(Some("Ada Lovelace"), "x@y.z"), "ada_lovelace");
        assert_eq!(username_base(None, "Grace.Hopper@navy.mil"), "grace.hopper");
        assert_eq!(username_base(Some("李小龍"), "bruce@x.com"), "bruce");
        assert_eq!(username_base(None, "a@b.c"), "a00");
        assert!(is_valid_username(&username_base(Some("__x"), "q@q.q")));
    }

    #[test]
    fn roles_are_ordered_by_power() {
        assert!(Role::SuperAdmin.is_admin() && Role::Admin.is_admin());
        assert!(!Role::Moderator.is_admin() && Role::Moderator.is_moderator());
        assert_eq!(Role::parse("super_admin"), Some(Role::SuperAdmin));
        assert_eq!(Role::parse("root"), None);
    }
}
