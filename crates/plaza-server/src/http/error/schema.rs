//! The error bodies of each surface, for the OpenAPI document.

use serde::Serialize;
use utoipa::ToSchema;

use crate::http::error::FieldError;

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
    /// With `VALIDATION_ERROR`: the first bad field.
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// With `VALIDATION_ERROR`: the first problem.
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<FieldDetails>,
    /// With `VALIDATION_ERROR`: every problem, the first included.
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldDetails>>,
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
    pub details: AdminErrorDetails,
}

/// What went wrong: a message, or for invalid parameters one issue each.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum AdminErrorDetails {
    Message(String),
    Issues(Vec<AdminIssue>),
}

/// One invalid parameter.
#[derive(Serialize, ToSchema)]
pub struct AdminIssue {
    /// `invalid_type`, `too_small`, `too_big`, `invalid_string`,
    /// `invalid_enum_value` or `custom`.
    pub code: String,
    pub expected: Option<String>,
    pub received: Option<String>,
    /// The parameter's name, as a one-element path.
    pub path: Vec<String>,
    pub message: String,
}

/// The upload error shape. Refusals of a file add what they are about
/// (`allowedTypes`, `maxSize`, `receivedSize`, `minSize`,
/// `maxDimensions`); a bad form field (422) adds `details`.
#[derive(Serialize, ToSchema)]
pub struct UploadError {
    pub error: String,
    pub message: String,
    /// Each bad form field and why.
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Vec<FieldError>>,
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
