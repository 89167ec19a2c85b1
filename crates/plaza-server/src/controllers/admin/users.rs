//! `/api/admin/users`: the rich user list (SPEC.md "Unversioned admin
//! surface"), bans and unbans through the same domain rules as the
//! versioned surface, and the subscriptions the list summarises.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plaza_domain::audit::AuditAction;
use plaza_domain::bans::Ban;
use plaza_domain::listing::Page;
use plaza_domain::subscriptions::{
    self, NewSubscription, STATUSES, Subscription, SubscriptionChanges,
};
use plaza_domain::time::rfc3339;
use plaza_domain::{admin_users::DirectoryUser, users::User};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use crate::auth::{Administrator, ManageUsers, RequestAudit};
use crate::controllers::admin_v1::users::BanTerms;
use crate::controllers::params::{Problems, TextRule, check_text};
use crate::http::error::schema::AdminError;
use crate::http::error::{AppError, FieldError};
use crate::http::extract::json::OptionalJson;
use crate::http::extract::{AppJson, IdPath};
use crate::state::AppState;

/// SPEC.md "Limits": page size 20 by default, at most 100.
const DEFAULT_LIMIT: i64 = 20;
const MAX_LIMIT: i64 = 100;
/// Longest search text.
const MAX_SEARCH_CHARS: usize = 100;
/// Longest plan name.
const MAX_PLAN_CHARS: usize = 100;

/// One user (SPEC.md "User, admin list item (unversioned admin surface)");
/// its texts borrow from the page the database answered.
#[derive(Serialize, ToSchema)]
pub struct AdminListUser<'a> {
    pub id: i64,
    pub name: Option<&'a str>,
    pub email: &'a str,
    /// Avatar URL.
    pub image: Option<&'a str>,
    pub created_at: String,
    pub profile_public: bool,
    pub bio: &'a str,
    pub location: &'a str,
    /// Status `active` (not inactive, not banned).
    pub is_active: bool,
    pub admin_notes: Option<&'a str>,
    /// The identity provider of the linked account used most recently;
    /// `null` for users who sign in with a password only.
    pub provider_name: Option<&'a str>,
    pub provider_email: Option<&'a str>,
    pub provider_verified: bool,
    pub provider_last_used: Option<String>,
    pub last_login: Option<String>,
    pub login_count: i64,
    /// Users hold one role each, so 1.
    pub role_count: i64,
    pub role_names: Option<&'a str>,
    /// `admin` or `super_admin`.
    pub has_admin: bool,
    /// `moderator` or higher.
    pub has_moderator: bool,
    /// Active plus inactive.
    pub subscription_count: i64,
    /// Active and not past their end.
    pub active_subscriptions: i64,
    /// Plan names, comma-separated.
    pub subscription_names: Option<&'a str>,
    pub has_active_subscription: bool,
    /// A ban (timeout) is in force.
    pub is_timed_out: bool,
    /// Bans ever imposed, lifted ones included.
    pub timeout_count: i64,
    pub active_timeout_reason: Option<&'a str>,
    /// `null` for a permanent ban.
    pub timeout_expires: Option<String>,
    pub active_timeout_id: Option<i64>,
}

impl<'a> From<&'a DirectoryUser<'_>> for AdminListUser<'a> {
    fn from(user: &'a DirectoryUser<'_>) -> Self {
        AdminListUser {
            has_admin: user.has_admin(),
            has_moderator: user.has_moderator(),
            id: user.id,
            name: user.name.as_deref(),
            email: &user.email,
            image: user.image.as_deref(),
            created_at: rfc3339(user.created_at),
            profile_public: user.profile_public,
            bio: &user.bio,
            location: &user.location,
            is_active: user.is_active,
            admin_notes: user.admin_notes.as_deref(),
            provider_name: user.provider_name.as_deref(),
            provider_email: user.provider_email.as_deref(),
            provider_verified: user.provider_verified,
            provider_last_used: user.provider_last_used.map(rfc3339),
            last_login: user.last_login.map(rfc3339),
            login_count: user.login_count,
            role_count: 1,
            role_names: Some(&user.role),
            subscription_count: user.subscription_count,
            active_subscriptions: user.active_subscriptions,
            subscription_names: user.subscription_names.as_deref(),
            has_active_subscription: user.active_subscriptions > 0,
            is_timed_out: user.active_timeout_id.is_some(),
            timeout_count: user.timeout_count,
            active_timeout_reason: user.active_timeout_reason.as_deref(),
            timeout_expires: user.timeout_expires.map(rfc3339),
            active_timeout_id: user.active_timeout_id,
        }
    }
}

