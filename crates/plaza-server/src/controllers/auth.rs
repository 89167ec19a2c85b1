//! The `/api/auth/*` surface: sign-in pages and flows, sessions, linked
//! accounts and admin tokens.

use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use plaza_domain::accounts::{self, LinkedAccount, UnlinkOutcome};
use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::auth_state::{self, PendingOAuth};
use plaza_domain::sessions::{self, SessionClient};
use plaza_domain::time::{now_millis, rfc3339};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::jwt::AdminPermission;
use crate::auth::signin::{self, StartedSession};
use crate::auth::tokens::{hash_token, random_token};
use crate::auth::{
    AnyAdminToken, CSRF_COOKIE, ClientAddress, CurrentUser, OptionalUser, RequestAudit,
    SESSION_COOKIE, cookie_value, set_cookie,
};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::json::parse_json;
use crate::http::extract::{AppForm, AppJson, AppQuery, TextPath};
use crate::http::pages;
use crate::state::AppState;

/// The routes that start a sign-in: they hash passwords and write rows, so
/// their limit fails closed.
pub fn sign_in_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(
            signin_page,
            signin_with_credentials
        ))
        .routes(crate::documented_routes!(signin_with_provider))
        .routes(crate::documented_routes!(provider_callback))
}

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(signout_page, signout))
        .routes(crate::documented_routes!(session))
        .routes(crate::documented_routes!(providers))
        .routes(crate::documented_routes!(csrf))
        .routes(crate::documented_routes!(accounts))
        .routes(crate::documented_routes!(unlink_account))
        .routes(crate::documented_routes!(admin_token, revoke_admin_token))
}

/// How long a started provider sign-in may take.
const OAUTH_STATE_TTL_MILLIS: i64 = 10 * 60 * 1000;

/// The cookie binding a provider sign-in to the browser that started it.
const OAUTH_BINDING_COOKIE: &str = "plaza_oauth";

/// The user part of a session answer.
#[derive(Serialize, ToSchema)]
pub struct SessionUserView {
    #[schema(example = "42")]
    pub id: String,
    pub name: Option<String>,
    pub email: String,
    pub image: Option<String>,
    /// The user's roles, e.g. `["admin"]`.
    pub roles: Vec<String>,
}

/// A signed-in session.
#[derive(Serialize, ToSchema)]
pub struct SessionView {
    pub user: SessionUserView,
    /// When the session ends unless used again.
    pub expires: String,
}

