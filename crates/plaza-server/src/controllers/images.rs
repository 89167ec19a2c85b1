//! Generated images: avatars (and, from `plaza-og-image`, share images).

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;

use crate::controllers::system::no_store_headers;
use crate::http::error::AppError;
use crate::http::error::schema::ImageError;
use crate::http::extract::AppQuery;
use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::documented_routes!(avatar_image))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AvatarQuery {
    /// Any string, case sensitive; the same seed always gives the same avatar.
    pub seed: Option<String>,
    /// Pixels, 50 to 1000 (default 200).
    #[param(value_type = Option<u32>, minimum = 50, maximum = 1000)]
    pub size: Option<String>,
}

/// A deterministic adventurer-style avatar as SVG.
#[utoipa::path(
    get,
    path = "/api/avatar-image",
    tag = "images",
    params(AvatarQuery),
    responses(
        (status = 200, description = "The avatar", content_type = "image/svg+xml", body = String),
        (status = 400, description = "Missing seed, or a size that is not a number in 50..1000", body = ImageError),
        (status = 500, description = "Generation failed", body = ImageError),
    )
)]
pub async fn avatar_image(AppQuery(query): AppQuery<AvatarQuery>) -> Result<Response, AppError> {
    let seed = query
        .seed
        .filter(|seed| !seed.is_empty())
        .ok_or_else(|| AppError::BadRequest("seed is required".to_owned()))?;
    let size = plaza_avatar::parse_size(query.size.as_deref())
        .map_err(|error| AppError::BadRequest(error.to_string()))?;
    let svg = plaza_avatar::render_svg(&seed, size)
        .map_err(|error| AppError::BadRequest(error.to_string()))?;
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("image/svg+xml"),
        )],
        no_store_headers(),
        svg,
    )
        .into_response())
}
