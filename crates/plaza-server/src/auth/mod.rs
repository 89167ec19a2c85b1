//! Who is asking, and what they may do.
//!
//! Routes declare their access rule by the extractor types in their
//! signatures — [`OptionalUser`], [`CurrentUser`], [`AdminToken`],
//! [`MetricsAccess`] — so a route cannot forget its check, and the rules
//! live here only. A personal access token (`Bearer plz_…`) resolves into
//! the same principal a session does, once per request, held to its
//! scopes by the operation's row of `plaza_domain::policy::TOKEN_SCOPES`.

pub mod account_mail;
pub mod csrf;
pub mod identity;
pub mod jwt;
pub mod oauth;
pub mod password;
pub mod signin;
pub mod two_factor;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRequestParts, MatchedPath};
use axum::http::header;
use axum::http::request::Parts;
use plaza_domain::admin_principal::Capabilities;
use plaza_domain::audit::{AuditContext, AuditSurface};
use plaza_domain::grants;
use plaza_domain::policy::{Actor, Decision, TokenScope};
use plaza_domain::sessions::SessionUser;
use plaza_domain::users::{Role, UserStatus};

use crate::http::cookies::{SESSION_COOKIE, cookie_value};
use crate::http::error::AppError;
use crate::http::extract::documented::{Answer, DocumentedExtractor};
use crate::http::middleware::AccessUser;
use crate::http::rate_limit::{Credited, client_address};
use crate::secrets::{hash_token, random_token};
use crate::settings::{AuthSettings, Settings, TrustedProxies};
use identity::Auth;
use jwt::{AdminClaims, AdminPermission, JwtKeys};

/// What the access extractors read from the router's state. The app's
/// state, which composes every service, lends them (`state.rs`); nothing
/// here names it.
pub trait AuthState: Send + Sync {
    fn auth(&self) -> &Auth;
    fn settings(&self) -> &Settings;
    /// The proxies whose forwarding headers name the client.
    fn trusted_proxies(&self) -> &TrustedProxies;
}

/// The signed-in user behind a request's session cookie.
#[derive(Debug, Clone)]
pub struct SessionPrincipal {
    pub session: Arc<SessionUser>,
    pub token_hash: String,
    /// The role the session acts with ([`SessionPrincipal::role`]).
    acting_role: Role,
}

impl SessionPrincipal {
    /// The principal of `session`, acting with the authority
    /// [`plaza_domain::policy::acting_role`] leaves it: under
    /// `admin_totp_required`, and by the moderator's grant.
    pub fn new(session: SessionUser, token_hash: String, admin_totp_required: bool) -> Self {
        let acting_role = plaza_domain::policy::acting_role(
            session.user.role,
            passed_second_factor(&session),
            admin_totp_required,
            session.capabilities.hold(grants::MODERATE_POSTS),
        );
        SessionPrincipal {
            session: Arc::new(session),
            token_hash,
            acting_role,
        }
    }

    pub fn user_id(&self) -> i64 {
        self.session.user.id()
    }

    /// The role this session acts with: the user's, or a member's while
    /// `admin_totp_required` holds back an administrator's authority from
    /// a session that passed no second factor, or for a moderator without
    /// the `posts:moderate` grant.
    pub fn role(&self) -> Role {
        self.acting_role
    }

    /// Whether this session signed in with the user's second factor, which
    /// is still on.
    pub fn passed_second_factor(&self) -> bool {
        passed_second_factor(&self.session)
    }

    /// The rule of `admin_totp_required` for this session, by the user's
    /// own role: 403 saying why for an administrator whose session passed
    /// no second factor.
    pub fn require_second_factor(&self, settings: &AuthSettings) -> Result<(), AppError> {
        require_second_factor(
            settings,
            self.session.user.role,
            self.passed_second_factor(),
        )
    }

    /// The signed-in user as the policy's actor.
    pub fn actor(&self) -> Actor {
        Actor {
            user_id: self.user_id(),
            role: self.role(),
        }
    }
}

/// Whether `session` signed in with its user's second factor, still on.
fn passed_second_factor(session: &SessionUser) -> bool {
    session.user.has_totp() && session.second_factor_at.is_some()
}

