//! Users: sign-up, the general user schema (listing, reading, changing and
//! deleting users) and public profiles. Emails are shown to their owner and
//! to admins only; users without a public profile, and inactive or banned
//! ones, exist only for themselves and admins.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use plaza_domain::audit::{self, AuditAction};
use plaza_domain::email_tokens::TokenPurpose;
use plaza_domain::ip_blocks::Severity;
use plaza_domain::policy::{self, Actor};
use plaza_domain::site_settings::RegistrationMode;
use plaza_domain::text::{MAX_IMAGE_URL_CHARS, MAX_NAME_CHARS, is_email_address, is_web_url};
use plaza_domain::time::rfc3339;
use plaza_domain::users::{
    self, NewUser, Role, User, UserChanges, UserQuery, UserSort, UserStatus, is_valid_username,
};
use plaza_domain::word_filters::FilterScope;
use plaza_domain::{DomainError, Tx, email_domain_blocks, erasure, invites, registrations};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::account_mail::{self, PreparedLink};
use crate::auth::password::check_password;
use crate::auth::{
    ClientAddress, CurrentUser, OptionalUser, RequestAudit, SessionPrincipal, actor_of, authorize,
};
use crate::controllers::docs::Binary;
use crate::controllers::params::{self, Pagination, Problems, TextRule, check_text};
use crate::http::answer_cache;
use crate::http::error::schema::GeneralError;
use crate::http::error::{AppError, FieldError};
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::http::personal;
use crate::services::{erased_files, export};
use crate::settings::ServerSettings;
use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(list_users, create_user))
        .routes(crate::documented_routes!(
            get_user,
            update_user,
            delete_user
        ))
        .routes(crate::documented_routes!(user_profile))
        .routes(crate::documented_routes!(export_user))
}

/// A user in the general schema (SPEC.md "User, general schema").
#[derive(Serialize, ToSchema)]
pub struct UserView {
    #[schema(example = "42")]
    pub id: String,
    pub username: String,
    pub name: Option<String>,
    /// Shown to the user themself and to admins only.
    pub email: Option<String>,
    #[serde(rename = "emailVerified")]
    pub email_verified: Option<String>,
    pub image: Option<String>,
    pub profile_public: bool,
    pub bio: String,
    pub location: String,
    pub created_at: String,
    pub last_login: Option<String>,
    pub login_count: i64,
    /// A bot: an account a program drives with its tokens.
    pub is_bot: bool,
    /// Whether signing in needs a second factor (TOTP); shown to the user
    /// themself only.
    #[serde(rename = "totpEnabled", skip_serializing_if = "Option::is_none")]
    pub totp_enabled: Option<bool>,
}

impl UserView {
    /// `show_email` is decided by the caller's relation to the user.
    pub fn new(user: &User, show_email: bool) -> Self {
        let row = &user.row;
        UserView {
            id: row.id.to_string(),
            username: row.username.clone(),
            name: row.name.clone(),
            email: show_email.then(|| row.email.clone()),
            email_verified: row.email_verified_at.map(rfc3339),
            image: row.image.clone(),
            profile_public: row.profile_public.0,
            bio: row.bio.clone(),
            location: row.location.clone(),
            created_at: rfc3339(row.created_at),
            last_login: row.last_login_at.map(rfc3339),
            login_count: row.login_count,
            is_bot: row.is_bot.0,
            totp_enabled: None,
        }
    }

    /// Adds what the user themself sees alone (whether two-factor sign-in is
    /// on), when `actor` is that user.
    pub fn with_own_settings(mut self, user: &User, actor: Option<Actor>) -> Self {
        if policy::see_security_settings(actor, user) {
            self.totp_enabled = Some(user.has_totp());
        }
        self
    }
}

