//! Turning two-factor sign-in (TOTP) on and off for the signed-in user: a
//! setup that makes a pending secret, a first code that turns it on and
//! answers the recovery codes, and a code (or a recovery code) that turns
//! it off. Every code (and password) checked counts as a sign-in attempt on
//! the user's account, so guessing one here is bounded as on the sign-in
//! page. Turning it on needs the current password, or a sign-in within
//! [`RECENT_SIGN_IN_MILLIS`]; it makes this session one that passed the
//! second factor and ends the user's other sessions. Each change is mailed
//! to the owner.

use std::net::IpAddr;

use axum::extract::State;
use plaza_domain::{sessions, two_factor};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::account_mail::{AccountChange, account_change_notice, queue_notice};
use crate::auth::signin::CountedAttempt;
use crate::auth::two_factor::{
    matching_step, new_recovery_codes, new_secret, provisioning, use_code,
};
use crate::auth::{ClientAddress, CurrentUser, SessionPrincipal};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::AppJson;
use crate::state::AppState;

/// A new secret, pending until a code of it turns two-factor sign-in on.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TotpSetup {
    /// The secret in base32, for typing into an authenticator app.
    pub secret: String,
    /// The `otpauth://totp/...` URL authenticator apps read (shown as a QR
    /// code by the client): SHA-1, 6 digits, 30-second steps.
    pub otpauth_url: String,
}

/// A code of the user's authenticator app.
#[derive(Deserialize, ToSchema)]
pub struct TotpCodeBody {
    /// Six digits; to turn two-factor sign-in off, one of the recovery
    /// codes is taken too.
    pub code: String,
    /// The current password: needed to turn two-factor sign-in on when the
    /// session signed in more than 10 minutes ago.
    #[serde(default)]
    pub password: Option<String>,
}

/// How recent a sign-in stands in for the password when two-factor
/// sign-in is turned on.
pub const RECENT_SIGN_IN_MILLIS: i64 = 10 * 60 * 1000;

/// The answer of turning two-factor sign-in on.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TotpEnabled {
    /// Ten one-time codes that stand in for the app's code; shown this once.
    pub recovery_codes: Vec<String>,
}

/// The answer of turning two-factor sign-in off.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TotpDisabled {
    /// `false`: signing in needs the password alone.
    pub totp_enabled: bool,
}

/// Set up two-factor sign-in: a new secret for the signed-in user's
/// authenticator app, pending until `POST /api/auth/totp/enable` gets a
/// code of it. Setting up again replaces a pending secret; while two-factor
/// sign-in is on it is 409 (turn it off first).
#[utoipa::path(
    post,
    path = "/api/auth/totp/setup",
    tag = "auth",
    security(("session_cookie" = [])),
    responses(
        (status = 200, description = "The pending secret", body = TotpSetup),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 409, description = "Two-factor sign-in is already on", body = GeneralError),
    )
)]
pub async fn totp_setup(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
) -> Result<AppJson<TotpSetup>, AppError> {
    let user_id = principal.user_id();
    let secret = new_secret();
    let sealed = state.auth.totp.seal(user_id, &secret)?;
    state
        .db
        .write(|tx| {
            Box::pin(async move { two_factor::set_pending_secret(tx, user_id, &sealed).await })
        })
        .await?;
    let (secret, otpauth_url) = provisioning(
        &secret,
        &state.settings.server.app_name,
        &principal.session.user.row.email,
    );
    Ok(AppJson(TotpSetup {
        secret,
        otpauth_url,
    }))
}

