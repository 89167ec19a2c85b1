//! `/api/admin/permissions` (SPEC.md "Permission", and the permission
//! operations whose paths DECISIONS.md gives): the list, and creating and
//! changing a permission, the writes under `permissions:manage`.

use std::collections::BTreeMap;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use plaza_domain::grants::PermissionStatus;
use plaza_domain::listing::{Page, SortOrder};
use plaza_domain::locks::Resource;
use plaza_domain::permissions::{
    self, MAX_DEPENDENCIES, MAX_DEPENDENCY_CHARS, MAX_METADATA_BYTES, MAX_METADATA_DEPTH,
    NewPermission, PermissionChanges, PermissionFilter, PermissionItem, PermissionSort,
    RISK_LEVELS, STATUSES,
};
use plaza_domain::time::rfc3339;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::users::{PagePosition, page_and_limit};
use crate::auth::{Administrator, AnyAdmin, ManagePermissions, RequestAudit};
use crate::controllers::params::Problems;
use crate::http::error::schema::AdminError;
use crate::http::error::{AppError, FieldError};
use crate::http::extract::{AppJson, IdPath};
use crate::state::AppState;

/// A permission with who holds it (DECISIONS.md "Permission item").
#[derive(Serialize, ToSchema)]
pub struct PermissionView {
    pub id: i64,
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub category: String,
    pub is_inheritable: bool,
    /// `low`, `medium`, `high` or `critical`.
    pub risk_level: String,
    /// Names of the permissions this one needs.
    pub dependencies: Vec<String>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    /// `active`, `disabled` or `archived`.
    pub status: String,
    pub sort_order: i64,
    pub created_at: String,
    pub updated_at: String,
    /// Users holding it through their role or a direct grant.
    pub usage_count: i64,
    /// Names of the roles that hold it.
    pub roles: Vec<String>,
    pub statistics: PermissionStatistics,
}

/// How a permission is held.
#[derive(Serialize, ToSchema)]
pub struct PermissionStatistics {
    pub role_count: usize,
    /// Users granted it directly, whatever their role.
    pub direct_grants: i64,
    pub usage_count: i64,
}

impl From<PermissionItem> for PermissionView {
    fn from(item: PermissionItem) -> Self {
        PermissionView {
            statistics: PermissionStatistics {
                role_count: item.roles.len(),
                direct_grants: item.direct_grants,
                usage_count: item.usage_count,
            },
            id: item.id,
            name: item.name,
            display_name: item.display_name,
            description: item.description,
            category: item.category,
            is_inheritable: item.is_inheritable,
            risk_level: item.risk_level,
            dependencies: item.dependencies,
            metadata: item.metadata,
            status: item.status,
            sort_order: item.sort_order,
            created_at: rfc3339(item.created_at),
            updated_at: rfc3339(item.updated_at),
            usage_count: item.usage_count,
            roles: item.roles,
        }
    }
}

/// Totals over every permission, whatever the filter.
#[derive(Serialize, ToSchema)]
pub struct PermissionOverviewView {
    pub total: i64,
    pub by_category: BTreeMap<String, i64>,
    pub by_risk_level: BTreeMap<String, i64>,
    pub by_status: BTreeMap<String, i64>,
    /// Names of the permissions no role and no user holds.
    pub unused_permissions: Vec<String>,
    pub unused_count: usize,
}

/// A page of permissions.
#[derive(Serialize, ToSchema)]
pub struct PermissionList {
    pub overview: PermissionOverviewView,
    pub permissions: Vec<PermissionView>,
    pub pagination: PagePosition,
}

