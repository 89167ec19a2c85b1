//! Reading posts: one by id, the filtered and ordered lists with their
//! totals (from the `post_counts` counters where a filter allows), and the
//! JSON form in which a page crosses from the database as one value.

use std::collections::HashMap;

use serde::Deserialize;

use super::model::{Moderation, POST_COLUMNS, PUBLIC_SQL, Post, PostRow, PostStatus, Viewer};
use crate::between::Screen;
use crate::dialect::Dialect;
use crate::listing::{
    Arg, Args, JsonFlag, Page, SortOrder, bind_all, parse_json_page, where_clause,
};
use crate::{Backend, Database, DomainError, Flag};

/// The columns a list may be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PostSort {
    #[default]
    CreatedAt,
    UpdatedAt,
    Title,
    /// Admin lists only: the most reported first (descending).
    ReportCount,
}

impl PostSort {
    /// The orders of the general post list.
    pub const ALL: [PostSort; 3] = [PostSort::CreatedAt, PostSort::UpdatedAt, PostSort::Title];
    /// The orders of the admin post list: the general ones and the report count.
    pub const ADMIN: [PostSort; 4] = [
        PostSort::CreatedAt,
        PostSort::UpdatedAt,
        PostSort::ReportCount,
        PostSort::Title,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PostSort::CreatedAt => "created_at",
            PostSort::UpdatedAt => "updated_at",
            PostSort::Title => "title",
            PostSort::ReportCount => "report_count",
        }
    }

    /// An order of the general list.
    pub fn parse(name: &str) -> Option<PostSort> {
        PostSort::ALL.into_iter().find(|sort| sort.as_str() == name)
    }

    /// Fixed column text, each with an index ending in `id`.
    fn column(self) -> &'static str {
        match self {
            PostSort::CreatedAt => "p.created_at",
            PostSort::UpdatedAt => "p.updated_at",
            PostSort::Title => "p.title",
            PostSort::ReportCount => "p.report_count",
        }
    }
}

/// Filters, order and page of a post list. Every filter narrows what the
/// viewer may see anyway; none widens it.
#[derive(Debug, Clone, Default)]
pub struct PostQuery {
    pub author: Option<i64>,
    pub published: Option<bool>,
    /// A normalized tag (see [`normalize_tag`]).
    pub tag: Option<String>,
    /// The admin surface's status filter.
    pub status: Option<PostStatus>,
    /// The admin surface's `reported` filter: only posts with reports.
    pub reported_only: bool,
    /// The console's queue: only posts with a report no moderator has
    /// acted on yet.
    pub open_reports_only: bool,
    pub sort: PostSort,
    pub order: SortOrder,
    /// A signed-in reader's screen: the posts of the authors they hide are
    /// left out of the page and of the total.
    pub screen: Option<ListScreen>,
}

/// A reader's [`Screen`] over a post list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListScreen {
    pub screen: Screen,
    /// How many of the posts the list would show without the screen it
    /// hides ([`Database::screened_post_count`]): a total taken from the
    /// `post_counts` counters subtracts it. The caller may keep it while
    /// the content generation and the reader's relations stay the same.
    pub hidden: i64,
}

/// One page of posts and how many match in all.
#[derive(Debug, Clone)]
pub struct PostPage {
    pub posts: Vec<Post>,
    pub total: i64,
}

impl PostQuery {
    /// The FROM clause and the conditions of the filters (not of
    /// visibility), their values added to `args`.
    fn selection(&self, args: &mut Args) -> (&'static str, Vec<String>) {
        let mut conditions = Vec::new();
        let from = match &self.tag {
            Some(tag) => {
                conditions.push(format!("t.tag = {}", args.push(Arg::Text(tag.clone()))));
                "post_tags t JOIN posts p ON p.id = t.post_id"
            }
            None => "posts p",
        };
        if let Some(author) = self.author {
            conditions.push(format!("p.author_id = {}", args.push(Arg::Int(author))));
        }
        if let Some(published) = self.published {
            conditions.push(format!("p.published = {}", args.push(Arg::Bool(published))));
        }
        if let Some(status) = self.status {
            conditions.push(status.condition().to_owned());
        }
        if self.reported_only {
            conditions.push("p.report_count > 0".to_owned());
        }
        if self.open_reports_only {
            conditions.push(
                "p.report_count > 0 AND EXISTS (SELECT 1 FROM post_reports r \
                 WHERE r.post_id = p.id AND r.resolved_at IS NULL)"
                    .to_owned(),
            );
        }
        if let Some(listed) = &self.screen {
            conditions.push(listed.screen.sql("p.author_id", args));
        }
        (from, conditions)
    }

