//! Full-text search over posts, replies and users, with relevance ranking,
//! prefix matching of the word being typed, and highlighted snippets.
//!
//! SQLite uses FTS5 tables kept in step by triggers; PostgreSQL uses
//! generated `tsvector` columns with GIN indexes. The text a user typed is
//! never handed to either query parser: it is cut into words of letters and
//! digits, and each word travels quoted.
//!
//! Ranking is bounded by design. The candidates are the newest
//! [`SEARCH_WINDOW`] matches the viewer may see (read straight off the
//! full-text index in id order); relevance orders them: an exact title (or
//! name) first, then, on PostgreSQL, `ts_rank` over the weighted vector
//! (title, tags, body) and, on SQLite, the words found in the title (from
//! the index's title column) and in the tags. Corpus-wide scoring such as
//! FTS5's bm25 reads every match of every word to weigh it, which for a
//! word in most of a million posts costs tens of milliseconds; this costs
//! the same for a common word as for a rare one, and a rare word is ranked
//! over all its matches.
//!
//! A reader's blocks, mutes and filters are not part of the statement: the
//! window and its pages are the same for every reader of the same
//! visibility, and the routes leave out what the reader's relations hide
//! from the page found, so hiding costs a reader who hides many authors no
//! longer scan of the index.
//!
//! Highlights are made here rather than by `snippet()` or `ts_headline`, so
//! they are the same on both engines and cost only the page's text.

use sqlx::FromRow;

use crate::dialect::Dialect;
use crate::listing::{Arg, Args, Page, bind_all, parse_json_page};
use crate::posts::{PUBLIC_SQL, Post, PostJson, REPORTED_SCOPE, Viewer, post_json};
use crate::replies::{REPLY_COLUMNS, Reply, ReplyJson, ReplyRow};
use crate::users::{USER_COLUMNS, User, UserRow};
use crate::{Backend, Database, DomainError, Tx};

/// Most characters in a query.
pub const MAX_QUERY_CHARS: usize = 200;
/// Words of a query beyond this many are ignored.
pub const MAX_TERMS: usize = 12;
/// How many of the newest matches are ranked; results past it are not
/// served (see the module documentation).
pub const SEARCH_WINDOW: i64 = 200;
/// Words of a content snippet.
const SNIPPET_WORDS: usize = 24;
/// The longest word that is always a prefix while typed: FTS5's prefix
/// indexes (2 and 3 characters) make these cheap. A longer typed word is
/// first searched whole, and as a prefix only when too few posts have it.
const CHEAP_PREFIX_CHARS: usize = 3;

/// A parsed query: lower-case words of letters and digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchTerms {
    pub(crate) words: Vec<String>,
    /// Whether the last word is still being typed (no space after it) and
    /// may match longer words.
    typing: bool,
    /// The whole query, trimmed and lower-cased: a title or name equal to it
    /// ranks first.
    exact: String,
}

