//! What a webhook is: its event types, its stored row (the signing secret
//! only ever sealed), and the writes an administrator makes.

use sqlx::FromRow;

use crate::dialect::Dialect;
use crate::listing::Page;
use crate::{Database, DomainError, Flag, Tx};

/// Most webhooks that may exist: every event is written once per
/// subscriber, so the work one event causes stays bounded.
pub const MAX_WEBHOOKS: i64 = 100;
/// Longest target URL.
pub const MAX_URL_CHARS: usize = 2000;
/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// What happened, as a webhook subscribes to it and receives it as `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    UserCreated,
    UserBanned,
    UserUnbanned,
    PostCreated,
    ReplyCreated,
    ReportCreated,
    ModerationAction,
    RegistrationPending,
    AppealCreated,
}

impl EventType {
    pub const ALL: [EventType; 9] = [
        EventType::UserCreated,
        EventType::UserBanned,
        EventType::UserUnbanned,
        EventType::PostCreated,
        EventType::ReplyCreated,
        EventType::ReportCreated,
        EventType::ModerationAction,
        EventType::RegistrationPending,
        EventType::AppealCreated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::UserCreated => "user.created",
            EventType::UserBanned => "user.banned",
            EventType::UserUnbanned => "user.unbanned",
            EventType::PostCreated => "post.created",
            EventType::ReplyCreated => "reply.created",
            EventType::ReportCreated => "report.created",
            EventType::ModerationAction => "moderation.action",
            EventType::RegistrationPending => "registration.pending",
            EventType::AppealCreated => "appeal.created",
        }
    }

    pub fn parse(name: &str) -> Option<EventType> {
        Self::ALL.into_iter().find(|event| event.as_str() == name)
    }
}

/// A registered webhook.
#[derive(Debug, Clone)]
pub struct Webhook {
    pub id: i64,
    pub url: String,
    pub description: Option<String>,
    /// The events it receives, in [`EventType::ALL`]'s order.
    pub events: Vec<EventType>,
    /// The signing secret, sealed with the webhook key.
    pub secret_sealed: String,
    pub active: bool,
    /// Deliveries that failed since the last one delivered.
    pub failures_in_row: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(FromRow)]
struct WebhookRow {
    id: i64,
    url: String,
    description: Option<String>,
    secret_sealed: String,
    active: Flag,
    failures_in_row: i64,
    created_at: i64,
    updated_at: i64,
    /// The subscribed event names, joined by `, `.
    events: Option<String>,
}

