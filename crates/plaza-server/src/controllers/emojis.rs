//! Emojis (SPEC.md "Emoji"; paths in DECISIONS.md): the catalog for the
//! requesting platform, custom emoji uploads and usage tracking.
//!
//! A list answer depends on the platform only through its OS, version and
//! Emoji version, so anonymous answers are kept per platform and query for
//! [`ANSWER_SLOT_MILLIS`]: a tracked use shows in `usage_count` within that
//! (DECISIONS.md allows 5 s), and the catalog is read from memory instead
//! of the database on almost every request.

use axum::extract::{RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use plaza_domain::emojis::{self, Emoji, EmojiQuery, EmojiSort, NewCustomEmoji};
use plaza_domain::listing::Page;
use plaza_emoji::{ClientHints, OsFamily, Platform};
use plaza_media::{ImageKind, Limits, VariantSize};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::{CurrentUser, OptionalUser};
use crate::controllers::params::{self, Problems};
use crate::controllers::uploads::{file_url, no_file, read_form, refusal_error};
use crate::http::answer_cache;
use crate::http::error::AppError;
use crate::http::error::schema::{GeneralError, UploadError};
use crate::http::extract::{AppJson, AppQuery};
use crate::state::AppState;

/// How long an anonymous list answer is reused.
pub const ANSWER_SLOT_MILLIS: i64 = 2_000;
/// Page size when none is asked for (SPEC.md "Emoji page size").
const DEFAULT_PER_PAGE: i64 = 50;
/// Largest page size; a larger `per_page` gets this many.
const MAX_PER_PAGE: i64 = 100;
/// Highest page number asked for (far past the catalog's end).
const MAX_PAGE: i64 = 100_000;
/// Longest `search` and `category`.
const MAX_FILTER_CHARS: usize = 100;
/// Longest `emoji_id` tracked.
const MAX_EMOJI_ID_CHARS: usize = 200;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(list_emojis))
        .routes(crate::documented_routes!(track_usage))
        .routes(crate::documented_routes!(track_emoji))
}

/// `POST /api/emojis/custom`, on the upload surface.
pub fn custom_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(upload_custom_emoji))
        .layer(axum::extract::DefaultBodyLimit::disable())
}

/// The category an emoji is in.
#[derive(Serialize, ToSchema)]
pub struct EmojiCategoryRef {
    pub id: i64,
    pub name: String,
    pub display_name: String,
}

/// One emoji (SPEC.md "Emoji").
#[derive(Serialize, ToSchema)]
pub struct EmojiItem {
    pub id: i64,
    /// Unicode: the code points in hex joined by `-` (`1f600`); custom:
    /// `custom-<owner id>-<name>`.
    pub emoji_id: String,
    /// `U+1F600`; `null` for a custom emoji.
    pub unicode_codepoint: Option<String>,
    /// The emoji itself; `null` for a custom emoji.
    pub unicode_char: Option<String>,
    pub name: String,
    pub description: String,
    pub category: EmojiCategoryRef,
    pub tags: Vec<String>,
    /// Shortcodes, without colons.
    pub aliases: Vec<String>,
    pub keywords: Vec<String>,
    pub is_custom: bool,
    /// Where a custom emoji's image is served (no sign-in needed).
    pub custom_image_url: Option<String>,
    pub usage_count: i64,
    /// The Emoji version it first appeared in (`null` for custom emojis).
    pub version_min: Option<String>,
    pub is_approved: bool,
    /// A custom emoji only its owner sees until a moderator approves it.
    pub is_personal: bool,
}

impl From<Emoji> for EmojiItem {
    fn from(emoji: Emoji) -> Self {
        EmojiItem {
            is_personal: emoji.is_personal(),
            id: emoji.id,
            emoji_id: emoji.emoji_id,
            unicode_codepoint: emoji.unicode_codepoint,
            unicode_char: emoji.unicode_char,
            name: emoji.name,
            description: emoji.description,
            category: EmojiCategoryRef {
                id: emoji.category.id,
                name: emoji.category.name,
                display_name: emoji.category.display_name,
            },
            tags: emoji.tags,
            aliases: emoji.aliases,
            keywords: emoji.keywords,
            is_custom: emoji.is_custom,
            custom_image_url: emoji.custom_image_url,
            usage_count: emoji.usage_count,
            version_min: emoji.version_min,
            is_approved: emoji.is_approved,
        }
    }
}

