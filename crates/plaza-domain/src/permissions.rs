//! Permissions (capabilities such as `users:manage`) and the roles they are
//! granted to (SPEC.md "Permission", "Role"): the admin list with its
//! statistics, creation, changes of a permission, the assignable roles with
//! their grants, and replacing a role's grants, each change applying the
//! rules of [`crate::grants`] in its unit of work.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};
use sqlx::{AnyConnection, FromRow};

use crate::audit::{self, AuditAction, AuditContext};
use crate::grants::{self, Grantable, PermissionStatus};
use crate::listing::{Arg, Args, Page, SortOrder, bind_all, escape_like, where_clause};
use crate::time::now_millis;
use crate::users::Role;
use crate::{Database, DomainError, Flag, Tx};

/// The risk levels, lowest first.
pub const RISK_LEVELS: [&str; 4] = ["low", "medium", "high", "critical"];
/// The statuses a permission can have.
pub const STATUSES: [&str; 3] = ["active", "disabled", "archived"];
/// Most dependencies a permission may have (distinct names).
pub const MAX_DEPENDENCIES: usize = 32;
/// Longest dependency name, in characters (the longest a name may be).
pub const MAX_DEPENDENCY_CHARS: usize = 100;
/// Largest metadata of a permission, in bytes written as compact JSON.
pub const MAX_METADATA_BYTES: usize = 4096;
/// Deepest nesting of a permission's metadata: the object itself is level 1.
pub const MAX_METADATA_DEPTH: usize = 4;

/// How deep `value` nests: 0 for a scalar, 1 for an object or array of
/// scalars, one more for each level inside.
pub fn json_depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(json_depth).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(json_depth).max().unwrap_or(0),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => 0,
    }
}

/// The columns the list sorts by (SPEC.md: `sort_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionSort {
    Name,
    DisplayName,
    Category,
    CreatedAt,
    UpdatedAt,
    UsageCount,
    SortOrder,
}

impl PermissionSort {
    pub const NAMES: [&'static str; 7] = [
        "name",
        "display_name",
        "category",
        "created_at",
        "updated_at",
        "usage_count",
        "sort_order",
    ];

    pub fn parse(name: &str) -> Option<PermissionSort> {
        Some(match name {
            "name" => PermissionSort::Name,
            "display_name" => PermissionSort::DisplayName,
            "category" => PermissionSort::Category,
            "created_at" => PermissionSort::CreatedAt,
            "updated_at" => PermissionSort::UpdatedAt,
            "usage_count" => PermissionSort::UsageCount,
            "sort_order" => PermissionSort::SortOrder,
            _ => return None,
        })
    }

    fn column(self) -> &'static str {
        match self {
            PermissionSort::Name => "listed.name",
            PermissionSort::DisplayName => "listed.display_name",
            PermissionSort::Category => "listed.category",
            PermissionSort::CreatedAt => "listed.created_at",
            PermissionSort::UpdatedAt => "listed.updated_at",
            PermissionSort::UsageCount => "listed.usage_count",
            PermissionSort::SortOrder => "listed.sort_order",
        }
    }
}

/// What the list shows.
#[derive(Debug, Clone)]
pub struct PermissionFilter {
    /// A part of the name, display name or description, any case.
    pub search: Option<String>,
    pub category: Option<String>,
    /// One of [`STATUSES`]; `None` for all.
    pub status: Option<String>,
    /// One of [`RISK_LEVELS`]; `None` for all.
    pub risk_level: Option<String>,
    pub sort: PermissionSort,
    pub order: SortOrder,
}

/// A permission with who holds it.
#[derive(Debug, Clone)]
pub struct PermissionItem {
    pub id: i64,
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub category: String,
    pub is_inheritable: bool,
    pub risk_level: String,
    pub dependencies: Vec<String>,
    pub metadata: Value,
    pub status: String,
    pub sort_order: i64,
    pub created_at: i64,
    pub updated_at: i64,
    /// Users holding it through their role or a direct grant.
    pub usage_count: i64,
    /// Users granted it directly.
    pub direct_grants: i64,
    /// Names of the roles that hold it.
    pub roles: Vec<String>,
}

