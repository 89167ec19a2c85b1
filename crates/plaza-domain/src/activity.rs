//! The admin surface's reports over a date range: what users did
//! (`/reports/user-activity`) and how moderation went
//! (`/reports/moderation`). Every count and list reads an index on its
//! table's time column (or the user's column, then time), so a report
//! costs the rows of its range, not of the table.
//!
//! Sign-ins come from the sign-in log (`sign_ins`), which outlives the
//! sessions and is kept for `sign_in_retention_days`.

use sqlx::FromRow;

use crate::audit::{AuditEntry, ENTRY_COLUMNS};
use crate::listing::{Arg, Args, bind_all, where_clause};
use crate::posts::{Moderation, PostStatus};
use crate::reports::{Report, ReportTarget};
use crate::{Database, DomainError, Flag};

/// Most items in each list of a detailed report.
pub const MAX_DETAIL_ITEMS: i64 = 100;

/// Audited actions that are moderation: decisions on posts and reports,
/// and bans (the moderation report's `actionsBy…`).
const MODERATION_ACTIONS_SQL: &str =
    "(target_type IN ('post', 'report') OR action IN ('user.ban', 'user.unban'))";

/// A half-open time range in Unix milliseconds: `since` inclusive, `until`
/// exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    pub since: i64,
    pub until: i64,
}

/// What users did in a range: one user's figures, or everyone's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ActivityCounts {
    /// Sign-ins (sessions started), from the sign-in log.
    pub sign_ins: i64,
    pub posts_created: i64,
    /// Reports filed by the user (everyone: every report).
    pub reports_made: i64,
    /// Reports on the user's posts (everyone: every report).
    pub reports_received: i64,
    /// Audited actions the user took as an admin or moderator (everyone:
    /// every audited action with an acting user).
    pub moderation_actions: i64,
    /// Everyone only: accounts created in the range.
    pub new_users: Option<i64>,
    /// Everyone only: distinct users who started a session in the range.
    pub active_users: Option<i64>,
}

/// A sign-in in a detailed report.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct SignIn {
    pub user_id: i64,
    pub created_at: i64,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
}

/// A post in a detailed report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostSummary {
    pub id: i64,
    pub author_id: i64,
    pub title: String,
    pub status: PostStatus,
    pub created_at: i64,
}

#[derive(FromRow)]
struct PostSummaryRow {
    id: i64,
    author_id: i64,
    title: String,
    published: Flag,
    moderation: String,
    held: Flag,
    created_at: i64,
}

impl From<PostSummaryRow> for PostSummary {
    fn from(row: PostSummaryRow) -> Self {
        let moderation = Moderation::parse(&row.moderation).unwrap_or(Moderation::None);
        PostSummary {
            id: row.id,
            author_id: row.author_id,
            title: row.title,
            status: PostStatus::of(row.published.0, moderation, row.held.0),
            created_at: row.created_at,
        }
    }
}

/// The newest [`MAX_DETAIL_ITEMS`] of each kind of activity in a range.
#[derive(Debug, Clone, Default)]
pub struct ActivityDetails {
    pub sign_ins: Vec<SignIn>,
    pub posts: Vec<PostSummary>,
    pub reports_made: Vec<Report>,
    pub reports_received: Vec<Report>,
    pub moderation_actions: Vec<AuditEntry>,
}

/// Moderation figures over a range.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModerationReport {
    pub stats: crate::reports::ModerationStats,
    /// `(action, count)`, most frequent first.
    pub actions_by_type: Vec<(String, i64)>,
    /// Most active first, at most [`MAX_DETAIL_ITEMS`].
    pub actions_by_moderator: Vec<ModeratorActions>,
}

/// How many moderation actions one moderator took.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct ModeratorActions {
    pub moderator_id: i64,
    /// As recorded with their actions (the greatest, should it have changed).
    pub moderator_email: Option<String>,
    pub actions: i64,
}

/// The conditions of a time column in `range`, with their values.
fn in_range(args: &mut Args, time_column: &str, range: TimeRange) -> Vec<String> {
    vec![
        format!("{time_column} >= {}", args.push(Arg::Int(range.since))),
        format!("{time_column} < {}", args.push(Arg::Int(range.until))),
    ]
}

/// `FROM … WHERE …` of each kind of activity, for one user or everyone.
struct ActivitySource {
    from: &'static str,
    time_column: &'static str,
    /// The condition naming one user, `{user}` standing for their id.
    of_user: Option<&'static str>,
    extra: Option<&'static str>,
}

const SIGN_INS: ActivitySource = ActivitySource {
    from: "sign_ins",
    time_column: "created_at",
    of_user: Some("user_id = {user}"),
    extra: None,
};
const POSTS: ActivitySource = ActivitySource {
    from: "posts",
    time_column: "created_at",
    of_user: Some("author_id = {user}"),
    extra: None,
};
const REPORTS_MADE: ActivitySource = ActivitySource {
    from: "post_reports",
    time_column: "created_at",
    of_user: Some("reporter_id = {user}"),
    extra: None,
};
const REPORTS_RECEIVED: ActivitySource = ActivitySource {
    from: "post_reports",
    time_column: "created_at",
    of_user: Some("post_id IN (SELECT id FROM posts WHERE author_id = {user})"),
    extra: None,
};
const ACTIONS: ActivitySource = ActivitySource {
    from: "audit_log",
    time_column: "created_at",
    of_user: Some("actor_id = {user}"),
    extra: Some("actor_id IS NOT NULL"),
};
const NEW_USERS: ActivitySource = ActivitySource {
    from: "users",
    time_column: "created_at",
    of_user: None,
    extra: None,
};