    /// Whether the total comes from the `post_counts` counters (see
    /// [`PostQuery::total_sql`]), which know nothing of a screen.
    pub fn totals_from_counters(&self, viewer: Viewer) -> bool {
        let moderation_queue =
            self.is_whole_moderation_queue() && matches!(viewer, Viewer::Moderator(_));
        !moderation_queue && !self.counts_rows()
    }

    /// Only the `reported` filter: every post with a report, whose number
    /// the `post_counts` row [`REPORTED_SCOPE`] keeps.
    fn is_whole_moderation_queue(&self) -> bool {
        self.reported_only
            && !self.open_reports_only
            && self.author.is_none()
            && self.tag.is_none()
            && self.status.is_none()
            && self.published.is_none()
    }

    /// Whether the total comes from counting rows (an index range the
    /// filter selects) rather than from `post_counts`, which knows nothing
    /// of reports or holds (it counts a held post as a draft): any report
    /// filter, and the draft and pending filters, count rows.
    fn counts_rows(&self) -> bool {
        self.author.is_some()
            || self.tag.is_some()
            || self.reported_only
            || self.open_reports_only
            || matches!(self.status, Some(PostStatus::Draft | PostStatus::Pending))
    }

    /// ORDER BY text from fixed strings only. A tag page in creation order
    /// reads the tag index, which carries the creation time.
    fn order_by(&self) -> String {
        let direction = self.order.sql();
        match (&self.tag, self.sort) {
            (Some(_), PostSort::CreatedAt) => {
                format!("t.created_at {direction}, t.post_id {direction}")
            }
            (_, sort) => format!("{} {direction}, p.id {direction}", sort.column()),
        }
    }

    /// The same order over the page's rows (the subquery `listed`).
    pub(super) fn page_order(&self) -> String {
        let direction = self.order.sql();
        let column = self.sort.column().replace("p.", "listed.");
        format!("{column} {direction}, listed.id {direction}")
    }

    /// Whether a (published, moderation) pair passes the published and
    /// status filters; the Rust twin of their SQL, for counting from
    /// `post_counts`.
    fn admits(&self, published: bool, moderation: Moderation) -> bool {
        self.published.is_none_or(|wanted| wanted == published)
            && self
                .status
                .is_none_or(|wanted| wanted == PostStatus::of(published, moderation, false))
    }

    /// An SQL expression for how many posts `viewer` may see match: a sum of
    /// `post_counts` rows (plus, for a member, their own other posts from the
    /// author index), or a count over the index range the filters select.
    pub(super) fn total_sql(&self, viewer: Viewer, args: &mut Args) -> String {
        if self.is_whole_moderation_queue() && matches!(viewer, Viewer::Moderator(_)) {
            return format!("(SELECT total FROM post_counts WHERE scope = '{REPORTED_SCOPE}')");
        }
        if self.counts_rows() {
            let (from, mut conditions) = self.selection(args);
            conditions.extend(visibility(viewer, args));
            return format!("(SELECT COUNT(*) FROM {from}{})", where_clause(&conditions));
        }
        let public_only = !matches!(viewer, Viewer::Moderator(_));
        let scopes: Vec<String> = [true, false]
            .into_iter()
            .flat_map(|published| {
                Moderation::ALL
                    .into_iter()
                    .map(move |moderation| (published, moderation))
            })
            .filter(|&(published, moderation)| {
                self.admits(published, moderation)
                    && (!public_only || (published && moderation != Moderation::Hidden))
            })
            .map(|(published, moderation)| format!("'{}'", counter_scope(published, moderation)))
            .collect();
        let counted = if scopes.is_empty() {
            "0".to_owned()
        } else {
            format!(
                "(SELECT CAST(COALESCE(SUM(total), 0) AS BIGINT) FROM post_counts \
                 WHERE scope IN ({}))",
                scopes.join(", ")
            )
        };
        let counted = match &self.screen {
            Some(listed) => format!("({counted} - {})", args.push(Arg::Int(listed.hidden))),
            None => counted,
        };
        match viewer {
            Viewer::Member(id) => {
                let (_, mut conditions) = self.selection(args);
                conditions.push(format!("p.author_id = {}", args.push(Arg::Int(id))));
                conditions.push(format!("NOT {PUBLIC_SQL}"));
                format!(
                    "({counted} + (SELECT COUNT(*) FROM posts p{}))",
                    where_clause(&conditions)
                )
            }
            Viewer::Anonymous | Viewer::Moderator(_) => counted,
        }
    }

