//! Image uploads (SPEC.md `POST /api/upload/image`, DECISIONS.md
//! `POST /api/upload`) and the stored files served back
//! (`GET /api/uploads/{key}`).

use std::collections::BTreeMap;

use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use object_store::GetRange;
use plaza_domain::time::rfc3339;
use plaza_domain::uploads::Upload;
use plaza_media::{ImageKind, Limits, MediaError};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::auth::CurrentUser;
use crate::controllers::docs::Binary;
use crate::http::error::AppError;
use crate::http::error::schema::UploadError;
use crate::http::extract::{AppJson, TextPath};
use crate::services::uploads::Refusal;
use crate::state::AppState;

/// Bytes of form fields other than `file` read at most.
const MAX_OTHER_FIELD_BYTES: usize = 64 * 1024;
/// Longest original file name kept.
const MAX_NAME_CHARS: usize = 255;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(upload_image))
        .routes(crate::documented_routes!(upload))
        // The upload routes read the body themselves and stop at the size
        // limit (`upload_max_bytes`), so the general body limit is lifted.
        .layer(axum::extract::DefaultBodyLimit::disable())
}

/// Serving stored files: like static files, not rate limited.
pub fn file_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::documented_routes!(uploaded_file))
}

/// Width, height and their product.
#[derive(Serialize, ToSchema)]
pub struct Dimensions {
    pub width: i64,
    pub height: i64,
    pub pixels: i64,
}

/// One stored size.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariantFile {
    pub url: String,
    pub mime_type: String,
    pub width: u32,
    pub height: u32,
    pub size: u64,
}

/// The uploaded image record (SPEC.md "Uploaded image record").
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileRecord {
    /// Server-generated and unique.
    pub filename: String,
    pub original_name: String,
    /// Bytes of the stored original.
    pub size: i64,
    pub mime_type: String,
    /// Relative path.
    pub url: String,
    /// Absolute URL under the base URL.
    pub public_url: String,
    pub dimensions: Dimensions,
    /// `thumbnail` (150×150 cropped), `medium` (fits 800×600), `large`
    /// (fits 1920×1080), never enlarged; `thumbnail-webp` and
    /// `medium-webp` the same as lossless WebP.
    pub variants: BTreeMap<String, VariantFile>,
}

/// Where an upload came from.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadMetadata {
    pub uploaded_at: String,
    /// The uploader's user id.
    pub uploaded_by: String,
    /// SHA-256 of the stored original, hex.
    pub file_hash: String,
    /// Always true: every upload is re-encoded without metadata.
    pub processed: bool,
}

/// `POST /api/upload/image`'s answer.
#[derive(Serialize, ToSchema)]
pub struct ImageUploaded {
    pub success: bool,
    pub message: String,
    pub file: FileRecord,
    pub metadata: UploadMetadata,
}

/// `POST /api/upload`'s answer.
#[derive(Serialize, ToSchema)]
pub struct Uploaded {
    pub success: bool,
    pub url: String,
    pub filename: String,
    pub size: i64,
    /// The MIME type.
    #[serde(rename = "type")]
    pub mime_type: String,
}

fn record(state: &AppState, upload: &Upload) -> ImageUploaded {
    let url = file_url(&upload.storage_key);
    let base = state
        .settings
        .server
        .base_url
        .as_str()
        .trim_end_matches('/');
    ImageUploaded {
        success: true,
        message: "File uploaded successfully".to_owned(),
        file: FileRecord {
            filename: upload.storage_key.clone(),
            original_name: upload.original_name.clone(),
            size: upload.size,
            mime_type: upload.mime_type.clone(),
            public_url: format!("{base}{url}"),
            url,
            dimensions: Dimensions {
                width: upload.width,
                height: upload.height,
                pixels: upload.width * upload.height,
            },
            variants: upload
                .variants
                .iter()
                .map(|variant| {
                    (
                        variant.name.clone(),
                        VariantFile {
                            url: file_url(&variant.key),
                            mime_type: variant.mime_type.clone(),
                            width: variant.width,
                            height: variant.height,
                            size: variant.size,
                        },
                    )
                })
                .collect(),
        },
        metadata: UploadMetadata {
            uploaded_at: rfc3339(upload.created_at),
            uploaded_by: upload.user_id.map(|id| id.to_string()).unwrap_or_default(),
            file_hash: upload.file_hash.clone(),
            processed: true,
        },
    }
}

