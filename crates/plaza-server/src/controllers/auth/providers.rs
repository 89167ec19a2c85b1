//! Signing in with an identity provider: the start (state, PKCE and nonce
//! bound to the browser by a cookie) and the callback that checks them,
//! links or creates the user and starts the session (or, for a user with
//! two-factor sign-in on, the wait for their code).

use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::auth_state::{self, PendingOAuth};
use plaza_domain::ip_blocks::Severity;
use plaza_domain::sessions::SignInProof;
use plaza_domain::site_settings::RegistrationMode;
use plaza_domain::time::now_millis;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::auth::signin::{self, ProviderRefusal};
use crate::auth::{ClientAddress, OptionalUser, csrf};
use crate::http::cookies::{cookie_value, set_cookie};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppForm, AppQuery, TextPath};
use crate::secrets::{hash_token, random_token};
use crate::state::AppState;

use super::flow::{
    RedirectUrl, as_return_redirect, callback_url_for, is_form, refused, safe_callback,
    session_client, to_second_step, wants_return_redirect, with_session_cookie,
};

/// How long a started provider sign-in may take.
const OAUTH_STATE_TTL_MILLIS: i64 = 10 * 60 * 1000;

/// The cookie binding a provider sign-in to the browser that started it.
const OAUTH_BINDING_COOKIE: &str = "plaza_oauth";

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProviderSigninQuery {
    /// Where to go after signing in (same origin only).
    #[serde(rename = "callbackUrl")]
    pub callback_url: Option<String>,
}

/// Start signing in with an identity provider: redirects to it with `state`,
/// a PKCE challenge and (OpenID Connect) a nonce, and sets a short-lived cookie that binds the
/// sign-in to this browser. Started from a signed-in session, the callback
/// links the provider account to the current user instead.
#[utoipa::path(
    get,
    path = "/api/auth/signin/{provider}",
    tag = "auth",
    params(("provider" = String, Path, description = "Provider id, e.g. github"), ProviderSigninQuery),
    responses(
        (status = 303, description = "Redirect to the identity provider"),
        (status = 404, description = "No such provider", body = GeneralError),
        (status = 503, description = "The provider's discovery document could not be read", body = GeneralError),
    )
)]
pub async fn signin_with_provider(
    State(state): State<AppState>,
    OptionalUser(signed_in): OptionalUser,
    TextPath(provider_id): TextPath,
    headers: HeaderMap,
    AppQuery(query): AppQuery<ProviderSigninQuery>,
) -> Result<Response, AppError> {
    let started = start_provider_sign_in(
        &state,
        signed_in.map(|principal| principal.user_id()),
        provider_id,
        &headers,
        query.callback_url.as_deref(),
    )
    .await?;
    Ok(started.answer(&state, Redirect::to(&started.url).into_response()))
}

/// The form of a provider sign-in started by a post (Auth.js's `signIn`).
#[derive(Deserialize, ToSchema)]
pub struct ProviderSigninForm {
    /// The token from `GET /api/auth/csrf`, the same as the `plaza_csrf`
    /// cookie's.
    #[serde(rename = "csrfToken")]
    pub csrf_token: Option<String>,
    /// Where to go after signing in (same origin only).
    #[serde(rename = "callbackUrl")]
    pub callback_url: Option<String>,
}