    /// An SQL expression for the page as one JSON text (see
    /// [`Dialect::json_rows`]).
    fn page_sql(&self, backend: Backend, viewer: Viewer, page: Page, args: &mut Args) -> String {
        let source = format!("{} listed", self.page_source(viewer, page, args));
        Dialect(backend).json_rows(&post_json(backend, "listed"), &self.page_order(), &source)
    }

    /// The subquery of the page's rows, in [`POST_COLUMNS`]. A first page
    /// has its limit written in (a checked integer) and no `OFFSET`, so the
    /// statement of the front page has no parameter that decides how many
    /// rows the plan reads: PostgreSQL plans it once (a generic plan) rather
    /// than at every execution, as it must for a `LIMIT` parameter. Later
    /// pages bind limit and offset, one statement for every page.
    pub(super) fn page_source(&self, viewer: Viewer, page: Page, args: &mut Args) -> String {
        let (from, mut conditions) = self.selection(args);
        conditions.extend(visibility(viewer, args));
        let window = if page.offset == 0 {
            format!("LIMIT {}", page.limit)
        } else {
            let limit = args.push(Arg::Int(page.limit));
            let offset = args.push(Arg::Int(page.offset));
            format!("LIMIT {limit} OFFSET {offset}")
        };
        format!(
            "(SELECT {POST_COLUMNS} FROM {from}{} ORDER BY {} {window})",
            where_clause(&conditions),
            self.order_by()
        )
    }
}

/// The `post_counts` row counting the posts with at least one report.
pub(crate) const REPORTED_SCOPE: &str = "reported";

/// The `post_counts` scope of a (published, moderation) pair, as the
/// triggers name it.
fn counter_scope(published: bool, moderation: Moderation) -> String {
    let switch = if published {
        "published"
    } else {
        "unpublished"
    };
    format!("{switch}:{}", moderation.as_str())
}

/// The condition that keeps to what `viewer` may see, if any.
fn visibility(viewer: Viewer, args: &mut Args) -> Option<String> {
    match viewer {
        Viewer::Anonymous => Some(PUBLIC_SQL.to_owned()),
        Viewer::Member(id) => Some(format!(
            "({PUBLIC_SQL} OR p.author_id = {})",
            args.push(Arg::Int(id))
        )),
        Viewer::Moderator(_) => None,
    }
}

/// A post (columns of `alias`) as a JSON array, in [`POST_COLUMNS`] order.
pub(crate) fn post_json(backend: Backend, alias: &str) -> String {
    Dialect(backend).json_array(&POST_COLUMNS.replace("p.", &format!("{alias}.")))
}

/// A post as [`post_json`] writes it.
#[derive(Deserialize)]
pub(crate) struct PostJson(
    i64,
    i64,
    String,
    String,
    String,
    JsonFlag,
    String,
    i64,
    i64,
    JsonFlag,
    i64,
    i64,
    JsonFlag,
    Option<String>,
);

impl TryFrom<PostJson> for Post {
    type Error = DomainError;

    fn try_from(
        PostJson(
            id,
            author_id,
            title,
            content,
            tags,
            published,
            moderation,
            report_count,
            reply_count,
            locked,
            created_at,
            updated_at,
            held,
            review_reason,
        ): PostJson,
    ) -> Result<Self, DomainError> {
        Post::try_from(PostRow {
            id,
            author_id,
            title,
            content,
            tags,
            published: Flag(published.into()),
            moderation,
            report_count,
            reply_count,
            locked: Flag(locked.into()),
            created_at,
            updated_at,
            held: Flag(held.into()),
            review_reason,
        })
    }
}

impl Database {
    /// A post whoever asks may or may not see; callers check with
    /// [`Post::visible_to`].
    pub async fn post_by_id(&self, id: i64) -> Result<Post, DomainError> {
        let row: Option<PostRow> = sqlx::query_as(&format!(
            "SELECT {POST_COLUMNS} FROM posts p WHERE p.id = $1"
        ))
        .bind(id)
        .fetch_optional(&mut *self.lease().await?)
        .await?;
        row.ok_or(DomainError::NotFound("post"))?.try_into()
    }

    /// A page of every post of `author_id` (drafts and hidden ones too),
    /// oldest first, after the post `after` (its `created_at` and id).
    pub async fn posts_of_author(
        &self,
        author_id: i64,
        after: Option<(i64, i64)>,
        limit: i64,
    ) -> Result<Vec<Post>, DomainError> {
        let (created_at, id) = after.unwrap_or((i64::MIN, i64::MIN));
        let rows: Vec<PostRow> = sqlx::query_as(&format!(
            "SELECT {POST_COLUMNS} FROM posts p WHERE p.author_id = $1 \
             AND (p.created_at > $2 OR (p.created_at = $2 AND p.id > $3)) \
             ORDER BY p.created_at, p.id LIMIT $4"
        ))
        .bind(author_id)
        .bind(created_at)
        .bind(id)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?;
        rows.into_iter().map(Post::try_from).collect()
    }

