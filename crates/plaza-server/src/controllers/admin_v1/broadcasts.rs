//! `POST /api/v1/admin/notifications/broadcast`: an admin's message to
//! every user, some roles or some users, shown in their `GET /api/alerts`,
//! now or at a scheduled time; `GET /api/v1/admin/notifications/broadcasts`
//! lists them, and `DELETE …/broadcasts/{id}` withdraws a scheduled one.

use axum::extract::State;
use axum::http::StatusCode;
use plaza_domain::alerts::{
    self, AlertType, Audience, Broadcast, MAX_MESSAGE_CHARS, MAX_TITLE_CHARS,
};
use plaza_domain::policy::{self, Actor};
use plaza_domain::time::{now_millis, rfc3339};
use plaza_domain::users::Role;
use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

use super::envelope::{Envelope, ListEnvelope};
use super::listing::ListQuery;
use crate::auth::{AdminToken, RequestAudit, authorize};
use crate::controllers::params::{Pagination, Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::services::broadcasts;
use crate::state::AppState;

/// Most entries in `targets`.
const MAX_TARGETS: usize = 1000;
/// How far ahead a broadcast may be scheduled.
const MAX_SCHEDULE_AHEAD_MILLIS: i64 = 366 * 24 * 3600 * 1000;

/// A broadcast to send.
#[derive(Deserialize, ToSchema)]
pub struct BroadcastBody {
    /// 1 to 200 characters (required).
    pub title: Option<String>,
    /// 1 to 5000 characters (required).
    pub message: Option<String>,
    /// `info` (default), `success`, `warning` or `error`.
    #[serde(rename = "type")]
    #[schema(example = "info")]
    pub alert_type: Option<String>,
    /// `"all"` (default), role names (`user`, `moderator`, `admin`,
    /// `super_admin`) and user ids as strings (`"42"`): the union of them.
    #[schema(example = json!(["all"]))]
    pub targets: Option<Vec<String>>,
    /// When to deliver it (RFC 3339 / ISO 8601 with a time zone); it shows
    /// within 30 s after. Absent, or not in the future: delivered now.
    #[schema(example = "2026-12-01T09:00:00Z")]
    pub schedule: Option<String>,
}

/// A broadcast as stored.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BroadcastItem {
    #[schema(example = "5")]
    pub id: String,
    pub title: String,
    pub message: String,
    #[serde(rename = "type")]
    pub alert_type: String,
    /// `"all"`, then role names, then user ids (a deleted user's id leaves
    /// the list).
    #[schema(example = json!(["all"]))]
    pub targets: Vec<String>,
    /// `scheduled`, `delivered` or `cancelled`.
    #[schema(example = "delivered")]
    pub status: String,
    /// When it is due (scheduled broadcasts); null for one sent at once.
    pub schedule: Option<String>,
    /// Active users it reached, once delivered.
    pub recipients: Option<i64>,
    pub created_at: String,
    /// The id of the admin who sent it; null once their account is deleted.
    #[schema(example = "1")]
    pub created_by: Option<String>,
    pub delivered_at: Option<String>,
    pub cancelled_at: Option<String>,
}

impl From<&Broadcast> for BroadcastItem {
    fn from(broadcast: &Broadcast) -> Self {
        let audience = &broadcast.audience;
        let targets = audience
            .everyone
            .then(|| "all".to_owned())
            .into_iter()
            .chain(audience.roles.iter().map(|role| role.as_str().to_owned()))
            .chain(audience.user_ids.iter().map(i64::to_string))
            .collect();
        BroadcastItem {
            id: broadcast.id.to_string(),
            title: broadcast.title.clone(),
            message: broadcast.message.clone(),
            alert_type: broadcast.alert_type.as_str().to_owned(),
            targets,
            status: broadcast.status().as_str().to_owned(),
            schedule: broadcast.schedule().map(rfc3339),
            recipients: broadcast.recipient_count,
            created_at: rfc3339(broadcast.created_at),
            created_by: broadcast.created_by.map(|id| id.to_string()),
            delivered_at: broadcast.delivered_at.map(rfc3339),
            cancelled_at: broadcast.cancelled_at.map(rfc3339),
        }
    }
}