/// The actor behind an optional session.
pub fn actor_of(principal: Option<&SessionPrincipal>) -> Option<Actor> {
    principal.map(SessionPrincipal::actor)
}

/// What a signed-in principal (or nobody) may see of members' content.
pub fn viewer_of(principal: Option<&SessionPrincipal>) -> plaza_domain::posts::Viewer {
    plaza_domain::policy::post_viewer(actor_of(principal))
}

/// A policy rule's answer as a result: 403 when forbidden, 404 naming
/// `resource` when it is hidden from the actor.
pub fn authorize(decision: Decision, resource: &'static str) -> Result<(), AppError> {
    match decision {
        Decision::Allowed => Ok(()),
        Decision::Forbidden => Err(AppError::Forbidden),
        Decision::Hidden => Err(AppError::NotFound(resource)),
    }
}

/// Whose authority a request acts with: the user behind the credential
/// that the route's access rule accepted (its session, or its bearer admin
/// token). The extractor that accepts a credential records it once in the
/// request's extensions and the audit reads it from there, so an entry
/// always names the principal whose authority allowed the action, whatever
/// other credential the request also carries.
#[derive(Debug, Clone)]
pub struct Principal {
    pub user_id: i64,
    pub email: String,
}

impl Principal {
    /// Records that `user_id`'s credential is the one this request acts with.
    pub(crate) fn accept(parts: &mut Parts, user_id: i64, email: &str) {
        if let Some(access) = parts.extensions.get::<AccessUser>() {
            access.record(user_id);
        }
        parts.extensions.insert(Principal {
            user_id,
            email: email.to_owned(),
        });
    }
}

/// A signed-in user, or none. Resolved once per request and cached.
#[derive(Debug, Clone)]
pub struct OptionalUser(pub Option<SessionPrincipal>);

impl<S: AuthState> FromRequestParts<S> for OptionalUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        OptionalUser::resolve(parts, state, Duration::ZERO).await
    }
}

impl OptionalUser {
    /// The signed-in user as analytics collection sees them: a session a
    /// lookup confirmed within `analytics_session_recheck_ms` counts without
    /// asking the database again (docs/operations.md, tuning settings).
    pub async fn for_analytics<S: AuthState>(
        parts: &mut Parts,
        state: &S,
    ) -> Result<Self, AppError> {
        let max_age =
            Duration::from_millis(state.settings().analytics.analytics_session_recheck_ms);
        OptionalUser::resolve(parts, state, max_age).await
    }

    /// Resolves the session cookie once per request (later calls take the
    /// first answer), trusting a confirmation younger than `max_age`.
    async fn resolve<S: AuthState>(
        parts: &mut Parts,
        state: &S,
        max_age: Duration,
    ) -> Result<Self, AppError> {
        if let Some(cached) = parts.extensions.get::<OptionalUser>() {
            return Ok(cached.clone());
        }
        let resolved = if sent_access_token(parts).is_some() {
            Some(token_principal(parts, state).await?)
        } else {
            match cookie_value(&parts.headers, SESSION_COOKIE) {
                Some(token) => {
                    let token_hash = hash_token(&token);
                    let auth = state.auth();
                    auth.session_lookups
                        .lookup_recent(&auth.db, &auth.sessions, &token_hash, max_age)
                        .await?
                        .filter(|session| session.user.status == UserStatus::Active)
                        .map(|session| {
                            SessionPrincipal::new(
                                session,
                                token_hash,
                                state.settings().auth.admin_totp_required,
                            )
                        })
                }
                None => None,
            }
        };
        if let (Some(principal), Some(access)) =
            (resolved.as_ref(), parts.extensions.get::<AccessUser>())
        {
            access.record(principal.user_id());
        }
        let user = OptionalUser(resolved);
        parts.extensions.insert(user.clone());
        Ok(user)
    }
}

impl DocumentedExtractor for OptionalUser {
    const ANSWERS: &'static [Answer] = &[];
}

/// A signed-in, active user; anyone else gets 401.
#[derive(Debug, Clone)]
pub struct CurrentUser(pub SessionPrincipal);

