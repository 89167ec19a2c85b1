//! The console's users: the list with search and filters, a user's page
//! (details, recent activity, ban history, and the warnings and silence of
//! [`super::discipline`], which moderators see too), the ban, unban and
//! role forms, and the bulk ban or unban of the users ticked on the list,
//! for administrators holding `users:manage`. A ban, an unban and a role change
//! are the units of work the admin APIs run ([`crate::services::user_admin`]:
//! under the user's edit lock, audited as `user.ban`, `user.unban` and
//! `user.update`); a ban ends the user's sessions and admin tokens at once.
//! A bulk action is one such unit of work per user, as the API's
//! bulk update: a refusal leaves the others done, and the answer lists
//! each user's outcome.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::grants;
use plaza_domain::listing::{Page, SortOrder};
use plaza_domain::policy::{self, Actor};
use plaza_domain::time::rfc3339;
use plaza_domain::users::{Role, UserQuery, UserSort, UserStatus};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::discipline;
use super::page::{ConsoleUser, form_field, page, page_number};
use crate::auth::{RequestAudit, authorize};
use crate::controllers::admin_v1::users::{
    AdminUserUpdate, BanTerms, MAX_BULK_USERS, checked_update,
};
use crate::controllers::params::{Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery, IdPath, parse_id};
use crate::state::AppState;

/// Users per page of the list.
const PAGE_SIZE: i64 = 25;
/// Longest search text.
const MAX_SEARCH_CHARS: usize = 100;
/// Activity items and bans shown on a user's page.
const DETAIL_ITEMS: i64 = 20;
/// The ban lengths the forms offer.
const DURATIONS: [&str; 5] = ["1h", "1d", "7d", "30d", "permanent"];

#[derive(Deserialize)]
pub struct ListQuery {
    search: Option<String>,
    role: Option<String>,
    status: Option<String>,
    page: Option<String>,
}

#[derive(Serialize)]
struct ListedUser {
    id: i64,
    username: String,
    email: String,
    role: String,
    status: String,
    posts: i64,
    joined: String,
}

/// `GET /admin/users`: one page of users, newest first.
pub async fn list(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    user.require_administrator(Some(grants::MANAGE_USERS), "user")?;
    let mut problems = Problems::default();
    let blank = |value: Option<String>| value.filter(|value| !value.trim().is_empty());
    let search = blank(query.search).map(|search| search.trim().to_owned());
    if let Some(search) = &search {
        problems.check(
            "search",
            check_text(search, MAX_SEARCH_CHARS, false, TextRule::Line),
        );
    }
    let role = blank(query.role).and_then(|raw| {
        problems.check(
            "role",
            Role::parse(&raw)
                .ok_or_else(|| "must be user, moderator, admin or super_admin".to_owned()),
        )
    });
    let status = blank(query.status).and_then(|raw| {
        problems.check(
            "status",
            UserStatus::parse(&raw).ok_or_else(|| "must be active, inactive or banned".to_owned()),
        )
    });
    let page_number = page_number(&mut problems, query.page.as_deref());
    problems.finish()?;
    let filter = UserQuery {
        role,
        status,
        search: search.clone(),
        sort: UserSort::CreatedAt,
        order: SortOrder::Desc,
    };
    let found = state
        .db
        .admin_user_page(
            &filter,
            Page {
                limit: PAGE_SIZE,
                offset: (page_number - 1) * PAGE_SIZE,
            },
        )
        .await?;
    let users: Vec<ListedUser> = found
        .users
        .iter()
        .map(|(listed, post_count)| ListedUser {
            id: listed.id(),
            username: listed.row.username.clone(),
            email: listed.row.email.clone(),
            role: listed.row.role.clone(),
            status: listed.row.status.clone(),
            posts: *post_count,
            joined: rfc3339(listed.row.created_at),
        })
        .collect();
    let query_string = |number: i64| {
        let mut pairs = url::form_urlencoded::Serializer::new(String::new());
        if let Some(search) = &search {
            pairs.append_pair("search", search);
        }
        if let Some(role) = role {
            pairs.append_pair("role", role.as_str());
        }
        if let Some(status) = status {
            pairs.append_pair("status", status.as_str());
        }
        pairs.append_pair("page", &number.to_string());
        pairs.finish()
    };
    page(
        &state,
        &user,
        "users",
        "users.html",
        json!({
            "users": users,
            "total": found.total,
            "search": search.as_deref().unwrap_or_default(),
            "role": role.map(Role::as_str).unwrap_or_default(),
            "status": status.map(UserStatus::as_str).unwrap_or_default(),
            "roles": ["user", "moderator", "admin", "super_admin"],
            "statuses": ["active", "inactive", "banned"],
            "durations": DURATIONS,
            "bulk_limit": MAX_BULK_USERS,
            "previous_page": (page_number > 1).then(|| query_string(page_number - 1)),
            "next_page": (page_number * PAGE_SIZE < found.total).then(|| query_string(page_number + 1)),
        }),
    )
}

