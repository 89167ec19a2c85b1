//! Signing in with a password (and a second factor), the sign-in and
//! sign-out pages, the session answer, the list of configured providers and
//! the CSRF token of the forms.

use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use plaza_domain::sessions::{self, SessionClient};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::signin::{self, PasswordSignIn, SecondStepDone};
use crate::auth::{ClientAddress, OptionalUser};
use crate::http::cookies::{SESSION_COOKIE, cookie_value, set_cookie};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppForm, AppJson, AppQuery, TextPath};
use crate::http::pages;
use crate::secrets::hash_token;
use crate::state::AppState;

use super::flow::{
    RedirectUrl, SECOND_FACTOR_COOKIE, SECOND_STEP, SessionView, as_return_redirect,
    callback_url_for, is_form, refused, safe_callback, second_step_url, session_client,
    session_view, signin_error_url, to_second_step, wants_return_redirect, with_session_cookie,
};
use crate::auth::csrf;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SigninPageQuery {
    /// Where to go after signing in (same origin only).
    #[serde(rename = "callbackUrl")]
    pub callback_url: Option<String>,
    /// An error code from a failed attempt, shown on the page.
    pub error: Option<String>,
    /// `totp`: the second step of a sign-in, asking for the code of a user
    /// with two-factor sign-in on.
    pub step: Option<String>,
}

/// The sign-in page: configured providers and a credentials form, or with
/// `step=totp` the form for the second factor.
#[utoipa::path(
    get,
    path = "/api/auth/signin",
    tag = "auth",
    params(SigninPageQuery),
    responses((status = 200, description = "HTML sign-in page", content_type = "text/html", body = String))
)]
pub async fn signin_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    AppQuery(query): AppQuery<SigninPageQuery>,
) -> Response {
    let (csrf_token, cookie) = csrf::token_for(&state.settings.server, &headers);
    let error = query.error.as_deref();
    let html = if query.step.as_deref() == Some(SECOND_STEP) {
        pages::signin_second_factor(&state.settings.server, &csrf_token, error)
    } else {
        let callback = safe_callback(&state, query.callback_url.as_deref());
        let providers: Vec<(&str, &str)> = state
            .auth
            .providers
            .iter()
            .map(|provider| (provider.id.as_str(), provider.name.as_str()))
            .collect();
        pages::signin(
            &state.settings.server,
            &providers,
            &csrf_token,
            &callback,
            error,
        )
    };
    let mut response = Html(html).into_response();
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// Credentials sign-in body (JSON, or the sign-in page's form).
#[derive(Deserialize, ToSchema)]
pub struct CredentialsBody {
    pub email: String,
    pub password: String,
    /// For a user with two-factor sign-in on: a current code of their
    /// authenticator app, or one of their unused recovery codes. Without it
    /// such a user's right password is 401 `TOTP_REQUIRED`.
    pub totp: Option<String>,
    /// Form posts only: the token from `GET /api/auth/csrf` or the page.
    #[serde(rename = "csrfToken")]
    pub csrf_token: Option<String>,
    /// Form posts only: where to go afterwards.
    #[serde(rename = "callbackUrl")]
    pub callback_url: Option<String>,
}

/// The sign-in page's forms: email and password (and a code, when the
/// client sends one along), or the second step's code alone, which finishes
/// the sign-in waiting under the `plaza_2fa` cookie.
#[derive(Deserialize)]
struct SignInForm {
    email: Option<String>,
    password: Option<String>,
    totp: Option<String>,
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    #[serde(rename = "callbackUrl")]
    callback_url: Option<String>,
}

/// Sign in with email and password, and for a user with two-factor sign-in
/// on a code (`totp`). JSON gets `200 {user, expires}`; a form post gets a
/// redirect (for a user with two-factor sign-in on, to the page's second
/// step, which asks for the code). Wrong credentials or a wrong code are
/// 401, the same for unknown emails; repeated failures are 429 for a while.
#[utoipa::path(
    post,
    path = "/api/auth/signin",
    tag = "auth",
    request_body(content = CredentialsBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Signed in; the session cookie is set", body = SessionView),
        (status = 303, description = "Form post: signed in, on to the code step, or back to the page with an error"),
        (status = 401, description = "Wrong email, password or code (`UNAUTHORIZED`), or the right password of a user with two-factor sign-in on without `totp` (`TOTP_REQUIRED`)", body = GeneralError),
        (status = 403, description = "Form post without a valid CSRF token", body = GeneralError),
        (status = 422, description = "Missing or malformed fields", body = GeneralError),
        (status = 429, description = "Too many failures for this account or address", body = GeneralError),
    )
)]
pub async fn signin_with_credentials(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    request: Request,
) -> Result<Response, AppError> {
    let client = session_client(request.headers(), address);
    if is_form(request.headers()) {
        return form_sign_in(&state, client, request).await;
    }
    let AppJson(body) = AppJson::<CredentialsBody>::from_request(request, &state).await?;
    if body.email.trim().is_empty() {
        return Err(AppError::invalid("email", "is required"));
    }
    let signed_in = signin::sign_in_with_password(
        &state.auth,
        &body.email,
        &body.password,
        body.totp.as_deref(),
        client,
    )
    .await?;
    let PasswordSignIn::Started(started) = signed_in else {
        return Err(AppError::TotpRequired);
    };
    let view = session_view(&started.user, started.expires_at);
    Ok(with_session_cookie(
        &state,
        &started,
        AppJson(view).into_response(),
    ))
}