/// Sign-up body.
#[derive(Deserialize, ToSchema)]
pub struct SignUpBody {
    pub email: String,
    /// At least 8 characters.
    pub password: String,
    pub name: Option<String>,
    /// 3–30 of `a-z 0-9 _ - .`, starting with a letter or digit; derived
    /// from the name or email when missing.
    pub username: Option<String>,
    /// While registrations need approval: the answer to the registration
    /// question, 1–2,000 characters (required then, ignored otherwise).
    pub application: Option<String>,
    /// While registrations need an invite: the invite's code (required
    /// then, ignored otherwise).
    pub invite_code: Option<String>,
}

fn validate_sign_up(body: &SignUpBody) -> Result<(), AppError> {
    let mut fields = Vec::new();
    if !is_email_address(body.email.trim()) {
        fields.push(FieldError::new("email", "must be an email address"));
    }
    if let Err(AppError::Validation {
        fields: password, ..
    }) = check_password(&body.password)
    {
        fields.extend(password);
    }
    if let Some(name) = &body.name
        && let Err(reason) = check_text(name, MAX_NAME_CHARS, true, TextRule::Line)
    {
        fields.push(FieldError::new("name", reason));
    }
    if let Some(username) = &body.username
        && !is_valid_username(username)
    {
        fields.push(FieldError::new(
            "username",
            "must be 3-30 characters of a-z, 0-9, _, - and ., starting with a letter or digit",
        ));
    }
    if fields.is_empty() {
        Ok(())
    } else {
        Err(AppError::Validation {
            message: format!(
                "invalid {}",
                fields
                    .iter()
                    .map(|f| f.field.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            fields,
        })
    }
}

/// Create a user, as the registration mode in force allows
/// (`GET /api/v1/admin/site-settings`): `open`, anyone; `approval`, with an
/// `application`, the account `pending` until an administrator decides;
/// `invite`, with an `invite_code`; `closed`, administrators only (who
/// are asked for neither in any mode). A sign-up from an address an IP
/// block covers, or with an email at a blocked domain, is refused. The new
/// user is mailed a link that verifies their address (24 hours, once).
#[utoipa::path(
    post,
    path = "/api/users",
    tag = "users",
    request_body = SignUpBody,
    responses(
        (status = 201, description = "Created (in approval mode, awaiting approval: signing in answers 403 `PENDING_APPROVAL` until then)", body = UserView),
        (status = 403, description = "Registrations are closed and the caller is not an admin, or the client's address is blocked for sign-ups (`IP_BLOCKED`)", body = GeneralError),
        (status = 409, description = "Email or username taken", body = GeneralError),
        (status = 422, description = "Invalid fields: an email at a blocked domain (`email`), a missing application in approval mode (`application`), a missing, unknown, expired or used-up invite in invite mode (`invite_code`)", body = GeneralError),
    )
)]
pub async fn create_user(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    ClientAddress(address): ClientAddress,
    AppJson(body): AppJson<SignUpBody>,
) -> Result<Response, AppError> {
    let actor = actor_of(caller.as_ref());
    let unconditional = policy::sign_up_unconditionally(actor);
    let mode = state.front_door.settings().registration_mode;
    if !unconditional {
        if mode == RegistrationMode::Closed {
            authorize(policy::create_user_without_signup(actor), "user")?;
        }
        if address.is_some_and(|address| state.front_door.blocks(address, Severity::SignUp)) {
            return Err(AppError::IpBlocked);
        }
    }
    validate_sign_up(&body)?;
    refuse_blocked_words(&state, body.username.as_deref(), body.name.as_deref(), None).await?;
    let entry = if unconditional {
        Entry::Plain
    } else {
        match mode {
            RegistrationMode::Approval => {
                Entry::Application(checked_application(body.application.as_deref())?)
            }
            RegistrationMode::Invite => match body.invite_code.as_deref().map(str::trim) {
                Some(code) if !code.is_empty() => Entry::Invite(code.to_owned()),
                _ => {
                    return Err(AppError::invalid(
                        "invite_code",
                        "an invite code is required",
                    ));
                }
            },
            RegistrationMode::Open | RegistrationMode::Closed => Entry::Plain,
        }
    };
    let password_hash = state.auth.passwords.hash(&body.password).await?;
    let name = body.name.map(|name| name.trim().to_owned());
    // The address is not verified yet: the mail carries no text the
    // person signing up chose.
    let verification = PreparedLink::new(
        &state.account_mail(),
        TokenPurpose::VerifyEmail,
        &body.email,
        account_mail::NEUTRAL_GREETING,
    )?;
    let new = NewUser {
        email: body.email,
        email_verified: false,
        username: body.username,
        name,
        image: None,
        password_hash: Some(password_hash),
        role: Role::User,
    };
    let user = state
        .db
        .write(|tx| {
            Box::pin(async move {
                refuse_blocked_domain(tx, &new.email).await?;
                let mut user = users::create(tx, new).await?;
                match entry {
                    Entry::Plain => {}
                    Entry::Application(application) => {
                        user =
                            registrations::hold_for_approval(tx, user.id(), &application).await?;
                    }
                    Entry::Invite(code) => {
                        let inviter = invites::redeem(tx, &code).await?.ok_or_else(|| {
                            DomainError::Invalid {
                                field: "invite_code",
                                reason: "unknown, expired or used up".to_owned(),
                            }
                        })?;
                        registrations::record_inviter(tx, user.id(), inviter).await?;
                    }
                }
                verification.store(tx, user.id()).await?;
                Ok(user)
            })
        })
        .await?;
    state.mail.wake();
    Ok((StatusCode::CREATED, AppJson(UserView::new(&user, true))).into_response())
}

