//! The console's moderation queue: reported, flagged, hidden or every
//! post with its reports inline, and one form per post to approve, hide,
//! flag or (administrators) delete it, with a reason, notes and "notify
//! the author". A decision is the same unit of work as
//! `POST /api/v1/admin/posts/{postId}/moderate`
//! (`services::moderation`), under the post's edit lock: a post another
//! administrator is changing answers 423 as a page.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::listing::{Page, SortOrder};
use plaza_domain::policy;
use plaza_domain::posts::{ModerationAction, PostQuery, PostSort, PostStatus};
use plaza_domain::time::rfc3339;
use serde::{Deserialize, Serialize};

use super::page::{ConsoleUser, page, page_number};
use crate::auth::{RequestAudit, authorize};
use crate::controllers::params::{Problems, TextRule, check_text};
use crate::http::error::AppError;
use crate::http::extract::{AppForm, AppQuery, IdPath};
use crate::services::moderation::{self, Decision, MAX_NOTES_CHARS, MAX_REASON_CHARS};
use crate::state::AppState;

/// Posts per page of a queue.
const PAGE_SIZE: i64 = 20;
/// Characters of a post's content shown in the queue.
const EXCERPT_CHARS: usize = 600;

/// The queues a moderator picks from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// Posts with reports no moderator has acted on, the most reported
    /// first.
    Reported,
    Flagged,
    Hidden,
    /// Every post, the newest first.
    All,
}

impl Queue {
    const ALL: [Queue; 4] = [Queue::Reported, Queue::Flagged, Queue::Hidden, Queue::All];

    fn key(self) -> &'static str {
        match self {
            Queue::Reported => "reported",
            Queue::Flagged => "flagged",
            Queue::Hidden => "hidden",
            Queue::All => "all",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Queue::Reported => "Reported",
            Queue::Flagged => "Flagged",
            Queue::Hidden => "Hidden",
            Queue::All => "All posts",
        }
    }

    /// The queue named `key`; none named: the reported posts.
    fn parse(key: Option<&str>) -> Result<Queue, AppError> {
        match key.filter(|key| !key.is_empty()) {
            None => Ok(Queue::Reported),
            Some(key) => Queue::ALL
                .into_iter()
                .find(|queue| queue.key() == key)
                .ok_or_else(|| {
                    AppError::invalid("state", "must be reported, flagged, hidden or all")
                }),
        }
    }

    fn query(self) -> PostQuery {
        let (status, open_reports_only, sort) = match self {
            Queue::Reported => (None, true, PostSort::ReportCount),
            Queue::Flagged => (Some(PostStatus::Flagged), false, PostSort::CreatedAt),
            Queue::Hidden => (Some(PostStatus::Hidden), false, PostSort::CreatedAt),
            Queue::All => (None, false, PostSort::CreatedAt),
        };
        PostQuery {
            status,
            open_reports_only,
            sort,
            order: SortOrder::Desc,
            ..PostQuery::default()
        }
    }
}

/// How many posts wait in `queue`.
pub async fn count(state: &AppState, user: &ConsoleUser, queue: Queue) -> Result<i64, AppError> {
    let found = state
        .db
        .admin_posts(
            &queue.query(),
            user.actor().user_id,
            Page {
                limit: 1,
                offset: 0,
            },
        )
        .await?;
    Ok(found.total)
}

#[derive(Deserialize)]
pub struct QueueQuery {
    state: Option<String>,
    page: Option<String>,
    /// The decision just taken, to confirm it.
    done: Option<String>,
}

#[derive(Serialize)]
struct QueueItem {
    id: i64,
    title: String,
    author: String,
    status: &'static str,
    report_count: i64,
    created_at: String,
    excerpt: String,
    reports: Vec<ReportItem>,
}

#[derive(Serialize)]
struct ReportItem {
    reason: String,
    reporter: i64,
    at: String,
}

#[derive(Serialize)]
struct QueueTab {
    key: &'static str,
    label: &'static str,
}

