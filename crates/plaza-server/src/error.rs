//! One error type for the whole service, rendered in the body shape of the
//! surface that answers (SPEC.md "Errors").
//!
//! Handlers and extractors return [`AppError`]. Its `IntoResponse` sets the
//! status and stores an [`ErrorReport`] in the response extensions; the
//! [`RequestLayer`](crate::middleware::RequestLayer), which knows
//! the request path, turns the report into the body of the right [`Surface`].
//! Errors that come from the framework itself (an unknown method, a timeout, a
//! panic) get the same treatment, so no response leaves without the shape.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plaza_domain::DomainError;
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

/// A problem with one input field.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FieldError {
    /// Dotted path of the field, e.g. `limit` or `tags.2`.
    pub field: String,
    /// What is wrong with it, for people.
    pub reason: String,
    /// A machine-readable kind (`invalid_type`, `too_small`, `too_big`,
    /// `invalid_string`, `custom`), as the unversioned admin surface reports it.
    #[serde(skip)]
    pub kind: &'static str,
    #[serde(skip)]
    pub expected: Option<String>,
    #[serde(skip)]
    pub received: Option<String>,
}

impl FieldError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            reason: reason.into(),
            kind: "custom",
            expected: None,
            received: None,
        }
    }

    /// Records what type or range was expected and what arrived.
    pub fn with_kind(
        mut self,
        kind: &'static str,
        expected: impl Into<String>,
        received: impl Into<String>,
    ) -> Self {
        self.kind = kind;
        self.expected = Some(expected.into());
        self.received = Some(received.into());
        self
    }
}

/// Every way a request can fail.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("authentication required")]
    Unauthorized,
    /// Wrong email or password: one answer for both, so it does not tell
    /// which accounts exist.
    #[error("invalid email or password")]
    InvalidCredentials,
    #[error("insufficient permissions")]
    Forbidden,
    #[error("this token lacks the {required} permission")]
    InsufficientAdminPermissions { required: &'static str },
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("no route matches this path")]
    RouteNotFound,
    #[error("method not allowed on this path")]
    MethodNotAllowed,
    /// Well-formed input that breaks a rule (422 on the general surfaces).
    #[error("{message}")]
    Validation {
        message: String,
        fields: Vec<FieldError>,
    },
    /// Input that cannot be read at all, such as malformed JSON (400).
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("{0}")]
    Conflict(String),
    #[error("resource is being modified by another admin")]
    Locked {
        locked_by: String,
        locked_at: String,
    },
    #[error("too many requests")]
    RateLimited,
    #[error("the request took too long")]
    Timeout,
    /// A dependency (the database) is down; the client may retry.
    #[error("service temporarily unavailable")]
    Unavailable(String),
    /// A bounded resource (password hashing) is saturated; the client may
    /// retry after `retry_after_secs` (sent as `Retry-After`).
    #[error("the server is busy; retry in {retry_after_secs} seconds")]
    Busy { retry_after_secs: u64 },
    /// A failure whose surface names it with a fixed title, such as link
    /// preview's "Failed to fetch link preview" (502) with the target's answer
    /// as details.
    #[error("{details}")]
    Titled {
        status: StatusCode,
        title: &'static str,
        details: String,
    },
    /// A bug or an unexpected failure. The cause is logged, never sent.
    #[error("internal server error")]
    Internal(String),
}

