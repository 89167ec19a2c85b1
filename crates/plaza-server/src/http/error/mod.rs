//! One error type for the whole service, rendered in the body shape of the
//! surface that answers (SPEC.md "Errors").
//!
//! Handlers and extractors return [`AppError`]. Its `IntoResponse` sets the
//! status and stores an [`ErrorReport`] in the response extensions; the
//! [`RequestLayer`](crate::http::middleware::RequestLayer), which knows
//! the request path, turns the report into the body of the right [`Surface`].
//! Errors that come from the framework itself (an unknown method, a timeout, a
//! panic) get the same treatment, so no response leaves without the shape.
//!
//! The module is split by concern: this file maps failures to statuses and
//! codes, [`report`] is what a failure leaves for the renderer, [`surface`]
//! renders a report in each surface's body shape, and [`schema`] declares
//! those bodies for the OpenAPI document.

pub mod report;
pub mod schema;
pub mod surface;

pub use report::{ErrorReport, FieldError};
pub use surface::{ERROR_SHAPE_EXTENSION, Surface, SurfaceMap, render_response};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plaza_domain::DomainError;
use serde_json::{Map, Value, json};

use crate::services::maintenance::MaintenanceError;

/// Every way a request can fail.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("authentication required")]
    Unauthorized,
    /// Wrong email or password: one answer for both, so it does not tell
    /// which accounts exist.
    #[error("invalid email or password")]
    InvalidCredentials,
    /// The right password of a user with two-factor sign-in on, without a
    /// code (`TOTP_REQUIRED`, 401).
    #[error(
        "this account has two-factor sign-in on: send `totp`, a current code or a recovery code"
    )]
    TotpRequired,
    #[error("insufficient permissions")]
    Forbidden,
    /// The client's address is covered by an IP block (`IP_BLOCKED`, 403).
    #[error("requests from this address are not accepted")]
    IpBlocked,
    /// The right password of an account awaiting an administrator's
    /// approval (`PENDING_APPROVAL`, 403).
    #[error("this account awaits an administrator's approval")]
    PendingApproval,
    /// Forbidden, with the rule that refused (`FORBIDDEN`).
    #[error("{0}")]
    NotAllowed(String),
    /// A block stands between the caller and the member they act on
    /// (`BLOCKED`, 403).
    #[error("{0}")]
    Blocked(String),
    #[error("this token lacks the {required} permission")]
    InsufficientAdminPermissions { required: &'static str },
    /// A personal access token without the scope the operation needs, or
    /// on an operation no token may call (`INSUFFICIENT_SCOPE`, 403).
    #[error("{0}")]
    InsufficientScope(String),
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
    /// A field breaks a rule that needs the stored data to check (a name no
    /// permission has, a dependency left out, a dependency cycle): 422 on
    /// every surface, the unversioned admin one included, whose other
    /// invalid input is 400 (DECISIONS.md "Closing the loops").
    #[error("{message}")]
    BrokenRule {
        message: String,
        fields: Vec<FieldError>,
    },
    /// Input that cannot be read at all, such as malformed JSON (400).
    #[error("{0}")]
    BadRequest(String),
    /// A field that breaks a schema its route answers 400 for (SPEC.md's
    /// analytics collect), named in `details`.
    #[error("invalid {}: {}", .0.field, .0.reason)]
    BadField(FieldError),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("{0}")]
    Conflict(String),
    /// A state change that makes no sense from the current state (409).
    #[error("{0}")]
    InvalidTransition(String),
    #[error("{resource} is being modified by another admin")]
    Locked {
        resource: &'static str,
        locked_by: String,
        locked_at: String,
    },
    #[error("too many requests")]
    /// A limit was reached; the client may retry after `retry_after_secs`
    /// (sent as `Retry-After`). With a `limit` (not 0) the answer carries the
    /// `X-RateLimit-*` headers too, the quota full again after
    /// `reset_after_secs`.
    RateLimited {
        retry_after_secs: u64,
        limit: u32,
        reset_after_secs: u64,
    },
    #[error("the request took too long")]
    Timeout,
    /// A dependency (the database) is down; the client may retry.
    #[error("service temporarily unavailable")]
    Unavailable(String),
    /// A bounded resource (password hashing) is saturated; the client may
    /// retry after `retry_after_secs` (sent as `Retry-After`).
    #[error("the server is busy; retry in {retry_after_secs} seconds")]
    Busy { retry_after_secs: u64 },
    /// A shared dependency the request needs (the rate-limit store, the
    /// upload store) does not answer; the answer names it, and the client
    /// may retry after `retry_after_secs` (sent as `Retry-After`).
    #[error("{dependency} does not answer; retry in {retry_after_secs} seconds")]
    DependencyDown {
        dependency: &'static str,
        /// The `error` string of the string-shaped surfaces.
        title: &'static str,
        retry_after_secs: u64,
    },
    /// A failure whose surface names it with a fixed title, such as link
    /// preview's "Failed to fetch link preview" (502) with the target's answer
    /// as details.
    #[error("{details}")]
    Titled {
        status: StatusCode,
        title: &'static str,
        details: String,
    },
    /// An upload the upload table of SPEC.md refuses (400): its `error`
    /// title, message and extra fields (`allowedTypes`, `maxSize`, …).
    #[error("{message}")]
    UploadRefused {
        title: &'static str,
        message: String,
        extra: Map<String, Value>,
    },
    /// A byte range outside the file (416).
    #[error("the range asked for is outside the file")]
    RangeNotSatisfiable,
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

    /// A refused upload with `extra` fields in its body.
    pub fn upload_refused<'a>(
        title: &'static str,
        message: impl Into<String>,
        extra: impl IntoIterator<Item = (&'a str, Value)>,
    ) -> Self {
        AppError::UploadRefused {
            title,
            message: message.into(),
            extra: extra
                .into_iter()
                .map(|(key, value)| (key.to_owned(), value))
                .collect(),
        }
    }

    pub fn internal(cause: impl std::fmt::Display) -> Self {
        AppError::Internal(cause.to_string())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AppError::Unauthorized | AppError::InvalidCredentials | AppError::TotpRequired => {
                StatusCode::UNAUTHORIZED
            }
            AppError::Forbidden
            | AppError::IpBlocked
            | AppError::PendingApproval
            | AppError::NotAllowed(_)
            | AppError::Blocked(_)
            | AppError::InsufficientAdminPermissions { .. }
            | AppError::InsufficientScope(_) => StatusCode::FORBIDDEN,
            AppError::NotFound(_) | AppError::RouteNotFound => StatusCode::NOT_FOUND,
            AppError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            AppError::Validation { .. } | AppError::BrokenRule { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            AppError::BadRequest(_) | AppError::BadField(_) | AppError::UploadRefused { .. } => {
                StatusCode::BAD_REQUEST
            }
            AppError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            AppError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::Conflict(_) | AppError::InvalidTransition(_) => StatusCode::CONFLICT,
            AppError::Locked { .. } => StatusCode::LOCKED,
            AppError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            AppError::Timeout => StatusCode::REQUEST_TIMEOUT,
            AppError::Unavailable(_) | AppError::Busy { .. } | AppError::DependencyDown { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            AppError::Titled { status, .. } => *status,
            AppError::RangeNotSatisfiable => StatusCode::RANGE_NOT_SATISFIABLE,
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable code clients switch on.
    pub fn code(&self) -> &'static str {
        match self {
            AppError::Unauthorized | AppError::InvalidCredentials => "UNAUTHORIZED",
            AppError::TotpRequired => "TOTP_REQUIRED",
            AppError::Forbidden | AppError::NotAllowed(_) => "FORBIDDEN",
            AppError::Blocked(_) => "BLOCKED",
            AppError::IpBlocked => "IP_BLOCKED",
            AppError::PendingApproval => "PENDING_APPROVAL",
            AppError::InsufficientAdminPermissions { .. } => "INSUFFICIENT_ADMIN_PERMISSIONS",
            AppError::InsufficientScope(_) => "INSUFFICIENT_SCOPE",
            AppError::NotFound(_) | AppError::RouteNotFound => "NOT_FOUND",
            AppError::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            AppError::Validation { .. } | AppError::BrokenRule { .. } => "VALIDATION_ERROR",
            AppError::BadRequest(_) | AppError::BadField(_) | AppError::UploadRefused { .. } => {
                "BAD_REQUEST"
            }
            AppError::UnsupportedMediaType(_) => "UNSUPPORTED_MEDIA_TYPE",
            AppError::PayloadTooLarge { .. } => "PAYLOAD_TOO_LARGE",
            AppError::Conflict(_) => "CONFLICT",
            AppError::InvalidTransition(_) => "INVALID_TRANSITION",
            AppError::Locked { .. } => "RESOURCE_LOCKED",
            AppError::RateLimited { .. } => "RATE_LIMITED",
            AppError::Timeout => "REQUEST_TIMEOUT",
            AppError::Unavailable(_) | AppError::Busy { .. } | AppError::DependencyDown { .. } => {
                "SERVICE_UNAVAILABLE"
            }
            AppError::Titled { status, .. } if *status == StatusCode::BAD_GATEWAY => {
                "UPSTREAM_ERROR"
            }
            AppError::Titled { status, .. } if status.is_server_error() => "SERVER_ERROR",
            AppError::Titled { .. } => "BAD_REQUEST",
            AppError::RangeNotSatisfiable => "RANGE_NOT_SATISFIABLE",
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
            StatusCode::TOO_MANY_REQUESTS => AppError::RateLimited {
                retry_after_secs: 1,
                limit: 0,
                reset_after_secs: 1,
            },
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
    pub fn public_message(&self) -> String {
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
            DomainError::Forbidden(message) => AppError::NotAllowed(message),
            DomainError::Blocked(message) => AppError::Blocked(message),
            DomainError::InvalidTransition(message) => AppError::InvalidTransition(message),
            DomainError::Invalid { field, reason } => {
                let field_error = FieldError::new(field, reason);
                AppError::BrokenRule {
                    message: format!("invalid {}: {}", field_error.field, field_error.reason),
                    fields: vec![field_error],
                }
            }
            DomainError::Locked {
                resource,
                holder_id,
                locked_at,
            } => AppError::Locked {
                resource,
                locked_by: holder_id.to_string(),
                locked_at: plaza_domain::time::rfc3339(locked_at),
            },
            DomainError::Unavailable(message) => AppError::Unavailable(message),
            DomainError::Database(inner) => AppError::Internal(inner.to_string()),
        }
    }
}

impl From<MaintenanceError> for AppError {
    fn from(error: MaintenanceError) -> Self {
        match error {
            MaintenanceError::Conflict(message) => AppError::Conflict(message),
            MaintenanceError::Domain(error) => AppError::from(error),
            MaintenanceError::Failed(cause) => AppError::Internal(cause),
        }
    }
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
                ..
            } => {
                extra.insert("lockedBy".into(), json!(locked_by));
                extra.insert("lockedAt".into(), json!(locked_at));
            }
            AppError::UploadRefused { extra: fields, .. } => extra.extend(fields.clone()),
            _ => {}
        }
        ErrorReport {
            status: error.status(),
            code: error.code(),
            message: error.public_message(),
            fields: match error {
                AppError::Validation { fields, .. } | AppError::BrokenRule { fields, .. } => {
                    fields.clone()
                }
                AppError::BadField(field) => vec![field.clone()],
                _ => Vec::new(),
            },
            extra,
            general_only: matches!(error, AppError::RouteNotFound),
            status_on_every_surface: matches!(error, AppError::BrokenRule { .. }),
            title: match error {
                AppError::Titled { title, .. }
                | AppError::UploadRefused { title, .. }
                | AppError::DependencyDown { title, .. } => Some(title),
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
        match self {
            AppError::Busy { retry_after_secs }
            | AppError::DependencyDown {
                retry_after_secs, ..
            } => {
                response.headers_mut().insert(
                    axum::http::header::RETRY_AFTER,
                    axum::http::HeaderValue::from(retry_after_secs),
                );
            }
            AppError::RateLimited {
                retry_after_secs,
                limit,
                reset_after_secs,
            } => {
                let headers = response.headers_mut();
                headers.insert(
                    axum::http::header::RETRY_AFTER,
                    axum::http::HeaderValue::from(retry_after_secs.max(1)),
                );
                if limit > 0 {
                    crate::http::limit_headers::write_headers(
                        headers,
                        limit,
                        0,
                        std::time::Duration::from_secs(reset_after_secs),
                    );
                }
            }
            _ => {}
        }
        response.extensions_mut().insert(report);
        response
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use serde_json::json;

    use super::*;

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
        let body = Surface::AdminV1.render(&ErrorReport::from(&error));
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "INSUFFICIENT_ADMIN_PERMISSIONS");
        assert_eq!(body["error"]["requiredPermission"], "admin:write");
    }

    #[test]
    fn lock_refusals_name_the_holder_and_the_time() {
        let error = AppError::from(plaza_domain::DomainError::Locked {
            resource: "post",
            holder_id: 7,
            locked_at: 1_700_000_000_123,
        });
        assert_eq!(error.status(), StatusCode::LOCKED);
        let body = Surface::AdminV1.render(&ErrorReport::from(&error));
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "RESOURCE_LOCKED");
        assert_eq!(body["error"]["lockedBy"], "7");
        assert_eq!(body["error"]["lockedAt"], "2023-11-14T22:13:20.123Z");
        assert_eq!(
            body["error"]["message"],
            "post is being modified by another admin"
        );
    }

    #[test]
    fn internal_causes_never_reach_the_body() {
        let report = ErrorReport::from(&AppError::internal("password=hunter2 in query"));
        for surface in [Surface::General, Surface::AdminV1, Surface::Plain] {
            let body = surface.render(&report).to_string();
            assert!(!body.contains("hunter2"), "{body}");
        }
    }

    #[test]
    fn a_broken_rule_is_422_even_where_invalid_input_is_400() {
        let error = AppError::from(plaza_domain::DomainError::Invalid {
            field: "permissions",
            reason: "posts.pin depends on posts:moderate".to_owned(),
        });
        let report = ErrorReport::from(&error);
        let response = render_response(
            Surface::Admin,
            &report,
            StatusCode::UNPROCESSABLE_ENTITY.into_response(),
        );
        assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let body = Surface::Admin.render(&report);
        assert_eq!(body["error"], "Validation error");
        assert_eq!(body["details"][0]["path"], json!(["permissions"]));
        let invalid = ErrorReport::from(&AppError::invalid("limit", "too big"));
        let response = render_response(
            Surface::Admin,
            &invalid,
            StatusCode::UNPROCESSABLE_ENTITY.into_response(),
        );
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn unknown_routes_answer_in_the_general_shape_everywhere() {
        let report = ErrorReport::from(&AppError::RouteNotFound);
        let body = Surface::AdminV1.render(&report);
        assert_eq!(body["error"]["code"], "NOT_FOUND");
        assert!(body.get("success").is_none());
    }
}