/// Auth.js's credentials callback, where `next-auth/react`'s
/// `signIn('credentials', …)` posts its form: the form of
/// `POST /api/auth/signin`, signed in the same way.
// The document's description of the form; the sign-in page's form reader
// reads it.
#[derive(ToSchema)]
pub struct CredentialsCallbackForm {
    pub email: String,
    pub password: String,
    /// The token from `GET /api/auth/csrf`, the same as the `plaza_csrf`
    /// cookie's.
    #[serde(rename = "csrfToken")]
    pub csrf_token: String,
    /// Where to go afterwards (same origin only).
    #[serde(rename = "callbackUrl")]
    pub callback_url: Option<String>,
    /// For a user with two-factor sign-in on, a code given at once.
    pub totp: Option<String>,
}

/// Sign in with email and password as the sign-in page's form does, for
/// `next-auth/react`'s `signIn('credentials', …)`; only the `credentials`
/// provider has this callback. Answered as the form is: a redirect to the
/// callback URL with the session cookie, to the page's code step for a
/// user with two-factor sign-in on (with the `plaza_2fa` cookie), or back
/// to the sign-in page with `error`. With the header
/// `X-Auth-Return-Redirect` the redirect is answered as 200 `{url}`.
#[utoipa::path(
    post,
    path = "/api/auth/callback/{provider}",
    tag = "auth",
    params(
        ("provider" = String, Path, description = "`credentials`"),
        ("X-Auth-Return-Redirect" = Option<String>, Header, description = "`1`: answer 200 `{url}` instead of the redirect"),
    ),
    request_body(content = CredentialsCallbackForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "`X-Auth-Return-Redirect`: where the redirect would go", body = RedirectUrl),
        (status = 303, description = "Signed in (to the callback URL), on to the code step, or back to the sign-in page with `error`"),
        (status = 403, description = "Without a valid CSRF token", body = GeneralError),
        (status = 404, description = "A provider other than `credentials`", body = GeneralError),
    )
)]
pub async fn credentials_callback(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    TextPath(provider_id): TextPath,
    request: Request,
) -> Result<Response, AppError> {
    if provider_id != "credentials" {
        return Err(AppError::NotFound("provider"));
    }
    if !is_form(request.headers()) {
        return Err(AppError::UnsupportedMediaType(
            "expected application/x-www-form-urlencoded".to_owned(),
        ));
    }
    let return_redirect = wants_return_redirect(request.headers());
    let client = session_client(request.headers(), address);
    let response = form_sign_in(&state, client, request).await?;
    Ok(if return_redirect {
        as_return_redirect(&state, response)
    } else {
        response
    })
}

/// The sign-in page's form posts, answered with redirects.
async fn form_sign_in(
    state: &AppState,
    client: SessionClient,
    request: Request,
) -> Result<Response, AppError> {
    let csrf = csrf::Presented::from_headers(&state.settings.server, request.headers());
    let challenge = cookie_value(request.headers(), SECOND_FACTOR_COOKIE);
    let AppForm(form): AppForm<SignInForm> = AppForm::from_request(request, state).await?;
    csrf.check(form.csrf_token.as_deref())?;
    let filled = |field: &Option<String>| field.as_deref().is_some_and(|value| !value.is_empty());
    let code = form.totp.filter(|code| !code.is_empty());
    // The second step's form has the code alone.
    if !filled(&form.email)
        && !filled(&form.password)
        && let Some(code) = &code
    {
        return finish_second_step(state, challenge.as_deref(), code, client).await;
    }
    let Some(email) = form.email else {
        return Err(AppError::invalid("email", "is required"));
    };
    let Some(password) = form.password else {
        return Err(AppError::invalid("password", "is required"));
    };
    let callback = safe_callback(state, form.callback_url.as_deref());
    Ok(
        match signin::sign_in_with_password(&state.auth, &email, &password, code.as_deref(), client)
            .await
        {
            Ok(PasswordSignIn::Started(started)) => {
                with_session_cookie(state, &started, Redirect::to(&callback).into_response())
            }
            Ok(PasswordSignIn::SecondFactorNeeded(user)) => {
                let token = signin::start_second_factor(&state.auth, user.id(), callback).await?;
                to_second_step(state, &token)
            }
            Err(AppError::InvalidCredentials) => {
                Redirect::to(&signin_error_url(&callback, "credentials")).into_response()
            }
            Err(AppError::RateLimited { .. }) => {
                Redirect::to(&signin_error_url(&callback, "too_many_attempts")).into_response()
            }
            Err(other) => return Err(other),
        },
    )
}

