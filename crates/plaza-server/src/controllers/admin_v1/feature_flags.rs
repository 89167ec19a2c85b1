//! `GET /api/v1/admin/feature-flags`, `PUT` and `DELETE
//! /api/v1/admin/feature-flags/{flagName}`: the flags stored in the
//! database (`plaza_domain::feature_flags`), created, changed or removed by
//! an admin with the audit entry in the same unit of work. A flag is one
//! row written in one statement, so these writes take no edit lock (edit
//! locks guard users and posts); the writes of flags queue behind one
//! another in the database.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plaza_domain::feature_flags::{
    self, FeatureFlag, FlagChanges, MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS,
};
use plaza_domain::users::Role;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::envelope::{Envelope, ListEnvelope};
use super::listing::ListQuery;
use crate::auth::{AdminToken, RequestAudit};
use crate::controllers::params::{Pagination, Problems, TextRule, check_text};
use crate::controllers::users::double_option;
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery, TextPath};
use crate::services::flags;
use crate::state::AppState;
use plaza_domain::time::rfc3339;

/// A feature flag (DECISIONS.md "Shapes the spec leaves out").
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeatureFlagItem {
    #[schema(example = "new-editor")]
    pub name: String,
    pub enabled: bool,
    pub description: Option<String>,
    /// 0 to 100: the share of users it is on for, by a stable hash of the
    /// flag name and the user id.
    #[schema(minimum = 0, maximum = 100)]
    pub rollout_percentage: u8,
    /// The roles it is limited to; empty means every role.
    #[schema(example = json!(["moderator", "admin"]))]
    pub target_roles: Vec<String>,
    pub updated_at: String,
    /// The id of the admin who last wrote it; null once their account is deleted.
    #[schema(example = "1")]
    pub updated_by: Option<String>,
}

impl From<&FeatureFlag> for FeatureFlagItem {
    fn from(flag: &FeatureFlag) -> Self {
        FeatureFlagItem {
            name: flag.name.clone(),
            enabled: flag.enabled,
            description: flag.description.clone(),
            rollout_percentage: flag.rollout_percentage,
            target_roles: flag
                .target_roles
                .iter()
                .map(|role| role.as_str().to_owned())
                .collect(),
            updated_at: rfc3339(flag.updated_at),
            updated_by: flag.updated_by.map(|id| id.to_string()),
        }
    }
}

/// The body of a flag write (DECISIONS.md). Absent optional fields keep
/// their current value (a new flag: no description, 100 %, every role).
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlagWriteBody {
    /// Required on every write.
    pub enabled: bool,
    /// At most 500 characters; `null` clears it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    /// A whole number from 0 to 100.
    #[schema(minimum = 0, maximum = 100)]
    pub rollout_percentage: Option<i64>,
    /// Role names (`user`, `moderator`, `admin`, `super_admin`); empty for every role.
    pub target_roles: Option<Vec<String>>,
}

