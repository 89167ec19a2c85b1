//! Signing in: credentials with throttling, the second factor of users
//! with two-factor sign-in on, provider identities with account linking,
//! and starting sessions.

use std::net::IpAddr;

use plaza_domain::accounts::{self, ProviderIdentity};
use plaza_domain::auth_state;
use plaza_domain::sessions::{self, SessionClient, SignInProof};
use plaza_domain::text::{
    MAX_IMAGE_URL_CHARS, MAX_NAME_CHARS, is_email_address, is_refused_in_line, is_web_url,
};
use plaza_domain::two_factor::SecondFactorChallenge;
use plaza_domain::users::{self, NewUser, Role, User, UserStatus, normalize_email};

use super::identity::Auth;
use super::password::MAX_PASSWORD_LENGTH;
use super::two_factor;
use crate::http::error::AppError;
use crate::secrets::{hash_token, random_token};

/// A session that was just created; the token goes into the cookie and is
/// never stored.
pub struct StartedSession {
    pub token: String,
    pub expires_at: i64,
    pub user: User,
}

/// Creates a session for `user`, signed in with `proof`, and counts the
/// sign-in.
pub async fn start_session(
    auth: &Auth,
    user: User,
    proof: SignInProof,
    client: SessionClient,
) -> Result<StartedSession, AppError> {
    let token = random_token();
    let token_hash = hash_token(&token);
    let user_id = user.id();
    let ttl_millis = auth.sessions.ttl_millis;
    auth.db
        .write(|tx| {
            Box::pin(async move {
                sessions::create(tx, &token_hash, user_id, ttl_millis, proof, &client).await?;
                users::record_login(tx, user_id).await
            })
        })
        .await?;
    Ok(StartedSession {
        token,
        expires_at: plaza_domain::time::now_millis() + auth.sessions.ttl_millis,
        user,
    })
}

/// Addresses may fail more often than one account: several people can share one.
const ADDRESS_FAILURE_FACTOR: u32 = 4;

/// How long a sign-in waits for its second factor.
pub const SECOND_FACTOR_TTL_MILLIS: i64 = 5 * 60 * 1000;

/// One attempt at proving who someone is (a password, a second-factor
/// code), counted for the account and the client address before anything
/// is checked, so parallel guesses cannot all slip under the limit; a code
/// is counted again on the account's second-factor key
/// ([`CountedAttempt::with_code`]). Past the account's limit within the
/// lockout window the account is locked: the attempt is 429 even when it
/// would succeed, except a sign-in that brings the password and a code
/// together and gets both right while the codes are not locked
/// (strangers' wrong passwords must not lock out an owner who has
/// two-factor sign-in; while locked, a right password and a wrong one get
/// the same 429, and wrong codes lock the codes). A password reset ends
/// the account's lock. Past the address's limit (counted by the rate
/// limiter's prefix: an IPv6 /64), a failure is 429 but a success still
/// goes through: many people can share one address, and one guesser
/// behind it must not lock them all out.
pub struct CountedAttempt {
    email: String,
    account_key: String,
    address_key: Option<String>,
    /// Set once a code is counted.
    code_key: Option<String>,
    address_locked: bool,
    account_locked: bool,
    code_locked: bool,
}

impl CountedAttempt {
    /// Counts an attempt on the account of `email` from `address`, committed
    /// in a unit of its own before anything is checked: a failed attempt is
    /// never rolled back.
    pub async fn reserve(
        auth: &Auth,
        email: &str,
        address: Option<IpAddr>,
    ) -> Result<Self, AppError> {
        let window = lockout_window(auth);
        let account_key = account_throttle_key(email);
        let address_key = address.map(|ip| {
            format!(
                "ip:{}",
                crate::http::rate_limit::address::counted_prefix(ip)
            )
        });
        let (account_attempts, address_attempts) = {
            let (account_key, address_key) = (account_key.clone(), address_key.clone());
            auth.db
                .write(|tx| {
                    Box::pin(async move {
                        let account =
                            auth_state::reserve_sign_in_attempt(tx, &account_key, window).await?;
                        let address = match &address_key {
                            Some(key) => {
                                auth_state::reserve_sign_in_attempt(tx, key, window).await?
                            }
                            None => 0,
                        };
                        Ok((account, address))
                    })
                })
                .await?
        };
        let max = max_failures(auth);
        Ok(CountedAttempt {
            email: email.to_owned(),
            account_key,
            address_key,
            code_key: None,
            address_locked: address_attempts > max * i64::from(ADDRESS_FAILURE_FACTOR),
            account_locked: account_attempts > max,
            code_locked: false,
        })
    }

