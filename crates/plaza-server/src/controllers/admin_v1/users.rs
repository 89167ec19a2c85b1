//! `/api/v1/admin/users`: the user list and detail, updates, bans and bulk
//! updates. Every change is made by [`crate::services::user_admin`], as the
//! other admin surfaces make it.

use axum::extract::State;
use plaza_domain::bans::{Ban, BanLength, BanOrder};
use plaza_domain::policy::Actor;
use plaza_domain::users::{Activity, Role, User, UserQuery, UserSort, UserStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::envelope::{Envelope, ListEnvelope};
use super::listing::{ListQuery, Listing};
use crate::auth::{AdminToken, RequestAudit};
use crate::controllers::params::{self, Pagination, Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::services::user_admin::Changes;
use crate::state::AppState;
use plaza_domain::time::rfc3339;

/// Most users one bulk update may name (the console's bulk actions too).
pub const MAX_BULK_USERS: usize = 100;
/// Most characters of a ban reason or of admin notes.
const MAX_REASON_CHARS: usize = 1000;
const MAX_NOTES_CHARS: usize = 5000;
/// Most characters of a user search.
const MAX_SEARCH_CHARS: usize = 100;
/// How much history the detail shows.
const DETAIL_ITEMS: i64 = 20;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AdminUserQuery {
    /// `all` (default), `active`, `inactive` or `banned`.
    pub status: Option<String>,
    /// `all` (default), `user`, `moderator`, `admin` or `super_admin`.
    pub role: Option<String>,
    /// Part of the username or email, at most 100 characters.
    pub search: Option<String>,
}

/// A user as the versioned admin surface lists them (SPEC.md).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminUserItem {
    #[schema(example = "42")]
    pub id: String,
    pub username: String,
    pub email: String,
    /// `active`, `inactive` or `banned`.
    pub status: String,
    /// `user`, `moderator`, `admin` or `super_admin`.
    pub role: String,
    pub created_at: String,
    /// Absent when the user never signed in.
    pub last_login_at: Option<String>,
    pub post_count: i64,
    pub is_verified: bool,
    /// A bot: an account a program drives with its tokens.
    pub is_bot: bool,
}

impl AdminUserItem {
    fn new(user: &User, post_count: i64) -> Self {
        AdminUserItem {
            id: user.id().to_string(),
            username: user.row.username.clone(),
            email: user.row.email.clone(),
            status: user.status.as_str().to_owned(),
            role: user.role.as_str().to_owned(),
            created_at: rfc3339(user.row.created_at),
            last_login_at: user.row.last_login_at.map(rfc3339),
            post_count,
            is_verified: user.row.email_verified_at.is_some(),
            is_bot: user.row.is_bot.0,
        }
    }
}

/// One user in full: the list item plus the admins' notes, roles, recent
/// activity and ban history (DECISIONS.md).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminUserDetail {
    #[serde(flatten)]
    pub user: AdminUserItem,
    pub notes: Option<String>,
    /// The roles the user holds (Plaza gives each user one).
    pub roles: Vec<String>,
    /// Latest sign-ins, posts and reports made, newest first.
    pub recent_activity: Vec<ActivityItem>,
    /// Bans, newest first, in force or lifted.
    pub ban_history: Vec<BanItem>,
    /// Warnings that count (an appeal may withdraw one).
    pub warning_count: i64,
    /// When the silence in force ends (RFC 3339), `permanent` for one
    /// until lifted; null when not silenced.
    pub silenced_until: Option<String>,
    /// The id of the user whose invite they signed up with; null without
    /// one, or once the inviter's account is deleted.
    #[schema(example = "1")]
    pub invited_by: Option<String>,
}

/// Something the user did lately.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityItem {
    /// `sign_in`, `post` or `report`.
    #[serde(rename = "type")]
    pub kind: String,
    pub at: String,
    /// The post's title, the report's reason, the sign-in's address.
    pub detail: Option<String>,
    pub post_id: Option<String>,
}

