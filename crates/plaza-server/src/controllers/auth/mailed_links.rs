//! The links Plaza mails and what opens them: email verification (the link,
//! its JSON form, and resending it) and a forgotten password (asking for a
//! link, setting the new password, and the two pages a browser uses for
//! them without any script). The forms post with the `plaza_csrf` double
//! submit, as the sign-in form does.

use std::time::Duration;

use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use plaza_domain::text::is_email_address;
use plaza_domain::time::rfc3339;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::account_mail;
use crate::auth::password::check_new_password;
use crate::auth::{ClientAddress, CurrentUser, OptionalUser};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppForm, AppJson, AppQuery};
use crate::http::pages::{self, ResetPage};
use crate::state::AppState;

use super::flow::is_form;
use crate::auth::csrf;

/// How long a password-forgotten request waits for a slot for its work
/// before 503.
const RECOVERY_SLOT_WAIT: Duration = Duration::from_secs(5);

/// A verification link's query.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VerifyEmailQuery {
    /// The token the mail carried.
    pub token: Option<String>,
}

/// A mailed token sent back.
#[derive(Deserialize, ToSchema)]
pub struct TokenBody {
    pub token: String,
}

/// A verified address.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmailVerified {
    pub success: bool,
    /// When the address was verified.
    pub email_verified: String,
    /// Present when the address was unverified until now and the link was
    /// not opened from a session of the account: the password set before
    /// (by whoever signed up with this address) no longer works, and this
    /// reset token (1 hour, once; `POST /api/auth/reset-password`) chooses
    /// the account's password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_reset_token: Option<String>,
}

impl EmailVerified {
    fn new(verified: account_mail::VerifiedAddress) -> Self {
        EmailVerified {
            success: true,
            email_verified: verified
                .user
                .row
                .email_verified_at
                .map(rfc3339)
                .unwrap_or_default(),
            password_reset_token: verified.reset_token,
        }
    }
}

/// A request whose mail is on its way.
#[derive(Serialize, ToSchema)]
pub struct MailAccepted {
    pub success: bool,
}

/// Whether the client is a browser asking for a page rather than JSON.
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"))
}

/// Open a verification link: marks the address verified. An address
/// verified for the first time ends the account's other sessions; opened
/// without a session of the account, it also drops a password set before
/// (docs/security.md, "Accounts"), and a browser is sent on to choose one.
/// A browser (one that accepts `text/html`) gets a small page (or that
/// 303), other clients JSON; a used, expired or unknown token is 400
/// either way.
#[utoipa::path(
    get,
    path = "/api/auth/verify-email",
    tag = "auth",
    params(VerifyEmailQuery),
    responses(
        (status = 200, description = "The address is verified", content(
            (EmailVerified = "application/json"),
            (String = "text/html"),
        )),
        (status = 303, description = "A browser's address is verified and the account's earlier password dropped: on to the page that chooses a new one"),
        (status = 400, description = "The token is missing, used, expired or unknown (`BAD_REQUEST`)", content(
            (GeneralError = "application/json"),
            (String = "text/html"),
        )),
    )
)]
pub async fn verify_email_link(
    State(state): State<AppState>,
    OptionalUser(verifier): OptionalUser,
    headers: HeaderMap,
    AppQuery(query): AppQuery<VerifyEmailQuery>,
) -> Response {
    let verified = match query.token.as_deref().filter(|token| !token.is_empty()) {
        Some(token) => {
            account_mail::verify_email(&state.account_mail(), token, verifier.as_ref()).await
        }
        None => Err(account_mail::invalid_link()),
    };
    match (verified, wants_html(&headers)) {
        (Ok(verified), true) => match verified.reset_token {
            Some(reset_token) => {
                let mut response =
                    Redirect::to(&format!("/reset-password?token={reset_token}")).into_response();
                let headers = response.headers_mut();
                headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                headers.insert(
                    header::REFERRER_POLICY,
                    HeaderValue::from_static("no-referrer"),
                );
                response
            }
            None => pages::private(
                StatusCode::OK,
                pages::email_verification(&state.settings.server, true),
            ),
        },
        (Err(AppError::BadRequest(_)), true) => pages::private(
            StatusCode::BAD_REQUEST,
            pages::email_verification(&state.settings.server, false),
        ),
        (Ok(verified), false) => AppJson(EmailVerified::new(verified)).into_response(),
        (Err(error), _) => error.into_response(),
    }
}

