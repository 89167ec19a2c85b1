//! `GET` and `PUT /api/v1/admin/site-settings`: the settings an
//! administrator changes while the server runs (DECISIONS.md "The front
//! door"). Reading needs `admin:read`; changing needs `admin:super`, and is
//! audited as `site_settings.update` with what changed. Every instance
//! has a change within 5 s (`services::front_door`).

use axum::extract::State;
use plaza_domain::policy::AdminPermission;
use plaza_domain::site_settings::{
    FileDefaults, MAX_HOLD_COUNT, MAX_QUESTION_CHARS, RegistrationMode, SettingsChanges,
    StoredSettings,
};
use plaza_domain::time::rfc3339;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::envelope::Envelope;
use crate::auth::{AdminToken, RequestAudit};
use crate::controllers::params::{Problems, TextRule, check_text};
use crate::controllers::users::double_option;
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::AppJson;
use crate::state::AppState;

/// The site settings.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteSettingsItem {
    /// `open`, `approval`, `invite` or `closed`; until an administrator
    /// sets it, `open` when the file's `signup` is on, else `closed`.
    #[schema(example = "approval")]
    pub registration_mode: String,
    /// The question a sign-up answers in approval mode.
    pub registration_question: Option<String>,
    /// Whether members whose account is 7 days old may make invites.
    pub invites_by_members: bool,
    /// 0 to 50: each account's first N posts and replies wait for a moderator.
    #[schema(minimum = 0, maximum = 50)]
    pub new_account_hold_count: i64,
    /// Whether the moderation log is public.
    pub public_modlog: bool,
    /// When an administrator last changed them; null before.
    pub updated_at: Option<String>,
    /// Who last changed them; null before, or once their account is deleted.
    #[schema(example = "1")]
    pub updated_by: Option<String>,
}

impl SiteSettingsItem {
    /// `stored` as in force with the settings file's `defaults`.
    pub fn new(stored: &StoredSettings, defaults: FileDefaults) -> Self {
        let stored = stored.clone().in_force(defaults);
        let signup_default = defaults.signup;
        SiteSettingsItem {
            registration_mode: stored.registration_mode(signup_default).as_str().to_owned(),
            registration_question: stored.registration_question.clone(),
            invites_by_members: stored.invites_by_members,
            new_account_hold_count: stored.new_account_hold_count,
            public_modlog: stored.public_modlog,
            updated_at: stored.updated_at.map(rfc3339),
            updated_by: stored.updated_by.map(|id| id.to_string()),
        }
    }
}

/// A partial change: absent fields keep their value.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteSettingsBody {
    /// `open`, `approval`, `invite` or `closed`.
    pub registration_mode: Option<String>,
    /// At most 500 characters; `null` or blank clears it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub registration_question: Option<Option<String>>,
    pub invites_by_members: Option<bool>,
    /// A whole number from 0 to 50.
    #[schema(minimum = 0, maximum = 50)]
    pub new_account_hold_count: Option<i64>,
    pub public_modlog: Option<bool>,
}

/// The site settings in force.
#[utoipa::path(
    get,
    path = "/api/v1/admin/site-settings",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    responses(
        (status = 200, description = "The settings", body = Envelope<SiteSettingsItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
    )
)]
pub async fn get_site_settings(
    State(state): State<AppState>,
    _admin: AdminToken,
) -> Result<AppJson<Envelope<SiteSettingsItem>>, AppError> {
    let stored = state.db.site_settings().await?;
    Ok(AppJson(Envelope::new(SiteSettingsItem::new(
        &stored,
        state.front_door.file_defaults(),
    ))))
}

/// Changes the fields given; audited as `site_settings.update` with each
/// change's before and after.
#[utoipa::path(
    put,
    path = "/api/v1/admin/site-settings",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:super"])),
    request_body = SiteSettingsBody,
    responses(
        (status = 200, description = "The settings, changed", body = Envelope<SiteSettingsItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:super` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "No field given, an unknown mode, a question over 500 characters or a hold count outside 0..50", body = AdminV1Error),
    )
)]
pub async fn put_site_settings(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    AppJson(body): AppJson<SiteSettingsBody>,
) -> Result<AppJson<Envelope<SiteSettingsItem>>, AppError> {
    if !admin.claims.grants(AdminPermission::Super) {
        return Err(AppError::InsufficientAdminPermissions {
            required: AdminPermission::Super.as_str(),
        });
    }
    let changes = checked_changes(body)?;
    let stored = state
        .front_door_changes()
        .update_settings(context, changes, admin.user_id)
        .await?;
    Ok(AppJson(Envelope::new(SiteSettingsItem::new(
        &stored,
        state.front_door.file_defaults(),
    ))))
}

/// The change as the domain takes it, or a 422 naming every bad field.
pub fn checked_changes(body: SiteSettingsBody) -> Result<SettingsChanges, AppError> {
    let mut problems = Problems::default();
    if body.registration_mode.is_none()
        && body.registration_question.is_none()
        && body.invites_by_members.is_none()
        && body.new_account_hold_count.is_none()
        && body.public_modlog.is_none()
    {
        problems.add(
            "body",
            "must change at least one of registrationMode, registrationQuestion, \
             invitesByMembers, newAccountHoldCount, publicModlog",
        );
    }
    let registration_mode = body.registration_mode.as_deref().and_then(|mode| {
        problems.check(
            "registrationMode",
            RegistrationMode::parse(mode)
                .ok_or_else(|| "must be open, approval, invite or closed".to_owned()),
        )
    });
    if let Some(Some(question)) = &body.registration_question {
        problems.check(
            "registrationQuestion",
            check_text(question, MAX_QUESTION_CHARS, false, TextRule::Lines),
        );
    }
    if let Some(count) = body.new_account_hold_count
        && !(0..=MAX_HOLD_COUNT).contains(&count)
    {
        problems.add(
            "newAccountHoldCount",
            format!("must be a whole number from 0 to {MAX_HOLD_COUNT}"),
        );
    }
    problems.finish()?;
    Ok(SettingsChanges {
        registration_mode,
        // A blank question is none.
        registration_question: body.registration_question.map(|question| {
            question
                .map(|text| text.trim().to_owned())
                .filter(|text| !text.is_empty())
        }),
        invites_by_members: body.invites_by_members,
        new_account_hold_count: body.new_account_hold_count,
        public_modlog: body.public_modlog,
    })
}
