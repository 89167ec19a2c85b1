//! What a user is: the stored row, the typed role and status read from it,
//! and the rules for emails and usernames.

use sqlx::FromRow;

use crate::{DomainError, Flag};

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
    /// Signed up while registrations need approval, and not approved yet:
    /// cannot sign in. Only a registration decision leaves it.
    Pending,
}

impl UserStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            UserStatus::Active => "active",
            UserStatus::Inactive => "inactive",
            UserStatus::Banned => "banned",
            UserStatus::Pending => "pending",
        }
    }

    /// A stored status, `pending` included.
    pub fn from_stored(name: &str) -> Option<UserStatus> {
        UserStatus::parse(name).or((name == "pending").then_some(UserStatus::Pending))
    }

    /// A status an administrator may set or filter by: `active`,
    /// `inactive` or `banned` (a pending user leaves that status only by a
    /// registration decision).
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
    /// When two-factor sign-in (TOTP) was turned on; `None` while it is off.
    pub totp_enabled_at: Option<i64>,
    /// A bot: an account a program drives with its tokens.
    pub is_bot: Flag,
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
        let status = UserStatus::from_stored(&row.status).ok_or_else(|| {
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

    /// Whether signing in needs a second factor (TOTP) besides the password.
    pub fn has_totp(&self) -> bool {
        self.row.totp_enabled_at.is_some()
    }
}

pub(crate) const USER_COLUMNS: &str = "id, email, email_verified_at, username, name, image, bio, location, \
     profile_public, password_hash, role, status, admin_notes, login_count, last_login_at, \
     created_at, updated_at, totp_enabled_at, is_bot";

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

/// The canonical form emails are stored and compared in: trimmed, ASCII
/// letters lower-cased. Full Unicode folding would turn look-alikes into
/// other people's addresses (the Kelvin sign `K` into `k`).
pub fn normalize_email(email: &str) -> String {
    email.trim().to_ascii_lowercase()
}

pub(super) const USERNAME_TAKEN: &str = "username is taken";

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

/// Fields an update changes; `None` keeps the current value, and for the
/// nullable ones `Some(None)` clears it.
#[derive(Debug, Clone, Default)]
pub struct UserChanges {
    pub name: Option<Option<String>>,
    pub username: Option<String>,
    pub image: Option<Option<String>>,
    pub bio: Option<String>,
    pub location: Option<String>,
    pub profile_public: Option<bool>,
    pub role: Option<Role>,
    pub status: Option<UserStatus>,
    /// Marks the email verified (now) or not.
    pub email_verified: Option<bool>,
    /// The admins' private notes on the user.
    pub admin_notes: Option<Option<String>>,
    /// Marks the account a bot or not.
    pub is_bot: Option<bool>,
}

impl User {
    /// Whether anyone may see this user: active, with a public profile.
    pub fn is_public(&self) -> bool {
        self.is_active() && self.row.profile_public.0
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
    fn emails_fold_ascii_case_only() {
        assert_eq!(normalize_email("  Ada@Example.COM "), "ada@example.com");
        // U+212A KELVIN SIGN must not become the ASCII `k` of another address.
        assert_eq!(
            normalize_email("\u{212A}im@example.com"),
            "\u{212A}im@example.com"
        );
        assert_ne!(
            normalize_email("\u{212A}im@example.com"),
            normalize_email("kim@example.com")
        );
    }

    #[test]
    fn roles_are_ordered_by_power() {
        assert!(Role::SuperAdmin.is_admin() && Role::Admin.is_admin());
        assert!(!Role::Moderator.is_admin() && Role::Moderator.is_moderator());
        assert_eq!(Role::parse("super_admin"), Some(Role::SuperAdmin));
        assert_eq!(Role::parse("root"), None);
    }
}
