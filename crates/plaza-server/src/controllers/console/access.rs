//! The console's access page (administrators holding
//! `permissions:manage`): each assignable role with the permissions it
//! holds, as ticks over every active permission (with what each depends
//! on), and saving a role's new list with a reason; then every permission
//! with its status, the forms that enable, disable or archive one, and the
//! form that creates one. Saving a role is the unit of work of
//! `PUT /api/admin/roles/{role}/permissions`
//! (`plaza_domain::permissions::grant_to_role` under the role's edit lock,
//! audited as `role.permissions.update`): a list that leaves out a
//! dependency of a permission it keeps is refused, naming it. Creating and
//! changing a permission are the ones of `POST /api/admin/permissions` and
//! `PATCH /api/admin/permissions/{id}` (their checks,
//! `permissions::create` and `permissions::update` under the permission's
//! lock, audited as `permission.create` and `permission.update`).

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::grants::{self, MAX_GRANTS_PER_ROLE};
use plaza_domain::listing::{Page, SortOrder};
use plaza_domain::locks::Resource;
use plaza_domain::permissions::{self, PermissionFilter, PermissionSort};
use plaza_domain::users::Role;
use serde::Deserialize;
use serde_json::{Value, json};

use super::page::{ConsoleUser, form_field, page};
use crate::auth::RequestAudit;
use crate::controllers::admin::permissions::{
    NewPermissionBody, PermissionChangeBody, check_new_permission, check_permission_change,
};
use crate::controllers::params::{Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery, IdPath, TextPath};
use crate::state::AppState;

/// The most permissions the page offers.
const MAX_LISTED: i64 = 500;
/// Longest reason of a change.
const MAX_REASON_CHARS: usize = 500;

#[derive(Deserialize)]
pub struct AccessQuery {
    /// The role just saved, to confirm it.
    saved: Option<String>,
    /// The permission just created or changed, and what was done.
    permission: Option<String>,
    done: Option<String>,
}

/// `GET /admin/access`: the roles and what they hold.
pub async fn overview(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<AccessQuery>,
) -> Result<Response, AppError> {
    user.require_administrator(Some(grants::MANAGE_PERMISSIONS), "role")?;
    let roles = state.db.assignable_roles().await?;
    let filter = PermissionFilter {
        search: None,
        category: None,
        status: None,
        risk_level: None,
        sort: PermissionSort::Name,
        order: SortOrder::Asc,
    };
    let found = state
        .db
        .permission_page(
            &filter,
            Page {
                limit: MAX_LISTED,
                offset: 0,
            },
        )
        .await?;
    let all_permissions: Vec<_> = found
        .permissions
        .iter()
        .map(|permission| {
            json!({
                "id": permission.id,
                "name": permission.name,
                "display_name": permission.display_name,
                "category": permission.category,
                "risk_level": permission.risk_level,
                "dependencies": permission.dependencies,
                "status": permission.status,
            })
        })
        .collect();
    // Only an active permission gives its holders anything: roles are
    // offered those.
    let permissions: Vec<_> = all_permissions
        .iter()
        .filter(|permission| permission["status"] == "active")
        .collect();
    let done = match query.done.as_deref() {
        Some("created") => Some("created"),
        Some("active") => Some("enabled"),
        Some("disabled") => Some("disabled"),
        Some("archived") => Some("archived"),
        _ => None,
    };
    let changed = query.permission.filter(|name| {
        done.is_some()
            && all_permissions
                .iter()
                .any(|listed| listed["name"] == name.as_str())
    });
    // A role is offered the permissions whose grant gives it something.
    let roles: Vec<_> = roles
        .iter()
        .map(|role| {
            let offered: Vec<_> = permissions
                .iter()
                .filter_map(|permission| permission["name"].as_str())
                .filter(|name| {
                    Role::parse(&role.name).is_some_and(|role| grants::gates(role, name))
                })
                .collect();
            json!({
                "name": role.name,
                "display_name": role.display_name,
                "description": role.description,
                "permissions": role.permissions,
                "offered": offered,
            })
        })
        .collect();
    page(
        &state,
        &user,
        "access",
        "access.html",
        json!({
            "roles": roles,
            "permissions": permissions,
            "all_permissions": all_permissions,
            "saved": query.saved.filter(|role| roles.iter().any(|listed| listed["name"] == role.as_str())),
            "changed": changed.map(|name| json!({"name": name, "done": done})),
            "risk_levels": permissions::RISK_LEVELS,
        }),
    )
}

