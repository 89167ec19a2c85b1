//! Links mailed to a user's address, and what they do when they come back:
//! verifying the address (valid 24 hours) and resetting the password (valid
//! 1 hour). A link carries a random token of which only a hash is stored;
//! the token is used up by the statement that honours it, so a link works
//! once, and an expired, used or unknown one is refused alike. The token
//! and its mail are written in one unit of work with whatever causes them
//! (a sign-up, a request), and the mail is handed to the sender after it
//! commits.

use plaza_domain::auth_state;
use plaza_domain::email_tokens::{self, NewEmailToken, TokenPurpose};
use plaza_domain::outgoing_mail::{self, NewMail};
use plaza_domain::time::now_millis;
use plaza_domain::users::{self, User};
use plaza_domain::{Database, DomainError, Tx};

use super::SessionPrincipal;
use crate::http::error::AppError;
use crate::secrets::{hash_token, random_token};
use crate::services::mail::{Letter, MailKind, Mailer, compose};
use crate::services::session_lookups::SessionLookups;
use crate::services::templates::Templates;
use crate::settings::ServerSettings;

/// How long a verification link works.
pub const VERIFY_EMAIL_TTL_MILLIS: i64 = 24 * 3600 * 1000;
/// How long a password reset link works.
pub const RESET_PASSWORD_TTL_MILLIS: i64 = 3600 * 1000;

/// What mailed links and notices need: the database, the session lookups
/// that forget a user whose sessions a link ends, the sender to wake once a
/// mail is queued, the templates mail is written from, and the server's
/// settings (its name and base URL).
pub struct AccountMail<'a> {
    pub db: &'a Database,
    pub session_lookups: &'a SessionLookups,
    pub mailer: &'a Mailer,
    pub templates: &'a Templates,
    pub server: &'a ServerSettings,
}

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
        outbox: &AccountMail<'_>,
        purpose: TokenPurpose,
        email: &str,
        name: &str,
    ) -> Result<Self, AppError> {
        let token = random_token();
        let base = outbox.server.base_url.as_str().trim_end_matches('/');
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
            outbox.templates,
            outbox.server,
            &Letter {
                kind,
                recipient: &email,
                name,
                link: &link,
                valid_for,
                change: "",
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

/// How a mail greets someone whose address is not verified: words of
/// Plaza's own. Anyone may sign up with anyone's address, so a mail to an
/// unverified address carries no text a user chose.
pub const NEUTRAL_GREETING: &str = "there";

/// How a mail greets `user`: their name, else their username, while their
/// address is verified; [`NEUTRAL_GREETING`] before.
pub fn greeting_name(user: &User) -> String {
    if user.row.email_verified_at.is_none() {
        return NEUTRAL_GREETING.to_owned();
    }
    user.row
        .name
        .clone()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| user.row.username.clone())
}

/// A change to an account's security settings, which its owner is told of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountChange {
    PasswordChanged,
    PasswordReset,
    TotpEnabled,
    TotpDisabled,
}

impl AccountChange {
    fn describe(self) -> &'static str {
        match self {
            AccountChange::PasswordChanged => "its password was changed",
            AccountChange::PasswordReset => "its password was reset with a mailed link",
            AccountChange::TotpEnabled => "two-factor sign-in was turned on",
            AccountChange::TotpDisabled => "two-factor sign-in was turned off",
        }
    }
}

/// The mail that tells `user` of `change`, to their address verified or
/// not (greeted by [`greeting_name`]), with the link of the page where a
/// new password is asked for. Queue it in the unit of work of the change.
pub fn account_change_notice(
    outbox: &AccountMail<'_>,
    user: &User,
    change: AccountChange,
) -> Result<NewMail, AppError> {
    let base = outbox.server.base_url.as_str().trim_end_matches('/');
    let mut mail = compose(
        outbox.templates,
        outbox.server,
        &Letter {
            kind: MailKind::AccountChanged,
            recipient: &users::normalize_email(&user.row.email),
            name: &greeting_name(user),
            link: &format!("{base}/forgot-password"),
            valid_for: "",
            change: change.describe(),
        },
    )
    .map_err(AppError::internal)?;
    mail.user_id = Some(user.id());
    Ok(mail)
}

/// Queues `notice` ([`account_change_notice`]) in `tx`. Wake the sender
/// once `tx` commits.
pub async fn queue_notice(tx: &mut Tx<'_>, notice: &NewMail) -> Result<(), DomainError> {
    outgoing_mail::enqueue(tx, notice, now_millis()).await?;
    Ok(())
}

/// Mails `user` a new verification link.
pub async fn send_verification(outbox: &AccountMail<'_>, user: &User) -> Result<(), AppError> {
    let prepared = PreparedLink::new(
        outbox,
        TokenPurpose::VerifyEmail,
        &user.row.email,
        &greeting_name(user),
    )?;
    let user_id = user.id();
    outbox
        .db
        .write(|tx| Box::pin(async move { prepared.store(tx, user_id).await }))
        .await?;
    outbox.mailer.wake();
    Ok(())
}

