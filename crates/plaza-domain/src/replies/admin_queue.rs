//! The moderators' reply list (`GET /api/v1/admin/replies` and the
//! console's queue): every reply but the deleted ones without replies
//! below, newest first, filtered by status, reports, post and author, each
//! with its reports, read as one JSON value per page.

use std::borrow::Cow;

use serde::Deserialize;

use super::model::{
    REPLY_COLUMNS, REPLY_SOURCE, Reply, ReplyJson, ReplyRow, ReplyStatus, listed_columns,
};
use crate::listing::{Arg, Args, Page, parse_json_page, where_clause};
use crate::posts::{AdminReport, AdminReportJson};
use crate::{Database, DomainError};

/// Filters of the list; each narrows it.
#[derive(Debug, Clone, Default)]
pub struct AdminReplyQuery {
    pub status: Option<ReplyStatus>,
    /// Only replies with at least one report.
    pub reported_only: bool,
    /// The console's queue: pending replies, replies a word filter
    /// flagged, and replies with a report no moderator has acted on yet.
    pub awaiting_decision: bool,
    pub post_id: Option<i64>,
    pub author_id: Option<i64>,
}

/// A reply as moderators see it, with its reports (oldest first).
#[derive(Debug, Clone)]
pub struct AdminReply {
    pub reply: Reply,
    pub reports: Vec<AdminReport<'static>>,
}

/// A page of the list and how many replies match in all.
#[derive(Debug, Clone)]
pub struct AdminReplyPage {
    pub replies: Vec<AdminReply>,
    pub total: i64,
}

impl AdminReplyQuery {
    fn conditions(&self, args: &mut Args) -> Vec<String> {
        let mut conditions = vec!["(r.status <> 'deleted' OR r.reply_count > 0)".to_owned()];
        if let Some(status) = self.status {
            conditions.push(format!(
                "r.status = {}",
                args.push(Arg::Text(status.as_str().to_owned()))
            ));
        }
        if self.reported_only {
            conditions.push("r.report_count > 0".to_owned());
        }
        if self.awaiting_decision {
            conditions.push(
                "(r.status = 'pending' OR (r.status = 'flagged' AND r.review_reason IS NOT NULL) \
                 OR (r.report_count > 0 AND EXISTS (SELECT 1 FROM \
                 reply_reports o WHERE o.reply_id = r.id AND o.resolved_at IS NULL)))"
                    .to_owned(),
            );
        }
        if let Some(post_id) = self.post_id {
            conditions.push(format!("r.post_id = {}", args.push(Arg::Int(post_id))));
        }
        if let Some(author_id) = self.author_id {
            conditions.push(format!("r.author_id = {}", args.push(Arg::Int(author_id))));
        }
        conditions
    }
}

/// One element of a page: the reply and its reports (`NULL` without any).
#[derive(Deserialize)]
struct AdminReplyElement<'a>(ReplyJson, #[serde(borrow)] Option<Vec<AdminReportJson<'a>>>);

impl Database {
    /// A page of the list, newest first; a first page is one statement (see
    /// [`Database::counted_page`]).
    pub async fn admin_replies(
        &self,
        query: &AdminReplyQuery,
        page: Page,
    ) -> Result<AdminReplyPage, DomainError> {
        let (total, json) = self
            .counted_page(
                page,
                |args| {
                    format!(
                        "(SELECT COUNT(*) FROM replies r{})",
                        where_clause(&query.conditions(args))
                    )
                },
                |args| {
                    let conditions = where_clause(&query.conditions(args));
                    let limit = args.push(Arg::Int(page.limit));
                    let offset = args.push(Arg::Int(page.offset));
                    self.dialect().json_rows(
                        &self.admin_reply_json(),
                        "listed.id DESC",
                        &format!(
                            "(SELECT {REPLY_COLUMNS} FROM {REPLY_SOURCE}{conditions} \
                             ORDER BY r.id DESC LIMIT {limit} OFFSET {offset}) listed"
                        ),
                    )
                },
            )
            .await?;
        let replies = match json {
            Some(json) => parse_admin_replies(&json)?,
            None => Vec::new(),
        };
        Ok(AdminReplyPage { replies, total })
    }

    /// One reply as moderators see it (the answer of a moderation).
    pub async fn admin_reply(&self, id: i64) -> Result<AdminReply, DomainError> {
        let sql = format!(
            "SELECT {}",
            self.dialect().json_rows(
                &self.admin_reply_json(),
                "listed.id",
                &format!("(SELECT {REPLY_COLUMNS} FROM {REPLY_SOURCE} WHERE r.id = $1) listed"),
            )
        );
        let (json,): (String,) = sqlx::query_as(&sql)
            .bind(id)
            .fetch_one(&mut *self.lease().await?)
            .await?;
        parse_admin_replies(&json)?
            .pop()
            .ok_or(DomainError::NotFound("reply"))
    }

    /// A reply of `listed` (columns [`REPLY_COLUMNS`]) as an
    /// [`AdminReplyElement`]: its reports looked up through the reply's
    /// reports only when it has any.
    fn admin_reply_json(&self) -> String {
        let dialect = self.dialect();
        let reports = dialect.nested_json_rows(
            &dialect.json_array(crate::reports::REPORT_JSON_COLUMNS),
            "reply_reports rr WHERE rr.reply_id = listed.id",
        );
        let reply = dialect.json_array(&listed_columns());
        dialect.json_array(&format!(
            "{reply}, CASE WHEN listed.report_count > 0 THEN {reports} END"
        ))
    }
}

/// Reads a page of [`AdminReplyElement`]s.
fn parse_admin_replies(json: &str) -> Result<Vec<AdminReply>, DomainError> {
    parse_json_page::<AdminReplyElement<'_>>(json)?
        .into_iter()
        .map(|AdminReplyElement(reply, reports)| {
            let reports = AdminReportJson::into_reports(reports)?
                .into_iter()
                .map(|report| AdminReport {
                    reason: Cow::Owned(report.reason.into_owned()),
                    ..report
                })
                .collect();
            Ok(AdminReply {
                reply: Reply::try_from(ReplyRow::from(reply))?,
                reports,
            })
        })
        .collect()
}
