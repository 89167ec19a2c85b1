//! What an admin token's bearer is right now: the checks that make a token
//! stop working the moment its user is demoted, banned or deleted, or its
//! `jti` (or every token of its user) revoked, in one query.

use sqlx::FromRow;

use crate::dialect::Dialect;
use crate::grants::{self, PermissionStatus};
use crate::users::{Role, UserStatus};
use crate::{Backend, Database, DomainError, Flag};

/// The capabilities (active permissions, DECISIONS.md) an administrator
/// holds through their role or a direct grant, read by the same statement
/// as their session or token, so that a route's capability check costs no
/// statement of its own. Only the grants of the roles in
/// [`grants::ROLES_READING_GRANTS`] are read, of permissions whose status
/// [`grants`](PermissionStatus::grants): a super admin holds every
/// capability without them and lower roles none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities(Option<String>);

impl Capabilities {
    pub(crate) fn from_names(names: Option<String>) -> Self {
        Capabilities(names)
    }

    /// Whether `name` is among them.
    pub fn hold(&self, name: &str) -> bool {
        self.0
            .as_deref()
            .is_some_and(|names| names.split(CAPABILITY_SEPARATOR).any(|held| held == name))
    }
}

/// What [`Dialect::string_agg`] joins names with; permission names cannot
/// hold it.
const CAPABILITY_SEPARATOR: &str = ", ";

/// An SQL expression of the [`Capabilities`] of the user row `user`: their
/// granted permissions' names, or NULL for a role whose grants are not
/// read. On PostgreSQL through the function of migration 0025 (see there
/// why), which reads the grants of active permissions as this does.
pub(crate) fn capabilities_sql(dialect: Dialect, user: &str) -> String {
    let roles: Vec<String> = grants::ROLES_READING_GRANTS
        .iter()
        .map(|role| format!("'{}'", role.as_str()))
        .collect();
    let roles = roles.join(", ");
    match dialect.0 {
        Backend::Postgres => {
            format!(
                "CASE WHEN {user}.role IN ({roles}) THEN admin_capabilities({user}.id, {user}.role) END"
            )
        }
        Backend::Sqlite => {
            let granting: Vec<String> = PermissionStatus::ALL
                .iter()
                .filter(|status| status.grants())
                .map(|status| format!("'{}'", status.as_str()))
                .collect();
            format!(
                "CASE WHEN {user}.role IN ({roles}) THEN (SELECT {names} FROM permissions p \
                   WHERE p.status IN ({granting}) AND (p.id IN (SELECT rp.permission_id FROM role_permissions rp \
                     JOIN roles r ON r.id = rp.role_id WHERE r.name = {user}.role) \
                   OR p.id IN (SELECT up.permission_id FROM user_permissions up WHERE up.user_id = {user}.id))) \
                 END",
                names = dialect.string_agg("p.name", "p.name"),
                granting = granting.join(", "),
            )
        }
    }
}

/// The current standing of a token's user.
#[derive(Debug, Clone)]
pub struct TokenSubject {
    pub user_id: i64,
    /// For the audit trail's actor.
    pub email: String,
    pub role: Role,
    pub status: UserStatus,
    pub revoked: bool,
    pub capabilities: Capabilities,
    /// Whether the user has two-factor sign-in (TOTP) on.
    pub has_totp: bool,
}

#[derive(FromRow)]
struct SubjectRow {
    email: String,
    role: String,
    status: String,
    revoked: Flag,
    capabilities: Option<String>,
    has_totp: Flag,
}

impl Database {
    /// `None` when the user no longer exists. A token is revoked when its
    /// `jti` is, or when it was issued (`issued_at_millis`) before its user's
    /// credentials were last revoked (a ban revokes every token at once).
    pub async fn token_subject(
        &self,
        user_id: i64,
        jti: &str,
        issued_at_millis: i64,
    ) -> Result<Option<TokenSubject>, DomainError> {
        let row: Option<SubjectRow> = sqlx::query_as(&format!(
            "SELECT u.email, u.role, u.status, \
             (EXISTS (SELECT 1 FROM revoked_tokens WHERE jti = $2) \
              OR COALESCE(u.credentials_valid_after, 0) > $3) AS revoked, \
             {} AS capabilities, u.totp_enabled_at IS NOT NULL AS has_totp \
             FROM users u WHERE u.id = $1",
            capabilities_sql(self.dialect(), "u")
        ))
        .bind(user_id)
        .bind(jti)
        .bind(issued_at_millis)
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        Ok(row.and_then(|row| {
            Some(TokenSubject {
                user_id,
                email: row.email,
                role: Role::parse(&row.role)?,
                status: UserStatus::parse(&row.status)?,
                revoked: row.revoked.0,
                capabilities: Capabilities::from_names(row.capabilities),
                has_totp: row.has_totp.0,
            })
        }))
    }
}
