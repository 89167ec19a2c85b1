//! Posts: writing, reading and listing them, and who may see or change
//! which.
//!
//! A post's status (SPEC.md "States": published, draft, hidden, flagged) is
//! derived from two stored facts kept apart on purpose: `published` is the
//! author's switch, `moderation` is a moderator's decision. An author cannot
//! un-hide a post by publishing it again, and a moderator's flag survives the
//! author's edits.

use std::borrow::Cow;
use std::collections::HashMap;

use sqlx::FromRow;

use serde::Deserialize;

use crate::dialect::Dialect;
use crate::listing::{Arg, Args, BorrowedText, JsonFlag, Page, SortOrder, bind_all, where_clause};
use crate::time::now_millis;
use crate::users::Role;
use crate::{Backend, Database, DomainError, Flag, Tx};

/// Most characters in a title.
pub const MAX_TITLE_CHARS: usize = 200;
/// Most characters in a post's content.
pub const MAX_CONTENT_CHARS: usize = 20_000;
/// Most tags on one post.
pub const MAX_TAGS: usize = 10;
/// Most characters in one tag.
pub const MAX_TAG_CHARS: usize = 30;

/// Who is looking, which decides what exists for them: anyone sees public
/// posts, an author also their own drafts and hidden posts, a moderator
/// everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer {
    Anonymous,
    Member(i64),
    Moderator(i64),
}

impl Viewer {
    /// The viewer for a signed-in user (`Some((id, role))`) or nobody.
    pub fn new(user: Option<(i64, Role)>) -> Viewer {
        match user {
            None => Viewer::Anonymous,
            Some((id, role)) if role.is_moderator() => Viewer::Moderator(id),
            Some((id, _)) => Viewer::Member(id),
        }
    }

    pub fn user_id(self) -> Option<i64> {
        match self {
            Viewer::Anonymous => None,
            Viewer::Member(id) | Viewer::Moderator(id) => Some(id),
        }
    }
}

/// A moderator's decision on a post.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moderation {
    /// No decision: the post shows as its author left it.
    None,
    /// Marked for review; still public.
    Flagged,
    /// Taken down: only its author and moderators see it.
    Hidden,
}

impl Moderation {
    pub const ALL: [Moderation; 3] = [Moderation::None, Moderation::Flagged, Moderation::Hidden];

    pub fn as_str(self) -> &'static str {
        match self {
            Moderation::None => "none",
            Moderation::Flagged => "flagged",
            Moderation::Hidden => "hidden",
        }
    }

    pub fn parse(name: &str) -> Option<Moderation> {
        Moderation::ALL
            .into_iter()
            .find(|moderation| moderation.as_str() == name)
    }
}

/// The status the admin surface shows (SPEC.md "States and transitions").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostStatus {
    Published,
    Draft,
    Hidden,
    Flagged,
}

impl PostStatus {
    pub const ALL: [PostStatus; 4] = [
        PostStatus::Published,
        PostStatus::Draft,
        PostStatus::Hidden,
        PostStatus::Flagged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PostStatus::Published => "published",
            PostStatus::Draft => "draft",
            PostStatus::Hidden => "hidden",
            PostStatus::Flagged => "flagged",
        }
    }

    pub fn parse(name: &str) -> Option<PostStatus> {
        PostStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == name)
    }

    /// The status of a post with this switch and decision: hidden wins, then
    /// an unpublished post is a draft, then a flag shows.
    pub fn of(published: bool, moderation: Moderation) -> PostStatus {
        match (published, moderation) {
            (_, Moderation::Hidden) => PostStatus::Hidden,
            (false, _) => PostStatus::Draft,
            (true, Moderation::Flagged) => PostStatus::Flagged,
            (true, Moderation::None) => PostStatus::Published,
        }
    }

    /// The same rule as [`PostStatus::of`], as SQL over `posts p`.
    fn condition(self) -> &'static str {
        match self {
            PostStatus::Published => "p.published = TRUE AND p.moderation = 'none'",
            PostStatus::Draft => "p.published = FALSE AND p.moderation <> 'hidden'",
            PostStatus::Hidden => "p.moderation = 'hidden'",
            PostStatus::Flagged => "p.published = TRUE AND p.moderation = 'flagged'",
        }
    }
}

/// What anyone may read, as SQL over `posts p`; must agree with
/// [`Post::is_public`].
pub(crate) const PUBLIC_SQL: &str = "(p.published = TRUE AND p.moderation <> 'hidden')";