impl From<Activity> for ActivityItem {
    fn from(activity: Activity) -> Self {
        ActivityItem {
            kind: activity.kind,
            at: rfc3339(activity.at),
            detail: activity.detail,
            post_id: activity.post_id.map(|id| id.to_string()),
        }
    }
}

/// A ban, in force or lifted.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BanItem {
    pub id: String,
    pub reason: String,
    pub notes: Option<String>,
    pub banned_by: Option<String>,
    pub banned_at: String,
    /// Absent for a permanent ban.
    pub expires_at: Option<String>,
    /// Whether it still holds.
    pub active: bool,
    pub lifted_at: Option<String>,
    /// Absent when it expired by itself.
    pub lifted_by: Option<String>,
    /// `expired`, `superseded by a new ban`, or the unbanning admin's reason.
    pub lift_reason: Option<String>,
}

impl From<Ban> for BanItem {
    fn from(ban: Ban) -> Self {
        BanItem {
            id: ban.id.to_string(),
            reason: ban.reason,
            notes: ban.notes,
            banned_by: ban.banned_by.map(|id| id.to_string()),
            banned_at: rfc3339(ban.created_at),
            expires_at: ban.expires_at.map(rfc3339),
            active: ban.lifted_at.is_none(),
            lifted_at: ban.lifted_at.map(rfc3339),
            lifted_by: ban.lifted_by.map(|id| id.to_string()),
            lift_reason: ban.lift_reason,
        }
    }
}

/// List users with filters, search, sorting and paging.
#[utoipa::path(
    get,
    path = "/api/v1/admin/users",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(AdminUserQuery, ListQuery<UserSort>),
    responses(
        (status = 200, description = "A page of users", body = ListEnvelope<AdminUserItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "A filter, sort, order, limit or offset is invalid", body = AdminV1Error),
    )
)]
pub async fn list_admin_users(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<AdminUserQuery>,
    AppQuery(list): AppQuery<ListQuery<UserSort>>,
) -> Result<AppJson<ListEnvelope<AdminUserItem>>, AppError> {
    let mut problems = Problems::default();
    let status = params::filter(
        &mut problems,
        "status",
        query.status.as_deref(),
        UserStatus::parse,
        "active, inactive or banned",
    );
    let role = params::filter(
        &mut problems,
        "role",
        query.role.as_deref(),
        Role::parse,
        "user, moderator, admin or super_admin",
    );
    let search = query
        .search
        .map(|search| search.trim().to_owned())
        .filter(|search| !search.is_empty());
    if let Some(search) = &search {
        problems.check(
            "search",
            check_text(search, MAX_SEARCH_CHARS, false, TextRule::Line),
        );
    }
    let Listing { page, sort, order } = list.check(&mut problems);
    problems.finish()?;
    let filter = UserQuery {
        role,
        status,
        search,
        sort,
        order,
    };
    let found = state.db.admin_user_page(&filter, page).await?;
    let items = found
        .users
        .iter()
        .map(|(user, post_count)| AdminUserItem::new(user, *post_count))
        .collect();
    Ok(AppJson(ListEnvelope::new(
        items,
        Pagination::new(found.total, page),
    )))
}

/// One user with their notes, recent activity and ban history.
#[utoipa::path(
    get,
    path = "/api/v1/admin/users/{userId}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(("userId" = String, Path, description = "User id (digits)", example = "2")),
    responses(
        (status = 200, description = "The user", body = Envelope<AdminUserDetail>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No such user", body = AdminV1Error),
    )
)]
pub async fn get_admin_user(
    State(state): State<AppState>,
    _admin: AdminToken,
    IdPath(id): IdPath,
) -> Result<AppJson<Envelope<AdminUserDetail>>, AppError> {
    let user = state.db.user_by_id(id).await?;
    Ok(AppJson(Envelope::new(detail(&state, &user).await?)))
}