impl SearchTerms {
    /// Cuts `query` into words. The last word is taken as being typed when
    /// it has at least two characters and the query does not end with a
    /// space.
    pub fn parse(query: &str) -> SearchTerms {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_lowercase)
            .take(MAX_TERMS)
            .collect();
        let typing = words.last().is_some_and(|word| word.chars().count() >= 2)
            && !query.ends_with(char::is_whitespace);
        SearchTerms {
            words,
            typing,
            exact: query.trim().to_lowercase(),
        }
    }

    /// No searchable word (only punctuation, say): nothing matches.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Whether the first search already treats the last word as a prefix.
    fn prefix_first(&self) -> bool {
        self.typing
            && self
                .words
                .last()
                .is_some_and(|word| word.chars().count() <= CHEAP_PREFIX_CHARS)
    }

    /// An FTS5 query: every word quoted (so no word is an operator), all
    /// required, the last one a prefix when `prefix`; `columns` restricts it
    /// to some columns (`{title}`).
    pub(crate) fn fts5(&self, words: &[String], prefix: bool, columns: Option<&str>) -> String {
        let body = self.rendered(words, prefix, |word| format!("\"{word}\""), "*", " ");
        match columns {
            Some(columns) => format!("{{{columns}}} : ({body})"),
            None => body,
        }
    }

    /// A `to_tsquery` text: every word quoted as a lexeme, all required.
    pub(crate) fn tsquery(&self, prefix: bool) -> String {
        self.rendered(&self.words, prefix, |word| format!("'{word}'"), ":*", " & ")
    }

    fn rendered(
        &self,
        words: &[String],
        prefix: bool,
        quote: impl Fn(&str) -> String,
        star: &str,
        join: &str,
    ) -> String {
        words
            .iter()
            .map(|word| {
                let mut term = quote(word);
                if prefix && Some(word) == self.words.last() {
                    term.push_str(star);
                }
                term
            })
            .collect::<Vec<_>>()
            .join(join)
    }

    /// Whether a word of a text is a match.
    fn matches(&self, token: &str, prefix: bool) -> bool {
        let token = token.to_lowercase();
        self.words.iter().any(|word| {
            token == *word
                || (prefix && Some(word) == self.words.last() && token.starts_with(word.as_str()))
        })
    }
}

/// Words of a query whose presence in a title or name is scored on SQLite.
const SCORED_WORDS: usize = 4;

/// What a full-text search of one table looks for; see
/// [`FullTextSearch::hits`].
struct FullTextSearch<'a> {
    /// `posts`, `replies` or `users`; its index is `<table>_fts` on SQLite
    /// and its `search_vector` column on PostgreSQL.
    table: &'static str,
    /// The alias of `table` in `visibility` and `exact`.
    alias: &'static str,
    /// FTS5 columns whose matches earn the per-word bonus (SQLite).
    bonus_columns: &'static str,
    /// `tags` earn a bonus too (posts).
    tag_bonus: bool,
    /// ` AND …` conditions on `alias` that the viewer may see.
    visibility: &'a str,
    /// A boolean expression on `alias`: an exact match, ranked first.
    exact: &'a str,
}

impl FullTextSearch<'_> {
    /// The `hits` common table expression of a full-text search (with a
    /// `recent` one before it on SQLite): `(id, exact, score)` of the
    /// [`SEARCH_WINDOW`] newest matches the viewer may see. The query's
    /// values are pushed to `args` after those `visibility` and `exact`
    /// already hold.
    fn hits(&self, backend: Backend, terms: &SearchTerms, prefix: bool, args: &mut Args) -> String {
        let FullTextSearch {
            table,
            alias,
            visibility,
            exact,
            ..
        } = self;
        match backend {
            Backend::Sqlite => {
                let index = format!("{table}_fts");
                let query = args.push(Arg::Text(terms.fts5(&terms.words, prefix, None)));
                let mut score = vec!["0".to_owned()];
                for word in terms.words.iter().take(SCORED_WORDS) {
                    let bonus = args.push(Arg::Text(terms.fts5(
                        std::slice::from_ref(word),
                        prefix,
                        Some(self.bonus_columns),
                    )));
                    score.push(format!(
                        "2 * (r.id IN (SELECT rowid FROM {index} \
                         WHERE {index} MATCH {bonus} AND rowid >= (SELECT MIN(id) FROM recent)))"
                    ));
                    if self.tag_bonus {
                        let tag = args.push(Arg::Text(format!("% {word} %")));
                        score.push(format!("((' ' || {alias}.tags || ' ') LIKE {tag})"));
                    }
                }
                format!(
                    "recent AS ( \
                       SELECT {index}.rowid AS id FROM {index} \
                       JOIN {table} {alias} ON {alias}.id = {index}.rowid \
                       WHERE {index} MATCH {query}{visibility} \
                       ORDER BY {index}.rowid DESC LIMIT {SEARCH_WINDOW}), \
                     hits AS ( \
                       SELECT r.id AS id, {exact} AS exact, \
                         CAST({} AS DOUBLE PRECISION) AS score \
                       FROM recent r JOIN {table} {alias} ON {alias}.id = r.id)",
                    score.join(" + ")
                )
            }
            Backend::Postgres => {
                let query = args.push(Arg::Text(terms.tsquery(prefix)));
                let tsquery = format!("to_tsquery('simple', {query})");
                format!(
                    "hits AS ( \
                       SELECT {alias}.id, {exact} AS exact, \
                         CAST(ts_rank({alias}.search_vector, {tsquery}) AS DOUBLE PRECISION) AS score \
                       FROM {table} {alias} WHERE {alias}.search_vector @@ {tsquery}{visibility} \
                       ORDER BY {alias}.id DESC LIMIT {SEARCH_WINDOW})"
                )
            }
        }
    }
}

