//! Generated images: avatars, and the answers every generated image is
//! served with (share images are in `og`).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;

use crate::http::error::AppError;
use crate::http::error::schema::ImageError;
use crate::http::extract::AppQuery;
use crate::services::image_cache::{self, CacheError, ImageKey, ImageKind};
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

/// A deterministic adventurer-style avatar as SVG. The image depends on
/// `seed` and `size` alone, so it is served with a strong `ETag` and kept by
/// browsers and shared caches for a year; `If-None-Match` with that tag is
/// answered 304 without drawing.
#[utoipa::path(
    get,
    path = "/api/avatar-image",
    tag = "images",
    params(AvatarQuery),
    responses(
        (status = 200, description = "The avatar", content_type = "image/svg+xml", body = String,
            headers(
                ("ETag" = String, description = "Strong tag of the image: of its parameters and the renderer's version"),
                ("Cache-Control" = String, description = "`public, max-age=31536000, immutable`"))),
        (status = 304, description = "`If-None-Match` names this image: the client's copy is current; no body",
            headers(
                ("ETag" = String, description = "Strong tag of the image"),
                ("Cache-Control" = String, description = "`public, max-age=31536000, immutable`"))),
        (status = 400, description = "Missing seed, or a size that is not a number in 50..1000", body = ImageError),
        (status = 500, description = "Generation failed", body = ImageError),
        (status = 503, description = "Another request was drawing the same avatar and did not finish in time; retry after `Retry-After`", body = ImageError,
            headers(("Retry-After" = u32, description = "Seconds to wait before retrying"))),
    )
)]
pub async fn avatar_image(
    State(state): State<AppState>,
    headers: HeaderMap,
    AppQuery(query): AppQuery<AvatarQuery>,
) -> Result<Response, AppError> {
    let seed = query
        .seed
        .filter(|seed| !seed.is_empty())
        .ok_or_else(|| AppError::BadRequest("seed is required".to_owned()))?;
    let size = plaza_avatar::parse_size(query.size.as_deref())
        .map_err(|error| AppError::BadRequest(error.to_string()))?;
    let key = ImageKey::new("avatar", &[&seed, &size.to_string()]);
    if key.is_held_by(&headers) {
        return Ok(not_modified(&key, false));
    }
    let svg = state
        .image_cache
        .get_or_render(key, ImageKind::Avatar, || async {
            plaza_avatar::render_svg(&seed, size).map(Bytes::from)
        })
        .await
        .map_err(|error| match error {
            CacheError::Busy => AppError::Busy {
                retry_after_secs: crate::state::SHARE_IMAGE_RENDER_WAIT.as_secs(),
            },
            CacheError::Render(error) => AppError::BadRequest(error.to_string()),
        })?;
    Ok(immutable_image("image/svg+xml", svg, &key, false))
}

/// A generated image named by its URL: its strong `ETag` and a year's
/// `Cache-Control`; `vary_agent` when the same URL answers browsers
/// otherwise (a redirect), so shared caches keep one answer per agent.
pub fn immutable_image(
    content_type: &'static str,
    body: Bytes,
    key: &ImageKey,
    vary_agent: bool,
) -> Response {
    let mut response = (
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        body,
    )
        .into_response();
    validators(response.headers_mut(), key, vary_agent);
    response
}

/// 304 for a client that holds the image already: the validators, no body.
pub fn not_modified(key: &ImageKey, vary_agent: bool) -> Response {
    let mut response = StatusCode::NOT_MODIFIED.into_response();
    validators(response.headers_mut(), key, vary_agent);
    response
}

fn validators(headers: &mut HeaderMap, key: &ImageKey, vary_agent: bool) {
    headers.insert(header::ETAG, key.etag());
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(image_cache::IMMUTABLE),
    );
    if vary_agent {
        headers.insert(header::VARY, HeaderValue::from_static("User-Agent"));
    }
}
