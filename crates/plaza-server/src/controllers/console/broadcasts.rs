//! The console's broadcasts (administrators): compose one for everyone,
//! some roles or some users, now or at a time (UTC); the list of every
//! broadcast with its status; and withdrawing a scheduled one. Sending and
//! withdrawing are the units of work of the versioned admin API
//! (`services::broadcasts`), checked by the same `BroadcastDraft`.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::listing::Page;
use plaza_domain::policy;
use plaza_domain::time::now_millis;
use serde::Deserialize;
use serde_json::json;

use super::page::{ConsoleUser, page, page_number};
use crate::auth::{RequestAudit, authorize};
use crate::controllers::admin_v1::broadcasts::{BroadcastBody, BroadcastDraft, BroadcastItem};
use crate::controllers::params::Problems;
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery, IdPath};
use crate::services::broadcasts;
use crate::state::AppState;

/// Broadcasts per page of the list.
const PAGE_SIZE: i64 = 20;

#[derive(Deserialize)]
pub struct ListQuery {
    page: Option<String>,
    /// What was just done, to confirm it.
    done: Option<String>,
}

/// `GET /admin/broadcasts`: the compose form and one page of broadcasts.
pub async fn list(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Response, AppError> {
    authorize(policy::send_broadcast(user.actor()), "broadcast")?;
    let mut problems = Problems::default();
    let page_number = page_number(&mut problems, query.page.as_deref());
    problems.finish()?;
    let found = state
        .db
        .broadcasts(Page {
            limit: PAGE_SIZE,
            offset: (page_number - 1) * PAGE_SIZE,
        })
        .await?;
    let items: Vec<BroadcastItem> = found.broadcasts.iter().map(BroadcastItem::from).collect();
    let done = match query.done.as_deref() {
        Some("sent") => Some("The broadcast is delivered."),
        Some("scheduled") => Some("The broadcast is scheduled."),
        Some("cancelled") => Some("The broadcast is withdrawn."),
        _ => None,
    };
    page(
        &state,
        &user,
        "broadcasts",
        "broadcasts.html",
        json!({
            "broadcasts": items,
            "total": found.total,
            "done": done,
            "types": ["info", "success", "warning", "error"],
            "previous_page": (page_number > 1).then_some(page_number - 1),
            "next_page": (page_number * PAGE_SIZE < found.total).then_some(page_number + 1),
        }),
    )
}

/// The compose form.
#[derive(Deserialize)]
pub struct ComposeForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    title: Option<String>,
    message: Option<String>,
    #[serde(rename = "type")]
    alert_type: Option<String>,
    /// Comma-separated: `all`, role names, user ids.
    targets: Option<String>,
    /// `YYYY-MM-DDTHH:MM` in UTC, as a `datetime-local` field sends it;
    /// empty: now.
    schedule: Option<String>,
}

/// `POST /admin/broadcasts`: sends or schedules a broadcast.
pub async fn send(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    AppForm(form): AppForm<ComposeForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    authorize(policy::send_broadcast(user.actor()), "broadcast")?;
    let targets = form
        .targets
        .as_deref()
        .map(|targets| {
            targets
                .split(',')
                .map(str::trim)
                .filter(|target| !target.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|targets| !targets.is_empty());
    let schedule = form
        .schedule
        .map(|schedule| schedule.trim().to_owned())
        .filter(|schedule| !schedule.is_empty())
        .map(|schedule| {
            // A `datetime-local` field has no zone (and no seconds): the
            // console's times are UTC.
            match schedule.len() {
                16 => format!("{schedule}:00Z"),
                19 => format!("{schedule}Z"),
                _ => schedule,
            }
        });
    let body = BroadcastBody {
        title: form.title,
        message: form.message,
        alert_type: form.alert_type.filter(|kind| !kind.is_empty()),
        targets,
        schedule,
    };
    let now = now_millis();
    let mut problems = Problems::default();
    let draft = BroadcastDraft::check(&mut problems, body, now);
    problems.finish()?;
    if let Some(missing) = state
        .db
        .unknown_users(&draft.audience.user_ids)
        .await?
        .first()
    {
        return Err(AppError::invalid(
            "targets",
            format!("no user has id {missing}"),
        ));
    }
    let (new, targets) = draft.into_new(user.actor().user_id);
    let sent = broadcasts::send(&state.db, context, new, targets, now).await?;
    let done = if sent.delivered_at.is_some() {
        "sent"
    } else {
        "scheduled"
    };
    Ok(Redirect::to(&format!("/admin/broadcasts?done={done}")).into_response())
}

/// The withdraw form.
#[derive(Deserialize)]
pub struct CancelForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
}

/// `POST /admin/broadcasts/{id}/cancel`: withdraws a scheduled broadcast.
pub async fn cancel(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<CancelForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    authorize(policy::send_broadcast(user.actor()), "broadcast")?;
    broadcasts::cancel(&state.db, context, id).await?;
    Ok(Redirect::to("/admin/broadcasts?done=cancelled").into_response())
}
