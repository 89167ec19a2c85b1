//! Open Graph share images and their viewer page.

use std::sync::LazyLock;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;

use axum::body::Bytes;

use crate::controllers::docs::Binary;
use crate::controllers::images::{self, Caching};
use crate::controllers::system::no_store_headers;
use crate::http::error::AppError;
use crate::http::error::schema::ImageError;
use crate::http::extract::AppQuery;
use crate::http::pages;
use crate::services::blocking::SlotError;
use crate::services::image_cache::{CacheError, ImageKey, ImageKind};
use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(og_image))
        .routes(crate::documented_routes!(og_image_viewer))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OgQuery {
    /// Seed of the background and the avatar; random when missing.
    pub seed: Option<String>,
    /// The quote; without quote and author one comes from the quote providers.
    pub quote: Option<String>,
    /// Who said it.
    pub author: Option<String>,
    /// `true` forces a random seed.
    pub random: Option<String>,
    /// `png` (default) or `svg`.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub kind: Option<String>,
    /// `true` answers with the image even to a browser.
    pub direct: Option<String>,
}

/// Known crawlers and link unfurlers, on top of the `isbot` list.
const UNFURLERS: [&str; 10] = [
    "facebookexternalhit",
    "twitterbot",
    "slackbot",
    "linkedinbot",
    "discordbot",
    "whatsapp",
    "telegrambot",
    "googlebot",
    "bingbot",
    "embedly",
];

static BOTS: LazyLock<isbot::Bots> = LazyLock::new(|| {
    let mut bots = isbot::Bots::default();
    bots.append(&UNFURLERS);
    bots
});

/// A request is a crawler when its User-Agent is a known bot, or carries no
/// browser signature at all (DECISIONS.md).
pub fn is_crawler(headers: &HeaderMap) -> bool {
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    !agent.contains("Mozilla/") || BOTS.is_bot(agent)
}

/// A 1200×630 share image: seeded pattern background, the seed's avatar and a
/// quote. Crawlers get the image (PNG, or SVG with `type=svg`); browsers are
/// redirected to `/og-image-viewer` unless `direct=true`. A rendering failure
/// answers the fallback card.
///
/// A card whose URL names all it shows (a `seed`, not `random=true`, and a
/// `quote` or `author`) is kept in the server's memory by its parameters,
/// so a crawler storm on one share link renders it once, and served with a
/// strong `ETag` (`If-None-Match` is answered 304 without rendering); as a
/// PNG with a year's `Cache-Control`, as SVG with `no-cache, no-store,
/// must-revalidate` (SPEC.md). A card with a random seed or a provider's
/// quote is a new image each time: never kept, `no-store`.
#[utoipa::path(
    get,
    path = "/api/og-image",
    tag = "images",
    params(OgQuery),
    responses(
        (status = 200, description = "The image: PNG, or SVG with `type=svg` and when rendering fails",
            content((inline(Binary) = "image/png"), (String = "image/svg+xml")),
            headers(
                ("ETag" = String, description = "Strong tag of a card the URL names entirely: of its parameters and the renderers' versions"),
                ("Cache-Control" = String, description = "`public, max-age=31536000, immutable` for a PNG card the URL names entirely; else (SVG, the fallback card, a card with a random seed or a provider's quote) `no-cache, no-store, must-revalidate`"),
                ("Vary" = String, description = "`User-Agent` on a kept card without `direct=true` (browsers are redirected instead)"))),
        (status = 302, description = "A browser: redirected to the viewer page with the same query",
            headers(("Vary" = String, description = "`User-Agent`"))),
        (status = 304, description = "`If-None-Match` names this card: the client's copy is current; no body",
            headers(
                ("ETag" = String, description = "Strong tag of the card"),
                ("Cache-Control" = String, description = "`public, max-age=31536000, immutable` for a PNG card, `no-cache, no-store, must-revalidate` for SVG"),
                ("Vary" = String, description = "`User-Agent` without `direct=true`"))),
        (status = 400, description = "`type` is not png or svg", body = ImageError),
        (status = 503, description = "Every rendering slot is busy; retry after `Retry-After`", body = ImageError,
            headers(("Retry-After" = u32, description = "Seconds to wait before retrying"))),
    )
)]
pub async fn og_image(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw_query): RawQuery,
    AppQuery(query): AppQuery<OgQuery>,
) -> Result<Response, AppError> {
    let svg_wanted = match query.kind.as_deref() {
        None | Some("png") => false,
        Some("svg") => true,
        Some(other) => {
            return Err(AppError::BadRequest(format!(
                "type must be png or svg, got {:?}",
                other.chars().take(20).collect::<String>()
            )));
        }
    };
    let direct = query.direct.as_deref() == Some("true");
    if !direct && !is_crawler(&headers) {
        let target = match raw_query {
            Some(raw) if !raw.is_empty() => format!("/og-image-viewer?{raw}"),
            _ => "/og-image-viewer".to_owned(),
        };
        return Ok(found(&target));
    }
    let seed = query
        .seed
        .filter(|seed| !seed.is_empty() && query.random.as_deref() != Some("true"));
    let (seed, quote, author) = match (seed, query.quote, query.author) {
        (Some(seed), quote, author) if quote.is_some() || author.is_some() => (
            seed,
            plaza_og_image::clean_quote(&quote.unwrap_or_default()),
            plaza_og_image::clean_author(&author.unwrap_or_default()),
        ),
        (seed, quote, author) => {
            let seed = seed.unwrap_or_else(plaza_og_image::random_seed);
            let (quote, author) = match (quote, author) {
                (None, None) => {
                    let quote = state.quotes.next_quote().await;
                    (quote.text, quote.author)
                }
                (quote, author) => (quote.unwrap_or_default(), author.unwrap_or_default()),
            };
            return Ok(
                match render_card(&state, svg_wanted, &seed, &quote, &author).await {
                    Ok(card) => card_response(svg_wanted, card, None),
                    Err(failure) => failure.answer(&state)?,
                },
            );
        }
    };
    let key = ImageKey::new(
        if svg_wanted { "og-svg" } else { "og-png" },
        &[&seed, &quote, &author],
    );
    if key.is_held_by(&headers) {
        return Ok(images::not_modified(&key, caching(svg_wanted), !direct));
    }
    let card = state
        .image_cache
        .get_or_render(key, ImageKind::ShareCard, || {
            render_card(&state, svg_wanted, &seed, &quote, &author)
        })
        .await;
    match card {
        Ok(card) => Ok(card_response(svg_wanted, card, Some((&key, !direct)))),
        Err(CacheError::Busy) => CardFailure::Busy.answer(&state),
        Err(CacheError::Render(failure)) => failure.answer(&state),
    }
}