/// Verify an address with the token of its mail, as the link does (the
/// same sessions end and the same password is dropped).
#[utoipa::path(
    post,
    path = "/api/auth/verify-email",
    tag = "auth",
    request_body = TokenBody,
    responses(
        (status = 200, description = "The address is verified", body = EmailVerified),
        (status = 400, description = "The token is used, expired or unknown (`BAD_REQUEST`)", body = GeneralError),
    )
)]
pub async fn verify_email(
    State(state): State<AppState>,
    OptionalUser(verifier): OptionalUser,
    AppJson(body): AppJson<TokenBody>,
) -> Result<AppJson<EmailVerified>, AppError> {
    let verified =
        account_mail::verify_email(&state.account_mail(), &body.token, verifier.as_ref()).await?;
    Ok(AppJson(EmailVerified::new(verified)))
}

/// Mail the signed-in user a new verification link (earlier links keep
/// working until they expire).
#[utoipa::path(
    post,
    path = "/api/auth/verify-email/resend",
    tag = "auth",
    security(("session_cookie" = [])),
    responses(
        (status = 202, description = "A new link is on its way", body = MailAccepted),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 409, description = "The address is verified already (`CONFLICT`)", body = GeneralError),
        (status = 429, description = "Too many mails for this address or client (`RATE_LIMITED`)", body = GeneralError),
    )
)]
pub async fn resend_verification(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
    ClientAddress(address): ClientAddress,
) -> Result<Response, AppError> {
    let user = &principal.session.user;
    if user.row.email_verified_at.is_some() {
        return Err(AppError::Conflict(
            "the email address is verified already".to_owned(),
        ));
    }
    state
        .rate_limiter
        .charge_email(&user.row.email, address)
        .await?;
    account_mail::send_verification(&state.account_mail(), user).await?;
    Ok((
        StatusCode::ACCEPTED,
        AppJson(MailAccepted { success: true }),
    )
        .into_response())
}

/// A password-forgotten request (JSON, or the page's form).
#[derive(Deserialize, ToSchema)]
pub struct ForgotPasswordBody {
    pub email: String,
    /// Form posts only: the token from `GET /api/auth/csrf` or the page.
    #[serde(rename = "csrfToken")]
    pub csrf_token: Option<String>,
}

/// Ask for a password reset link. The answer is the same, and comes as
/// fast, whether or not an account has the address: the link is mailed
/// (valid one hour, once) after the answer, to an active account only. A
/// form post is redirected to the page, which says the same.
#[utoipa::path(
    post,
    path = "/api/auth/password/forgot",
    tag = "auth",
    request_body(content = ForgotPasswordBody, content_type = "application/json",
        description = "JSON; the page's form posts the same fields as `application/x-www-form-urlencoded`, with `csrfToken`"),
    responses(
        (status = 202, description = "Accepted; a link is mailed if an account has the address", body = MailAccepted),
        (status = 303, description = "Form post: back to the page, with the outcome"),
        (status = 403, description = "Form post without a valid CSRF token", body = GeneralError),
        (status = 422, description = "`email` is not an email address", body = GeneralError),
        (status = 429, description = "Too many requests for this address or client (`RATE_LIMITED`)", body = GeneralError),
    )
)]
pub async fn forgot_password(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    request: Request,
) -> Result<Response, AppError> {
    let form = is_form(request.headers());
    let body: ForgotPasswordBody = if form {
        let csrf = csrf::Presented::from_headers(&state.settings.server, request.headers());
        let AppForm(body) = AppForm::<ForgotPasswordBody>::from_request(request, &state).await?;
        csrf.check(body.csrf_token.as_deref())?;
        body
    } else {
        AppJson::<ForgotPasswordBody>::from_request(request, &state)
            .await?
            .0
    };
    let back = |code: &str| Redirect::to(&format!("/forgot-password?error={code}")).into_response();
    let email = body.email.trim();
    if !is_email_address(email) {
        return if form {
            Ok(back("email"))
        } else {
            Err(AppError::invalid("email", "must be an email address"))
        };
    }
    if let Err(refused) = state.rate_limiter.charge_email(email, address).await {
        return match refused {
            AppError::RateLimited { .. } if form => Ok(back("too_many_attempts")),
            other => Err(other),
        };
    }
    let slot = tokio::time::timeout(
        RECOVERY_SLOT_WAIT,
        state.recovery_slots.clone().acquire_owned(),
    )
    .await
    .map_err(|_| AppError::Busy {
        retry_after_secs: 2,
    })?
    .map_err(AppError::internal)?;
    let (work_state, email) = (state.clone(), email.to_owned());
    state.background.spawn(async move {
        let _slot = slot;
        if let Err(error) = account_mail::send_reset_link(&work_state.account_mail(), &email).await
        {
            tracing::warn!(?error, "a password reset link could not be queued");
        }
    });
    Ok(if form {
        Redirect::to("/forgot-password?sent=1").into_response()
    } else {
        (
            StatusCode::ACCEPTED,
            AppJson(MailAccepted { success: true }),
        )
            .into_response()
    })
}

