//! The `/api/auth/*` surface: sign-in pages and flows, two-factor sign-in,
//! sessions, linked accounts, admin tokens, and the mailed links of email
//! verification and password reset (with their pages).

mod flow;
mod linked_accounts;
mod mailed_links;
mod own_sessions;
mod password;
mod providers;
mod sign_in;
mod tokens;
mod two_factor;

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub use linked_accounts::*;
pub use mailed_links::*;
pub use own_sessions::*;
pub use password::*;
pub use providers::*;
pub use sign_in::*;
pub use tokens::*;
pub use two_factor::*;

pub(crate) use flow::is_form;

/// The routes that start a sign-in or check a second factor: they hash
/// passwords, count attempts and write rows, so their limit fails closed.
pub fn sign_in_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(
            signin_page,
            signin_with_credentials
        ))
        .routes(crate::documented_routes!(
            signin_with_provider,
            signin_with_provider_form
        ))
        .routes(crate::documented_routes!(
            provider_callback,
            credentials_callback
        ))
        .routes(crate::documented_routes!(totp_setup))
        .routes(crate::documented_routes!(totp_enable))
        .routes(crate::documented_routes!(totp_disable))
}

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(signout_page, signout))
        .routes(crate::documented_routes!(session, update_session))
        .routes(crate::documented_routes!(providers))
        .routes(crate::documented_routes!(csrf))
        .routes(crate::documented_routes!(accounts))
        .routes(crate::documented_routes!(unlink_account))
        .routes(crate::documented_routes!(list_sessions))
        .routes(crate::documented_routes!(end_session))
        .routes(crate::documented_routes!(change_password))
        .routes(crate::documented_routes!(admin_token, revoke_admin_token))
        .routes(crate::documented_routes!(verify_email_link, verify_email))
        .routes(crate::documented_routes!(forgot_password_page))
        .routes(crate::documented_routes!(reset_password_page))
        .routes(crate::documented_routes!(reset_password))
}

/// The routes that mail a link: a rate limit of their own, per client and
/// per email address. Setting a password with a mailed link is not one of
/// them: a valid link is never refused for a budget
/// ([`reset_password`]).
pub fn account_mail_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(forgot_password))
        .routes(crate::documented_routes!(resend_verification))
}