    /// Counts the second-factor code this attempt brings on the account's
    /// code key too, before it is checked.
    pub async fn with_code(mut self, auth: &Auth) -> Result<Self, AppError> {
        let window = lockout_window(auth);
        let code_key = format!("totp:{}", normalize_email(&self.email));
        let attempts = {
            let code_key = code_key.clone();
            auth.db
                .write(|tx| {
                    Box::pin(async move {
                        auth_state::reserve_sign_in_attempt(tx, &code_key, window).await
                    })
                })
                .await?
        };
        self.code_locked = attempts > max_failures(auth);
        self.code_key = Some(code_key);
        Ok(self)
    }

    /// 429 while the account or its codes are locked.
    pub fn require_unlocked(&self, auth: &Auth) -> Result<(), AppError> {
        if self.account_locked || self.code_locked {
            Err(locked_out(auth))
        } else {
            Ok(())
        }
    }

    /// The answer to a failed attempt: `failure`, or 429 while the account
    /// is locked or past the address's limit. The attempt stays counted.
    pub fn failed(&self, auth: &Auth, failure: AppError) -> AppError {
        if self.address_locked || self.account_locked {
            locked_out(auth)
        } else {
            failure
        }
    }

    /// The attempt signed someone in: the account's failures (and its
    /// codes') are forgotten and the address gets its attempt back.
    pub async fn succeeded(self, auth: &Auth) -> Result<(), AppError> {
        let CountedAttempt {
            account_key,
            address_key,
            code_key,
            ..
        } = self;
        auth.db
            .write(|tx| {
                Box::pin(async move {
                    auth_state::clear_sign_in_failures(tx, &account_key).await?;
                    if let Some(key) = &code_key {
                        auth_state::clear_sign_in_failures(tx, key).await?;
                    }
                    if let Some(key) = &address_key {
                        auth_state::release_sign_in_attempt(tx, key).await?;
                    }
                    Ok(())
                })
            })
            .await?;
        Ok(())
    }

    /// The attempt proved what it was asked to (a right password still
    /// waiting for its code, a code that turned two-factor sign-in on or
    /// off) without signing anyone in: the account, its codes and the
    /// address get it back, and earlier failures stay counted, so a right
    /// password between wrong codes does not reset their count.
    pub async fn passed(self, auth: &Auth) -> Result<(), AppError> {
        let CountedAttempt {
            account_key,
            address_key,
            code_key,
            ..
        } = self;
        auth.db
            .write(|tx| {
                Box::pin(async move {
                    for key in [Some(&account_key), code_key.as_ref(), address_key.as_ref()]
                        .into_iter()
                        .flatten()
                    {
                        auth_state::release_sign_in_attempt(tx, key).await?;
                    }
                    Ok(())
                })
            })
            .await?;
        Ok(())
    }
}

/// How long failed sign-ins count, in milliseconds.
fn lockout_window(auth: &Auth) -> i64 {
    i64::try_from(auth.settings.sign_in_lockout_secs).unwrap_or(i64::MAX / 1000) * 1000
}

/// Failures an account (or its codes) may have within the window.
fn max_failures(auth: &Auth) -> i64 {
    i64::from(auth.settings.sign_in_max_failures)
}

/// The key the failed sign-ins of the account of `email` are counted under.
pub fn account_throttle_key(email: &str) -> String {
    format!("email:{}", normalize_email(email))
}

/// The address a session's client connected from.
fn client_address(client: &SessionClient) -> Option<IpAddr> {
    client.ip_address.as_deref().and_then(|ip| ip.parse().ok())
}

/// Sign-in refused until the lockout window ends (it ends at most this
/// long from now).
fn locked_out(auth: &Auth) -> AppError {
    let settings = &auth.settings;
    AppError::RateLimited {
        retry_after_secs: settings.sign_in_lockout_secs,
        limit: settings.sign_in_max_failures,
        reset_after_secs: settings.sign_in_lockout_secs,
    }
}

/// What a right password leads to.
pub enum PasswordSignIn {
    /// Signed in.
    Started(StartedSession),
    /// The user has two-factor sign-in on and no code came with the
    /// password.
    SecondFactorNeeded(User),
}

