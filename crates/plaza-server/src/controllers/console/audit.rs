//! The console's audit log (administrators): every entry of the trail,
//! newest first, filtered by the administrator who acted, the action and
//! a date range, each with what it changed (before and after).

use axum::extract::State;
use axum::response::Response;
use plaza_domain::audit::AuditFilter;
use plaza_domain::listing::Page;
use plaza_domain::time::rfc3339;
use serde::Deserialize;
use serde_json::json;

use super::page::{ConsoleUser, page, page_number};
use crate::controllers::params::{self, Problems};
use crate::http::error::AppError;
use crate::http::extract::AppQuery;
use crate::state::AppState;

/// Entries per page.
const PAGE_SIZE: i64 = 50;
/// Longest action filter.
const MAX_ACTION_CHARS: usize = 100;

#[derive(Deserialize)]
pub struct AuditQuery {
    /// The id of the administrator who acted.
    admin: Option<String>,
    action: Option<String>,
    /// A date or RFC 3339 time, inclusive.
    from: Option<String>,
    /// A date (its whole day included) or RFC 3339 time.
    to: Option<String>,
    page: Option<String>,
}

/// `GET /admin/audit`: one page of the trail.
pub async fn list(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<AuditQuery>,
) -> Result<Response, AppError> {
    user.require_administrator(None, "audit log")?;
    let blank = |value: Option<String>| {
        value
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    let (admin, action, from, to) = (
        blank(query.admin),
        blank(query.action),
        blank(query.from),
        blank(query.to),
    );
    let mut problems = Problems::default();
    let actor_id = params::id(&mut problems, "admin", admin.as_deref());
    if action
        .as_ref()
        .is_some_and(|action| action.chars().count() > MAX_ACTION_CHARS)
    {
        problems.add("action", "must be at most 100 characters");
    }
    let since = params::instant(&mut problems, "from", from.as_deref(), false);
    let until = params::instant(&mut problems, "to", to.as_deref(), true);
    let page_number = page_number(&mut problems, query.page.as_deref());
    problems.finish()?;
    let filter = AuditFilter {
        actor_id,
        action: action.clone(),
        since,
        until,
    };
    let found = state
        .db
        .audit_page(
            &filter,
            Page {
                limit: PAGE_SIZE,
                offset: (page_number - 1) * PAGE_SIZE,
            },
        )
        .await?;
    let entries: Vec<_> = found
        .entries
        .iter()
        .map(|entry| {
            let changes = serde_json::from_str::<serde_json::Value>(&entry.changes)
                .map(|changes| serde_json::to_string_pretty(&changes).unwrap_or_default())
                .unwrap_or_else(|_| entry.changes.clone());
            json!({
                "id": entry.id,
                "at": rfc3339(entry.created_at),
                "admin": entry.actor_email.as_deref().unwrap_or("—"),
                "admin_id": entry.actor_id,
                "action": entry.action,
                "target": match &entry.target_id {
                    Some(id) => format!("{} {id}", entry.target_type),
                    None => entry.target_type.clone(),
                },
                "surface": entry.surface,
                "changes": changes,
            })
        })
        .collect();
    let query_string = |number: i64| {
        let mut pairs = url::form_urlencoded::Serializer::new(String::new());
        for (key, value) in [
            ("admin", &admin),
            ("action", &action),
            ("from", &from),
            ("to", &to),
        ] {
            if let Some(value) = value {
                pairs.append_pair(key, value);
            }
        }
        pairs.append_pair("page", &number.to_string());
        pairs.finish()
    };
    page(
        &state,
        &user,
        "audit",
        "audit.html",
        json!({
            "entries": entries,
            "total": found.total,
            "admin": admin.as_deref().unwrap_or_default(),
            "action": action.as_deref().unwrap_or_default(),
            "from": from.as_deref().unwrap_or_default(),
            "to": to.as_deref().unwrap_or_default(),
            "previous_page": (page_number > 1).then(|| query_string(page_number - 1)),
            "next_page": (page_number * PAGE_SIZE < found.total).then(|| query_string(page_number + 1)),
        }),
    )
}