/// A category with the number of emojis the platform can show in it.
#[derive(Serialize, ToSchema)]
pub struct EmojiCategoryCount {
    pub id: i64,
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub emoji_count: i64,
}

/// What the platform draws.
#[derive(Serialize, ToSchema)]
pub struct EmojiSupport {
    /// Draws Unicode emojis itself.
    pub supports_unicode: bool,
    /// Shows custom emojis (images): every browser does.
    pub supports_custom: bool,
    /// The highest Emoji version it draws, such as `12.0`.
    pub max_emoji_version: String,
    /// `unicode` (the system's own glyphs), or `image` where the platform
    /// is unknown.
    pub recommended_format: String,
}

/// The requesting platform, from the User-Agent, the client hints or `os`.
#[derive(Serialize, ToSchema)]
pub struct OsInfo {
    /// `windows`, `mac`, `ios`, `android`, `linux` or `unknown`.
    pub os: String,
    /// Its version as told, such as `10`, `11`, `17.4`; empty when unknown.
    pub version: String,
    /// Whether the platform is one Plaza knows the emoji support of.
    pub is_supported: bool,
    pub emoji_support: EmojiSupport,
}

impl OsInfo {
    fn new(platform: &Platform) -> Self {
        OsInfo {
            os: platform.os.as_str().to_owned(),
            version: platform.version.clone(),
            is_supported: platform.is_supported,
            emoji_support: EmojiSupport {
                supports_unicode: platform.is_supported,
                supports_custom: true,
                max_emoji_version: platform.max_emoji_version.to_string(),
                recommended_format: if platform.is_supported {
                    "unicode"
                } else {
                    "image"
                }
                .to_owned(),
            },
        }
    }
}

/// `GET /api/emojis`'s answer.
#[derive(Serialize, ToSchema)]
pub struct EmojiList {
    pub emojis: Vec<EmojiItem>,
    pub categories: Vec<EmojiCategoryCount>,
    pub os_info: OsInfo,
    /// Emojis matching every filter.
    pub total_count: i64,
    pub page: i64,
    pub per_page: i64,
}

/// Filters of the emoji list; each arrives as text and is checked, a bad
/// one is a 422 naming it.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EmojiListQuery {
    /// A category name (`smileys_emotion`, `custom`, …; see `categories`).
    pub category: Option<String>,
    /// Part of a name, shortcode or keyword, in any case.
    pub search: Option<String>,
    /// 1 or more, default 1.
    #[param(value_type = Option<u32>, minimum = 1)]
    pub page: Option<String>,
    /// 1 or more, default 50; above 100 counts as 100 (as idling.app's
    /// emoji picker expects when it asks for 1000).
    #[param(value_type = Option<u32>, minimum = 1)]
    pub per_page: Option<String>,
    /// Add the approved custom emojis and, signed in, your own personal
    /// ones. Default false.
    #[param(value_type = Option<bool>)]
    pub include_custom: Option<String>,
    /// Overrides the OS family the headers tell: `windows`, `mac`, `ios`,
    /// `android` or `linux`.
    pub os: Option<String>,
    /// `default` (categories in Unicode order) or `popular` (most used first).
    pub sort: Option<String>,
}

/// The platform of a request.
fn platform(state: &AppState, headers: &HeaderMap, family: Option<OsFamily>) -> Platform {
    let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    state.emoji_platforms.detect(
        ClientHints {
            user_agent: text(header::USER_AGENT.as_str()),
            platform: text("sec-ch-ua-platform"),
            platform_version: text("sec-ch-ua-platform-version"),
        },
        family,
    )
}

fn optional_text(problems: &mut Problems, field: &str, raw: Option<&str>) -> Option<String> {
    let raw = raw.map(str::trim).filter(|raw| !raw.is_empty())?;
    if raw.chars().count() > MAX_FILTER_CHARS {
        problems.add(
            field,
            format!("must be at most {MAX_FILTER_CHARS} characters"),
        );
        return None;
    }
    Some(raw.to_owned())
}

fn whole_number(
    problems: &mut Problems,
    field: &str,
    raw: Option<&str>,
    range: std::ops::RangeInclusive<i64>,
    default: i64,
) -> i64 {
    let Some(raw) = raw else { return default };
    match raw.trim().parse::<i64>() {
        Ok(value) if range.contains(&value) => value,
        _ => {
            problems.add(
                field,
                format!(
                    "must be a whole number from {} to {}",
                    range.start(),
                    range.end()
                ),
            );
            default
        }
    }
}