/// The broadcasts, newest first, whatever their status.
#[utoipa::path(
    get,
    path = "/api/v1/admin/notifications/broadcasts",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(ListQuery),
    responses(
        (status = 200, description = "A page of broadcasts, newest first", body = ListEnvelope<BroadcastItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "`limit` or `offset` is invalid", body = AdminV1Error),
    )
)]
pub async fn list_broadcasts(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<AppJson<ListEnvelope<BroadcastItem>>, AppError> {
    let page = query.page()?;
    let found = state.db.broadcasts(page).await?;
    Ok(AppJson(ListEnvelope::new(
        found.broadcasts.iter().map(BroadcastItem::from).collect(),
        Pagination::new(found.total, page),
    )))
}

/// Withdraw a scheduled broadcast: it is never delivered. Answers it with
/// status `cancelled`; audited as `broadcast.cancel`. One delivered (or
/// cancelled) already is 409 `INVALID_TRANSITION`; when the delivery job
/// and the cancellation race, exactly one of them takes effect.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/notifications/broadcasts/{id}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:delete"])),
    params(("id" = String, Path, description = "The broadcast's id", example = "5")),
    responses(
        (status = 200, description = "The broadcast, cancelled", body = Envelope<BroadcastItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:delete` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No broadcast has this id (`NOT_FOUND`)", body = AdminV1Error),
        (status = 409, description = "Delivered or cancelled already (`INVALID_TRANSITION`)", body = AdminV1Error),
    )
)]
pub async fn cancel_broadcast(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<AppJson<Envelope<BroadcastItem>>, AppError> {
    authorize(
        policy::send_broadcast(Actor {
            user_id: admin.user_id,
            role: admin.role,
        }),
        "broadcast",
    )?;
    let cancelled = broadcasts::cancel(&state.db, context, id).await?;
    Ok(AppJson(Envelope::new(BroadcastItem::from(&cancelled))))
}

/// Send a broadcast: delivered before the answer (201), or stored and
/// delivered once by a background job within 30 s after `schedule` (202),
/// exactly once even with several instances. Audited as `broadcast.create`.
#[utoipa::path(
    post,
    path = "/api/v1/admin/notifications/broadcast",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    request_body = BroadcastBody,
    responses(
        (status = 201, description = "Delivered", body = Envelope<BroadcastItem>),
        (status = 202, description = "Scheduled", body = Envelope<BroadcastItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:write` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "A missing or invalid field, an unknown target, or a schedule more than a year ahead (`VALIDATION_ERROR`)", body = AdminV1Error),
    )
)]
pub async fn create_broadcast(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    AppJson(body): AppJson<BroadcastBody>,
) -> Result<(StatusCode, AppJson<Envelope<BroadcastItem>>), AppError> {
    let now = now_millis();
    let mut problems = Problems::default();
    let draft = BroadcastDraft::check(&mut problems, body, now);
    problems.finish()?;
    let unknown = state.db.unknown_users(&draft.audience.user_ids).await?;
    if let Some(missing) = unknown.first() {
        return Err(AppError::invalid(
            "targets",
            format!("no user has id {missing}"),
        ));
    }
    authorize(
        policy::send_broadcast(Actor {
            user_id: admin.user_id,
            role: admin.role,
        }),
        "broadcast",
    )?;
    let (new, targets) = draft.into_new(admin.user_id);
    let broadcast = broadcasts::send(&state.db, context, new, targets, now).await?;
    let status = if broadcast.delivered_at.is_some() {
        StatusCode::CREATED
    } else {
        StatusCode::ACCEPTED
    };
    Ok((
        status,
        AppJson(Envelope::new(BroadcastItem::from(&broadcast))),
    ))
}