/// Why a card has no image.
enum CardFailure {
    /// No rendering slot freed up in time.
    Busy,
    /// The rendering panicked.
    Panicked(tokio::task::JoinError),
    /// The renderer refused the card: the fallback card is answered.
    Failed(plaza_og_image::OgError),
}

impl CardFailure {
    /// The answer: the fallback card (never kept) when rendering failed,
    /// else the error.
    fn answer(self, state: &AppState) -> Result<Response, AppError> {
        match self {
            CardFailure::Busy => Err(AppError::Busy {
                retry_after_secs: crate::state::SHARE_IMAGE_RENDER_WAIT.as_secs(),
            }),
            CardFailure::Panicked(error) => Err(AppError::internal(error)),
            CardFailure::Failed(error) => {
                tracing::error!(%error, "share image rendering failed; answering the fallback card");
                let fallback = plaza_og_image::fallback_svg(
                    &state.settings.server.app_name,
                    &state.settings.images.tagline,
                );
                Ok(no_store_image("image/svg+xml", Bytes::from(fallback)))
            }
        }
    }
}

/// The card's bytes: its SVG, or the SVG rasterised in a rendering slot.
async fn render_card(
    state: &AppState,
    svg_wanted: bool,
    seed: &str,
    quote: &str,
    author: &str,
) -> Result<Bytes, CardFailure> {
    let svg = plaza_og_image::render_svg(seed, quote, author);
    if svg_wanted {
        return Ok(Bytes::from(svg));
    }
    state
        .og_renders
        .run(move || plaza_og_image::render_png(&svg))
        .await
        .map_err(|error| match error {
            SlotError::Busy => CardFailure::Busy,
            SlotError::Panicked(error) => CardFailure::Panicked(error),
        })?
        .map(Bytes::from)
        .map_err(CardFailure::Failed)
}

/// A card: kept and validated when its URL names it (`named`: its key, and
/// whether the answer varies by agent), else never stored.
fn card_response(svg: bool, card: Bytes, named: Option<(&ImageKey, bool)>) -> Response {
    let content_type = if svg { "image/svg+xml" } else { "image/png" };
    match named {
        Some((key, vary_agent)) => {
            images::named_image(content_type, card, key, caching(svg), vary_agent)
        }
        None => no_store_image(content_type, card),
    }
}

/// What clients may keep of a named card: SPEC.md says an SVG card is not
/// cached and states nothing for the PNG.
fn caching(svg: bool) -> Caching {
    if svg { Caching::NotKept } else { Caching::Year }
}

/// A 302 redirect, as DECISIONS.md asks for the browser case; the same URL
/// answers crawlers with the image, so the answer varies by agent.
fn found(target: &str) -> Response {
    match HeaderValue::from_str(target) {
        Ok(location) => (
            axum::http::StatusCode::FOUND,
            [
                (header::LOCATION, location),
                (header::VARY, HeaderValue::from_static("User-Agent")),
            ],
        )
            .into_response(),
        Err(_) => AppError::BadRequest("query cannot be redirected".to_owned()).into_response(),
    }
}

fn no_store_image(content_type: &'static str, body: Bytes) -> Response {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        no_store_headers(),
        body,
    )
        .into_response()
}

/// The page browsers see for a share link: the image, with Open Graph and
/// Twitter card tags pointing at it with `direct=true`.
#[utoipa::path(
    get,
    path = "/og-image-viewer",
    tag = "images",
    params(OgQuery),
    responses((status = 200, description = "HTML page showing the image", content_type = "text/html", body = String))
)]
pub async fn og_image_viewer(
    State(state): State<AppState>,
    RawQuery(raw_query): RawQuery,
) -> Response {
    let mut pairs: Vec<(String, String)> =
        url::form_urlencoded::parse(raw_query.unwrap_or_default().as_bytes())
            .into_owned()
            .filter(|(key, _)| key != "direct")
            .collect();
    pairs.push(("direct".to_owned(), "true".to_owned()));
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    let image_path = format!("/api/og-image?{query}");
    (
        no_store_headers(),
        Html(pages::og_viewer(&state.settings.server, &image_path)),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::USER_AGENT, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn crawlers_and_browsers_are_told_apart() {
        for crawler in [
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            "Twitterbot/1.0",
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
            "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
            "WhatsApp/2.23.20.0 A",
            "TelegramBot (like TwitterBot)",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
            "curl/8.5.0",
            "",
        ] {
            assert!(is_crawler(&agent(crawler)), "{crawler}");
        }
        for browser in [
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:127.0) Gecko/20100101 Firefox/127.0",
        ] {
            assert!(!is_crawler(&agent(browser)), "{browser}");
        }
    }
}