/// What a sign-up brings besides the account, by the registration mode.
enum Entry {
    Plain,
    /// Approval mode: the application.
    Application(String),
    /// Invite mode: the invite's code.
    Invite(String),
}

/// The application of a sign-up in approval mode: 1–2,000 characters.
fn checked_application(application: Option<&str>) -> Result<String, AppError> {
    let Some(application) = application.map(str::trim).filter(|text| !text.is_empty()) else {
        return Err(AppError::invalid(
            "application",
            "registrations need approval: answer the registration question",
        ));
    };
    check_text(
        application,
        registrations::MAX_APPLICATION_CHARS,
        true,
        TextRule::Lines,
    )
    .map_err(|reason| AppError::invalid("application", reason))?;
    Ok(application.to_owned())
}

/// Refuses `email` when its domain, or a parent of it, is blocked (422
/// `email`), inside the unit of work that would use it.
pub async fn refuse_blocked_domain(tx: &mut Tx<'_>, email: &str) -> Result<(), DomainError> {
    match email_domain_blocks::block_for(tx, email).await? {
        Some(_) => Err(DomainError::Invalid {
            field: "email",
            reason: EMAIL_DOMAIN_REFUSED.to_owned(),
        }),
        None => Ok(()),
    }
}

/// What a refused email domain is told (DECISIONS.md).
pub const EMAIL_DOMAIN_REFUSED: &str = "this email domain is not accepted";

/// The name people see: the display name, else the username.
pub fn display_name(user: &User) -> String {
    display_name_of(user.row.name.as_deref(), &user.row.username)
}

/// [`display_name`] from a user's name and username.
pub fn display_name_of(name: Option<&str>, username: &str) -> String {
    name.filter(|name| !name.trim().is_empty())
        .unwrap_or(username)
        .to_owned()
}

/// The user's image, or their generated avatar (seeded by the user id, so
/// it survives a change of username).
pub fn avatar_url(server: &ServerSettings, user: &User) -> String {
    avatar_url_of(server, user.id(), user.row.image.as_deref())
}

/// [`avatar_url`] from a user's id and image.
pub fn avatar_url_of(server: &ServerSettings, id: i64, image: Option<&str>) -> String {
    server.avatar_url(id, image)
}

