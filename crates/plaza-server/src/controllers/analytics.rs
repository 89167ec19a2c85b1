//! `POST /api/analytics/collect` and `POST /api/analytics/collect/batch`:
//! signed-in clients report what their users do (SPEC.md "Analytics event").
//! Every event is checked before any is stored; the answer comes once the
//! writer has committed the events ([`crate::services::analytics::ingest`]), so an
//! acknowledged event is never lost.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use plaza_domain::analytics::{self, EventProblem, ValidEvent};
use plaza_domain::time::now_millis;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::auth::OptionalUser;
use crate::http::error::schema::GeneralError;
use crate::http::error::{AppError, FieldError};
use crate::http::extract::AppJson;
use crate::http::extract::documented::{Answer, DocumentedExtractor};
use crate::http::rate_limit::{Caller, Limit};
use crate::services::analytics::ingest::IngestError;
use crate::services::analytics::{Origin, RequestFacts};
use crate::state::AppState;

/// Events one batch may carry (DECISIONS.md).
pub const MAX_BATCH_EVENTS: usize = 100;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(collect_event))
        .routes(crate::documented_routes!(collect_batch))
}

/// The signed-in user sending events, and what the server adds to them.
/// Without a valid session the answer is 403 (SPEC.md), not the 401 other
/// signed-in routes give.
pub struct Collector {
    origin: Origin,
    /// The rate limiter's view of the caller, to charge a batch's events;
    /// none when rate limits are off.
    caller: Option<Caller>,
}

impl FromRequestParts<AppState> for Collector {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let OptionalUser(user) = OptionalUser::for_analytics(parts, state).await?;
        let user = user.ok_or_else(|| {
            AppError::NotAllowed("a valid session is required to send analytics events".to_owned())
        })?;
        let peer = parts
            .extensions
            .get::<ConnectInfo<std::net::SocketAddr>>()
            .map(|ConnectInfo(peer)| peer.ip());
        let origin = state.analytics.origin(&RequestFacts {
            user_id: user.user_id(),
            address: crate::http::rate_limit::client_address(
                parts,
                state.rate_limiter.trusted_proxies(),
            ),
            peer_is_trusted_proxy: peer
                .is_some_and(|peer| state.rate_limiter.trusted_proxies().trusts(peer)),
            headers: &parts.headers,
        });
        Ok(Collector {
            origin,
            caller: parts.extensions.get::<Caller>().copied(),
        })
    }
}

impl DocumentedExtractor for Collector {
    const ANSWERS: &'static [Answer] = &[Answer::new(403, "No valid session")];
}

/// The request body as JSON, whatever its Content-Type (so
/// `navigator.sendBeacon`'s `text/plain` works); JSON that does not parse,
/// or holds a NUL byte anywhere, is 400 (SPEC.md), not the 400/422 split
/// of other routes.
pub struct EventsBody(Value);

impl FromRequest<AppState> for EventsBody {
    type Rejection = AppError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, AppError> {
        let bytes =
            Bytes::from_request(request, state)
                .await
                .map_err(|rejection: BytesRejection| {
                    crate::http::extract::json::body_rejection(rejection)
                })?;
        if let Some(field) = crate::http::extract::text_input::json_field_with_nul(&bytes) {
            return Err(AppError::BadField(
                crate::http::extract::text_input::nul_field(field),
            ));
        }
        serde_json::from_slice(&bytes)
            .map(EventsBody)
            .map_err(|error| {
                AppError::BadField(FieldError::new(
                    "body",
                    format!("is not valid JSON ({error})"),
                ))
            })
    }
}

impl DocumentedExtractor for EventsBody {
    const ANSWERS: &'static [Answer] = &[
        Answer::new(400, "Invalid JSON, or an event that breaks the schema"),
        Answer::new(413, "Body larger than the limit"),
    ];
}