#[derive(Deserialize)]
pub struct DetailQuery {
    /// The change just made, to confirm it.
    done: Option<String>,
}

/// `GET /admin/users/{id}`: a user with their warnings and silence, and
/// for administrators holding `users:manage` their email, activity and
/// bans. A moderator (or an administrator without `users:manage`) sees the
/// page of a member they may discipline, and no one else's.
pub async fn detail(
    State(state): State<AppState>,
    user: ConsoleUser,
    IdPath(id): IdPath,
    AppQuery(query): AppQuery<DetailQuery>,
) -> Result<Response, AppError> {
    let shown = state.db.user_by_id(id).await?;
    let manages = user.administers(Some(grants::MANAGE_USERS));
    let disciplines = policy::discipline(user.actor(), &shown);
    if !manages {
        authorize(disciplines, "user")?;
    }
    let (activity, bans) = if manages {
        (
            state.db.recent_activity(id, DETAIL_ITEMS).await?,
            state.db.ban_history(id, DETAIL_ITEMS).await?,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let moderation = discipline::shown(&state, id).await?;
    let row = &shown.row;
    let done = match query.done.as_deref() {
        Some("banned") => Some("The user is banned; their sessions have ended."),
        Some("unbanned") => Some("The ban is lifted."),
        Some("role") => Some("The role is saved; the user's sessions hold it now."),
        Some("warned") => Some("The warning is given; the member is told."),
        Some("silenced") => Some("The member is silenced; they are told."),
        Some("unsilenced") => Some("The silence is lifted; the member is told."),
        _ => None,
    };
    page(
        &state,
        &user,
        "users",
        "user.html",
        json!({
            "done": done,
            "manages": manages,
            "may_discipline": disciplines.is_allowed(),
            "moderation": moderation,
            "shown": {
                "id": row.id,
                "username": row.username,
                "name": row.name,
                "email": if manages { row.email.as_str() } else { "" },
                "verified": row.email_verified_at.is_some(),
                "role": row.role,
                "status": row.status,
                "logins": row.login_count,
                "joined": rfc3339(row.created_at),
                "banned": row.status == UserStatus::Banned.as_str(),
            },
            "activity": activity.iter().map(|item| json!({
                "kind": item.kind,
                "at": rfc3339(item.at),
                "detail": item.detail,
            })).collect::<Vec<_>>(),
            "bans": bans.iter().map(|ban| json!({
                "reason": ban.reason,
                "from": rfc3339(ban.created_at),
                "until": ban.expires_at.map(rfc3339),
                "lifted": ban.lifted_at.map(rfc3339),
                "lift_reason": ban.lift_reason,
            })).collect::<Vec<_>>(),
            "durations": DURATIONS,
            "assignable_roles": ["user", "moderator", "admin"],
        }),
    )
}

/// The ban and unban forms.
#[derive(Deserialize)]
pub struct BanForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    reason: Option<String>,
    duration: Option<String>,
    notes: Option<String>,
}

/// `POST /admin/users/{id}/ban`: bans the user, then back to their page.
pub async fn ban(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<BanForm>,
) -> Result<Response, AppError> {
    change_ban(&state, &user, context, id, form, true).await
}

/// `POST /admin/users/{id}/unban`: lifts the user's ban, then back to
/// their page.
pub async fn unban(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<BanForm>,
) -> Result<Response, AppError> {
    change_ban(&state, &user, context, id, form, false).await
}

async fn change_ban(
    state: &AppState,
    user: &ConsoleUser,
    context: plaza_domain::audit::AuditContext,
    id: i64,
    form: BanForm,
    banning: bool,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    user.require_administrator(Some(grants::MANAGE_USERS), "user")?;
    let mut problems = Problems::default();
    let duration = form.duration.filter(|duration| !duration.is_empty());
    let terms = BanTerms::check(
        &mut problems,
        form.reason,
        duration.as_deref(),
        form.notes,
        banning,
    );
    problems.finish()?;
    ban_one(state, user.actor(), context, id, &terms, banning).await?;
    let done = if banning { "banned" } else { "unbanned" };
    Ok(Redirect::to(&format!("/admin/users/{id}?done={done}")).into_response())
}

/// Bans (when `banning`) or unbans user `id` on `terms` in their own unit
/// of work, under their edit lock; a ban ends their sessions at once.
/// Answers the user's username.
async fn ban_one(
    state: &AppState,
    actor: Actor,
    context: plaza_domain::audit::AuditContext,
    id: i64,
    terms: &BanTerms,
    banning: bool,
) -> Result<String, AppError> {
    let changed = if banning {
        state
            .user_admin()
            .ban_user(context, actor, id, terms.clone().order())
            .await?
            .0
    } else {
        state
            .user_admin()
            .unban_user(context, actor, id, terms.reason.clone())
            .await?
            .0
    };
    Ok(changed.row.username)
}

/// The role form.
#[derive(Deserialize)]
pub struct RoleForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    role: Option<String>,
}