#[derive(FromRow)]
struct PermissionRow {
    id: i64,
    name: String,
    display_name: String,
    description: String,
    category: String,
    is_inheritable: Flag,
    risk_level: String,
    dependencies: String,
    metadata: String,
    status: String,
    sort_order: i64,
    created_at: i64,
    updated_at: i64,
    usage_count: i64,
    direct_grants: i64,
}

impl PermissionRow {
    fn into_item(self, roles: Vec<String>) -> PermissionItem {
        PermissionItem {
            id: self.id,
            name: self.name,
            display_name: self.display_name,
            description: self.description,
            category: self.category,
            is_inheritable: self.is_inheritable.0,
            risk_level: self.risk_level,
            dependencies: serde_json::from_str(&self.dependencies).unwrap_or_default(),
            metadata: serde_json::from_str(&self.metadata).unwrap_or_else(|_| json!({})),
            status: self.status,
            sort_order: self.sort_order,
            created_at: self.created_at,
            updated_at: self.updated_at,
            usage_count: self.usage_count,
            direct_grants: self.direct_grants,
            roles,
        }
    }
}

/// Totals over every permission, whatever the filter.
#[derive(Debug, Clone, Default)]
pub struct PermissionOverview {
    pub total: i64,
    pub by_category: BTreeMap<String, i64>,
    pub by_risk_level: BTreeMap<String, i64>,
    pub by_status: BTreeMap<String, i64>,
    /// Names of the permissions granted to no role and to no user.
    pub unused: Vec<String>,
}

/// One page of the list, the number matching and the overview.
#[derive(Debug, Clone)]
pub struct PermissionPage {
    pub permissions: Vec<PermissionItem>,
    pub total: i64,
    pub overview: PermissionOverview,
}

/// The permissions with their statistics, as the subquery `listed`.
const LISTED: &str = "(SELECT p.id, p.name, p.display_name, p.description, p.category, \
       p.is_inheritable, p.risk_level, p.dependencies, p.metadata, p.status, p.sort_order, \
       p.created_at, p.updated_at, \
       COALESCE((SELECT CAST(SUM(rs.holders) AS BIGINT) FROM role_permissions rp \
                 JOIN roles r ON r.id = rp.role_id JOIN role_sizes rs ON rs.role = r.name \
                 WHERE rp.permission_id = p.id), 0) \
       + (SELECT COUNT(*) FROM user_permissions up JOIN users u ON u.id = up.user_id \
          WHERE up.permission_id = p.id AND NOT EXISTS ( \
            SELECT 1 FROM roles r2 JOIN role_permissions rp2 ON rp2.role_id = r2.id \
            WHERE r2.name = u.role AND rp2.permission_id = p.id)) AS usage_count, \
       (SELECT COUNT(*) FROM user_permissions up2 WHERE up2.permission_id = p.id) AS direct_grants \
     FROM permissions p) listed";

/// Users per role, which [`LISTED`] sums over the roles holding a permission.
const ROLE_SIZES: &str =
    "WITH role_sizes AS (SELECT role, COUNT(*) AS holders FROM users GROUP BY role) ";

impl PermissionFilter {
    fn conditions(&self, args: &mut Args) -> Vec<String> {
        let mut conditions = Vec::new();
        if let Some(search) = &self.search {
            let pattern = args.push(Arg::Text(format!(
                "%{}%",
                escape_like(&search.to_lowercase())
            )));
            conditions.push(format!(
                "(LOWER(listed.name) LIKE {pattern} ESCAPE '\\' \
                  OR LOWER(listed.display_name) LIKE {pattern} ESCAPE '\\' \
                  OR LOWER(listed.description) LIKE {pattern} ESCAPE '\\')"
            ));
        }
        if let Some(category) = &self.category {
            let category = args.push(Arg::Text(category.clone()));
            conditions.push(format!("listed.category = {category}"));
        }
        if let Some(status) = &self.status {
            let status = args.push(Arg::Text(status.clone()));
            conditions.push(format!("listed.status = {status}"));
        }
        if let Some(risk_level) = &self.risk_level {
            let risk_level = args.push(Arg::Text(risk_level.clone()));
            conditions.push(format!("listed.risk_level = {risk_level}"));
        }
        conditions
    }
}