pub async fn detail(state: &AppState, user: &User) -> Result<AdminUserDetail, AppError> {
    let id = user.id();
    let post_count = state
        .db
        .post_counts(&[id])
        .await?
        .get(&id)
        .copied()
        .unwrap_or(0);
    let activity = state.db.recent_activity(id, DETAIL_ITEMS).await?;
    let bans = state.db.ban_history(id, DETAIL_ITEMS).await?;
    let invited_by = state.db.inviter_of(id).await?;
    Ok(AdminUserDetail {
        invited_by: invited_by.map(|inviter| inviter.to_string()),
        user: AdminUserItem::new(user, post_count),
        notes: user.row.admin_notes.clone(),
        roles: vec![user.role.as_str().to_owned()],
        recent_activity: activity.into_iter().map(ActivityItem::from).collect(),
        ban_history: bans.into_iter().map(BanItem::from).collect(),
        warning_count: state.db.warning_count(id).await?,
        silenced_until: state
            .db
            .silenced_until(id, plaza_domain::time::now_millis())
            .await?
            .map(|until| until.map_or_else(|| "permanent".to_owned(), rfc3339)),
    })
}

/// Changes to a user; absent fields stay as they are.
#[derive(Deserialize, ToSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct AdminUserUpdate {
    /// `active`, `inactive` or `banned` (banning this way is permanent,
    /// with the reason "banned by status change"; `POST …/ban` takes a
    /// reason and a duration).
    pub status: Option<String>,
    /// `user`, `moderator` or `admin`, up to the admin's own role.
    pub role: Option<String>,
    /// Marks the email verified or not.
    pub is_verified: Option<bool>,
    /// The admins' private notes (at most 5000 characters); empty clears.
    pub notes: Option<String>,
    /// Marks the account a bot (shown as `is_bot` wherever it is an
    /// author) or not.
    pub is_bot: Option<bool>,
}

/// Checks the status and role of `body`, recording each problem.
pub fn checked_update(body: &AdminUserUpdate, problems: &mut Problems) -> Changes {
    let status = body.status.as_deref().and_then(|raw| {
        problems.check(
            "status",
            UserStatus::parse(raw).ok_or_else(|| "must be active, inactive or banned".to_owned()),
        )
    });
    let role = body.role.as_deref().and_then(|raw| {
        problems.check(
            "role",
            Role::parse(raw)
                .filter(|role| *role != Role::SuperAdmin)
                .ok_or_else(|| "must be user, moderator or admin".to_owned()),
        )
    });
    Changes {
        status,
        role,
        is_verified: body.is_verified,
        is_bot: body.is_bot,
    }
}