impl AppError {
    /// A single-field validation error, the common case.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        let field_error = FieldError::new(field, reason);
        AppError::Validation {
            message: format!("invalid {}: {}", field_error.field, field_error.reason),
            fields: vec![field_error],
        }
    }

    pub fn internal(cause: impl std::fmt::Display) -> Self {
        AppError::Internal(cause.to_string())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AppError::Unauthorized | AppError::InvalidCredentials => StatusCode::UNAUTHORIZED,
            AppError::Forbidden | AppError::InsufficientAdminPermissions { .. } => {
                StatusCode::FORBIDDEN
            }
            AppError::NotFound(_) | AppError::RouteNotFound => StatusCode::NOT_FOUND,
            AppError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            AppError::Validation { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            AppError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AppError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            AppError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::Conflict(_) => StatusCode::CONFLICT,
            AppError::Locked { .. } => StatusCode::LOCKED,
            AppError::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            AppError::Timeout => StatusCode::REQUEST_TIMEOUT,
            AppError::Unavailable(_) | AppError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Titled { status, .. } => *status,
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable code clients switch on.
    pub fn code(&self) -> &'static str {
        match self {
            AppError::Unauthorized | AppError::InvalidCredentials => "UNAUTHORIZED",
            AppError::Forbidden => "FORBIDDEN",
            AppError::InsufficientAdminPermissions { .. } => "INSUFFICIENT_ADMIN_PERMISSIONS",
            AppError::NotFound(_) | AppError::RouteNotFound => "NOT_FOUND",
            AppError::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            AppError::Validation { .. } => "VALIDATION_ERROR",
            AppError::BadRequest(_) => "BAD_REQUEST",
            AppError::UnsupportedMediaType(_) => "UNSUPPORTED_MEDIA_TYPE",
            AppError::PayloadTooLarge { .. } => "PAYLOAD_TOO_LARGE",
            AppError::Conflict(_) => "CONFLICT",
            AppError::Locked { .. } => "RESOURCE_LOCKED",
            AppError::RateLimited => "RATE_LIMITED",
            AppError::Timeout => "REQUEST_TIMEOUT",
            AppError::Unavailable(_) | AppError::Busy { .. } => "SERVICE_UNAVAILABLE",
            AppError::Titled { status, .. } if *status == StatusCode::BAD_GATEWAY => {
                "UPSTREAM_ERROR"
            }
            AppError::Titled { status, .. } if status.is_server_error() => "SERVER_ERROR",
            AppError::Titled { .. } => "BAD_REQUEST",
            AppError::Internal(_) => "SERVER_ERROR",
        }
    }

    /// The error a bare framework response with this status stands for.
    pub fn from_status(status: StatusCode) -> Self {
        match status {
            StatusCode::NOT_FOUND => AppError::RouteNotFound,
            StatusCode::METHOD_NOT_ALLOWED => AppError::MethodNotAllowed,
            StatusCode::REQUEST_TIMEOUT => AppError::Timeout,
            StatusCode::PAYLOAD_TOO_LARGE => AppError::PayloadTooLarge { limit: 0 },
            StatusCode::UNSUPPORTED_MEDIA_TYPE => {
                AppError::UnsupportedMediaType("unsupported content type".to_owned())
            }
            StatusCode::UNAUTHORIZED => AppError::Unauthorized,
            StatusCode::FORBIDDEN => AppError::Forbidden,
            StatusCode::TOO_MANY_REQUESTS => AppError::RateLimited,
            StatusCode::SERVICE_UNAVAILABLE => AppError::Unavailable(String::new()),
            status if status.is_client_error() => AppError::BadRequest(
                status
                    .canonical_reason()
                    .unwrap_or("bad request")
                    .to_owned(),
            ),
            _ => AppError::Internal(format!("framework answered {status}")),
        }
    }

    /// The message clients see; internal causes stay in the logs.
    fn public_message(&self) -> String {
        match self {
            AppError::PayloadTooLarge { limit: 0 } => "request body is too large".to_owned(),
            _ => self.to_string(),
        }
    }
}

impl From<DomainError> for AppError {
    fn from(error: DomainError) -> Self {
        match error {
            DomainError::NotFound(what) => AppError::NotFound(what),
            DomainError::Conflict(message) => AppError::Conflict(message),
            DomainError::Unavailable(message) => AppError::Unavailable(message),
            DomainError::Database(inner) => AppError::Internal(inner.to_string()),
        }
    }
}

/// What [`AppError`] leaves in the response for the renderer: everything a
/// surface may need, without the internal cause.
#[derive(Debug, Clone)]
pub struct ErrorReport {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub fields: Vec<FieldError>,
    /// Extra fields some codes carry (`requiredPermission`, `lockedBy`, …).
    pub extra: Map<String, Value>,
    /// Unknown routes answer in the general shape whatever their prefix.
    pub general_only: bool,
    /// The `error` string of the string-shaped surfaces, when the error names it.
    pub title: Option<&'static str>,
}

