//! The versioned admin surface, `/api/v1/admin` (SPEC.md "Versioned admin
//! surface"): its routes and the rules they share, in one place.
//!
//! - **Authentication**: every handler takes [`crate::auth::AdminToken`]: a
//!   Bearer admin JWT of an active admin, holding the permission of the
//!   request's method category (`admin:read` for GET, `admin:write` for
//!   POST/PUT/PATCH, `admin:delete` for DELETE; `admin:super` covers all).
//! - **Errors**: `{success: false, error: {code, message, …}}`, chosen by the
//!   path prefix (`error::Surface::VersionedAdmin`).
//! - **Rate limit**: per admin, tier `general` or `super`, declared in
//!   `app::api_router` with `Limit::VersionedAdmin`; every answer carries
//!   `X-Admin-Tier` and the `X-RateLimit-*` headers.
//! - **Answers**: lists in [`ListEnvelope`], single objects in [`ItemEnvelope`].
//! - **Locks**: mutating operations on a user or post take its edit lock
//!   (`plaza_domain::locks`); another admin's write meanwhile is 423
//!   `RESOURCE_LOCKED`.

pub mod audit_logs;
pub mod broadcasts;
pub mod posts;

use audit_logs::{__path_list_audit_logs, list_audit_logs};
use broadcasts::{__path_create_broadcast, create_broadcast};
use posts::{__path_list_admin_posts, __path_moderate_post, list_admin_posts, moderate_post};

use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::controllers::params::Pagination;
use crate::state::AppState;

/// The default page size of the surface's lists (SPEC.md "Limits").
pub const DEFAULT_LIMIT: i64 = 50;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(list_audit_logs))
        .routes(crate::documented_routes!(list_admin_posts))
        .routes(crate::documented_routes!(moderate_post))
        .routes(crate::documented_routes!(create_broadcast))
}

/// A successful answer holding one object.
#[derive(Debug, Serialize, ToSchema)]
pub struct ItemEnvelope<T> {
    /// Always true.
    pub success: bool,
    pub data: T,
}

impl<T> ItemEnvelope<T> {
    pub fn new(data: T) -> Self {
        ItemEnvelope {
            success: true,
            data,
        }
    }
}

/// A successful list answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListEnvelope<T> {
    /// Always true.
    pub success: bool,
    pub data: Vec<T>,
    pub meta: ListMeta,
}

/// What a list answer says about its page.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListMeta {
    pub pagination: Pagination,
}

impl<T> ListEnvelope<T> {
    pub fn new(data: Vec<T>, pagination: Pagination) -> Self {
        ListEnvelope {
            success: true,
            data,
            meta: ListMeta { pagination },
        }
    }
}