/// Update a user's status, role, verification and notes.
#[utoipa::path(
    put,
    path = "/api/v1/admin/users/{userId}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    params(("userId" = String, Path, description = "User id (digits)", example = "2")),
    request_body = AdminUserUpdate,
    responses(
        (status = 200, description = "The updated user", body = Envelope<AdminUserDetail>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:write`, or the policy forbids this change (an admin changes only users of a lower role, never themselves, and grants at most their own role; nobody bans a super admin)", body = AdminV1Error),
        (status = 404, description = "No such user", body = AdminV1Error),
        (status = 422, description = "A field is invalid, or nothing would change", body = AdminV1Error),
        (status = 423, description = "Another admin is changing this user (`RESOURCE_LOCKED`)", body = AdminV1Error),
    )
)]
pub async fn update_admin_user(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<AdminUserUpdate>,
) -> Result<AppJson<Envelope<AdminUserDetail>>, AppError> {
    let mut problems = Problems::default();
    if body.status.is_none()
        && body.role.is_none()
        && body.is_verified.is_none()
        && body.notes.is_none()
        && body.is_bot.is_none()
    {
        problems.add(
            "body",
            "must change at least one of status, role, isVerified, notes, isBot",
        );
    }
    let changes = checked_update(&body, &mut problems);
    if let Some(notes) = &body.notes {
        problems.check(
            "notes",
            check_text(notes, MAX_NOTES_CHARS, false, TextRule::Lines),
        );
    }
    problems.finish()?;
    let notes = body
        .notes
        .map(|notes| Some(notes).filter(|notes| !notes.trim().is_empty()));
    let user = state
        .user_admin()
        .update_user(context, actor(&admin), id, changes, notes)
        .await?;
    Ok(AppJson(Envelope::new(detail(&state, &user).await?)))
}

fn actor(admin: &AdminToken) -> Actor {
    Actor {
        user_id: admin.user_id,
        role: admin.role,
    }
}

/// The checked terms of a ban or unban, as both admin surfaces take them.
#[derive(Clone)]
pub struct BanTerms {
    /// Trimmed; `None` when empty.
    pub reason: Option<String>,
    pub notes: Option<String>,
    pub length: BanLength,
}

impl BanTerms {
    /// Checks `reason` (required when `banning`, at most 1000 characters),
    /// `duration` (DECISIONS.md's units, default permanent) and `notes`,
    /// recording each problem.
    pub fn check(
        problems: &mut Problems,
        reason: Option<String>,
        duration: Option<&str>,
        notes: Option<String>,
        banning: bool,
    ) -> BanTerms {
        let reason = reason
            .map(|reason| reason.trim().to_owned())
            .filter(|reason| !reason.is_empty());
        match &reason {
            Some(reason) => {
                problems.check(
                    "reason",
                    check_text(reason, MAX_REASON_CHARS, false, TextRule::Lines),
                );
            }
            None if banning => problems.add("reason", "is required to ban"),
            None => {}
        }
        let length = match duration {
            None => BanLength::Permanent,
            Some(raw) => problems
                .check(
                    "duration",
                    BanLength::parse(raw).ok_or_else(|| {
                        "must be a number and a unit of m, h, d, w or y (at most 100 years), or permanent"
                            .to_owned()
                    }),
                )
                .unwrap_or(BanLength::Permanent),
        };
        if let Some(notes) = &notes {
            problems.check(
                "notes",
                check_text(notes, MAX_NOTES_CHARS, false, TextRule::Lines),
            );
        }
        BanTerms {
            reason,
            notes: notes.filter(|notes| !notes.trim().is_empty()),
            length,
        }
    }

    /// The order to ban with.
    pub fn order(self) -> BanOrder {
        BanOrder {
            reason: self.reason.unwrap_or_default(),
            notes: self.notes,
            length: self.length,
        }
    }
}

/// Ban or unban.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BanBody {
    /// `ban` or `unban`.
    pub action: String,
    /// Why (required to ban, at most 1000 characters).
    pub reason: Option<String>,
    /// A number and a unit of `m`, `h`, `d`, `w`, `y`, or `permanent`
    /// (the default).
    #[schema(example = "7d")]
    pub duration: Option<String>,
    /// The admins' notes on this ban.
    pub notes: Option<String>,
}

/// Ban a user for a time (or for good), or lift their ban. A ban ends every
/// session of the user and revokes every admin token they hold.
#[utoipa::path(
    post,
    path = "/api/v1/admin/users/{userId}/ban",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    params(("userId" = String, Path, description = "User id (digits)", example = "2")),
    request_body = BanBody,
    responses(
        (status = 200, description = "The user after the ban or unban", body = Envelope<AdminUserDetail>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:write`, or the policy forbids it (nobody bans themself or a super admin; an admin bans only users of a lower role)", body = AdminV1Error),
        (status = 404, description = "No such user", body = AdminV1Error),
        (status = 409, description = "Unbanning a user who is not banned", body = AdminV1Error),
        (status = 422, description = "Unknown action, a missing reason, or a bad duration", body = AdminV1Error),
        (status = 423, description = "Another admin is changing this user (`RESOURCE_LOCKED`)", body = AdminV1Error),
    )
)]
pub async fn ban_admin_user(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<BanBody>,
) -> Result<AppJson<Envelope<AdminUserDetail>>, AppError> {
    let mut problems = Problems::default();
    let banning = match body.action.as_str() {
        "ban" => Some(true),
        "unban" => Some(false),
        _ => {
            problems.add("action", "must be ban or unban");
            None
        }
    };
    let terms = BanTerms::check(
        &mut problems,
        body.reason,
        body.duration.as_deref(),
        body.notes,
        banning == Some(true),
    );
    problems.finish()?;
    let banning = banning.unwrap_or_default();
    let actor = actor(&admin);
    let user = if banning {
        state
            .user_admin()
            .ban_user(context, actor, id, terms.order())
            .await?
            .0
    } else {
        state
            .user_admin()
            .unban_user(context, actor, id, terms.reason)
            .await?
            .0
    };
    Ok(AppJson(Envelope::new(detail(&state, &user).await?)))
}