/// One event, as clients send it (documentation; the body is checked by
/// [`analytics::validate`] so every failure is a 400 naming its field).
#[derive(Deserialize, ToSchema)]
pub struct EventInput {
    /// `page_view`, `button_click`, `form_submit`, `error_encountered`,
    /// `session_start`, `session_end`, `scroll`, or a type the operator added
    /// (`analytics_extra_event_types`).
    #[schema(example = "page_view")]
    pub event_type: String,
    /// An object of at most `analytics_max_event_data_bytes` (4096) bytes as
    /// JSON. `path`, `session_id`, `referrer`, `duration_ms`, `x` and `y`
    /// feed the admin analytics views (`path`, `session_id` and `referrer`
    /// without control characters); anything else is kept as sent.
    #[schema(value_type = Object, example = json!({"path": "/posts/42", "session_id": "s-1"}))]
    pub event_data: Value,
    /// ISO 8601 with a time zone; at most 5 minutes ahead of the server's
    /// clock and not older than the retention period.
    #[schema(example = "2026-11-25T12:00:00Z")]
    pub timestamp: String,
}

/// Up to 100 events, all checked before any is stored.
#[derive(Deserialize, ToSchema)]
pub struct BatchInput {
    pub events: Vec<EventInput>,
}

/// The answer to one event.
#[derive(Serialize, ToSchema)]
pub struct Collected {
    /// Always true.
    pub success: bool,
    /// The stored event's id.
    #[schema(example = "5f0c6a1e-3b1d-4c39-9a51-0f3e7c2b9d11")]
    pub event_id: String,
    #[schema(example = "Event recorded")]
    pub message: String,
}

/// The answer to a batch.
#[derive(Serialize, ToSchema)]
pub struct BatchCollected {
    /// Always true.
    pub success: bool,
    /// The stored events' ids, in the order they were sent.
    pub event_ids: Vec<String>,
    #[schema(example = "3 events recorded")]
    pub message: String,
}

/// Record one interaction event of the signed-in user. The answer comes
/// once the event is committed. 100 events a minute per user
/// (`rate_limit_analytics`; each event of a batch counts).
#[utoipa::path(
    post,
    path = "/api/analytics/collect",
    tag = "analytics",
    request_body = EventInput,
    responses(
        (status = 200, description = "Stored", body = Collected),
        (status = 400, description = "Invalid JSON, a missing field, an unsupported `event_type`, a bad `timestamp`, `event_data` that is not an object or is too large, or its `path`, `session_id` or `referrer` with control characters; `details.field` names it", body = GeneralError),
        (status = 403, description = "No valid session", body = GeneralError),
        (status = 503, description = "The writer's queue is full, or the database is down or refused these events; nothing of this request was stored", body = GeneralError),
    )
)]
pub async fn collect_event(
    State(state): State<AppState>,
    collector: Collector,
    EventsBody(body): EventsBody,
) -> Result<AppJson<Collected>, AppError> {
    let now = now_millis();
    let event = analytics::validate(&body, &state.analytics.rules, now, "").map_err(bad_field)?;
    let mut ids = store(&state, &collector.origin, vec![event], now).await?;
    Ok(AppJson(Collected {
        success: true,
        event_id: ids.pop().unwrap_or_default(),
        message: "Event recorded".to_owned(),
    }))
}