fn session_view(user: &plaza_domain::users::User, expires_at: i64) -> SessionView {
    SessionView {
        user: SessionUserView {
            id: user.id().to_string(),
            name: user.row.name.clone(),
            email: user.row.email.clone(),
            image: user.row.image.clone(),
            roles: vec![user.role.as_str().to_owned()],
        },
        expires: rfc3339(expires_at),
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SigninPageQuery {
    /// Where to go after signing in (same origin only).
    #[serde(rename = "callbackUrl")]
    pub callback_url: Option<String>,
    /// An error code from a failed attempt, shown on the page.
    pub error: Option<String>,
}

/// The sign-in page: configured providers and a credentials form.
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
    let (csrf_token, cookie) = csrf_token_for(&state, &headers);
    let callback = safe_callback(&state, query.callback_url.as_deref());
    let html = pages::signin(&state, &csrf_token, &callback, query.error.as_deref());
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
    /// Form posts only: the token from `GET /api/auth/csrf` or the page.
    #[serde(rename = "csrfToken")]
    pub csrf_token: Option<String>,
    /// Form posts only: where to go afterwards.
    #[serde(rename = "callbackUrl")]
    pub callback_url: Option<String>,
}

/// Sign in with email and password. JSON gets `200 {user, expires}`; a form
/// post gets a redirect. Wrong credentials are 401, the same for unknown
/// emails; repeated failures are 429 for a while.
#[utoipa::path(
    post,
    path = "/api/auth/signin",
    tag = "auth",
    request_body(content = CredentialsBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Signed in; the session cookie is set", body = SessionView),
        (status = 303, description = "Form post: signed in, or back to the page with an error"),
        (status = 401, description = "Wrong email or password", body = GeneralError),
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
        let csrf_cookie = cookie_value(request.headers(), CSRF_COOKIE);
        let AppForm(body): AppForm<CredentialsBody> =
            AppForm::from_request(request, &state).await?;
        check_csrf(csrf_cookie.as_deref(), body.csrf_token.as_deref())?;
        let callback = safe_callback(&state, body.callback_url.as_deref());
        return Ok(
            match signin::sign_in_with_password(&state, &body.email, &body.password, client).await {
                Ok(started) => {
                    with_session_cookie(&state, &started, Redirect::to(&callback).into_response())
                }
                Err(AppError::InvalidCredentials) => {
                    Redirect::to(&signin_error_url(&callback, "credentials")).into_response()
                }
                Err(AppError::RateLimited { .. }) => {
                    Redirect::to(&signin_error_url(&callback, "too_many_attempts")).into_response()
                }
                Err(other) => return Err(other),
            },
        );
    }
    let AppJson(body) = AppJson::<CredentialsBody>::from_request(request, &state).await?;
    if body.email.trim().is_empty() {
        return Err(AppError::invalid("email", "is required"));
    }
    let started =
        signin::sign_in_with_password(&state, &body.email, &body.password, client).await?;
    let view = session_view(&started.user, started.expires_at);
    Ok(with_session_cookie(
        &state,
        &started,
        AppJson(view).into_response(),
    ))
}

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
    let provider = state
        .auth
        .provider(&provider_id)
        .ok_or(AppError::NotFound("provider"))?;
    let authorization = provider
        .authorize(&state.auth.http, &callback_url_for(&state, &provider_id))
        .await
        .map_err(|error| AppError::Unavailable(error.to_string()))?;
    // The browser keeps its binding cookie across sign-ins started in
    // several tabs; a new one is made when it has none.
    let binding = cookie_value(&headers, OAUTH_BINDING_COOKIE).unwrap_or_else(random_token);
    let state_hash = hash_token(&authorization.state);
    let pending = PendingOAuth {
        provider: provider_id,
        pkce_verifier: authorization.pkce_verifier,
        callback_url: safe_callback(&state, query.callback_url.as_deref()),
        expires_at: now_millis() + OAUTH_STATE_TTL_MILLIS,
        browser_hash: hash_token(&binding),
        link_user_id: signed_in.map(|principal| principal.user_id()),
        nonce: authorization.nonce,
    };
    state
        .db
        .write(|tx| {
            Box::pin(async move { auth_state::save_oauth_state(tx, &state_hash, &pending).await })
        })
        .await?;
    let mut response = Redirect::to(&authorization.url).into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(
            &state.settings.server,
            OAUTH_BINDING_COOKIE,
            &binding,
            OAUTH_STATE_TTL_MILLIS / 1000,
        ),
    );
    Ok(response)
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
/// the user, starts the session and redirects to the callback URL. Failures
/// redirect to the sign-in page with `?error=`.
#[utoipa::path(
    get,
    path = "/api/auth/callback/{provider}",
    tag = "auth",
    params(("provider" = String, Path, description = "Provider id"), CallbackQuery),
    responses(
        (status = 303, description = "Signed in (to the callback URL) or refused (to the sign-in page with `error`)"),
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
    let user =
        match signin::user_for_provider_identity(state, identity, pending.link_user_id).await? {
            Ok(user) => user,
            Err(refusal) => return Ok(refused(refusal.code())),
        };
    if pending.link_user_id.is_some() {
        // Linked to the session's own user, who is signed in already.
        return Ok(Redirect::to(&pending.callback_url).into_response());
    }
    let client = session_client(headers, address);
    let started = signin::start_session(state, user, client).await?;
    Ok(with_session_cookie(
        state,
        &started,
        Redirect::to(&pending.callback_url).into_response(),
    ))
}