impl Database {
    /// One page of the permissions matching `filter`, with the overview.
    pub async fn permission_page(
        &self,
        filter: &PermissionFilter,
        page: Page,
    ) -> Result<PermissionPage, DomainError> {
        let mut connection = self.lease().await?;
        let mut count_args = Args::default();
        let conditions = filter.conditions(&mut count_args);
        let (total,): (i64,) = bind_all(
            sqlx::query_as(&format!(
                "{ROLE_SIZES}SELECT COUNT(*) FROM {LISTED}{}",
                where_clause(&conditions)
            )),
            count_args.into_vec(),
        )
        .fetch_one(&mut *connection)
        .await?;
        let mut args = Args::default();
        let conditions = filter.conditions(&mut args);
        let limit = args.push(Arg::Int(page.limit));
        let offset = args.push(Arg::Int(page.offset));
        let direction = filter.order.sql();
        let rows: Vec<PermissionRow> = bind_all(
            sqlx::query_as(&format!(
                "{ROLE_SIZES}SELECT listed.* FROM {LISTED}{} \
                 ORDER BY {} {direction}, listed.id {direction} LIMIT {limit} OFFSET {offset}",
                where_clause(&conditions),
                filter.sort.column(),
            )),
            args.into_vec(),
        )
        .fetch_all(&mut *connection)
        .await?;
        let holders: Vec<(i64, String)> = sqlx::query_as(
            "SELECT rp.permission_id, r.name FROM role_permissions rp \
             JOIN roles r ON r.id = rp.role_id ORDER BY r.rank, r.name",
        )
        .fetch_all(&mut *connection)
        .await?;
        let mut roles_of: HashMap<i64, Vec<String>> = HashMap::new();
        for (permission_id, role) in holders {
            roles_of.entry(permission_id).or_default().push(role);
        }
        let summary: Vec<(String, String, String, String, i64)> = sqlx::query_as(
            "SELECT p.name, p.category, p.risk_level, p.status, \
             (SELECT COUNT(*) FROM role_permissions rp WHERE rp.permission_id = p.id) \
             + (SELECT COUNT(*) FROM user_permissions up WHERE up.permission_id = p.id) AS grants \
             FROM permissions p ORDER BY p.sort_order, p.name",
        )
        .fetch_all(&mut *connection)
        .await?;
        let mut overview = PermissionOverview::default();
        for (name, category, risk_level, status, grants) in summary {
            overview.total += 1;
            *overview.by_category.entry(category).or_default() += 1;
            *overview.by_risk_level.entry(risk_level).or_default() += 1;
            *overview.by_status.entry(status).or_default() += 1;
            if grants == 0 {
                overview.unused.push(name);
            }
        }
        for level in RISK_LEVELS {
            overview.by_risk_level.entry(level.to_owned()).or_default();
        }
        for status in STATUSES {
            overview.by_status.entry(status.to_owned()).or_default();
        }
        let permissions = rows
            .into_iter()
            .map(|row| {
                let roles = roles_of.remove(&row.id).unwrap_or_default();
                row.into_item(roles)
            })
            .collect();
        Ok(PermissionPage {
            permissions,
            total,
            overview,
        })
    }