/// The second step's form post: the code for the sign-in waiting under
/// the `plaza_2fa` cookie.
async fn finish_second_step(
    state: &AppState,
    challenge: Option<&str>,
    code: &str,
    client: SessionClient,
) -> Result<Response, AppError> {
    let Some(challenge) = challenge else {
        return Ok(refused("totp_expired"));
    };
    let mut response = match signin::finish_second_factor(&state.auth, challenge, code, client)
        .await
    {
        Ok(Some(SecondStepDone {
            session,
            callback_url,
        })) => with_session_cookie(state, &session, Redirect::to(&callback_url).into_response()),
        Ok(None) => refused("totp_expired"),
        Err(AppError::InvalidCredentials) => {
            // The sign-in keeps waiting: the cookie stays.
            return Ok(Redirect::to(&second_step_url(Some("totp_invalid"))).into_response());
        }
        Err(AppError::RateLimited { .. }) => refused("too_many_attempts"),
        Err(other) => return Err(other),
    };
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&state.settings.server, SECOND_FACTOR_COOKIE, "", 0),
    );
    Ok(response)
}

/// The sign-out page: a button that posts the sign-out form.
#[utoipa::path(
    get,
    path = "/api/auth/signout",
    tag = "auth",
    responses((status = 200, description = "HTML sign-out page", content_type = "text/html", body = String))
)]
pub async fn signout_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let (csrf_token, cookie) = csrf::token_for(&state.settings.server, &headers);
    let mut response = Html(pages::signout(&state.settings.server, &csrf_token)).into_response();
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// Sign-out answer.
#[derive(Serialize, ToSchema)]
pub struct SignedOut {
    pub success: bool,
}

/// Sign out: ends the session and clears the cookie. JSON callers get
/// `{success}`; form posts are redirected to their `callbackUrl` (same
/// origin only, else home), or with the header `X-Auth-Return-Redirect`
/// (`next-auth/react`'s `signOut`) answered 200 `{url}`.
#[utoipa::path(
    post,
    path = "/api/auth/signout",
    tag = "auth",
    params(("X-Auth-Return-Redirect" = Option<String>, Header, description = "Form posts: `1` answers 200 `{url}` instead of the redirect")),
    responses(
        (status = 200, description = "Signed out: `{success}`, or for a form post with `X-Auth-Return-Redirect` `{url}`", body = SignOutAnswer),
        (status = 303, description = "Form post: signed out, redirected to the callback URL"),
        (status = 403, description = "Cross-origin request or a form without a valid CSRF token", body = GeneralError),
    )
)]
pub async fn signout(
    State(state): State<AppState>,
    OptionalUser(user): OptionalUser,
    request: Request,
) -> Result<Response, AppError> {
    let form = is_form(request.headers());
    let return_redirect = wants_return_redirect(request.headers());
    let signed_out =
        cookie_value(request.headers(), SESSION_COOKIE).map(|token| hash_token(&token));
    let mut callback = None;
    if form {
        let csrf = csrf::Presented::from_headers(&state.settings.server, request.headers());
        let AppForm(mut fields): AppForm<std::collections::HashMap<String, String>> =
            AppForm::from_request(request, &state).await?;
        csrf.check(fields.get("csrfToken").map(String::as_str))?;
        callback = Some(safe_callback(
            &state,
            fields.remove("callbackUrl").as_deref(),
        ));
    }
    if let Some(principal) = user {
        let token_hash = principal.token_hash.clone();
        state
            .db
            .write(|tx| Box::pin(async move { sessions::delete(tx, &token_hash).await }))
            .await?;
    }
    if let Some(token_hash) = signed_out {
        state.auth.session_lookups.forget(&token_hash);
    }
    let mut response = match callback {
        Some(callback) => Redirect::to(&callback).into_response(),
        None => AppJson(SignOutAnswer::SignedOut(SignedOut { success: true })).into_response(),
    };
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&state.settings.server, SESSION_COOKIE, "", 0),
    );
    Ok(if return_redirect {
        as_return_redirect(&state, response)
    } else {
        response
    })
}