/// The sign-out page: a button that posts the sign-out form.
#[utoipa::path(
    get,
    path = "/api/auth/signout",
    tag = "auth",
    responses((status = 200, description = "HTML sign-out page", content_type = "text/html", body = String))
)]
pub async fn signout_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let (csrf_token, cookie) = csrf_token_for(&state, &headers);
    let mut response = Html(pages::signout(&state, &csrf_token)).into_response();
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
/// `{success}`; form posts are redirected home.
#[utoipa::path(
    post,
    path = "/api/auth/signout",
    tag = "auth",
    responses(
        (status = 200, description = "Signed out", body = SignedOut),
        (status = 303, description = "Form post: signed out, redirected home"),
        (status = 403, description = "Cross-origin request or a form without a valid CSRF token", body = GeneralError),
    )
)]
pub async fn signout(
    State(state): State<AppState>,
    OptionalUser(user): OptionalUser,
    request: Request,
) -> Result<Response, AppError> {
    let form = is_form(request.headers());
    let signed_out =
        cookie_value(request.headers(), SESSION_COOKIE).map(|token| hash_token(&token));
    if form {
        let csrf_cookie = cookie_value(request.headers(), CSRF_COOKIE);
        let AppForm(fields): AppForm<std::collections::HashMap<String, String>> =
            AppForm::from_request(request, &state).await?;
        check_csrf(
            csrf_cookie.as_deref(),
            fields.get("csrfToken").map(String::as_str),
        )?;
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
    let mut response = if form {
        Redirect::to("/").into_response()
    } else {
        AppJson(SignedOut { success: true }).into_response()
    };
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&state.settings.server, SESSION_COOKIE, "", 0),
    );
    Ok(response)
}

/// No session: an empty object, as NextAuth clients expect.
#[derive(Serialize)]
pub struct NoSession {}

impl utoipa::PartialSchema for NoSession {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .description(Some("No session: an empty object"))
            .additional_properties(Some(
                utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
            ))
            .into()
    }
}

impl ToSchema for NoSession {}

/// The answer of `GET /api/auth/session`: one shape or the other.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum SessionAnswer {
    SignedIn(SessionView),
    SignedOut(NoSession),
}

/// The current session: `{user, expires}`, or `{}` when signed out.
#[utoipa::path(
    get,
    path = "/api/auth/session",
    tag = "auth",
    responses((status = 200, description = "The session, or an empty object without one", body = SessionAnswer))
)]
pub async fn session(OptionalUser(user): OptionalUser) -> Response {
    let answer = match user {
        Some(principal) => SessionAnswer::SignedIn(session_view(
            &principal.session.user,
            principal.session.expires_at,
        )),
        None => SessionAnswer::SignedOut(NoSession {}),
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
            callback_url: format!("{base}/api/auth/signin"),
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
    let (csrf_token, cookie) = csrf_token_for(&state, &headers);
    let mut response = AppJson(CsrfView { csrf_token }).into_response();
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// One linked identity-provider account.
#[derive(Serialize, ToSchema)]
pub struct AccountView {
    pub provider: String,
    #[serde(rename = "providerAccountId")]
    pub provider_account_id: String,
    pub email: Option<String>,
    #[serde(rename = "emailVerified")]
    pub email_verified: bool,
    #[serde(rename = "lastUsedAt")]
    pub last_used_at: Option<String>,
    #[serde(rename = "createdAt")]
    pub created_at: String,
}

impl From<LinkedAccount> for AccountView {
    fn from(account: LinkedAccount) -> Self {
        AccountView {
            provider: account.provider,
            provider_account_id: account.provider_account_id,
            email: account.email,
            email_verified: account.email_verified.0,
            last_used_at: account.last_used_at.map(rfc3339),
            created_at: rfc3339(account.created_at),
        }
    }
}

/// The current user's ways to sign in.
#[derive(Serialize, ToSchema)]
pub struct AccountsView {
    pub accounts: Vec<AccountView>,
    #[serde(rename = "hasPassword")]
    pub has_password: bool,
}

/// The current user's linked identity providers.
#[utoipa::path(
    get,
    path = "/api/auth/accounts",
    tag = "auth",
    security(("session_cookie" = [])),
    responses(
        (status = 200, description = "Linked accounts", body = AccountsView),
        (status = 401, description = "Not signed in", body = GeneralError),
    )
)]
pub async fn accounts(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
) -> Result<AppJson<AccountsView>, AppError> {
    let accounts = state.db.accounts_of_user(principal.user_id()).await?;
    Ok(AppJson(AccountsView {
        accounts: accounts.into_iter().map(AccountView::from).collect(),
        has_password: principal.session.user.row.password_hash.is_some(),
    }))
}

/// Unlink answer.
#[derive(Serialize, ToSchema)]
pub struct UnlinkedView {
    pub message: String,
    pub provider: String,
}

