//! What an error leaves in its response for the renderer of its surface,
//! and the problem with one input field it may name.

use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value};
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

/// What an error leaves in the response for the renderer: everything a
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
    /// The status stands on every surface (a broken rule's 422).
    pub status_on_every_surface: bool,
    /// The `error` string of the string-shaped surfaces, when the error names it.
    pub title: Option<&'static str>,
}