/// A broadcast checked field by field, ready to send.
pub struct BroadcastDraft {
    pub title: String,
    pub message: String,
    pub alert_type: AlertType,
    pub audience: Audience,
    /// The targets as given, for the audit entry.
    pub targets: Vec<String>,
    /// When it is due; `None`: now.
    pub deliver_at: Option<i64>,
}

impl BroadcastDraft {
    /// Checks `body` at `now`, recording each problem.
    pub fn check(problems: &mut Problems, body: BroadcastBody, now: i64) -> BroadcastDraft {
        let title = required_text(
            problems,
            "title",
            body.title,
            MAX_TITLE_CHARS,
            TextRule::Line,
        );
        let message = required_text(
            problems,
            "message",
            body.message,
            MAX_MESSAGE_CHARS,
            TextRule::Lines,
        );
        let alert_type = match body.alert_type.as_deref() {
            None => AlertType::default(),
            Some(raw) => problems
                .check(
                    "type",
                    AlertType::parse(raw)
                        .ok_or_else(|| "must be info, success, warning or error".to_owned()),
                )
                .unwrap_or_default(),
        };
        let targets = body.targets.unwrap_or_else(|| vec!["all".to_owned()]);
        let audience = audience(problems, &targets);
        let deliver_at = body.schedule.as_deref().and_then(|raw| {
            let at = problems.check(
                "schedule",
                time::OffsetDateTime::parse(raw.trim(), &Rfc3339)
                    .map(plaza_domain::time::to_millis)
                    .map_err(|_| {
                        "must be an ISO 8601 time with a time zone, e.g. 2026-12-01T09:00:00Z"
                            .to_owned()
                    }),
            )?;
            if at > now.saturating_add(MAX_SCHEDULE_AHEAD_MILLIS) {
                problems.add("schedule", "must be at most a year ahead");
            }
            (at > now).then_some(at)
        });
        BroadcastDraft {
            title,
            message,
            alert_type,
            audience,
            targets,
            deliver_at,
        }
    }

    /// The broadcast `sender_id` sends, and its targets as given.
    pub fn into_new(self, sender_id: i64) -> (alerts::NewBroadcast, Vec<String>) {
        let new = alerts::NewBroadcast {
            title: self.title,
            message: self.message,
            alert_type: self.alert_type,
            audience: self.audience,
            created_by: sender_id,
            deliver_at: self.deliver_at,
        };
        (new, self.targets)
    }
}

/// A required text field, trimmed; its problem recorded when missing,
/// blank, too long or holding control characters.
fn required_text(
    problems: &mut Problems,
    field: &str,
    value: Option<String>,
    max_chars: usize,
    rule: TextRule,
) -> String {
    let Some(value) = value else {
        problems.add(field, "is required");
        return String::new();
    };
    let value = value.trim().to_owned();
    problems.check(field, check_text(&value, max_chars, true, rule));
    value
}

/// The audience `targets` name; each bad entry is a problem under
/// `targets.<index>`.
fn audience(problems: &mut Problems, targets: &[String]) -> Audience {
    let mut audience = Audience::default();
    if targets.is_empty() {
        problems.add("targets", "must name at least one target");
    }
    if targets.len() > MAX_TARGETS {
        problems.add(
            "targets",
            format!("must have at most {MAX_TARGETS} entries"),
        );
        return audience;
    }
    for (index, target) in targets.iter().enumerate() {
        let target = target.trim();
        if target == "all" {
            audience.everyone = true;
        } else if let Some(role) = Role::parse(target) {
            if !audience.roles.contains(&role) {
                audience.roles.push(role);
            }
        } else if let Some(id) = crate::http::extract::parse_id(target) {
            if !audience.user_ids.contains(&id) {
                audience.user_ids.push(id);
            }
        } else {
            problems.add(
                format!("targets.{index}"),
                "must be \"all\", a role (user, moderator, admin, super_admin) or a user id",
            );
        }
    }
    audience
}