impl<S: AuthState> FromRequestParts<S> for CurrentUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let principal = OptionalUser::from_request_parts(parts, state)
            .await?
            .0
            .ok_or(AppError::Unauthorized)?;
        Principal::accept(
            parts,
            principal.user_id(),
            &principal.session.user.row.email,
        );
        Ok(CurrentUser(principal))
    }
}

impl DocumentedExtractor for CurrentUser {
    const ANSWERS: &'static [Answer] = &[Answer::new(401, "Not signed in")];
}

/// A moderator or higher reviewing custom emojis on the unversioned admin
/// surface, by session or admin JWT. Nobody signed in is 401, anyone else
/// 403.
#[derive(Debug, Clone, Copy)]
pub struct EmojiModerator(pub Actor);

impl<S: AuthState> FromRequestParts<S> for EmojiModerator {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let actor = session_or_token_actor(parts, state).await?;
        plaza_domain::policy::moderate_emojis(actor)
            .check("user", "custom emojis are reviewed by moderators")?;
        Ok(EmojiModerator(actor))
    }
}

impl DocumentedExtractor for EmojiModerator {
    const ANSWERS: &'static [Answer] = &[
        Answer::new(401, "Not signed in, and no valid admin token"),
        Answer::new(403, "Not a moderator"),
    ];
}

/// The actor of the unversioned admin surface: the holder of a Bearer admin
/// JWT (checked as on the versioned surface, the method's permission
/// included) when one is sent, else the signed-in user (an administrator
/// without two-factor sign-in is 403 while `admin_totp_required` is set);
/// nobody is 401.
async fn session_or_token_actor<S: AuthState>(
    parts: &mut Parts,
    state: &S,
) -> Result<Actor, AppError> {
    session_or_token_principal(parts, state)
        .await
        .map(|(actor, _)| actor)
}

/// [`session_or_token_actor`] with the capabilities the actor holds.
async fn session_or_token_principal<S: AuthState>(
    parts: &mut Parts,
    state: &S,
) -> Result<(Actor, Capabilities), AppError> {
    if parts.headers.contains_key(header::AUTHORIZATION) {
        let token = AdminToken::from_request_parts(parts, state).await?;
        let actor = Actor {
            user_id: token.user_id,
            role: token.role,
        };
        Ok((actor, token.capabilities))
    } else {
        let principal = CurrentUser::from_request_parts(parts, state).await?.0;
        principal.require_second_factor(&state.settings().auth)?;
        Ok((principal.actor(), principal.session.capabilities.clone()))
    }
}

/// The rule of `admin_totp_required` for an administrator's session or
/// token ([`plaza_domain::policy::use_admin_credentials`]): 403 in the
/// surface's shape for an administrator whose credential passed no second
/// factor.
pub fn require_second_factor(
    settings: &AuthSettings,
    role: Role,
    second_factor: bool,
) -> Result<(), AppError> {
    plaza_domain::policy::use_admin_credentials(role, second_factor, settings.admin_totp_required)
    .check(
        "user",
        "administrators need two-factor sign-in (TOTP) turned on, and a session signed in with it: `admin_totp_required` is set",
    )?;
    Ok(())
}

/// A capability (a permission name granted to roles, DECISIONS.md) that an
/// [`Administrator`] route needs besides the administrator role.
pub trait Capability: Send + Sync + 'static {
    /// The permission's name, such as `users:manage`; `None`: the role is enough.
    const NAME: Option<&'static str>;
}

/// No capability beyond the administrator role.
pub struct AnyAdmin;
/// `users:manage`: the user list, bans, subscriptions.
pub struct ManageUsers;
/// `permissions:manage`: creating and changing permissions, granting them
/// to roles.
pub struct ManagePermissions;
/// `analytics:read`: the analytics dashboard.
pub struct ReadAnalytics;

impl Capability for AnyAdmin {
    const NAME: Option<&'static str> = None;
}
impl Capability for ManageUsers {
    const NAME: Option<&'static str> = Some(grants::MANAGE_USERS);
}
impl Capability for ManagePermissions {
    const NAME: Option<&'static str> = Some(grants::MANAGE_PERMISSIONS);
}
impl Capability for ReadAnalytics {
    const NAME: Option<&'static str> = Some(grants::READ_ANALYTICS);
}