/// Where a page is in the list.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PagePosition {
    pub page: i64,
    pub limit: i64,
    pub total: i64,
    pub total_pages: i64,
    pub has_next: bool,
    pub has_prev: bool,
}

impl PagePosition {
    pub fn new(page: i64, limit: i64, total: i64) -> Self {
        let total_pages = (total + limit - 1) / limit;
        PagePosition {
            page,
            limit,
            total,
            total_pages,
            has_next: page < total_pages,
            has_prev: page > 1,
        }
    }
}

/// A page of the list.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminUserList<'a> {
    pub users: Vec<AdminListUser<'a>>,
    pub current_page: i64,
    pub total_pages: i64,
    pub pagination: PagePosition,
}

/// `page` and `limit` of the unversioned admin lists, each problem in the
/// issue shape SPEC.md's 400 body lists.
pub fn page_and_limit(
    problems: &mut Problems,
    page: Option<&str>,
    limit: Option<&str>,
) -> (i64, i64) {
    let mut number = |field: &str, raw: Option<&str>, default: i64, max: Option<i64>| {
        let Some(raw) = raw else {
            return default;
        };
        let raw = raw.trim();
        let expected = match max {
            Some(max) => format!("an integer from 1 to {max}"),
            None => "a positive integer".to_owned(),
        };
        let Ok(value) = raw.parse::<i64>() else {
            problems.push(
                FieldError::new(field, format!("must be {expected}, not {raw:?}")).with_kind(
                    "invalid_type",
                    "integer",
                    if raw.parse::<f64>().is_ok() {
                        "float"
                    } else {
                        "string"
                    },
                ),
            );
            return default;
        };
        if value < 1 {
            problems.push(
                FieldError::new(field, format!("must be {expected}, not {value}")).with_kind(
                    "too_small",
                    ">= 1",
                    raw,
                ),
            );
            return default;
        }
        if let Some(max) = max.filter(|max| value > *max) {
            problems.push(
                FieldError::new(field, format!("must be {expected}, not {value}")).with_kind(
                    "too_big",
                    format!("<= {max}"),
                    raw,
                ),
            );
            return default;
        }
        value
    };
    let page = number("page", page, 1, None);
    let limit = number("limit", limit, DEFAULT_LIMIT, Some(MAX_LIMIT));
    (page, limit)
}

/// The users matching `search`, newest first, each with their provider,
/// role, subscription and timeout summary. Every call is recorded in the
/// audit trail (`admin.users.list`).
#[utoipa::path(
    get,
    path = "/api/admin/users",
    operation_id = "admin_list_users",
    tag = "admin",
    params(
        ("page" = Option<u32>, Query, description = "A positive integer, default 1", minimum = 1),
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20", minimum = 1, maximum = 100),
        ("search" = Option<String>, Query, description = "Not empty, at most 100 characters: a part of the name, email or a linked provider's name, any case"),
    ),
    responses(
        (status = 200, description = "One page of users", body = AdminUserList<'static>),
        (status = 400, description = "`Invalid query parameters`; `details` lists each problem as `{code, expected, received, path, message}`", body = AdminError),
        (status = 500, description = "`Failed to fetch users`, with `details`", body = AdminError),
    )
)]
pub async fn list_users(
    State(state): State<AppState>,
    admin: Administrator<ManageUsers>,
    RequestAudit(context): RequestAudit,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    let (mut page, mut limit, mut search) = (None, None, None);
    for (key, value) in url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes()) {
        match key.as_ref() {
            "page" => page = Some(value.into_owned()),
            "limit" => limit = Some(value.into_owned()),
            "search" => search = Some(value.into_owned()),
            _ => {}
        }
    }
    let mut problems = Problems::default();
    let (page, limit) = page_and_limit(&mut problems, page.as_deref(), limit.as_deref());
    let search = search.map(|search| search.trim().to_owned());
    match &search {
        Some(text) if text.is_empty() => {
            problems.push(FieldError::new("search", "must not be empty").with_kind(
                "too_small",
                "at least 1 character",
                "",
            ))
        }
        Some(text) if text.chars().count() > MAX_SEARCH_CHARS => problems.push(
            FieldError::new("search", "must be at most 100 characters").with_kind(
                "too_big",
                "at most 100 characters",
                format!("{} characters", text.chars().count()),
            ),
        ),
        _ => {}
    }
    problems.finish()?;
    let directory = state
        .db
        .user_directory(
            search.as_deref(),
            Page {
                limit,
                offset: (page - 1).saturating_mul(limit),
            },
        )
        .await
        .map_err(|error| users_unavailable(error.into()))?;
    let users = directory
        .users()
        .map_err(|error| users_unavailable(error.into()))?;
    let returned = users.len();
    let actor_id = admin.actor.user_id;
    state
        .audit_reads
        .record(
            &state.db,
            context,
            AuditAction {
                action: "admin.users.list",
                target_type: "user",
                target_id: None,
                changes: json!({
                    "actor": actor_id, "page": page, "limit": limit,
                    "search": search, "returned": returned,
                }),
            },
        )
        .await
        .map_err(|error| users_unavailable(error.into()))?;
    let position = PagePosition::new(page, limit, directory.total);
    Ok(AppJson(AdminUserList {
        users: users.iter().map(AdminListUser::from).collect(),
        current_page: page,
        total_pages: position.total_pages,
        pagination: position,
    })
    .into_response())
}