/// Checks an email and password, and for a user with two-factor sign-in on
/// the `second_factor` code with them (a current code or an unused
/// recovery code). Unknown emails and wrong passwords get the same answer
/// after the same work; a wrong code gets that answer too. Every attempt is
/// counted ([`CountedAttempt`]); a right password without a code is given
/// back, since it guessed nothing. While the account is locked, only a
/// right password with a right code signs in; anything else is 429.
pub async fn sign_in_with_password(
    auth: &Auth,
    email: &str,
    password: &str,
    second_factor: Option<&str>,
    client: SessionClient,
) -> Result<PasswordSignIn, AppError> {
    if password.len() > MAX_PASSWORD_LENGTH || email.chars().any(char::is_control) {
        // No account can match: refused without touching the database.
        return Err(AppError::InvalidCredentials);
    }
    let attempt = CountedAttempt::reserve(auth, email, client_address(&client)).await?;
    let second_factor = second_factor.filter(|code| !code.trim().is_empty());
    if attempt.account_locked && second_factor.is_none() {
        return Err(locked_out(auth));
    }
    let user = auth.db.user_by_email(email).await?;
    let hash = user
        .as_ref()
        .and_then(|user| user.row.password_hash.as_deref());
    let matched = auth.passwords.verify(password, hash).await?;
    let user = match user {
        Some(user) if matched && user.is_active() => user,
        // Told only to whoever knows the password: it guessed nothing.
        Some(user) if matched && user.status == UserStatus::Pending => {
            attempt.passed(auth).await?;
            return Err(AppError::PendingApproval);
        }
        _ => return Err(attempt.failed(auth, AppError::InvalidCredentials)),
    };
    let (attempt, proof) = if user.has_totp() {
        let Some(code) = second_factor else {
            attempt.passed(auth).await?;
            return Ok(PasswordSignIn::SecondFactorNeeded(user));
        };
        let attempt = attempt.with_code(auth).await?;
        if attempt.code_locked {
            return Err(locked_out(auth));
        }
        if !two_factor::use_code(&auth.db, &auth.totp, user.id(), code).await? {
            return Err(attempt.failed(auth, AppError::InvalidCredentials));
        }
        (attempt, SignInProof::SecondFactor)
    } else if attempt.account_locked {
        return Err(locked_out(auth));
    } else {
        (attempt, SignInProof::FirstFactor)
    };
    attempt.succeeded(auth).await?;
    start_session(auth, user, proof, client)
        .await
        .map(PasswordSignIn::Started)
}

/// Keeps a sign-in of `user_id` waiting for its second factor, which goes
/// to `callback_url` once signed in; answers the token for the browser's
/// cookie (only its hash is stored).
pub async fn start_second_factor(
    auth: &Auth,
    user_id: i64,
    callback_url: String,
) -> Result<String, AppError> {
    let token = random_token();
    let token_hash = hash_token(&token);
    let challenge = SecondFactorChallenge {
        user_id,
        callback_url,
        expires_at: plaza_domain::time::now_millis() + SECOND_FACTOR_TTL_MILLIS,
    };
    auth.db
        .write(|tx| {
            Box::pin(async move {
                plaza_domain::two_factor::start_challenge(tx, &token_hash, &challenge).await
            })
        })
        .await?;
    Ok(token)
}

/// A sign-in finished by its second factor.
pub struct SecondStepDone {
    pub session: StartedSession,
    /// Where the sign-in was to go.
    pub callback_url: String,
}

/// Finishes the sign-in waiting under the cookie token `challenge` with
/// `code`, counted as an attempt on its user's account ([`CountedAttempt`]):
/// a wrong code is 401 and the sign-in keeps waiting for a right one.
/// `None` when no sign-in waits under that token (expired, finished, or
/// never started): the person starts again.
pub async fn finish_second_factor(
    auth: &Auth,
    challenge: &str,
    code: &str,
    client: SessionClient,
) -> Result<Option<SecondStepDone>, AppError> {
    let token_hash = hash_token(challenge);
    let Some(waiting) = auth.db.second_factor_challenge(&token_hash).await? else {
        return Ok(None);
    };
    let user = auth.db.user_by_id(waiting.user_id).await?;
    if !user.is_active() || !user.has_totp() {
        return Ok(None);
    }
    let attempt = CountedAttempt::reserve(auth, &user.row.email, client_address(&client))
        .await?
        .with_code(auth)
        .await?;
    attempt.require_unlocked(auth)?;
    if !two_factor::use_code(&auth.db, &auth.totp, user.id(), code).await? {
        return Err(attempt.failed(auth, AppError::InvalidCredentials));
    }
    let ended = auth
        .db
        .write(|tx| {
            Box::pin(async move { plaza_domain::two_factor::end_challenge(tx, &token_hash).await })
        })
        .await?;
    if !ended {
        return Ok(None);
    }
    attempt.succeeded(auth).await?;
    let session = start_session(auth, user, SignInProof::SecondFactor, client).await?;
    Ok(Some(SecondStepDone {
        session,
        callback_url: waiting.callback_url,
    }))
}

