//! Users' subscriptions to plans, as the admin user list summarises them.
//! A subscription is `active` or `inactive`; one whose end has passed
//! counts as inactive whatever its stored status. Changes go through a
//! unit of work with their audit entry.

use serde_json::json;
use sqlx::FromRow;

use crate::audit::{self, AuditAction, AuditContext};
use crate::time::now_millis;
use crate::{Database, DomainError, Tx};

/// The stored statuses.
pub const STATUSES: [&str; 2] = ["active", "inactive"];

/// A stored subscription. Times are Unix milliseconds.
#[derive(Debug, Clone, FromRow)]
pub struct Subscription {
    pub id: i64,
    pub user_id: i64,
    pub plan_name: String,
    pub status: String,
    pub started_at: i64,
    pub ends_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Subscription {
    /// Active now: stored as active and not past its end.
    pub fn is_active_at(&self, now: i64) -> bool {
        self.status == "active" && self.ends_at.is_none_or(|end| end > now)
    }
}

/// A subscription to add; `started_at` defaults to now.
#[derive(Debug, Clone)]
pub struct NewSubscription {
    pub user_id: i64,
    pub plan_name: String,
    pub status: &'static str,
    pub started_at: Option<i64>,
    pub ends_at: Option<i64>,
}

/// What an update changes; `ends_at: Some(None)` removes the end.
#[derive(Debug, Clone, Default)]
pub struct SubscriptionChanges {
    pub plan_name: Option<String>,
    pub status: Option<&'static str>,
    pub ends_at: Option<Option<i64>>,
}

const COLUMNS: &str = "id, user_id, plan_name, status, started_at, ends_at, created_at, updated_at";

/// Adds a subscription to an existing user, audited as `subscription.create`.
pub async fn create(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    new: NewSubscription,
) -> Result<Subscription, DomainError> {
    crate::users::user_in(tx, new.user_id).await?;
    let now = now_millis();
    let started_at = new.started_at.unwrap_or(now);
    if new.ends_at.is_some_and(|end| end <= started_at) {
        return Err(DomainError::InvalidTransition(
            "a subscription must end after it starts".to_owned(),
        ));
    }
    let subscription: Subscription = sqlx::query_as(&format!(
        "INSERT INTO subscriptions (user_id, plan_name, status, started_at, ends_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING {COLUMNS}"
    ))
    .bind(new.user_id)
    .bind(new.plan_name)
    .bind(new.status)
    .bind(started_at)
    .bind(new.ends_at)
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    audit::record(
        tx,
        context,
        AuditAction {
            action: "subscription.create",
            target_type: "subscription",
            target_id: Some(subscription.id.to_string()),
            changes: json!({
                "userId": subscription.user_id,
                "planName": subscription.plan_name,
                "status": subscription.status,
                "startedAt": subscription.started_at,
                "endsAt": subscription.ends_at,
            }),
        },
    )
    .await?;
    Ok(subscription)
}

/// Changes a subscription, audited as `subscription.update` with each
/// changed field's before and after.
pub async fn update(
    tx: &mut Tx<'_>,
    context: &AuditContext,
    id: i64,
    changes: SubscriptionChanges,
) -> Result<Subscription, DomainError> {
    let before: Subscription = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM subscriptions WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or(DomainError::NotFound("subscription"))?;
    let plan_name = changes
        .plan_name
        .clone()
        .unwrap_or_else(|| before.plan_name.clone());
    let status = changes.status.unwrap_or(before.status.as_str()).to_owned();
    let ends_at = changes.ends_at.unwrap_or(before.ends_at);
    if ends_at.is_some_and(|end| end <= before.started_at) {
        return Err(DomainError::InvalidTransition(
            "a subscription must end after it starts".to_owned(),
        ));
    }
    let after: Subscription = sqlx::query_as(&format!(
        "UPDATE subscriptions SET plan_name = $2, status = $3, ends_at = $4, updated_at = $5 \
         WHERE id = $1 RETURNING {COLUMNS}"
    ))
    .bind(id)
    .bind(plan_name)
    .bind(status)
    .bind(ends_at)
    .bind(now_millis())
    .fetch_one(&mut **tx)
    .await?;
    let mut changed = serde_json::Map::new();
    if after.plan_name != before.plan_name {
        changed.insert(
            "planName".into(),
            audit::change(before.plan_name.clone(), after.plan_name.clone()),
        );
    }
    if after.status != before.status {
        changed.insert(
            "status".into(),
            audit::change(before.status.clone(), after.status.clone()),
        );
    }
    if after.ends_at != before.ends_at {
        changed.insert(
            "endsAt".into(),
            audit::change(before.ends_at, after.ends_at),
        );
    }
    audit::record(
        tx,
        context,
        AuditAction {
            action: "subscription.update",
            target_type: "subscription",
            target_id: Some(id.to_string()),
            changes: serde_json::Value::Object(changed),
        },
    )
    .await?;
    Ok(after)
}

/// Subscriptions of one plan, for the analytics dashboard.
#[derive(Debug, Clone, FromRow)]
pub struct PlanFigures {
    pub plan_name: String,
    /// Active now.
    pub active: i64,
    /// Started within the range asked for.
    pub started: i64,
}

impl Database {
    /// Per plan: how many are active now and how many started in
    /// `since..until` (Unix milliseconds), most active first.
    pub async fn subscription_figures(
        &self,
        since: i64,
        until: i64,
    ) -> Result<Vec<PlanFigures>, DomainError> {
        Ok(sqlx::query_as(
            "SELECT plan_name, \
               SUM(CASE WHEN status = 'active' AND (ends_at IS NULL OR ends_at > $2) \
                   THEN 1 ELSE 0 END) AS active, \
               SUM(CASE WHEN started_at >= $1 AND started_at < $2 THEN 1 ELSE 0 END) AS started \
             FROM subscriptions GROUP BY plan_name ORDER BY active DESC, plan_name",
        )
        .bind(since)
        .bind(until)
        .fetch_all(&mut *self.lease().await?)
        .await?)
    }
}
