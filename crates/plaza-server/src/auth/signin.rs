//! Signing in: credentials with throttling, provider identities with
//! account linking, and starting sessions.

use plaza_domain::accounts::ProviderIdentity;
use plaza_domain::sessions::SessionClient;
use plaza_domain::users::{NewUser, Role, User, normalize_email};

use super::tokens::{hash_token, random_token};
use crate::error::AppError;
use crate::state::AppState;

/// A session that was just created; the token goes into the cookie and is
/// never stored.
pub struct StartedSession {
    pub token: String,
    pub expires_at: i64,
    pub user: User,
}

/// Creates a session for `user` and counts the sign-in.
pub async fn start_session(
    state: &AppState,
    user: User,
    client: SessionClient,
) -> Result<StartedSession, AppError> {
    let token = random_token();
    state
        .db
        .create_session(
            &hash_token(&token),
            user.id(),
            state.auth.session_ttl_millis,
            &client,
        )
        .await?;
    state.db.record_login(user.id()).await?;
    Ok(StartedSession {
        token,
        expires_at: plaza_domain::time::now_millis() + state.auth.session_ttl_millis,
        user,
    })
}

/// Addresses may fail more often than one account: several people can share one.
const ADDRESS_FAILURE_FACTOR: u32 = 4;

/// Checks an email and password. Unknown emails and wrong passwords get the
/// same answer after the same work; too many failures for the account or the
/// address within the lockout window are refused with 429 before any check.
pub async fn sign_in_with_password(
    state: &AppState,
    email: &str,
    password: &str,
    client: SessionClient,
) -> Result<StartedSession, AppError> {
    let settings = &state.settings;
    let window = i64::try_from(settings.sign_in_lockout_secs).unwrap_or(i64::MAX / 1000) * 1000;
    let account_key = format!("email:{}", normalize_email(email));
    let address_key = client.ip_address.as_ref().map(|ip| format!("ip:{ip}"));
    let max = i64::from(settings.sign_in_max_failures);
    if state.db.sign_in_failures(&account_key, window).await? >= max {
        return Err(AppError::RateLimited);
    }
    if let Some(key) = &address_key
        && state.db.sign_in_failures(key, window).await? >= max * i64::from(ADDRESS_FAILURE_FACTOR)
    {
        return Err(AppError::RateLimited);
    }
    let user = state.db.user_by_email(email).await?;
    let hash = user
        .as_ref()
        .and_then(|user| user.row.password_hash.as_deref());
    let matched = state.auth.passwords.verify(password, hash).await?;
    match user {
        Some(user) if matched && user.is_active() => {
            state.db.clear_sign_in_failures(&account_key).await?;
            start_session(state, user, client).await
        }
        _ => {
            state
                .db
                .record_sign_in_failure(&account_key, window)
                .await?;
            if let Some(key) = &address_key {
                state.db.record_sign_in_failure(key, window).await?;
            }
            Err(AppError::InvalidCredentials)
        }
    }
}

/// Why a provider sign-in cannot go on, as a code for the sign-in page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderRefusal {
    /// The provider gave no email, and Plaza needs one per user.
    EmailRequired,
    /// The email belongs to a user here, but the provider does not vouch
    /// for it, so linking would let anyone claim that account.
    EmailNotVerified,
    AccountDisabled,
}

impl ProviderRefusal {
    pub fn code(self) -> &'static str {
        match self {
            ProviderRefusal::EmailRequired => "email_required",
            ProviderRefusal::EmailNotVerified => "account_not_linked",
            ProviderRefusal::AccountDisabled => "account_disabled",
        }
    }
}

/// Finds or creates the user for a provider identity: a known account signs
/// its user in; a verified email that matches a user links to that user; an
/// unverified one never links; otherwise a new user is created.
pub async fn user_for_provider_identity(
    state: &AppState,
    identity: ProviderIdentity,
) -> Result<Result<User, ProviderRefusal>, AppError> {
    let db = &state.db;
    let identity = &identity;
    if let Some(account) = db
        .account_by_provider(&identity.provider, &identity.provider_account_id)
        .await?
    {
        db.touch_account(account.id, identity).await?;
        let user = db.user_by_id(account.user_id).await?;
        return Ok(if user.is_active() {
            Ok(user)
        } else {
            Err(ProviderRefusal::AccountDisabled)
        });
    }
    let Some(email) = identity.email.as_deref() else {
        return Ok(Err(ProviderRefusal::EmailRequired));
    };
    if let Some(existing) = db.user_by_email(email).await? {
        if !identity.email_verified {
            return Ok(Err(ProviderRefusal::EmailNotVerified));
        }
        if !existing.is_active() {
            return Ok(Err(ProviderRefusal::AccountDisabled));
        }
        db.link_account(existing.id(), identity).await?;
        db.mark_email_verified(existing.id()).await?;
        return Ok(Ok(existing));
    }
    let user = db
        .create_user(NewUser {
            email: email.to_owned(),
            email_verified: identity.email_verified,
            username: None,
            name: identity.name.clone(),
            image: identity.image.clone(),
            password_hash: None,
            role: Role::User,
        })
        .await?;
    db.link_account(user.id(), identity).await?;
    Ok(Ok(user))
}
