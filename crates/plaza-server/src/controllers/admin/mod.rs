//! The unversioned admin surface, `/api/admin` (SPEC.md "Unversioned admin
//! surface"): errors as `{error, details}` with `details` listing each bad
//! parameter (declared in `app::api_router` with
//! `on_surface(Surface::Admin, …)`). Callers are administrators
//! by session or admin JWT ([`crate::auth::Administrator`], with the
//! capability each route needs). The user list has its own rate limit
//! ([`user_list_routes`], `Limit::AdminUserList`); the rest share the
//! general one.

pub mod analytics;
pub mod emojis;
pub mod permissions;
pub mod roles;
pub mod stats;
pub mod users;

use analytics::{__path_analytics_dashboard, analytics_dashboard};
use emojis::{
    __path_approve_emoji, __path_pending_emojis, __path_reject_emoji, approve_emoji,
    pending_emojis, reject_emoji,
};
use permissions::{
    __path_create_permission, __path_list_permissions, __path_update_permission, create_permission,
    list_permissions, update_permission,
};
use roles::{__path_grant_role_permissions, __path_list_roles, grant_role_permissions, list_roles};
use stats::{__path_system_stats, system_stats};
use users::{
    __path_ban_user, __path_create_subscription, __path_list_users, __path_unban_user,
    __path_update_subscription, ban_user, create_subscription, list_users, unban_user,
    update_subscription,
};
use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(analytics_dashboard))
        .routes(crate::documented_routes!(ban_user))
        .routes(crate::documented_routes!(unban_user))
        .routes(crate::documented_routes!(create_subscription))
        .routes(crate::documented_routes!(update_subscription))
        .routes(crate::documented_routes!(system_stats))
        .routes(crate::documented_routes!(
            list_permissions,
            create_permission
        ))
        .routes(crate::documented_routes!(update_permission))
        .routes(crate::documented_routes!(list_roles))
        .routes(crate::documented_routes!(grant_role_permissions))
        .routes(crate::documented_routes!(pending_emojis))
        .routes(crate::documented_routes!(approve_emoji))
        .routes(crate::documented_routes!(reject_emoji))
}

/// `GET /api/admin/users`, limited to `rate_limit_admin_user_list` per admin.
pub fn user_list_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::documented_routes!(list_users))
}