/// `POST /admin/users/{id}/role`: gives the user another role (`user`,
/// `moderator` or `admin`, as the policy lets the viewer grant), then back
/// to their page.
pub async fn change_role(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<RoleForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    user.require_administrator(Some(grants::MANAGE_USERS), "user")?;
    let mut problems = Problems::default();
    let role = form.role.filter(|role| !role.is_empty());
    if role.is_none() {
        problems.add("role", "is required: user, moderator or admin");
    }
    let update = AdminUserUpdate {
        role,
        ..AdminUserUpdate::default()
    };
    let changes = checked_update(&update, &mut problems);
    problems.finish()?;
    state
        .user_admin()
        .update_user(context, user.actor(), id, changes, None)
        .await?;
    Ok(Redirect::to(&format!("/admin/users/{id}?done=role")).into_response())
}

/// One user's outcome of a bulk action.
#[derive(Serialize)]
struct BulkOutcome {
    id: i64,
    username: Option<String>,
    /// Why not, when the action was refused for this user.
    error: Option<String>,
}

/// `POST /admin/users/bulk`: bans (`action=ban`, with a reason and a
/// duration) or unbans (`action=unban`) each ticked user (`ids`, 1 to
/// [`MAX_BULK_USERS`]), one unit of work each, and answers a page listing
/// who was changed and who was not, with why.
pub async fn bulk(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    AppForm(fields): AppForm<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    let field = |name: &str| form_field(&fields, name);
    user.check_form_token(field("csrfToken"))?;
    user.require_administrator(Some(grants::MANAGE_USERS), "user")?;
    let mut problems = Problems::default();
    let banning = match field("action") {
        Some("ban") => true,
        Some("unban") => false,
        _ => {
            problems.add("action", "must be ban or unban");
            false
        }
    };
    let ticked: Vec<&str> = fields
        .iter()
        .filter(|(key, _)| key == "ids")
        .map(|(_, value)| value.as_str())
        .collect();
    if ticked.is_empty() || ticked.len() > MAX_BULK_USERS {
        problems.add(
            "ids",
            format!(
                "tick 1 to {MAX_BULK_USERS} users (this form ticked {})",
                ticked.len()
            ),
        );
    }
    let mut ids: Vec<i64> = Vec::with_capacity(ticked.len());
    for raw in &ticked {
        match parse_id(raw) {
            Some(id) if !ids.contains(&id) => ids.push(id),
            Some(_) => {}
            None => {
                problems.add("ids", "must be user ids (positive whole numbers)");
                break;
            }
        }
    }
    let duration = field("duration").filter(|duration| !duration.is_empty());
    let terms = BanTerms::check(
        &mut problems,
        field("reason").map(str::to_owned),
        duration,
        field("notes").map(str::to_owned),
        banning,
    );
    problems.finish()?;
    let actor = user.actor();
    let mut outcomes = Vec::with_capacity(ids.len());
    for id in ids {
        let outcome = ban_one(&state, actor, context.clone(), id, &terms, banning).await;
        // Earlier users may be committed already: a refusal is this user's
        // outcome, so the page tells the whole truth.
        outcomes.push(match outcome {
            Ok(username) => BulkOutcome {
                id,
                username: Some(username),
                error: None,
            },
            Err(error) => {
                if let AppError::Internal(cause) = &error {
                    tracing::error!(user_id = id, %cause, "a bulk ban failed for a user");
                }
                BulkOutcome {
                    id,
                    username: None,
                    error: Some(error.public_message()),
                }
            }
        });
    }
    let done = outcomes
        .iter()
        .filter(|outcome| outcome.error.is_none())
        .count();
    page(
        &state,
        &user,
        "users",
        "bulk.html",
        json!({
            "action": if banning { "ban" } else { "unban" },
            "done": done,
            "failed": outcomes.len() - done,
            "outcomes": outcomes,
        }),
    )
}