/// The permissions matching the filters, with statistics, the roles that
/// hold each, and an overview of all.
#[utoipa::path(
    get,
    path = "/api/admin/permissions",
    tag = "admin",
    params(
        ("search" = Option<String>, Query, description = "A part of the name, display name or description, any case"),
        ("category" = Option<String>, Query, description = "Only this category"),
        ("status" = Option<String>, Query, description = "`all` (default), `active`, `disabled` or `archived`"),
        ("risk_level" = Option<String>, Query, description = "`all` (default), `low`, `medium`, `high` or `critical`"),
        ("sort_by" = Option<String>, Query, description = "`name`, `display_name`, `category`, `created_at`, `updated_at`, `usage_count` or `sort_order` (default)"),
        ("sort_order" = Option<String>, Query, description = "`asc` (default) or `desc`"),
        ("page" = Option<u32>, Query, description = "A positive integer, default 1", minimum = 1),
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20", minimum = 1, maximum = 100),
    ),
    responses(
        (status = 200, description = "One page of permissions", body = PermissionList),
        (status = 400, description = "`Invalid query parameters`; `details` lists each problem", body = AdminError),
    )
)]
pub async fn list_permissions(
    State(state): State<AppState>,
    _admin: Administrator<AnyAdmin>,
    RawQuery(query): RawQuery,
) -> Result<AppJson<PermissionList>, AppError> {
    let mut raw: BTreeMap<String, String> = BTreeMap::new();
    for (key, value) in url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes()) {
        raw.insert(key.into_owned(), value.trim().to_owned());
    }
    let mut problems = Problems::default();
    let (page, limit) = page_and_limit(
        &mut problems,
        raw.get("page").map(String::as_str),
        raw.get("limit").map(String::as_str),
    );
    let mut one_of = |field: &str, allowed: &[&str], all: bool| -> Option<String> {
        let value = raw.get(field)?;
        if all && value == "all" {
            return None;
        }
        if allowed.contains(&value.as_str()) {
            return Some(value.clone());
        }
        let mut expected = allowed.to_vec();
        if all {
            expected.insert(0, "all");
        }
        problems.push(
            FieldError::new(
                field,
                format!("must be one of {}, not {value:?}", expected.join(", ")),
            )
            .with_kind("invalid_enum_value", expected.join(" | "), value.clone()),
        );
        None
    };
    let status = one_of("status", &STATUSES, true);
    let risk_level = one_of("risk_level", &RISK_LEVELS, true);
    let sort = one_of("sort_by", &PermissionSort::NAMES, false)
        .and_then(|name| PermissionSort::parse(&name))
        .unwrap_or(PermissionSort::SortOrder);
    let order = one_of("sort_order", &["asc", "desc"], false)
        .and_then(|name| SortOrder::parse(&name))
        .unwrap_or(SortOrder::Asc);
    let filter = PermissionFilter {
        search: raw.get("search").filter(|s| !s.is_empty()).cloned(),
        category: raw.get("category").filter(|s| !s.is_empty()).cloned(),
        status,
        risk_level,
        sort,
        order,
    };
    problems.finish()?;
    let listed = state
        .db
        .permission_page(
            &filter,
            Page {
                limit,
                offset: (page - 1).saturating_mul(limit),
            },
        )
        .await?;
    let overview = listed.overview;
    Ok(AppJson(PermissionList {
        overview: PermissionOverviewView {
            total: overview.total,
            by_category: overview.by_category,
            by_risk_level: overview.by_risk_level,
            by_status: overview.by_status,
            unused_count: overview.unused.len(),
            unused_permissions: overview.unused,
        },
        permissions: listed
            .permissions
            .into_iter()
            .map(PermissionView::from)
            .collect(),
        pagination: PagePosition::new(page, limit, listed.total),
    }))
}

/// A permission to create (SPEC.md "Permission"). Fields are read as any
/// JSON, so a wrong type is one of the problems listed, not a parse error.
#[derive(Deserialize, ToSchema)]
pub struct NewPermissionBody {
    /// 1 to 100 of `a-z 0-9 . _ -`, unique.
    #[schema(value_type = String)]
    pub name: Option<Value>,
    /// 1 to 200 characters.
    #[schema(value_type = String)]
    pub display_name: Option<Value>,
    #[schema(value_type = Option<String>)]
    pub description: Option<Value>,
    /// 1 to 50 characters.
    #[schema(value_type = String)]
    pub category: Option<Value>,
    /// Default false.
    #[schema(value_type = Option<bool>)]
    pub is_inheritable: Option<Value>,
    /// `low` (default), `medium`, `high` or `critical`.
    #[schema(value_type = Option<String>)]
    pub risk_level: Option<Value>,
    /// Names of existing permissions (each at most 100 characters); no
    /// cycle. At most 32 distinct names; a name given twice counts once.
    /// Default empty.
    #[schema(value_type = Option<Vec<String>>)]
    pub dependencies: Option<Value>,
    /// An object of at most 4096 bytes written as compact JSON, nesting at
    /// most 4 levels deep (the object itself is level 1). Default `{}`.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// Recorded in the audit trail.
    #[schema(value_type = Option<String>)]
    pub reason: Option<Value>,
}

