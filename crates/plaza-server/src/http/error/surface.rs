//! Rendering an [`ErrorReport`] in the body shape of the surface that
//! answers (SPEC.md "Errors").

use axum::Json;
use axum::extract::MatchedPath;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use utoipa::openapi::OpenApi;

use super::report::ErrorReport;

/// The API surfaces of SPEC.md, each with its own error body shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// `{error: {code, message, details: {field, reason}}}`
    General,
    /// `{success: false, error: {code, message, …extra}}` under `/api/v1/admin`;
    /// invalid input adds `field` and `details: {field, reason}` (the first
    /// problem) and `errors` (every problem, the first included).
    AdminV1,
    /// `{error: string, details: string | array}` under `/api/admin`.
    Admin,
    /// `{error: string, message: string, …extra}` for uploads.
    Upload,
    /// `{error: string, details: string}` for link preview and version.
    Plain,
    /// `{error: string, status: number}` for generated images.
    Image,
    /// An HTML page for the operator console at `/admin/`: its pages are
    /// read in a browser, so their errors are pages too.
    Console,
}

impl Surface {
    /// The status this surface answers for `status`: the generated-image
    /// and unversioned admin surfaces have no 422 in their contracts
    /// (SPEC.md, DECISIONS.md), so invalid input is 400 there.
    pub fn status_for(self, status: u16) -> u16 {
        match (self, status) {
            (Surface::Image | Surface::Admin, 422) => 400,
            _ => status,
        }
    }

    const ALL: [Surface; 6] = [
        Surface::General,
        Surface::AdminV1,
        Surface::Admin,
        Surface::Upload,
        Surface::Plain,
        Surface::Image,
    ];

    /// The surface whose [`Surface::error_schema_name`] is `name`.
    pub fn with_schema_name(name: &str) -> Option<Surface> {
        Surface::ALL
            .into_iter()
            .find(|surface| surface.error_schema_name() == name)
    }

    /// The OpenAPI component describing this surface's error body.
    pub fn error_schema_name(self) -> &'static str {
        match self {
            Surface::General => "GeneralError",
            Surface::AdminV1 => "AdminV1Error",
            Surface::Admin => "AdminError",
            Surface::Upload => "UploadError",
            Surface::Plain => "PlainError",
            Surface::Image => "ImageError",
            Surface::Console => "ConsolePage",
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
            Surface::AdminV1 => {
                let mut error = Map::new();
                error.insert("code".into(), json!(report.code));
                error.insert("message".into(), json!(report.message));
                if let Some(field) = first_field {
                    error.insert("field".into(), json!(field.field));
                    error.insert(
                        "details".into(),
                        json!({"field": field.field, "reason": field.reason}),
                    );
                    error.insert("errors".into(), json!(report.fields));
                }
                error.extend(report.extra.clone());
                json!({ "success": false, "error": error })
            }
            Surface::Admin => {
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
                if report.fields.is_empty() {
                    body.insert("message".into(), json!(report.message));
                } else {
                    let reasons: Vec<String> = report
                        .fields
                        .iter()
                        .map(|field| format!("{}: {}", field.field, field.reason))
                        .collect();
                    body.insert("message".into(), json!(reasons.join("; ")));
                    body.insert("details".into(), json!(report.fields));
                }
                body.extend(report.extra.clone());
                Value::Object(body)
            }
            Surface::Plain | Surface::Console => {
                json!({ "error": plain_title(report), "details": report.message })
            }
            Surface::Image => json!({
                "error": report.message,
                "status": self.status_for(report.status.as_u16()),
            }),
        }
    }
}

fn unversioned_admin_title(report: &ErrorReport) -> &'static str {
    if let Some(title) = report.title {
        return title;
    }
    match report.code {
        "VALIDATION_ERROR" if report.status_on_every_surface => "Validation error",
        "VALIDATION_ERROR" | "BAD_REQUEST" => "Invalid query parameters",
        "UNAUTHORIZED" => "Unauthorized",
        "FORBIDDEN" | "INSUFFICIENT_ADMIN_PERMISSIONS" | "INSUFFICIENT_SCOPE" => {
            "Insufficient permissions"
        }
        "RATE_LIMITED" => "Rate limit exceeded",
        "NOT_FOUND" => "Not found",
        "CONFLICT" | "INVALID_TRANSITION" => "Conflict",
        "RESOURCE_LOCKED" => "Resource locked",
        "SERVICE_UNAVAILABLE" => "Service unavailable",
        "SERVER_ERROR" => "Internal server error",
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
        "NOT_FOUND" => "Not found",
        "RANGE_NOT_SATISFIABLE" => "Range not satisfiable",
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

/// The OpenAPI extension on every operation that names the schema of its
/// error answers (`GeneralError`, `AdminV1Error`, …).
pub const ERROR_SHAPE_EXTENSION: &str = "x-error-shape";

/// Which surface answers each route (by its path template, as axum's
/// [`MatchedPath`] gives it), read from the marks [`on_surface`] left in
/// the OpenAPI document. A route outside every group (an unknown path,
/// Swagger UI) is unclaimed and answers in the general shape.
#[derive(Debug, Clone, Default)]
pub struct SurfaceMap(foldhash::HashMap<String, Surface>);

impl SurfaceMap {
    pub fn from_document(document: &OpenApi) -> SurfaceMap {
        let mut map = foldhash::HashMap::default();
        for (path, item) in &document.paths.paths {
            let marked = [&item.get, &item.post, &item.put, &item.patch, &item.delete]
                .into_iter()
                .flatten()
                .filter_map(|operation| operation.extensions.as_ref()?.get(ERROR_SHAPE_EXTENSION))
                .filter_map(|name| Surface::with_schema_name(name.as_str()?));
            for surface in marked {
                map.insert(path.clone(), surface);
            }
        }
        SurfaceMap(map)
    }

    /// `path` (a route template) answers in `surface`'s shape; for routers
    /// built without OpenAPI (tests).
    pub fn with(mut self, path: &str, surface: Surface) -> Self {
        self.0.insert(path.to_owned(), surface);
        self
    }

    /// The surface of a matched route, if a group declared one.
    pub fn surface_of(&self, route: Option<&MatchedPath>) -> Option<Surface> {
        route.and_then(|route| self.get(route.as_str()))
    }

    /// The surface of the route template `path`, if a group declared one.
    pub fn get(&self, path: &str) -> Option<Surface> {
        self.0.get(path).copied()
    }
}

/// Renders `report` for `surface` into a complete response.
pub fn render_response(surface: Surface, report: &ErrorReport, mut response: Response) -> Response {
    let status = if report.general_only || report.status_on_every_surface {
        report.status
    } else {
        StatusCode::from_u16(surface.status_for(report.status.as_u16())).unwrap_or(report.status)
    };
    let mut rendered = if surface == Surface::Console && !report.general_only {
        crate::http::pages::console_error(
            status,
            &plain_title(report),
            &report.message,
            report
                .fields
                .iter()
                .map(|field| (field.field.as_str(), field.reason.as_str())),
        )
    } else {
        (status, Json(surface.render(report))).into_response()
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_surface_is_found_by_its_schema_name() {
        for surface in Surface::ALL {
            assert_eq!(
                Surface::with_schema_name(surface.error_schema_name()),
                Some(surface)
            );
        }
        assert_eq!(Surface::with_schema_name("Unknown"), None);
    }
}
