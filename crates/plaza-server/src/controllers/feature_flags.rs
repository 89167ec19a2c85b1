//! `GET /api/feature-flags`: every feature flag, evaluated for the caller
//! (the signed-in user of the session cookie, or nobody), by the domain's
//! rule `plaza_domain::feature_flags::is_enabled_for`.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use plaza_domain::feature_flags::{self, FlagSubject};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::auth::OptionalUser;
use crate::http::error::AppError;
use crate::http::extract::AppJson;
use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::documented_routes!(evaluated_feature_flags))
}

/// The caller's flags.
#[derive(Serialize, ToSchema)]
pub struct EvaluatedFlags {
    /// Every flag (at most 500), by name: whether it is on for the caller.
    #[schema(example = json!({"beta.search_v2": false, "new-editor": true}))]
    pub flags: BTreeMap<String, bool>,
}

/// Every feature flag, on or off for the caller. A flag is on when it is
/// enabled, targets every role or the caller's, and the caller's bucket (a
/// stable hash of the flag name and user id, 0 to 99) is below its rollout
/// percentage; nobody signed in gets only the flags enabled for every role
/// at 100 %. A change shows within 5 s on every instance.
#[utoipa::path(
    get,
    path = "/api/feature-flags",
    tag = "feature-flags",
    responses(
        (status = 200, description = "Every flag, evaluated for the caller", body = EvaluatedFlags),
    )
)]
pub async fn evaluated_feature_flags(
    State(state): State<AppState>,
    OptionalUser(user): OptionalUser,
) -> Result<Response, AppError> {
    let flags = state.flag_snapshot.flags(&state.db).await?;
    let caller = user.map(|user| FlagSubject {
        user_id: user.user_id(),
        role: user.role(),
    });
    let answer = EvaluatedFlags {
        flags: feature_flags::evaluate_all(&flags, caller),
    };
    // The answer is the caller's own: no shared cache may keep it.
    let mut response = AppJson(answer).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    Ok(response)
}
