//! Full-text search over posts and users, with relevance ranking, prefix
//! matching of the last word (as-you-type) and highlighted snippets.
//!
//! SQLite uses FTS5 tables kept in step by triggers; PostgreSQL uses
//! generated `tsvector` columns with GIN indexes. The text a user typed is
//! never handed to either query parser: it is cut into words of letters and
//! digits, and each word travels quoted.
//!
//! Ranking is bounded: relevance (bm25 on SQLite, `ts_rank` on PostgreSQL,
//! title weighted highest, an exact title match first) orders the newest
//! [`SEARCH_WINDOW`] matches the viewer may see. A rare word is ranked over
//! all its matches; a word in a large share of a million posts costs the
//! same as a rare one instead of scoring every match on every keystroke.

use sqlx::FromRow;

use crate::listing::{Arg, Filters, Page, bind_all};
use crate::posts::{POST_COLUMNS, PUBLIC_SQL, Post, PostRow, Viewer};
use crate::users::{USER_COLUMNS, User, UserRow};
use crate::{Backend, Database, DomainError};

/// Most characters in a query.
pub const MAX_QUERY_CHARS: usize = 200;
/// Words of a query beyond this many are ignored.
pub const MAX_TERMS: usize = 12;
/// How many of the newest matches are ranked; results past it are not
/// served (see the module documentation).
pub const SEARCH_WINDOW: i64 = 1000;

/// Marks around matches as the databases return them: private-use
/// characters, turned into `<mark>` after the text is HTML-escaped.
const MARK_START: char = '\u{E000}';
const MARK_END: char = '\u{E001}';

/// A parsed query: lower-case words of letters and digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchTerms {
    words: Vec<String>,
    /// Whether the last word also matches longer words (it is being typed).
    prefix_last: bool,
    /// The whole query, trimmed and lower-cased: a title or name equal to it
    /// ranks first.
    exact: String,
}

impl SearchTerms {
    /// Cuts `query` into words. The last word matches as a prefix when it
    /// has at least two characters and the query does not end with a space
    /// (the person is still typing it).
    pub fn parse(query: &str) -> SearchTerms {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_lowercase)
            .take(MAX_TERMS)
            .collect();
        let prefix_last = words.last().is_some_and(|word| word.chars().count() >= 2)
            && !query.ends_with(char::is_whitespace);
        SearchTerms {
            words,
            prefix_last,
            exact: query.trim().to_lowercase(),
        }
    }

    /// No searchable word (only punctuation, say): nothing matches.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// An FTS5 query: every word quoted (so no word is an operator), all
    /// required, the last one a prefix when typed.
    fn fts5(&self) -> String {
        self.rendered(|word| format!("\"{word}\""), "*", " ")
    }

    /// A `to_tsquery` text: every word quoted as a lexeme, all required.
    fn tsquery(&self) -> String {
        self.rendered(|word| format!("'{word}'"), ":*", " & ")
    }

    fn rendered(&self, quote: impl Fn(&str) -> String, prefix: &str, join: &str) -> String {
        let last = self.words.len().saturating_sub(1);
        self.words
            .iter()
            .enumerate()
            .map(|(index, word)| {
                let mut term = quote(word);
                if index == last && self.prefix_last {
                    term.push_str(prefix);
                }
                term
            })
            .collect::<Vec<_>>()
            .join(join)
    }
}

/// One page of search results; there is no total (it would cost as much as
/// ranking every match), only whether another page follows.
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
    /// A short excerpt of the content around the matches, HTML-escaped,
    /// matches in `<mark>`.
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
struct PostHitRow {
    #[sqlx(flatten)]
    post: PostRow,
    score: f64,
    title_marked: Option<String>,
    snippet_marked: Option<String>,
}

#[derive(FromRow)]
struct UserHitRow {
    #[sqlx(flatten)]
    user: UserRow,
    score: f64,
    username_marked: Option<String>,
    name_marked: Option<String>,
    bio_marked: Option<String>,
}

/// What one rebuild re-indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RebuildSummary {
    pub posts: i64,
    pub users: i64,
}

/// HTML-escapes `text` and turns the match marks into balanced `<mark>`
/// elements (marks typed by users themselves cannot unbalance them).
fn marked_html(text: &str) -> String {
    let mut html = String::with_capacity(text.len() + 16);
    let mut open = false;
    for c in text.chars() {
        match c {
            MARK_START if !open => {
                html.push_str("<mark>");
                open = true;
            }
            MARK_END if open => {
                html.push_str("</mark>");
                open = false;
            }
            MARK_START | MARK_END => {}
            '&' => html.push_str("&amp;"),
            '<' => html.push_str("&lt;"),
            '>' => html.push_str("&gt;"),
            '"' => html.push_str("&quot;"),
            '\'' => html.push_str("&#39;"),
            other => html.push(other),
        }
    }
    if open {
        html.push_str("</mark>");
    }
    html
}