/// Start signing in with an identity provider from a form post, as
/// `next-auth/react`'s `signIn(provider)` does: the sign-in the `GET`
/// starts, after the CSRF check. With the header `X-Auth-Return-Redirect`
/// the answer is 200 `{url}` (the provider's page), otherwise a 302 to it.
#[utoipa::path(
    post,
    path = "/api/auth/signin/{provider}",
    tag = "auth",
    params(
        ("provider" = String, Path, description = "Provider id, e.g. github"),
        ("X-Auth-Return-Redirect" = Option<String>, Header, description = "`1`: answer 200 `{url}` instead of the redirect"),
    ),
    request_body(content = ProviderSigninForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "`X-Auth-Return-Redirect`: the identity provider's page", body = RedirectUrl),
        (status = 302, description = "Redirect to the identity provider"),
        (status = 403, description = "Without a valid CSRF token", body = GeneralError),
        (status = 404, description = "No such provider", body = GeneralError),
        (status = 503, description = "The provider's discovery document could not be read", body = GeneralError),
    )
)]
pub async fn signin_with_provider_form(
    State(state): State<AppState>,
    OptionalUser(signed_in): OptionalUser,
    TextPath(provider_id): TextPath,
    request: Request,
) -> Result<Response, AppError> {
    let headers = request.headers().clone();
    if !is_form(&headers) {
        return Err(AppError::UnsupportedMediaType(
            "expected application/x-www-form-urlencoded".to_owned(),
        ));
    }
    let AppForm(form): AppForm<ProviderSigninForm> = AppForm::from_request(request, &state).await?;
    csrf::Presented::from_headers(&state.settings.server, &headers)
        .check(form.csrf_token.as_deref())?;
    let started = start_provider_sign_in(
        &state,
        signed_in.map(|principal| principal.user_id()),
        provider_id,
        &headers,
        form.callback_url.as_deref(),
    )
    .await?;
    let redirect = Redirect::to(&started.url).into_response();
    if wants_return_redirect(&headers) {
        return Ok(as_return_redirect(&state, started.answer(&state, redirect)));
    }
    let mut response = started.answer(&state, redirect);
    *response.status_mut() = StatusCode::FOUND;
    Ok(response)
}

/// A provider sign-in waiting for its callback: the provider's page and
/// the browser's binding.
struct StartedProviderSignIn {
    url: String,
    binding: String,
}

impl StartedProviderSignIn {
    /// `redirect` with the cookie that binds the sign-in to this browser.
    fn answer(&self, state: &AppState, mut redirect: Response) -> Response {
        redirect.headers_mut().append(
            header::SET_COOKIE,
            set_cookie(
                &state.settings.server,
                OAUTH_BINDING_COOKIE,
                &self.binding,
                OAUTH_STATE_TTL_MILLIS / 1000,
            ),
        );
        redirect
    }
}

/// Starts a provider sign-in (or, from a session, a link): the provider's
/// URL with a fresh state, PKCE challenge and nonce, the state stored with
/// the same-origin `callback_url` for the callback.
async fn start_provider_sign_in(
    state: &AppState,
    link_user_id: Option<i64>,
    provider_id: String,
    headers: &HeaderMap,
    callback_url: Option<&str>,
) -> Result<StartedProviderSignIn, AppError> {
    let provider = state
        .auth
        .provider(&provider_id)
        .ok_or(AppError::NotFound("provider"))?;
    let authorization = provider
        .authorize(&state.auth.http, &callback_url_for(state, &provider_id))
        .await
        .map_err(|error| AppError::Unavailable(error.to_string()))?;
    // The browser keeps its binding cookie across sign-ins started in
    // several tabs; a new one is made when it has none.
    let binding = cookie_value(headers, OAUTH_BINDING_COOKIE).unwrap_or_else(random_token);
    let state_hash = hash_token(&authorization.state);
    let pending = PendingOAuth {
        provider: provider_id,
        pkce_verifier: authorization.pkce_verifier,
        callback_url: safe_callback(state, callback_url),
        expires_at: now_millis() + OAUTH_STATE_TTL_MILLIS,
        browser_hash: hash_token(&binding),
        link_user_id,
        nonce: authorization.nonce,
    };
    state
        .db
        .write(|tx| {
            Box::pin(async move { auth_state::save_oauth_state(tx, &state_hash, &pending).await })
        })
        .await?;
    Ok(StartedProviderSignIn {
        url: authorization.url,
        binding,
    })
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    /// Set by the provider when the person declined or it failed.
    pub error: Option<String>,
}