/// An administrator or higher on the unversioned admin surface (session or
/// admin JWT) who holds the capability `C` through their role or a direct
/// grant (a super admin holds every one), with two-factor sign-in on while
/// `admin_totp_required` is set. Nobody signed in is 401, anyone else 403.
pub struct Administrator<C: Capability> {
    pub actor: Actor,
    capability: std::marker::PhantomData<C>,
}

impl<S: AuthState, C: Capability> FromRequestParts<S> for Administrator<C> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let (actor, capabilities) = session_or_token_principal(parts, state).await?;
        let holds = C::NAME.is_none_or(|capability| capabilities.hold(capability));
        plaza_domain::policy::administer(actor, holds)
            .check("user", "this needs an administrator holding the capability")?;
        Ok(Administrator {
            actor,
            capability: std::marker::PhantomData,
        })
    }
}

impl<C: Capability> DocumentedExtractor for Administrator<C> {
    const ANSWERS: &'static [Answer] = &[
        Answer::new(401, "Not signed in, and no valid admin token"),
        Answer::new(
            403,
            "Not an administrator, without the capability the route needs, or without two-factor sign-in while `admin_totp_required` is set",
        ),
    ];
}

/// Answers of the admin token checks.
const ADMIN_TOKEN_ANSWERS: &[Answer] = &[
    Answer::new(
        401,
        "No valid admin token (missing, malformed, expired, revoked, or its user banned)",
    ),
    Answer::new(
        403,
        "The token's user is no longer an admin, has no two-factor sign-in while `admin_totp_required` is set, or the token lacks the permission",
    ),
];

/// A valid admin JWT whose user is still an active admin (with two-factor
/// sign-in on while `admin_totp_required` is set), carrying the permission
/// the request's method needs (SPEC.md "Authentication" 2).
#[derive(Debug, Clone)]
pub struct AdminToken {
    pub claims: AdminClaims,
    pub user_id: i64,
    pub email: String,
    pub role: Role,
    /// What the token's user holds now (see [`Capabilities`]).
    pub capabilities: Capabilities,
    /// Whether the token's user has two-factor sign-in on now.
    pub has_totp: bool,
}

impl<S: AuthState> FromRequestParts<S> for AdminToken {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let token = admin_token_for(parts, state).await?;
        require_second_factor(&state.settings().auth, token.role, token.has_totp)?;
        let needed = AdminPermission::for_method(parts.method.as_str());
        if !token.claims.grants(needed) {
            return Err(AppError::InsufficientAdminPermissions {
                required: needed.as_str(),
            });
        }
        Ok(token)
    }
}

impl DocumentedExtractor for AdminToken {
    const ANSWERS: &'static [Answer] = ADMIN_TOKEN_ANSWERS;
}

/// A valid admin token, whatever permissions it carries (revoking one's own
/// token needs no particular permission, nor two-factor sign-in).
#[derive(Debug, Clone)]
pub struct AnyAdminToken(pub AdminToken);

impl<S: AuthState> FromRequestParts<S> for AnyAdminToken {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        admin_token_for(parts, state).await.map(AnyAdminToken)
    }
}

impl DocumentedExtractor for AnyAdminToken {
    const ANSWERS: &'static [Answer] = ADMIN_TOKEN_ANSWERS;
}

/// The claims of an `Authorization: Bearer` admin token, when its
/// signature and lifetime check out; whether it is revoked or still grants
/// anything is for the route's extractor to decide. Rate limits count by it.
/// Verified once per request: the limiter and the route's extractor read
/// the same answer.
pub fn bearer_claims(parts: &mut Parts, keys: &JwtKeys) -> Option<AdminClaims> {
    if let Some(VerifiedBearer(claims)) = parts.extensions.get::<VerifiedBearer>() {
        return claims.clone();
    }
    let claims = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(bearer_token)
        .and_then(|bearer| keys.verify(bearer).ok());
    parts.extensions.insert(VerifiedBearer(claims.clone()));
    claims
}