/// A page of users.
#[derive(Serialize, ToSchema)]
pub struct UserList {
    pub users: Vec<UserView>,
    pub pagination: Pagination,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UserListQuery {
    /// `user`, `moderator`, `admin` or `super_admin`.
    pub role: Option<String>,
    /// `active`, `inactive` or `banned`; only admins see other than active users.
    pub status: Option<String>,
    /// `created_at` (default) or `username`.
    pub sort: Option<String>,
    /// `asc` or `desc` (default).
    pub order: Option<String>,
    /// 1 to 100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Items to skip, default 0.
    #[param(value_type = Option<u64>, minimum = 0)]
    pub offset: Option<String>,
}

/// List users: active users with public profiles, or everyone for admins.
/// Emails are shown to admins, and to each user on their own entry; an
/// answer that shows one is `Cache-Control: private, no-store`.
#[utoipa::path(
    get,
    path = "/api/users",
    tag = "users",
    params(UserListQuery),
    responses(
        (status = 200, description = "A page of users and the total; `Cache-Control: private, no-store` when it shows an email", body = UserList),
        (status = 422, description = "A filter, sort, order, limit or offset is invalid", body = GeneralError),
    )
)]
pub async fn list_users(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    AppQuery(query): AppQuery<UserListQuery>,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    let role = query.role.as_deref().and_then(|raw| {
        problems.check(
            "role",
            Role::parse(raw)
                .ok_or_else(|| "must be user, moderator, admin or super_admin".to_owned()),
        )
    });
    let status = query.status.as_deref().and_then(|raw| {
        problems.check(
            "status",
            UserStatus::parse(raw).ok_or_else(|| "must be active, inactive or banned".to_owned()),
        )
    });
    let sort = query
        .sort
        .as_deref()
        .and_then(|raw| {
            problems.check(
                "sort",
                UserSort::parse(raw).ok_or_else(|| "must be created_at or username".to_owned()),
            )
        })
        .unwrap_or_default();
    let order = params::order(&mut problems, query.order.as_deref());
    let page = params::page(
        &mut problems,
        query.limit.as_deref(),
        query.offset.as_deref(),
    );
    problems.finish()?;
    let actor = actor_of(caller.as_ref());
    let everyone = policy::see_every_user(actor);
    let filter = UserQuery {
        role,
        status,
        sort,
        order,
        ..UserQuery::default()
    };
    let listed = state.db.list_users(&filter, everyone, page).await?;
    let users: Vec<UserView> = listed
        .users
        .iter()
        .map(|user| {
            UserView::new(user, policy::see_email(actor, user)).with_own_settings(user, actor)
        })
        .collect();
    let shows_email = users.iter().any(|user| user.email.is_some());
    let mut response = AppJson(UserList {
        users,
        pagination: Pagination::new(listed.total, page),
    })
    .into_response();
    if shows_email {
        personal::mark(response.headers_mut());
    }
    Ok(response)
}

/// Get a user in the general schema. Users without a public profile, and
/// inactive or banned ones, are 404 except to themselves and admins. An
/// answer that shows the email (to the user, or an admin) is
/// `Cache-Control: private, no-store`.
#[utoipa::path(
    get,
    path = "/api/users/{id}",
    tag = "users",
    params(("id" = String, Path, description = "User id (digits)", example = "2"), ("If-None-Match" = Option<String>, Header, description = "ETag(s) of an answer held: 304 when one is current")),
    responses(
        (status = 200, description = "The user", body = UserView, headers(("ETag" = String, description = "Strong tag of this answer, for If-None-Match"))),
        (status = 304, description = "Not modified: If-None-Match names the current answer's ETag", headers(("ETag" = String, description = "Strong tag of the current answer"))),
        (status = 404, description = "No such user, or not one the caller may see", body = GeneralError),
    )
)]
pub async fn get_user(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    headers: HeaderMap,
    IdPath(id): IdPath,
) -> Result<Response, AppError> {
    let user = state.db.user_by_id(id).await?;
    let actor = actor_of(caller.as_ref());
    authorize(policy::view_user(actor, &user), "user")?;
    let show_email = policy::see_email(actor, &user);
    let audience = if show_email {
        answer_cache::Audience::Personal
    } else {
        answer_cache::Audience::of(caller.is_none())
    };
    answer_cache::tagged_json(
        &UserView::new(&user, show_email).with_own_settings(&user, actor),
        &headers,
        audience,
    )
}

