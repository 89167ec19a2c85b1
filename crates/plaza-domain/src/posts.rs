//! Posts: writing, reading and listing them, and who may see or change
//! which.
//!
//! A post's status (SPEC.md "States": published, draft, hidden, flagged) is
//! derived from two stored facts kept apart on purpose: `published` is the
//! author's switch, `moderation` is a moderator's decision. An author cannot
//! un-hide a post by publishing it again, and a moderator's flag survives the
//! author's edits.

use std::collections::HashMap;

use sqlx::FromRow;

use crate::listing::{Arg, Filters, Page, SortOrder, bind_all};
use crate::time::now_millis;
use crate::users::Role;
use crate::{Backend, Database, DomainError, Flag};

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
}

impl PostSort {
    pub const ALL: [PostSort; 3] = [PostSort::CreatedAt, PostSort::UpdatedAt, PostSort::Title];

    pub fn as_str(self) -> &'static str {
        match self {
            PostSort::CreatedAt => "created_at",
            PostSort::UpdatedAt => "updated_at",
            PostSort::Title => "title",
        }
    }

    pub fn parse(name: &str) -> Option<PostSort> {
        PostSort::ALL.into_iter().find(|sort| sort.as_str() == name)
    }

    /// Fixed column text, each with an index ending in `id`.
    fn column(self) -> &'static str {
        match self {
            PostSort::CreatedAt => "p.created_at",
            PostSort::UpdatedAt => "p.updated_at",
            PostSort::Title => "p.title",
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

/// The FROM clause and conditions of a post list, shared by the page query
/// and the count.
struct PostSelection {
    from: &'static str,
    filters: Filters,
}

impl PostQuery {
    /// Conditions of the filters other than visibility.
    fn selection(&self) -> PostSelection {
        let mut filters = Filters::default();
        let from = match &self.tag {
            Some(tag) => {
                let tag = filters.arg(Arg::Text(tag.clone()));
                filters.push(format!("t.tag = {tag}"));
                "post_tags t JOIN posts p ON p.id = t.post_id"
            }
            None => "posts p",
        };
        if let Some(author) = self.author {
            let author = filters.arg(Arg::Int(author));
            filters.push(format!("p.author_id = {author}"));
        }
        if let Some(published) = self.published {
            let published = filters.arg(Arg::Bool(published));
            filters.push(format!("p.published = {published}"));
        }
        if let Some(status) = self.status {
            filters.push(status.condition());
        }
        if self.reported_only {
            filters.push("p.report_count > 0");
        }
        PostSelection { from, filters }
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

    /// Whether a (published, moderation) pair passes the published and
    /// status filters; the Rust twin of their SQL, for counting from
    /// `post_counts`.
    fn admits(&self, published: bool, moderation: Moderation) -> bool {
        self.published.is_none_or(|wanted| wanted == published)
            && self
                .status
                .is_none_or(|wanted| wanted == PostStatus::of(published, moderation))
    }
}

/// Restricts `filters` to what `viewer` may see.
fn restrict_to(filters: &mut Filters, viewer: Viewer) {
    match viewer {
        Viewer::Anonymous => filters.push(PUBLIC_SQL),
        Viewer::Member(id) => {
            let id = filters.arg(Arg::Int(id));
            filters.push(format!("({PUBLIC_SQL} OR p.author_id = {id})"));
        }
        Viewer::Moderator(_) => {}
    }
}

impl Database {
    /// Creates a post and its tag rows in one transaction.
    pub async fn create_post(&self, new: NewPost) -> Result<Post, DomainError> {
        let now = now_millis();
        let mut tx = self.pool().begin().await?;
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
        .fetch_one(&mut *tx)
        .await?;
        let post = Post::try_from(row)?;
        insert_tags(&mut tx, post.id, &post.tags, post.created_at).await?;
        tx.commit().await?;
        Ok(post)
    }

    /// A post whoever asks may or may not see; callers check with
    /// [`Post::visible_to`].
    pub async fn post_by_id(&self, id: i64) -> Result<Post, DomainError> {
        let row: Option<PostRow> = sqlx::query_as(&format!(
            "SELECT {POST_COLUMNS} FROM posts p WHERE p.id = $1"
        ))
        .bind(id)
        .fetch_optional(self.pool())
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

    /// Applies `changes` (title, content, tags, published switch) and bumps
    /// `updated_at`; tag rows are replaced in the same transaction.
    pub async fn update_post(&self, id: i64, changes: PostChanges) -> Result<Post, DomainError> {
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
        let mut tx = self.pool().begin().await?;
        let row: Option<PostRow> = bind_all(sqlx::query_as(&sql), args)
            .fetch_optional(&mut *tx)
            .await?;
        let post = Post::try_from(row.ok_or(DomainError::NotFound("post"))?)?;
        if changes.tags.is_some() {
            sqlx::query("DELETE FROM post_tags WHERE post_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            insert_tags(&mut tx, post.id, &post.tags, post.created_at).await?;
        }
        tx.commit().await?;
        Ok(post)
    }

    /// Deletes a post for good; its tags and reports go with it.
    pub async fn delete_post(&self, id: i64) -> Result<(), DomainError> {
        let deleted = sqlx::query("DELETE FROM posts WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(DomainError::NotFound("post"));
        }
        Ok(())
    }

    /// Records a moderator's decision (the admin surface's approve, hide and
    /// flag actions: approve is [`Moderation::None`]).
    pub async fn set_post_moderation(
        &self,
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
        .fetch_optional(self.pool())
        .await?;
        row.ok_or(DomainError::NotFound("post"))?.try_into()
    }

    /// One page of the posts `viewer` may see that match `query`, and their
    /// total. Every variant reads an index in the requested order, so a page
    /// costs about `offset + limit` index entries, and the total comes from
    /// the `post_counts` table unless an author, tag or reported filter
    /// narrows it to an index range that is counted.
    pub async fn list_posts(
        &self,
        query: &PostQuery,
        viewer: Viewer,
        page: Page,
    ) -> Result<PostPage, DomainError> {
        let total = self.count_posts(query, viewer).await?;
        if page.offset >= total || page.limit == 0 {
            return Ok(PostPage {
                posts: Vec::new(),
                total,
            });
        }
        let PostSelection { from, mut filters } = query.selection();
        restrict_to(&mut filters, viewer);
        let limit = filters.arg(Arg::Int(page.limit));
        let offset = filters.arg(Arg::Int(page.offset));
        let sql = format!(
            "SELECT {POST_COLUMNS} FROM {from}{} ORDER BY {} LIMIT {limit} OFFSET {offset}",
            filters.where_sql(),
            query.order_by()
        );
        let rows: Vec<PostRow> = bind_all(sqlx::query_as(&sql), filters.args())
            .fetch_all(self.pool())
            .await?;
        let posts = rows
            .into_iter()
            .map(Post::try_from)
            .collect::<Result<_, _>>()?;
        Ok(PostPage { posts, total })
    }

    /// How many posts `viewer` may see match `query`.
    async fn count_posts(&self, query: &PostQuery, viewer: Viewer) -> Result<i64, DomainError> {
        if query.author.is_some() || query.tag.is_some() || query.reported_only {
            let PostSelection { from, mut filters } = query.selection();
            restrict_to(&mut filters, viewer);
            let sql = format!("SELECT COUNT(*) FROM {from}{}", filters.where_sql());
            let (count,): (i64,) = bind_all(sqlx::query_as(&sql), filters.args())
                .fetch_one(self.pool())
                .await?;
            return Ok(count);
        }
        let counts = self.post_state_counts().await?;
        let sum = |include: &dyn Fn(bool, Moderation) -> bool| -> i64 {
            counts
                .iter()
                .filter(|(published, moderation, _)| {
                    query.admits(*published, *moderation) && include(*published, *moderation)
                })
                .map(|(_, _, total)| total)
                .sum()
        };
        let public =
            |published: bool, moderation: Moderation| published && moderation != Moderation::Hidden;
        Ok(match viewer {
            Viewer::Anonymous => sum(&public),
            Viewer::Moderator(_) => sum(&|_, _| true),
            Viewer::Member(id) => {
                // Public posts from the counters, plus the member's own
                // others from the author index.
                let PostSelection { mut filters, .. } = query.selection();
                let id = filters.arg(Arg::Int(id));
                filters.push(format!("p.author_id = {id}"));
                filters.push(format!("NOT {PUBLIC_SQL}"));
                let sql = format!("SELECT COUNT(*) FROM posts p{}", filters.where_sql());
                let (own,): (i64,) = bind_all(sqlx::query_as(&sql), filters.args())
                    .fetch_one(self.pool())
                    .await?;
                sum(&public) + own
            }
        })
    }

    /// The `post_counts` rows as (published, moderation, count).
    async fn post_state_counts(&self) -> Result<Vec<(bool, Moderation, i64)>, DomainError> {
        let rows: Vec<(String, i64)> = sqlx::query_as("SELECT scope, total FROM post_counts")
            .fetch_all(self.pool())
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

    /// The query plan of the page query of [`Database::list_posts`], one
    /// line per step, for tests and benchmarks that check every list reads
    /// an index.
    pub async fn explain_list_posts(
        &self,
        query: &PostQuery,
        viewer: Viewer,
    ) -> Result<Vec<String>, DomainError> {
        let PostSelection { from, mut filters } = query.selection();
        restrict_to(&mut filters, viewer);
        let limit = filters.arg(Arg::Int(20));
        let offset = filters.arg(Arg::Int(0));
        let page_sql = format!(
            "SELECT {POST_COLUMNS} FROM {from}{} ORDER BY {} LIMIT {limit} OFFSET {offset}",
            filters.where_sql(),
            query.order_by()
        );
        let mut plan = self.explain(&page_sql, filters.args()).await?;
        if query.author.is_some() || query.tag.is_some() || query.reported_only {
            let PostSelection { from, mut filters } = query.selection();
            restrict_to(&mut filters, viewer);
            let count_sql = format!("SELECT COUNT(*) FROM {from}{}", filters.where_sql());
            plan.extend(self.explain(&count_sql, filters.args()).await?);
        }
        Ok(plan)
    }

    /// `EXPLAIN QUERY PLAN` (SQLite) or `EXPLAIN` (PostgreSQL) of one
    /// statement, as text lines.
    pub(crate) async fn explain(
        &self,
        sql: &str,
        args: Vec<Arg>,
    ) -> Result<Vec<String>, DomainError> {
        match self.backend() {
            Backend::Sqlite => {
                let rows: Vec<(i64, i64, i64, String)> =
                    bind_all(sqlx::query_as(&format!("EXPLAIN QUERY PLAN {sql}")), args)
                        .fetch_all(self.pool())
                        .await?;
                Ok(rows.into_iter().map(|(_, _, _, detail)| detail).collect())
            }
            Backend::Postgres => {
                let rows: Vec<(String,)> =
                    bind_all(sqlx::query_as(&format!("EXPLAIN {sql}")), args)
                        .fetch_all(self.pool())
                        .await?;
                Ok(rows.into_iter().map(|(line,)| line).collect())
            }
        }
    }
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
}