/// A post.
#[derive(Debug, Clone, PartialEq)]
pub struct Post {
    pub id: i64,
    pub author_id: i64,
    pub title: String,
    pub content: String,
    pub tags: Vec<String>,
    pub published: bool,
    pub moderation: Moderation,
    pub report_count: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Post {
    pub fn status(&self) -> PostStatus {
        PostStatus::of(self.published, self.moderation)
    }

    /// Published and not hidden: anyone may read it.
    pub fn is_public(&self) -> bool {
        self.published && self.moderation != Moderation::Hidden
    }

    pub fn visible_to(&self, viewer: Viewer) -> bool {
        match viewer {
            Viewer::Anonymous => self.is_public(),
            Viewer::Member(id) => self.is_public() || self.author_id == id,
            Viewer::Moderator(_) => true,
        }
    }

    /// Only the author or a moderator may change or delete a post.
    pub fn editable_by(&self, viewer: Viewer) -> bool {
        match viewer {
            Viewer::Anonymous => false,
            Viewer::Member(id) => self.author_id == id,
            Viewer::Moderator(_) => true,
        }
    }
}

#[derive(FromRow)]
pub(crate) struct PostRow {
    id: i64,
    author_id: i64,
    title: String,
    content: String,
    tags: String,
    published: Flag,
    moderation: String,
    report_count: i64,
    created_at: i64,
    updated_at: i64,
}

impl TryFrom<PostRow> for Post {
    type Error = DomainError;