/// The answer of a creation.
#[derive(Serialize, ToSchema)]
pub struct PermissionCreated {
    pub success: bool,
    pub permission: PermissionView,
    pub message: String,
}

/// Create a permission (audited as `permission.create`); it starts
/// `active`, held by no role.
#[utoipa::path(
    post,
    path = "/api/admin/permissions",
    tag = "admin",
    request_body = NewPermissionBody,
    responses(
        (status = 201, description = "Created", body = PermissionCreated),
        (status = 400, description = "`Invalid request body`; `details` lists each problem", body = AdminError),
        (status = 409, description = "A permission with this name exists", body = AdminError),
        (status = 422, description = "`Validation error`: a dependency that does not exist, or dependencies that would form a cycle (named in `details`)", body = AdminError),
    )
)]
pub async fn create_permission(
    State(state): State<AppState>,
    _admin: Administrator<ManagePermissions>,
    RequestAudit(context): RequestAudit,
    AppJson(body): AppJson<NewPermissionBody>,
) -> Result<(StatusCode, AppJson<PermissionCreated>), AppError> {
    let new = check_new_permission(&body)?;
    let permission = state
        .db
        .write(move |tx| Box::pin(async move { permissions::create(tx, &context, new).await }))
        .await?;
    Ok((
        StatusCode::CREATED,
        AppJson(PermissionCreated {
            success: true,
            message: format!("permission {} created", permission.name),
            permission: permission.into(),
        }),
    ))
}

/// The JSON type of `value`, as the issues name it.
pub(super) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The text in `value` if it is a string of `min` to `max` characters
/// without control characters; otherwise the problem is added to
/// `problems`. A missing value is a problem only when `required`.
pub(super) fn text_field(
    problems: &mut Problems,
    field: &str,
    value: &Option<Value>,
    required: bool,
    (min, max): (usize, usize),
) -> Option<String> {
    let value = match value {
        None if !required => return None,
        None => {
            problems.push(FieldError::new(field, "is required").with_kind(
                "invalid_type",
                "string",
                "undefined",
            ));
            return None;
        }
        Some(value) => value,
    };
    let Some(text) = value.as_str() else {
        problems.push(
            FieldError::new(field, format!("must be a string, not {}", type_name(value)))
                .with_kind("invalid_type", "string", type_name(value)),
        );
        return None;
    };
    let length = text.chars().count();
    if length < min {
        problems.push(
            FieldError::new(field, format!("must be at least {min} characters")).with_kind(
                "too_small",
                format!(">= {min} characters"),
                format!("{length} characters"),
            ),
        );
    } else if length > max {
        problems.push(
            FieldError::new(field, format!("must be at most {max} characters")).with_kind(
                "too_big",
                format!("<= {max} characters"),
                format!("{length} characters"),
            ),
        );
    } else if text.chars().any(char::is_control) {
        problems.push(
            FieldError::new(field, "must not hold control characters").with_kind(
                "invalid_string",
                "printable text",
                "control characters",
            ),
        );
    }
    Some(text.to_owned())
}

/// Lengths of the texts of a permission, in characters.
pub(super) const NAME_CHARS: (usize, usize) = (1, 100);
const DISPLAY_NAME_CHARS: (usize, usize) = (1, 200);
const DESCRIPTION_CHARS: (usize, usize) = (0, 2000);
const CATEGORY_CHARS: (usize, usize) = (1, 50);
const RISK_LEVEL_CHARS: (usize, usize) = (1, 20);
pub(super) const REASON_CHARS: (usize, usize) = (0, 1000);

/// `risk_level`'s problem, if it is not one of [`RISK_LEVELS`].
fn check_risk_level(problems: &mut Problems, level: &Option<String>) {
    if let Some(level) = level
        && !RISK_LEVELS.contains(&level.as_str())
    {
        problems.push(
            FieldError::new("risk_level", "must be low, medium, high or critical").with_kind(
                "invalid_enum_value",
                "low | medium | high | critical",
                level.clone(),
            ),
        );
    }
}

