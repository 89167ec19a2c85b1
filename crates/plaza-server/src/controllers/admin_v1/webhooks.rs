//! Webhooks under `/api/v1/admin/webhooks` (DECISIONS.md "Tokens for
//! members and bots, and webhooks (round 5)"): registering, listing,
//! changing and deleting them, their deliveries newest first, and sending
//! a delivery again. Every route needs `admin:super`; every change is
//! audited (the secret never is). The secret is in the creation's answer
//! only, and stored sealed with the webhook key.

use axum::extract::State;
use axum::http::StatusCode;
use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::time::{now_millis, rfc3339};
use plaza_domain::webhooks::{
    self, Delivery, EventType, MAX_DESCRIPTION_CHARS, MAX_URL_CHARS, NewWebhook, Webhook,
    WebhookChanges,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::envelope::{Envelope, ListEnvelope};
use super::listing::ListQuery;
use crate::auth::{AdminToken, RequestAudit};
use crate::controllers::params::{Pagination, Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::error::schema::AdminV1Error;
use crate::http::extract::{AppJson, AppQuery, IdPath, IdTextPath, parse_id};
use crate::services::webhooks::Webhooks;
use crate::state::AppState;

/// A webhook as listed (never its secret).
#[derive(Serialize, ToSchema)]
pub struct WebhookItem {
    #[schema(example = "3")]
    pub id: String,
    #[schema(example = "https://hooks.example.com/plaza")]
    pub url: String,
    /// The event types it receives.
    #[schema(example = json!(["post.created", "user.created"]))]
    pub events: Vec<&'static str>,
    pub description: Option<String>,
    /// False once deactivated (by an administrator, or after 50 failed
    /// deliveries in a row): nothing is queued or sent for it.
    pub active: bool,
    /// Deliveries failed since the last one delivered.
    pub failures_in_row: i64,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&Webhook> for WebhookItem {
    fn from(webhook: &Webhook) -> Self {
        WebhookItem {
            id: webhook.id.to_string(),
            url: webhook.url.clone(),
            events: webhook.events.iter().map(|event| event.as_str()).collect(),
            description: webhook.description.clone(),
            active: webhook.active,
            failures_in_row: webhook.failures_in_row,
            created_at: rfc3339(webhook.created_at),
            updated_at: rfc3339(webhook.updated_at),
        }
    }
}

/// A webhook just registered, with its signing secret (shown this once).
#[derive(Serialize, ToSchema)]
pub struct CreatedWebhook {
    #[serde(flatten)]
    pub webhook: WebhookItem,
    /// The key of every delivery's `X-Plaza-Signature` (its UTF-8 bytes, as
    /// shown); it is stored sealed and never shown again.
    #[schema(example = "whsec_3q2-7wEjxKyyy3pQ9ZLzq6mYg5aJ8kOD1sXwbfRTn4c")]
    pub secret: String,
}

/// One attempt at a delivery.
#[derive(Serialize, ToSchema)]
pub struct AttemptItem {
    pub at: String,
    /// The receiver's status; null when no answer came.
    pub response_code: Option<i64>,
    pub duration_ms: i64,
    /// Why it failed; null for a 2xx answer.
    pub error: Option<String>,
}

/// A delivery of one event to one webhook.
#[derive(Serialize, ToSchema)]
pub struct DeliveryItem {
    /// Also the body's `id` and the `X-Plaza-Delivery` header.
    #[schema(example = "41")]
    pub id: String,
    #[schema(example = "post.created")]
    pub event: String,
    /// `pending`, `delivered` or `failed`.
    #[schema(example = "delivered")]
    pub status: &'static str,
    pub created_at: String,
    /// Oldest first.
    pub attempts: Vec<AttemptItem>,
}

impl From<&Delivery> for DeliveryItem {
    fn from(delivery: &Delivery) -> Self {
        DeliveryItem {
            id: delivery.id.to_string(),
            event: delivery.event_type.clone(),
            status: delivery.status.as_str(),
            created_at: rfc3339(delivery.created_at),
            attempts: delivery
                .attempts
                .iter()
                .map(|attempt| AttemptItem {
                    at: rfc3339(attempt.at),
                    response_code: attempt.response_code,
                    duration_ms: attempt.duration_ms,
                    error: attempt.error.clone(),
                })
                .collect(),
        }
    }
}

/// A webhook to register.
#[derive(Deserialize, ToSchema)]
pub struct NewWebhookBody {
    /// An `http` or `https` URL on a public address (unless
    /// `webhooks_allow_private`), at most 2000 characters.
    #[schema(example = "https://hooks.example.com/plaza")]
    pub url: String,
    /// A non-empty list of event types (`user.created`, `user.banned`,
    /// `user.unbanned`, `post.created`, `reply.created`, `report.created`,
    /// `moderation.action`, `registration.pending`, `appeal.created`).
    #[schema(example = json!(["post.created"]))]
    pub events: Vec<String>,
    /// At most 500 characters.
    pub description: Option<String>,
}

/// Changes to a webhook; absent fields stay as they are.
#[derive(Deserialize, ToSchema)]
pub struct WebhookPatch {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    /// Activating a webhook counts its failures afresh.
    pub active: Option<bool>,
}

/// 403 unless the token holds `admin:super`.
fn require_super(admin: &AdminToken) -> Result<(), AppError> {
    if admin.claims.grants_super() {
        Ok(())
    } else {
        Err(AppError::InsufficientAdminPermissions {
            required: "admin:super",
        })
    }
}

/// The event types named: a non-empty list of known ones, each once.
fn read_events(names: &[String]) -> Result<Vec<EventType>, String> {
    if names.is_empty() {
        return Err("must name at least one event type".to_owned());
    }
    let mut events = Vec::with_capacity(names.len());
    for name in names {
        let event = EventType::parse(name).ok_or_else(|| format!("unknown event type {name:?}"))?;
        if !events.contains(&event) {
            events.push(event);
        }
    }
    Ok(events)
}

/// The webhooks, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/admin/webhooks",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:super"])),
    params(ListQuery),
    responses(
        (status = 200, description = "A page of webhooks", body = ListEnvelope<WebhookItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:super` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 422, description = "`limit` or `offset` is invalid", body = AdminV1Error),
    )
)]
pub async fn list_webhooks(
    State(state): State<AppState>,
    admin: AdminToken,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<AppJson<ListEnvelope<WebhookItem>>, AppError> {
    require_super(&admin)?;
    let page = query.page()?;
    let found = state.db.webhooks(page).await?;
    Ok(AppJson(ListEnvelope::new(
        found.webhooks.iter().map(WebhookItem::from).collect(),
        Pagination::new(found.total, page),
    )))
}

/// Register a webhook: its signing secret is in this answer only. Audited
/// as `webhook.create`.
#[utoipa::path(
    post,
    path = "/api/v1/admin/webhooks",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:super"])),
    request_body = NewWebhookBody,
    responses(
        (status = 201, description = "Registered; `secret` is shown this once", body = Envelope<CreatedWebhook>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:super` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 409, description = "100 webhooks exist already (`CONFLICT`)", body = AdminV1Error),
        (status = 422, description = "A bad `url` (not http(s), or on a private address), `events` or `description` (`VALIDATION_ERROR`)", body = AdminV1Error),
    )
)]
pub async fn create_webhook(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    AppJson(body): AppJson<NewWebhookBody>,
) -> Result<(StatusCode, AppJson<Envelope<CreatedWebhook>>), AppError> {
    require_super(&admin)?;
    let mut problems = Problems::default();
    let url = problems.check(
        "url",
        state.webhooks.check_url(&body.url, MAX_URL_CHARS).await,
    );
    let events = problems.check("events", read_events(&body.events));
    let description = body
        .description
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty());
    if let Some(text) = &description {
        problems.check(
            "description",
            check_text(text, MAX_DESCRIPTION_CHARS, false, TextRule::Lines),
        );
    }
    problems.finish()?;
    let (Some(url), Some(events)) = (url, events) else {
        return Err(AppError::internal("a checked webhook body lost a field"));
    };
    let secret = Webhooks::new_secret();
    let new = NewWebhook {
        url: url.to_string(),
        description,
        events,
        secret_sealed: state.webhooks.seal(&secret).map_err(AppError::internal)?,
    };
    let now = now_millis();
    let webhook = state
        .db
        .write(move |tx| {
            Box::pin(async move {
                let webhook = webhooks::create(tx, &new, now).await?;
                record(
                    tx,
                    &context,
                    "webhook.create",
                    &webhook,
                    json!({
                        "url": webhook.url,
                        "events": events_of(&webhook),
                        "description": webhook.description,
                    }),
                )
                .await?;
                Ok(webhook)
            })
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        AppJson(Envelope::new(CreatedWebhook {
            webhook: WebhookItem::from(&webhook),
            secret,
        })),
    ))
}

