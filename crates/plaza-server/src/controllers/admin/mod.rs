//! The unversioned admin surface, `/api/admin` (SPEC.md "Unversioned admin
//! surface"): errors as `{error, details}` with `details` listing each bad
//! parameter (declared in `app::api_router` with
//! `on_surface(Surface::UnversionedAdmin, …)`), the general rate limit.

pub mod analytics;

use analytics::{__path_analytics_dashboard, analytics_dashboard};
use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::documented_routes!(analytics_dashboard))
}
