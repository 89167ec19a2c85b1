//! `GET` and `POST /api/v1/admin/email-domain-blocks` and `DELETE
//! /api/v1/admin/email-domain-blocks/{id}` (DECISIONS.md "The front
//! door"): a sign-up, a provider sign-in that would create an account, or
//! an email change to an address at a blocked domain or a subdomain of it
//! is refused (422 `email`). Each change is audited
//! (`email_domain_block.create`, `email_domain_block.delete`); removing a
//! block undoes it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plaza_domain::email_domain_blocks::{
    EmailDomainBlock, MAX_DOMAIN_CHARS, MAX_REASON_CHARS, normalize_domain,
};
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
use crate::state::AppState;

/// A blocked email domain.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmailDomainBlockItem {
    #[schema(example = "3")]
    pub id: String,
    /// Lower case; its subdomains are blocked too.
    #[schema(example = "spam.example")]
    pub domain: String,
    pub reason: String,
    pub created_at: String,
    /// The administrator who added it; null once their account is deleted.
    #[schema(example = "1")]
    pub created_by: Option<String>,
}

impl From<&EmailDomainBlock> for EmailDomainBlockItem {
    fn from(block: &EmailDomainBlock) -> Self {
        EmailDomainBlockItem {
            id: block.id.to_string(),
            domain: block.domain.clone(),
            reason: block.reason.clone(),
            created_at: rfc3339(block.created_at),
            created_by: block.created_by.map(|id| id.to_string()),
        }
    }
}

/// A new block.
#[derive(Deserialize, ToSchema)]
pub struct EmailDomainBlockBody {
    /// A domain name (`spam.example`); compared case-insensitively.
    pub domain: String,
    /// Why, for the other administrators; at most 500 characters.
    pub reason: Option<String>,
}

/// The blocked domains, by name.
#[utoipa::path(
    get,
    path = "/api/v1/admin/email-domain-blocks",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:read"])),
    params(ListQuery),
    responses(
        (status = 200, description = "A page of blocks, by domain", body = ListEnvelope<EmailDomainBlockItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:read` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "`limit` or `offset` is invalid", body = AdminV1Error),
    )
)]
pub async fn list_email_domain_blocks(
    State(state): State<AppState>,
    _admin: AdminToken,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<AppJson<ListEnvelope<EmailDomainBlockItem>>, AppError> {
    let page = query.page()?;
    let found = state.db.email_domain_blocks(page).await?;
    Ok(AppJson(ListEnvelope::new(
        found
            .blocks
            .iter()
            .map(EmailDomainBlockItem::from)
            .collect(),
        Pagination::new(found.total, page),
    )))
}

/// Blocks a domain and its subdomains; audited as
/// `email_domain_block.create`.
#[utoipa::path(
    post,
    path = "/api/v1/admin/email-domain-blocks",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:write"])),
    request_body = EmailDomainBlockBody,
    responses(
        (status = 201, description = "The block", body = Envelope<EmailDomainBlockItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:write` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 409, description = "The domain is blocked already, or 100,000 domains are (`CONFLICT`)", body = AdminV1Error),
        (status = 422, description = "Not a domain name, or a reason over 500 characters", body = AdminV1Error),
    )
)]
pub async fn create_email_domain_block(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    AppJson(body): AppJson<EmailDomainBlockBody>,
) -> Result<Response, AppError> {
    let (domain, reason) = checked_block(&body.domain, body.reason.as_deref())?;
    let block = state
        .front_door_changes()
        .add_email_domain_block(context, domain, reason, admin.user_id)
        .await?;
    Ok((
        StatusCode::CREATED,
        AppJson(Envelope::new(EmailDomainBlockItem::from(&block))),
    )
        .into_response())
}

/// Removes a block and answers it as it was; audited as
/// `email_domain_block.delete`.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/email-domain-blocks/{id}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:delete"])),
    params(("id" = String, Path, description = "Block id (digits)", example = "3")),
    responses(
        (status = 200, description = "The block, removed", body = Envelope<EmailDomainBlockItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "Not an admin, or no `admin:delete` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No block has this id (`NOT_FOUND`)", body = AdminV1Error),
    )
)]
pub async fn delete_email_domain_block(
    State(state): State<AppState>,
    _admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<AppJson<Envelope<EmailDomainBlockItem>>, AppError> {
    let block = state
        .front_door_changes()
        .remove_email_domain_block(context, id)
        .await?;
    Ok(AppJson(Envelope::new(EmailDomainBlockItem::from(&block))))
}

/// The domain (normalized) and reason of a new block, or a 422 naming
/// every bad field.
pub fn checked_block(domain: &str, reason: Option<&str>) -> Result<(String, String), AppError> {
    let mut problems = Problems::default();
    let domain = problems.check(
        "domain",
        normalize_domain(domain).ok_or_else(|| {
            format!(
                "must be a domain name (such as spam.example), at most {MAX_DOMAIN_CHARS} characters"
            )
        }),
    );
    let reason = reason.map(str::trim).unwrap_or_default();
    problems.check(
        "reason",
        check_text(reason, MAX_REASON_CHARS, false, TextRule::Lines),
    );
    problems.finish()?;
    let domain = domain.ok_or_else(|| AppError::internal("a domain passed validation unparsed"))?;
    Ok((domain, reason.to_owned()))
}