/// `GET /admin/moderation`: one page of a queue.
pub async fn queue(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<QueueQuery>,
) -> Result<Response, AppError> {
    let queue = Queue::parse(query.state.as_deref())?;
    let mut problems = Problems::default();
    let page_number = page_number(&mut problems, query.page.as_deref());
    problems.finish()?;
    let found = state
        .db
        .admin_posts(
            &queue.query(),
            user.actor().user_id,
            Page {
                limit: PAGE_SIZE,
                offset: (page_number - 1) * PAGE_SIZE,
            },
        )
        .await?;
    let posts: Vec<QueueItem> = found
        .posts()?
        .into_iter()
        .map(|post| QueueItem {
            id: post.id,
            title: post.title.into_owned(),
            author: post.author_username.into_owned(),
            status: post.status.as_str(),
            report_count: post.report_count,
            created_at: rfc3339(post.created_at),
            excerpt: post.content.chars().take(EXCERPT_CHARS).collect(),
            reports: post
                .reports
                .into_iter()
                .map(|report| ReportItem {
                    reason: report.reason.into_owned(),
                    reporter: report.reporter_id,
                    at: rfc3339(report.created_at),
                })
                .collect(),
        })
        .collect();
    let done = query
        .done
        .as_deref()
        .and_then(ModerationAction::parse)
        .map(|action| format!("Done: {}.", action.as_str()));
    let queues: Vec<QueueTab> = Queue::ALL
        .into_iter()
        .map(|queue| QueueTab {
            key: queue.key(),
            label: queue.label(),
        })
        .collect();
    let has_next = page_number * PAGE_SIZE < found.total;
    page(
        &state,
        &user,
        "moderation",
        "moderation.html",
        serde_json::json!({
            "state": queue.key(),
            "queues": queues,
            "posts": posts,
            "total": found.total,
            "done": done,
            "may_delete": policy::delete_others_post(user.actor()).is_allowed(),
            "previous_page": (page_number > 1).then_some(page_number - 1),
            "next_page": has_next.then_some(page_number + 1),
        }),
    )
}

/// The decision form of one post.
#[derive(Deserialize)]
pub struct DecisionForm {
    #[serde(rename = "csrfToken")]
    csrf_token: Option<String>,
    action: Option<String>,
    reason: Option<String>,
    notes: Option<String>,
    #[serde(rename = "notifyAuthor")]
    notify_author: Option<String>,
    /// The queue to go back to.
    state: Option<String>,
}

/// `POST /admin/moderation/{id}`: a decision, then back to the queue.
pub async fn decide(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<DecisionForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    let queue = Queue::parse(form.state.as_deref())?;
    let mut problems = Problems::default();
    let action = problems.check(
        "action",
        form.action
            .as_deref()
            .and_then(ModerationAction::parse)
            .ok_or_else(|| "must be approve, hide, flag or delete".to_owned()),
    );
    let reason = trimmed(form.reason);
    let notes = trimmed(form.notes);
    if let Some(reason) = &reason {
        problems.check(
            "reason",
            check_text(reason, MAX_REASON_CHARS, false, TextRule::Lines),
        );
    }
    if let Some(notes) = &notes {
        problems.check(
            "notes",
            check_text(notes, MAX_NOTES_CHARS, false, TextRule::Lines),
        );
    }
    problems.finish()?;
    let Some(action) = action else {
        return Err(AppError::internal("an action passed validation unparsed"));
    };
    authorize(policy::moderate_post(user.actor()), "post")?;
    if action == ModerationAction::Delete {
        authorize(policy::delete_others_post(user.actor()), "post")?;
    }
    let decision = Decision {
        action,
        reason,
        notes,
        notify_author: form.notify_author.as_deref() == Some("true"),
    };
    moderation::moderate_post(
        &state.db,
        state.settings.limits.admin_lock_ttl(),
        context,
        user.actor().user_id,
        id,
        decision,
    )
    .await?;
    Ok(Redirect::to(&format!(
        "/admin/moderation?state={}&done={}",
        queue.key(),
        action.as_str()
    ))
    .into_response())
}

/// A text field trimmed, absent when blank.
fn trimmed(value: Option<String>) -> Option<String> {
    value
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}