    fn try_from(row: PostRow) -> Result<Self, DomainError> {
        let moderation = Moderation::parse(&row.moderation).ok_or_else(|| {
            DomainError::Conflict(format!(
                "post {} has unknown moderation {}",
                row.id, row.moderation
            ))
        })?;
        Ok(Post {
            id: row.id,
            author_id: row.author_id,
            title: row.title,
            content: row.content,
            tags: split_tags(&row.tags),
            published: row.published.0,
            moderation,
            report_count: row.report_count,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

/// Post columns for `RETURNING` (unqualified).
const RETURNING_COLUMNS: &str = "id, author_id, title, content, tags, published, moderation, \
     report_count, created_at, updated_at";

/// Post columns of `posts p`.
pub(crate) const POST_COLUMNS: &str = "p.id, p.author_id, p.title, p.content, p.tags, \
     p.published, p.moderation, p.report_count, p.created_at, p.updated_at";

/// Tags are stored space-separated (they cannot contain spaces), which is
/// also how the full-text index reads them.
fn join_tags(tags: &[String]) -> String {
    tags.join(" ")
}

fn split_tags(stored: &str) -> Vec<String> {
    stored
        .split(' ')
        .filter(|tag| !tag.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The canonical form of a tag, or `None` when it is not one: lower case,
/// 1 to [`MAX_TAG_CHARS`] letters (any script), digits, `-` or `_`,
/// starting with a letter or digit.
pub fn normalize_tag(raw: &str) -> Option<String> {
    let tag = raw.trim().to_lowercase();
    let length = tag.chars().count();
    let well_formed = (1..=MAX_TAG_CHARS).contains(&length)
        && tag
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
        && tag.chars().next().is_some_and(char::is_alphanumeric);
    well_formed.then_some(tag)
}

/// What creating a post needs; the HTTP layer has checked the limits and
/// normalized the tags.
#[derive(Debug, Clone)]
pub struct NewPost {
    pub author_id: i64,
    pub title: String,
    pub content: String,
    pub tags: Vec<String>,
    pub published: bool,
}

/// Fields an update changes; `None` keeps the current value.
#[derive(Debug, Clone, Default)]
pub struct PostChanges {
    pub title: Option<String>,
    pub content: Option<String>,
    pub tags: Option<Vec<String>>,
    pub published: Option<bool>,
}

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

    /// An order of the admin list.
    pub fn parse_admin(name: &str) -> Option<PostSort> {
        PostSort::ADMIN
            .into_iter()
            .find(|sort| sort.as_str() == name)
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
    pub sort: PostSort,
    pub order: SortOrder,
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
        (from, conditions)
    }

    /// Only the `reported` filter: every post with a report, whose number
    /// the `post_counts` row [`REPORTED_SCOPE`] keeps.
    fn is_whole_moderation_queue(&self) -> bool {
        self.reported_only
            && self.author.is_none()
            && self.tag.is_none()
            && self.status.is_none()
            && self.published.is_none()
    }

    /// Whether the total comes from counting rows (an index range the
    /// filter selects) rather than from `post_counts`.
    fn counts_rows(&self) -> bool {
        self.author.is_some() || self.tag.is_some() || self.reported_only
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
    fn page_order(&self) -> String {
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
                .is_none_or(|wanted| wanted == PostStatus::of(published, moderation))
    }

    /// An SQL expression for how many posts `viewer` may see match: a sum of
    /// `post_counts` rows (plus, for a member, their own other posts from the
    /// author index), or a count over the index range the filters select.
    fn total_sql(&self, viewer: Viewer, args: &mut Args) -> String {
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

    /// The subquery of the page's rows, in [`POST_COLUMNS`].
    fn page_source(&self, viewer: Viewer, page: Page, args: &mut Args) -> String {
        let (from, mut conditions) = self.selection(args);
        conditions.extend(visibility(viewer, args));
        let limit = args.push(Arg::Int(page.limit));
        let offset = args.push(Arg::Int(page.offset));
        format!(
            "(SELECT {POST_COLUMNS} FROM {from}{} ORDER BY {} LIMIT {limit} OFFSET {offset})",
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
    i64,
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
            created_at,
            updated_at,
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
            created_at,
            updated_at,
        })
    }
}

/// Reads a page written by [`Dialect::json_rows`], its elements borrowing
/// from `json` where they can; a page that does not parse is a bug,
/// reported as a decoding error.
pub(crate) fn parse_json_page<'a, T: Deserialize<'a>>(
    json: &'a str,
) -> Result<Vec<T>, DomainError> {
    serde_json::from_str(json)
        .map_err(|error| DomainError::Database(sqlx::Error::Decode(Box::new(error))))
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
                .entry(PostStatus::of(published, moderation).as_str())
                .or_default() += total;
        }
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
    /// [`Database::list_posts`], one line per step, for tests and benchmarks
    /// that check every list reads an index.
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

    /// `EXPLAIN QUERY PLAN` (SQLite) or `EXPLAIN` (PostgreSQL) of one
    /// statement, as text lines.
    pub(crate) async fn explain(
        &self,
        sql: &str,
        args: Vec<Arg>,
    ) -> Result<Vec<String>, DomainError> {
        let dialect = self.dialect();
        let explain = dialect.explain(sql);
        let mut lease = self.lease().await?;
        if dialect.plan_has_detail_column() {
            let rows: Vec<(i64, i64, i64, String)> = bind_all(sqlx::query_as(&explain), args)
                .fetch_all(&mut *lease)
                .await?;
            Ok(rows.into_iter().map(|(_, _, _, detail)| detail).collect())
        } else {
            let rows: Vec<(String,)> = bind_all(sqlx::query_as(&explain), args)
                .fetch_all(&mut *lease)
                .await?;
            Ok(rows.into_iter().map(|(line,)| line).collect())
        }
    }
}

/// Reads a page of [`post_json`] arrays.
fn parse_posts(json: &str) -> Result<Vec<Post>, DomainError> {
    parse_json_page::<PostJson>(json)?
        .into_iter()
        .map(Post::try_from)
        .collect()
}

/// Inserts one `post_tags` row per tag, in one statement.
async fn insert_tags(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    post_id: i64,
    tags: &[String],
    created_at: i64,
) -> Result<(), DomainError> {
    if tags.is_empty() {
        return Ok(());
    }
    let values: Vec<String> = (0..tags.len())
        .map(|index| format!("($1, $2, ${})", index + 3))
        .collect();
    let sql = format!(
        "INSERT INTO post_tags (post_id, created_at, tag) VALUES {} ON CONFLICT DO NOTHING",
        values.join(", ")
    );
    let mut statement = sqlx::query(&sql).bind(post_id).bind(created_at);
    for tag in tags {
        statement = statement.bind(tag.clone());
    }
    statement.execute(&mut **tx).await?;
    Ok(())
}

/// Creates a post and its tag rows.
pub async fn create(tx: &mut Tx<'_>, new: NewPost) -> Result<Post, DomainError> {
    let now = now_millis();
    let row: PostRow = sqlx::query_as(&format!(
        "INSERT INTO posts (author_id, title, content, tags, published, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING {RETURNING_COLUMNS}"
    ))
    .bind(new.author_id)
    .bind(new.title)
    .bind(new.content)
    .bind(join_tags(&new.tags))
    .bind(new.published)
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    let post = Post::try_from(row)?;
    insert_tags(tx, post.id, &post.tags, post.created_at).await?;
    Ok(post)
}

/// Applies `changes` (title, content, tags, published switch) and bumps
/// `updated_at`; tag rows are replaced in the same transaction.
pub async fn update(tx: &mut Tx<'_>, id: i64, changes: PostChanges) -> Result<Post, DomainError> {
    let mut sets = Vec::new();
    let mut args = Vec::new();
    let mut set = |column: &str, value: Arg| {
        args.push(value);
        sets.push(format!("{column} = ${}", args.len()));
    };
    if let Some(title) = changes.title {
        set("title", Arg::Text(title));
    }
    if let Some(content) = changes.content {
        set("content", Arg::Text(content));
    }
    if let Some(tags) = &changes.tags {
        set("tags", Arg::Text(join_tags(tags)));
    }
    if let Some(published) = changes.published {
        set("published", Arg::Bool(published));
    }
    set("updated_at", Arg::Int(now_millis()));
    args.push(Arg::Int(id));
    let sql = format!(
        "UPDATE posts SET {} WHERE id = ${} RETURNING {RETURNING_COLUMNS}",
        sets.join(", "),
        args.len()
    );
    let row: Option<PostRow> = bind_all(sqlx::query_as(&sql), args)
        .fetch_optional(&mut **tx)
        .await?;
    let post = Post::try_from(row.ok_or(DomainError::NotFound("post"))?)?;
    if changes.tags.is_some() {
        sqlx::query("DELETE FROM post_tags WHERE post_id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await?;
        insert_tags(tx, post.id, &post.tags, post.created_at).await?;
    }
    Ok(post)
}

/// Deletes a post for good; its tags and reports go with it.
pub async fn delete(tx: &mut Tx<'_>, id: i64) -> Result<(), DomainError> {
    let deleted = sqlx::query("DELETE FROM posts WHERE id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await?;
    if deleted.rows_affected() == 0 {
        return Err(DomainError::NotFound("post"));
    }
    Ok(())
}

/// Records a moderator's decision (the admin surface's approve, hide and
/// flag actions: approve is [`Moderation::None`]).
pub async fn set_moderation(
    tx: &mut Tx<'_>,
    id: i64,
    moderation: Moderation,
) -> Result<Post, DomainError> {
    let row: Option<PostRow> = sqlx::query_as(&format!(
        "UPDATE posts SET moderation = $1, updated_at = $2 WHERE id = $3 \
         RETURNING {RETURNING_COLUMNS}"
    ))
    .bind(moderation.as_str())
    .bind(now_millis())
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or(DomainError::NotFound("post"))?.try_into()
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

/// A moderator's action on a post (SPEC.md "States and transitions").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModerationAction {
    /// Clears a flag or a hide (the author's switch decides between
    /// published and draft) and marks open reports resolved.
    Approve,
    Hide,
    /// Permanent: the post and its reports are removed.
    Delete,
    Flag,
}

impl ModerationAction {
    pub const ALL: [ModerationAction; 4] = [
        ModerationAction::Approve,
        ModerationAction::Hide,
        ModerationAction::Delete,
        ModerationAction::Flag,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ModerationAction::Approve => "approve",
            ModerationAction::Hide => "hide",
            ModerationAction::Delete => "delete",
            ModerationAction::Flag => "flag",
        }
    }

    pub fn parse(name: &str) -> Option<ModerationAction> {
        ModerationAction::ALL
            .into_iter()
            .find(|action| action.as_str() == name)
    }
}

/// What a moderation action does to a post.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModerationStep {
    /// Records this decision (the status follows from it and the author's
    /// switch, see [`PostStatus::of`]).
    Decide(Moderation),
    Delete,
}

/// The moderation state machine: from each status, what each action does,
/// or why it makes no sense (the caller answers 409 with that reason).
pub fn moderation_step(
    status: PostStatus,
    action: ModerationAction,
) -> Result<ModerationStep, &'static str> {
    use ModerationAction as A;
    use PostStatus as S;
    match (status, action) {
        (_, A::Delete) => Ok(ModerationStep::Delete),
        (S::Published | S::Flagged | S::Hidden, A::Approve) => {
            Ok(ModerationStep::Decide(Moderation::None))
        }
        (S::Draft, A::Approve) => Err(
            "a draft is not public, so there is nothing to approve until its author publishes it",
        ),
        (S::Hidden, A::Hide) => Err("the post is already hidden"),
        (S::Published | S::Flagged | S::Draft, A::Hide) => {
            Ok(ModerationStep::Decide(Moderation::Hidden))
        }
        (S::Published, A::Flag) => Ok(ModerationStep::Decide(Moderation::Flagged)),
        (S::Flagged, A::Flag) => Err("the post is already flagged"),
        (S::Hidden, A::Flag) => {
            Err("a hidden post is out of view already; approve it first to flag it instead")
        }
        (S::Draft, A::Flag) => Err("a draft is not public, so there is nothing to flag yet"),
    }
}

/// The result of [`moderate`].
#[derive(Debug, Clone)]
pub enum Moderated {
    /// The decision was recorded; `reports_resolved` open reports were
    /// marked resolved.
    Changed {
        before: Post,
        after: Post,
        reports_resolved: u64,
    },
    /// The post and `reports_removed` reports are gone.
    Deleted { before: Post, reports_removed: i64 },
}

/// Applies `action` to post `id` by `moderator_id` following
/// [`moderation_step`]: [`DomainError::InvalidTransition`] when it makes
/// no sense from the post's status, and nothing is written then.
pub async fn moderate(
    tx: &mut Tx<'_>,
    id: i64,
    action: ModerationAction,
    moderator_id: i64,
) -> Result<Moderated, DomainError> {
    let row: Option<PostRow> = sqlx::query_as(&format!(
        "SELECT {POST_COLUMNS} FROM posts p WHERE p.id = $1"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    let before = Post::try_from(row.ok_or(DomainError::NotFound("post"))?)?;
    let step = moderation_step(before.status(), action).map_err(|reason| {
        DomainError::InvalidTransition(format!(
            "cannot {} a {} post: {reason}",
            action.as_str(),
            before.status().as_str()
        ))
    })?;
    match step {
        ModerationStep::Decide(moderation) => {
            let after = set_moderation(tx, id, moderation).await?;
            let reports_resolved = crate::reports::resolve(tx, id, moderator_id).await?;
            Ok(Moderated::Changed {
                before,
                after,
                reports_resolved,
            })
        }
        ModerationStep::Delete => {
            let reports_removed = before.report_count;
            delete(tx, id).await?;
            Ok(Moderated::Deleted {
                before,
                reports_removed,
            })
        }
    }
}

/// A post as the admin surface shows it: with its author's username and
/// its reports. Read in place from the JSON text the database wrote: a
/// string without escapes borrows from it instead of being copied, which
/// for a page of 50 posts was about a tenth of the moderation queue's time.
#[derive(Debug, Clone)]
pub struct AdminPost<'a> {
    pub id: i64,
    pub author_id: i64,
    pub author_username: Cow<'a, str>,
    pub title: Cow<'a, str>,
    pub content: Cow<'a, str>,
    pub status: PostStatus,
    pub report_count: i64,
    pub created_at: i64,
    pub updated_at: i64,
    /// Oldest first.
    pub reports: Vec<AdminReport<'a>>,
}

/// One report as [`AdminPost`] lists it.
#[derive(Debug, Clone)]
pub struct AdminReport<'a> {
    pub id: i64,
    pub reporter_id: i64,
    pub reason: Cow<'a, str>,
    pub created_at: i64,
}

impl AdminPost<'_> {
    /// The same post owning its strings.
    pub fn into_owned(self) -> AdminPost<'static> {
        AdminPost {
            author_username: Cow::Owned(self.author_username.into_owned()),
            title: Cow::Owned(self.title.into_owned()),
            content: Cow::Owned(self.content.into_owned()),
            reports: self
                .reports
                .into_iter()
                .map(|report| AdminReport {
                    reason: Cow::Owned(report.reason.into_owned()),
                    ..report
                })
                .collect(),
            ..self
        }
    }
}

/// One page of the admin post list as the database wrote it, and how many
/// posts match in all; [`AdminPostPage::posts`] reads the page in place.
#[derive(Debug, Clone)]
pub struct AdminPostPage {
    json: Option<String>,
    pub total: i64,
}

impl AdminPostPage {
    /// The page's posts, borrowing from it.
    pub fn posts(&self) -> Result<Vec<AdminPost<'_>>, DomainError> {
        match &self.json {
            Some(json) => parse_admin_posts(json),
            None => Ok(Vec::new()),
        }
    }
}

impl Database {
    /// A page of the admin post list: every post (a moderator sees all),
    /// filtered and ordered by `query`, each with its author's username and
    /// its reports inside its own JSON element, so the page crosses from the
    /// database as one value. A first page is one statement, the total
    /// with the page; a later one counts first, so a page past the end
    /// costs nothing more.
    pub async fn admin_posts(
        &self,
        query: &PostQuery,
        moderator_id: i64,
        page: Page,
    ) -> Result<AdminPostPage, DomainError> {
        let viewer = Viewer::Moderator(moderator_id);
        let (total, json) = self
            .counted_page(
                page,
                |args| query.total_sql(viewer, args),
                |args| {
                    let source = format!("{} listed", query.page_source(viewer, page, args));
                    self.dialect().json_rows(
                        &self.admin_post_json("listed"),
                        &query.page_order(),
                        &source,
                    )
                },
            )
            .await?;
        Ok(AdminPostPage { json, total })
    }