    /// A post as `viewer` sees it: one they may not see does not exist.
    pub async fn post_for(&self, id: i64, viewer: Viewer) -> Result<Post, DomainError> {
        let post = self.post_by_id(id).await?;
        if post.visible_to(viewer) {
            Ok(post)
        } else {
            Err(DomainError::NotFound("post"))
        }
    }

    /// One page of the posts `viewer` may see that match `query`, and their
    /// total. Every variant reads an index in the requested order, so a page
    /// costs about `offset + limit` index entries; the total comes from the
    /// `post_counts` table unless an author, tag or reported filter narrows
    /// it to an index range that is counted. A first page is one statement;
    /// a later one counts first, so a page past the end costs nothing more.
    pub async fn list_posts(
        &self,
        query: &PostQuery,
        viewer: Viewer,
        page: Page,
    ) -> Result<PostPage, DomainError> {
        if page.offset > 0 || page.limit == 0 {
            let mut args = Args::default();
            let total_sql = query.total_sql(viewer, &mut args);
            let (total,): (i64,) = bind_all(
                sqlx::query_as(&format!("SELECT {total_sql}")),
                args.into_vec(),
            )
            .fetch_one(&mut *self.lease().await?)
            .await?;
            if page.offset >= total || page.limit == 0 {
                return Ok(PostPage {
                    posts: Vec::new(),
                    total,
                });
            }
            let mut args = Args::default();
            let page_sql = query.page_sql(self.backend(), viewer, page, &mut args);
            let (json,): (String,) = bind_all(
                sqlx::query_as(&format!("SELECT {page_sql}")),
                args.into_vec(),
            )
            .fetch_one(&mut *self.lease().await?)
            .await?;
            let posts = parse_posts(&json)?;
            return Ok(PostPage { posts, total });
        }
        let (sql, args) = self.first_page_sql(query, viewer, page);
        let (total, json): (i64, String) = bind_all(sqlx::query_as(&sql), args)
            .fetch_one(&mut *self.lease().await?)
            .await?;
        Ok(PostPage {
            posts: parse_posts(&json)?,
            total,
        })
    }

    /// How many posts `screen` hides of those `viewer` would see in the
    /// list `query` (its published and status filters; a list whose total
    /// comes from counting rows needs no such count): one count over the
    /// hidden authors' posts, by the author index.
    pub async fn screened_post_count(
        &self,
        query: &PostQuery,
        viewer: Viewer,
        screen: Screen,
    ) -> Result<i64, DomainError> {
        let mut args = Args::default();
        let unscreened = PostQuery {
            screen: None,
            ..query.clone()
        };
        let (_, mut conditions) = unscreened.selection(&mut args);
        conditions.extend(visibility(viewer, &mut args));
        let reader = args.push(Arg::Int(screen.reader_id));
        let now = args.push(Arg::Int(screen.now));
        conditions.push(format!(
            "p.author_id IN (SELECT mr.other_id FROM member_relations mr \
             WHERE mr.user_id = {reader} AND (mr.blocked_at IS NOT NULL \
             OR (mr.muted_at IS NOT NULL \
             AND (mr.mute_expires_at IS NULL OR mr.mute_expires_at > {now}))))"
        ));
        let (hidden,): (i64,) = bind_all(
            sqlx::query_as(&format!(
                "SELECT COUNT(*) FROM posts p{}",
                where_clause(&conditions)
            )),
            args.into_vec(),
        )
        .fetch_one(&mut *self.lease().await?)
        .await?;
        Ok(hidden)
    }

    /// The statement of a first page: the total and the page together.
    fn first_page_sql(&self, query: &PostQuery, viewer: Viewer, page: Page) -> (String, Vec<Arg>) {
        let mut args = Args::default();
        let total_sql = query.total_sql(viewer, &mut args);
        let page_sql = query.page_sql(self.backend(), viewer, page, &mut args);
        (
            format!("SELECT {total_sql} AS total, {page_sql} AS page"),
            args.into_vec(),
        )
    }