/// `POST /admin/access/roles/{role}`: replaces the grants the page offers
/// the role with the ticked permissions
/// ([`permissions::grant_offered_to_role`]).
pub async fn save_role(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    TextPath(role): TextPath,
    AppForm(fields): AppForm<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    let field = |name: &str| form_field(&fields, name);
    user.check_form_token(field("csrfToken"))?;
    user.require_administrator(Some(grants::MANAGE_PERMISSIONS), "role")?;
    let mut problems = Problems::default();
    let reason = field("reason")
        .map(str::trim)
        .filter(|reason| !reason.is_empty())
        .map(str::to_owned);
    if let Some(reason) = &reason {
        problems.check(
            "reason",
            check_text(reason, MAX_REASON_CHARS, false, TextRule::Line),
        );
    }
    let mut requested: Vec<String> = Vec::new();
    for (key, value) in &fields {
        if key == "permissions" && !requested.contains(value) {
            requested.push(value.clone());
        }
    }
    if requested.len() > MAX_GRANTS_PER_ROLE {
        problems.add(
            "permissions",
            format!("must name at most {MAX_GRANTS_PER_ROLE} permissions"),
        );
    }
    problems.finish()?;
    let role_id = state.db.role_id(&role).await?;
    let ttl = state.settings.limits.admin_lock_ttl();
    let saved_role = role.clone();
    state
        .db
        .write_locked(
            Resource::Role(role_id),
            user.actor().user_id,
            ttl,
            move |tx| {
                Box::pin(async move {
                    permissions::grant_offered_to_role(tx, &context, &role, requested, reason).await
                })
            },
        )
        .await?;
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("saved", &saved_role)
        .finish();
    Ok(Redirect::to(&format!("/admin/access?{query}")).into_response())
}

/// A text field of a form as the API's checks read it: absent when
/// missing or blank and `optional`.
fn text_value(fields: &[(String, String)], name: &str, optional: bool) -> Option<Value> {
    form_field(fields, name)
        .map(str::trim)
        .filter(|value| !(optional && value.is_empty()))
        .map(|value| Value::String(value.to_owned()))
}

/// `POST /admin/access/permissions`: creates a permission from the form
/// (name, display name, category, and optionally a description, risk
/// level, comma-separated dependencies, inheritable tick and reason).
pub async fn create_permission(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    AppForm(fields): AppForm<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    user.check_form_token(form_field(&fields, "csrfToken"))?;
    user.require_administrator(Some(grants::MANAGE_PERMISSIONS), "permission")?;
    let dependencies = form_field(&fields, "dependencies").map(|listed| {
        Value::Array(
            listed
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(|name| Value::String(name.to_owned()))
                .collect(),
        )
    });
    let body = NewPermissionBody {
        name: text_value(&fields, "name", false),
        display_name: text_value(&fields, "display_name", false),
        description: text_value(&fields, "description", true),
        category: text_value(&fields, "category", false),
        is_inheritable: Some(Value::Bool(
            form_field(&fields, "is_inheritable") == Some("true"),
        )),
        risk_level: text_value(&fields, "risk_level", true),
        dependencies,
        metadata: None,
        reason: text_value(&fields, "reason", true),
    };
    let new = check_new_permission(&body)?;
    let created = state
        .db
        .write(move |tx| Box::pin(async move { permissions::create(tx, &context, new).await }))
        .await?;
    Ok(to_access(&created.name, "created"))
}

/// `POST /admin/access/permissions/{id}`: enables, disables or archives
/// the permission (`status`), with an optional reason.
pub async fn change_permission(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(fields): AppForm<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    user.check_form_token(form_field(&fields, "csrfToken"))?;
    user.require_administrator(Some(grants::MANAGE_PERMISSIONS), "permission")?;
    let body = PermissionChangeBody {
        status: text_value(&fields, "status", true),
        display_name: None,
        description: None,
        risk_level: None,
        reason: text_value(&fields, "reason", true),
    };
    let changes = check_permission_change(&body)?;
    let ttl = state.settings.limits.admin_lock_ttl();
    let changed = state
        .db
        .write_locked(
            Resource::Permission(id),
            user.actor().user_id,
            ttl,
            move |tx| Box::pin(async move { permissions::update(tx, &context, id, changes).await }),
        )
        .await?;
    Ok(to_access(&changed.name, &changed.status))
}

/// Back to the access page, confirming what was `done` to the permission
/// `name`.
fn to_access(name: &str, done: &str) -> Response {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("permission", name)
        .append_pair("done", done)
        .finish();
    Redirect::to(&format!("/admin/access?{query}#permissions")).into_response()
}
