//! The console's moderation queue: reported, held (pending), flagged,
//! hidden or every post with its reports inline and why it was held or
//! flagged by itself, and one form per post to approve, hide,
//! flag, delete, lock or unlock it, with a reason, notes and "notify the
//! author"; beside the reported posts, the replies awaiting a decision
//! (pending, flagged by a word filter, or with reports no moderator has
//! acted on) with the same actions but locking, and the members with open
//! reports, each linking to their page (where a warning, silence or ban
//! resolves the reports). A decision is the same unit of work as
//! `POST /api/v1/admin/posts/{postId}/moderate` or
//! `POST /api/v1/admin/replies/{replyId}/moderate`
//! (`services::moderation`), under the item's edit lock: an item another
//! administrator is changing answers 423 as a page.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use plaza_domain::holds::HoldReason;
use plaza_domain::listing::{Page, SortOrder};
use plaza_domain::policy;
use plaza_domain::posts::{AdminReport, ModerationAction, PostQuery, PostSort, PostStatus};
use plaza_domain::replies::AdminReplyQuery;
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
    /// Posts held for a moderator (`pending`), the newest first.
    Held,
    Flagged,
    Hidden,
    /// Every post, the newest first.
    All,
}

impl Queue {
    const ALL: [Queue; 5] = [
        Queue::Reported,
        Queue::Held,
        Queue::Flagged,
        Queue::Hidden,
        Queue::All,
    ];

    fn key(self) -> &'static str {
        match self {
            Queue::Reported => "reported",
            Queue::Held => "pending",
            Queue::Flagged => "flagged",
            Queue::Hidden => "hidden",
            Queue::All => "all",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Queue::Reported => "Reported",
            Queue::Held => "Held",
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
                    AppError::invalid("state", "must be reported, pending, flagged, hidden or all")
                }),
        }
    }

    fn query(self) -> PostQuery {
        let (status, open_reports_only, sort) = match self {
            Queue::Reported => (None, true, PostSort::ReportCount),
            Queue::Held => (Some(PostStatus::Pending), false, PostSort::CreatedAt),
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
    /// Why it was held or flagged by itself, in words.
    review_reason: Option<String>,
    report_count: i64,
    locked: bool,
    created_at: String,
    excerpt: String,
    reports: Vec<ReportItem>,
}

/// A reply awaiting a decision.
#[derive(Serialize)]
struct ReplyItem {
    id: i64,
    post_id: i64,
    author: String,
    status: &'static str,
    /// Why it was held or flagged by itself, in words.
    review_reason: Option<String>,
    report_count: i64,
    created_at: String,
    excerpt: String,
    reports: Vec<ReportItem>,
}

/// A member with reports no moderator has acted on.
#[derive(Serialize)]
struct MemberItem {
    id: i64,
    username: String,
    role: String,
    status: String,
    reports: Vec<ReportItem>,
}

#[derive(Serialize)]
struct ReportItem {
    reason: String,
    category: &'static str,
    reporter: i64,
    at: String,
}

impl ReportItem {
    fn new(report: AdminReport<'_>) -> Self {
        ReportItem {
            reason: report.reason.into_owned(),
            category: report.category.as_str(),
            reporter: report.reporter_id,
            at: rfc3339(report.created_at),
        }
    }
}

/// A stored review reason in words (as stored when this version does not
/// know it).
fn described(stored: &str) -> String {
    HoldReason::parse(stored).map_or_else(|| stored.to_owned(), |reason| reason.describe())
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
            review_reason: post.review_reason.as_deref().map(described),
            report_count: post.report_count,
            locked: post.locked,
            created_at: rfc3339(post.created_at),
            excerpt: post.content.chars().take(EXCERPT_CHARS).collect(),
            reports: post.reports.into_iter().map(ReportItem::new).collect(),
        })
        .collect();
    // The replies awaiting a decision, beside the reported posts.
    let waiting = if queue == Queue::Reported {
        let found = state
            .db
            .admin_replies(
                &AdminReplyQuery {
                    awaiting_decision: true,
                    ..AdminReplyQuery::default()
                },
                Page {
                    limit: PAGE_SIZE,
                    offset: 0,
                },
            )
            .await?;
        let replies: Vec<ReplyItem> = found
            .replies
            .into_iter()
            .map(|found| ReplyItem {
                id: found.reply.id,
                post_id: found.reply.post_id,
                author: found
                    .reply
                    .author
                    .map(|author| author.username)
                    .unwrap_or_default(),
                status: found.reply.status.as_str(),
                review_reason: found.reply.review_reason.as_deref().map(described),
                report_count: found.reply.report_count,
                created_at: rfc3339(found.reply.created_at),
                excerpt: found.reply.content.chars().take(EXCERPT_CHARS).collect(),
                reports: found.reports.into_iter().map(ReportItem::new).collect(),
            })
            .collect();
        Some((replies, found.total))
    } else {
        None
    };
    let (replies, replies_total) = waiting.unwrap_or_default();
    // The members reported, beside the reported posts and replies.
    let (members, members_total) = if queue == Queue::Reported {
        let found = state.db.reported_members(PAGE_SIZE, 0).await?;
        let members: Vec<MemberItem> = found
            .members
            .into_iter()
            .map(|member| MemberItem {
                id: member.user_id,
                username: member.username,
                role: member.role,
                status: member.status,
                reports: member
                    .reports
                    .into_iter()
                    .map(|report| ReportItem {
                        reason: report.reason,
                        category: report.category.as_str(),
                        reporter: report.reporter_id,
                        at: rfc3339(report.created_at),
                    })
                    .collect(),
            })
            .collect();
        (members, found.total)
    } else {
        (Vec::new(), 0)
    };
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
            "replies": replies,
            "replies_total": replies_total,
            "shows_replies": queue == Queue::Reported,
            "members": members,
            "members_total": members_total,
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
    let decision = checked_decision(form, |action| {
        ModerationAction::parse(action).ok_or("must be approve, hide, flag, delete, lock or unlock")
    })?;
    let action = decision.action;
    authorize(policy::moderate_post(user.actor()), "post")?;
    if action == ModerationAction::Delete {
        authorize(policy::delete_others_post(user.actor()), "post")?;
    }
    moderation::moderate_post(
        &state.db,
        state.settings.limits.admin_lock_ttl(),
        context,
        user.actor().user_id,
        id,
        decision,
    )
    .await?;
    Ok(back_to(queue, action))
}