impl From<&AppError> for ErrorReport {
    fn from(error: &AppError) -> Self {
        let mut extra = Map::new();
        match error {
            AppError::InsufficientAdminPermissions { required } => {
                extra.insert("requiredPermission".into(), json!(required));
            }
            AppError::Locked {
                locked_by,
                locked_at,
            } => {
                extra.insert("lockedBy".into(), json!(locked_by));
                extra.insert("lockedAt".into(), json!(locked_at));
            }
            _ => {}
        }
        ErrorReport {
            status: error.status(),
            code: error.code(),
            message: error.public_message(),
            fields: match error {
                AppError::Validation { fields, .. } => fields.clone(),
                _ => Vec::new(),
            },
            extra,
            general_only: matches!(error, AppError::RouteNotFound),
            title: match error {
                AppError::Titled { title, .. } => Some(title),
                _ => None,
            },
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match &self {
            AppError::Internal(cause) => tracing::error!(%cause, "request failed"),
            AppError::Unavailable(cause) => tracing::warn!(%cause, "dependency unavailable"),
            _ => {}
        }
        let report = ErrorReport::from(&self);
        let mut response = report.status.into_response();
        if let AppError::Busy { retry_after_secs } = self {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(retry_after_secs),
            );
        }
        response.extensions_mut().insert(report);
        response
    }
}

/// The API surfaces of SPEC.md, each with its own error body shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// `{error: {code, message, details: {field, reason}}}`
    General,
    /// `{success: false, error: {code, message, …extra}}` under `/api/v1/admin`.
    VersionedAdmin,
    /// `{error: string, details: string | array}` under `/api/admin`.
    UnversionedAdmin,
    /// `{error: string, message: string, …extra}` for uploads.
    Upload,
    /// `{error: string, details: string}` for link preview and version.
    Plain,
    /// `{error: string, status: number}` for generated images.
    Image,
}

impl Surface {
    /// The surface a request path belongs to: the one table that decides it.
    pub fn for_path(path: &str) -> Surface {
        let under = |prefix: &str| {
            path.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        if under("/api/v1/admin") {
            Surface::VersionedAdmin
        } else if under("/api/admin") {
            Surface::UnversionedAdmin
        } else if under("/api/upload") || under("/api/emojis/custom") {
            Surface::Upload
        } else if under("/api/link-preview") || under("/api/version") {
            Surface::Plain
        } else if under("/api/avatar-image") || under("/api/og-image") || under("/og-image-viewer")
        {
            Surface::Image
        } else {
            Surface::General
        }
    }

    /// The status this surface answers for `status`: the generated-image
    /// and unversioned admin surfaces have no 422 in their contracts
    /// (SPEC.md, DECISIONS.md), so invalid input is 400 there.
    pub fn status_for(self, status: u16) -> u16 {
        match (self, status) {
            (Surface::Image | Surface::UnversionedAdmin, 422) => 400,
            _ => status,
        }
    }

    /// The OpenAPI component describing this surface's error body.
    pub fn error_schema_name(self) -> &'static str {
        match self {
            Surface::General => "GeneralError",
            Surface::VersionedAdmin => "AdminV1Error",
            Surface::UnversionedAdmin => "AdminError",
            Surface::Upload => "UploadError",
            Surface::Plain => "PlainError",
            Surface::Image => "ImageError",
        }
    }