/// Checks every field of the Permission table, naming each problem.
/// Checks each field of a new permission, naming each problem (the
/// console's form is checked by the same rules).
pub fn check_new_permission(body: &NewPermissionBody) -> Result<NewPermission, AppError> {
    let mut problems = Problems::default();
    let mut text = |field: &str, value: &Option<Value>, required: bool, lengths| {
        text_field(&mut problems, field, value, required, lengths)
    };
    let name = text("name", &body.name, true, NAME_CHARS);
    let display_name = text("display_name", &body.display_name, true, DISPLAY_NAME_CHARS);
    let description = text("description", &body.description, false, DESCRIPTION_CHARS);
    let category = text("category", &body.category, true, CATEGORY_CHARS);
    let risk_level = text("risk_level", &body.risk_level, false, RISK_LEVEL_CHARS);
    let reason = text("reason", &body.reason, false, REASON_CHARS);
    if let Some(name) = &name
        && !name.is_empty()
        && !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
    {
        problems.push(
            FieldError::new("name", "must match ^[a-z0-9._-]+$").with_kind(
                "invalid_string",
                "^[a-z0-9._-]+$",
                name.clone(),
            ),
        );
    }
    check_risk_level(&mut problems, &risk_level);
    let is_inheritable = match &body.is_inheritable {
        None => false,
        Some(Value::Bool(flag)) => *flag,
        Some(other) => {
            problems.push(
                FieldError::new("is_inheritable", "must be a boolean").with_kind(
                    "invalid_type",
                    "boolean",
                    type_name(other),
                ),
            );
            false
        }
    };
    let mut dependencies = Vec::new();
    match &body.dependencies {
        None => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(dependency) if dependency.chars().count() > MAX_DEPENDENCY_CHARS => {
                        problems.push(
                            FieldError::new(
                                format!("dependencies.{index}"),
                                format!("must be at most {MAX_DEPENDENCY_CHARS} characters"),
                            )
                            .with_kind(
                                "too_big",
                                format!("<= {MAX_DEPENDENCY_CHARS} characters"),
                                format!("{} characters", dependency.chars().count()),
                            ),
                        );
                    }
                    Some(dependency) if !dependencies.iter().any(|d| d == dependency) => {
                        dependencies.push(dependency.to_owned());
                    }
                    Some(_) => {}
                    None => problems.push(
                        FieldError::new(format!("dependencies.{index}"), "must be a string")
                            .with_kind("invalid_type", "string", type_name(item)),
                    ),
                }
            }
            if dependencies.len() > MAX_DEPENDENCIES {
                problems.push(
                    FieldError::new(
                        "dependencies",
                        format!("must name at most {MAX_DEPENDENCIES} permissions"),
                    )
                    .with_kind(
                        "too_big",
                        format!("<= {MAX_DEPENDENCIES} names"),
                        format!("{} names", dependencies.len()),
                    ),
                );
            }
        }
        Some(other) => problems.push(
            FieldError::new("dependencies", "must be an array of permission names").with_kind(
                "invalid_type",
                "array",
                type_name(other),
            ),
        ),
    }
    let metadata = match &body.metadata {
        None => Value::Object(Map::new()),
        Some(object @ Value::Object(_)) => {
            let depth = permissions::json_depth(object);
            let bytes = object.to_string().len();
            if depth > MAX_METADATA_DEPTH {
                problems.push(
                    FieldError::new(
                        "metadata",
                        format!("must nest at most {MAX_METADATA_DEPTH} levels deep"),
                    )
                    .with_kind(
                        "too_big",
                        format!("<= {MAX_METADATA_DEPTH} levels"),
                        format!("{depth} levels"),
                    ),
                );
            } else if bytes > MAX_METADATA_BYTES {
                problems.push(
                    FieldError::new(
                        "metadata",
                        format!("must be at most {MAX_METADATA_BYTES} bytes as JSON"),
                    )
                    .with_kind(
                        "too_big",
                        format!("<= {MAX_METADATA_BYTES} bytes"),
                        format!("{bytes} bytes"),
                    ),
                );
            }
            object.clone()
        }
        Some(other) => {
            problems.push(FieldError::new("metadata", "must be an object").with_kind(
                "invalid_type",
                "object",
                type_name(other),
            ));
            Value::Null
        }
    };
    problems.finish()?;
    Ok(NewPermission {
        name: name.unwrap_or_default(),
        display_name: display_name.unwrap_or_default(),
        description: description.unwrap_or_default(),
        category: category.unwrap_or_default(),
        is_inheritable,
        risk_level: risk_level.unwrap_or_else(|| "low".to_owned()),
        dependencies,
        metadata,
        reason,
    })
}