/// The multipart form of `POST /api/upload/image` and `POST /api/upload`.
// The document's description of the form; `read_form` reads it as it streams.
#[derive(ToSchema)]
pub struct ImageForm {
    /// The image: JPEG, PNG, WebP or GIF.
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// Upload an image: multipart form data with one `file` field (JPEG, PNG,
/// WebP or GIF, decided from the bytes; 1 KB to 5 MB; at most 4096×4096).
/// The stored image is re-encoded without metadata, with thumbnail, medium
/// and large variants and WebP copies of the first two.
#[utoipa::path(
    post,
    path = "/api/upload/image",
    tag = "uploads",
    request_body(content = ImageForm, content_type = "multipart/form-data", description = "`file`: the image"),
    responses(
        (status = 200, description = "Stored", body = ImageUploaded),
        (status = 400, description = "`No file provided`, `Invalid file type` (with `allowedTypes`; also for a polyglot, an animation or a damaged image), `File too large` (with `maxSize`, `receivedSize`), `File too small`, `Image too large` (dimensions), `File rejected` (the malware scan)", body = UploadError),
        (status = 401, description = "`Authentication required`", body = UploadError),
        (status = 500, description = "`Upload failed`", body = UploadError),
        (status = 503, description = "Every processing slot is busy, or the upload store does not answer (`File store unavailable`); retry after `Retry-After`", body = UploadError),
    )
)]
pub async fn upload_image(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    request: Request,
) -> Result<AppJson<ImageUploaded>, AppError> {
    let upload = receive(&state, user.user_id(), request).await?;
    Ok(AppJson(record(&state, &upload)))
}

/// Upload an image, answered briefly: the same rules and processing as
/// `POST /api/upload/image`.
#[utoipa::path(
    post,
    path = "/api/upload",
    tag = "uploads",
    request_body(content = ImageForm, content_type = "multipart/form-data", description = "`file`: the image"),
    responses(
        (status = 200, description = "Stored", body = Uploaded),
        (status = 400, description = "As `POST /api/upload/image`", body = UploadError),
        (status = 401, description = "`Authentication required`", body = UploadError),
        (status = 500, description = "`Upload failed`", body = UploadError),
        (status = 503, description = "Every processing slot is busy, or the upload store does not answer (`File store unavailable`); retry after `Retry-After`", body = UploadError),
    )
)]
pub async fn upload(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    request: Request,
) -> Result<AppJson<Uploaded>, AppError> {
    let upload = receive(&state, user.user_id(), request).await?;
    Ok(AppJson(Uploaded {
        success: true,
        url: file_url(&upload.storage_key),
        filename: upload.storage_key,
        size: upload.size,
        mime_type: upload.mime_type,
    }))
}

/// Reads the `file` field, stopping as soon as it passes the limit, and
/// hands it to the pipeline.
async fn receive(state: &AppState, user_id: i64, request: Request) -> Result<Upload, AppError> {
    let uploads = &state.uploads;
    let limits = uploads.limits(&ImageKind::ALL);
    let form = read_form(state, request, limits.max_bytes, &[]).await?;
    let (name, bytes) = form.file.ok_or_else(no_file)?;
    uploads
        .accept(&state.db, bytes, name, user_id, limits)
        .await
        .map_err(|refusal| refusal_error(refusal, &limits))
}

/// A multipart form: the file and the text fields asked for.
pub struct UploadForm {
    /// The original name and the bytes of the `file` field, when it was
    /// sent and not empty.
    pub file: Option<(String, Vec<u8>)>,
    /// The text fields of `text_fields` that were sent.
    pub fields: BTreeMap<String, String>,
}

/// 400 `No file provided`.
pub fn no_file() -> AppError {
    AppError::upload_refused(
        "No file provided",
        "send the image as multipart/form-data in a field named file",
        [],
    )
}

/// Reads a multipart form: the first `file` field, cut off as soon as it
/// passes `max_bytes`, and the text fields named in `text_fields`; every
/// other field is read and dropped, all of them together limited to
/// 64 KiB. A text field holding a NUL byte is refused naming it, as every
/// text input is.
pub async fn read_form(
    state: &AppState,
    request: Request,
    max_bytes: usize,
    text_fields: &[&str],
) -> Result<UploadForm, AppError> {
    let mut multipart = Multipart::from_request(request, state)
        .await
        .map_err(|_| no_file())?;
    let mut other_bytes = 0usize;
    let mut form = UploadForm {
        file: None,
        fields: BTreeMap::new(),
    };
    while let Some(mut field) = multipart.next_field().await.map_err(multipart_error)? {
        let name = field.name().unwrap_or_default().to_owned();
        if name != "file" || form.file.is_some() {
            let mut text = Vec::new();
            while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
                other_bytes += chunk.len();
                if other_bytes > MAX_OTHER_FIELD_BYTES {
                    return Err(AppError::upload_refused(
                        "Invalid request",
                        "form fields besides file are limited to 64 KiB",
                        [],
                    ));
                }
                text.extend_from_slice(&chunk);
            }
            if text_fields.contains(&name.as_str()) && !form.fields.contains_key(&name) {
                crate::http::extract::text_input::refuse_nul_in_field(&name, &text)?;
                let text = String::from_utf8(text)
                    .map_err(|_| AppError::invalid(name.clone(), "must be text (UTF-8)"))?;
                form.fields.insert(name, text);
            }
            continue;
        }
        let original = original_name(field.file_name());
        let mut bytes = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
            if bytes.len() + chunk.len() > max_bytes {
                return Err(too_large(bytes.len() + chunk.len(), max_bytes));
            }
            bytes.extend_from_slice(&chunk);
        }
        if !bytes.is_empty() {
            form.file = Some((original, bytes));
        }
    }
    Ok(form)
}