/// A failure of the list as SPEC.md names it: 500 `Failed to fetch users`
/// (a database that is down stays 503).
fn users_unavailable(error: AppError) -> AppError {
    match error {
        AppError::Internal(cause) => {
            tracing::error!(%cause, "the admin user list failed");
            AppError::Titled {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                title: "Failed to fetch users",
                details: "the user list could not be read".to_owned(),
            }
        }
        other => other,
    }
}

/// Terms of a ban.
#[derive(Deserialize, ToSchema)]
pub struct AdminBanBody {
    /// Why (required, at most 1000 characters).
    pub reason: Option<String>,
    /// A number and a unit of `m`, `h`, `d`, `w`, `y`, or `permanent` (the
    /// default).
    #[schema(example = "7d")]
    pub duration: Option<String>,
    pub notes: Option<String>,
}

/// Why a ban is lifted.
#[derive(Deserialize, ToSchema, Default)]
pub struct AdminUnbanBody {
    pub reason: Option<String>,
}

/// A ban as the unversioned surface writes it.
#[derive(Serialize, ToSchema)]
pub struct BanSummary {
    pub id: i64,
    pub reason: String,
    pub created_at: String,
    /// `null`: permanent.
    pub expires_at: Option<String>,
}

impl From<Ban> for BanSummary {
    fn from(ban: Ban) -> Self {
        BanSummary {
            id: ban.id,
            reason: ban.reason,
            created_at: rfc3339(ban.created_at),
            expires_at: ban.expires_at.map(rfc3339),
        }
    }
}

/// The user a ban or unban changed.
#[derive(Serialize, ToSchema)]
pub struct BannedUser {
    pub id: i64,
    pub email: String,
    /// `banned` or `active`.
    pub status: String,
}

impl From<&User> for BannedUser {
    fn from(user: &User) -> Self {
        BannedUser {
            id: user.id(),
            email: user.row.email.clone(),
            status: user.status.as_str().to_owned(),
        }
    }
}

/// The answer of a ban or unban.
#[derive(Serialize, ToSchema)]
pub struct BanOutcome {
    pub success: bool,
    pub message: String,
    pub user: BannedUser,
    /// The ban imposed, or the ban lifted (`null` when the status came
    /// without a ban record).
    pub ban: Option<BanSummary>,
}

/// Ban a user: the same rules and records as the versioned surface's ban
/// (sessions end, admin tokens stop working, audited as `user.ban`).
#[utoipa::path(
    post,
    path = "/api/admin/users/{id}/ban",
    operation_id = "admin_ban_user",
    tag = "admin",
    params(("id" = i64, Path, description = "User id")),
    request_body = AdminBanBody,
    responses(
        (status = 200, description = "The user is banned", body = BanOutcome),
        (status = 400, description = "A missing reason, or a bad duration or notes; `details` lists each", body = AdminError),
        (status = 403, description = "Nobody bans themself or a super admin; an admin bans only users of a lower role", body = AdminError),
        (status = 404, description = "No such user", body = AdminError),
        (status = 423, description = "Another admin is changing this user", body = AdminError),
    )
)]
pub async fn ban_user(
    State(state): State<AppState>,
    admin: Administrator<ManageUsers>,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<AdminBanBody>,
) -> Result<AppJson<BanOutcome>, AppError> {
    let mut problems = Problems::default();
    let terms = BanTerms::check(
        &mut problems,
        body.reason,
        body.duration.as_deref(),
        body.notes,
        true,
    );
    problems.finish()?;
    let (user, ban) = state
        .user_admin()
        .ban_user(context, admin.actor, id, terms.order())
        .await?;
    Ok(AppJson(BanOutcome {
        success: true,
        message: "user banned".to_owned(),
        user: BannedUser::from(&user),
        ban: Some(BanSummary::from(ban)),
    }))
}

