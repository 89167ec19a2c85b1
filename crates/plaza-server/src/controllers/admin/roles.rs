//! `/api/admin/roles` (SPEC.md "Role", and the role operations whose paths
//! DECISIONS.md gives): the assignable roles with their grants, and
//! replacing a role's grants under `permissions:manage`.

use axum::extract::State;
use plaza_domain::grants::MAX_GRANTS_PER_ROLE;
use plaza_domain::locks::Resource;
use plaza_domain::permissions;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::permissions::{NAME_CHARS, REASON_CHARS, text_field, type_name};
use crate::auth::{Administrator, AnyAdmin, ManagePermissions, RequestAudit};
use crate::controllers::params::Problems;
use crate::http::error::schema::AdminError;
use crate::http::error::{AppError, FieldError};
use crate::http::extract::{AppJson, TextPath};
use crate::state::AppState;

/// A role the API may assign (SPEC.md "Role").
#[derive(Serialize, ToSchema)]
pub struct RoleView {
    pub id: i64,
    pub name: String,
    pub display_name: String,
    pub description: String,
    /// Names of the permissions granted to the role (whatever their
    /// status), by name.
    pub permissions: Vec<String>,
}

/// The assignable roles, lowest first, each with its grants; `super_admin`
/// is granted only from the command line or the database and is left out.
#[utoipa::path(
    get,
    path = "/api/admin/roles",
    tag = "admin",
    responses((status = 200, description = "The assignable roles", body = Vec<RoleView>))
)]
pub async fn list_roles(
    State(state): State<AppState>,
    _admin: Administrator<AnyAdmin>,
) -> Result<AppJson<Vec<RoleView>>, AppError> {
    let roles = state.db.assignable_roles().await?;
    Ok(AppJson(
        roles
            .into_iter()
            .map(|role| RoleView {
                id: role.id,
                name: role.name,
                display_name: role.display_name,
                description: role.description,
                permissions: role.permissions,
            })
            .collect(),
    ))
}

/// A role's new list of grants. Fields are read as any JSON, so a wrong
/// type is one of the problems listed.
#[derive(Deserialize, ToSchema)]
pub struct RoleGrantsBody {
    /// Names of every permission the role is to hold (each at most 100
    /// characters; a name given twice counts once; at most 500). The
    /// dependencies of each must be in the list too.
    #[schema(value_type = Vec<String>)]
    permissions: Option<Value>,
    /// Recorded in the audit trail; at most 1000 characters.
    #[schema(value_type = Option<String>)]
    reason: Option<Value>,
}

/// A role's grants.
#[derive(Serialize, ToSchema)]
pub struct RoleGrantsView {
    /// The role's name.
    pub role: String,
    /// Names of the permissions the role holds, by name.
    pub permissions: Vec<String>,
}

/// Replace the permissions granted to a role (audited as
/// `role.permissions.update` with the lists before and after). Every
/// holder of the role has the new grants on the next request, on every
/// instance.
#[utoipa::path(
    put,
    path = "/api/admin/roles/{role}/permissions",
    tag = "admin",
    params(("role" = String, Path, description = "The role's name: `user`, `moderator` or `admin`", example = "moderator")),
    request_body = RoleGrantsBody,
    responses(
        (status = 200, description = "The role's grants as they are now", body = RoleGrantsView),
        (status = 400, description = "`Invalid request body`; `details` lists each problem", body = AdminError),
        (status = 403, description = "Without `permissions:manage`, or the role is `super_admin`, whose grants cannot be changed", body = AdminError),
        (status = 404, description = "No such role", body = AdminError),
        (status = 422, description = "`Validation error`: a name no permission has, an archived permission, or a permission whose dependency the list leaves out (named in `details`)", body = AdminError),
        (status = 423, description = "Another admin is changing this role's grants", body = AdminError),
    )
)]
pub async fn grant_role_permissions(
    State(state): State<AppState>,
    admin: Administrator<ManagePermissions>,
    RequestAudit(context): RequestAudit,
    TextPath(role): TextPath,
    AppJson(body): AppJson<RoleGrantsBody>,
) -> Result<AppJson<RoleGrantsView>, AppError> {
    let (requested, reason) = check_role_grants(&body)?;
    let role_id = state.db.role_id(&role).await?;
    let ttl = state.settings.limits.admin_lock_ttl();
    let granted = state
        .db
        .write_locked(
            Resource::Role(role_id),
            admin.actor.user_id,
            ttl,
            move |tx| {
                Box::pin(async move {
                    permissions::grant_to_role(tx, &context, &role, requested, reason).await
                })
            },
        )
        .await?;
    Ok(AppJson(RoleGrantsView {
        role: granted.role,
        permissions: granted.permissions,
    }))
}

/// Checks a role's new list of grants: the distinct names, and the reason.
fn check_role_grants(body: &RoleGrantsBody) -> Result<(Vec<String>, Option<String>), AppError> {
    let mut problems = Problems::default();
    let reason = text_field(&mut problems, "reason", &body.reason, false, REASON_CHARS);
    let mut names: Vec<String> = Vec::new();
    match &body.permissions {
        None => problems.push(FieldError::new("permissions", "is required").with_kind(
            "invalid_type",
            "array",
            "undefined",
        )),
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                let field = format!("permissions.{index}");
                let Some(name) =
                    text_field(&mut problems, &field, &Some(item.clone()), true, NAME_CHARS)
                else {
                    continue;
                };
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            if names.len() > MAX_GRANTS_PER_ROLE {
                problems.push(
                    FieldError::new(
                        "permissions",
                        format!("must name at most {MAX_GRANTS_PER_ROLE} permissions"),
                    )
                    .with_kind(
                        "too_big",
                        format!("<= {MAX_GRANTS_PER_ROLE} names"),
                        format!("{} names", names.len()),
                    ),
                );
            }
        }
        Some(other) => problems.push(
            FieldError::new("permissions", "must be an array of permission names").with_kind(
                "invalid_type",
                "array",
                type_name(other),
            ),
        ),
    }
    problems.finish()?;
    Ok((names, reason))
}
