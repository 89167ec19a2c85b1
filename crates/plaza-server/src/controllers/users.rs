//! Users: sign-up, and the general user schema.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plaza_domain::users::{NewUser, Role, User, is_valid_username};
use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::OptionalUser;
use crate::auth::password::{MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH};
use crate::error::schema::GeneralError;
use crate::error::{AppError, FieldError};
use crate::extract::AppJson;
use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create_user))
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
}

fn timestamp(millis: i64) -> String {
    plaza_domain::time::from_millis(millis)
        .format(&Rfc3339)
        .unwrap_or_default()
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
            email_verified: row.email_verified_at.map(timestamp),
            image: row.image.clone(),
            profile_public: row.profile_public.0,
            bio: row.bio.clone(),
            location: row.location.clone(),
            created_at: timestamp(row.created_at),
            last_login: row.last_login_at.map(timestamp),
            login_count: row.login_count,
        }
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
}

/// Checks a new password against the length rules.
pub fn check_password(password: &str) -> Result<(), AppError> {
    let length = password.chars().count();
    if length < MIN_PASSWORD_LENGTH {
        return Err(AppError::invalid(
            "password",
            format!("must be at least {MIN_PASSWORD_LENGTH} characters"),
        ));
    }
    if password.len() > MAX_PASSWORD_LENGTH {
        return Err(AppError::invalid(
            "password",
            format!("must be at most {MAX_PASSWORD_LENGTH} bytes"),
        ));
    }
    Ok(())
}

fn validate_sign_up(body: &SignUpBody) -> Result<(), AppError> {
    let mut fields = Vec::new();
    let email = body.email.trim();
    let valid_email = email.len() <= 254
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        })
        && !email.chars().any(char::is_whitespace);
    if !valid_email {
        fields.push(FieldError::new("email", "must be an email address"));
    }
    if let Err(AppError::Validation {
        fields: password, ..
    }) = check_password(&body.password)
    {
        fields.extend(password);
    }
    if let Some(name) = &body.name
        && (name.trim().is_empty() || name.chars().count() > 100)
    {
        fields.push(FieldError::new("name", "must be 1 to 100 characters"));
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

/// Create a user: open sign-up when the `signup` setting is on, otherwise
/// only for a signed-in admin.
#[utoipa::path(
    post,
    path = "/api/users",
    tag = "users",
    request_body = SignUpBody,
    responses(
        (status = 201, description = "Created", body = UserView),
        (status = 403, description = "Sign-up is closed and the caller is not an admin", body = GeneralError),
        (status = 409, description = "Email or username taken", body = GeneralError),
        (status = 422, description = "Invalid fields", body = GeneralError),
    )
)]
pub async fn create_user(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    AppJson(body): AppJson<SignUpBody>,
) -> Result<Response, AppError> {
    let caller_is_admin = caller
        .as_ref()
        .is_some_and(|principal| principal.role().is_admin());
    if !state.settings.signup && !caller_is_admin {
        return Err(AppError::Forbidden);
    }
    validate_sign_up(&body)?;
    let password_hash = state.auth.passwords.hash(&body.password).await?;
    let user = state
        .db
        .create_user(NewUser {
            email: body.email,
            email_verified: false,
            username: body.username,
            name: body.name.map(|name| name.trim().to_owned()),
            image: None,
            password_hash: Some(password_hash),
            role: Role::User,
        })
        .await?;
    Ok((StatusCode::CREATED, AppJson(UserView::new(&user, true))).into_response())
}
