//! The current user's sessions: the list of the devices signed in, and
//! ending one of them.

use axum::extract::State;
use axum::http::StatusCode;
use plaza_domain::sessions::{self, OwnSession};
use plaza_domain::time::rfc3339;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::CurrentUser;
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppJson, IdPath};
use crate::state::AppState;

/// One session of the caller.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionItem {
    pub id: String,
    pub created_at: String,
    /// When the session was last seen in use: updated as its expiry slides
    /// forward, so it can lag behind by that step.
    pub last_seen_at: String,
    /// The client address it signed in from.
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    /// Whether it is the session of this request.
    pub current: bool,
}

/// The caller's sessions.
#[derive(Serialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionItem>,
}

fn session_item(session: OwnSession, current_token_hash: &str) -> SessionItem {
    SessionItem {
        id: session.id.to_string(),
        created_at: rfc3339(session.created_at),
        last_seen_at: rfc3339(session.last_seen_at),
        ip_address: session.ip_address,
        user_agent: session.user_agent,
        current: session.token_hash == current_token_hash,
    }
}

/// The caller's live sessions, most recently used first (at most 100).
#[utoipa::path(
    get,
    path = "/api/auth/sessions",
    tag = "auth",
    security(("session_cookie" = [])),
    responses(
        (status = 200, description = "The caller's sessions", body = SessionList),
        (status = 401, description = "Not signed in", body = GeneralError),
    )
)]
pub async fn list_sessions(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
) -> Result<AppJson<SessionList>, AppError> {
    let sessions = state
        .db
        .sessions_of_user(principal.user_id(), state.auth.sessions)
        .await?;
    Ok(AppJson(SessionList {
        sessions: sessions
            .into_iter()
            .map(|session| session_item(session, &principal.token_hash))
            .collect(),
    }))
}

/// End one of the caller's sessions (the current one too: that is a
/// sign-out without the cookie's removal). Anyone else's is 404.
#[utoipa::path(
    delete,
    path = "/api/auth/sessions/{id}",
    tag = "auth",
    security(("session_cookie" = [])),
    params(("id" = String, Path, description = "The session's id, from the list")),
    responses(
        (status = 204, description = "Ended"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No such session of the caller", body = GeneralError),
    )
)]
pub async fn end_session(
    State(state): State<AppState>,
    CurrentUser(principal): CurrentUser,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    let user_id = principal.user_id();
    let ended = state
        .db
        .write(|tx| Box::pin(async move { sessions::end_own(tx, user_id, id).await }))
        .await?
        .ok_or(AppError::NotFound("session"))?;
    state.auth.session_lookups.forget(&ended);
    Ok(StatusCode::NO_CONTENT)
}