/// The same changes for several users (DECISIONS.md).
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkUpdateBody {
    /// 1 to 100 user ids, as strings or numbers.
    #[schema(value_type = Vec<String>)]
    pub user_ids: Vec<Value>,
    pub updates: BulkChanges,
}

/// What a bulk update changes; at least one field.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkChanges {
    /// `active`, `inactive` or `banned`.
    pub status: Option<String>,
    /// `user`, `moderator` or `admin`.
    pub role: Option<String>,
    pub is_verified: Option<bool>,
}

/// The outcome for each user of a bulk update.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkResult {
    /// How many users were updated.
    pub updated: usize,
    /// How many were not.
    pub failed: usize,
    pub results: Vec<BulkUserResult>,
}

/// One user's outcome.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkUserResult {
    pub user_id: String,
    pub success: bool,
    /// Why not: `{code, message}` as the surface's errors have them.
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
}

/// Apply the same status, role or verification change to several users.
/// Each user is its own unit of work (with its own audit entry): one
/// refusal does not undo the others, and the answer says who was changed.
#[utoipa::path(
    post,
    path = "/api/v1/admin/users/bulk-update",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    request_body = BulkUpdateBody,
    responses(
        (status = 200, description = "Per-user results", body = Envelope<BulkResult>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:write`", body = AdminV1Error),
        (status = 422, description = "No or too many ids, an id that is not one, or no valid change", body = AdminV1Error),
    )
)]
pub async fn bulk_update_users(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    AppJson(body): AppJson<BulkUpdateBody>,
) -> Result<AppJson<Envelope<BulkResult>>, AppError> {
    let mut problems = Problems::default();
    if body.user_ids.is_empty() || body.user_ids.len() > MAX_BULK_USERS {
        problems.add(
            "userIds",
            format!("must hold 1 to {MAX_BULK_USERS} user ids"),
        );
    }
    let mut ids = Vec::with_capacity(body.user_ids.len());
    for raw in &body.user_ids {
        let id = match raw {
            Value::String(text) => crate::http::extract::parse_id(text),
            Value::Number(number) => number.as_i64().filter(|id| *id > 0),
            _ => None,
        };
        match id {
            Some(id) if !ids.contains(&id) => ids.push(id),
            Some(_) => {}
            None => {
                problems.add("userIds", "must be user ids (positive whole numbers)");
                break;
            }
        }
    }
    let updates = AdminUserUpdate {
        status: body.updates.status,
        role: body.updates.role,
        is_verified: body.updates.is_verified,
        notes: None,
        is_bot: None,
    };
    if updates.status.is_none() && updates.role.is_none() && updates.is_verified.is_none() {
        problems.add(
            "updates",
            "must change at least one of status, role, isVerified",
        );
    }
    let changes = checked_update(&updates, &mut problems);
    problems.finish()?;
    let actor = actor(&admin);
    let mut results = Vec::with_capacity(ids.len());
    for id in ids {
        let outcome = state
            .user_admin()
            .update_user(context.clone(), actor, id, changes, None)
            .await;
        // Earlier users may be committed already, so a failure is this
        // user's result, not the whole answer: the answer stays true.
        results.push(match outcome {
            Ok(_) => BulkUserResult {
                user_id: id.to_string(),
                success: true,
                error: None,
            },
            Err(failure) => {
                let error = AppError::from(failure);
                if let AppError::Internal(cause) = &error {
                    tracing::error!(user_id = id, %cause, "bulk update failed for a user");
                }
                BulkUserResult {
                    user_id: id.to_string(),
                    success: false,
                    error: Some(serde_json::json!({"code": error.code(), "message": error.public_message()})),
                }
            }
        });
    }
    let updated = results.iter().filter(|result| result.success).count();
    Ok(AppJson(Envelope::new(BulkResult {
        updated,
        failed: results.len() - updated,
        results,
    })))
}
