//! The console's webhooks (super admins): every webhook with its recent
//! deliveries (status, the receiver's code, how long the attempt took) and
//! a button sending a delivery again, through the unit of work of the
//! versioned admin API's redelivery.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::audit::{self, AuditAction};
use plaza_domain::listing::Page;
use plaza_domain::policy;
use plaza_domain::time::now_millis;
use plaza_domain::webhooks;
use serde::Deserialize;
use serde_json::json;

use super::page::{ConsoleUser, page};
use crate::auth::{RequestAudit, authorize};
use crate::controllers::admin_v1::webhooks::{DeliveryItem, WebhookItem};
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery, IdTextPath, parse_id};
use crate::state::AppState;

/// Webhooks shown (the most there may be).
const WEBHOOKS_SHOWN: i64 = webhooks::MAX_WEBHOOKS;
/// Recent deliveries shown per webhook.
const DELIVERIES_SHOWN: i64 = 10;

#[derive(Deserialize)]
pub struct ListQuery {
    /// What was just done, to confirm it.
    done: Option<String>,
}

/// `GET /admin/webhooks`: each webhook and its recent deliveries.
pub async fn list(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    authorize(policy::manage_webhooks(user.actor()), "webhook")?;
    let found = state
        .db
        .webhooks(Page {
            limit: WEBHOOKS_SHOWN,
            offset: 0,
        })
        .await?;
    let mut items = Vec::with_capacity(found.webhooks.len());
    for webhook in &found.webhooks {
        let deliveries = state
            .db
            .deliveries_of(
                webhook.id,
                Page {
                    limit: DELIVERIES_SHOWN,
                    offset: 0,
                },
            )
            .await?;
        items.push(json!({
            "webhook": WebhookItem::from(webhook),
            "deliveries": deliveries
                .deliveries
                .iter()
                .map(DeliveryItem::from)
                .collect::<Vec<_>>(),
            "total_deliveries": deliveries.total,
        }));
    }
    let done = match query.done.as_deref() {
        Some("redelivered") => Some("The delivery is queued again."),
        _ => None,
    };
    page(
        &state,
        &user,
        "webhooks",
        "webhooks.html",
        json!({"webhooks": items, "done": done}),
    )
}

/// The redeliver button's form.
#[derive(Deserialize)]
pub struct RedeliverForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
}

/// `POST /admin/webhooks/{id}/deliveries/{deliveryId}/redeliver`: sends
/// the delivery again (same id), audited as `webhook.redeliver`.
pub async fn redeliver(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdTextPath(id, delivery): IdTextPath,
    AppForm(form): AppForm<RedeliverForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    authorize(policy::manage_webhooks(user.actor()), "webhook")?;
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
    Ok(Redirect::to("/admin/webhooks?done=redelivered").into_response())
}
