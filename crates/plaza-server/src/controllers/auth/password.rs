//! Changing one's password while signed in: the current password proves
//! it is the owner (a user who signed up through a provider and has none
//! sets one); every other session and every admin token of the user ends,
//! and the owner's address is told of the change.

use axum::extract::State;
use plaza_domain::time::now_millis;
use plaza_domain::{access_tokens, sessions, users};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::CurrentUser;
use crate::auth::account_mail::{AccountChange, account_change_notice, queue_notice};
use crate::auth::password::check_new_password;
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::AppJson;
use crate::state::AppState;

/// A password change.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordChangeBody {
    /// Needed when the user has a password.
    pub current_password: Option<String>,
    /// At least 8 characters, at most 256 bytes.
    pub new_password: String,
}

/// The answer of a password change.
#[derive(Serialize, ToSchema)]
pub struct PasswordChanged {
    pub success: bool,
}

/// Change the signed-in user's password. Every other session of the user
/// and every admin token minted for them ends (this session stays), and a
/// notice is mailed to their address.
#[utoipa::path(
    put,
    path = "/api/auth/password",
    tag = "auth",
    security(("session_cookie" = [])),
    request_body = PasswordChangeBody,
    responses(
        (status = 200, description = "Changed", body = PasswordChanged),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "The current password is wrong or missing", body = GeneralError),
    )
)]
pub async fn change_password(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
    AppJson(body): AppJson<PasswordChangeBody>,
) -> Result<AppJson<PasswordChanged>, AppError> {
    check_new_password("newPassword", &body.new_password)?;
    let stored = principal.session.user.row.password_hash.as_deref();
    if let Some(stored) = stored {
        let current = body.current_password.as_deref().unwrap_or_default();
        if !state.auth.passwords.verify(current, Some(stored)).await? {
            return Err(AppError::Forbidden);
        }
    }
    let password_hash = state.auth.passwords.hash(&body.new_password).await?;
    let notice = account_change_notice(
        &state.account_mail(),
        &principal.session.user,
        AccountChange::PasswordChanged,
    )?;
    let (user_id, kept) = (principal.user_id(), principal.token_hash.clone());
    state
        .db
        .write(|tx| {
            Box::pin(async move {
                users::set_password(tx, user_id, &password_hash).await?;
                sessions::end_others(tx, user_id, &kept).await?;
                access_tokens::end_all(tx, user_id).await?;
                users::revoke_credentials(tx, user_id, now_millis()).await?;
                queue_notice(tx, &notice).await
            })
        })
        .await?;
    state.auth.session_lookups.forget_user(user_id);
    state.mail.wake();
    Ok(AppJson(PasswordChanged { success: true }))
}