/// The answer of `POST /api/auth/signout`: `{success}`, or `{url}` for a
/// form post with `X-Auth-Return-Redirect`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum SignOutAnswer {
    SignedOut(SignedOut),
    Redirect(RedirectUrl),
}

/// The answer of `GET /api/auth/session`: the session, or the JSON `null`
/// without one, as Auth.js v5 answers (its client reads any object, `{}`
/// included, as signed in).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum SessionAnswer {
    SignedIn(SessionView),
    SignedOut,
}

/// The current session: `{user, expires}`, or `null` when signed out.
#[utoipa::path(
    get,
    path = "/api/auth/session",
    tag = "auth",
    responses((status = 200, description = "The session, or `null` without one", body = SessionAnswer))
)]
pub async fn session(OptionalUser(user): OptionalUser) -> Response {
    session_answer(user.as_ref())
}

/// What next-auth's `update()` posts: its CSRF token and the data it would
/// have Auth.js merge into the session. Plaza's session holds nothing a
/// client may change, so both are ignored.
#[derive(Deserialize, ToSchema)]
pub struct SessionUpdateBody {
    #[serde(rename = "csrfToken")]
    pub csrf_token: Option<String>,
    /// Ignored.
    pub data: Option<serde_json::Value>,
}

/// The current session again, as `GET` answers it: next-auth's `update()`
/// posts here and shows what it gets. A cookie-bearing post from another
/// origin is refused (403), as every cookie write is; nothing is changed.
#[utoipa::path(
    post,
    path = "/api/auth/session",
    tag = "auth",
    request_body(content = Option<SessionUpdateBody>, content_type = "application/json", description = "next-auth's `{csrfToken, data}`, ignored"),
    responses(
        (status = 200, description = "The session, or `null` without one", body = SessionAnswer),
        (status = 403, description = "Signed in, from another origin", body = GeneralError),
    )
)]
pub async fn update_session(OptionalUser(user): OptionalUser) -> Response {
    session_answer(user.as_ref())
}

fn session_answer(user: Option<&crate::auth::SessionPrincipal>) -> Response {
    let answer = match user {
        Some(principal) => SessionAnswer::SignedIn(session_view(
            &principal.session.user,
            principal.session.expires_at,
        )),
        None => SessionAnswer::SignedOut,
    };
    let mut response = AppJson(answer).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A configured way to sign in.
#[derive(Serialize, ToSchema)]
pub struct ProviderView {
    pub id: String,
    pub name: String,
    /// `oidc`, `oauth` or `credentials`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(rename = "signinUrl")]
    pub signin_url: String,
    #[serde(rename = "callbackUrl")]
    pub callback_url: String,
}

/// The configured identity providers, keyed by id (as NextAuth clients
/// expect), including `credentials`.
#[utoipa::path(
    get,
    path = "/api/auth/providers",
    tag = "auth",
    responses((status = 200, description = "Providers by id", body = std::collections::BTreeMap<String, ProviderView>))
)]
pub async fn providers(
    State(state): State<AppState>,
) -> AppJson<std::collections::BTreeMap<String, ProviderView>> {
    let base = state
        .settings
        .server
        .base_url
        .as_str()
        .trim_end_matches('/')
        .to_owned();
    let mut all: std::collections::BTreeMap<String, ProviderView> = state
        .auth
        .providers
        .iter()
        .map(|provider| {
            (
                provider.id.clone(),
                ProviderView {
                    id: provider.id.clone(),
                    name: provider.name.clone(),
                    kind: provider.kind_name().to_owned(),
                    signin_url: format!("{base}/api/auth/signin/{}", provider.id),
                    callback_url: callback_url_for(&state, &provider.id),
                },
            )
        })
        .collect();
    all.insert(
        "credentials".to_owned(),
        ProviderView {
            id: "credentials".to_owned(),
            name: "Email and password".to_owned(),
            kind: "credentials".to_owned(),
            signin_url: format!("{base}/api/auth/signin"),
            // Where `next-auth/react`'s `signIn('credentials', …)` posts.
            callback_url: callback_url_for(&state, "credentials"),
        },
    );
    AppJson(all)
}

/// A CSRF token for form posts.
#[derive(Serialize, ToSchema)]
pub struct CsrfView {
    #[serde(rename = "csrfToken")]
    pub csrf_token: String,
}

/// A CSRF token for the sign-in and sign-out forms (double-submit: the same
/// value is set in a cookie).
#[utoipa::path(
    get,
    path = "/api/auth/csrf",
    tag = "auth",
    responses((status = 200, description = "The token", body = CsrfView))
)]
pub async fn csrf(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let (csrf_token, cookie) = csrf::token_for(&state.settings.server, &headers);
    let mut response = AppJson(CsrfView { csrf_token }).into_response();
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}