/// Record up to 100 events at once, for clients that buffer: every event
/// is checked first, and one bad event (or more than 100) stores none.
#[utoipa::path(
    post,
    path = "/api/analytics/collect/batch",
    tag = "analytics",
    request_body = BatchInput,
    responses(
        (status = 200, description = "All stored", body = BatchCollected),
        (status = 400, description = "Invalid JSON, `events` missing, empty or over 100, or an event that breaks the schema (`details.field` is `events.N.field`); nothing was stored", body = GeneralError),
        (status = 403, description = "No valid session", body = GeneralError),
        (status = 503, description = "The writer's queue is full, or the database is down or refused these events; nothing of this request was stored", body = GeneralError),
    )
)]
pub async fn collect_batch(
    State(state): State<AppState>,
    collector: Collector,
    EventsBody(body): EventsBody,
) -> Result<Response, AppError> {
    let raw_events = match body.get("events") {
        Some(Value::Array(events)) => events,
        Some(_) => return Err(bad_field(problem("events", "must be an array of events"))),
        None if !body.is_object() => {
            return Err(bad_field(problem("body", "must be a JSON object")));
        }
        None => return Err(bad_field(problem("events", "is required"))),
    };
    if raw_events.is_empty() || raw_events.len() > MAX_BATCH_EVENTS {
        return Err(bad_field(problem(
            "events",
            format!(
                "must hold 1 to {MAX_BATCH_EVENTS} events, not {}",
                raw_events.len()
            ),
        )));
    }
    let now = now_millis();
    let events = raw_events
        .iter()
        .enumerate()
        .map(|(index, raw)| {
            analytics::validate(
                raw,
                &state.analytics.rules,
                now,
                &format!("events.{index}."),
            )
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad_field)?;
    // The route's limit counted the request as one event; the rest count
    // here, before anything is stored, and the answer's headers say what
    // is left after them.
    let charged = match collector.caller {
        Some(caller) if events.len() > 1 => {
            let extra = u32::try_from(events.len() - 1).unwrap_or(u32::MAX);
            state
                .rate_limiter
                .charge(Limit::Analytics, caller, extra)
                .await?
        }
        _ => None,
    };
    let count = events.len();
    let event_ids = store(&state, &collector.origin, events, now).await?;
    let mut response = AppJson(BatchCollected {
        success: true,
        event_ids,
        message: format!("{count} events recorded"),
    })
    .into_response();
    if let Some(outcome) = charged {
        crate::http::limit_headers::write_headers(
            response.headers_mut(),
            outcome.limit,
            outcome.remaining,
            outcome.reset_after,
        );
    }
    Ok(response)
}

/// Hands `events` to the writer and waits for their commit; answers their ids.
async fn store(
    state: &AppState,
    origin: &Origin,
    events: Vec<ValidEvent>,
    now: i64,
) -> Result<Vec<String>, AppError> {
    let events: Vec<_> = events
        .into_iter()
        .map(|event| origin.event(event, new_event_id(now), now))
        .collect();
    let ids = events.iter().map(|event| event.event_id.clone()).collect();
    state
        .analytics
        .ingest
        .submit(&state.db, events)
        .await
        .map_err(|error| match error {
            IngestError::Busy => AppError::Busy {
                retry_after_secs: 1,
            },
            IngestError::Stopped => AppError::Unavailable("the server is stopping".to_owned()),
            IngestError::Failed(cause) => AppError::Unavailable(cause),
        })?;
    Ok(ids)
}

/// A UUID v7: `received_at` (Unix milliseconds) then random bits, from the
/// thread-local generator.
fn new_event_id(received_at: i64) -> String {
    let mut random = [0u8; 10];
    rand::rng().fill_bytes(&mut random);
    uuid::Builder::from_unix_timestamp_millis(u64::try_from(received_at).unwrap_or(0), &random)
        .into_uuid()
        .hyphenated()
        .to_string()
}

fn problem(field: &str, reason: impl Into<String>) -> EventProblem {
    EventProblem {
        field: field.to_owned(),
        reason: reason.into(),
    }
}

fn bad_field(problem: EventProblem) -> AppError {
    AppError::BadField(FieldError::new(problem.field, problem.reason))
}

#[cfg(test)]
mod tests {
    use super::new_event_id;

    #[test]
    fn event_ids_are_uuid_v7_in_the_order_they_were_received() {
        let earlier = new_event_id(1_790_000_000_000);
        let later = new_event_id(1_790_000_000_001);
        let parsed = uuid::Uuid::parse_str(&earlier).expect("a UUID");
        assert_eq!(parsed.get_version_num(), 7);
        assert!(earlier < later, "{earlier} sorts before {later}");
        assert_ne!(
            new_event_id(1_790_000_000_000),
            earlier,
            "random bits after the time"
        );
    }
}