/// `per_page`: a whole number of 1 or more, where anything above
/// [`MAX_PER_PAGE`], however large, is [`MAX_PER_PAGE`] (as idling.app
/// answers its emoji picker's `per_page=1000`).
fn page_size(problems: &mut Problems, raw: Option<&str>) -> i64 {
    let Some(raw) = raw else {
        return DEFAULT_PER_PAGE;
    };
    match raw.trim().parse::<i64>() {
        Ok(size) if size >= 1 => size.min(MAX_PER_PAGE),
        Err(error) if *error.kind() == std::num::IntErrorKind::PosOverflow => MAX_PER_PAGE,
        _ => {
            problems.add("per_page", "must be a whole number of 1 or more");
            DEFAULT_PER_PAGE
        }
    }
}

/// List the emojis the requesting platform can draw: Unicode emojis up to
/// the Emoji version of its OS (from the User-Agent, and
/// `Sec-CH-UA-Platform` / `Sec-CH-UA-Platform-Version` where sent; Windows
/// 11 is told apart from 10 only by the version hint), with custom ones on
/// request. No sign-in needed. Shared answers may be about 2 s old.
/// Answers carry `Accept-CH` asking for the platform hints.
#[utoipa::path(
    get,
    path = "/api/emojis",
    tag = "emojis",
    params(
        EmojiListQuery,
        ("Sec-CH-UA-Platform" = Option<String>, Header, description = "Client hint: the OS, `\"Windows\"`"),
        ("Sec-CH-UA-Platform-Version" = Option<String>, Header, description = "Client hint: the OS version, `\"15.0.0\"` (Windows 11 from 13)"),
    ),
    responses(
        (status = 200, description = "A page of emojis, the categories with counts, the platform", body = EmojiList),
        (status = 422, description = "A bad page, per_page, include_custom, os, sort, category or search", body = GeneralError),
    )
)]
pub async fn list_emojis(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    headers: HeaderMap,
    RawQuery(raw_query): RawQuery,
    AppQuery(query): AppQuery<EmojiListQuery>,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    let page = whole_number(
        &mut problems,
        "page",
        query.page.as_deref(),
        1..=MAX_PAGE,
        1,
    );
    let per_page = page_size(&mut problems, query.per_page.as_deref());
    let include_custom = params::boolean(
        &mut problems,
        "include_custom",
        query.include_custom.as_deref(),
    )
    .unwrap_or(false);
    let family = query.os.as_deref().and_then(|raw| {
        problems.check(
            "os",
            OsFamily::parse(raw)
                .ok_or_else(|| "must be windows, mac, ios, android or linux".to_owned()),
        )
    });
    let sort = match query.sort.as_deref() {
        None | Some("default") => EmojiSort::Catalog,
        Some("popular") => EmojiSort::Popular,
        Some(_) => {
            problems.add("sort", "must be default or popular");
            EmojiSort::Catalog
        }
    };
    let category = optional_text(&mut problems, "category", query.category.as_deref());
    let search = optional_text(&mut problems, "search", query.search.as_deref());
    problems.finish()?;

    let platform = platform(&state, &headers, family);
    let viewer = caller.as_ref().map(|caller| caller.user_id());
    let filter = EmojiQuery {
        max_version_rank: platform.max_emoji_version.rank(),
        category,
        search,
        include_custom,
        viewer,
        sort,
        page: Page {
            limit: per_page,
            offset: (page - 1) * per_page,
        },
    };
    // Signed-in callers who asked for custom emojis see their own personal
    // ones: rendered for them alone.
    let personal = include_custom && viewer.is_some();
    let keyed = answer_cache::key(!personal, &headers, "emojis", raw_query.as_deref()).map(|key| {
        (
            format!(
                "{}|{}|{}|{key}",
                platform.os.as_str(),
                platform.version,
                platform.max_emoji_version
            ),
            plaza_domain::time::now_millis() / ANSWER_SLOT_MILLIS,
        )
    });
    let mut response = answer_cache::answer_in_slot(&state.answer_caches.emojis, keyed, async {
        let listed = state.db.list_emojis(&filter).await?;
        Ok(EmojiList {
            emojis: listed.emojis.into_iter().map(EmojiItem::from).collect(),
            categories: listed
                .categories
                .into_iter()
                .map(|category| EmojiCategoryCount {
                    id: category.id,
                    name: category.name,
                    display_name: category.display_name,
                    description: category.description,
                    emoji_count: category.emoji_count,
                })
                .collect(),
            os_info: OsInfo::new(&platform),
            total_count: listed.total,
            page,
            per_page,
        })
    })
    .await?;
    // Browsers send the platform version hint only once asked for it.
    let headers = response.headers_mut();
    headers.insert(
        "accept-ch",
        HeaderValue::from_static("Sec-CH-UA-Platform, Sec-CH-UA-Platform-Version"),
    );
    headers.insert(
        header::VARY,
        HeaderValue::from_static("User-Agent, Sec-CH-UA-Platform, Sec-CH-UA-Platform-Version"),
    );
    Ok(response)
}