/// Turn two-factor sign-in on with a current code of the pending secret,
/// and the current password unless the session signed in within the last
/// 10 minutes; answers the recovery codes, shown this once. This session
/// counts as one that passed the second factor, the user's other sessions
/// end, and the owner is mailed a notice. A wrong code is 400 and a wrong
/// or missing password 403; both count as failed sign-ins of the account
/// (429 past `sign_in_max_failures`).
#[utoipa::path(
    post,
    path = "/api/auth/totp/enable",
    tag = "auth",
    security(("session_cookie" = [])),
    request_body = TotpCodeBody,
    responses(
        (status = 200, description = "On; the recovery codes", body = TotpEnabled),
        (status = 400, description = "The code is wrong", body = GeneralError),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "The session signed in over 10 minutes ago and the current password is wrong or missing (a user without a password signs in again)", body = GeneralError),
        (status = 409, description = "Nothing set up, or two-factor sign-in is already on", body = GeneralError),
        (status = 429, description = "Too many failed codes or sign-ins for this account or address", body = GeneralError),
    )
)]
pub async fn totp_enable(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
    ClientAddress(address): ClientAddress,
    AppJson(body): AppJson<TotpCodeBody>,
) -> Result<AppJson<TotpEnabled>, AppError> {
    let user_id = principal.user_id();
    let pending = match state.db.totp_secret(user_id).await? {
        Some(stored) if stored.enabled => {
            return Err(AppError::Conflict(
                "two-factor sign-in is already on".to_owned(),
            ));
        }
        Some(stored) => stored.sealed,
        None => {
            return Err(AppError::Conflict(
                "nothing is set up: POST /api/auth/totp/setup first".to_owned(),
            ));
        }
    };
    let attempt = counted_attempt(&state, &principal, address).await?;
    if !signed_in_recently(&principal) {
        let stored = principal.session.user.row.password_hash.as_deref();
        let given = body.password.as_deref().unwrap_or_default();
        if stored.is_none() || !state.auth.passwords.verify(given, stored).await? {
            return Err(attempt.failed(&state.auth, AppError::Forbidden));
        }
    }
    let secret = state.auth.totp.open(user_id, &pending)?;
    let Some(step) = matching_step(&secret, body.code.trim(), None) else {
        return Err(attempt.failed(&state.auth, wrong_code()));
    };
    let (recovery_codes, hashes) = new_recovery_codes();
    let notice = account_change_notice(
        &state.account_mail(),
        &principal.session.user,
        AccountChange::TotpEnabled,
    )?;
    let kept = principal.token_hash.clone();
    state
        .db
        .write(|tx| {
            Box::pin(async move {
                two_factor::enable(tx, user_id, &pending, step, &hashes).await?;
                sessions::record_second_factor(tx, &kept).await?;
                sessions::end_others(tx, user_id, &kept).await?;
                queue_notice(tx, &notice).await
            })
        })
        .await?;
    attempt.passed(&state.auth).await?;
    state.auth.session_lookups.forget_user(user_id);
    state.mail.wake();
    Ok(AppJson(TotpEnabled { recovery_codes }))
}

/// Turn two-factor sign-in off with a current code or an unused recovery
/// code; the secret and the recovery codes are deleted, and the owner is
/// mailed a notice. A wrong code is 400
/// and counts as a failed sign-in of the account (429 past
/// `sign_in_max_failures`).
#[utoipa::path(
    post,
    path = "/api/auth/totp/disable",
    tag = "auth",
    security(("session_cookie" = [])),
    request_body = TotpCodeBody,
    responses(
        (status = 200, description = "Off", body = TotpDisabled),
        (status = 400, description = "The code is wrong or was used already", body = GeneralError),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 409, description = "Two-factor sign-in is not on", body = GeneralError),
        (status = 429, description = "Too many failed codes or sign-ins for this account or address", body = GeneralError),
    )
)]
pub async fn totp_disable(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
    ClientAddress(address): ClientAddress,
    AppJson(body): AppJson<TotpCodeBody>,
) -> Result<AppJson<TotpDisabled>, AppError> {
    let user_id = principal.user_id();
    if !state
        .db
        .totp_secret(user_id)
        .await?
        .is_some_and(|stored| stored.enabled)
    {
        return Err(AppError::Conflict(
            "two-factor sign-in is not on".to_owned(),
        ));
    }
    let attempt = counted_attempt(&state, &principal, address).await?;
    if !use_code(&state.auth.db, &state.auth.totp, user_id, &body.code).await? {
        return Err(attempt.failed(&state.auth, wrong_code()));
    }
    let notice = account_change_notice(
        &state.account_mail(),
        &principal.session.user,
        AccountChange::TotpDisabled,
    )?;
    state
        .db
        .write(|tx| {
            Box::pin(async move {
                two_factor::disable(tx, user_id).await?;
                queue_notice(tx, &notice).await
            })
        })
        .await?;
    attempt.passed(&state.auth).await?;
    state.auth.session_lookups.forget_user(user_id);
    state.mail.wake();
    Ok(AppJson(TotpDisabled {
        totp_enabled: false,
    }))
}

/// A code checked for the signed-in user, counted on their account and its
/// codes as a sign-in attempt; 429 while either is locked.
async fn counted_attempt(
    state: &AppState,
    principal: &SessionPrincipal,
    address: Option<IpAddr>,
) -> Result<CountedAttempt, AppError> {
    let attempt = CountedAttempt::reserve(&state.auth, &principal.session.user.row.email, address)
        .await?
        .with_code(&state.auth)
        .await?;
    attempt.require_unlocked(&state.auth)?;
    Ok(attempt)
}

/// Whether the session signed in within [`RECENT_SIGN_IN_MILLIS`].
fn signed_in_recently(principal: &SessionPrincipal) -> bool {
    plaza_domain::time::now_millis().saturating_sub(principal.session.created_at)
        <= RECENT_SIGN_IN_MILLIS
}

fn wrong_code() -> AppError {
    AppError::BadRequest("the code is wrong, or it was used already".to_owned())
}