/// `ts_headline` options: whole field, or a snippet of about `words` words.
fn headline_options(words: Option<u32>) -> String {
    let marks = format!("StartSel={MARK_START}, StopSel={MARK_END}");
    match words {
        None => format!("{marks}, HighlightAll=true"),
        Some(words) => format!(
            "{marks}, MaxWords={words}, MinWords={}, ShortWord=1, MaxFragments=1, \
             FragmentDelimiter=\" … \"",
            words / 2
        ),
    }
}

/// The page inside the window, or `None` when it starts past the window.
fn window_page(page: Page) -> Option<Page> {
    if page.offset >= SEARCH_WINDOW || page.limit == 0 {
        return None;
    }
    Some(Page {
        limit: page.limit.min(SEARCH_WINDOW - page.offset),
        offset: page.offset,
    })
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
            return Ok(SearchPage {
                hits: Vec::new(),
                has_more: false,
            });
        };
        let (sql, args) = self.search_posts_sql(terms, viewer, page);
        let mut rows: Vec<PostHitRow> = bind_all(sqlx::query_as(&sql), args)
            .fetch_all(self.pool())
            .await?;
        let has_more = rows.len() as i64 > page.limit;
        rows.truncate(usize::try_from(page.limit).unwrap_or(usize::MAX));
        let hits = rows
            .into_iter()
            .map(|row| {
                Ok(PostHit {
                    post: Post::try_from(row.post)?,
                    score: row.score,
                    title_html: marked_html(row.title_marked.as_deref().unwrap_or_default()),
                    snippet_html: marked_html(row.snippet_marked.as_deref().unwrap_or_default()),
                })
            })
            .collect::<Result<_, DomainError>>()?;
        Ok(SearchPage { hits, has_more })
    }

    /// The statement of [`Database::search_posts`] for a page (one row more
    /// than asked, to tell whether another page follows).
    fn search_posts_sql(
        &self,
        terms: &SearchTerms,
        viewer: Viewer,
        page: Page,
    ) -> (String, Vec<Arg>) {
        let mut filters = Filters::default();
        let visibility = match viewer {
            Viewer::Anonymous => format!(" AND {PUBLIC_SQL}"),
            Viewer::Member(id) => {
                let id = filters.arg(Arg::Int(id));
                format!(" AND ({PUBLIC_SQL} OR p.author_id = {id})")
            }
            Viewer::Moderator(_) => String::new(),
        };
        let exact = filters.arg(Arg::Text(terms.exact.clone()));
        let limit = filters.arg(Arg::Int(page.limit + 1));
        let offset = filters.arg(Arg::Int(page.offset));
        let sql = match self.backend() {
            Backend::Sqlite => {
                let query = filters.arg(Arg::Text(terms.fts5()));
                let start = filters.arg(Arg::Text(MARK_START.to_string()));
                let end = filters.arg(Arg::Text(MARK_END.to_string()));
                format!(
                    "WITH hits AS ( \
                       SELECT posts_fts.rowid AS id, bm25(posts_fts, 10.0, 1.0, 4.0) AS rank \
                       FROM posts_fts JOIN posts p ON p.id = posts_fts.rowid \
                       WHERE posts_fts MATCH {query}{visibility} \
                       ORDER BY posts_fts.rowid DESC LIMIT {SEARCH_WINDOW}), \
                     page AS ( \
                       SELECT h.id, h.rank, lower(p.title) = {exact} AS exact \
                       FROM hits h JOIN posts p ON p.id = h.id \
                       ORDER BY exact DESC, h.rank, h.id DESC LIMIT {limit} OFFSET {offset}) \
                     SELECT {POST_COLUMNS}, -page.rank AS score, \
                       highlight(posts_fts, 0, {start}, {end}) AS title_marked, \
                       snippet(posts_fts, 1, {start}, {end}, '…', 24) AS snippet_marked \
                     FROM page JOIN posts p ON p.id = page.id \
                     JOIN posts_fts ON posts_fts.rowid = page.id \
                     WHERE posts_fts MATCH {query} \
                     ORDER BY page.exact DESC, page.rank, page.id DESC"
                )
            }
            Backend::Postgres => {
                let query = filters.arg(Arg::Text(terms.tsquery()));
                let whole = filters.arg(Arg::Text(headline_options(None)));
                let snippet = filters.arg(Arg::Text(headline_options(Some(24))));
                let tsquery = format!("to_tsquery('simple', {query})");
                format!(
                    "WITH hits AS ( \
                       SELECT p.id, ts_rank(p.search_vector, {tsquery})::float8 AS score, \
                         lower(p.title) = {exact} AS exact \
                       FROM posts p \
                       WHERE p.search_vector @@ {tsquery}{visibility} \
                       ORDER BY p.id DESC LIMIT {SEARCH_WINDOW}), \
                     page AS ( \
                       SELECT id, score, exact FROM hits \
                       ORDER BY exact DESC, score DESC, id DESC LIMIT {limit} OFFSET {offset}) \
                     SELECT {POST_COLUMNS}, page.score AS score, \
                       ts_headline('simple', p.title, {tsquery}, {whole}) AS title_marked, \
                       ts_headline('simple', p.content, {tsquery}, {snippet}) AS snippet_marked \
                     FROM page JOIN posts p ON p.id = page.id \
                     ORDER BY page.exact DESC, page.score DESC, page.id DESC"
                )
            }
        };
        (sql, filters.args())
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
            return Ok(SearchPage {
                hits: Vec::new(),
                has_more: false,
            });
        };
        let (sql, args) = self.search_users_sql(terms, everyone, page);
        let mut rows: Vec<UserHitRow> = bind_all(sqlx::query_as(&sql), args)
            .fetch_all(self.pool())
            .await?;
        let has_more = rows.len() as i64 > page.limit;
        rows.truncate(usize::try_from(page.limit).unwrap_or(usize::MAX));
        let hits = rows
            .into_iter()
            .map(|row| {
                Ok(UserHit {
                    user: User::try_from(row.user)?,
                    score: row.score,
                    username_html: marked_html(row.username_marked.as_deref().unwrap_or_default()),
                    name_html: row.name_marked.as_deref().map(marked_html),
                    bio_html: marked_html(row.bio_marked.as_deref().unwrap_or_default()),
                })
            })
            .collect::<Result<_, DomainError>>()?;
        Ok(SearchPage { hits, has_more })
    }

    fn search_users_sql(
        &self,
        terms: &SearchTerms,
        everyone: bool,
        page: Page,
    ) -> (String, Vec<Arg>) {
        let mut filters = Filters::default();
        let visibility = if everyone {
            ""
        } else {
            " AND u.status = 'active' AND u.profile_public = TRUE"
        };
        let exact = filters.arg(Arg::Text(terms.exact.clone()));
        let limit = filters.arg(Arg::Int(page.limit + 1));
        let offset = filters.arg(Arg::Int(page.offset));
        let columns = USER_COLUMNS
            .split(", ")
            .map(|column| format!("u.{column}"))
            .collect::<Vec<_>>()
            .join(", ");
        let exact_sql =
            format!("(lower(u.username) = {exact} OR lower(coalesce(u.name, '')) = {exact})");
        let sql = match self.backend() {
            Backend::Sqlite => {
                let query = filters.arg(Arg::Text(terms.fts5()));
                let start = filters.arg(Arg::Text(MARK_START.to_string()));
                let end = filters.arg(Arg::Text(MARK_END.to_string()));
                format!(
                    "WITH hits AS ( \
                       SELECT users_fts.rowid AS id, bm25(users_fts, 10.0, 10.0, 1.0) AS rank \
                       FROM users_fts JOIN users u ON u.id = users_fts.rowid \
                       WHERE users_fts MATCH {query}{visibility} \
                       ORDER BY users_fts.rowid DESC LIMIT {SEARCH_WINDOW}), \
                     page AS ( \
                       SELECT h.id, h.rank, {exact_sql} AS exact \
                       FROM hits h JOIN users u ON u.id = h.id \
                       ORDER BY exact DESC, h.rank, h.id DESC LIMIT {limit} OFFSET {offset}) \
                     SELECT {columns}, -page.rank AS score, \
                       highlight(users_fts, 0, {start}, {end}) AS username_marked, \
                       highlight(users_fts, 1, {start}, {end}) AS name_marked, \
                       snippet(users_fts, 2, {start}, {end}, '…', 16) AS bio_marked \
                     FROM page JOIN users u ON u.id = page.id \
                     JOIN users_fts ON users_fts.rowid = page.id \
                     WHERE users_fts MATCH {query} \
                     ORDER BY page.exact DESC, page.rank, page.id DESC"
                )
            }
            Backend::Postgres => {
                let query = filters.arg(Arg::Text(terms.tsquery()));
                let whole = filters.arg(Arg::Text(headline_options(None)));
                let snippet = filters.arg(Arg::Text(headline_options(Some(16))));
                let tsquery = format!("to_tsquery('simple', {query})");
                format!(
                    "WITH hits AS ( \
                       SELECT u.id, ts_rank(u.search_vector, {tsquery})::float8 AS score, \
                         {exact_sql} AS exact \
                       FROM users u \
                       WHERE u.search_vector @@ {tsquery}{visibility} \
                       ORDER BY u.id DESC LIMIT {SEARCH_WINDOW}), \
                     page AS ( \
                       SELECT id, score, exact FROM hits \
                       ORDER BY exact DESC, score DESC, id DESC LIMIT {limit} OFFSET {offset}) \
                     SELECT {columns}, page.score AS score, \
                       ts_headline('simple', u.username, {tsquery}, {whole}) AS username_marked, \
                       CASE WHEN u.name IS NULL THEN NULL \
                         ELSE ts_headline('simple', u.name, {tsquery}, {whole}) END AS name_marked, \
                       ts_headline('simple', u.bio, {tsquery}, {snippet}) AS bio_marked \
                     FROM page JOIN users u ON u.id = page.id \
                     ORDER BY page.exact DESC, page.score DESC, page.id DESC"
                )
            }
        };
        (sql, filters.args())
    }

    /// The query plans of both searches for `terms` as `viewer` sees them,
    /// for tests and benchmarks that check they read the full-text indexes.
    pub async fn explain_search(
        &self,
        terms: &SearchTerms,
        viewer: Viewer,
    ) -> Result<Vec<String>, DomainError> {
        let page = Page {
            limit: 20,
            offset: 0,
        };
        let (posts_sql, posts_args) = self.search_posts_sql(terms, viewer, page);
        let mut plan = self.explain(&posts_sql, posts_args).await?;
        let (users_sql, users_args) =
            self.search_users_sql(terms, matches!(viewer, Viewer::Moderator(_)), page);
        plan.extend(self.explain(&users_sql, users_args).await?);
        Ok(plan)
    }

    /// Rebuilds the full-text indexes from the rows (the admin surface's
    /// `rebuild_search` maintenance action): FTS5 `rebuild` on SQLite,
    /// `REINDEX` of the GIN indexes on PostgreSQL (whose vectors are
    /// generated columns and cannot drift).
    pub async fn rebuild_search(&self) -> Result<RebuildSummary, DomainError> {
        let statements: &[&str] = match self.backend() {
            Backend::Sqlite => &[
                "INSERT INTO posts_fts (posts_fts) VALUES ('rebuild')",
                "INSERT INTO users_fts (users_fts) VALUES ('rebuild')",
            ],
            Backend::Postgres => &["REINDEX INDEX posts_search", "REINDEX INDEX users_search"],
        };
        for statement in statements {
            sqlx::query(statement).execute(self.pool()).await?;
        }
        let (posts, users): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT CAST(COALESCE(SUM(total), 0) AS BIGINT) FROM post_counts), \
             (SELECT COUNT(*) FROM users)",
        )
        .fetch_one(self.pool())
        .await?;
        Ok(RebuildSummary { posts, users })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_become_quoted_words_with_a_typed_prefix() {
        let terms = SearchTerms::parse("Rust async pat");
        assert_eq!(terms.fts5(), "\"rust\" \"async\" \"pat\"*");
        assert_eq!(terms.tsquery(), "'rust' & 'async' & 'pat':*");
        let finished = SearchTerms::parse("rust async ");
        assert_eq!(finished.fts5(), "\"rust\" \"async\"");
    }

    #[test]
    fn operators_and_quotes_are_only_separators() {
        let terms = SearchTerms::parse("\" OR 1=1 -- NEAR(a b) 'x':* & !y");
        assert_eq!(
            terms.fts5(),
            "\"or\" \"1\" \"1\" \"near\" \"a\" \"b\" \"x\" \"y\""
        );
        assert!(SearchTerms::parse("!!! ''' ---").is_empty());
    }

    #[test]
    fn unicode_words_are_kept_whole() {
        let terms = SearchTerms::parse("Café 日本語");
        assert_eq!(terms.tsquery(), "'café' & '日本語':*");
    }

    #[test]
    fn snippets_are_escaped_and_marks_balanced() {
        let text = format!("<b>{MARK_START}x{MARK_START}&{MARK_END}{MARK_END} {MARK_START}y");
        assert_eq!(
            marked_html(&text),
            "&lt;b&gt;<mark>x&amp;</mark> <mark>y</mark>"
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
