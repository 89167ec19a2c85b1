//! What a reply is: its fields, its status, who sees it, and the columns
//! and JSON form in which it is read.

use serde::Deserialize;
use sqlx::FromRow;

use crate::holds::Review;
use crate::listing::{Arg, Args, JsonFlag};
use crate::posts::Viewer;
use crate::{DomainError, Flag};

/// Most characters in a reply's content.
pub const MAX_CONTENT_CHARS: usize = 10_000;

/// A reply's status: those of posts (without drafts), held replies
/// (`pending`) and the placeholder a deleted reply leaves in its thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyStatus {
    Published,
    /// Held until a moderator approves it: its author and moderators see it.
    Pending,
    /// Taken down by a moderator: its author and moderators see it.
    Hidden,
    /// Marked for review; visible like `published`.
    Flagged,
    /// Deleted, kept as a placeholder while replies are below it.
    Deleted,
}

impl ReplyStatus {
    pub const ALL: [ReplyStatus; 5] = [
        ReplyStatus::Published,
        ReplyStatus::Pending,
        ReplyStatus::Hidden,
        ReplyStatus::Flagged,
        ReplyStatus::Deleted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReplyStatus::Published => "published",
            ReplyStatus::Pending => "pending",
            ReplyStatus::Hidden => "hidden",
            ReplyStatus::Flagged => "flagged",
            ReplyStatus::Deleted => "deleted",
        }
    }

    pub fn parse(name: &str) -> Option<ReplyStatus> {
        ReplyStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == name)
    }

    /// Shown to everyone and counted in `reply_count`.
    pub fn is_visible(self) -> bool {
        matches!(self, ReplyStatus::Published | ReplyStatus::Flagged)
    }

    /// Shown only to its author and moderators.
    pub fn is_held(self) -> bool {
        matches!(self, ReplyStatus::Pending | ReplyStatus::Hidden)
    }
}

/// Who wrote a reply, as a reply shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyAuthor {
    pub id: i64,
    pub username: String,
    pub name: Option<String>,
    pub image: Option<String>,
    /// A bot wrote it.
    pub is_bot: bool,
}

/// A reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub id: i64,
    pub post_id: i64,
    /// The reply it answers; `None` for an answer to the post.
    pub parent_id: Option<i64>,
    /// `None` for a deleted reply (and one whose author is gone).
    pub author: Option<ReplyAuthor>,
    pub content: String,
    pub status: ReplyStatus,
    /// 0 for an answer to the post.
    pub depth: i64,
    /// Its place in the thread order (see `replies::path`).
    pub path: String,
    /// Visible replies below it, direct and indirect.
    pub reply_count: i64,
    pub report_count: i64,
    pub created_at: i64,
    pub updated_at: i64,
    /// When its author last changed its content.
    pub edited_at: Option<i64>,
    /// Why it entered the moderation queue by itself
    /// (`crate::holds::HoldReason` stored), while it is pending or flagged
    /// by a word filter.
    pub review_reason: Option<String>,
}

impl Reply {
    pub fn author_id(&self) -> Option<i64> {
        self.author.as_ref().map(|author| author.id)
    }

    /// Whether `viewer` sees it, its post being visible to them: visible
    /// replies and placeholders with visible replies below for everyone,
    /// held ones for their author and moderators; a deleted reply without
    /// visible replies below is gone for everyone.
    pub fn visible_to(&self, viewer: Viewer) -> bool {
        match self.status {
            ReplyStatus::Deleted => self.reply_count > 0,
            status if status.is_visible() => true,
            _ => match viewer {
                Viewer::Anonymous => false,
                Viewer::Member(id) => self.author_id() == Some(id),
                Viewer::Moderator(_) => true,
            },
        }
    }
}

/// The condition over `replies r` that keeps to what `viewer` sees; must
/// agree with [`Reply::visible_to`].
pub(super) fn visibility_sql(viewer: Viewer, args: &mut Args) -> String {
    const SHOWN: &str = "r.status IN ('published', 'flagged') \
                         OR (r.status = 'deleted' AND r.reply_count > 0)";
    match viewer {
        Viewer::Anonymous => format!("({SHOWN})"),
        Viewer::Member(id) => format!(
            "({SHOWN} OR (r.status IN ('pending', 'hidden') AND r.author_id = {}))",
            args.push(Arg::Int(id))
        ),
        Viewer::Moderator(_) => "(r.status <> 'deleted' OR r.reply_count > 0)".to_owned(),
    }
}

/// The rows replies are read from: each with its author.
pub(super) const REPLY_SOURCE: &str = "replies r LEFT JOIN users u ON u.id = r.author_id";

/// Reply columns of [`REPLY_SOURCE`], in [`ReplyRow`] order.
pub(crate) const REPLY_COLUMNS: &str = "r.id, r.post_id, r.parent_id, r.author_id, \
     u.username, u.name, u.image, u.is_bot, r.content, r.status, r.depth, r.path, r.reply_count, \
     r.report_count, r.created_at, r.updated_at, r.edited_at, r.review_reason";