/// The user a rate limit counts a request as: the holder of a valid admin
/// token, with whether it holds `admin:super`, else the signed-in user
/// (for analytics collection, `analytics`, resolved as its handler
/// resolves them: [`OptionalUser::for_analytics`]); `None` for anyone else.
pub async fn credited_user<S: AuthState>(
    parts: &mut Parts,
    state: &S,
    analytics: bool,
) -> Option<Credited> {
    if let Some(claims) = bearer_claims(parts, &state.auth().jwt)
        && let Ok(user_id) = claims.sub.parse()
    {
        return Some(Credited {
            user_id,
            super_token: claims.grants_super(),
        });
    }
    if sent_access_token(parts).is_some() {
        return match resolve_access_token(parts, state).await {
            Ok(TokenResolution::Valid { principal, .. }) => Some(Credited {
                user_id: principal.user_id(),
                super_token: false,
            }),
            _ => None,
        };
    }
    // Without a session cookie there is nobody to look up.
    cookie_value(&parts.headers, SESSION_COOKIE)?;
    let user = if analytics {
        OptionalUser::for_analytics(parts, state).await.ok()
    } else {
        OptionalUser::from_request_parts(parts, state).await.ok()
    };
    let OptionalUser(Some(principal)) = user? else {
        return None;
    };
    Some(Credited {
        user_id: principal.user_id(),
        super_token: false,
    })
}

/// The answer of [`bearer_claims`] for this request.
#[derive(Clone)]
struct VerifiedBearer(Option<AdminClaims>);

/// Validates the bearer token without the per-method permission check, and
/// makes its user the request's [`Principal`].
async fn admin_token_for<S: AuthState>(
    parts: &mut Parts,
    state: &S,
) -> Result<AdminToken, AppError> {
    if sent_access_token(parts).is_some() {
        return Err(refuse_access_token(parts, state).await);
    }
    let mut claims = bearer_claims(parts, &state.auth().jwt).ok_or(AppError::Unauthorized)?;
    let user_id: i64 = claims.sub.parse().map_err(|_| AppError::Unauthorized)?;
    let subject = state
        .auth()
        .db
        .token_subject(user_id, &claims.jti, claims.issued_at_millis())
        .await?
        .ok_or(AppError::Unauthorized)?;
    if subject.revoked || subject.status == UserStatus::Banned {
        return Err(AppError::Unauthorized);
    }
    if !subject.role.is_admin() || subject.status != UserStatus::Active {
        return Err(AppError::Forbidden);
    }
    // A token carries what its holder's role allowed when it was minted;
    // it grants only what the role allows now (a demoted super admin's
    // `admin:super` token loses `admin:super`).
    let allowed = AdminPermission::allowed_for(subject.role);
    claims
        .permissions
        .retain(|permission| allowed.contains(permission));
    Principal::accept(parts, user_id, &subject.email);
    Ok(AdminToken {
        claims,
        user_id,
        email: subject.email,
        role: subject.role,
        capabilities: subject.capabilities,
        has_totp: subject.has_totp,
    })
}

/// The credentials of an `Authorization: Bearer …` header; the scheme is
/// case-insensitive (RFC 7235).
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, credentials) = header.trim_start().split_once(' ')?;
    let credentials = credentials.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !credentials.is_empty()).then_some(credentials)
}