/// One page of search results; there is no total (see the module
/// documentation), only whether another page follows.
#[derive(Debug, Clone)]
pub struct SearchPage<T> {
    pub hits: Vec<T>,
    pub has_more: bool,
}

/// A matching post.
#[derive(Debug, Clone)]
pub struct PostHit {
    pub post: Post,
    /// Higher is more relevant; comparable within one query only.
    pub score: f64,
    /// The title, HTML-escaped, matches in `<mark>`.
    pub title_html: String,
    /// About two dozen words of the content from the first match on,
    /// HTML-escaped, matches in `<mark>`.
    pub snippet_html: String,
}

/// A matching reply.
#[derive(Debug, Clone)]
pub struct ReplyHit {
    pub reply: Reply,
    pub score: f64,
    /// About two dozen words of the content from the first match on,
    /// HTML-escaped, matches in `<mark>`.
    pub snippet_html: String,
}

/// A matching user.
#[derive(Debug, Clone)]
pub struct UserHit {
    pub user: User,
    pub score: f64,
    pub username_html: String,
    pub name_html: Option<String>,
    /// An excerpt of the bio, HTML-escaped, matches in `<mark>`.
    pub bio_html: String,
}

#[derive(FromRow)]
struct UserHitRow {
    #[sqlx(flatten)]
    user: UserRow,
    score: f64,
    candidates: i64,
}

/// What one rebuild re-indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RebuildSummary {
    pub posts: i64,
    pub replies: i64,
    pub users: i64,
}

/// HTML-escapes `text` into `html`.
fn escape_into(html: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => html.push_str("&amp;"),
            '<' => html.push_str("&lt;"),
            '>' => html.push_str("&gt;"),
            '"' => html.push_str("&quot;"),
            '\'' => html.push_str("&#39;"),
            other => html.push(other),
        }
    }
}

