//! `GET` and `POST /api/v1/admin/ip-blocks` and `DELETE
//! /api/v1/admin/ip-blocks/{id}` (DECISIONS.md "The front door"): an
//! address or range whose sign-ups (`sign_up`) or every request (`all`,
//! but the health and version probes) is refused with 403 `IP_BLOCKED`,
//! until `expires_at` when given. The client is the address the rate
//! limiter counts (through the trusted proxies). A change is in force on
//! every instance within 5 s (`services::front_door`); each is audited
//! (`ip_block.create`, `ip_block.delete`); removing a block undoes it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plaza_domain::ip_blocks::{IpBlock, MAX_REASON_CHARS, NewIpBlock, Severity};
use plaza_domain::time::rfc3339;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::envelope::{Envelope, ListEnvelope};
use super::listing::ListQuery;
use crate::auth::{AdminToken, RequestAudit};
use crate::controllers::between::future_time;
use crate::controllers::params::{Pagination, Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::services::address_ranges::parse_range;
use crate::state::AppState;

/// An IP block.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IpBlockItem {
    #[schema(example = "5")]
    pub id: String,
    /// The range, host bits cleared (`203.0.113.0/24`; one address is a
    /// `/32` or `/128`).
    #[schema(example = "203.0.113.0/24")]
    pub cidr: String,
    /// `sign_up` or `all`.
    #[schema(example = "sign_up")]
    pub severity: String,
    /// When it ends; null: until removed.
    pub expires_at: Option<String>,
    /// Whether it is in force now (not expired).
    pub active: bool,
    pub reason: String,
    pub created_at: String,
    /// The administrator who added it; null once their account is deleted.
    #[schema(example = "1")]
    pub created_by: Option<String>,
}

impl From<&IpBlock> for IpBlockItem {
    fn from(block: &IpBlock) -> Self {
        IpBlockItem {
            id: block.id.to_string(),
            cidr: block.cidr.clone(),
            severity: block.severity().as_str().to_owned(),
            expires_at: block.expires_at.map(rfc3339),
            active: block
                .expires_at
                .is_none_or(|end| end > plaza_domain::time::now_millis()),
            reason: block.reason.clone(),
            created_at: rfc3339(block.created_at),
            created_by: block.created_by.map(|id| id.to_string()),
        }
    }
}

/// A new block.
#[derive(Deserialize, ToSchema)]
pub struct IpBlockBody {
    /// An IPv4 or IPv6 address or CIDR range.
    #[schema(example = "203.0.113.0/24")]
    pub cidr: String,
    /// `sign_up` (sign-ups, and provider sign-ins that would create an
    /// account) or `all` (every request but `/api/health` and `/api/version`).
    pub severity: String,
    /// When the block ends: an RFC 3339 time in the future; none: until
    /// removed.
    #[serde(alias = "expiresAt")]
    pub expires_at: Option<String>,
    /// Why, for the other administrators; at most 500 characters.
    pub reason: Option<String>,
}

/// The blocks, newest first, ended ones included.
#[utoipa::path(
    get,
    path = "/api/v1/admin/ip-blocks",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(ListQuery),
    responses(
        (status = 200, description = "A page of blocks, newest first", body = ListEnvelope<IpBlockItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "`limit` or `offset` is invalid", body = AdminV1Error),
    )
)]
pub async fn list_ip_blocks(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<AppJson<ListEnvelope<IpBlockItem>>, AppError> {
    let page = query.page()?;
    let found = state.db.ip_blocks(page).await?;
    Ok(AppJson(ListEnvelope::new(
        found.blocks.iter().map(IpBlockItem::from).collect(),
        Pagination::new(found.total, page),
    )))
}

/// Blocks an address or range; audited as `ip_block.create`.
#[utoipa::path(
    post,
    path = "/api/v1/admin/ip-blocks",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    request_body = IpBlockBody,
    responses(
        (status = 201, description = "The block, in force on every instance within 5 s", body = Envelope<IpBlockItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:write` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 409, description = "200,000 blocks exist already (`CONFLICT`)", body = AdminV1Error),
        (status = 422, description = "Not an address or range, an unknown severity, an end not in the future, or a reason over 500 characters", body = AdminV1Error),
    )
)]
pub async fn create_ip_block(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    AppJson(body): AppJson<IpBlockBody>,
) -> Result<Response, AppError> {
    let new = checked_block(&body)?;
    let block = state
        .front_door_changes()
        .add_ip_block(context, new, admin.user_id)
        .await?;
    Ok((
        StatusCode::CREATED,
        AppJson(Envelope::new(IpBlockItem::from(&block))),
    )
        .into_response())
}

/// Removes a block and answers it as it was; audited as `ip_block.delete`.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/ip-blocks/{id}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:delete"])),
    params(("id" = String, Path, description = "Block id (digits)", example = "5")),
    responses(
        (status = 200, description = "The block, removed", body = Envelope<IpBlockItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:delete` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No block has this id (`NOT_FOUND`)", body = AdminV1Error),
    )
)]
pub async fn delete_ip_block(
    State(state): State<AppState>,
    _admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<AppJson<Envelope<IpBlockItem>>, AppError> {
    let block = state
        .front_door_changes()
        .remove_ip_block(context, id)
        .await?;
    Ok(AppJson(Envelope::new(IpBlockItem::from(&block))))
}

/// The block as the domain takes it, or a 422 naming every bad field.
pub fn checked_block(body: &IpBlockBody) -> Result<NewIpBlock, AppError> {
    let mut problems = Problems::default();
    let net = problems.check(
        "cidr",
        parse_range(&body.cidr).ok_or_else(|| {
            "must be an IPv4 or IPv6 address or CIDR range (203.0.113.0/24, 2001:db8::/32)"
                .to_owned()
        }),
    );
    let severity = problems.check(
        "severity",
        Severity::parse(body.severity.trim()).ok_or_else(|| "must be sign_up or all".to_owned()),
    );
    let expires_at = problems
        .check("expires_at", future_time(body.expires_at.as_deref()))
        .flatten();
    let reason = body.reason.as_deref().map(str::trim).unwrap_or_default();
    problems.check(
        "reason",
        check_text(reason, MAX_REASON_CHARS, false, TextRule::Lines),
    );
    problems.finish()?;
    let (Some(net), Some(severity)) = (net, severity) else {
        return Err(AppError::internal("a block passed validation unparsed"));
    };
    Ok(NewIpBlock {
        cidr: net.to_string(),
        severity,
        expires_at,
        reason: reason.to_owned(),
    })
}