/// Why a provider sign-in cannot go on, as a code for the sign-in page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderRefusal {
    /// The provider gave no usable email, and Plaza needs one per user.
    EmailRequired,
    /// The email belongs to a user here, but either the provider does not
    /// vouch for it or the user's own address was never verified (anyone may
    /// sign up with someone else's email): linking would hand the account to
    /// whoever registered it first. The owner links from a signed-in session.
    AccountNotLinked,
    AccountDisabled,
    /// Linking from a session: that provider account belongs to another user.
    AccountInUse,
    /// The provider's answer lacks a usable account id.
    ProfileUnusable,
    /// No account exists for the identity, and registrations are not
    /// open (approval, invite or closed mode): provider sign-ins create no
    /// accounts then.
    RegistrationClosed,
    /// No account exists for the identity, and its email is at a blocked
    /// domain.
    EmailDomainBlocked,
    /// No account exists for the identity, and the client's address is
    /// blocked for sign-ups.
    IpBlocked,
}

impl ProviderRefusal {
    pub fn code(self) -> &'static str {
        match self {
            ProviderRefusal::EmailRequired => "email_required",
            ProviderRefusal::AccountNotLinked => "account_not_linked",
            ProviderRefusal::AccountDisabled => "account_disabled",
            ProviderRefusal::AccountInUse => "account_in_use",
            ProviderRefusal::ProfileUnusable => "profile_unusable",
            ProviderRefusal::RegistrationClosed => "registration_closed",
            ProviderRefusal::EmailDomainBlocked => "email_domain_blocked",
            ProviderRefusal::IpBlocked => "ip_blocked",
        }
    }
}

/// Longest provider account id kept.
const MAX_PROVIDER_ACCOUNT_ID_CHARS: usize = 255;

/// Provider profiles are input like any request body: they get the rules
/// `PUT /api/users/{id}` applies. What fails them is dropped (an email, an
/// image) or cut (a name), never stored; an unusable account id refuses the
/// sign-in.
pub fn checked_identity(identity: ProviderIdentity) -> Result<ProviderIdentity, ProviderRefusal> {
    let account_id = identity.provider_account_id.trim();
    if account_id.is_empty()
        || account_id.chars().count() > MAX_PROVIDER_ACCOUNT_ID_CHARS
        || account_id.chars().any(is_refused_in_line)
    {
        return Err(ProviderRefusal::ProfileUnusable);
    }
    let email = identity
        .email
        .map(|email| email.trim().to_owned())
        .filter(|email| is_email_address(email));
    let name = identity.name.and_then(|name| {
        let kept: String = name.chars().filter(|c| !is_refused_in_line(*c)).collect();
        let kept: String = kept.trim().chars().take(MAX_NAME_CHARS).collect();
        let kept = kept.trim_end().to_owned();
        (!kept.is_empty()).then_some(kept)
    });
    let image = identity
        .image
        .filter(|image| is_web_url(image, MAX_IMAGE_URL_CHARS));
    Ok(ProviderIdentity {
        provider_account_id: account_id.to_owned(),
        email_verified: identity.email_verified && email.is_some(),
        email,
        name,
        image,
        ..identity
    })
}