/// Reads a present-but-null JSON field as `Some(None)`, so an update can
/// clear it, while an absent field stays `None`.
pub(crate) fn double_option<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// Changes to a user; absent fields stay as they are, `null` clears `name`
/// and `image`.
#[derive(Deserialize, ToSchema)]
pub struct UserUpdateBody {
    /// 1 to 100 characters, or null.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub name: Option<Option<String>>,
    /// 3-30 of `a-z 0-9 _ - .`, starting with a letter or digit; unique.
    pub username: Option<String>,
    /// An http(s) URL of at most 2048 characters, or null for the generated avatar.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub image: Option<Option<String>>,
    /// At most 500 characters.
    pub bio: Option<String>,
    /// At most 100 characters.
    pub location: Option<String>,
    pub profile_public: Option<bool>,
    /// Admins only, never on themselves: `user`, `moderator` or `admin`
    /// (up to their own role).
    pub role: Option<String>,
    /// Admins only, never on themselves: `active`, `inactive` or `banned`.
    pub status: Option<String>,
}

impl UserUpdateBody {
    /// True when no field the API changes is present (`{}`, or only
    /// ignored fields such as `email`): a client mistake, as for posts.
    fn changes_nothing(&self) -> bool {
        self.name.is_none()
            && self.username.is_none()
            && self.image.is_none()
            && self.bio.is_none()
            && self.location.is_none()
            && self.profile_public.is_none()
            && self.role.is_none()
            && self.status.is_none()
    }
}

/// Most characters in a bio.
const MAX_BIO_CHARS: usize = 500;
/// Most characters in a location.
const MAX_LOCATION_CHARS: usize = 100;
fn check_image(image: &str) -> Result<(), String> {
    if is_web_url(image, MAX_IMAGE_URL_CHARS) {
        Ok(())
    } else {
        Err(format!(
            "must be an http(s) URL of at most {MAX_IMAGE_URL_CHARS} characters, or null"
        ))
    }
}