/// A change of a permission: any of its fields. Fields are read as any
/// JSON, so a wrong type is one of the problems listed.
#[derive(Deserialize, ToSchema)]
pub struct PermissionChangeBody {
    /// `active`, `disabled` or `archived`. Only an active permission gives
    /// its holders anything; an archived one changes no more.
    #[schema(value_type = Option<String>)]
    pub status: Option<Value>,
    /// 1 to 200 characters.
    #[schema(value_type = Option<String>)]
    pub display_name: Option<Value>,
    /// At most 2000 characters.
    #[schema(value_type = Option<String>)]
    pub description: Option<Value>,
    /// `low`, `medium`, `high` or `critical`.
    #[schema(value_type = Option<String>)]
    pub risk_level: Option<Value>,
    /// Recorded in the audit trail; at most 1000 characters.
    #[schema(value_type = Option<String>)]
    pub reason: Option<Value>,
}

/// Change a permission's status, display name, description or risk level
/// (audited as `permission.update`). An archived permission changes no
/// more; archiving waits for the permissions that depend on it and takes
/// the permission from every role and user holding it.
#[utoipa::path(
    patch,
    path = "/api/admin/permissions/{id}",
    tag = "admin",
    params(("id" = i64, Path, description = "The permission's numeric `id`")),
    request_body = PermissionChangeBody,
    responses(
        (status = 200, description = "The permission as it is now", body = PermissionView),
        (status = 400, description = "`Invalid request body`; `details` lists each problem (nothing to change is one)", body = AdminError),
        (status = 404, description = "No such permission", body = AdminError),
        (status = 409, description = "The permission is archived, or archiving it waits for permissions that depend on it", body = AdminError),
        (status = 423, description = "Another admin is changing this permission", body = AdminError),
    )
)]
pub async fn update_permission(
    State(state): State<AppState>,
    admin: Administrator<ManagePermissions>,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<PermissionChangeBody>,
) -> Result<AppJson<PermissionView>, AppError> {
    let changes = check_permission_change(&body)?;
    let ttl = state.settings.limits.admin_lock_ttl();
    let permission = state
        .db
        .write_locked(
            Resource::Permission(id),
            admin.actor.user_id,
            ttl,
            move |tx| Box::pin(async move { permissions::update(tx, &context, id, changes).await }),
        )
        .await?;
    Ok(AppJson(permission.into()))
}

/// Checks each field of a permission change, naming each problem.
pub fn check_permission_change(body: &PermissionChangeBody) -> Result<PermissionChanges, AppError> {
    let mut problems = Problems::default();
    let status = text_field(&mut problems, "status", &body.status, false, (1, 20));
    let display_name = text_field(
        &mut problems,
        "display_name",
        &body.display_name,
        false,
        DISPLAY_NAME_CHARS,
    );
    let description = text_field(
        &mut problems,
        "description",
        &body.description,
        false,
        DESCRIPTION_CHARS,
    );
    let risk_level = text_field(
        &mut problems,
        "risk_level",
        &body.risk_level,
        false,
        RISK_LEVEL_CHARS,
    );
    let reason = text_field(&mut problems, "reason", &body.reason, false, REASON_CHARS);
    check_risk_level(&mut problems, &risk_level);
    let status = status.and_then(|status| {
        let parsed = PermissionStatus::parse(&status);
        if parsed.is_none() {
            problems.push(
                FieldError::new("status", "must be active, disabled or archived").with_kind(
                    "invalid_enum_value",
                    STATUSES.join(" | "),
                    status,
                ),
            );
        }
        parsed
    });
    if problems.is_empty()
        && status.is_none()
        && display_name.is_none()
        && description.is_none()
        && risk_level.is_none()
    {
        problems.push(
            FieldError::new(
                "body",
                "nothing to change: give status, display_name, description or risk_level",
            )
            .with_kind("custom", "at least one field", "none"),
        );
    }
    problems.finish()?;
    Ok(PermissionChanges {
        status,
        display_name,
        description,
        risk_level,
        reason,
    })
}
