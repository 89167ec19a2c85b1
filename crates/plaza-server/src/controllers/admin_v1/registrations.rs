//! `GET /api/v1/admin/registrations` and `POST
//! /api/v1/admin/registrations/{userId}`: the sign-ups awaiting approval
//! with their applications, and an administrator's decision on one
//! (DECISIONS.md "The front door"): approving makes the account `active`,
//! rejecting deletes it; either mails the person, and is audited as
//! `registration.approve` or `registration.reject`.

use axum::extract::State;
use plaza_domain::registrations::PendingRegistration;
use plaza_domain::time::rfc3339;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::envelope::{Envelope, ListEnvelope};
use super::listing::ListQuery;
use crate::auth::{AdminToken, RequestAudit};
use crate::controllers::params::{Pagination, Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::services::front_door_changes::Decision;
use crate::state::AppState;

/// Most characters of a decision's reason.
pub const MAX_REASON_CHARS: usize = 500;

/// A sign-up awaiting approval.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationItem {
    #[schema(example = "42")]
    pub id: String,
    pub email: String,
    pub username: String,
    pub name: Option<String>,
    /// The answer to the registration question.
    pub application: String,
    pub created_at: String,
}

impl From<&PendingRegistration> for RegistrationItem {
    fn from(registration: &PendingRegistration) -> Self {
        let row = &registration.user.row;
        RegistrationItem {
            id: row.id.to_string(),
            email: row.email.clone(),
            username: row.username.clone(),
            name: row.name.clone(),
            application: registration.application.clone(),
            created_at: rfc3339(row.created_at),
        }
    }
}

/// The decision made, and on whom.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationDecisionItem {
    #[serde(flatten)]
    pub registration: RegistrationItem,
    /// `approve` or `reject`.
    pub action: String,
    /// `active` after an approval; `deleted` after a rejection.
    pub status: String,
}

/// A decision on a registration.
#[derive(Deserialize, ToSchema)]
pub struct RegistrationDecisionBody {
    /// `approve` or `reject`.
    pub action: String,
    /// Required to reject (mailed to the person), optional to approve; at
    /// most 500 characters.
    pub reason: Option<String>,
}

/// The sign-ups awaiting approval, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/admin/registrations",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(ListQuery),
    responses(
        (status = 200, description = "A page of pending registrations, oldest first", body = ListEnvelope<RegistrationItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "`limit` or `offset` is invalid", body = AdminV1Error),
    )
)]
pub async fn list_registrations(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<AppJson<ListEnvelope<RegistrationItem>>, AppError> {
    let page = query.page()?;
    let found = state.db.pending_registrations(page).await?;
    Ok(AppJson(ListEnvelope::new(
        found
            .registrations
            .iter()
            .map(RegistrationItem::from)
            .collect(),
        Pagination::new(found.total, page),
    )))
}

/// Approves or rejects a pending sign-up, mails the person, and audits it.
#[utoipa::path(
    post,
    path = "/api/v1/admin/registrations/{userId}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    params(("userId" = String, Path, description = "User id (digits)", example = "42")),
    request_body = RegistrationDecisionBody,
    responses(
        (status = 200, description = "The decision made", body = Envelope<RegistrationDecisionItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:write` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No sign-up of this id awaits approval (`NOT_FOUND`)", body = AdminV1Error),
        (status = 422, description = "An unknown action, a rejection without a reason, or a reason over 500 characters", body = AdminV1Error),
    )
)]
pub async fn decide_registration(
    State(state): State<AppState>,
    _admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(user_id): IdPath,
    AppJson(body): AppJson<RegistrationDecisionBody>,
) -> Result<AppJson<Envelope<RegistrationDecisionItem>>, AppError> {
    let (decision, reason) = checked_decision(&body.action, body.reason.as_deref())?;
    let decided = state
        .front_door_changes()
        .decide_registration(context, user_id, decision, reason)
        .await?;
    Ok(AppJson(Envelope::new(RegistrationDecisionItem {
        registration: RegistrationItem::from(&decided),
        action: body.action,
        status: match decision {
            Decision::Approve => "active",
            Decision::Reject => "deleted",
        }
        .to_owned(),
    })))
}

/// The decision and its reason (trimmed; empty when none), or a 422
/// naming every bad field.
pub fn checked_decision(
    action: &str,
    reason: Option<&str>,
) -> Result<(Decision, String), AppError> {
    let mut problems = Problems::default();
    let decision = problems.check(
        "action",
        Decision::parse(action).ok_or_else(|| "must be approve or reject".to_owned()),
    );
    let reason = reason.map(str::trim).unwrap_or_default();
    problems.check(
        "reason",
        check_text(
            reason,
            MAX_REASON_CHARS,
            decision == Some(Decision::Reject),
            TextRule::Lines,
        ),
    );
    problems.finish()?;
    let decision =
        decision.ok_or_else(|| AppError::internal("a decision passed validation unparsed"))?;
    Ok((decision, reason.to_owned()))
}
