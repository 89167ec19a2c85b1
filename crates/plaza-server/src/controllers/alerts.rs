//! `GET /api/alerts`, `GET /api/alerts/stream` and `POST /api/alerts/dismiss`:
//! the signed-in user's alerts (admins' broadcasts and moderators' notes on
//! their posts), live, and hiding one for good.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::response::sse::{KeepAlive, Sse};
use plaza_domain::alerts::Reader;
use plaza_domain::policy;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::auth::{CurrentUser, SessionPrincipal, authorize};
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::AppJson;
use crate::services::alert_stream::AlertItem;
use crate::services::alert_stream::Refusal;
use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(list_alerts))
        .routes(crate::documented_routes!(dismiss_alert))
        .routes(crate::documented_routes!(stream_alerts))
}

/// The alert list.
#[derive(Serialize, ToSchema)]
pub struct AlertList {
    /// Newest first, at most 100.
    pub alerts: Vec<AlertItem>,
}

fn reader(principal: &SessionPrincipal) -> Reader {
    Reader {
        user_id: principal.user_id(),
        role: principal.role(),
        created_at: principal.session.user.row.created_at,
    }
}

/// The signed-in user's delivered alerts they have not dismissed, newest
/// first (at most 100).
#[utoipa::path(
    get,
    path = "/api/alerts",
    tag = "alerts",
    responses(
        (status = 200, description = "The alerts", body = AlertList),
        (status = 401, description = "Not signed in", body = GeneralError),
    )
)]
pub async fn list_alerts(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<AppJson<AlertList>, AppError> {
    let alerts = state.db.alerts_for(reader(&user)).await?;
    Ok(AppJson(AlertList {
        alerts: alerts.into_iter().map(AlertItem::from).collect(),
    }))
}

/// A user id as a number (SPEC.md) or, as the general schemas write ids,
/// a string of digits.
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
pub enum UserIdField {
    Number(i64),
    Digits(String),
}

impl UserIdField {
    fn value(&self) -> Option<i64> {
        match self {
            UserIdField::Number(id) => Some(*id),
            UserIdField::Digits(text) => crate::http::extract::parse_id(text),
        }
    }
}

/// Which alert to dismiss, for whom.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DismissBody {
    #[schema(example = 3)]
    pub alert_id: i64,
    /// Must be the signed-in user's id.
    #[schema(value_type = i64, example = 42)]
    pub user_id: UserIdField,
}

/// The answer of a dismissal.
#[derive(Serialize, ToSchema)]
pub struct DismissAnswer {
    /// Always true.
    pub success: bool,
}

/// Hide one of the signed-in user's alerts for good (dismissing twice is
/// fine). `userId` must be the signed-in user (403 otherwise); an alert
/// that is not theirs is 404.
#[utoipa::path(
    post,
    path = "/api/alerts/dismiss",
    tag = "alerts",
    request_body = DismissBody,
    responses(
        (status = 200, description = "Dismissed", body = DismissAnswer),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 403, description = "`userId` is not the signed-in user", body = GeneralError),
        (status = 404, description = "No such alert for this user", body = GeneralError),
        (status = 422, description = "A missing or mistyped field", body = GeneralError),
    )
)]
pub async fn dismiss_alert(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    AppJson(body): AppJson<DismissBody>,
) -> Result<AppJson<DismissAnswer>, AppError> {
    let user_id = body
        .user_id
        .value()
        .ok_or_else(|| AppError::invalid("userId", "must be a user id"))?;
    authorize(policy::dismiss_alerts_of(user.actor(), user_id), "alert")?;
    state.db.dismiss_alert(reader(&user), body.alert_id).await?;
    Ok(AppJson(DismissAnswer { success: true }))
}

/// The signed-in user's alerts as they happen (Server-Sent Events): first
/// the current alerts (or, with `Last-Event-ID`, what came since that
/// event), then event `alert` (an item of `GET /api/alerts`) for each new
/// one, event `dismissed` (`{id}`) for each dismissal, and event
/// `notification` (an item of `GET /api/notifications`) for each new
/// notification of the user (again when a group of reactions grows). Event ids are
/// times in Unix milliseconds; delivery is at least once (a resumed stream
/// may repeat the last few seconds). The server ends a stream after
/// `alert_stream_max_secs` (the client reconnects), and within a second of
/// its session ending or its user being banned or deleted. A user holds at
/// most `alert_stream_max_per_user` streams at once.
#[utoipa::path(
    get,
    path = "/api/alerts/stream",
    tag = "alerts",
    params(
        ("Last-Event-ID" = Option<String>, Header, description = "The id of the last event received, to resume after it"),
    ),
    responses(
        (status = 200, description = "The event stream", content_type = "text/event-stream", body = String),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 429, description = "The user holds `alert_stream_max_per_user` open streams already; close one first", body = GeneralError,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 503, description = "Every stream slot of this instance is taken; retry later", body = GeneralError,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    )
)]
pub async fn stream_alerts(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    headers: HeaderMap,
) -> Result<axum::response::Response, AppError> {
    let resume_from = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<i64>().ok())
        .filter(|at| *at >= 0);
    let stream = state
        .alert_streams
        .open(
            state.db.clone(),
            state.settings.server.clone(),
            user.session.session_id,
            reader(&user),
            resume_from,
        )
        .map_err(|refusal| match refusal {
            Refusal::UserLimit => AppError::RateLimited {
                retry_after_secs: 5,
                limit: 0,
                reset_after_secs: 5,
            },
            Refusal::Full => AppError::Busy {
                retry_after_secs: 5,
            },
        })?;
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}
