//! Reading replies: one by id, and a page of a thread (or of the subtree
//! below a reply) in thread order or newest answers first, from a cursor.
//!
//! A page is one statement: one range of the index `(post_id, path)` (or
//! `(post_id, newest_path)`) from the cursor, skipping what the caller may
//! not see, with the total beside it. The total is the post's (or the
//! subtree root's) visible count plus the placeholders and the held replies
//! the caller sees in the range, counted in the partial index
//! `replies_out_of_view`, which holds only pending, hidden and deleted
//! rows: a page's cost does not grow with the thread.

use super::model::{
    REPLY_COLUMNS, REPLY_SOURCE, Reply, ReplyJson, ReplyRow, listed_columns, visibility_sql,
};
use super::path::{self, UPPER};
use crate::listing::{Arg, Args, bind_all, parse_json_page};
use crate::posts::Viewer;
use crate::{Database, DomainError};

/// Most replies on a page.
pub const MAX_PAGE: i64 = 100;

/// The order of a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThreadSort {
    /// Depth first, siblings oldest first.
    #[default]
    Oldest,
    /// The answers to the post newest first, each followed by its subtree
    /// in thread order.
    Newest,
}

impl ThreadSort {
    pub fn parse(name: &str) -> Option<ThreadSort> {
        match name {
            "oldest" => Some(ThreadSort::Oldest),
            "newest" => Some(ThreadSort::Newest),
            _ => None,
        }
    }

    /// The key column the walk reads (fixed text).
    fn column(self) -> &'static str {
        match self {
            ThreadSort::Oldest => "path",
            ThreadSort::Newest => "newest_path",
        }
    }

    /// The walk's key of the reply at `reply_path`.
    pub fn key_of(self, reply_path: &str) -> String {
        match self {
            ThreadSort::Oldest => reply_path.to_owned(),
            ThreadSort::Newest => path::newest_key(reply_path),
        }
    }

    /// Whether `key` is a key of this walk (a cursor a client sends back).
    pub fn is_key(self, key: &str) -> bool {
        match self {
            ThreadSort::Oldest => path::segments(key).is_some(),
            ThreadSort::Newest => path::path_of_newest_key(key).is_some(),
        }
    }
}

/// One page to read.
#[derive(Debug, Clone)]
pub struct ThreadQuery {
    pub post_id: i64,
    /// Only the subtree below this reply (read by the caller, who checked
    /// it is of the post and visible to them).
    pub below: Option<Reply>,
    pub sort: ThreadSort,
    /// 1 to [`MAX_PAGE`].
    pub limit: i64,
    /// The key of the last reply of the previous page (see
    /// [`ThreadSort::is_key`]); the page starts after it.
    pub after: Option<String>,
}

/// A page of a walk.
#[derive(Debug, Clone)]
pub struct ThreadPage {
    pub replies: Vec<Reply>,
    /// The key to continue after, when more may follow.
    pub next: Option<String>,
    /// How many replies the whole walk returns to this caller,
    /// placeholders included.
    pub total: i64,
}

impl ThreadQuery {
    /// The SQL of the page's statement: the total and the page (one more
    /// row than asked, to tell whether more follow) as one JSON text.
    fn sql(&self, database: &Database, viewer: Viewer, args: &mut Args) -> String {
        let post = args.push(Arg::Int(self.post_id));
        let column = self.sort.column();
        let subtree_key = self
            .below
            .as_ref()
            .map(|below| self.sort.key_of(&below.path));
        let lower = match (&subtree_key, &self.after) {
            (Some(root), Some(after)) => root.max(after).clone(),
            (Some(root), None) => root.clone(),
            (None, Some(after)) => after.clone(),
            (None, None) => String::new(),
        };
        let mut conditions = vec![
            format!("r.post_id = {post}"),
            format!("r.{column} > {}", args.push(Arg::Text(lower))),
        ];
        if let Some(root) = &subtree_key {
            conditions.push(format!(
                "r.{column} < {}",
                args.push(Arg::Text(format!("{root}{UPPER}")))
            ));
        }
        conditions.push(visibility_sql(viewer, args));
        let source = format!(
            "(SELECT {REPLY_COLUMNS}, r.{column} AS walk_key FROM {REPLY_SOURCE} WHERE {} \
             ORDER BY r.{column} LIMIT {}) listed",
            conditions.join(" AND "),
            self.limit + 1
        );
        let dialect = database.dialect();
        let page = dialect.json_rows(
            &dialect.json_array(&listed_columns()),
            "listed.walk_key",
            &source,
        );
        format!(
            "SELECT {} AS total, {page} AS page",
            self.total_sql(viewer, &post, args)
        )
    }

