//! Registrations (DECISIONS.md "The front door"): a sign-up while
//! registrations need approval stores its application and waits with the
//! status `pending` (it cannot sign in); an administrator approves it
//! (`active`) or rejects it (the account is deleted). A sign-up with an
//! invite records who invited the user. A pending sign-up is the webhook
//! event `registration.pending`.

use sqlx::FromRow;

use crate::listing::Page;
use crate::notifications::causes;
use crate::users::{USER_COLUMNS, User, UserRow};
use crate::webhooks::{self, EventType};
use crate::{Database, DomainError, Tx};

/// Most characters of an application.
pub const MAX_APPLICATION_CHARS: usize = 2_000;

/// Makes the new user `user_id` wait for approval with `application`, and
/// tells every active administrator (`registration`).
pub async fn hold_for_approval(
    tx: &mut Tx<'_>,
    user_id: i64,
    application: &str,
) -> Result<User, DomainError> {
    let row: UserRow = sqlx::query_as(&format!(
        "UPDATE users SET status = 'pending', application = $2 WHERE id = $1 \
         RETURNING {USER_COLUMNS}"
    ))
    .bind(user_id)
    .bind(application)
    .fetch_one(&mut **tx)
    .await?;
    let admins: Vec<(i64,)> = sqlx::query_as(
        "SELECT id FROM users WHERE role IN ('admin', 'super_admin') AND status = 'active' \
         ORDER BY id",
    )
    .fetch_all(&mut **tx)
    .await?;
    for (admin_id,) in admins {
        causes::registration_awaits(tx, admin_id, user_id).await?;
    }
    let now = crate::time::now_millis();
    let data = serde_json::json!({"user": {
        "id": user_id.to_string(),
        "application": application,
        "created_at": crate::time::rfc3339(now),
    }});
    webhooks::enqueue(tx, EventType::RegistrationPending, &data, now).await?;
    row.try_into()
}

/// Records that `inviter_id` invited the new user `user_id`.
pub async fn record_inviter(
    tx: &mut Tx<'_>,
    user_id: i64,
    inviter_id: i64,
) -> Result<(), DomainError> {
    sqlx::query("UPDATE users SET invited_by = $2 WHERE id = $1")
        .bind(user_id)
        .bind(inviter_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// A user awaiting approval, with their application.
#[derive(Debug, Clone)]
pub struct PendingRegistration {
    pub user: User,
    pub application: String,
}

#[derive(FromRow)]
struct PendingRow {
    #[sqlx(flatten)]
    user: UserRow,
    application: Option<String>,
}

impl TryFrom<PendingRow> for PendingRegistration {
    type Error = DomainError;

    fn try_from(row: PendingRow) -> Result<Self, DomainError> {
        Ok(PendingRegistration {
            user: row.user.try_into()?,
            application: row.application.unwrap_or_default(),
        })
    }
}

/// The pending user `user_id`, read in `tx`; [`DomainError::NotFound`]
/// when no such user awaits approval.
async fn pending_in(tx: &mut Tx<'_>, user_id: i64) -> Result<PendingRegistration, DomainError> {
    let row: Option<PendingRow> = sqlx::query_as(&format!(
        "SELECT {USER_COLUMNS}, application FROM users WHERE id = $1 AND status = 'pending'{}",
        crate::dialect::Dialect::of(tx).for_update()
    ))
    .bind(user_id)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or(DomainError::NotFound("pending registration"))?
        .try_into()
}

/// Approves the pending user `user_id`: they become `active`.
pub async fn approve(tx: &mut Tx<'_>, user_id: i64) -> Result<PendingRegistration, DomainError> {
    let pending = pending_in(tx, user_id).await?;
    let row: UserRow = sqlx::query_as(&format!(
        "UPDATE users SET status = 'active', updated_at = $2 WHERE id = $1 \
         RETURNING {USER_COLUMNS}"
    ))
    .bind(user_id)
    .bind(crate::time::now_millis())
    .fetch_one(&mut **tx)
    .await?;
    Ok(PendingRegistration {
        user: row.try_into()?,
        application: pending.application,
    })
}

/// Rejects the pending user `user_id`: the account is deleted; answers it
/// as it was.
pub async fn reject(tx: &mut Tx<'_>, user_id: i64) -> Result<PendingRegistration, DomainError> {
    let pending = pending_in(tx, user_id).await?;
    sqlx::query("DELETE FROM users WHERE id = $1")
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    Ok(pending)
}

/// A page of pending registrations and their total.
#[derive(Debug, Clone)]
pub struct PendingPage {
    pub registrations: Vec<PendingRegistration>,
    pub total: i64,
}

impl Database {
    /// The registrations awaiting approval, oldest first.
    pub async fn pending_registrations(&self, page: Page) -> Result<PendingPage, DomainError> {
        let mut lease = self.lease().await?;
        let (total,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM users WHERE status = 'pending'")
                .fetch_one(&mut *lease)
                .await?;
        let rows: Vec<PendingRow> = sqlx::query_as(&format!(
            "SELECT {USER_COLUMNS}, application FROM users WHERE status = 'pending' \
             ORDER BY created_at, id LIMIT $1 OFFSET $2"
        ))
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&mut *lease)
        .await?;
        Ok(PendingPage {
            registrations: rows
                .into_iter()
                .map(PendingRegistration::try_from)
                .collect::<Result<_, _>>()?,
            total,
        })
    }

    /// Who invited `user_id` (`None` without an invite, or once the
    /// inviter's account is deleted).
    pub async fn inviter_of(&self, user_id: i64) -> Result<Option<i64>, DomainError> {
        let found: Option<(Option<i64>,)> =
            sqlx::query_as("SELECT invited_by FROM users WHERE id = $1")
                .bind(user_id)
                .fetch_optional(&mut *self.lease().await?)
                .await?;
        Ok(found.and_then(|(inviter,)| inviter))
    }
}