    /// The roles the API may assign (SPEC.md "Role"): every role but those
    /// granted only in the data store (`super_admin`), lowest first, each
    /// with the names of the permissions it is granted, whatever their
    /// status.
    pub async fn assignable_roles(&self) -> Result<Vec<RoleItem>, DomainError> {
        let mut connection = self.lease().await?;
        let mut roles: Vec<RoleItem> = sqlx::query_as(
            "SELECT id, name, display_name, description FROM roles \
             WHERE assignable = TRUE ORDER BY rank",
        )
        .fetch_all(&mut *connection)
        .await?;
        let granted: Vec<(i64, String)> = sqlx::query_as(
            "SELECT rp.role_id, p.name FROM role_permissions rp \
             JOIN permissions p ON p.id = rp.permission_id ORDER BY p.name",
        )
        .fetch_all(&mut *connection)
        .await?;
        for (role_id, name) in granted {
            if let Some(role) = roles.iter_mut().find(|role| role.id == role_id) {
                role.permissions.push(name);
            }
        }
        Ok(roles)
    }

    /// The id of the role named `name`; [`DomainError::NotFound`] for a
    /// name no role has.
    pub async fn role_id(&self, name: &str) -> Result<i64, DomainError> {
        let found: Option<(i64,)> = sqlx::query_as("SELECT id FROM roles WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut *self.lease().await?)
            .await?;
        found.map(|(id,)| id).ok_or(DomainError::NotFound("role"))
    }
}

/// A role as the roles list shows it.
#[derive(Debug, Clone, FromRow)]
pub struct RoleItem {
    pub id: i64,
    pub name: String,
    pub display_name: String,
    pub description: String,
    /// Names of the permissions granted to the role, by name.
    #[sqlx(skip)]
    pub permissions: Vec<String>,
}

/// A permission to create, its fields already checked one by one.
#[derive(Debug, Clone)]
pub struct NewPermission {
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub category: String,
    pub is_inheritable: bool,
    pub risk_level: String,
    pub dependencies: Vec<String>,
    pub metadata: Value,
    pub reason: Option<String>,
}

/// Creates a permission in `tx`, audited as `permission.create`. Its
/// dependencies follow [`grants::check_new_dependencies`]
/// ([`DomainError::Invalid`] on `dependencies`); a taken name is a
/// [`DomainError::Conflict`].
pub async fn create(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    new: NewPermission,
) -> Result<PermissionItem, DomainError> {
    let existing: Vec<(String, String)> =
        sqlx::query_as("SELECT name, dependencies FROM permissions")
            .fetch_all(&mut **tx)
            .await?;
    if existing.iter().any(|(name, _)| *name == new.name) {
        return Err(DomainError::Conflict(format!(
            "a permission named {} already exists",
            new.name
        )));
    }
    let graph: HashMap<String, Vec<String>> = existing
        .into_iter()
        .map(|(name, dependencies)| {
            (
                name,
                serde_json::from_str(&dependencies).unwrap_or_default(),
            )
        })
        .collect();
    grants::check_new_dependencies(&new.name, &new.dependencies, graph)?;
    let now = now_millis();
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO permissions (name, display_name, description, category, is_inheritable, \
         risk_level, dependencies, metadata, status, sort_order, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'active', \
                 (SELECT COALESCE(MAX(sort_order), 0) + 10 FROM permissions), $9, $9) RETURNING id",
    )
    .bind(new.name.clone())
    .bind(new.display_name.clone())
    .bind(new.description.clone())
    .bind(new.category.clone())
    .bind(new.is_inheritable)
    .bind(new.risk_level.clone())
    .bind(serde_json::to_string(&new.dependencies).unwrap_or_else(|_| "[]".to_owned()))
    .bind(new.metadata.to_string())
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    let (sort_order,): (i64,) = sqlx::query_as("SELECT sort_order FROM permissions WHERE id = $1")
        .bind(id)
        .fetch_one(&mut **tx)
        .await?;
    audit::record(
        tx,
        context,
        AuditAction {
            action: "permission.create",
            target_type: "permission",
            target_id: Some(id.to_string()),
            changes: json!({
                "name": new.name,
                "displayName": new.display_name,
                "category": new.category,
                "riskLevel": new.risk_level,
                "dependencies": new.dependencies,
                "reason": new.reason,
            }),
        },
    )
    .await?;
    Ok(PermissionItem {
        id,
        name: new.name,
        display_name: new.display_name,
        description: new.description,
        category: new.category,
        is_inheritable: new.is_inheritable,
        risk_level: new.risk_level,
        dependencies: new.dependencies,
        metadata: new.metadata,
        status: "active".to_owned(),
        sort_order,
        created_at: now,
        updated_at: now,
        usage_count: 0,
        direct_grants: 0,
        roles: Vec::new(),
    })
}