/// 422 naming the field (`username`, `name`, `bio`) when a `block` word
/// filter for usernames or profiles finds its phrase in it.
async fn refuse_blocked_words(
    state: &AppState,
    username: Option<&str>,
    name: Option<&str>,
    bio: Option<&str>,
) -> Result<(), AppError> {
    let screening = state.screening().await?;
    if let Some(username) = username {
        screening
            .filters
            .check(FilterScope::Username, &[("username", username)])
            .refusal()?;
    }
    let profile: Vec<(&'static str, &str)> = [("name", name), ("bio", bio)]
        .into_iter()
        .filter_map(|(field, text)| text.map(|text| (field, text)))
        .collect();
    screening
        .filters
        .check(FilterScope::Profile, &profile)
        .refusal()?;
    Ok(())
}

/// Checks an update body against the rules of fields and of who may change
/// what, and turns it into domain changes.
fn checked_changes(
    caller: &SessionPrincipal,
    target: &User,
    body: UserUpdateBody,
) -> Result<UserChanges, AppError> {
    let mut problems = Problems::default();
    if body.changes_nothing() {
        problems.add(
            "body",
            "must change at least one of name, username, image, bio, location, profile_public, role, status",
        );
    }
    if let Some(Some(name)) = &body.name {
        problems.check(
            "name",
            check_text(name, MAX_NAME_CHARS, true, TextRule::Line),
        );
    }
    if let Some(username) = &body.username
        && !is_valid_username(username)
    {
        problems.add(
            "username",
            "must be 3-30 characters of a-z, 0-9, _, - and ., starting with a letter or digit",
        );
    }
    if let Some(Some(image)) = &body.image {
        problems.check("image", check_image(image));
    }
    if let Some(bio) = &body.bio {
        problems.check(
            "bio",
            check_text(bio, MAX_BIO_CHARS, false, TextRule::Lines),
        );
    }
    if let Some(location) = &body.location {
        problems.check(
            "location",
            check_text(location, MAX_LOCATION_CHARS, false, TextRule::Line),
        );
    }
    let role = body.role.as_deref().and_then(|raw| {
        problems.check(
            "role",
            Role::parse(raw).ok_or_else(|| "must be user, moderator or admin".to_owned()),
        )
    });
    let status = body.status.as_deref().and_then(|raw| {
        problems.check(
            "status",
            UserStatus::parse(raw).ok_or_else(|| "must be active, inactive or banned".to_owned()),
        )
    });
    problems.finish()?;
    // Role and status: unchanged values pass (a client may send back the
    // whole object); changes need an admin acting on someone else, and
    // super_admin is granted outside the API only.
    let role = role.filter(|role| *role != target.role);
    let status = status.filter(|status| *status != target.status);
    if let Some(role) = role {
        authorize(policy::grant_role(caller.actor(), target, role), "user")?;
    }
    if let Some(status) = status {
        authorize(policy::set_status(caller.actor(), target, status), "user")?;
        // A ban keeps a reason and a history, so it is imposed and lifted
        // only by the ban operations.
        if status == UserStatus::Banned || target.status == UserStatus::Banned {
            return Err(AppError::invalid(
                "status",
                "bans are imposed and lifted with POST /api/admin/users/{id}/ban and /unban",
            ));
        }
    }
    Ok(UserChanges {
        name: body
            .name
            .map(|name| name.map(|name| name.trim().to_owned())),
        username: body.username,
        image: body.image,
        bio: body.bio,
        location: body.location.map(|location| location.trim().to_owned()),
        profile_public: body.profile_public,
        role,
        status,
        ..UserChanges::default()
    })
}

/// Change a user: themselves or an admin (of a lower role). Nobody changes
/// their own role or status; a status other than active ends the user's
/// sessions at once. A ban is not a status change here: it goes through the
/// ban operations (422).
#[utoipa::path(
    put,
    path = "/api/users/{id}",
    tag = "users",
    params(("id" = String, Path, description = "User id (digits)", example = "2")),
    request_body = UserUpdateBody,
    responses(
        (status = 200, description = "The changed user", body = UserView),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Not allowed to change this user, or this field", body = GeneralError),
        (status = 404, description = "No such user, or not one the caller may see", body = GeneralError),
        (status = 409, description = "Username taken", body = GeneralError),
        (status = 422, description = "Invalid fields, nothing to change, or a status change into or out of `banned` (bans go through the ban operations)", body = GeneralError),
        (status = 423, description = "Another administrator is changing this user (`RESOURCE_LOCKED`)", body = GeneralError),
    )
)]
pub async fn update_user(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<UserUpdateBody>,
) -> Result<AppJson<UserView>, AppError> {
    let target = state.db.user_by_id(id).await?;
    authorize(policy::manage_user(caller.actor(), &target), "user")?;
    let changes = checked_changes(&caller, &target, body)?;
    refuse_blocked_words(
        &state,
        changes.username.as_deref(),
        changes.name.as_ref().and_then(Option::as_deref),
        changes.bio.as_deref(),
    )
    .await?;
    if caller.user_id() != id {
        // Someone changing another user takes the admin's way: the user's
        // edit lock, the policy asked inside the unit of work, the audit.
        let user = state
            .user_admin()
            .update_profile(context, caller.actor(), id, changes)
            .await?;
        return Ok(AppJson(
            UserView::new(&user, true).with_own_settings(&user, Some(caller.actor())),
        ));
    }
    // A user changing their own profile is not an admin action: no lock,
    // no audit entry.
    let user = state
        .db
        .write(|tx| Box::pin(async move { users::update(tx, id, changes).await }))
        .await?;
    // The user's status or role may have changed (a status other than
    // active ends their sessions): their sessions are looked up afresh.
    state.auth.session_lookups.forget_user(id);
    Ok(AppJson(
        UserView::new(&user, true).with_own_settings(&user, Some(caller.actor())),
    ))
}

