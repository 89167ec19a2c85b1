//! Link preview: metadata of a URL, fetched through the guarded client of
//! `plaza-link-preview`; the service's own pages are answered in process by
//! [`crate::services::own_pages::OwnPages`].

use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use plaza_link_preview::{LinkPreview, PreviewError};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::controllers::system::no_store_headers;
use crate::http::error::AppError;
use crate::http::error::schema::PlainError;
use crate::http::extract::{AppJson, AppQuery};
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

/// How long a request waits for a free preview slot before 503.
const SLOT_WAIT: Duration = Duration::from_secs(2);

/// Title, description and image of a page: Open Graph, then Twitter cards,
/// then standard tags, then microdata. Only public http(s) targets on
/// allowed ports are fetched; the service's own pages are read in process
/// and its API (`/api/…`) is not previewed. Nothing is cached or stored.
#[utoipa::path(
    get,
    path = "/api/link-preview",
    tag = "link-preview",
    params(LinkPreviewQuery),
    responses(
        (status = 200, description = "The preview", body = LinkPreviewView),
        (status = 400, description = "Missing or malformed URL, or a target that is not allowed (a non-public address, a port not allowed, the service's own API)", body = PlainError),
        (status = 403, description = "The request comes from a link preview (a preview of a preview)", body = PlainError),
        (status = 502, description = "The target could not be fetched (timeout, non-2xx, too many redirects)", body = PlainError),
        (status = 503, description = "Too many previews in progress; retry after the `Retry-After` seconds", body = PlainError,
            headers(("Retry-After" = u32, description = "Seconds to wait before retrying"))),
    )
)]
pub async fn link_preview(
    State(state): State<AppState>,
    headers: HeaderMap,
    AppQuery(query): AppQuery<LinkPreviewQuery>,
) -> Result<Response, AppError> {
    if headers
        .get(header::USER_AGENT)
        .is_some_and(is_link_preview_agent)
    {
        return Err(AppError::Titled {
            status: StatusCode::FORBIDDEN,
            title: "Request not allowed",
            details: "link previews are not made for a link preview".to_owned(),
        });
    }
    // The fetch is this future's own work, not the blocking pool's: a
    // request dropped when its client hangs up ends its fetch with it, so
    // the slot may live in the request (unlike `crate::services::blocking`'s).
    let slot = match state.link_preview.slots.try_acquire() {
        Ok(slot) => Ok(slot),
        Err(_) => tokio::time::timeout(SLOT_WAIT, state.link_preview.slots.acquire())
            .await
            .map_err(|_| ())
            .and_then(|acquired| acquired.map_err(|_| ())),
    };
    let Ok(_slot) = slot else {
        return Err(AppError::Busy {
            retry_after_secs: SLOT_WAIT.as_secs(),
        });
    };
    let url = query.url.unwrap_or_default();
    let preview = state
        .link_preview
        .client
        .preview(&url, &state.settings.server.base_url)
        .await
        .map_err(preview_error)?;
    Ok((no_store_headers(), AppJson(LinkPreviewView::from(preview))).into_response())
}

/// Whether a user agent is a Plaza link preview's (`<app>-LinkPreview/1.0`,
/// whatever the app name): such a request is another preview's fetch, of
/// this server through a name that is not its base URL or of another
/// instance, and answering it could loop between them.
fn is_link_preview_agent(value: &HeaderValue) -> bool {
    value
        .as_bytes()
        .get(..value.len().saturating_sub(b"-LinkPreview/1.0".len()))
        .is_some_and(|app| !app.is_empty() && !app.contains(&b' '))
        && value.as_bytes().ends_with(b"-LinkPreview/1.0")
}

/// The client's error, with the full cause (resolved addresses, error
/// chains) in the log only: the answer carries [`PreviewError::details`].
fn preview_error(error: PreviewError) -> AppError {
    match &error {
        PreviewError::Connect(_) | PreviewError::Read(_) => {
            tracing::warn!(%error, "link preview fetch failed");
        }
        _ => tracing::debug!(%error, "link preview refused or failed"),
    }
    AppError::Titled {
        status: StatusCode::from_u16(error.status()).unwrap_or(StatusCode::BAD_GATEWAY),
        title: error.error(),
        details: error.details(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_preview_agents_are_recognised() {
        for agent in ["Plaza-LinkPreview/1.0", "Agora-LinkPreview/1.0"] {
            assert!(
                is_link_preview_agent(&HeaderValue::from_static(agent)),
                "{agent}"
            );
        }
        for agent in [
            "-LinkPreview/1.0",
            "Mozilla/5.0 (X11) Plaza-LinkPreview/1.0",
            "Plaza-LinkPreview/1.1",
            "curl/8.0",
        ] {
            assert!(
                !is_link_preview_agent(&HeaderValue::from_static(agent)),
                "{agent}"
            );
        }
    }
}
