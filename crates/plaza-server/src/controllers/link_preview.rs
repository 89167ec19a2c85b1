//! Link preview: metadata of a URL, fetched through the guarded client of
//! `plaza-link-preview`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plaza_link_preview::{LinkPreview, PreviewError};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::controllers::system::no_store_headers;
use crate::error::AppError;
use crate::error::schema::PlainError;
use crate::extract::{AppJson, AppQuery};
use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::documented_routes!(link_preview))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LinkPreviewQuery {
    /// The page to preview, URL-encoded; a path starting with `/` is an
    /// internal link resolved against the base URL.
    pub url: Option<String>,
}

/// Preview metadata, as SPEC.md gives it.
#[derive(Serialize, ToSchema)]
pub struct LinkPreviewView {
    /// May be empty.
    pub title: String,
    pub description: String,
    /// Absolute URL, or empty when the page has no image.
    pub image: String,
    /// The URL as requested.
    pub url: String,
}

impl From<LinkPreview> for LinkPreviewView {
    fn from(preview: LinkPreview) -> Self {
        LinkPreviewView {
            title: preview.title,
            description: preview.description,
            image: preview.image,
            url: preview.url,
        }
    }
}

/// Title, description and image of a page: Open Graph, then Twitter cards,
/// then standard tags, then microdata. Only public http(s) targets on
/// allowed ports are fetched; nothing is cached or stored.
#[utoipa::path(
    get,
    path = "/api/link-preview",
    tag = "link-preview",
    params(LinkPreviewQuery),
    responses(
        (status = 200, description = "The preview", body = LinkPreviewView),
        (status = 400, description = "Missing or malformed URL, or a target that is not allowed", body = PlainError),
        (status = 502, description = "The target could not be fetched (timeout, non-2xx, too many redirects)", body = PlainError),
    )
)]
pub async fn link_preview(
    State(state): State<AppState>,
    AppQuery(query): AppQuery<LinkPreviewQuery>,
) -> Result<Response, AppError> {
    let url = query.url.unwrap_or_default();
    let preview = state
        .link_preview
        .preview(&url, &state.settings.base_url)
        .await
        .map_err(preview_error)?;
    Ok((no_store_headers(), AppJson(LinkPreviewView::from(preview))).into_response())
}

fn preview_error(error: PreviewError) -> AppError {
    AppError::Titled {
        status: StatusCode::from_u16(error.status()).unwrap_or(StatusCode::BAD_GATEWAY),
        title: error.error(),
        details: error.details(),
    }
}