    /// One post as the admin surface shows it.
    pub async fn admin_post(&self, id: i64) -> Result<AdminPost<'static>, DomainError> {
        let sql = format!(
            "SELECT {}",
            self.dialect().json_rows(
                &self.admin_post_json("listed"),
                "listed.id",
                &format!("(SELECT {POST_COLUMNS} FROM posts p WHERE p.id = $1) listed"),
            )
        );
        let (json,): (String,) = sqlx::query_as(&sql)
            .bind(id)
            .fetch_one(&mut *self.lease().await?)
            .await?;
        parse_admin_posts(&json)?
            .pop()
            .map(AdminPost::into_owned)
            .ok_or(DomainError::NotFound("post"))
    }

    /// A post of `listed` (columns [`POST_COLUMNS`]) as the admin list
    /// reads it: its [`post_json`], its author's username and its reports
    /// (`NULL` without any), each report looked up through the post's index
    /// range, so a page costs no lookup tables.
    fn admin_post_json(&self, listed: &str) -> String {
        let dialect = self.dialect();
        // Unqualified, the report's columns name the innermost table.
        let reports = dialect.nested_json_rows(
            &dialect.json_array(crate::reports::REPORT_COLUMNS),
            &format!("post_reports r WHERE r.post_id = {listed}.id"),
        );
        dialect.json_array(&format!(
            "{}, (SELECT u.username FROM users u WHERE u.id = {listed}.author_id), \
             CASE WHEN {listed}.report_count > 0 THEN {reports} END",
            post_json(self.backend(), listed),
        ))
    }
}

/// A post as [`post_json`] writes it, its strings borrowed where they can
/// be; the tags, which the admin list does not show, skipped unread.
#[derive(Deserialize)]
struct AdminPostJson<'a>(
    i64,
    i64,
    #[serde(borrow)] Cow<'a, str>,
    #[serde(borrow)] Cow<'a, str>,
    serde::de::IgnoredAny,
    JsonFlag,
    #[serde(borrow)] Cow<'a, str>,
    i64,
    i64,
    i64,
);