    /// The JSON body for `report` on this surface.
    pub fn render(self, report: &ErrorReport) -> Value {
        let surface = if report.general_only {
            Surface::General
        } else {
            self
        };
        let first_field = report.fields.first();
        match surface {
            Surface::General => {
                let mut error = Map::new();
                error.insert("code".into(), json!(report.code));
                error.insert("message".into(), json!(report.message));
                if let Some(field) = first_field {
                    error.insert(
                        "details".into(),
                        json!({"field": field.field, "reason": field.reason}),
                    );
                }
                error.extend(report.extra.clone());
                json!({ "error": error })
            }
            Surface::VersionedAdmin => {
                let mut error = Map::new();
                error.insert("code".into(), json!(report.code));
                error.insert("message".into(), json!(report.message));
                if let Some(field) = first_field {
                    error.insert("field".into(), json!(field.field));
                    error.insert("details".into(), json!(report.fields));
                }
                error.extend(report.extra.clone());
                json!({ "success": false, "error": error })
            }
            Surface::UnversionedAdmin => {
                let title = unversioned_admin_title(report);
                if report.fields.is_empty() {
                    json!({ "error": title, "details": report.message })
                } else {
                    let issues: Vec<Value> = report
                        .fields
                        .iter()
                        .map(|field| {
                            json!({
                                "code": field.kind,
                                "expected": field.expected,
                                "received": field.received,
                                "path": field.field.split('.').collect::<Vec<_>>(),
                                "message": field.reason,
                            })
                        })
                        .collect();
                    json!({ "error": title, "details": issues })
                }
            }
            Surface::Upload => {
                let mut body = Map::new();
                body.insert("error".into(), json!(upload_title(report)));
                body.insert("message".into(), json!(report.message));
                body.extend(report.extra.clone());
                Value::Object(body)
            }
            Surface::Plain => json!({ "error": plain_title(report), "details": report.message }),
            Surface::Image => json!({
                "error": report.message,
                "status": self.status_for(report.status.as_u16()),
            }),
        }
    }
}

fn unversioned_admin_title(report: &ErrorReport) -> &'static str {
    match report.code {
        "VALIDATION_ERROR" | "BAD_REQUEST" => "Invalid query parameters",
        "UNAUTHORIZED" => "Unauthorized",
        "FORBIDDEN" | "INSUFFICIENT_ADMIN_PERMISSIONS" => "Insufficient permissions",
        "RATE_LIMITED" => "Rate limit exceeded",
        "NOT_FOUND" => "Not found",
        "SERVER_ERROR" | "SERVICE_UNAVAILABLE" => "Failed to fetch users",
        _ => "Request failed",
    }
}

fn upload_title(report: &ErrorReport) -> &'static str {
    if let Some(title) = report.title {
        return title;
    }
    match report.code {
        "UNAUTHORIZED" => "Authentication required",
        "PAYLOAD_TOO_LARGE" => "File too large",
        "SERVER_ERROR" | "SERVICE_UNAVAILABLE" => "Upload failed",
        "RATE_LIMITED" => "Rate limit exceeded",
        _ => "Invalid request",
    }
}

fn plain_title(report: &ErrorReport) -> String {
    if let Some(title) = report.title {
        return title.to_owned();
    }
    match report.code {
        "SERVER_ERROR" => "Internal server error".to_owned(),
        "RATE_LIMITED" => "Rate limit exceeded".to_owned(),
        _ => report
            .status
            .canonical_reason()
            .unwrap_or("Request failed")
            .to_owned(),
    }
}

/// Renders `report` for `surface` into a complete response.
pub fn render_response(surface: Surface, report: &ErrorReport, mut response: Response) -> Response {
    let body = surface.render(report);
    let status = if report.general_only {
        report.status
    } else {
        StatusCode::from_u16(surface.status_for(report.status.as_u16())).unwrap_or(report.status)
    };
    let mut rendered = (status, Json(body)).into_response();
    // Keep headers the framework set for this error (e.g. `Allow` on 405).
    for (name, value) in response.headers_mut().drain() {
        if let Some(name) = name
            && name != axum::http::header::CONTENT_TYPE
            && name != axum::http::header::CONTENT_LENGTH
        {
            rendered.headers_mut().insert(name, value);
        }
    }
    rendered
}

/// The error bodies of each surface, for the OpenAPI document.
pub mod schema {
    use serde::Serialize;
    use utoipa::ToSchema;

    /// The general error shape.
    #[derive(Serialize, ToSchema)]
    pub struct GeneralError {
        pub error: GeneralErrorBody,
    }