/// A new password with the token of a reset link (JSON, or the page's form).
#[derive(Deserialize, ToSchema)]
pub struct ResetPasswordBody {
    pub token: String,
    /// At least 8 characters, at most 256 bytes.
    pub password: String,
    /// The page's second field; when given, it must equal `password`.
    #[serde(rename = "passwordConfirm")]
    pub password_confirm: Option<String>,
    /// Form posts only: the token from `GET /api/auth/csrf` or the page.
    #[serde(rename = "csrfToken")]
    pub csrf_token: Option<String>,
}

/// The answer of a password reset.
#[derive(Serialize, ToSchema)]
pub struct PasswordReset {
    pub success: bool,
}

/// Set a new password with a reset link's token. Every session and admin
/// token of the user ends, and so do their other reset links and the
/// account's sign-in lock; the owner is mailed a notice. A valid token is
/// never refused for a budget (nobody else's requests can block the
/// owner's recovery); a used, expired or unknown one is counted against
/// the client under `rate_limit_account_mail`. A form post is redirected
/// to the page.
#[utoipa::path(
    post,
    path = "/api/auth/password/reset",
    tag = "auth",
    request_body(content = ResetPasswordBody, content_type = "application/json",
        description = "JSON; the page's form posts the same fields as `application/x-www-form-urlencoded`, with `csrfToken`"),
    responses(
        (status = 200, description = "The password is set", body = PasswordReset),
        (status = 303, description = "Form post: to the page, with the outcome"),
        (status = 400, description = "The token is used, expired or unknown (`BAD_REQUEST`)", body = GeneralError),
        (status = 403, description = "Form post without a valid CSRF token", body = GeneralError),
        (status = 422, description = "The password breaks the password rules, or differs from `passwordConfirm`", body = GeneralError),
        (status = 429, description = "Too many unusable tokens from this client (`RATE_LIMITED`)", body = GeneralError),
    )
)]
pub async fn reset_password(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    request: Request,
) -> Result<Response, AppError> {
    let form = is_form(request.headers());
    let body: ResetPasswordBody = if form {
        let csrf = csrf::Presented::from_headers(&state.settings.server, request.headers());
        let AppForm(body) = AppForm::<ResetPasswordBody>::from_request(request, &state).await?;
        csrf.check(body.csrf_token.as_deref())?;
        body
    } else {
        AppJson::<ResetPasswordBody>::from_request(request, &state)
            .await?
            .0
    };
    match reset_with(&state, &body, address).await {
        Ok(()) if form => Ok(Redirect::to("/reset-password?done=1").into_response()),
        Ok(()) => Ok(AppJson(PasswordReset { success: true }).into_response()),
        Err(error) if form => {
            let code = match &error {
                AppError::BadRequest(_) => "invalid_token",
                AppError::RateLimited { .. } => "too_many_attempts",
                AppError::Validation { fields, .. }
                    if fields.iter().any(|field| field.field == "passwordConfirm") =>
                {
                    "mismatch"
                }
                AppError::Validation { .. } => "weak_password",
                _ => return Err(error),
            };
            let query = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("token", &body.token)
                .append_pair("error", code)
                .finish();
            Ok(Redirect::to(&format!("/reset-password?{query}")).into_response())
        }
        Err(error) => Err(error),
    }
}

