//! Links mailed to a user's address, and what they do when they come back:
//! verifying the address (valid 24 hours) and resetting the password (valid
//! 1 hour). A link carries a random token of which only a hash is stored;
//! the token is used up by the statement that honours it, so a link works
//! once, and an expired, used or unknown one is refused alike. The token
//! and its mail are written in one unit of work with whatever causes them
//! (a sign-up, a request), and the mail is handed to the sender after it
//! commits.

use plaza_domain::email_tokens::{self, NewEmailToken, TokenPurpose};
use plaza_domain::outgoing_mail::{self, NewMail};
use plaza_domain::time::now_millis;
use plaza_domain::users::{self, User};
use plaza_domain::{DomainError, Tx};

use super::tokens::{hash_token, random_token};
use crate::http::error::AppError;
use crate::services::mail::{Letter, MailKind, compose};
use crate::state::AppState;

/// How long a verification link works.
pub const VERIFY_EMAIL_TTL_MILLIS: i64 = 24 * 3600 * 1000;
/// How long a password reset link works.
pub const RESET_PASSWORD_TTL_MILLIS: i64 = 3600 * 1000;

/// The answer to a used, expired or unknown link.
pub fn invalid_link() -> AppError {
    AppError::BadRequest("the link is invalid, expired or already used".to_owned())
}

/// A link and its mail, ready to be stored for a user.
pub struct PreparedLink {
    token: NewEmailToken,
    mail: NewMail,
}

impl PreparedLink {
    /// A new token for `purpose` and the mail that carries its link to
    /// `email`, greeting the recipient as `name`.
    pub fn new(
        state: &AppState,
        purpose: TokenPurpose,
        email: &str,
        name: &str,
    ) -> Result<Self, AppError> {
        let token = random_token();
        let base = state
            .settings
            .server
            .base_url
            .as_str()
            .trim_end_matches('/');
        let (kind, link, ttl_millis, valid_for) = match purpose {
            TokenPurpose::VerifyEmail => (
                MailKind::VerifyEmail,
                format!("{base}/api/auth/verify-email?token={token}"),
                VERIFY_EMAIL_TTL_MILLIS,
                "24 hours",
            ),
            TokenPurpose::ResetPassword => (
                MailKind::ResetPassword,
                format!("{base}/reset-password?token={token}"),
                RESET_PASSWORD_TTL_MILLIS,
                "1 hour",
            ),
        };
        let email = users::normalize_email(email);
        let mail = compose(
            &state.templates,
            &state.settings.server,
            &Letter {
                kind,
                recipient: &email,
                name,
                link: &link,
                valid_for,
            },
        )
        .map_err(AppError::internal)?;
        let now = now_millis();
        Ok(PreparedLink {
            token: NewEmailToken {
                token_hash: hash_token(&token),
                purpose,
                // Set when the link is stored for its user.
                user_id: 0,
                email,
                created_at: now,
                expires_at: now.saturating_add(ttl_millis),
            },
            mail,
        })
    }

    /// Stores the token for `user_id` and queues its mail, in `tx`. Wake
    /// the sender ([`crate::services::mail::Mailer::wake`]) once `tx`
    /// commits.
    pub async fn store(mut self, tx: &mut Tx<'_>, user_id: i64) -> Result<(), DomainError> {
        self.token.user_id = user_id;
        self.mail.user_id = Some(user_id);
        email_tokens::issue(tx, &self.token).await?;
        outgoing_mail::enqueue(tx, &self.mail, self.token.created_at).await?;
        Ok(())
    }
}

/// How a mail greets `user`: their name, else their username.
pub fn greeting_name(user: &User) -> String {
    user.row
        .name
        .clone()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| user.row.username.clone())
}

/// Mails `user` a new verification link.
pub async fn send_verification(state: &AppState, user: &User) -> Result<(), AppError> {
    let prepared = PreparedLink::new(
        state,
        TokenPurpose::VerifyEmail,
        &user.row.email,
        &greeting_name(user),
    )?;
    let user_id = user.id();
    state
        .db
        .write(|tx| Box::pin(async move { prepared.store(tx, user_id).await }))
        .await?;
    state.mail.wake();
    Ok(())
}

/// Uses a verification token: marks the address it was mailed to verified
/// and answers the user; a used, expired or unknown token (or one mailed
/// to an address the user no longer has) is [`invalid_link`].
pub async fn verify_email(state: &AppState, token: &str) -> Result<User, AppError> {
    let token_hash = hash_token(token);
    let verified = state
        .db
        .write(|tx| {
            Box::pin(async move {
                let now = now_millis();
                match email_tokens::redeem(tx, TokenPurpose::VerifyEmail, &token_hash, now).await? {
                    Some(redeemed) => {
                        users::mark_email_verified(tx, redeemed.user_id, &redeemed.email, now).await
                    }
                    None => Ok(None),
                }
            })
        })
        .await?;
    verified.ok_or_else(invalid_link)
}

/// The work of a password-forgotten request, done after it is answered:
/// mails a reset link to the active user with `email`, if there is one.
pub async fn send_reset_link(state: &AppState, email: &str) -> Result<(), AppError> {
    let Some(user) = state.db.user_by_email(email).await?.filter(User::is_active) else {
        return Ok(());
    };
    let prepared = PreparedLink::new(
        state,
        TokenPurpose::ResetPassword,
        &user.row.email,
        &greeting_name(&user),
    )?;
    let user_id = user.id();
    state
        .db
        .write(|tx| Box::pin(async move { prepared.store(tx, user_id).await }))
        .await?;
    state.mail.wake();
    Ok(())
}

/// Who a reset token belongs to, if it is still good: its address, for the
/// per-email rate limit before the password is hashed.
pub async fn reset_token_email(state: &AppState, token: &str) -> Result<String, AppError> {
    state
        .db
        .email_token(
            TokenPurpose::ResetPassword,
            &hash_token(token),
            now_millis(),
        )
        .await?
        .map(|owner| owner.email)
        .ok_or_else(invalid_link)
}

/// Uses a reset token: sets the password (already hashed) and ends every
/// session, admin token and other reset link of the user, in one unit of
/// work. A used, expired or unknown token is [`invalid_link`].
pub async fn reset_password(
    state: &AppState,
    token: &str,
    password_hash: String,
) -> Result<(), AppError> {
    let token_hash = hash_token(token);
    let reset = state
        .db
        .write(|tx| {
            Box::pin(async move {
                let now = now_millis();
                let Some(redeemed) =
                    email_tokens::redeem(tx, TokenPurpose::ResetPassword, &token_hash, now).await?
                else {
                    return Ok(None);
                };
                users::reset_password(tx, redeemed.user_id, &password_hash, now).await?;
                email_tokens::revoke_all(tx, redeemed.user_id, TokenPurpose::ResetPassword).await?;
                Ok(Some(redeemed.user_id))
            })
        })
        .await?;
    let user_id = reset.ok_or_else(invalid_link)?;
    state.auth.session_lookups.forget_user(user_id);
    Ok(())
}