/// [`REPLY_COLUMNS`] as the columns of a subquery named `listed`.
pub(super) fn listed_columns() -> String {
    REPLY_COLUMNS
        .split(", ")
        .map(|column| {
            let name = column
                .trim()
                .split_once('.')
                .map_or(column, |(_, name)| name);
            format!("listed.{name}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(FromRow)]
pub(crate) struct ReplyRow {
    id: i64,
    post_id: i64,
    parent_id: Option<i64>,
    author_id: Option<i64>,
    username: Option<String>,
    name: Option<String>,
    image: Option<String>,
    is_bot: Option<Flag>,
    content: String,
    status: String,
    depth: i64,
    path: String,
    reply_count: i64,
    report_count: i64,
    created_at: i64,
    updated_at: i64,
    edited_at: Option<i64>,
    review_reason: Option<String>,
}

/// A reply as [`REPLY_COLUMNS`] in a JSON array (see
/// `Dialect::json_array`), for pages read as one value.
#[derive(Deserialize)]
pub(crate) struct ReplyJson(
    i64,
    i64,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<JsonFlag>,
    String,
    String,
    i64,
    String,
    i64,
    i64,
    i64,
    i64,
    Option<i64>,
    Option<String>,
);

impl From<ReplyJson> for ReplyRow {
    fn from(
        ReplyJson(
            id,
            post_id,
            parent_id,
            author_id,
            username,
            name,
            image,
            is_bot,
            content,
            status,
            depth,
            path,
            reply_count,
            report_count,
            created_at,
            updated_at,
            edited_at,
            review_reason,
        ): ReplyJson,
    ) -> Self {
        ReplyRow {
            id,
            post_id,
            parent_id,
            author_id,
            username,
            name,
            image,
            is_bot: is_bot.map(|flag| Flag(flag.into())),
            content,
            status,
            depth,
            path,
            reply_count,
            report_count,
            created_at,
            updated_at,
            edited_at,
            review_reason,
        }
    }
}

impl TryFrom<ReplyRow> for Reply {
    type Error = DomainError;

    fn try_from(row: ReplyRow) -> Result<Self, DomainError> {
        let status = ReplyStatus::parse(&row.status).ok_or_else(|| {
            DomainError::Conflict(format!(
                "reply {} has unknown status {}",
                row.id, row.status
            ))
        })?;
        let author = match (row.author_id, row.username) {
            (Some(id), Some(username)) => Some(ReplyAuthor {
                id,
                username,
                name: row.name,
                image: row.image,
                is_bot: row.is_bot.is_some_and(|flag| flag.0),
            }),
            _ => None,
        };
        Ok(Reply {
            id: row.id,
            post_id: row.post_id,
            parent_id: row.parent_id,
            author,
            content: row.content,
            status,
            depth: row.depth,
            path: row.path,
            reply_count: row.reply_count,
            report_count: row.report_count,
            created_at: row.created_at,
            updated_at: row.updated_at,
            edited_at: row.edited_at,
            review_reason: row.review_reason,
        })
    }
}

/// What creating a reply needs; the HTTP layer has checked the content.
#[derive(Debug, Clone)]
pub struct NewReply {
    pub post_id: i64,
    /// The reply it answers; `None` answers the post.
    pub parent_id: Option<i64>,
    pub author_id: i64,
    pub content: String,
    /// Held (stored `pending`), flagged, or published.
    pub review: Review,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: ReplyStatus, reply_count: i64) -> Reply {
        Reply {
            id: 1,
            post_id: 1,
            parent_id: None,
            author: Some(ReplyAuthor {
                id: 7,
                username: "seven".to_owned(),
                name: None,
                image: None,
                is_bot: false,
            }),
            content: String::new(),
            status,
            depth: 0,
            path: "0".to_owned(),
            reply_count,
            report_count: 0,
            created_at: 0,
            updated_at: 0,
            edited_at: None,
            review_reason: None,
        }
    }

    #[test]
    fn who_sees_which_status() {
        let viewers = [
            Viewer::Anonymous,
            Viewer::Member(8),
            Viewer::Member(7),
            Viewer::Moderator(9),
        ];
        let seen = |reply: &Reply| viewers.map(|viewer| reply.visible_to(viewer));
        assert_eq!(seen(&reply(ReplyStatus::Published, 0)), [true; 4]);
        assert_eq!(seen(&reply(ReplyStatus::Flagged, 0)), [true; 4]);
        assert_eq!(
            seen(&reply(ReplyStatus::Pending, 0)),
            [false, false, true, true]
        );
        assert_eq!(
            seen(&reply(ReplyStatus::Hidden, 3)),
            [false, false, true, true]
        );
        assert_eq!(seen(&reply(ReplyStatus::Deleted, 0)), [false; 4]);
        assert_eq!(seen(&reply(ReplyStatus::Deleted, 2)), [true; 4]);
    }
}