    #[derive(Serialize, ToSchema)]
    pub struct GeneralErrorBody {
        /// e.g. `VALIDATION_ERROR`, `NOT_FOUND`, `UNAUTHORIZED`.
        pub code: String,
        pub message: String,
        pub details: Option<FieldDetails>,
    }

    #[derive(Serialize, ToSchema)]
    pub struct FieldDetails {
        pub field: String,
        pub reason: String,
    }

    /// The versioned admin error shape.
    #[derive(Serialize, ToSchema)]
    pub struct AdminV1Error {
        /// Always false.
        pub success: bool,
        pub error: AdminV1ErrorBody,
    }

    #[derive(Serialize, ToSchema)]
    pub struct AdminV1ErrorBody {
        pub code: String,
        pub message: String,
        /// With `INSUFFICIENT_ADMIN_PERMISSIONS`.
        #[serde(rename = "requiredPermission")]
        pub required_permission: Option<String>,
        /// With `RESOURCE_LOCKED`.
        #[serde(rename = "lockedBy")]
        pub locked_by: Option<String>,
        #[serde(rename = "lockedAt")]
        pub locked_at: Option<String>,
    }

    /// The unversioned admin error shape.
    #[derive(Serialize, ToSchema)]
    pub struct AdminError {
        pub error: String,
        /// A string, or for invalid query parameters an array of issues
        /// (`code`, `expected`, `received`, `path`, `message`).
        #[schema(value_type = Object)]
        pub details: Option<serde_json::Value>,
    }

    /// The upload error shape.
    #[derive(Serialize, ToSchema)]
    pub struct UploadError {
        pub error: String,
        pub message: String,
    }

    /// The link preview and version error shape.
    #[derive(Serialize, ToSchema)]
    pub struct PlainError {
        pub error: String,
        pub details: String,
    }

    /// The generated-image error shape.
    #[derive(Serialize, ToSchema)]
    pub struct ImageError {
        pub error: String,
        pub status: u16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surfaces_follow_path_prefixes_not_substrings() {
        assert_eq!(
            Surface::for_path("/api/v1/admin/users"),
            Surface::VersionedAdmin
        );
        assert_eq!(
            Surface::for_path("/api/admin/users"),
            Surface::UnversionedAdmin
        );
        assert_eq!(Surface::for_path("/api/administrators"), Surface::General);
        assert_eq!(Surface::for_path("/api/upload/image"), Surface::Upload);
        assert_eq!(Surface::for_path("/api/version"), Surface::Plain);
        assert_eq!(Surface::for_path("/api/avatar-image"), Surface::Image);
        assert_eq!(Surface::for_path("/api/posts"), Surface::General);
    }

    #[test]
    fn validation_errors_carry_field_and_reason_in_the_general_shape() {
        let report = ErrorReport::from(&AppError::invalid("limit", "must be at most 100"));
        let body = Surface::General.render(&report);
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
        assert_eq!(body["error"]["details"]["field"], "limit");
        assert_eq!(body["error"]["details"]["reason"], "must be at most 100");
    }

    #[test]
    fn admin_permission_errors_name_the_missing_permission() {
        let error = AppError::InsufficientAdminPermissions {
            required: "admin:write",
        };
        let body = Surface::VersionedAdmin.render(&ErrorReport::from(&error));
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "INSUFFICIENT_ADMIN_PERMISSIONS");
        assert_eq!(body["error"]["requiredPermission"], "admin:write");
    }

    #[test]
    fn internal_causes_never_reach_the_body() {
        let report = ErrorReport::from(&AppError::internal("password=hunter2 in query"));
        for surface in [Surface::General, Surface::VersionedAdmin, Surface::Plain] {
            let body = surface.render(&report).to_string();
            assert!(!body.contains("hunter2"), "{body}");
        }
    }

    #[test]
    fn unknown_routes_answer_in_the_general_shape_everywhere() {
        let report = ErrorReport::from(&AppError::RouteNotFound);
        let body = Surface::VersionedAdmin.render(&report);
        assert_eq!(body["error"]["code"], "NOT_FOUND");
        assert!(body.get("success").is_none());
    }
}