/// An address just verified.
pub struct VerifiedAddress {
    pub user: User,
    /// When the password set before the address was verified was dropped
    /// ([`users::verify_email_securely`]): a reset token (1 hour, once)
    /// with which whoever opened the link chooses the password now.
    pub reset_token: Option<String>,
}

/// Uses a verification token: marks the address it was mailed to verified
/// as [`users::verify_email_securely`] does, `verifier` being the session
/// token hash of the request that opened the link. A used, expired or
/// unknown token (or one mailed to an address the user no longer has) is
/// [`invalid_link`].
pub async fn verify_email(
    outbox: &AccountMail<'_>,
    token: &str,
    verifier: Option<&SessionPrincipal>,
) -> Result<VerifiedAddress, AppError> {
    let token_hash = hash_token(token);
    let verifier = verifier.map(|principal| (principal.user_id(), principal.token_hash.clone()));
    let reset_token = random_token();
    let reset_token_hash = hash_token(&reset_token);
    let verified = outbox
        .db
        .write(|tx| {
            Box::pin(async move {
                let now = now_millis();
                let Some(redeemed) =
                    email_tokens::redeem(tx, TokenPurpose::VerifyEmail, &token_hash, now).await?
                else {
                    return Ok(None);
                };
                let kept = verifier
                    .as_ref()
                    .filter(|(user_id, _)| *user_id == redeemed.user_id)
                    .map(|(_, token_hash)| token_hash.as_str());
                let Some(verified) =
                    users::verify_email_securely(tx, redeemed.user_id, &redeemed.email, kept, now)
                        .await?
                else {
                    return Ok(None);
                };
                if verified.password_dropped {
                    email_tokens::issue(
                        tx,
                        &NewEmailToken {
                            token_hash: reset_token_hash,
                            purpose: TokenPurpose::ResetPassword,
                            user_id: redeemed.user_id,
                            email: redeemed.email,
                            created_at: now,
                            expires_at: now.saturating_add(RESET_PASSWORD_TTL_MILLIS),
                        },
                    )
                    .await?;
                }
                Ok(Some(verified))
            })
        })
        .await?;
    let verified = verified.ok_or_else(invalid_link)?;
    if verified.first_verification {
        outbox.session_lookups.forget_user(verified.user.id());
    }
    Ok(VerifiedAddress {
        reset_token: verified.password_dropped.then_some(reset_token),
        user: verified.user,
    })
}

/// The work of a password-forgotten request, done after it is answered:
/// mails a reset link to the active user with `email`, if there is one.
pub async fn send_reset_link(outbox: &AccountMail<'_>, email: &str) -> Result<(), AppError> {
    let Some(user) = outbox
        .db
        .user_by_email(email)
        .await?
        .filter(User::is_active)
    else {
        return Ok(());
    };
    let prepared = PreparedLink::new(
        outbox,
        TokenPurpose::ResetPassword,
        &user.row.email,
        &greeting_name(&user),
    )?;
    let user_id = user.id();
    outbox
        .db
        .write(|tx| Box::pin(async move { prepared.store(tx, user_id).await }))
        .await?;
    outbox.mailer.wake();
    Ok(())
}

/// Who a reset token belongs to, if it is still good: its address. Asked
/// before the password is hashed, so an unusable token costs no hash.
pub async fn reset_token_email(outbox: &AccountMail<'_>, token: &str) -> Result<String, AppError> {
    outbox
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

/// Uses a reset token: sets the password (already hashed), ends every
/// session, admin token and other reset link of the user and the sign-in
/// lock of the account, and queues the notice of the change, in one unit
/// of work. A used, expired or unknown
/// token is [`invalid_link`].
pub async fn reset_password(
    outbox: &AccountMail<'_>,
    token: &str,
    password_hash: String,
) -> Result<(), AppError> {
    let token_hash = hash_token(token);
    let owner = outbox
        .db
        .email_token(TokenPurpose::ResetPassword, &token_hash, now_millis())
        .await?
        .ok_or_else(invalid_link)?;
    let user = outbox.db.user_by_id(owner.user_id).await?;
    let notice = account_change_notice(outbox, &user, AccountChange::PasswordReset)?;
    let throttle_key = super::signin::account_throttle_key(&user.row.email);
    let reset = outbox
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
                queue_notice(tx, &notice).await?;
                // Whoever holds the mailbox is the owner: strangers' wrong
                // passwords no longer lock them out.
                auth_state::clear_sign_in_failures(tx, &throttle_key).await?;
                Ok(Some(redeemed.user_id))
            })
        })
        .await?;
    let user_id = reset.ok_or_else(invalid_link)?;
    outbox.session_lookups.forget_user(user_id);
    outbox.mailer.wake();
    Ok(())
}