fn multipart_error(error: axum::extract::multipart::MultipartError) -> AppError {
    AppError::upload_refused(
        "Invalid request",
        format!("unreadable form data: {error}"),
        [],
    )
}

/// The client's file name without folders or control characters.
fn original_name(raw: Option<&str>) -> String {
    let name = raw
        .unwrap_or("")
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME_CHARS)
        .collect::<String>();
    if name.trim().is_empty() {
        "upload".to_owned()
    } else {
        name
    }
}

/// The URL a stored file is served at.
pub fn file_url(key: &str) -> String {
    format!("/api/uploads/{key}")
}

/// Whether `key` is a name the pipeline writes (`<32 hex>[-size].ext`).
fn is_stored_key(key: &str) -> bool {
    let Some((stem, extension)) = key.rsplit_once('.') else {
        return false;
    };
    let (name, size) = stem.split_once('-').unwrap_or((stem, ""));
    name.len() == 32
        && name
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        && matches!(size, "" | "thumbnail" | "medium" | "large")
        && matches!(extension, "jpg" | "png" | "gif" | "webp")
}

fn content_type(key: &str) -> &'static str {
    match key.rsplit_once('.').map(|(_, extension)| extension) {
        Some("jpg") => "image/jpeg",
        Some("png") => "image/png",
        Some("gif") => "image/gif",
        _ => "image/webp",
    }
}

/// The `Range` header's single byte range, if any; `Err` for one that is
/// malformed or asks for several ranges (answered whole).
fn requested_range(headers: &HeaderMap) -> Option<GetRange> {
    let value = headers.get(header::RANGE)?.to_str().ok()?;
    let spec = value.strip_prefix("bytes=")?.trim();
    if spec.contains(',') {
        return None;
    }
    let (start, end) = spec.split_once('-')?;
    match (start.trim(), end.trim()) {
        ("", suffix) => suffix.parse().ok().map(GetRange::Suffix),
        (start, "") => start.parse().ok().map(GetRange::Offset),
        (start, end) => {
            let (start, end): (u64, u64) = (start.parse().ok()?, end.parse().ok()?);
            (start <= end).then_some(GetRange::Bounded(start..end + 1))
        }
    }
}

/// A stored upload or one of its variants, with its type, `nosniff`, a
/// year of caching (names never change) and byte ranges. A file of an
/// erased user is 404 from the erasure on, while the store still deletes it.
#[utoipa::path(
    get,
    path = "/api/uploads/{key}",
    tag = "uploads",
    params(
        ("key" = String, Path, description = "A stored file name, as an upload's `url` gives it"),
        ("Range" = Option<String>, Header, description = "One byte range, `bytes=0-1023`"),
    ),
    responses(
        (status = 200, description = "The file", content_type = "image/*", body = inline(Binary)),
        (status = 206, description = "The range asked for, with `Content-Range`", content_type = "image/*", body = inline(Binary)),
        (status = 404, description = "No such file, or a file of an erased user", body = UploadError),
        (status = 416, description = "The range is outside the file", body = UploadError),
        (status = 503, description = "The upload store does not answer (`File store unavailable`, with `Retry-After`)", body = UploadError),
    )
)]
pub async fn uploaded_file(
    State(state): State<AppState>,
    TextPath(key): TextPath,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    // A file of an erased user is gone the moment the erasure commits,
    // whether or not the store has deleted it yet.
    if !is_stored_key(&key) || state.db.store_deletion_pending(&key).await? {
        return Err(AppError::NotFound("file"));
    }
    let storage = &state.uploads.storage;
    let range = requested_range(&headers);
    let file = match storage.get(&key, range.clone()).await {
        Ok(Some(file)) => file,
        Ok(None) => return Err(AppError::NotFound("file")),
        Err(error) if range.is_some() => {
            tracing::debug!(%error, "an unsatisfiable range");
            return Err(AppError::RangeNotSatisfiable);
        }
        Err(error) => {
            tracing::warn!(%key, %error, "the upload store did not answer a read");
            return Err(STORE_DOWN);
        }
    };
    let mut response = file.bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(&key)),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{key}\"")) {
        headers.insert(header::ETAG, etag);
    }
    if let Some(range) = file.range {
        let value = format!("bytes {}-{}/{}", range.start, range.end - 1, file.size);
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(header::CONTENT_RANGE, value);
        }
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
    }
    Ok(response)
}