    /// The walk's total: the visible count kept on the post (or the
    /// subtree's root) plus what the caller sees of the pending, hidden
    /// and deleted rows in the range.
    fn total_sql(&self, viewer: Viewer, post: &str, args: &mut Args) -> String {
        let mut conditions = vec![
            format!("x.post_id = {post}"),
            "x.status IN ('pending', 'hidden', 'deleted')".to_owned(),
        ];
        let visible = match &self.below {
            Some(below) => {
                conditions.push(format!(
                    "x.path > {}",
                    args.push(Arg::Text(below.path.clone()))
                ));
                conditions.push(format!(
                    "x.path < {}",
                    args.push(Arg::Text(format!("{}{UPPER}", below.path)))
                ));
                format!(
                    "(SELECT reply_count FROM replies WHERE id = {})",
                    args.push(Arg::Int(below.id))
                )
            }
            None => format!("(SELECT reply_count FROM posts WHERE id = {post})"),
        };
        let placeholders = "(x.status = 'deleted' AND x.reply_count > 0)";
        let seen = match viewer {
            Viewer::Anonymous => placeholders.to_owned(),
            Viewer::Member(id) => format!(
                "({placeholders} OR (x.status <> 'deleted' AND x.author_id = {}))",
                args.push(Arg::Int(id))
            ),
            Viewer::Moderator(_) => format!("({placeholders} OR x.status <> 'deleted')"),
        };
        conditions.push(seen);
        format!(
            "(COALESCE({visible}, 0) + (SELECT COUNT(*) FROM replies x WHERE {}))",
            conditions.join(" AND ")
        )
    }
}

impl Database {
    /// A reply whoever asks may or may not see; callers check with
    /// [`Reply::visible_to`] (and its post's visibility).
    pub async fn reply_by_id(&self, id: i64) -> Result<Reply, DomainError> {
        let row: Option<ReplyRow> = sqlx::query_as(&format!(
            "SELECT {REPLY_COLUMNS} FROM {REPLY_SOURCE} WHERE r.id = $1"
        ))
        .bind(id)
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        row.ok_or(DomainError::NotFound("reply"))?.try_into()
    }

    /// One page of a walk as `viewer` sees it, the post being visible to
    /// them (the caller's check): one statement.
    pub async fn thread_page(
        &self,
        query: &ThreadQuery,
        viewer: Viewer,
    ) -> Result<ThreadPage, DomainError> {
        let mut args = Args::default();
        let sql = query.sql(self, viewer, &mut args);
        let (total, json): (i64, String) = bind_all(sqlx::query_as(&sql), args.into_vec())
            .fetch_one(&mut *self.lease().await?)
            .await?;
        let mut replies = parse_json_page::<ReplyJson>(&json)?
            .into_iter()
            .map(|row| Reply::try_from(ReplyRow::from(row)))
            .collect::<Result<Vec<_>, _>>()?;
        let more = replies.len() as i64 > query.limit;
        replies.truncate(query.limit as usize);
        let next = more
            .then(|| replies.last().map(|last| query.sort.key_of(&last.path)))
            .flatten();
        Ok(ThreadPage {
            replies,
            next,
            total,
        })
    }

    /// The query plan of a page's statement, one line per step, for the
    /// test that checks a page reads one index range.
    #[cfg(feature = "testing")]
    pub async fn explain_thread_page(
        &self,
        query: &ThreadQuery,
        viewer: Viewer,
    ) -> Result<Vec<String>, DomainError> {
        let mut args = Args::default();
        let sql = query.sql(self, viewer, &mut args);
        self.explain(&sql, args.into_vec()).await
    }
}
