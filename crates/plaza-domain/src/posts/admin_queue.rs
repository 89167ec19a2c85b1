//! The admin surface's post queue: every post with its author's username
//! and its reports, read in place from the one JSON value the database
//! writes for a page.

use std::borrow::Cow;

use serde::Deserialize;

use super::model::{Moderation, POST_COLUMNS, PostStatus, Viewer};
use super::query::{PostQuery, post_json};
use crate::listing::{BorrowedText, JsonFlag, Page, parse_json_page};
use crate::reports::ReportCategory;
use crate::{Database, DomainError};

/// A post as the admin surface shows it: with its author's username and
/// its reports. Read in place from the JSON text the database wrote: a
/// string without escapes borrows from it instead of being copied.
#[derive(Debug, Clone)]
pub struct AdminPost<'a> {
    pub id: i64,
    pub author_id: i64,
    pub author_username: Cow<'a, str>,
    pub title: Cow<'a, str>,
    pub content: Cow<'a, str>,
    pub status: PostStatus,
    /// Why it entered the queue by itself (`crate::holds::HoldReason`
    /// stored), while it is held or flagged by a word filter.
    pub review_reason: Option<Cow<'a, str>>,
    pub report_count: i64,
    /// Whether the thread is locked.
    pub locked: bool,
    pub created_at: i64,
    pub updated_at: i64,
    /// Oldest first.
    pub reports: Vec<AdminReport<'a>>,
}

/// One report as the admin lists show it.
#[derive(Debug, Clone)]
pub struct AdminReport<'a> {
    pub id: i64,
    pub reporter_id: i64,
    pub reason: Cow<'a, str>,
    pub category: ReportCategory,
    pub created_at: i64,
}

impl AdminPost<'_> {
    /// The same post owning its strings.
    pub fn into_owned(self) -> AdminPost<'static> {
        AdminPost {
            author_username: Cow::Owned(self.author_username.into_owned()),
            title: Cow::Owned(self.title.into_owned()),
            content: Cow::Owned(self.content.into_owned()),
            review_reason: self
                .review_reason
                .map(|reason| Cow::Owned(reason.into_owned())),
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
            &dialect.json_array(crate::reports::REPORT_JSON_COLUMNS),
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
    serde::de::IgnoredAny,
    JsonFlag,
    i64,
    i64,
    JsonFlag,
    #[serde(borrow)] Option<Cow<'a, str>>,
);

/// A report as the admin lists write it
/// ([`crate::reports::REPORT_JSON_COLUMNS`]).
#[derive(Deserialize)]
pub(crate) struct AdminReportJson<'a>(
    i64,
    i64,
    #[serde(borrow)] Cow<'a, str>,
    #[serde(borrow)] Cow<'a, str>,
    i64,
);

impl<'a> AdminReportJson<'a> {
    /// Reports as the admin lists show them, oldest first.
    pub(crate) fn into_reports(
        reports: Option<Vec<AdminReportJson<'a>>>,
    ) -> Result<Vec<AdminReport<'a>>, DomainError> {
        let mut reports = reports
            .unwrap_or_default()
            .into_iter()
            .map(
                |AdminReportJson(id, reporter_id, reason, category, created_at)| {
                    Ok(AdminReport {
                        id,
                        reporter_id,
                        reason,
                        category: ReportCategory::try_from(category.into_owned())?,
                        created_at,
                    })
                },
            )
            .collect::<Result<Vec<_>, DomainError>>()?;
        reports.sort_by_key(|report| (report.created_at, report.id));
        Ok(reports)
    }
}

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
                _reply_count,
                locked,
                created_at,
                updated_at,
                held,
                review_reason,
            ) = post;
            let moderation = Moderation::parse(&moderation).ok_or_else(|| {
                DomainError::Conflict(format!("post {id} has unknown moderation {moderation}"))
            })?;
            let reports = AdminReportJson::into_reports(reports)?;
            Ok(AdminPost {
                id,
                author_id,
                author_username: author_username
                    .map(|BorrowedText(name)| name)
                    .unwrap_or_default(),
                title,
                content,
                status: PostStatus::of(published.into(), moderation, held.into()),
                review_reason,
                report_count,
                locked: locked.into(),
                created_at,
                updated_at,
                reports,
            })
        })
        .collect()
}