impl ActivitySource {
    /// `FROM <table> WHERE …` and its values.
    fn filter(&self, user_id: Option<i64>, range: TimeRange) -> (String, Args) {
        let mut args = Args::default();
        let mut conditions = in_range(&mut args, self.time_column, range);
        if let (Some(of_user), Some(id)) = (self.of_user, user_id) {
            conditions.push(of_user.replace("{user}", &args.push(Arg::Int(id))));
        }
        conditions.extend(self.extra.map(str::to_owned));
        (
            format!("FROM {}{}", self.from, where_clause(&conditions)),
            args,
        )
    }
}

impl Database {
    async fn count_of(
        &self,
        source: &ActivitySource,
        what: &str,
        user_id: Option<i64>,
        range: TimeRange,
    ) -> Result<i64, DomainError> {
        let (from, args) = source.filter(user_id, range);
        let (count,): (i64,) = bind_all(
            sqlx::query_as(&format!("SELECT {what} {from}")),
            args.into_vec(),
        )
        .fetch_one(&mut *self.lease().await?)
        .await?;
        Ok(count)
    }

    async fn newest_of<T>(
        &self,
        source: &ActivitySource,
        columns: &str,
        user_id: Option<i64>,
        range: TimeRange,
    ) -> Result<Vec<T>, DomainError>
    where
        T: for<'r> FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        let (from, mut args) = source.filter(user_id, range);
        let limit = args.push(Arg::Int(MAX_DETAIL_ITEMS));
        let sql = format!(
            "SELECT {columns} {from} ORDER BY {} DESC, id DESC LIMIT {limit}",
            source.time_column
        );
        Ok(bind_all(sqlx::query_as(&sql), args.into_vec())
            .fetch_all(&mut *self.lease().await?)
            .await?)
    }

    /// What `user_id` (or, with `None`, everyone) did in `range`.
    pub async fn activity_counts(
        &self,
        user_id: Option<i64>,
        range: TimeRange,
    ) -> Result<ActivityCounts, DomainError> {
        let (new_users, active_users) = if user_id.is_none() {
            (
                Some(self.count_of(&NEW_USERS, "COUNT(*)", None, range).await?),
                Some(
                    self.count_of(&SIGN_INS, "COUNT(DISTINCT user_id)", None, range)
                        .await?,
                ),
            )
        } else {
            (None, None)
        };
        Ok(ActivityCounts {
            sign_ins: self.count_of(&SIGN_INS, "COUNT(*)", user_id, range).await?,
            posts_created: self.count_of(&POSTS, "COUNT(*)", user_id, range).await?,
            reports_made: self
                .count_of(&REPORTS_MADE, "COUNT(*)", user_id, range)
                .await?,
            reports_received: self
                .count_of(&REPORTS_RECEIVED, "COUNT(*)", user_id, range)
                .await?,
            moderation_actions: self.count_of(&ACTIONS, "COUNT(*)", user_id, range).await?,
            new_users,
            active_users,
        })
    }

    /// The newest [`MAX_DETAIL_ITEMS`] of each kind of activity of
    /// `user_id` (or everyone) in `range`.
    pub async fn activity_details(
        &self,
        user_id: Option<i64>,
        range: TimeRange,
    ) -> Result<ActivityDetails, DomainError> {
        let posts: Vec<PostSummaryRow> = self
            .newest_of(
                &POSTS,
                "id, author_id, title, published, moderation, held, created_at",
                user_id,
                range,
            )
            .await?;
        Ok(ActivityDetails {
            sign_ins: self
                .newest_of(
                    &SIGN_INS,
                    "user_id, created_at, ip_address, user_agent",
                    user_id,
                    range,
                )
                .await?,
            posts: posts.into_iter().map(PostSummary::from).collect(),
            reports_made: self
                .newest_of(&REPORTS_MADE, &ReportTarget::Post.columns(), user_id, range)
                .await?,
            reports_received: self
                .newest_of(
                    &REPORTS_RECEIVED,
                    &ReportTarget::Post.columns(),
                    user_id,
                    range,
                )
                .await?,
            moderation_actions: self
                .newest_of(&ACTIONS, ENTRY_COLUMNS, user_id, range)
                .await?,
        })
    }

    /// Reports received and resolved, resolution time, and the moderation
    /// actions of the audit trail by type and by moderator, over `range`.
    pub async fn moderation_report(
        &self,
        range: TimeRange,
    ) -> Result<ModerationReport, DomainError> {
        let stats = self
            .moderation_stats_between(range.since, range.until)
            .await?;
        let mut args = Args::default();
        let mut conditions = in_range(&mut args, "created_at", range);
        conditions.push(MODERATION_ACTIONS_SQL.to_owned());
        let filter = where_clause(&conditions);
        let limit = args.push(Arg::Int(MAX_DETAIL_ITEMS));
        let by_type_sql = format!(
            "SELECT action, COUNT(*) AS actions FROM audit_log{filter} \
             GROUP BY action ORDER BY actions DESC, action LIMIT {limit}"
        );
        let values = args.into_vec();
        let actions_by_type: Vec<(String, i64)> =
            bind_all(sqlx::query_as(&by_type_sql), values.clone())
                .fetch_all(&mut *self.lease().await?)
                .await?;
        let by_moderator_sql = format!(
            "SELECT actor_id AS moderator_id, MAX(actor_email) AS moderator_email, \
             COUNT(*) AS actions FROM audit_log{filter} AND actor_id IS NOT NULL \
             GROUP BY actor_id ORDER BY actions DESC, actor_id LIMIT {limit}"
        );
        let actions_by_moderator: Vec<ModeratorActions> =
            bind_all(sqlx::query_as(&by_moderator_sql), values)
                .fetch_all(&mut *self.lease().await?)
                .await?;
        Ok(ModerationReport {
            stats,
            actions_by_type,
            actions_by_moderator,
        })
    }
}