/// The checks and the reset, in the order that spends the least on a bad
/// request: the password rules, the token, the per-email limit, and only
/// then the hash.
async fn reset_with(
    state: &AppState,
    body: &ResetPasswordBody,
    address: Option<std::net::IpAddr>,
) -> Result<(), AppError> {
    check_new_password("password", &body.password)?;
    if body
        .password_confirm
        .as_ref()
        .is_some_and(|confirm| *confirm != body.password)
    {
        return Err(AppError::invalid("passwordConfirm", "must equal password"));
    }
    match account_mail::reset_token_email(&state.account_mail(), &body.token).await {
        Ok(_) => {}
        Err(invalid @ AppError::BadRequest(_)) => {
            state.rate_limiter.charge_mail_client(address).await?;
            return Err(invalid);
        }
        Err(other) => return Err(other),
    }
    let password_hash = state.auth.passwords.hash(&body.password).await?;
    account_mail::reset_password(&state.account_mail(), &body.token, password_hash).await
}

/// The forgotten-password page's query.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ForgotPasswordPageQuery {
    /// Present after the form was sent.
    pub sent: Option<String>,
    /// What went wrong with the last post: `email` or `too_many_attempts`.
    pub error: Option<String>,
}

/// The page where a browser asks for a reset link.
#[utoipa::path(
    get,
    path = "/forgot-password",
    tag = "auth",
    params(ForgotPasswordPageQuery),
    responses((status = 200, description = "HTML page", content_type = "text/html", body = String))
)]
pub async fn forgot_password_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    AppQuery(query): AppQuery<ForgotPasswordPageQuery>,
) -> Response {
    let (csrf_token, cookie) = csrf::token_for(&state.settings.server, &headers);
    let error = query
        .error
        .as_deref()
        .filter(|code| matches!(*code, "email" | "too_many_attempts"));
    let html = pages::forgot_password(
        &state.settings.server,
        &csrf_token,
        query.sent.is_some(),
        error,
    );
    let mut response = Html(html).into_response();
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The reset page's query.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ResetPasswordPageQuery {
    /// The token of the mailed link.
    pub token: Option<String>,
    /// What went wrong with the last post: `invalid_token`,
    /// `weak_password`, `mismatch` or `too_many_attempts`.
    pub error: Option<String>,
    /// Present once the password is set.
    pub done: Option<String>,
}

/// The page a reset link opens: a form for the new password. Whether the
/// token is good shows when the form is sent.
#[utoipa::path(
    get,
    path = "/reset-password",
    tag = "auth",
    params(ResetPasswordPageQuery),
    responses((status = 200, description = "HTML page", content_type = "text/html", body = String))
)]
pub async fn reset_password_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    AppQuery(query): AppQuery<ResetPasswordPageQuery>,
) -> Response {
    let (csrf_token, cookie) = csrf::token_for(&state.settings.server, &headers);
    let error = query.error.as_deref().filter(|code| {
        matches!(
            *code,
            "invalid_token" | "weak_password" | "mismatch" | "too_many_attempts"
        )
    });
    let token = query.token.as_deref().filter(|token| !token.is_empty());
    let shown = match (query.done.is_some(), token, error) {
        (true, _, _) => ResetPage::Done,
        (false, _, Some("invalid_token")) => ResetPage::Broken {
            error: "invalid_token",
        },
        (false, Some(token), error) => ResetPage::Form { token, error },
        (false, None, _) => ResetPage::Broken {
            error: "invalid_token",
        },
    };
    let mut response = pages::private(
        StatusCode::OK,
        pages::reset_password(&state.settings.server, &csrf_token, shown),
    );
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}