/// Mints an admin JWT for a user with an admin role: `requested` (default:
/// everything the role allows) must be within the role's permissions, and
/// the lifetime within `admin_token_ttl_secs`.
pub fn issue_admin_token(
    auth: &Auth,
    settings: &AuthSettings,
    user_id: i64,
    role: Role,
    requested: Option<&[String]>,
    ttl_secs: Option<i64>,
) -> Result<(String, AdminClaims), AppError> {
    let allowed = AdminPermission::allowed_for(role);
    if allowed.is_empty() {
        return Err(AppError::Forbidden);
    }
    let permissions = match requested {
        None => allowed.to_vec(),
        Some([]) => {
            return Err(AppError::invalid(
                "permissions",
                "must name at least one permission",
            ));
        }
        Some(names) => {
            let mut permissions = Vec::with_capacity(names.len());
            for name in names {
                let permission = AdminPermission::parse(name).ok_or_else(|| {
                    AppError::invalid(
                        "permissions",
                        format!("unknown permission {name:?}; use admin:read, admin:write, admin:delete or admin:super"),
                    )
                })?;
                if !allowed.contains(&permission) {
                    return Err(AppError::InsufficientAdminPermissions {
                        required: permission.as_str(),
                    });
                }
                if !permissions.contains(&permission) {
                    permissions.push(permission);
                }
            }
            permissions
        }
    };
    let max_ttl = i64::try_from(settings.admin_token_ttl_secs).unwrap_or(i64::MAX);
    let ttl = ttl_secs.unwrap_or(max_ttl);
    if !(1..=max_ttl).contains(&ttl) {
        return Err(AppError::invalid(
            "ttlSeconds",
            format!("must be between 1 and {max_ttl}"),
        ));
    }
    auth.jwt
        .mint(user_id, role.as_str(), permissions, ttl)
        .map_err(AppError::internal)
}

/// The prefix of every personal access token.
pub const ACCESS_TOKEN_PREFIX: &str = "plz_";

/// A new personal access token: the prefix and 256 random bits.
pub fn new_access_token() -> String {
    format!("{ACCESS_TOKEN_PREFIX}{}", random_token())
}

/// The personal access token sent as the request's bearer credential.
fn sent_access_token(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(bearer_token)
        .filter(|token| token.starts_with(ACCESS_TOKEN_PREFIX))
}

/// What the request's personal access token resolved to, once per request.
#[derive(Debug, Clone)]
enum TokenResolution {
    /// In force, its user active: the user, acting as with a session that
    /// passed no second factor, and the token's scopes.
    Valid {
        principal: SessionPrincipal,
        scopes: Vec<TokenScope>,
    },
    /// Unknown, revoked, expired or ended, or its user not active.
    Refused,
}

/// Resolves the request's personal access token (the answer is kept for
/// the rest of the request); an unavailable database is an error, not a
/// refusal.
async fn resolve_access_token<S: AuthState>(
    parts: &mut Parts,
    state: &S,
) -> Result<TokenResolution, AppError> {
    if let Some(resolved) = parts.extensions.get::<TokenResolution>() {
        return Ok(resolved.clone());
    }
    let Some(token) = sent_access_token(parts) else {
        return Ok(TokenResolution::Refused);
    };
    let token_hash = hash_token(token);
    let found = state
        .auth()
        .db
        .token_user(&token_hash, plaza_domain::time::now_millis())
        .await?;
    let resolved = match found.filter(|found| found.user.user.status == UserStatus::Active) {
        Some(found) => TokenResolution::Valid {
            principal: SessionPrincipal::new(
                found.user,
                token_hash,
                state.settings().auth.admin_totp_required,
            ),
            scopes: found.scopes,
        },
        None => TokenResolution::Refused,
    };
    parts.extensions.insert(resolved.clone());
    Ok(resolved)
}

/// The user behind the request's personal access token, when the token is
/// in force (else 401) and holds the scope of the operation the request
/// calls (else 403 `INSUFFICIENT_SCOPE`), by the table of
/// [`plaza_domain::policy::TOKEN_SCOPES`].
async fn token_principal<S: AuthState>(
    parts: &mut Parts,
    state: &S,
) -> Result<SessionPrincipal, AppError> {
    let TokenResolution::Valid { principal, scopes } = resolve_access_token(parts, state).await?
    else {
        return Err(AppError::Unauthorized);
    };
    let path = parts
        .extensions
        .get::<MatchedPath>()
        .map(|path| path.as_str().to_owned())
        .unwrap_or_default();
    let method = parts.method.as_str();
    if plaza_domain::policy::use_token(&scopes, method, &path).is_allowed() {
        return Ok(principal);
    }
    Err(AppError::InsufficientScope(
        match plaza_domain::policy::token_scope(method, &path) {
            Some(needed) => format!("this token lacks the `{}` scope", needed.as_str()),
            None => "personal access tokens cannot be used for this operation".to_owned(),
        },
    ))
}