/// Byte ranges of the words of `text` (runs of letters and digits, as the
/// query is cut).
fn word_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut start = None;
    for (index, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(index),
            (false, Some(from)) => {
                ranges.push((from, index));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(from) = start {
        ranges.push((from, text.len()));
    }
    ranges
}

/// `text[from..to]` HTML-escaped with the matching words in `<mark>`.
fn marked(
    text: &str,
    words: &[(usize, usize)],
    from: usize,
    to: usize,
    terms: &SearchTerms,
    prefix: bool,
) -> String {
    let mut html = String::with_capacity(to - from + 16);
    let mut at = from;
    for &(start, end) in words
        .iter()
        .filter(|(start, end)| *start >= from && *end <= to)
    {
        if terms.matches(&text[start..end], prefix) {
            escape_into(&mut html, &text[at..start]);
            html.push_str("<mark>");
            escape_into(&mut html, &text[start..end]);
            html.push_str("</mark>");
            at = end;
        }
    }
    escape_into(&mut html, &text[at..to]);
    html
}

/// The whole of `text`, escaped and marked.
fn highlight(text: &str, terms: &SearchTerms, prefix: bool) -> String {
    marked(text, &word_ranges(text), 0, text.len(), terms, prefix)
}

/// About [`SNIPPET_WORDS`] words of `text` starting a little before the
/// first match (or from the start when the match was elsewhere), with `…`
/// where it is cut.
fn snippet(text: &str, terms: &SearchTerms, prefix: bool) -> String {
    let words = word_ranges(text);
    if words.len() <= SNIPPET_WORDS {
        return marked(text, &words, 0, text.len(), terms, prefix);
    }
    let first = words
        .iter()
        .position(|&(start, end)| terms.matches(&text[start..end], prefix))
        .unwrap_or(0);
    let start = first.saturating_sub(3).min(words.len() - SNIPPET_WORDS);
    let end = start + SNIPPET_WORDS;
    let from = if start == 0 { 0 } else { words[start].0 };
    let to = if end == words.len() {
        text.len()
    } else {
        words[end - 1].1
    };
    let mut html = String::new();
    if from > 0 {
        html.push('…');
    }
    html.push_str(&marked(text, &words, from, to, terms, prefix));
    if to < text.len() {
        html.push('…');
    }
    html
}

/// The page inside the window, or `None` when it starts past the window.
fn window_page(page: Page) -> Option<Page> {
    if page.offset >= SEARCH_WINDOW || page.limit <= 0 {
        return None;
    }
    Some(Page {
        limit: page.limit.min(SEARCH_WINDOW - page.offset),
        offset: page.offset,
    })
}

/// One run of a search: the statement's candidates (how many matches the
/// window held) and the page (one row more than asked).
struct Run<T> {
    candidates: i64,
    rows: Vec<T>,
}

impl Database {
    /// Posts `viewer` may see that match `terms`, most relevant first.
    pub async fn search_posts(
        &self,
        terms: &SearchTerms,
        viewer: Viewer,
        page: Page,
    ) -> Result<SearchPage<PostHit>, DomainError> {
        let Some(page) = window_page(page).filter(|_| !terms.is_empty()) else {
            return Ok(empty_page());
        };
        let mut prefix = terms.prefix_first();
        let mut run = self.search_posts_once(terms, viewer, page, prefix).await?;
        if terms.typing && !prefix && run.candidates < SEARCH_WINDOW {
            prefix = true;
            run = self.search_posts_once(terms, viewer, page, prefix).await?;
        }
        let has_more = run.rows.len() as i64 > page.limit;
        let hits = run
            .rows
            .into_iter()
            .take(usize::try_from(page.limit).unwrap_or(usize::MAX))
            .map(|(post, score)| PostHit {
                title_html: highlight(&post.title, terms, prefix),
                snippet_html: snippet(&post.content, terms, prefix),
                post,
                score,
            })
            .collect();
        Ok(SearchPage { hits, has_more })
    }

    async fn search_posts_once(
        &self,
        terms: &SearchTerms,
        viewer: Viewer,
        page: Page,
        prefix: bool,
    ) -> Result<Run<(Post, f64)>, DomainError> {
        let (sql, args) = self.search_posts_sql(terms, viewer, page, prefix);
        let (candidates, json): (i64, String) = bind_all(sqlx::query_as(&sql), args)
            .fetch_one(&mut *self.lease().await?)
            .await?;
        let rows = parse_json_page::<(PostJson, f64)>(&json)?
            .into_iter()
            .map(|(post, score)| Ok((Post::try_from(post)?, score)))
            .collect::<Result<_, DomainError>>()?;
        Ok(Run { candidates, rows })
    }

    /// The statement of one run of [`Database::search_posts`]: candidates
    /// and the page as JSON (see [`crate::dialect::Dialect::json_rows`]).
    fn search_posts_sql(
        &self,
        terms: &SearchTerms,
        viewer: Viewer,
        page: Page,
        prefix: bool,
    ) -> (String, Vec<Arg>) {
        let backend = self.backend();
        let mut args = Args::default();
        let visibility = match viewer {
            Viewer::Anonymous => format!(" AND {PUBLIC_SQL}"),
            Viewer::Member(id) => {
                format!(
                    " AND ({PUBLIC_SQL} OR p.author_id = {})",
                    args.push(Arg::Int(id))
                )
            }
            Viewer::Moderator(_) => String::new(),
        };
        let exact = args.push(Arg::Text(terms.exact.clone()));
        let exact = format!("lower(p.title) = {exact}");
        let hits = FullTextSearch {
            table: "posts",
            alias: "p",
            bonus_columns: "title",
            tag_bonus: true,
            visibility: &visibility,
            exact: &exact,
        }
        .hits(backend, terms, prefix, &mut args);
        let limit = args.push(Arg::Int(page.limit + 1));
        let offset = args.push(Arg::Int(page.offset));
        let dialect = self.dialect();
        let element = dialect.json_array(&format!("{}, page.score", post_json(backend, "p")));
        let rows = dialect.json_rows(
            &element,
            "page.exact DESC, page.score DESC, page.id DESC",
            "page JOIN posts p ON p.id = page.id",
        );
        let sql = format!(
            "WITH {hits}, \
             page AS (SELECT id, exact, score FROM hits \
               ORDER BY exact DESC, score DESC, id DESC LIMIT {limit} OFFSET {offset}) \
             SELECT (SELECT COUNT(*) FROM hits) AS candidates, {rows} AS page"
        );
        (sql, args.into_vec())
    }

    /// Replies `viewer` may see (visible ones, and their own held ones,
    /// on posts they may see; moderators every reply but placeholders) that
    /// match `terms`, most relevant first.
    pub async fn search_replies(
        &self,
        terms: &SearchTerms,
        viewer: Viewer,
        page: Page,
    ) -> Result<SearchPage<ReplyHit>, DomainError> {
        let Some(page) = window_page(page).filter(|_| !terms.is_empty()) else {
            return Ok(empty_page());
        };
        let mut prefix = terms.prefix_first();
        let mut run = self
            .search_replies_once(terms, viewer, page, prefix)
            .await?;
        if terms.typing && !prefix && run.candidates < SEARCH_WINDOW {
            prefix = true;
            run = self
                .search_replies_once(terms, viewer, page, prefix)
                .await?;
        }
        let has_more = run.rows.len() as i64 > page.limit;
        let hits = run
            .rows
            .into_iter()
            .take(usize::try_from(page.limit).unwrap_or(usize::MAX))
            .map(|(reply, score)| ReplyHit {
                snippet_html: snippet(&reply.content, terms, prefix),
                reply,
                score,
            })
            .collect();
        Ok(SearchPage { hits, has_more })
    }

    async fn search_replies_once(
        &self,
        terms: &SearchTerms,
        viewer: Viewer,
        page: Page,
        prefix: bool,
    ) -> Result<Run<(Reply, f64)>, DomainError> {
        let (sql, args) = self.search_replies_sql(terms, viewer, page, prefix);
        let (candidates, json): (i64, String) = bind_all(sqlx::query_as(&sql), args)
            .fetch_one(&mut *self.lease().await?)
            .await?;
        let rows = parse_json_page::<(ReplyJson, f64)>(&json)?
            .into_iter()
            .map(|(reply, score)| Ok((Reply::try_from(ReplyRow::from(reply))?, score)))
            .collect::<Result<_, DomainError>>()?;
        Ok(Run { candidates, rows })
    }

    /// The statement of one run of [`Database::search_replies`], as
    /// [`Database::search_posts_sql`] for posts. A reply is found only
    /// where its thread could be read: its post is one the viewer sees.
    fn search_replies_sql(
        &self,
        terms: &SearchTerms,
        viewer: Viewer,
        page: Page,
        prefix: bool,
    ) -> (String, Vec<Arg>) {
        let backend = self.backend();
        let mut args = Args::default();
        let visibility = match viewer {
            Viewer::Anonymous => format!(
                " AND rp.status IN ('published', 'flagged') AND EXISTS (SELECT 1 FROM posts p \
                 WHERE p.id = rp.post_id AND {PUBLIC_SQL})"
            ),
            Viewer::Member(id) => {
                let me = args.push(Arg::Int(id));
                format!(
                    " AND (rp.status IN ('published', 'flagged') \
                     OR (rp.status IN ('pending', 'hidden') AND rp.author_id = {me})) \
                     AND EXISTS (SELECT 1 FROM posts p \
                     WHERE p.id = rp.post_id AND ({PUBLIC_SQL} OR p.author_id = {me}))"
                )
            }
            Viewer::Moderator(_) => " AND rp.status <> 'deleted'".to_owned(),
        };
        let exact = args.push(Arg::Text(terms.exact.clone()));
        let exact = format!("lower(rp.content) = {exact}");
        let hits = FullTextSearch {
            table: "replies",
            alias: "rp",
            bonus_columns: "content",
            tag_bonus: false,
            visibility: &visibility,
            exact: &exact,
        }
        .hits(backend, terms, prefix, &mut args);
        let limit = args.push(Arg::Int(page.limit + 1));
        let offset = args.push(Arg::Int(page.offset));
        let dialect = self.dialect();
        let element = dialect.json_array(&format!(
            "{}, page.score",
            dialect.json_array(REPLY_COLUMNS)
        ));
        let rows = dialect.json_rows(
            &element,
            "page.exact DESC, page.score DESC, page.id DESC",
            "page JOIN replies r ON r.id = page.id LEFT JOIN users u ON u.id = r.author_id",
        );
        let sql = format!(
            "WITH {hits}, \
             page AS (SELECT id, exact, score FROM hits \
               ORDER BY exact DESC, score DESC, id DESC LIMIT {limit} OFFSET {offset}) \
             SELECT (SELECT COUNT(*) FROM hits) AS candidates, {rows} AS page"
        );
        (sql, args.into_vec())
    }

    /// Users that match `terms`: active users with public profiles, or
    /// everyone when `everyone` (an admin is asking). Emails are never
    /// searched.
    pub async fn search_users(
        &self,
        terms: &SearchTerms,
        everyone: bool,
        page: Page,
    ) -> Result<SearchPage<UserHit>, DomainError> {
        let Some(page) = window_page(page).filter(|_| !terms.is_empty()) else {
            return Ok(empty_page());
        };
        let mut prefix = terms.prefix_first();
        let mut run = self
            .search_users_once(terms, everyone, page, prefix)
            .await?;
        if terms.typing && !prefix && run.candidates < SEARCH_WINDOW {
            prefix = true;
            run = self
                .search_users_once(terms, everyone, page, prefix)
                .await?;
        }
        let has_more = run.rows.len() as i64 > page.limit;
        let hits = run
            .rows
            .into_iter()
            .take(usize::try_from(page.limit).unwrap_or(usize::MAX))
            .map(|(user, score)| UserHit {
                username_html: highlight(&user.row.username, terms, prefix),
                name_html: user
                    .row
                    .name
                    .as_deref()
                    .map(|name| highlight(name, terms, prefix)),
                bio_html: snippet(&user.row.bio, terms, prefix),
                user,
                score,
            })
            .collect();
        Ok(SearchPage { hits, has_more })
    }

    async fn search_users_once(
        &self,
        terms: &SearchTerms,
        everyone: bool,
        page: Page,
        prefix: bool,
    ) -> Result<Run<(User, f64)>, DomainError> {
        let (sql, args) = self.search_users_sql(terms, everyone, page, prefix);
        let found: Vec<UserHitRow> = bind_all(sqlx::query_as(&sql), args)
            .fetch_all(&mut *self.lease().await?)
            .await?;
        let candidates = found.first().map_or(0, |row| row.candidates);
        let rows = found
            .into_iter()
            .map(|row| Ok((User::try_from(row.user)?, row.score)))
            .collect::<Result<_, DomainError>>()?;
        Ok(Run { candidates, rows })
    }

    fn search_users_sql(
        &self,
        terms: &SearchTerms,
        everyone: bool,
        page: Page,
        prefix: bool,
    ) -> (String, Vec<Arg>) {
        let mut args = Args::default();
        let visibility = if everyone {
            ""
        } else {
            " AND u.status = 'active' AND u.profile_public = TRUE"
        };
        let exact = args.push(Arg::Text(terms.exact.clone()));
        let exact_sql =
            format!("(lower(u.username) = {exact} OR lower(coalesce(u.name, '')) = {exact})");
        let hits = FullTextSearch {
            table: "users",
            alias: "u",
            bonus_columns: "username name",
            tag_bonus: false,
            visibility,
            exact: &exact_sql,
        }
        .hits(self.backend(), terms, prefix, &mut args);
        let limit = args.push(Arg::Int(page.limit + 1));
        let offset = args.push(Arg::Int(page.offset));
        let columns = USER_COLUMNS
            .split(", ")
            .map(|column| format!("u.{column}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "WITH {hits}, \
             page AS (SELECT id, exact, score FROM hits \
               ORDER BY exact DESC, score DESC, id DESC LIMIT {limit} OFFSET {offset}) \
             SELECT {columns}, page.score AS score, (SELECT COUNT(*) FROM hits) AS candidates \
             FROM page JOIN users u ON u.id = page.id \
             ORDER BY page.exact DESC, page.score DESC, page.id DESC"
        );
        (sql, args.into_vec())
    }

    /// The query plans of both searches for `terms` as `viewer` sees them
    /// (whole words, then the last word as a prefix), for the tests that
    /// check they read the full-text indexes.
    #[cfg(feature = "testing")]
    pub async fn explain_search(
        &self,
        terms: &SearchTerms,
        viewer: Viewer,
    ) -> Result<Vec<String>, DomainError> {
        let page = Page {
            limit: 20,
            offset: 0,
        };
        let mut plan = Vec::new();
        for prefix in [false, true] {
            let (posts_sql, posts_args) = self.search_posts_sql(terms, viewer, page, prefix);
            plan.extend(self.explain(&posts_sql, posts_args).await?);
            let (users_sql, users_args) =
                self.search_users_sql(terms, matches!(viewer, Viewer::Moderator(_)), page, prefix);
            plan.extend(self.explain(&users_sql, users_args).await?);
            let (replies_sql, replies_args) = self.search_replies_sql(terms, viewer, page, prefix);
            plan.extend(self.explain(&replies_sql, replies_args).await?);
        }
        Ok(plan)
    }

    /// Rebuilds the full-text indexes from the rows, as one unit of work
    /// (see [`rebuild`]).
    pub async fn rebuild_search(&self) -> Result<RebuildSummary, DomainError> {
        self.write(|tx| Box::pin(rebuild(tx))).await
    }
}

/// Rebuilds the full-text indexes from the rows in `tx` (the admin
/// surface's `rebuild_search` maintenance action, which records its audit
/// entry in the same unit of work): FTS5 `rebuild` (which also leaves each
/// index in one segment, the fastest to read) on SQLite, `REINDEX` of the
/// GIN indexes on PostgreSQL (whose vectors are generated columns and
/// cannot drift). Answers how many posts, replies and users are indexed.
pub async fn rebuild(tx: &mut Tx<'_>) -> Result<RebuildSummary, DomainError> {
    for statement in Dialect::of(tx).rebuild_full_text() {
        sqlx::query(statement).execute(&mut **tx).await?;
    }
    // The `reported` row counts posts already counted by their state.
    let (posts, replies, users): (i64, i64, i64) = sqlx::query_as(&format!(
        "SELECT (SELECT CAST(COALESCE(SUM(total), 0) AS BIGINT) FROM post_counts \
         WHERE scope <> '{REPORTED_SCOPE}'), (SELECT COUNT(*) FROM replies), \
         (SELECT COUNT(*) FROM users)"
    ))
    .fetch_one(&mut **tx)
    .await?;
    Ok(RebuildSummary {
        posts,
        replies,
        users,
    })
}

fn empty_page<T>() -> SearchPage<T> {
    SearchPage {
        hits: Vec::new(),
        has_more: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_become_quoted_words_with_a_typed_prefix() {
        let terms = SearchTerms::parse("Rust async pat");
        assert_eq!(
            terms.fts5(&terms.words, true, None),
            "\"rust\" \"async\" \"pat\"*"
        );
        assert_eq!(terms.tsquery(true), "'rust' & 'async' & 'pat':*");
        assert_eq!(
            terms.fts5(&terms.words[..1], false, Some("title")),
            "{title} : (\"rust\")"
        );
        assert!(
            terms.prefix_first(),
            "a three-letter word is a cheap prefix"
        );
        assert!(!SearchTerms::parse("rust asyn").prefix_first());
        let finished = SearchTerms::parse("rust async ");
        assert!(!finished.typing);
        assert_eq!(
            finished.fts5(&finished.words, false, None),
            "\"rust\" \"async\""
        );
    }

    #[test]
    fn operators_and_quotes_are_only_separators() {
        let terms = SearchTerms::parse("\" OR 1=1 -- NEAR(a b) 'x':* & !y");
        assert_eq!(
            terms.fts5(&terms.words, false, None),
            "\"or\" \"1\" \"1\" \"near\" \"a\" \"b\" \"x\" \"y\""
        );
        assert!(SearchTerms::parse("!!! ''' ---").is_empty());
    }

    #[test]
    fn unicode_words_are_kept_whole() {
        let terms = SearchTerms::parse("Café 日本語");
        assert_eq!(terms.tsquery(true), "'café' & '日本語':*");
    }

    #[test]
    fn highlights_escape_the_text_and_mark_whole_words() {
        let terms = SearchTerms::parse("rust gard");
        assert_eq!(
            highlight("<b>Rust</b> & trust, Gardening", &terms, true),
            "&lt;b&gt;<mark>Rust</mark>&lt;/b&gt; &amp; trust, <mark>Gardening</mark>"
        );
        assert_eq!(
            highlight("Gardening", &terms, false),
            "Gardening",
            "no prefix, no partial words"
        );
    }

    #[test]
    fn snippets_start_near_the_first_match() {
        let text = (1..=60)
            .map(|n| {
                if n == 40 {
                    "needle".to_owned()
                } else {
                    format!("w{n}")
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let terms = SearchTerms::parse("needle ");
        let cut = snippet(&text, &terms, false);
        assert!(
            cut.starts_with("…w37 w38 w39 <mark>needle</mark> w41"),
            "{cut}"
        );
        assert!(cut.ends_with("w60"), "{cut}");
        let start = snippet(&text, &SearchTerms::parse("absent "), false);
        assert!(
            start.starts_with("w1 w2") && start.ends_with("w24…"),
            "{start}"
        );
    }

    #[test]
    fn pages_past_the_window_are_empty() {
        assert_eq!(
            window_page(Page {
                limit: 20,
                offset: SEARCH_WINDOW
            }),
            None
        );
        assert_eq!(
            window_page(Page {
                limit: 50,
                offset: SEARCH_WINDOW - 10
            }),
            Some(Page {
                limit: 10,
                offset: SEARCH_WINDOW - 10
            })
        );
    }
}