/// One webhook.
#[utoipa::path(
    get,
    path = "/api/v1/admin/webhooks/{id}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:super"])),
    params(("id" = String, Path, description = "The webhook's id", example = "3")),
    responses(
        (status = 200, description = "The webhook", body = Envelope<WebhookItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:super` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No such webhook", body = AdminV1Error),
    )
)]
pub async fn get_webhook(
    State(state): State<AppState>,
    admin: AdminToken,
    IdPath(id): IdPath,
) -> Result<AppJson<Envelope<WebhookItem>>, AppError> {
    require_super(&admin)?;
    let webhook = state.db.webhook(id).await?;
    Ok(AppJson(Envelope::new(WebhookItem::from(&webhook))))
}

/// Change a webhook's URL, events or whether it is active. Audited as
/// `webhook.update`.
#[utoipa::path(
    patch,
    path = "/api/v1/admin/webhooks/{id}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:super"])),
    params(("id" = String, Path, description = "The webhook's id", example = "3")),
    request_body = WebhookPatch,
    responses(
        (status = 200, description = "The webhook as changed", body = Envelope<WebhookItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:super` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No such webhook", body = AdminV1Error),
        (status = 422, description = "A bad `url` or `events`, or nothing to change (`VALIDATION_ERROR`)", body = AdminV1Error),
    )
)]
pub async fn update_webhook(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppJson(body): AppJson<WebhookPatch>,
) -> Result<AppJson<Envelope<WebhookItem>>, AppError> {
    require_super(&admin)?;
    let mut problems = Problems::default();
    if body.url.is_none() && body.events.is_none() && body.active.is_none() {
        problems.add("body", "must change at least one of url, events, active");
    }
    let url = match &body.url {
        Some(url) => problems.check("url", state.webhooks.check_url(url, MAX_URL_CHARS).await),
        None => None,
    };
    let events = match &body.events {
        Some(events) => problems.check("events", read_events(events)),
        None => None,
    };
    problems.finish()?;
    let changes = WebhookChanges {
        url: url.map(|url| url.to_string()),
        events,
        active: body.active,
    };
    let now = now_millis();
    let webhook = state
        .db
        .write(move |tx| {
            Box::pin(async move {
                let before = webhooks::webhook_in(tx, id).await?;
                let after = webhooks::update(tx, id, &changes, now).await?;
                let mut changed = serde_json::Map::new();
                let mut compare =
                    |field: &str, before: serde_json::Value, after: serde_json::Value| {
                        if before != after {
                            changed.insert(field.to_owned(), audit::change(before, after));
                        }
                    };
                compare("url", json!(before.url), json!(after.url));
                compare(
                    "events",
                    json!(events_of(&before)),
                    json!(events_of(&after)),
                );
                compare("active", json!(before.active), json!(after.active));
                if !changed.is_empty() {
                    record(tx, &context, "webhook.update", &after, changed.into()).await?;
                }
                Ok(after)
            })
        })
        .await?;
    Ok(AppJson(Envelope::new(WebhookItem::from(&webhook))))
}