/// The flags, by name.
#[utoipa::path(
    get,
    path = "/api/v1/admin/feature-flags",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(ListQuery),
    responses(
        (status = 200, description = "A page of flags, by name", body = ListEnvelope<FeatureFlagItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "`limit` or `offset` is invalid", body = AdminV1Error),
    )
)]
pub async fn list_feature_flags(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<AppJson<ListEnvelope<FeatureFlagItem>>, AppError> {
    let page = query.page()?;
    let found = state.db.feature_flags(page).await?;
    Ok(AppJson(ListEnvelope::new(
        found.flags.iter().map(FeatureFlagItem::from).collect(),
        Pagination::new(found.total, page),
    )))
}

/// Creates the flag (201) or updates it (200); audited as
/// `feature_flag.create` or `feature_flag.update` with before and after.
/// At most 500 flags exist: creating another is 409.
#[utoipa::path(
    put,
    path = "/api/v1/admin/feature-flags/{flagName}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    params(("flagName" = String, Path, description = "`^[a-z0-9][a-z0-9_.-]{0,99}$`", example = "new-editor")),
    request_body = FlagWriteBody,
    responses(
        (status = 200, description = "The flag, updated", body = Envelope<FeatureFlagItem>),
        (status = 201, description = "The flag, created", body = Envelope<FeatureFlagItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:write` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 409, description = "The flag is new and 500 flags exist already (`CONFLICT`)", body = AdminV1Error),
        (status = 422, description = "A bad flag name, a missing `enabled`, a percentage outside 0..100 or an unknown role", body = AdminV1Error),
    )
)]
pub async fn put_feature_flag(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    TextPath(name): TextPath,
    AppJson(body): AppJson<FlagWriteBody>,
) -> Result<Response, AppError> {
    let changes = checked_write(&name, body)?;
    let written = flags::put(
        &state.db,
        &state.flag_snapshot,
        context,
        name,
        changes,
        admin.user_id,
    )
    .await?;
    let status = if written.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let envelope = Envelope::new(FeatureFlagItem::from(&written.flag));
    Ok((status, AppJson(envelope)).into_response())
}

/// Removes the flag and answers it as it was; audited as
/// `feature_flag.delete` with the flag's last state. Every caller's answer
/// from `GET /api/feature-flags` loses it within 5 s.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/feature-flags/{flagName}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:delete"])),
    params(("flagName" = String, Path, description = "The flag's name", example = "new-editor")),
    responses(
        (status = 200, description = "The flag, removed", body = Envelope<FeatureFlagItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:delete` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No flag has this name (`NOT_FOUND`)", body = AdminV1Error),
    )
)]
pub async fn delete_feature_flag(
    State(state): State<AppState>,
    _admin: AdminToken,
    RequestAudit(context): RequestAudit,
    TextPath(name): TextPath,
) -> Result<AppJson<Envelope<FeatureFlagItem>>, AppError> {
    let deleted = flags::delete(&state.db, &state.flag_snapshot, context, name).await?;
    Ok(AppJson(Envelope::new(FeatureFlagItem::from(&deleted))))
}

/// The flag name and body as the domain takes them, or a 422 naming every
/// bad field.
pub fn checked_write(name: &str, body: FlagWriteBody) -> Result<FlagChanges, AppError> {
    let mut problems = Problems::default();
    if !feature_flags::is_valid_name(name) {
        problems.add(
            "flagName",
            format!(
                "must be 1 to {MAX_NAME_CHARS} of a-z 0-9 _ . - starting with a letter or digit"
            ),
        );
    }
    if let Some(Some(description)) = &body.description {
        problems.check(
            "description",
            check_text(description, MAX_DESCRIPTION_CHARS, false, TextRule::Lines),
        );
    }
    let rollout_percentage = body.rollout_percentage.and_then(|percentage| {
        problems.check(
            "rolloutPercentage",
            u8::try_from(percentage)
                .ok()
                .filter(|percentage| *percentage <= 100)
                .ok_or_else(|| "must be a whole number from 0 to 100".to_owned()),
        )
    });
    let mut target_roles = body.target_roles.as_ref().map(|_| Vec::new());
    for (index, name) in body.target_roles.iter().flatten().enumerate() {
        match Role::parse(name) {
            Some(role) => {
                if let Some(roles) = target_roles.as_mut().filter(|roles| !roles.contains(&role)) {
                    roles.push(role);
                }
            }
            None => problems.add(
                format!("targetRoles[{index}]"),
                format!("unknown role {name:?}; use user, moderator, admin or super_admin"),
            ),
        }
    }
    problems.finish()?;
    Ok(FlagChanges {
        enabled: body.enabled,
        // A blank description is none.
        description: body.description.map(|description| {
            description
                .map(|text| text.trim().to_owned())
                .filter(|text| !text.is_empty())
        }),
        rollout_percentage,
        target_roles,
    })
}
