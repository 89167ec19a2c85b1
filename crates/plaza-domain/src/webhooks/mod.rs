//! Webhooks (DECISIONS.md "Tokens for members and bots, and webhooks
//! (round 5)"): the endpoints an administrator registers, the outbox of
//! events written in the unit of work that caused them ([`enqueue`]), and
//! their deliveries, claimed once across instances, each attempt logged.
//!
//! `model` holds the event types and the webhooks themselves, `outbox`
//! the one way an event enters, `deliveries` the claims, outcomes, log and
//! redelivery.

mod deliveries;
mod model;
mod outbox;

pub use deliveries::{
    Attempt, AttemptOutcome, ClaimedDelivery, Delivery, DeliveryClaim, DeliveryPage,
    DeliveryStatus, FAILURES_TO_DEACTIVATE, FinishedAttempt, MAX_ERROR_CHARS, redeliver,
};
pub use model::{
    EventType, MAX_DESCRIPTION_CHARS, MAX_URL_CHARS, MAX_WEBHOOKS, NewWebhook, Webhook,
    WebhookChanges, WebhookPage, create, delete, update, webhook_in,
};
pub use outbox::enqueue;