/// Delete a webhook and its deliveries. Audited as `webhook.delete`.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/webhooks/{id}",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:super"])),
    params(("id" = String, Path, description = "The webhook's id", example = "3")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:super` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No such webhook", body = AdminV1Error),
    )
)]
pub async fn delete_webhook(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    require_super(&admin)?;
    state
        .db
        .write(move |tx| {
            Box::pin(async move {
                let webhook = webhooks::delete(tx, id).await?;
                record(
                    tx,
                    &context,
                    "webhook.delete",
                    &webhook,
                    json!({
                        "url": webhook.url,
                        "events": events_of(&webhook),
                    }),
                )
                .await
            })
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The deliveries of a webhook, newest first, each with its attempts.
#[utoipa::path(
    get,
    path = "/api/v1/admin/webhooks/{id}/deliveries",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:super"])),
    params(("id" = String, Path, description = "The webhook's id", example = "3"), ListQuery),
    responses(
        (status = 200, description = "A page of deliveries, newest first", body = ListEnvelope<DeliveryItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:super` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No such webhook", body = AdminV1Error),
        (status = 422, description = "`limit` or `offset` is invalid", body = AdminV1Error),
    )
)]
pub async fn list_deliveries(
    State(state): State<AppState>,
    admin: AdminToken,
    IdPath(id): IdPath,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<AppJson<ListEnvelope<DeliveryItem>>, AppError> {
    require_super(&admin)?;
    let page = query.page()?;
    state.db.webhook(id).await?;
    let found = state.db.deliveries_of(id, page).await?;
    Ok(AppJson(ListEnvelope::new(
        found.deliveries.iter().map(DeliveryItem::from).collect(),
        Pagination::new(found.total, page),
    )))
}

/// Send a delivered or failed delivery again, with the same id (a receiver
/// deduplicating by it sees a repeat). Answers it, pending. Audited as
/// `webhook.redeliver`.
#[utoipa::path(
    post,
    path = "/api/v1/admin/webhooks/{id}/deliveries/{deliveryId}/redeliver",
    tag = "admin-v1",
    security(("admin_jwt" = ["admin:super"])),
    params(
        ("id" = String, Path, description = "The webhook's id", example = "3"),
        ("deliveryId" = String, Path, description = "The delivery's id", example = "41"),
    ),
    responses(
        (status = 202, description = "Queued again", body = Envelope<DeliveryItem>),
        (status = 401, description = "No valid admin token", body = AdminV1Error),
        (status = 403, description = "No `admin:super` (`INSUFFICIENT_ADMIN_PERMISSIONS`)", body = AdminV1Error),
        (status = 404, description = "No such webhook, or no such delivery of it", body = AdminV1Error),
        (status = 409, description = "The delivery is pending already, or the webhook is inactive (`INVALID_TRANSITION`)", body = AdminV1Error),
    )
)]
pub async fn redeliver(
    State(state): State<AppState>,
    admin: AdminToken,
    RequestAudit(context): RequestAudit,
    IdTextPath(id, delivery): IdTextPath,
) -> Result<(StatusCode, AppJson<Envelope<DeliveryItem>>), AppError> {
    require_super(&admin)?;
    let delivery_id = parse_id(&delivery).ok_or(AppError::NotFound("delivery"))?;
    let now = now_millis();
    state
        .db
        .write(move |tx| {
            Box::pin(async move {
                webhooks::redeliver(tx, id, delivery_id, now).await?;
                audit::record(
                    tx,
                    &context,
                    AuditAction {
                        action: "webhook.redeliver",
                        target_type: "webhook",
                        target_id: Some(id.to_string()),
                        changes: json!({"delivery": delivery_id.to_string()}),
                    },
                )
                .await?;
                Ok(())
            })
        })
        .await?;
    state.webhooks.wake().notify_one();
    let delivery = state
        .db
        .delivery(id, delivery_id)
        .await?
        .ok_or(AppError::NotFound("delivery"))?;
    Ok((
        StatusCode::ACCEPTED,
        AppJson(Envelope::new(DeliveryItem::from(&delivery))),
    ))
}

/// The names of `webhook`'s events.
fn events_of(webhook: &Webhook) -> Vec<&'static str> {
    webhook.events.iter().map(|event| event.as_str()).collect()
}

/// Records `action` on `webhook` in `tx`.
async fn record(
    tx: &mut plaza_domain::Tx<'_>,
    context: &AuditContext,
    action: &'static str,
    webhook: &Webhook,
    changes: serde_json::Value,
) -> Result<(), plaza_domain::DomainError> {
    audit::record(
        tx,
        context,
        AuditAction {
            action,
            target_type: "webhook",
            target_id: Some(webhook.id.to_string()),
            changes,
        },
    )
    .await
    .map(|_| ())
}