/// The permission `id` with who holds it, read in `connection` (inside a
/// unit of work, it sees the work's changes).
async fn item_in(connection: &mut AnyConnection, id: i64) -> Result<PermissionItem, DomainError> {
    let row: PermissionRow = sqlx::query_as(&format!(
        "{ROLE_SIZES}SELECT listed.* FROM {LISTED} WHERE listed.id = $1"
    ))
    .bind(id)
    .fetch_optional(&mut *connection)
    .await?
    .ok_or(DomainError::NotFound("permission"))?;
    let roles: Vec<(String,)> = sqlx::query_as(
        "SELECT r.name FROM role_permissions rp JOIN roles r ON r.id = rp.role_id \
         WHERE rp.permission_id = $1 ORDER BY r.rank, r.name",
    )
    .bind(id)
    .fetch_all(&mut *connection)
    .await?;
    Ok(row.into_item(roles.into_iter().map(|(name,)| name).collect()))
}

/// Changes to a permission, each field already checked; `None` leaves a
/// field as it is.
#[derive(Debug, Clone, Default)]
pub struct PermissionChanges {
    pub status: Option<PermissionStatus>,
    pub display_name: Option<String>,
    pub description: Option<String>,
    /// One of [`RISK_LEVELS`].
    pub risk_level: Option<String>,
    /// Recorded in the audit trail.
    pub reason: Option<String>,
}

