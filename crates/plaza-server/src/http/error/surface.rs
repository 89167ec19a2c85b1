//! Rendering an [`ErrorReport`] in the body shape of the surface that
//! answers (SPEC.md "Errors").

use axum::Json;
use axum::extract::MatchedPath;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use utoipa::openapi::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use super::ErrorReport;
use crate::state::AppState;

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
        "FORBIDDEN" | "INSUFFICIENT_ADMIN_PERMISSIONS" => "Insufficient permissions",
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

/// Declares that the routes of `routes` answer errors in `surface`'s
/// shape: the one place a route group names its surface. Each operation
/// of the group is marked with its error schema (the OpenAPI extension
/// [`ERROR_SHAPE_EXTENSION`]), from which [`SurfaceMap`] tells the
/// middleware the surface of a matched route, so no layer wraps the
/// group's routes (a layer cost every request of a group an allocation
/// and a boxed call: 12% of the instructions of `GET /api/version`,
/// measured with `bench/instructions.sh`). The group's error answers,
/// documented in the general shape by `documented_routes!` and `limited`,
/// take the surface's schema and statuses.
pub fn on_surface(
    surface: Surface,
    mut routes: OpenApiRouter<AppState>,
) -> OpenApiRouter<AppState> {
    for item in routes.get_openapi_mut().paths.paths.values_mut() {
        crate::http::extract::documented::adopt_surface(item, surface);
        crate::http::extract::documented::mark_error_shape(item, surface);
    }
    routes
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
        route.and_then(|route| self.0.get(route.as_str()).copied())
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
            &report.fields,
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
    use crate::http::error::AppError;

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

    #[test]
    fn the_map_follows_the_groups_declarations_and_each_path_has_one_surface() {
        let (_, document) = crate::app::api_router().split_for_parts();
        let map = SurfaceMap::from_document(&document);
        for (path, item) in &document.paths.paths {
            if path == "/api/openapi" || path == "/api/swagger" {
                continue;
            }
            let surfaces: std::collections::HashSet<&str> =
                [&item.get, &item.post, &item.put, &item.patch, &item.delete]
                    .into_iter()
                    .flatten()
                    .map(|operation| {
                        operation
                            .extensions
                            .as_ref()
                            .and_then(|found| found.get(ERROR_SHAPE_EXTENSION))
                            .and_then(Value::as_str)
                            .unwrap_or_else(|| panic!("{path}: an operation outside every group"))
                    })
                    .collect();
            assert_eq!(surfaces.len(), 1, "{path}: {surfaces:?}");
            assert!(map.0.contains_key(path), "{path}");
        }
        assert_eq!(map.0["/api/v1/admin/users"], Surface::AdminV1);
        assert_eq!(map.0["/api/version"], Surface::Plain);
        assert_eq!(map.0["/api/og-image"], Surface::Image);
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