/// Lift a user's ban (audited as `user.unban`).
#[utoipa::path(
    post,
    path = "/api/admin/users/{id}/unban",
    operation_id = "admin_unban_user",
    tag = "admin",
    params(("id" = i64, Path, description = "User id")),
    request_body(content = Option<AdminUnbanBody>, description = "Optional: why"),
    responses(
        (status = 200, description = "The user is active again", body = BanOutcome),
        (status = 400, description = "A bad reason", body = AdminError),
        (status = 403, description = "The policy that guards bans forbids it", body = AdminError),
        (status = 404, description = "No such user", body = AdminError),
        (status = 409, description = "The user is not banned", body = AdminError),
        (status = 423, description = "Another admin is changing this user", body = AdminError),
    )
)]
pub async fn unban_user(
    State(state): State<AppState>,
    admin: Administrator<ManageUsers>,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    OptionalJson(body): OptionalJson<AdminUnbanBody>,
) -> Result<AppJson<BanOutcome>, AppError> {
    let body = body.unwrap_or_default();
    let mut problems = Problems::default();
    let terms = BanTerms::check(&mut problems, body.reason, None, None, false);
    problems.finish()?;
    let (user, lifted) = state
        .user_admin()
        .unban_user(context, admin.actor, id, terms.reason)
        .await?;
    Ok(AppJson(BanOutcome {
        success: true,
        message: "user unbanned".to_owned(),
        user: BannedUser::from(&user),
        ban: lifted.map(BanSummary::from),
    }))
}

/// A subscription to add.
#[derive(Deserialize, ToSchema)]
pub struct NewSubscriptionBody {
    /// 1 to 100 characters.
    pub plan_name: String,
    /// `active` (default) or `inactive`.
    pub status: Option<String>,
    /// RFC 3339; default now.
    pub started_at: Option<String>,
    /// RFC 3339, after `started_at`; none: open-ended.
    pub ends_at: Option<String>,
}

/// Changes to a subscription; at least one field.
#[derive(Deserialize, ToSchema)]
pub struct SubscriptionChangesBody {
    pub plan_name: Option<String>,
    pub status: Option<String>,
    /// RFC 3339, or `null` to make it open-ended.
    #[serde(default, deserialize_with = "crate::controllers::users::double_option")]
    #[schema(value_type = Option<String>)]
    pub ends_at: Option<Option<String>>,
}

/// A subscription.
#[derive(Serialize, ToSchema)]
pub struct SubscriptionView {
    pub id: i64,
    pub user_id: i64,
    pub plan_name: String,
    /// As stored: `active` or `inactive`.
    pub status: String,
    /// Active now: stored as active and not past its end.
    pub is_active: bool,
    pub started_at: String,
    pub ends_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Subscription> for SubscriptionView {
    fn from(subscription: Subscription) -> Self {
        SubscriptionView {
            is_active: subscription.is_active_at(plaza_domain::time::now_millis()),
            id: subscription.id,
            user_id: subscription.user_id,
            plan_name: subscription.plan_name,
            status: subscription.status,
            started_at: rfc3339(subscription.started_at),
            ends_at: subscription.ends_at.map(rfc3339),
            created_at: rfc3339(subscription.created_at),
            updated_at: rfc3339(subscription.updated_at),
        }
    }
}

/// The answer of a subscription change.
#[derive(Serialize, ToSchema)]
pub struct SubscriptionOutcome {
    pub success: bool,
    pub subscription: SubscriptionView,
}

fn check_status(problems: &mut Problems, raw: &str) -> Option<&'static str> {
    problems.check(
        "status",
        STATUSES
            .into_iter()
            .find(|status| *status == raw)
            .ok_or_else(|| "must be active or inactive".to_owned()),
    )
}

