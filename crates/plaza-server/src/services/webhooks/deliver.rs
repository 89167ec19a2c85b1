//! The sender: every instance claims due deliveries in batches
//! (`plaza_domain::webhooks`: one conditional UPDATE, so each attempt
//! happens on one instance), POSTs each batch's deliveries at once, signed,
//! and records their outcomes in one unit of work. A non-2xx answer, no
//! answer within 10 s, or a refused target is tried again after
//! `webhook_retry_initial_secs`, the wait doubling, until
//! `webhook_retry_window_secs` after the delivery was queued; then it is
//! `failed`. A webhook deactivated by its 50th failed delivery in a row is
//! logged at WARN and counted.

use std::time::{Duration, Instant};

use plaza_domain::Database;
use plaza_domain::time::{now_millis, rfc3339};
use plaza_domain::webhooks::{AttemptOutcome, ClaimedDelivery, DeliveryClaim, FinishedAttempt};
use url::Url;

use super::signature::signature_header;
use super::{ATTEMPT_TIMEOUT, Webhooks};

/// How often every instance looks for due deliveries (an event written on
/// this instance wakes its sender at once).
pub const SENDER_PERIOD: Duration = Duration::from_secs(1);

/// Deliveries one round claims and sends at once, at most.
const DELIVERIES_PER_ROUND: i64 = 256;
/// Rounds of one run; a run that found more work wakes the next at once.
const ROUNDS_PER_RUN: usize = 8;
/// How long a claim outlives the longest attempt.
const LEASE_MARGIN: Duration = Duration::from_secs(30);

impl Webhooks {
    /// One run of the sender for `owner` (this instance): answers what it
    /// did, for the log.
    pub async fn deliver_due(&self, db: &Database, owner: &str) -> Result<String, String> {
        let (mut delivered, mut retried, mut failed) = (0usize, 0usize, 0usize);
        for _ in 0..ROUNDS_PER_RUN {
            let now = now_millis();
            let claimed = db
                .claim_deliveries(DeliveryClaim {
                    owner,
                    now,
                    lease_until: now + millis(ATTEMPT_TIMEOUT + LEASE_MARGIN),
                    limit: DELIVERIES_PER_ROUND,
                })
                .await
                .map_err(|error| error.to_string())?;
            let full = claimed.len() as i64 == DELIVERIES_PER_ROUND;
            if claimed.is_empty() {
                break;
            }
            let finished = futures_util::future::join_all(
                claimed.iter().map(|delivery| self.attempt(delivery)),
            )
            .await;
            for attempt in &finished {
                let outcome = match attempt.outcome {
                    AttemptOutcome::Delivered => {
                        delivered += 1;
                        "delivered"
                    }
                    AttemptOutcome::Retry(_) => {
                        retried += 1;
                        "retried"
                    }
                    AttemptOutcome::Failed => {
                        failed += 1;
                        "failed"
                    }
                };
                metrics::counter!("plaza_webhook_attempts_total", "outcome" => outcome)
                    .increment(1);
            }
            let deactivated = db
                .finish_deliveries(owner, finished)
                .await
                .map_err(|error| error.to_string())?;
            for webhook in deactivated {
                tracing::warn!(
                    webhook,
                    failures = plaza_domain::webhooks::FAILURES_TO_DEACTIVATE,
                    "webhook deactivated after its deliveries failed in a row"
                );
                metrics::counter!("plaza_webhooks_deactivated_total").increment(1);
            }
            if !full {
                return Ok(summary(delivered, retried, failed));
            }
        }
        if delivered + retried + failed > 0 {
            // More may be due: the next run starts at once.
            self.wake.notify_one();
        }
        Ok(summary(delivered, retried, failed))
    }