/// Unlink an identity provider from the current user. Refused with 409 when
/// it is their last way to sign in.
#[utoipa::path(
    delete,
    path = "/api/auth/accounts/{providerId}",
    tag = "auth",
    security(("session_cookie" = [])),
    params(("providerId" = String, Path, description = "Provider id, e.g. github")),
    responses(
        (status = 200, description = "Unlinked", body = UnlinkedView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "That provider is not linked", body = GeneralError),
        (status = 409, description = "It is the last way to sign in", body = GeneralError),
    )
)]
pub async fn unlink_account(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
    TextPath(provider_id): TextPath,
) -> Result<AppJson<UnlinkedView>, AppError> {
    let (user_id, provider) = (principal.user_id(), provider_id.clone());
    match state
        .db
        .write(|tx| Box::pin(async move { accounts::unlink(tx, user_id, &provider).await }))
        .await?
    {
        UnlinkOutcome::Unlinked => Ok(AppJson(UnlinkedView {
            message: format!("{provider_id} was unlinked from your account"),
            provider: provider_id,
        })),
        UnlinkOutcome::NotLinked => Err(AppError::NotFound("linked account")),
        UnlinkOutcome::LastSignInMethod => Err(AppError::Conflict(
            "cannot unlink the last way to sign in: set a password or link another provider first"
                .to_owned(),
        )),
    }
}

/// Admin token request: a subset of the caller's admin permissions and a
/// lifetime up to the configured maximum.
#[derive(Deserialize, ToSchema, Default)]
pub struct TokenRequest {
    pub permissions: Option<Vec<String>>,
    /// Seconds; at most `admin_token_ttl_secs`.
    #[serde(rename = "ttlSeconds")]
    pub ttl_seconds: Option<i64>,
}

/// An admin JWT.
#[derive(Serialize, ToSchema)]
pub struct TokenView {
    pub token: String,
    #[serde(rename = "expiresAt")]
    pub expires_at: String,
    pub permissions: Vec<AdminPermission>,
}

/// Exchange an admin's session for a short-lived admin JWT for the
/// versioned admin surface.
#[utoipa::path(
    post,
    path = "/api/auth/token",
    tag = "auth",
    security(("session_cookie" = [])),
    request_body(content = TokenRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The token", body = TokenView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Not an admin, or asked for permissions beyond the role", body = GeneralError),
        (status = 422, description = "Unknown permission or bad lifetime", body = GeneralError),
        (status = 415, description = "A body that is not application/json", body = GeneralError),
    )
)]
pub async fn admin_token(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
    RequestAudit(context): RequestAudit,
    request: Request,
) -> Result<AppJson<TokenView>, AppError> {
    let declared_json = crate::http::extract::json::is_json_content_type(request.headers());
    let body = axum::body::to_bytes(request.into_body(), 64 * 1024)
        .await
        .map_err(|_| AppError::PayloadTooLarge { limit: 64 * 1024 })?;
    let wanted: TokenRequest = if body.is_empty() {
        TokenRequest::default()
    } else if !declared_json {
        return Err(AppError::UnsupportedMediaType(
            "a request body must be sent as application/json".to_owned(),
        ));
    } else {
        parse_json(&body)?
    };
    let (token, claims) = crate::auth::issue_admin_token(
        &state,
        principal.user_id(),
        principal.role(),
        wanted.permissions.as_deref(),
        wanted.ttl_seconds,
    )?;
    let minted = serde_json::json!({
        "jti": claims.jti,
        "permissions": claims.permissions,
        "expiresAt": claims.exp,
    });
    record_token_action(
        &state,
        context,
        "admin_token.mint",
        principal.user_id(),
        minted,
    )
    .await?;
    Ok(AppJson(TokenView {
        token,
        expires_at: rfc3339(claims.exp * 1000),
        permissions: claims.permissions,
    }))
}