fn check_plan(problems: &mut Problems, raw: &str) -> String {
    let plan = raw.trim().to_owned();
    problems.check(
        "plan_name",
        check_text(&plan, MAX_PLAN_CHARS, true, TextRule::Line),
    );
    plan
}

fn check_time(problems: &mut Problems, field: &str, raw: &str) -> Option<i64> {
    problems.check(
        field,
        time::OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc3339)
            .map(plaza_domain::time::to_millis)
            .map_err(|_| "must be an RFC 3339 time such as 2026-01-31T12:00:00Z".to_owned()),
    )
}

/// Add a subscription to a user (audited as `subscription.create`); the
/// user list counts it at once.
#[utoipa::path(
    post,
    path = "/api/admin/users/{id}/subscriptions",
    tag = "admin",
    params(("id" = i64, Path, description = "User id")),
    request_body = NewSubscriptionBody,
    responses(
        (status = 201, description = "The subscription", body = SubscriptionOutcome),
        (status = 400, description = "A bad field; `details` lists each", body = AdminError),
        (status = 404, description = "No such user", body = AdminError),
        (status = 409, description = "It would end before it starts", body = AdminError),
    )
)]
pub async fn create_subscription(
    State(state): State<AppState>,
    _admin: Administrator<ManageUsers>,
    RequestAudit(context): RequestAudit,
    IdPath(user_id): IdPath,
    AppJson(body): AppJson<NewSubscriptionBody>,
) -> Result<(StatusCode, AppJson<SubscriptionOutcome>), AppError> {
    let mut problems = Problems::default();
    let plan_name = check_plan(&mut problems, &body.plan_name);
    let status = match body.status.as_deref() {
        Some(raw) => check_status(&mut problems, raw),
        None => Some("active"),
    };
    let started_at = body
        .started_at
        .as_deref()
        .and_then(|raw| check_time(&mut problems, "started_at", raw));
    let ends_at = body
        .ends_at
        .as_deref()
        .and_then(|raw| check_time(&mut problems, "ends_at", raw));
    problems.finish()?;
    let new = NewSubscription {
        user_id,
        plan_name,
        status: status.unwrap_or("active"),
        started_at,
        ends_at,
    };
    let subscription = state
        .db
        .write(move |tx| Box::pin(async move { subscriptions::create(tx, &context, new).await }))
        .await?;
    Ok((
        StatusCode::CREATED,
        AppJson(SubscriptionOutcome {
            success: true,
            subscription: subscription.into(),
        }),
    ))
}

/// Change a subscription's plan, status or end (audited as
/// `subscription.update`).
#[utoipa::path(
    put,
    path = "/api/admin/subscriptions/{id}",
    tag = "admin",
    params(("id" = i64, Path, description = "Subscription id")),
    request_body = SubscriptionChangesBody,
    responses(
        (status = 200, description = "The subscription after the change", body = SubscriptionOutcome),
        (status = 400, description = "No change, or a bad field; `details` lists each", body = AdminError),
        (status = 404, description = "No such subscription", body = AdminError),
        (status = 409, description = "It would end before it starts", body = AdminError),
    )
)]
pub async fn update_subscription(
    State(state): State<AppState>,
    _admin: Administrator<ManageUsers>,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<SubscriptionChangesBody>,
) -> Result<AppJson<SubscriptionOutcome>, AppError> {
    let mut problems = Problems::default();
    let changes = SubscriptionChanges {
        plan_name: body
            .plan_name
            .as_deref()
            .map(|raw| check_plan(&mut problems, raw)),
        status: body
            .status
            .as_deref()
            .and_then(|raw| check_status(&mut problems, raw)),
        ends_at: body
            .ends_at
            .map(|ends_at| ends_at.and_then(|raw| check_time(&mut problems, "ends_at", &raw))),
    };
    if changes.plan_name.is_none() && changes.status.is_none() && changes.ends_at.is_none() {
        problems.add("body", "change at least one of plan_name, status, ends_at");
    }
    problems.finish()?;
    let subscription = state
        .db
        .write(move |tx| {
            Box::pin(async move { subscriptions::update(tx, &context, id, changes).await })
        })
        .await?;
    Ok(AppJson(SubscriptionOutcome {
        success: true,
        subscription: subscription.into(),
    }))
}
