//! What an admin token's bearer is right now: the checks that make a token
//! stop working the moment its user is demoted, banned or deleted, or its
//! `jti` (or every token of its user) revoked, in one query.

use sqlx::FromRow;

use crate::users::{Role, UserStatus};
use crate::{Database, DomainError, Flag};

/// The current standing of a token's user.
#[derive(Debug, Clone)]
pub struct TokenSubject {
    pub user_id: i64,
    /// For the audit trail's actor.
    pub email: String,
    pub role: Role,
    pub status: UserStatus,
    pub revoked: bool,
}

#[derive(FromRow)]
struct SubjectRow {
    email: String,
    role: String,
    status: String,
    revoked: Flag,
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
        let row: Option<SubjectRow> = sqlx::query_as(
            "SELECT email, role, status, \
             (EXISTS (SELECT 1 FROM revoked_tokens WHERE jti = $2) \
              OR COALESCE(credentials_valid_after, 0) > $3) AS revoked \
             FROM users WHERE id = $1",
        )
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
            })
        }))
    }

    /// Whether the user holds `capability` through their role or a direct grant.
    pub async fn user_has_capability(
        &self,
        user_id: i64,
        capability: &str,
    ) -> Result<bool, DomainError> {
        let (held,): (Flag,) = sqlx::query_as(
            "SELECT EXISTS ( \
               SELECT 1 FROM users u \
               JOIN roles r ON r.name = u.role \
               JOIN role_permissions rp ON rp.role_id = r.id \
               JOIN permissions p ON p.id = rp.permission_id \
               WHERE u.id = $1 AND p.name = $2 AND p.status = 'active' \
             ) OR EXISTS ( \
               SELECT 1 FROM user_permissions up \
               JOIN permissions p ON p.id = up.permission_id \
               WHERE up.user_id = $1 AND p.name = $2 AND p.status = 'active' \
             )",
        )
        .bind(user_id)
        .bind(capability)
        .fetch_one(&mut *self.lease().await?)
        .await?;
        Ok(held.0)
    }
}
