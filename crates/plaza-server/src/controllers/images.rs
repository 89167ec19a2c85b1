//! Generated images: avatars, and the answers every generated image is
//! served with (share images are in `og`).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;

use crate::controllers::system::no_store_headers;
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
/// `seed` and `size` alone, so it is served with a strong `ETag`
/// (`If-None-Match` with that tag is answered 304 without drawing) and kept
/// in the server's memory; clients are told not to cache it, as SPEC.md
/// says (`Cache-Control: no-cache, no-store, must-revalidate`).
#[utoipa::path(
    get,
    path = "/api/avatar-image",
    tag = "images",
    params(AvatarQuery),
    responses(
        (status = 200, description = "The avatar", content_type = "image/svg+xml", body = String,
            headers(
                ("ETag" = String, description = "Strong tag of the image: of its parameters and the renderer's version"),
                ("Cache-Control" = String, description = "`no-cache, no-store, must-revalidate` (avatars are not cached)"))),
        (status = 304, description = "`If-None-Match` names this image: the client's copy is current; no body",
            headers(
                ("ETag" = String, description = "Strong tag of the image"),
                ("Cache-Control" = String, description = "`no-cache, no-store, must-revalidate`"))),
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
        return Ok(not_modified(&key, Caching::NotKept, false));
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
    Ok(named_image(
        "image/svg+xml",
        svg,
        &key,
        Caching::NotKept,
        false,
    ))
}

/// What clients are told about keeping an image named by its URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    /// A year, without asking again (`public, max-age=31536000,
    /// immutable`): the PNG share card, for which SPEC.md states no header.
    Year,
    /// Not at all (`no-cache, no-store, must-revalidate`, with `Pragma` and
    /// `Expires`): what SPEC.md states for avatars and SVG share cards.
    NotKept,
}

/// A generated image named by its URL: its strong `ETag` and the
/// `Cache-Control` of `caching`; `vary_agent` when the same URL answers
/// browsers otherwise (a redirect), so shared caches keep one answer per
/// agent.
pub fn named_image(
    content_type: &'static str,
    body: Bytes,
    key: &ImageKey,
    caching: Caching,
    vary_agent: bool,
) -> Response {
    let mut response = (
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        body,
    )
        .into_response();
    validators(response.headers_mut(), key, caching, vary_agent);
    response
}

/// 304 for a client that holds the image already: the validators, no body.
pub fn not_modified(key: &ImageKey, caching: Caching, vary_agent: bool) -> Response {
    let mut response = StatusCode::NOT_MODIFIED.into_response();
    validators(response.headers_mut(), key, caching, vary_agent);
    response
}

fn validators(headers: &mut HeaderMap, key: &ImageKey, caching: Caching, vary_agent: bool) {
    headers.insert(header::ETAG, key.etag());
    match caching {
        Caching::Year => {
            headers.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static(image_cache::IMMUTABLE),
            );
        }
        Caching::NotKept => headers.extend(no_store_headers()),
    }
    if vary_agent {
        headers.insert(header::VARY, HeaderValue::from_static("User-Agent"));
    }
}