    /// The `post_counts` rows as (published, moderation, count).
    async fn post_state_counts(&self) -> Result<Vec<(bool, Moderation, i64)>, DomainError> {
        let rows: Vec<(String, i64)> = sqlx::query_as("SELECT scope, total FROM post_counts")
            .fetch_all(&mut *self.lease().await?)
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(scope, total)| {
                let (switch, moderation) = scope.split_once(':')?;
                Some((switch == "published", Moderation::parse(moderation)?, total))
            })
            .collect())
    }

    /// Counts of posts by status, from the counters (for the admin surface's
    /// analytics and moderation report).
    pub async fn post_status_counts(&self) -> Result<HashMap<&'static str, i64>, DomainError> {
        let mut by_status: HashMap<&'static str, i64> = PostStatus::ALL
            .into_iter()
            .map(|status| (status.as_str(), 0))
            .collect();
        for (published, moderation, total) in self.post_state_counts().await? {
            *by_status
                .entry(PostStatus::of(published, moderation, false).as_str())
                .or_default() += total;
        }
        // The counters count a held post as a draft; the held ones are few
        // (`posts_held`).
        let (pending,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM posts WHERE held AND moderation <> 'hidden'")
                .fetch_one(&mut *self.lease().await?)
                .await?;
        *by_status.entry(PostStatus::Pending.as_str()).or_default() += pending;
        *by_status.entry(PostStatus::Draft.as_str()).or_default() -= pending;
        Ok(by_status)
    }

    /// A number that changes whenever any post is written (triggers bump it
    /// in the same transaction), so a cache of rendered lists and searches
    /// can tell, with one cheap read, whether an entry is still current,
    /// whichever instance or process wrote.
    pub async fn content_generation(&self) -> Result<i64, DomainError> {
        let (generation,): (i64,) =
            sqlx::query_as("SELECT value FROM content_generation WHERE id = $1")
                .bind(1_i64)
                .fetch_one(&mut *self.lease().await?)
                .await?;
        Ok(generation)
    }

    /// The query plan of the first-page statement of
    /// [`Database::list_posts`], one line per step, for the tests that check
    /// every list reads an index.
    #[cfg(feature = "testing")]
    pub async fn explain_list_posts(
        &self,
        query: &PostQuery,
        viewer: Viewer,
    ) -> Result<Vec<String>, DomainError> {
        let (sql, args) = self.first_page_sql(
            query,
            viewer,
            Page {
                limit: 20,
                offset: 0,
            },
        );
        self.explain(&sql, args).await
    }
}

/// Reads a page of [`post_json`] arrays.
fn parse_posts(json: &str) -> Result<Vec<Post>, DomainError> {
    parse_json_page::<PostJson>(json)?
        .into_iter()
        .map(Post::try_from)
        .collect()
}

impl Database {
    /// How many posts each of `author_ids` has written (the admin user
    /// items' `postCount`); authors without posts are absent.
    pub async fn post_counts(&self, author_ids: &[i64]) -> Result<HashMap<i64, i64>, DomainError> {
        if author_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let placeholders: Vec<String> = (1..=author_ids.len()).map(|n| format!("${n}")).collect();
        let sql = format!(
            "SELECT author_id, COUNT(*) FROM posts WHERE author_id IN ({}) GROUP BY author_id",
            placeholders.join(", ")
        );
        let mut query = sqlx::query_as::<_, (i64, i64)>(&sql);
        for id in author_ids {
            query = query.bind(*id);
        }
        let rows = query.fetch_all(&mut *self.lease().await?).await?;
        Ok(rows.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(viewer: Viewer, limit: i64, offset: i64) -> (String, usize) {
        let mut args = Args::default();
        let sql = PostQuery::default().page_source(viewer, Page { limit, offset }, &mut args);
        (sql, args.into_vec().len())
    }

    #[test]
    fn a_first_page_writes_its_limit_in_and_skips_nothing() {
        let (sql, bound) = source(Viewer::Anonymous, 20, 0);
        assert!(
            sql.ends_with("ORDER BY p.created_at DESC, p.id DESC LIMIT 20)"),
            "{sql}"
        );
        assert!(!sql.contains("OFFSET"), "{sql}");
        assert_eq!(bound, 0, "no parameter: one generic plan");
        let (sql, bound) = source(Viewer::Member(7), 5, 0);
        assert!(
            sql.ends_with("LIMIT 5)") && sql.contains("p.author_id = $1"),
            "{sql}"
        );
        assert_eq!(bound, 1);
    }

    #[test]
    fn a_later_page_binds_limit_and_offset() {
        let (sql, bound) = source(Viewer::Anonymous, 20, 40);
        assert!(sql.ends_with("LIMIT $1 OFFSET $2)"), "{sql}");
        assert_eq!(bound, 2);
    }
}