/// Finds or creates the user for a provider identity: a known account signs
/// its user in; a sign-in started from a session (`link_to`) links to that
/// user; a provider-verified email that matches a user whose own email is
/// verified links to that user; any other match is refused; otherwise a new
/// user is created, when `new_accounts` allows one (the registration mode
/// and the IP blocks, as the caller found them) and the email's domain is
/// not blocked.
pub async fn user_for_provider_identity(
    auth: &Auth,
    identity: ProviderIdentity,
    link_to: Option<i64>,
    new_accounts: Result<(), ProviderRefusal>,
) -> Result<Result<User, ProviderRefusal>, AppError> {
    let identity = match checked_identity(identity) {
        Ok(identity) => identity,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let db = &auth.db;
    let identity = &identity;
    if let Some(account) = db
        .account_by_provider(&identity.provider, &identity.provider_account_id)
        .await?
    {
        if link_to.is_some_and(|user_id| user_id != account.user_id) {
            return Ok(Err(ProviderRefusal::AccountInUse));
        }
        let (account_id, touched) = (account.id, identity.clone());
        db.write(|tx| Box::pin(async move { accounts::touch(tx, account_id, &touched).await }))
            .await?;
        let user = db.user_by_id(account.user_id).await?;
        return Ok(if user.is_active() {
            Ok(user)
        } else {
            Err(ProviderRefusal::AccountDisabled)
        });
    }
    if let Some(user_id) = link_to {
        let user = db.user_by_id(user_id).await?;
        if !user.is_active() {
            return Ok(Err(ProviderRefusal::AccountDisabled));
        }
        link(db, user.id(), identity).await?;
        return Ok(Ok(user));
    }
    let Some(email) = identity.email.as_deref() else {
        return Ok(Err(ProviderRefusal::EmailRequired));
    };
    if let Some(existing) = db.user_by_email(email).await? {
        if !identity.email_verified || existing.row.email_verified_at.is_none() {
            return Ok(Err(ProviderRefusal::AccountNotLinked));
        }
        if !existing.is_active() {
            return Ok(Err(ProviderRefusal::AccountDisabled));
        }
        link(db, existing.id(), identity).await?;
        return Ok(Ok(existing));
    }
    if let Err(refusal) = new_accounts {
        return Ok(Err(refusal));
    }
    if db.email_domain_block_for(email).await?.is_some() {
        return Ok(Err(ProviderRefusal::EmailDomainBlocked));
    }
    let new = NewUser {
        email: email.to_owned(),
        email_verified: identity.email_verified,
        username: None,
        name: identity.name.clone(),
        image: identity.image.clone(),
        password_hash: None,
        role: Role::User,
    };
    // The new user and their link commit together: a failure between the
    // two cannot leave an account no provider can sign in to.
    let identity = identity.clone();
    let user = db
        .write(|tx| {
            Box::pin(async move {
                let user = plaza_domain::users::create(tx, new).await?;
                accounts::link(tx, user.id(), &identity).await?;
                Ok(user)
            })
        })
        .await?;
    Ok(Ok(user))
}

/// Links a provider identity to a user, as one unit of work.
async fn link(
    db: &plaza_domain::Database,
    user_id: i64,
    identity: &ProviderIdentity,
) -> Result<(), AppError> {
    let identity = identity.clone();
    db.write(|tx| Box::pin(async move { accounts::link(tx, user_id, &identity).await }))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(email: &str, name: &str, image: &str) -> ProviderIdentity {
        ProviderIdentity {
            provider: "idp".to_owned(),
            provider_account_id: "1".to_owned(),
            email: Some(email.to_owned()),
            email_verified: true,
            name: Some(name.to_owned()),
            image: Some(image.to_owned()),
        }
    }

    #[test]
    fn provider_profiles_get_the_rules_of_user_input() {
        let long_name = format!("N\0{}", "x".repeat(700));
        let checked = checked_identity(identity(
            "a\0b@example.com",
            &long_name,
            "javascript:alert(1)",
        ))
        .unwrap();
        assert_eq!(checked.email, None, "an email with NUL is dropped");
        assert!(!checked.email_verified);
        let name = checked.name.unwrap();
        assert_eq!(name.chars().count(), MAX_NAME_CHARS);
        assert!(!name.contains('\0'));
        assert_eq!(checked.image, None, "only http(s) images are kept");

        let fine = checked_identity(identity(
            "Ada@Example.com",
            " Ada \u{202E}Lovelace ",
            "https://img.example/a.png",
        ))
        .unwrap();
        assert_eq!(fine.email.as_deref(), Some("Ada@Example.com"));
        assert_eq!(fine.name.as_deref(), Some("Ada Lovelace"));
        assert_eq!(fine.image.as_deref(), Some("https://img.example/a.png"));

        let mut bad_id = identity("a@b.co", "A", "https://x.example/");
        bad_id.provider_account_id = "1\n2".to_owned();
        assert_eq!(
            checked_identity(bad_id).unwrap_err(),
            ProviderRefusal::ProfileUnusable
        );
    }
}
