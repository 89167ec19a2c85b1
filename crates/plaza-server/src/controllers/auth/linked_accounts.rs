//! The current user's linked identity-provider accounts, and unlinking one
//! (never the last way to sign in).

use axum::extract::State;
use plaza_domain::accounts::{self, LinkedAccount, UnlinkOutcome};
use plaza_domain::time::rfc3339;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::CurrentUser;
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppJson, TextPath};
use crate::state::AppState;

/// One linked identity-provider account.
#[derive(Serialize, ToSchema)]
pub struct AccountView {
    pub provider: String,
    #[serde(rename = "providerAccountId")]
    pub provider_account_id: String,
    pub email: Option<String>,
    #[serde(rename = "emailVerified")]
    pub email_verified: bool,
    #[serde(rename = "lastUsedAt")]
    pub last_used_at: Option<String>,
    #[serde(rename = "createdAt")]
    pub created_at: String,
}

impl From<LinkedAccount> for AccountView {
    fn from(account: LinkedAccount) -> Self {
        AccountView {
            provider: account.provider,
            provider_account_id: account.provider_account_id,
            email: account.email,
            email_verified: account.email_verified.0,
            last_used_at: account.last_used_at.map(rfc3339),
            created_at: rfc3339(account.created_at),
        }
    }
}

/// The current user's ways to sign in.
#[derive(Serialize, ToSchema)]
pub struct AccountsView {
    pub accounts: Vec<AccountView>,
    #[serde(rename = "hasPassword")]
    pub has_password: bool,
}

/// The current user's linked identity providers.
#[utoipa::path(
    get,
    path = "/api/auth/accounts",
    tag = "auth",
    security(("session_cookie" = [])),
    responses(
        (status = 200, description = "Linked accounts", body = AccountsView),
        (status = 401, description = "Not signed in", body = GeneralError),
    )
)]
pub async fn accounts(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
) -> Result<AppJson<AccountsView>, AppError> {
    let accounts = state.db.accounts_of_user(principal.user_id()).await?;
    Ok(AppJson(AccountsView {
        accounts: accounts.into_iter().map(AccountView::from).collect(),
        has_password: principal.session.user.row.password_hash.is_some(),
    }))
}

/// Unlink answer.
#[derive(Serialize, ToSchema)]
pub struct UnlinkedView {
    pub message: String,
    pub provider: String,
}

/// Unlink an identity provider from the current user. Refused with 409 when
/// it is their last way to sign in.
#[utoipa::path(
    delete,
    path = "/api/auth/accounts/{providerId}",
    tag = "auth",
    security(("session_cookie" = [])),
    params(("providerId" = String, Path, description = "Provider id, e.g. github")),
    responses(
        (status = 200, description = "Unlinked", body = UnlinkedView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "That provider is not linked", body = GeneralError),
        (status = 409, description = "It is the last way to sign in", body = GeneralError),
    )
)]
pub async fn unlink_account(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
    TextPath(provider_id): TextPath,
) -> Result<AppJson<UnlinkedView>, AppError> {
    let (user_id, provider) = (principal.user_id(), provider_id.clone());
    match state
        .db
        .write(|tx| Box::pin(async move { accounts::unlink(tx, user_id, &provider).await }))
        .await?
    {
        UnlinkOutcome::Unlinked => Ok(AppJson(UnlinkedView {
            message: format!("{provider_id} was unlinked from your account"),
            provider: provider_id,
        })),
        UnlinkOutcome::NotLinked => Err(AppError::NotFound("linked account")),
        UnlinkOutcome::LastSignInMethod => Err(AppError::Conflict(
            "cannot unlink the last way to sign in: set a password or link another provider first"
                .to_owned(),
        )),
    }
}