/// A use of an emoji.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EmojiUse {
    /// The emoji's `emoji_id`.
    pub emoji_id: String,
    /// `windows` or `mac` for a Unicode emoji (the keyboard it came from),
    /// `custom` for a custom one.
    pub emoji_type: String,
}

/// `POST /api/emojis/usage`'s answer.
#[derive(Serialize, ToSchema)]
pub struct UsageTracked {
    pub success: bool,
}

/// `POST /api/emojis/track`'s answer.
#[derive(Serialize, ToSchema)]
pub struct EmojiTracked {
    pub success: bool,
    pub message: String,
}

async fn count_use(state: &AppState, caller: Option<i64>, body: EmojiUse) -> Result<(), AppError> {
    let mut problems = Problems::default();
    let custom = match body.emoji_type.as_str() {
        "windows" | "mac" => Some(false),
        "custom" => Some(true),
        _ => {
            problems.add("emoji_type", "must be windows, mac or custom");
            None
        }
    };
    let emoji_id = body.emoji_id.trim();
    if emoji_id.is_empty() || emoji_id.chars().count() > MAX_EMOJI_ID_CHARS {
        problems.add(
            "emoji_id",
            format!("must be 1 to {MAX_EMOJI_ID_CHARS} characters"),
        );
    }
    problems.finish()?;
    state
        .db
        .track_emoji_use(emoji_id, custom.unwrap_or(false), caller)
        .await?;
    Ok(())
}

/// Count a use of an emoji (its `usage_count`, shown within 2 s, orders
/// `sort=popular`). A custom emoji counts when it is approved or the
/// caller's own.
#[utoipa::path(
    post,
    path = "/api/emojis/usage",
    tag = "emojis",
    request_body = EmojiUse,
    responses(
        (status = 200, description = "Counted", body = UsageTracked),
        (status = 404, description = "No such emoji of that type", body = GeneralError),
        (status = 422, description = "A missing or bad emoji_id or emoji_type", body = GeneralError),
    )
)]
pub async fn track_usage(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    AppJson(body): AppJson<EmojiUse>,
) -> Result<AppJson<UsageTracked>, AppError> {
    count_use(&state, caller.map(|caller| caller.user_id()), body).await?;
    Ok(AppJson(UsageTracked { success: true }))
}

/// Count a use of an emoji, answered with a message: the same as
/// `POST /api/emojis/usage`.
#[utoipa::path(
    post,
    path = "/api/emojis/track",
    tag = "emojis",
    request_body = EmojiUse,
    responses(
        (status = 200, description = "Counted", body = EmojiTracked),
        (status = 404, description = "No such emoji of that type", body = GeneralError),
        (status = 422, description = "A missing or bad emoji_id or emoji_type", body = GeneralError),
    )
)]
pub async fn track_emoji(
    State(state): State<AppState>,
    OptionalUser(caller): OptionalUser,
    AppJson(body): AppJson<EmojiUse>,
) -> Result<AppJson<EmojiTracked>, AppError> {
    count_use(&state, caller.map(|caller| caller.user_id()), body).await?;
    Ok(AppJson(EmojiTracked {
        success: true,
        message: "Emoji usage tracked".to_owned(),
    }))
}

/// `POST /api/emojis/custom`'s answer.
#[derive(Serialize, ToSchema)]
pub struct CustomEmojiCreated {
    pub success: bool,
    pub emoji: EmojiItem,
}