/// A report as [`Database::admin_post_json`] writes it
/// ([`crate::reports::REPORT_COLUMNS`]); only what the admin list shows is kept.
#[derive(Deserialize)]
struct AdminReportJson<'a>(
    i64,
    serde::de::IgnoredAny,
    i64,
    #[serde(borrow)] Cow<'a, str>,
    i64,
    serde::de::IgnoredAny,
    serde::de::IgnoredAny,
);

/// One element of a page of [`Database::admin_post_json`].
#[derive(Deserialize)]
struct AdminPostElement<'a>(
    #[serde(borrow)] AdminPostJson<'a>,
    #[serde(borrow)] Option<BorrowedText<'a>>,
    #[serde(borrow)] Option<Vec<AdminReportJson<'a>>>,
);

/// Reads a page of [`Database::admin_post_json`] elements in place; each
/// post's reports oldest first.
fn parse_admin_posts(json: &str) -> Result<Vec<AdminPost<'_>>, DomainError> {
    parse_json_page::<AdminPostElement<'_>>(json)?
        .into_iter()
        .map(|AdminPostElement(post, author_username, reports)| {
            let AdminPostJson(
                id,
                author_id,
                title,
                content,
                _tags,
                published,
                moderation,
                report_count,
                created_at,
                updated_at,
            ) = post;
            let moderation = Moderation::parse(&moderation).ok_or_else(|| {
                DomainError::Conflict(format!("post {id} has unknown moderation {moderation}"))
            })?;
            let mut reports: Vec<AdminReport<'_>> = reports
                .unwrap_or_default()
                .into_iter()
                .map(
                    |AdminReportJson(id, _, reporter_id, reason, created_at, _, _)| AdminReport {
                        id,
                        reporter_id,
                        reason,
                        created_at,
                    },
                )
                .collect();
            reports.sort_by_key(|report| (report.created_at, report.id));
            Ok(AdminPost {
                id,
                author_id,
                author_username: author_username
                    .map(|BorrowedText(name)| name)
                    .unwrap_or_default(),
                title,
                content,
                status: PostStatus::of(published.into(), moderation),
                report_count,
                created_at,
                updated_at,
                reports,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_follows_moderation_then_the_switch() {
        assert_eq!(
            PostStatus::of(true, Moderation::None),
            PostStatus::Published
        );
        assert_eq!(PostStatus::of(false, Moderation::None), PostStatus::Draft);
        assert_eq!(
            PostStatus::of(false, Moderation::Flagged),
            PostStatus::Draft
        );
        assert_eq!(
            PostStatus::of(true, Moderation::Flagged),
            PostStatus::Flagged
        );
        assert_eq!(PostStatus::of(true, Moderation::Hidden), PostStatus::Hidden);
        assert_eq!(
            PostStatus::of(false, Moderation::Hidden),
            PostStatus::Hidden
        );
    }

    #[test]
    fn tags_are_normalized_or_refused() {
        assert_eq!(normalize_tag(" Rust "), Some("rust".to_owned()));
        assert_eq!(normalize_tag("Ünïcode_2"), Some("ünïcode_2".to_owned()));
        assert_eq!(normalize_tag("日本語"), Some("日本語".to_owned()));
        assert_eq!(normalize_tag("two words"), None);
        assert_eq!(normalize_tag("-lead"), None);
        assert_eq!(normalize_tag("' OR 1=1 --"), None);
        assert_eq!(normalize_tag(""), None);
        assert_eq!(normalize_tag(&"a".repeat(MAX_TAG_CHARS + 1)), None);
    }

    #[test]
    fn members_see_public_posts_and_their_own() {
        let mut post = Post {
            id: 1,
            author_id: 7,
            title: String::new(),
            content: String::new(),
            tags: Vec::new(),
            published: false,
            moderation: Moderation::None,
            report_count: 0,
            created_at: 0,
            updated_at: 0,
        };
        assert!(!post.visible_to(Viewer::Anonymous));
        assert!(post.visible_to(Viewer::Member(7)));
        assert!(!post.visible_to(Viewer::Member(8)));
        assert!(post.visible_to(Viewer::Moderator(9)));
        post.published = true;
        assert!(post.visible_to(Viewer::Anonymous));
        post.moderation = Moderation::Hidden;
        assert!(!post.visible_to(Viewer::Member(8)));
        assert!(post.editable_by(Viewer::Member(7)));
        assert!(!post.editable_by(Viewer::Member(8)));
        assert!(post.editable_by(Viewer::Moderator(9)));
    }

    #[test]
    fn every_moderation_action_from_every_status() {
        use ModerationAction as A;
        use ModerationStep::{Decide, Delete};
        // Rows: published, draft, hidden, flagged; columns: approve, hide,
        // delete, flag. `-` is a refusal.
        let expected = [
            [
                Some(Decide(Moderation::None)),
                Some(Decide(Moderation::Hidden)),
                Some(Delete),
                Some(Decide(Moderation::Flagged)),
            ],
            [None, Some(Decide(Moderation::Hidden)), Some(Delete), None],
            [Some(Decide(Moderation::None)), None, Some(Delete), None],
            [
                Some(Decide(Moderation::None)),
                Some(Decide(Moderation::Hidden)),
                Some(Delete),
                None,
            ],
        ];
        for (status, row) in PostStatus::ALL.into_iter().zip(expected) {
            for (action, want) in [A::Approve, A::Hide, A::Delete, A::Flag]
                .into_iter()
                .zip(row)
            {
                assert_eq!(
                    moderation_step(status, action).ok(),
                    want,
                    "{status:?} {action:?}"
                );
            }
        }
    }
}