/// Delete a user: themselves or an admin (of a lower role). Everything
/// that is theirs goes in the same unit of work: posts (with the reports on
/// them), the reports they filed, sessions, linked accounts, admin tokens
/// (they stop working), custom emojis, alerts, analytics events and upload
/// records; their uploaded files and custom emoji images answer 404 at
/// once and are deleted from the store right after (retried until the
/// store has deleted them, see docs/api.md).
#[utoipa::path(
    delete,
    path = "/api/users/{id}",
    tag = "users",
    params(("id" = String, Path, description = "User id (digits)", example = "2")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Not allowed to delete this user", body = GeneralError),
        (status = 404, description = "No such user, or not one the caller may see", body = GeneralError),
    )
)]
pub async fn delete_user(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    let target = state.db.user_by_id(id).await?;
    authorize(policy::manage_user(caller.actor(), &target), "user")?;
    let by_someone_else = caller.user_id() != id;
    let store = state.uploads.storage.location.clone();
    state
        .db
        .write(|tx| {
            Box::pin(async move {
                let deleted = erasure::erase_user(tx, id, &store).await?.user;
                if by_someone_else {
                    audit::record(
                        tx,
                        &context,
                        AuditAction {
                            action: "user.delete",
                            target_type: "user",
                            target_id: Some(id.to_string()),
                            changes: serde_json::json!({"before": {
                                "email": deleted.row.email,
                                "username": deleted.row.username,
                                "role": deleted.role.as_str(),
                                "status": deleted.status.as_str(),
                            }}),
                        },
                    )
                    .await?;
                }
                Ok(())
            })
        })
        .await?;
    state.auth.session_lookups.forget_user(id);
    erased_files::delete_soon(
        &state.background,
        &state.db,
        &state.uploads.storage,
        &state.settings.storage,
    );
    Ok(StatusCode::NO_CONTENT)
}