/// Revoke the admin JWT sent in `Authorization`; it stops working on every
/// instance at once. Audited as `admin_token.revoke`.
#[utoipa::path(
    delete,
    path = "/api/auth/token",
    tag = "auth",
    security(("admin_jwt" = [])),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, description = "No valid admin token", body = GeneralError),
    )
)]
pub async fn revoke_admin_token(
    State(state): State<AppState>,
    AnyAdminToken(token): AnyAdminToken,
    RequestAudit(context): RequestAudit,
) -> Result<StatusCode, AppError> {
    let (jti, expires_at) = (
        token.claims.jti.clone(),
        token.claims.exp.saturating_mul(1000),
    );
    let revoked = serde_json::json!({
        "jti": token.claims.jti,
        "permissions": token.claims.permissions,
    });
    let user_id = token.user_id;
    state
        .db
        .write(|tx| {
            Box::pin(async move {
                auth_state::revoke_token(tx, &jti, expires_at).await?;
                audit::record(
                    tx,
                    &context,
                    AuditAction {
                        action: "admin_token.revoke",
                        target_type: "user",
                        target_id: Some(user_id.to_string()),
                        changes: revoked,
                    },
                )
                .await
            })
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Records an admin token's mint or revocation, as the command line's
/// `token` does, naming the token's user as the target.
async fn record_token_action(
    state: &AppState,
    context: AuditContext,
    action: &'static str,
    user_id: i64,
    changes: serde_json::Value,
) -> Result<(), AppError> {
    state
        .db
        .write(|tx| {
            Box::pin(async move {
                audit::record(
                    tx,
                    &context,
                    AuditAction {
                        action,
                        target_type: "user",
                        target_id: Some(user_id.to_string()),
                        changes,
                    },
                )
                .await
            })
        })
        .await?;
    Ok(())
}

fn with_session_cookie(
    state: &AppState,
    started: &StartedSession,
    mut response: Response,
) -> Response {
    let max_age = (started.expires_at - now_millis()) / 1000;
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(
            &state.settings.server,
            SESSION_COOKIE,
            &started.token,
            max_age,
        ),
    );
    response
}

fn session_client(headers: &HeaderMap, address: Option<std::net::IpAddr>) -> SessionClient {
    SessionClient {
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|value| value.to_str().ok())
            .map(|agent| agent.chars().take(512).collect()),
        ip_address: address.map(|ip| ip.to_string()),
    }
}

fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"))
}

/// The CSRF token in the request's cookie, or a new one with its cookie.
fn csrf_token_for(state: &AppState, headers: &HeaderMap) -> (String, Option<HeaderValue>) {
    match cookie_value(headers, CSRF_COOKIE) {
        Some(token) => (token, None),
        None => {
            let token = random_token();
            let cookie = set_cookie(&state.settings.server, CSRF_COOKIE, &token, 24 * 3600);
            (token, Some(cookie))
        }
    }
}

/// Double-submit check for form posts.
fn check_csrf(cookie: Option<&str>, submitted: Option<&str>) -> Result<(), AppError> {
    match (cookie, submitted) {
        (Some(cookie), Some(submitted)) if !cookie.is_empty() && cookie == submitted => Ok(()),
        _ => Err(AppError::Forbidden),
    }
}

/// The provider callback address registered with the provider.
fn callback_url_for(state: &AppState, provider_id: &str) -> String {
    format!(
        "{}/api/auth/callback/{provider_id}",
        state
            .settings
            .server
            .base_url
            .as_str()
            .trim_end_matches('/')
    )
}

/// Where to send the browser after sign-in: `requested` resolved against
/// the base URL by the WHATWG URL parser (the one browsers use, so a tab or
/// backslash in `/\t/evil.example` is read as the browser will read it),
/// kept only when its origin is the base URL's, and sent in its serialized
/// form. Control characters refuse it outright. Anything refused is `/`:
/// sign-in must not become an open redirect.
fn safe_callback(state: &AppState, requested: Option<&str>) -> String {
    let Some(requested) = requested.filter(|value| !value.trim().is_empty()) else {
        return "/".to_owned();
    };
    if requested.chars().any(char::is_control) {
        return "/".to_owned();
    }
    let base = &state.settings.server.base_url;
    match base.join(requested.trim()) {
        Ok(url) if url.origin() == base.origin() => {
            // The path and what follows, unless the path itself starts with
            // `//`, which a browser would read as another host.
            let local = &url[url::Position::BeforePath..];
            if local.starts_with("//") {
                url.to_string()
            } else {
                local.to_owned()
            }
        }
        _ => "/".to_owned(),
    }
}

/// Back to the sign-in page with an error code.
fn refused(code: &str) -> Response {
    Redirect::to(&signin_error_url("/", code)).into_response()
}

fn signin_error_url(callback: &str, code: &str) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("error", code)
        .append_pair("callbackUrl", callback)
        .finish();
    format!("/api/auth/signin?{query}")
}