    /// One attempt at `delivery`, and what to record of it.
    async fn attempt(&self, delivery: &ClaimedDelivery) -> FinishedAttempt {
        let at = now_millis();
        let started = Instant::now();
        let sent = self.send(delivery).await;
        let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let (response_code, error) = match sent {
            Ok(status) if (200..300).contains(&status) => (Some(i64::from(status)), None),
            Ok(status) => (
                Some(i64::from(status)),
                Some(format!("the receiver answered {status}")),
            ),
            Err(error) => (None, Some(error)),
        };
        let outcome = if error.is_none() {
            AttemptOutcome::Delivered
        } else {
            self.retry_or_fail(delivery, at)
        };
        FinishedAttempt {
            delivery_id: delivery.id,
            webhook_id: delivery.webhook_id,
            attempts: delivery.attempts,
            at,
            response_code,
            duration_ms,
            error,
            outcome,
        }
    }

    /// POSTs `delivery`, signed; answers the receiver's status.
    async fn send(&self, delivery: &ClaimedDelivery) -> Result<u16, String> {
        let url = Url::parse(&delivery.url).map_err(|_| "the URL does not parse".to_owned())?;
        self.rules
            .check_form(&url)
            .map_err(|error| format!("the target is refused: {error}"))?;
        let secret = self.key.open(&delivery.secret_sealed)?;
        let body = body_of(delivery);
        let signature = signature_header(&secret, now_millis() / 1000, &body);
        let answer = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("X-Plaza-Event", delivery.event_type.as_str())
            .header("X-Plaza-Delivery", delivery.id.to_string())
            .header("X-Plaza-Signature", signature)
            .body(body)
            .send()
            .await
            .map_err(|error| {
                if error.is_timeout() {
                    format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs())
                } else {
                    error_chain(&error)
                }
            })?;
        Ok(answer.status().as_u16())
    }

    /// Another attempt after the doubling wait, unless it would fall past
    /// the retry window: then the delivery has failed.
    fn retry_or_fail(&self, delivery: &ClaimedDelivery, now: i64) -> AttemptOutcome {
        let doublings = u32::try_from(delivery.attempts.saturating_sub(1).min(30)).unwrap_or(30);
        let wait = self
            .retry_initial
            .saturating_mul(2u32.saturating_pow(doublings));
        let retry_at = now.saturating_add(millis(wait));
        if retry_at
            > delivery
                .created_at
                .saturating_add(millis(self.retry_window))
        {
            AttemptOutcome::Failed
        } else {
            AttemptOutcome::Retry(retry_at)
        }
    }
}

/// The JSON body of `delivery`: `{id, type, created_at, data}`, its id the
/// delivery's (as `X-Plaza-Delivery`).
fn body_of(delivery: &ClaimedDelivery) -> String {
    let quoted = |text: &str| serde_json::Value::from(text).to_string();
    format!(
        "{{\"id\":{},\"type\":{},\"created_at\":{},\"data\":{}}}",
        quoted(&delivery.id.to_string()),
        quoted(&delivery.event_type),
        quoted(&rfc3339(delivery.event_created_at)),
        delivery.data
    )
}

fn summary(delivered: usize, retried: usize, failed: usize) -> String {
    if delivered + retried + failed == 0 {
        String::new()
    } else {
        format!("{delivered} webhook deliveries delivered, {retried} to retry, {failed} failed")
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// An error with its sources, for the attempt's log.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_carries_the_delivery_id_type_time_and_data() {
        let delivery = ClaimedDelivery {
            id: 12,
            attempts: 1,
            webhook_id: 3,
            url: "http://example.com/hook".to_owned(),
            secret_sealed: String::new(),
            event_type: "post.created".to_owned(),
            data: r#"{"post":{"id":"5"}}"#.to_owned(),
            event_created_at: 0,
            created_at: 0,
        };
        let body: serde_json::Value = serde_json::from_str(&body_of(&delivery)).unwrap();
        assert_eq!(body["id"], "12");
        assert_eq!(body["type"], "post.created");
        assert!(
            body["created_at"]
                .as_str()
                .unwrap()
                .starts_with("1970-01-01T00:00:00")
        );
        assert_eq!(body["data"]["post"]["id"], "5");
    }
}