/// Export all of a user's data as a ZIP archive: the user themself, or an
/// admin holding `users:manage` (of a lower role; audited as
/// `user.export`). The archive holds `profile.json` (the user and their
/// linked providers, no secrets), `posts.json`, `reports.json` (the reports
/// they filed), `alerts.json`, `analytics.json` (their events),
/// `sessions.json` (no token material), `uploads.json` and the uploaded
/// files under `uploads/`. It is written while it is sent; a few exports
/// run at once per instance, one at a time per caller, and one cut off
/// (the client reading nothing for `export_idle_secs`, the server
/// stopping, or `export_timeout_secs` passing) ends in a broken download,
/// never a short archive.
#[utoipa::path(
    get,
    path = "/api/users/{id}/export",
    tag = "users",
    params(("id" = String, Path, description = "User id (digits)", example = "2")),
    responses(
        (status = 200, description = "The archive, as an attachment named `plaza-export-<username>-<yyyymmdd>.zip`",
            content_type = "application/zip", body = inline(Binary),
            headers(("Content-Disposition" = String, description = "`attachment; filename=\"plaza-export-<username>-<yyyymmdd>.zip\"`"))),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "Not the user, nor an administrator holding `users:manage` who outranks them", body = GeneralError),
        (status = 404, description = "No such user, or not one the caller may see", body = GeneralError),
        (status = 409, description = "The caller has an export in progress on this instance already (`CONFLICT`): one at a time", body = GeneralError),
        (status = 503, description = "Every export slot of this instance is taken (`export_max_concurrent`); retry after `Retry-After`", body = GeneralError,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    )
)]
pub async fn export_user(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<Response, AppError> {
    let target = state.db.user_by_id(id).await?;
    let holds = caller
        .session
        .capabilities
        .hold(plaza_domain::grants::MANAGE_USERS);
    authorize(policy::export_user(caller.actor(), &target, holds), "user")?;
    let slot = state
        .exports
        .slot(caller.user_id())
        .map_err(|refusal| match refusal {
            export::Refusal::Exporting => AppError::Conflict(
                "an export you started is still in progress: one export at a time (finish or \
                 cancel that download first)"
                    .to_owned(),
            ),
            export::Refusal::Full => AppError::Busy {
                retry_after_secs: EXPORT_RETRY_AFTER_SECS,
            },
        })?;
    if caller.user_id() != id {
        state
            .audit_reads
            .record(
                &state.db,
                context,
                AuditAction {
                    action: "user.export",
                    target_type: "user",
                    target_id: Some(id.to_string()),
                    changes: serde_json::json!({
                        "username": target.row.username,
                        "email": target.row.email,
                    }),
                },
            )
            .await?;
    }
    let disposition = format!("attachment; filename=\"{}\"", export::file_name(&target));
    let mut response = state
        .exports
        .body(
            export::Source {
                db: state.db.clone(),
                storage: state.uploads.storage.clone(),
            },
            target,
            slot,
        )
        .into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// The `Retry-After` of an export refused for want of a slot.
const EXPORT_RETRY_AFTER_SECS: u64 = 30;

/// A public profile (SPEC.md "Public profile").
#[derive(Serialize, ToSchema)]
pub struct PublicProfile {
    #[schema(example = "42")]
    pub id: String,
    pub username: String,
    /// The name, else the username.
    pub display_name: String,
    /// The user's image, else `<base_url>/api/avatar-image?seed=<id>`.
    pub avatar_url: String,
    pub bio: String,
    pub created_at: String,
    /// Always `public`: other profiles are not served.
    #[schema(example = "public")]
    pub profile_visibility: String,
    /// Public posts (published, not hidden).
    pub posts_count: i64,
    /// Visible (published or flagged) replies on public posts.
    pub replies_count: i64,
    /// Members who follow this user.
    pub followers_count: i64,
    /// Members this user follows.
    pub following_count: i64,
    /// A bot: an account a program drives with its tokens.
    pub is_bot: bool,
}

/// A user's public profile; 404 when the user does not exist, is not
/// active, or keeps their profile private.
#[utoipa::path(
    get,
    path = "/api/users/{id}/profile",
    tag = "users",
    params(("id" = String, Path, description = "User id (digits)", example = "2"), ("If-None-Match" = Option<String>, Header, description = "ETag(s) of an answer held: 304 when one is current")),
    responses(
        (status = 200, description = "The profile", body = PublicProfile, headers(("ETag" = String, description = "Strong tag of this answer, for If-None-Match"))),
        (status = 304, description = "Not modified: If-None-Match names the current answer's ETag", headers(("ETag" = String, description = "Strong tag of the current answer"))),
        (status = 404, description = "No such user, or the profile is not public", body = GeneralError),
    )
)]
pub async fn user_profile(
    State(state): State<AppState>,
    headers: HeaderMap,
    IdPath(id): IdPath,
) -> Result<Response, AppError> {
    let user = state.db.user_by_id(id).await?;
    if !user.is_public() {
        return Err(AppError::NotFound("user"));
    }
    let (posts_count, replies_count) = state.db.public_content_counts(id).await?;
    let (followers_count, following_count) = state.db.follow_counts(id).await?;
    let profile = PublicProfile {
        id: user.id().to_string(),
        username: user.row.username.clone(),
        display_name: display_name(&user),
        avatar_url: avatar_url(&state.settings.server, &user),
        bio: user.row.bio.clone(),
        created_at: rfc3339(user.row.created_at),
        profile_visibility: "public".to_owned(),
        posts_count,
        replies_count,
        is_bot: user.row.is_bot.0,
        followers_count,
        following_count,
    };
    answer_cache::tagged_json(&profile, &headers, answer_cache::Audience::Anyone)
}