/// The multipart form of `POST /api/emojis/custom`.
// The document's description of the form; `read_form` reads it as it streams.
#[derive(ToSchema)]
pub struct CustomEmojiForm {
    /// The image: PNG, JPEG or GIF.
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
    /// 2 to 32 of `a-z 0-9 _`, without colons.
    pub name: String,
    /// A catalog category; `custom` when left out.
    #[schema(nullable = false)]
    pub category: Option<String>,
}

/// Add a custom emoji: multipart `file` (PNG, JPEG or GIF, 1 KB to 256 KB,
/// at most 128×128, still), `name` (2 to 32 of `a-z 0-9 _`, without
/// colons, unique among yours) and `category` (default `custom`). It is
/// personal (only you see it, with `include_custom=true`) until a
/// moderator approves it.
#[utoipa::path(
    post,
    path = "/api/emojis/custom",
    tag = "emojis",
    request_body(content = CustomEmojiForm, content_type = "multipart/form-data", description = "`file`, `name`, `category`"),
    responses(
        (status = 200, description = "Stored, personal and waiting for approval", body = CustomEmojiCreated),
        (status = 400, description = "A file error, as the upload table answers (`No file provided`, `Invalid file type` with `allowedTypes`, also for an animation or a polyglot, `File too large` with `maxSize` and `receivedSize`, `File too small`, `Image too large`, `File rejected` by the malware scan)", body = UploadError),
        (status = 401, description = "`Authentication required`", body = UploadError),
        (status = 422, description = "A missing or bad `name` (or one you already use) or an unknown `category`; `details` lists each", body = UploadError),
        (status = 500, description = "`Upload failed`: the store or the database failed; nothing of the emoji is kept", body = UploadError),
        (status = 503, description = "Every processing slot is busy", body = UploadError),
    )
)]
pub async fn upload_custom_emoji(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    request: Request,
) -> Result<AppJson<CustomEmojiCreated>, AppError> {
    let limits = CUSTOM_EMOJI_LIMITS;
    let mut form = read_form(&state, request, limits.max_bytes, &["name", "category"]).await?;
    let (original_name, bytes) = form.file.take().ok_or_else(no_file)?;
    let owner_id = user.user_id();
    let name = form.fields.remove("name").unwrap_or_default();
    let category = form
        .fields
        .remove("category")
        .map(|category| category.trim().to_owned())
        .filter(|category| !category.is_empty())
        .unwrap_or_else(|| plaza_emoji::CUSTOM_CATEGORY.to_owned());
    let mut problems = Problems::default();
    if name.is_empty() {
        problems.add("name", "is required");
    } else if name.starts_with(':') || name.ends_with(':') {
        problems.add(
            "name",
            "write the name without colons: party_parrot, not :party_parrot:",
        );
    } else if !emojis::is_custom_name(&name) {
        problems.add("name", "must be 2 to 32 characters of a-z, 0-9 and _");
    } else if state.db.custom_emoji_name_taken(owner_id, &name).await? {
        problems.add("name", "you already have a custom emoji with this name");
    }
    if category.chars().count() > MAX_FILTER_CHARS
        || !state.db.emoji_category_exists(&category).await?
    {
        problems.add("category", "must be the name of an emoji category");
    }
    problems.finish()?;
    let uploads = &state.uploads;
    let stored = uploads
        .store(bytes, original_name, owner_id, limits, &NO_VARIANTS)
        .await
        .map_err(|refusal| refusal_error(refusal, &limits))?;
    let new = NewCustomEmoji {
        owner_id,
        name,
        category,
        image_url: file_url(&stored.upload.storage_key),
    };
    let upload = stored.upload.clone();
    let created = state
        .db
        .write(move |tx| Box::pin(emojis::create_custom(tx, upload, new)))
        .await;
    match created {
        Ok(emoji) => Ok(AppJson(CustomEmojiCreated {
            success: true,
            emoji: emoji.into(),
        })),
        Err(error) => {
            uploads.forget(&stored);
            Err(error.into())
        }
    }
}

/// Custom emojis are stored as they are (re-encoded), with no resized copies.
const NO_VARIANTS: [VariantSize; 0] = [];

/// Custom emoji files (DECISIONS.md): PNG, JPEG or GIF, 1 KB to 256 KB, at
/// most 128×128.
const CUSTOM_EMOJI_LIMITS: Limits = Limits {
    min_bytes: 1024,
    max_bytes: 256 * 1024,
    max_width: 128,
    max_height: 128,
    kinds: &[ImageKind::Png, ImageKind::Jpeg, ImageKind::Gif],
};