impl From<WebhookRow> for Webhook {
    fn from(row: WebhookRow) -> Self {
        let named: Vec<&str> = row
            .events
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .collect();
        Webhook {
            id: row.id,
            url: row.url,
            description: row.description,
            events: EventType::ALL
                .into_iter()
                .filter(|event| named.contains(&event.as_str()))
                .collect(),
            secret_sealed: row.secret_sealed,
            active: row.active.0,
            failures_in_row: row.failures_in_row,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// The columns of a webhook with its subscriptions, from `webhooks w`.
fn webhook_columns(dialect: Dialect) -> String {
    format!(
        "w.id, w.url, w.description, w.secret_sealed, w.active, w.failures_in_row, \
         w.created_at, w.updated_at, \
         (SELECT {} FROM webhook_subscriptions s WHERE s.webhook_id = w.id) AS events",
        dialect.string_agg("s.event", "s.event")
    )
}

/// A webhook to register.
#[derive(Debug, Clone)]
pub struct NewWebhook {
    pub url: String,
    pub description: Option<String>,
    pub events: Vec<EventType>,
    pub secret_sealed: String,
}

/// Fields a change sets; `None` keeps the current value.
#[derive(Debug, Clone, Default)]
pub struct WebhookChanges {
    pub url: Option<String>,
    pub events: Option<Vec<EventType>>,
    pub active: Option<bool>,
}

/// The webhook `id` as `tx` sees it.
pub async fn webhook_in(tx: &mut Tx<'_>, id: i64) -> Result<Webhook, DomainError> {
    let dialect = Dialect::of(tx);
    let row: Option<WebhookRow> = sqlx::query_as(&format!(
        "SELECT {} FROM webhooks w WHERE w.id = $1",
        webhook_columns(dialect)
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    row.map(Webhook::from)
        .ok_or(DomainError::NotFound("webhook"))
}

/// Registers `new` at `now` (active); more than [`MAX_WEBHOOKS`] is a
/// [`DomainError::Conflict`]. Creations queue behind one another, so the
/// cap holds under concurrent ones.
pub async fn create(tx: &mut Tx<'_>, new: &NewWebhook, now: i64) -> Result<Webhook, DomainError> {
    if let Some(lock) = Dialect::of(tx).queue_writers_of("webhooks") {
        sqlx::query(&lock).execute(&mut **tx).await?;
    }
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM webhooks")
        .fetch_one(&mut **tx)
        .await?;
    if count >= MAX_WEBHOOKS {
        return Err(DomainError::Conflict(format!(
            "at most {MAX_WEBHOOKS} webhooks may exist; delete one first"
        )));
    }
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO webhooks (url, description, secret_sealed, active, failures_in_row, \
         created_at, updated_at) VALUES ($1, $2, $3, TRUE, 0, $4, $4) RETURNING id",
    )
    .bind(new.url.clone())
    .bind(new.description.clone())
    .bind(new.secret_sealed.clone())
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    subscribe(tx, id, &new.events).await?;
    webhook_in(tx, id).await
}

/// Replaces the subscriptions of webhook `id` with `events`.
async fn subscribe(tx: &mut Tx<'_>, id: i64, events: &[EventType]) -> Result<(), DomainError> {
    sqlx::query("DELETE FROM webhook_subscriptions WHERE webhook_id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await?;
    for event in events {
        sqlx::query(
            "INSERT INTO webhook_subscriptions (webhook_id, event) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING",
        )
        .bind(id)
        .bind(event.as_str())
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Applies `changes` to webhook `id` at `now`; activating it counts its
/// failures afresh.
pub async fn update(
    tx: &mut Tx<'_>,
    id: i64,
    changes: &WebhookChanges,
    now: i64,
) -> Result<Webhook, DomainError> {
    webhook_in(tx, id).await?;
    if let Some(url) = &changes.url {
        sqlx::query("UPDATE webhooks SET url = $1 WHERE id = $2")
            .bind(url.clone())
            .bind(id)
            .execute(&mut **tx)
            .await?;
    }
    if let Some(active) = changes.active {
        sqlx::query(
            "UPDATE webhooks SET active = $1, \
             failures_in_row = CASE WHEN $1 THEN 0 ELSE failures_in_row END WHERE id = $2",
        )
        .bind(active)
        .bind(id)
        .execute(&mut **tx)
        .await?;
    }
    if let Some(events) = &changes.events {
        subscribe(tx, id, events).await?;
    }
    sqlx::query("UPDATE webhooks SET updated_at = $1 WHERE id = $2")
        .bind(now)
        .bind(id)
        .execute(&mut **tx)
        .await?;
    webhook_in(tx, id).await
}

/// Deletes webhook `id`, its subscriptions and deliveries; answers it as it
/// was.
pub async fn delete(tx: &mut Tx<'_>, id: i64) -> Result<Webhook, DomainError> {
    let webhook = webhook_in(tx, id).await?;
    sqlx::query("DELETE FROM webhooks WHERE id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await?;
    Ok(webhook)
}

/// One page of webhooks and how many there are.
#[derive(Debug, Clone)]
pub struct WebhookPage {
    pub webhooks: Vec<Webhook>,
    pub total: i64,
}

impl Database {
    /// The webhooks, oldest first.
    pub async fn webhooks(&self, page: Page) -> Result<WebhookPage, DomainError> {
        let mut lease = self.lease().await?;
        let (total,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM webhooks")
            .fetch_one(&mut *lease)
            .await?;
        let rows: Vec<WebhookRow> = sqlx::query_as(&format!(
            "SELECT {} FROM webhooks w ORDER BY w.id LIMIT $1 OFFSET $2",
            webhook_columns(self.dialect())
        ))
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&mut *lease)
        .await?;
        Ok(WebhookPage {
            webhooks: rows.into_iter().map(Webhook::from).collect(),
            total,
        })
    }

    /// The webhook `id`.
    pub async fn webhook(&self, id: i64) -> Result<Webhook, DomainError> {
        let row: Option<WebhookRow> = sqlx::query_as(&format!(
            "SELECT {} FROM webhooks w WHERE w.id = $1",
            webhook_columns(self.dialect())
        ))
        .bind(id)
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        row.map(Webhook::from)
            .ok_or(DomainError::NotFound("webhook"))
    }
}