/// The answer to a personal access token where none may be used (the
/// admin surfaces, the metrics scrape): 401 when it is not in force, else
/// 403 `INSUFFICIENT_SCOPE`.
async fn refuse_access_token<S: AuthState>(parts: &mut Parts, state: &S) -> AppError {
    match resolve_access_token(parts, state).await {
        Ok(TokenResolution::Valid { .. }) => AppError::InsufficientScope(
            "personal access tokens cannot be used for this operation".to_owned(),
        ),
        Ok(TokenResolution::Refused) => AppError::Unauthorized,
        Err(error) => error,
    }
}

/// Access to `/api/metrics`: the `metrics_token` scrape credential, an
/// admin token with `admin:read`, or anyone when `metrics_public` is on.
pub struct MetricsAccess;

impl<S: AuthState> FromRequestParts<S> for MetricsAccess {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let telemetry = &state.settings().telemetry;
        if telemetry.metrics_public {
            return Ok(MetricsAccess);
        }
        if let Some(expected) = &telemetry.metrics_token {
            let sent = parts
                .headers
                .get(header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .and_then(bearer_token);
            // Digests compared, so the time taken tells nothing of the
            // token.
            if sent.is_some_and(|sent| hash_token(sent) == hash_token(expected)) {
                return Ok(MetricsAccess);
            }
        }
        let token = admin_token_for(parts, state).await?;
        require_second_factor(&state.settings().auth, token.role, token.has_totp)?;
        if token.claims.grants(AdminPermission::Read) {
            Ok(MetricsAccess)
        } else {
            Err(AppError::InsufficientAdminPermissions {
                required: AdminPermission::Read.as_str(),
            })
        }
    }
}

impl DocumentedExtractor for MetricsAccess {
    const ANSWERS: &'static [Answer] = ADMIN_TOKEN_ANSWERS;
}

/// The client's address: the peer, or when the peer is a trusted proxy, the
/// right-most forwarded hop that is not one (`trusted_proxies`; see
/// [`crate::http::rate_limit::address`]).
pub struct ClientAddress(pub Option<IpAddr>);

impl<S: AuthState> FromRequestParts<S> for ClientAddress {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        Ok(ClientAddress(client_address(
            parts,
            state.trusted_proxies(),
        )))
    }
}

impl DocumentedExtractor for ClientAddress {
    const ANSWERS: &'static [Answer] = &[];
}

/// Who is acting and from where, for the audit trail: the request's
/// [`Principal`] (so it must follow the route's access extractor; without
/// one the action has no actor), the client address, the user agent and
/// the surface of the path.
pub struct RequestAudit(pub AuditContext);

impl<S: AuthState> FromRequestParts<S> for RequestAudit {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let principal = parts.extensions.get::<Principal>().cloned();
        let ClientAddress(address) = ClientAddress::from_request_parts(parts, state).await?;
        let declared = parts
            .extensions
            .get::<crate::http::error::Surface>()
            .copied();
        let surface = match declared.unwrap_or(crate::http::error::Surface::General) {
            crate::http::error::Surface::AdminV1 => AuditSurface::AdminV1,
            crate::http::error::Surface::Admin => AuditSurface::Admin,
            crate::http::error::Surface::Console => AuditSurface::Console,
            _ => AuditSurface::Api,
        };
        Ok(RequestAudit(AuditContext {
            actor_id: principal.as_ref().map(|principal| principal.user_id),
            actor_email: principal.map(|principal| principal.email),
            ip_address: address.map(|ip| ip.to_string()),
            user_agent: parts
                .headers
                .get(header::USER_AGENT)
                .and_then(|value| value.to_str().ok())
                .map(|agent| agent.chars().take(512).collect()),
            surface,
        }))
    }
}

impl DocumentedExtractor for RequestAudit {
    const ANSWERS: &'static [Answer] = &[];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer abc"), Some("abc"));
        assert_eq!(bearer_token("BEARER  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("Bearerabc"), None);
    }
}