/// Changes the permission `id` in `tx`, audited as `permission.update` with
/// each changed field's `{before, after}`. An archived permission changes
/// no more, and archiving waits for the permissions depending on it
/// ([`grants::change_permission`], [`grants::archive`]:
/// [`DomainError::InvalidTransition`]); archiving also takes the
/// permission from every role and user that held it (named in the entry's
/// `revokedFrom`), since it can never be granted again.
pub async fn update(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    id: i64,
    changes: PermissionChanges,
) -> Result<PermissionItem, DomainError> {
    let stored: Option<(String, String, String, String, String)> = sqlx::query_as(
        "SELECT name, display_name, description, risk_level, status FROM permissions WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    let (name, display_name, description, risk_level, status) =
        stored.ok_or(DomainError::NotFound("permission"))?;
    // The column's CHECK holds it to the three statuses; an unreadable one
    // is treated as archived, which changes nothing.
    let from = PermissionStatus::parse(&status).unwrap_or(PermissionStatus::Archived);
    grants::change_permission(from)?;
    let to = changes.status.unwrap_or(from);
    let mut diff = Map::new();
    let mut record = |field: &str, before: &str, after: &Option<String>| -> String {
        match after {
            Some(after) if after != before => {
                diff.insert(field.to_owned(), json!({"before": before, "after": after}));
                after.clone()
            }
            _ => before.to_owned(),
        }
    };
    let new_status = record("status", from.as_str(), &Some(to.as_str().to_owned()));
    let new_display_name = record("displayName", &display_name, &changes.display_name);
    let new_description = record("description", &description, &changes.description);
    let new_risk_level = record("riskLevel", &risk_level, &changes.risk_level);
    if to == PermissionStatus::Archived && from != PermissionStatus::Archived {
        let revoked = archive_in(tx, id, &name).await?;
        diff.insert("revokedFrom".to_owned(), revoked);
    }
    if !diff.is_empty() {
        sqlx::query(
            "UPDATE permissions SET status = $2, display_name = $3, description = $4, \
             risk_level = $5, updated_at = $6 WHERE id = $1",
        )
        .bind(id)
        .bind(new_status)
        .bind(new_display_name)
        .bind(new_description)
        .bind(new_risk_level)
        .bind(now_millis())
        .execute(&mut **tx)
        .await?;
    }
    diff.insert("name".to_owned(), json!(name));
    diff.insert("reason".to_owned(), json!(changes.reason));
    audit::record(
        tx,
        context,
        AuditAction {
            action: "permission.update",
            target_type: "permission",
            target_id: Some(id.to_string()),
            changes: Value::Object(diff),
        },
    )
    .await?;
    item_in(tx, id).await
}

/// Archives the permission `id` named `name` in `tx`, once no permission
/// that is not archived depends on it: removes its grants, and answers
/// whom it was taken from (`{roles: [names], users: count}`).
async fn archive_in(tx: &mut Tx<'_>, id: i64, name: &str) -> Result<Value, DomainError> {
    let others: Vec<(String, String, String)> =
        sqlx::query_as("SELECT name, status, dependencies FROM permissions WHERE id <> $1")
            .bind(id)
            .fetch_all(&mut **tx)
            .await?;
    let dependents: Vec<(String, PermissionStatus)> = others
        .into_iter()
        .filter(|(_, _, dependencies)| {
            serde_json::from_str::<Vec<String>>(dependencies)
                .unwrap_or_default()
                .iter()
                .any(|dependency| dependency == name)
        })
        .map(|(dependent, status, _)| {
            let status = PermissionStatus::parse(&status).unwrap_or(PermissionStatus::Active);
            (dependent, status)
        })
        .collect();
    grants::archive(name, &dependents)?;
    let roles: Vec<(String,)> = sqlx::query_as(
        "SELECT r.name FROM role_permissions rp JOIN roles r ON r.id = rp.role_id \
         WHERE rp.permission_id = $1 ORDER BY r.rank",
    )
    .bind(id)
    .fetch_all(&mut **tx)
    .await?;
    sqlx::query("DELETE FROM role_permissions WHERE permission_id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await?;
    let users = sqlx::query("DELETE FROM user_permissions WHERE permission_id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    let roles: Vec<String> = roles.into_iter().map(|(role,)| role).collect();
    Ok(json!({"roles": roles, "users": users}))
}

/// A role's grants after they were replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleGrants {
    pub role: String,
    /// Names of the permissions the role now holds, by name.
    pub permissions: Vec<String>,
}

/// [`grant_to_role`] from a form that offers `role` only the permissions
/// whose grant gives it something ([`grants::gates`]): the `ticked` ones
/// (a name not offered is [`DomainError::Invalid`] on `permissions`), and
/// every grant the role holds that the form did not offer, kept as it is.
pub async fn grant_offered_to_role(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    role: &str,
    ticked: Vec<String>,
    reason: Option<String>,
) -> Result<RoleGrants, DomainError> {
    let offered = |name: &str| Role::parse(role).is_some_and(|role| grants::gates(role, name));
    if let Some(refused) = ticked.iter().find(|name| !offered(name)) {
        return Err(DomainError::Invalid {
            field: "permissions",
            reason: format!("{refused} is not one the role {role} is offered: it gives it nothing"),
        });
    }
    let held: Vec<(String,)> = sqlx::query_as(
        "SELECT p.name FROM role_permissions rp JOIN permissions p ON p.id = rp.permission_id \
         JOIN roles r ON r.id = rp.role_id WHERE r.name = $1 ORDER BY p.name",
    )
    .bind(role)
    .fetch_all(&mut **tx)
    .await?;
    let mut requested = ticked;
    for (name,) in held {
        if !offered(&name) && !requested.contains(&name) {
            requested.push(name);
        }
    }
    grant_to_role(tx, context, role, requested, reason).await
}

/// Replaces the grants of `role` with `requested` (distinct names) in
/// `tx`, audited as `role.permissions.update` with the lists before and
/// after. `super_admin`'s grants are fixed ([`grants::edit_grants_of`]:
/// [`DomainError::Forbidden`]); the list follows
/// [`grants::check_grant_list`] ([`DomainError::Invalid`] on
/// `permissions`).
pub async fn grant_to_role(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    role: &str,
    requested: Vec<String>,
    reason: Option<String>,
) -> Result<RoleGrants, DomainError> {
    let stored: Option<(i64,)> = sqlx::query_as("SELECT id FROM roles WHERE name = $1")
        .bind(role)
        .fetch_optional(&mut **tx)
        .await?;
    let (role_id,) = stored.ok_or(DomainError::NotFound("role"))?;
    let fixed = Role::parse(role).map_or(crate::policy::Decision::Allowed, grants::edit_grants_of);
    fixed.check(
        "role",
        "super_admin holds every capability; its grants cannot be changed",
    )?;
    let stored: Vec<(i64, String, String, String)> =
        sqlx::query_as("SELECT id, name, status, dependencies FROM permissions")
            .fetch_all(&mut **tx)
            .await?;
    let mut ids: HashMap<String, i64> = HashMap::with_capacity(stored.len());
    let mut catalog: HashMap<String, Grantable> = HashMap::with_capacity(stored.len());
    for (id, name, status, dependencies) in stored {
        ids.insert(name.clone(), id);
        catalog.insert(
            name,
            Grantable {
                status: PermissionStatus::parse(&status).unwrap_or(PermissionStatus::Archived),
                dependencies: serde_json::from_str(&dependencies).unwrap_or_default(),
            },
        );
    }
    grants::check_grant_list(&requested, &catalog)?;
    let before: Vec<(String,)> = sqlx::query_as(
        "SELECT p.name FROM role_permissions rp JOIN permissions p ON p.id = rp.permission_id \
         WHERE rp.role_id = $1 ORDER BY p.name",
    )
    .bind(role_id)
    .fetch_all(&mut **tx)
    .await?;
    let before: Vec<String> = before.into_iter().map(|(name,)| name).collect();
    sqlx::query("DELETE FROM role_permissions WHERE role_id = $1")
        .bind(role_id)
        .execute(&mut **tx)
        .await?;
    let mut after = requested;
    after.sort();
    if !after.is_empty() {
        let rows: Vec<String> = (0..after.len())
            .map(|index| format!("($1, ${})", index + 2))
            .collect();
        let statement = format!(
            "INSERT INTO role_permissions (role_id, permission_id) VALUES {}",
            rows.join(", ")
        );
        let mut insert = sqlx::query(&statement).bind(role_id);
        for name in &after {
            insert = insert.bind(ids[name]);
        }
        insert.execute(&mut **tx).await?;
    }
    let added: Vec<&String> = after.iter().filter(|name| !before.contains(name)).collect();
    let removed: Vec<&String> = before.iter().filter(|name| !after.contains(name)).collect();
    audit::record(
        tx,
        context,
        AuditAction {
            action: "role.permissions.update",
            target_type: "role",
            target_id: Some(role.to_owned()),
            changes: json!({
                "permissions": {"before": before, "after": after},
                "added": added,
                "removed": removed,
                "reason": reason,
            }),
        },
    )
    .await?;
    Ok(RoleGrants {
        role: role.to_owned(),
        permissions: after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_each_level_of_objects_and_arrays() {
        assert_eq!(json_depth(&json!(1)), 0);
        assert_eq!(json_depth(&json!({})), 1);
        assert_eq!(json_depth(&json!({"a": [1, {"b": {}}]})), 4);
        assert_eq!(json_depth(&json!([[[[[]]]]])), 5);
    }
}