/// Finish a provider sign-in: checks `state`, trades the code (with the PKCE
/// verifier), validates an OpenID Connect provider's ID token (signature
/// against the issuer's keys, `iss`, `aud`, `exp`, `nonce`), links or creates
/// the user, starts the session and redirects to the callback URL; a user
/// with two-factor sign-in on goes to the sign-in page's second step for
/// their code first. Failures redirect to the sign-in page with `?error=`.
#[utoipa::path(
    get,
    path = "/api/auth/callback/{provider}",
    tag = "auth",
    params(("provider" = String, Path, description = "Provider id"), CallbackQuery),
    responses(
        (status = 303, description = "Signed in (to the callback URL), on to the code step (two-factor sign-in on), or refused (to the sign-in page with `error`)"),
        (status = 404, description = "No such provider", body = GeneralError),
    )
)]
pub async fn provider_callback(
    State(state): State<AppState>,
    TextPath(provider_id): TextPath,
    ClientAddress(address): ClientAddress,
    OptionalUser(signed_in): OptionalUser,
    headers: HeaderMap,
    AppQuery(query): AppQuery<CallbackQuery>,
) -> Result<Response, AppError> {
    let mut response = finish_provider_sign_in(
        &state,
        &provider_id,
        address,
        signed_in.map(|principal| principal.user_id()),
        &headers,
        &query,
    )
    .await?;
    // The binding is single-use: whatever the outcome, the cookie goes.
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&state.settings.server, OAUTH_BINDING_COOKIE, "", 0),
    );
    Ok(response)
}

async fn finish_provider_sign_in(
    state: &AppState,
    provider_id: &str,
    address: Option<std::net::IpAddr>,
    signed_in_user: Option<i64>,
    headers: &HeaderMap,
    query: &CallbackQuery,
) -> Result<Response, AppError> {
    let provider = state
        .auth
        .provider(provider_id)
        .ok_or(AppError::NotFound("provider"))?;
    // The state is consumed first, so it is single-use even when the
    // provider reports an error.
    let pending = match &query.state {
        Some(value) => {
            let state_hash = hash_token(value);
            state
                .db
                .write(|tx| {
                    Box::pin(async move { auth_state::take_oauth_state(tx, &state_hash).await })
                })
                .await?
        }
        None => None,
    };
    let binding = cookie_value(headers, OAUTH_BINDING_COOKIE).map(|value| hash_token(&value));
    // A callback is only finished in the browser that started the sign-in
    // (a link to someone else's callback would sign its victim in as the
    // attacker), and a link started from a session only in that session.
    let Some(pending) = pending.filter(|pending| {
        pending.provider == provider_id
            && binding.as_deref() == Some(pending.browser_hash.as_str())
            && pending
                .link_user_id
                .is_none_or(|user_id| signed_in_user == Some(user_id))
    }) else {
        return Ok(refused("invalid_state"));
    };
    if query.error.is_some() {
        return Ok(refused("provider_error"));
    }
    let Some(code) = query.code.as_deref() else {
        return Ok(refused("provider_error"));
    };
    let identity = match provider
        .finish(
            &state.auth.http,
            &callback_url_for(state, provider_id),
            code,
            &pending.pkce_verifier,
            pending.nonce.as_deref(),
        )
        .await
    {
        Ok(identity) => identity,
        Err(error) => {
            tracing::warn!(provider = %provider_id, %error, "provider sign-in failed");
            return Ok(refused(error.code()));
        }
    };
    // A provider sign-in that would create an account is a sign-up: only
    // while registrations are open, and never from a blocked address.
    let new_accounts = if state.front_door.settings().registration_mode != RegistrationMode::Open {
        Err(ProviderRefusal::RegistrationClosed)
    } else if address.is_some_and(|address| state.front_door.blocks(address, Severity::SignUp)) {
        Err(ProviderRefusal::IpBlocked)
    } else {
        Ok(())
    };
    let user = match signin::user_for_provider_identity(
        &state.auth,
        identity,
        pending.link_user_id,
        new_accounts,
    )
    .await?
    {
        Ok(user) => user,
        Err(refusal) => return Ok(refused(refusal.code())),
    };
    if pending.link_user_id.is_some() {
        // Linked to the session's own user, who is signed in already.
        return Ok(Redirect::to(&pending.callback_url).into_response());
    }
    if user.has_totp() {
        // The provider vouches for the first factor; the user's own second
        // factor is still asked for, on the sign-in page's second step.
        let token =
            signin::start_second_factor(&state.auth, user.id(), pending.callback_url).await?;
        return Ok(to_second_step(state, &token));
    }
    let client = session_client(headers, address);
    let started =
        signin::start_session(&state.auth, user, SignInProof::FirstFactor, client).await?;
    Ok(with_session_cookie(
        state,
        &started,
        Redirect::to(&pending.callback_url).into_response(),
    ))
}