/// `POST /admin/moderation/replies/{id}`: a decision on a reply, then back
/// to the queue.
pub async fn decide_reply(
    State(state): State<AppState>,
    user: ConsoleUser,
    RequestAudit(context): RequestAudit,
    IdPath(id): IdPath,
    AppForm(form): AppForm<DecisionForm>,
) -> Result<Response, AppError> {
    user.check_form_token(form.csrf_token.as_deref())?;
    let queue = Queue::parse(form.state.as_deref())?;
    let decision = checked_decision(form, |action| {
        ModerationAction::parse(action)
            .filter(|action| action.applies_to_replies())
            .ok_or("must be approve, hide, flag or delete")
    })?;
    let action = decision.action;
    authorize(policy::moderate_reply(user.actor()), "reply")?;
    if action == ModerationAction::Delete {
        authorize(policy::delete_others_post(user.actor()), "reply")?;
    }
    moderation::moderate_reply(
        &state.db,
        state.settings.limits.admin_lock_ttl(),
        context,
        user.actor().user_id,
        id,
        decision,
    )
    .await?;
    Ok(back_to(queue, action))
}

/// The decision of a form, its action read by `parse`: 422 naming every
/// bad field.
fn checked_decision(
    form: DecisionForm,
    parse: impl Fn(&str) -> Result<ModerationAction, &'static str>,
) -> Result<Decision, AppError> {
    let mut problems = Problems::default();
    let action = problems.check(
        "action",
        parse(form.action.as_deref().unwrap_or_default()).map_err(str::to_owned),
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
    Ok(Decision {
        action,
        reason,
        notes,
        notify_author: form.notify_author.as_deref() == Some("true"),
        rule_ids: Vec::new(),
    })
}

/// Back to `queue`, confirming `action`.
fn back_to(queue: Queue, action: ModerationAction) -> Response {
    Redirect::to(&format!(
        "/admin/moderation?state={}&done={}",
        queue.key(),
        action.as_str()
    ))
    .into_response()
}

/// A text field trimmed, absent when blank.
fn trimmed(value: Option<String>) -> Option<String> {
    value
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}
