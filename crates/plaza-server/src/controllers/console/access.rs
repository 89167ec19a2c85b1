//! The console's access page (administrators holding
//! `permissions:manage`): each assignable role with the permissions it
//! holds, as ticks over every active permission (with what each depends
//! on), and saving a role's new list with a reason. Saving is the unit of
//! work of `PUT /api/admin/roles/{role}/permissions`
//! (`plaza_domain::permissions::grant_to_role` under the role's edit lock,
//! audited as `role.permissions.update`): a list that leaves out a
//! dependency of a permission it keeps is refused, naming it.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::grants::{self, MAX_GRANTS_PER_ROLE};
use plaza_domain::listing::{Page, SortOrder};
use plaza_domain::locks::Resource;
use plaza_domain::permissions::{self, PermissionFilter, PermissionSort};
use serde::Deserialize;
use serde_json::json;

use super::{ConsoleUser, check_form_token, page};
use crate::auth::RequestAudit;
use crate::controllers::params::{Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery, TextPath};
use crate::state::AppState;

/// The most permissions the page offers.
const MAX_LISTED: i64 = 500;
/// Longest reason of a change.
const MAX_REASON_CHARS: usize = 500;

#[derive(Deserialize)]
pub struct AccessQuery {
    /// The role just saved, to confirm it.
    saved: Option<String>,
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
        status: Some("active".to_owned()),
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
    let permissions: Vec<_> = found
        .permissions
        .iter()
        .map(|permission| {
            json!({
                "name": permission.name,
                "display_name": permission.display_name,
                "risk_level": permission.risk_level,
                "dependencies": permission.dependencies,
            })
        })
        .collect();
    let roles: Vec<_> = roles
        .iter()
        .map(|role| {
            json!({
                "name": role.name,
                "display_name": role.display_name,
                "description": role.description,
                "permissions": role.permissions,
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
            "saved": query.saved.filter(|role| roles.iter().any(|listed| listed["name"] == role.as_str())),
        }),
    )
}

/// `POST /admin/access/roles/{role}`: replaces the role's grants with the
/// ticked permissions.
pub async fn save_role(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    TextPath(role): TextPath,
    headers: HeaderMap,
    AppForm(fields): AppForm<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    let field = |name: &str| {
        fields
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    check_form_token(&headers, field("csrfToken"))?;
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
    let ttl = std::time::Duration::from_secs(state.settings.limits.admin_lock_ttl_secs);
    let saved_role = role.clone();
    state
        .db
        .write_locked(
            Resource::Role(role_id),
            user.actor().user_id,
            ttl,
            move |tx| {
                Box::pin(async move {
                    permissions::grant_to_role(tx, &context, &role, requested, reason).await
                })
            },
        )
        .await?;
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("saved", &saved_role)
        .finish();
    Ok(Redirect::to(&format!("/admin/access?{query}")).into_response())
}