/// The answer to an upload's `refusal` in the upload table's terms
/// (SPEC.md "Errors", Upload).
pub fn refusal_error(refusal: Refusal, limits: &Limits) -> AppError {
    let allowed: Vec<&str> = limits.kinds.iter().map(|kind| kind.mime_type()).collect();
    match refusal {
        Refusal::Media(MediaError::UnsupportedType) => AppError::upload_refused(
            "Invalid file type",
            format!("allowed types are {}", allowed.join(", ")),
            [("allowedTypes", serde_json::json!(allowed))],
        ),
        Refusal::Media(MediaError::TooLarge { size, max }) => too_large(size, max),
        Refusal::Media(error @ MediaError::TooSmall { .. }) => AppError::upload_refused(
            "File too small",
            error.to_string(),
            [("minSize", serde_json::json!(limits.min_bytes))],
        ),
        Refusal::Media(error @ MediaError::TooManyPixels { .. }) => AppError::upload_refused(
            "Image too large",
            error.to_string(),
            [(
                "maxDimensions",
                serde_json::json!({"width": limits.max_width, "height": limits.max_height}),
            )],
        ),
        Refusal::Media(
            error @ (MediaError::Polyglot(_) | MediaError::Animated | MediaError::Corrupt(_)),
        ) => AppError::upload_refused(
            "Invalid file type",
            error.to_string(),
            [("allowedTypes", serde_json::json!(allowed))],
        ),
        Refusal::Infected(name) => AppError::upload_refused(
            "File rejected",
            format!("the malware scan found {name}"),
            [("threat", serde_json::json!(name))],
        ),
        Refusal::Busy => AppError::Busy {
            retry_after_secs: 5,
        },
        Refusal::Media(error @ MediaError::Encode(_)) => AppError::internal(error),
        Refusal::Failed(cause) => AppError::internal(cause),
        Refusal::DatabaseDown(reason) => AppError::Unavailable(reason),
        Refusal::StoreDown(cause) => {
            tracing::warn!(%cause, "the upload store did not answer a write");
            STORE_DOWN
        }
    }
}

/// 503 for a call the upload store did not answer.
const STORE_DOWN: AppError = AppError::DependencyDown {
    dependency: "the upload store",
    title: "File store unavailable",
    retry_after_secs: 5,
};

/// 400 `File too large` with `maxSize` and `receivedSize`.
pub fn too_large(received: usize, max: usize) -> AppError {
    AppError::upload_refused(
        "File too large",
        format!("the file is {received} bytes; at most {max} are accepted"),
        [
            ("maxSize", serde_json::json!(max)),
            ("receivedSize", serde_json::json!(received)),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_the_pipeline_writes_are_served() {
        let name = "0123456789abcdef0123456789abcdef";
        assert!(is_stored_key(&format!("{name}.jpg")));
        assert!(is_stored_key(&format!("{name}-thumbnail.webp")));
        assert!(!is_stored_key(&format!("{name}-other.jpg")));
        assert!(!is_stored_key(&format!("../{name}.jpg")));
        assert!(!is_stored_key(&format!("{name}.html")));
        assert!(!is_stored_key("short.jpg"));
    }

    #[test]
    fn file_names_lose_folders_and_control_characters() {
        assert_eq!(original_name(Some("C:\\photos\\cat.jpg")), "cat.jpg");
        assert_eq!(original_name(Some("../../etc/pass\nwd")), "passwd");
        assert_eq!(original_name(None), "upload");
    }

    #[test]
    fn one_byte_range_is_read() {
        let mut headers = HeaderMap::new();
        for (value, expected) in [
            ("bytes=0-99", Some(GetRange::Bounded(0..100))),
            ("bytes=100-", Some(GetRange::Offset(100))),
            ("bytes=-50", Some(GetRange::Suffix(50))),
            ("bytes=5-1", None),
            ("bytes=0-1,5-9", None),
            ("items=0-1", None),
        ] {
            headers.insert(header::RANGE, HeaderValue::from_static(value));
            assert_eq!(requested_range(&headers), expected, "{value}");
        }
    }
}
