//! Analytics events: what signed-in clients report of their use (page
//! views, clicks, sessions), stored with what the server adds (the user, a
//! keyed hash of the client address, the device type, country and VPN flag).
//!
//! Events arrive in batches from the ingest writer (one transaction per
//! batch: a group commit), and leave through the retention purge, in
//! bounded chunks so no purge holds the table for long.

use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::db::Tx;
use crate::error::DomainError;
use crate::listing::{Arg, Args, bind_all};

/// The event types SPEC.md documents and DECISIONS.md adds; operators may
/// allow more (`analytics_extra_event_types`).
pub const EVENT_TYPES: [&str; 7] = [
    "page_view",
    "button_click",
    "form_submit",
    "error_encountered",
    "session_start",
    "session_end",
    "scroll",
];

/// What an event must satisfy to be stored.
#[derive(Debug, Clone)]
pub struct EventRules {
    /// Allowed beyond [`EVENT_TYPES`].
    pub extra_event_types: Vec<String>,
    /// The most bytes `event_data` may take as JSON.
    pub max_data_bytes: usize,
    /// How far in the past a timestamp may be: older events would fall to
    /// the retention purge at once.
    pub retention_millis: i64,
    /// How far ahead of the server's clock a timestamp may be.
    pub max_clock_skew_millis: i64,
}

/// Why an event was refused: the field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventProblem {
    pub field: String,
    pub reason: String,
}

impl EventProblem {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        EventProblem {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// A client's event that passed [`validate`]: what the client said, before
/// the server adds who sent it and from where.
#[derive(Debug, Clone)]
pub struct ValidEvent {
    pub event_type: String,
    pub event_data: String,
    pub path: Option<String>,
    pub session_key: Option<String>,
    pub duration_ms: Option<i64>,
    pub click_x: Option<i64>,
    pub click_y: Option<i64>,
    pub occurred_at: i64,
}

/// Longest `path` and `session_id` kept; longer ones are cut.
const MAX_KEY_CHARS: usize = 512;

/// Checks one event (SPEC.md "Analytics event"): an object with a string
/// `event_type` of the allowed set, an object `event_data` within the size
/// limit, and an RFC 3339 `timestamp` inside the retention window and not
/// ahead of `now` by more than the allowed skew. `field_prefix` names the
/// event in a batch (`events.3.`).
pub fn validate(
    raw: &Value,
    rules: &EventRules,
    now: i64,
    field_prefix: &str,
) -> Result<ValidEvent, EventProblem> {
    let field = |name: &str| format!("{field_prefix}{name}");
    let Some(object) = raw.as_object() else {
        let name = field_prefix.trim_end_matches('.');
        return Err(EventProblem::new(
            if name.is_empty() { "body" } else { name },
            "must be a JSON object",
        ));
    };
    let event_type = match object.get("event_type") {
        None | Some(Value::Null) => {
            return Err(EventProblem::new(field("event_type"), "is required"));
        }
        Some(Value::String(name)) => name,
        Some(_) => return Err(EventProblem::new(field("event_type"), "must be a string")),
    };
    if !EVENT_TYPES.contains(&event_type.as_str())
        && !rules
            .extra_event_types
            .iter()
            .any(|extra| extra == event_type)
    {
        return Err(EventProblem::new(
            field("event_type"),
            format!(
                "unsupported event type; one of {}",
                EVENT_TYPES
                    .iter()
                    .copied()
                    .chain(rules.extra_event_types.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let data = match object.get("event_data") {
        None | Some(Value::Null) => {
            return Err(EventProblem::new(field("event_data"), "is required"));
        }
        Some(Value::Object(data)) => data,
        Some(_) => {
            return Err(EventProblem::new(
                field("event_data"),
                "must be an object, not a string or other value",
            ));
        }
    };
    let event_data = Value::Object(data.clone()).to_string();
    if event_data.len() > rules.max_data_bytes {
        return Err(EventProblem::new(
            field("event_data"),
            format!(
                "is {} bytes as JSON; at most {} are allowed",
                event_data.len(),
                rules.max_data_bytes
            ),
        ));
    }
    let occurred_at = match object.get("timestamp") {
        None | Some(Value::Null) => {
            return Err(EventProblem::new(field("timestamp"), "is required"));
        }
        Some(Value::String(text)) => OffsetDateTime::parse(text, &Rfc3339)
            .map(crate::time::to_millis)
            .map_err(|_| {
                EventProblem::new(
                    field("timestamp"),
                    "must be an ISO 8601 time with a time zone, such as 2026-01-31T12:00:00Z",
                )
            })?,
        Some(_) => {
            return Err(EventProblem::new(
                field("timestamp"),
                "must be an ISO 8601 string",
            ));
        }
    };
    if occurred_at > now.saturating_add(rules.max_clock_skew_millis) {
        return Err(EventProblem::new(field("timestamp"), "is in the future"));
    }
    if occurred_at < now.saturating_sub(rules.retention_millis) {
        return Err(EventProblem::new(
            field("timestamp"),
            "is older than the retention period",
        ));
    }
    Ok(ValidEvent {
        event_type: event_type.clone(),
        path: short_text(data, "path"),
        session_key: short_text(data, "session_id"),
        duration_ms: whole_number(data, "duration_ms").filter(|ms| *ms >= 0),
        click_x: whole_number(data, "x"),
        click_y: whole_number(data, "y"),
        event_data,
        occurred_at,
    })
}

fn short_text(data: &Map<String, Value>, key: &str) -> Option<String> {
    let text = data.get(key)?.as_str()?;
    Some(text.chars().take(MAX_KEY_CHARS).collect())
}

fn whole_number(data: &Map<String, Value>, key: &str) -> Option<i64> {
    let number = data.get(key)?;
    number.as_i64().or_else(|| {
        number
            .as_f64()
            .filter(|value| value.is_finite())
            .map(|value| value.round() as i64)
    })
}

/// An event ready to store.
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// The id the client was answered with.
    pub event_id: String,
    pub user_id: i64,
    pub event_type: String,
    /// The client's `event_data` object, as JSON text.
    pub event_data: String,
    /// `event_data.path`, kept apart for the top-pages and heatmap views.
    pub path: Option<String>,
    /// `event_data.session_id`: the client's session, for session counts.
    pub session_key: Option<String>,
    /// `event_data.duration_ms`, for session durations.
    pub duration_ms: Option<i64>,
    /// `event_data.x` and `y`: a click position, for the heatmap.
    pub click_x: Option<i64>,
    pub click_y: Option<i64>,
    /// Keyed hash of the client address; the address itself is never kept.
    pub client_hash: String,
    /// `desktop`, `mobile`, `tablet` or `other`.
    pub device_type: &'static str,
    /// ISO 3166 alpha-2 code, from a trusted proxy's header.
    pub country: Option<String>,
    pub is_vpn: bool,
    /// The client's timestamp (Unix milliseconds).
    pub occurred_at: i64,
    /// When the server took it (Unix milliseconds).
    pub received_at: i64,
}

const COLUMNS: &str = "event_id, user_id, event_type, event_data, path, session_key, duration_ms, \
     click_x, click_y, client_hash, device_type, country, is_vpn, occurred_at, received_at";
const COLUMN_COUNT: usize = 15;

/// Stores `events` in `tx`, several rows per statement (as many as the
/// engine binds cheaply), so a batch of a thousand is a handful of round
/// trips.
pub async fn insert(tx: &mut Tx<'_>, events: &[NewEvent]) -> Result<(), DomainError> {
    let rows_per_statement =
        (crate::dialect::Dialect::of(tx).values_per_statement() / COLUMN_COUNT).max(1);
    for chunk in events.chunks(rows_per_statement) {
        let sql = insert_statement(chunk.len());
        let mut query = sqlx::query(&sql);
        for event in chunk {
            query = query
                .bind(event.event_id.as_str())
                .bind(event.user_id)
                .bind(event.event_type.as_str())
                .bind(event.event_data.as_str())
                .bind(event.path.as_deref())
                .bind(event.session_key.as_deref())
                .bind(event.duration_ms)
                .bind(event.click_x)
                .bind(event.click_y)
                .bind(event.client_hash.as_str())
                .bind(event.device_type)
                .bind(event.country.as_deref())
                .bind(event.is_vpn)
                .bind(event.occurred_at)
                .bind(event.received_at);
        }
        query.execute(&mut **tx).await?;
    }
    Ok(())
}

fn insert_statement(rows: usize) -> String {
    let mut sql = format!("INSERT INTO analytics_events ({COLUMNS}) VALUES ");
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for column in 0..COLUMN_COUNT {
            if column > 0 {
                sql.push_str(", ");
            }
            sql.push('$');
            sql.push_str(&(row * COLUMN_COUNT + column + 1).to_string());
        }
        sql.push(')');
    }
    sql
}

/// Deletes up to `chunk` events that occurred before `cutoff` (Unix
/// milliseconds), oldest first, and answers how many went. The retention
/// job calls it until it answers fewer than `chunk`, one short transaction
/// each, so writers wait at most one chunk's time.
pub async fn purge_before(tx: &mut Tx<'_>, cutoff: i64, chunk: i64) -> Result<u64, DomainError> {
    Ok(sqlx::query(
        "DELETE FROM analytics_events WHERE id IN \
         (SELECT id FROM analytics_events WHERE occurred_at < $1 ORDER BY occurred_at LIMIT $2)",
    )
    .bind(cutoff)
    .bind(chunk)
    .execute(&mut **tx)
    .await?
    .rows_affected())
}

/// Events one purge transaction deletes at most.
pub const PURGE_CHUNK: i64 = 5_000;

/// Transactions one purge run makes at most (a million events), so a first
/// run after a long outage ends within its job lease; the next run goes on.
const PURGE_CHUNKS_PER_RUN: usize = 200;

impl crate::Database {
    /// Deletes events that occurred before `cutoff`, [`PURGE_CHUNK`] per
    /// transaction (each commit frees the table for the writer), and
    /// answers how many went.
    pub async fn purge_events_before(&self, cutoff: i64) -> Result<u64, DomainError> {
        let mut removed = 0;
        for _ in 0..PURGE_CHUNKS_PER_RUN {
            let chunk = self
                .write(|tx| Box::pin(async move { purge_before(tx, cutoff, PURGE_CHUNK).await }))
                .await?;
            removed += chunk;
            if chunk < PURGE_CHUNK as u64 {
                break;
            }
        }
        Ok(removed)
    }

    /// Events stored now.
    pub async fn analytics_event_count(&self) -> Result<i64, DomainError> {
        let mut lease = self.lease().await?;
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM analytics_events")
            .fetch_one(&mut *lease)
            .await?)
    }

    /// Which of `event_ids` are stored: how a client (or the durability
    /// test) checks that acknowledged events were kept.
    pub async fn stored_event_ids(
        &self,
        event_ids: &[String],
    ) -> Result<std::collections::HashSet<String>, DomainError> {
        let mut stored = std::collections::HashSet::new();
        let mut lease = self.lease().await?;
        for chunk in event_ids.chunks(self.dialect().values_per_statement()) {
            let placeholders = (1..=chunk.len())
                .map(|n| format!("${n}"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql =
                format!("SELECT event_id FROM analytics_events WHERE event_id IN ({placeholders})");
            let mut query = sqlx::query_as::<_, (String,)>(&sql);
            for id in chunk {
                query = query.bind(id.as_str());
            }
            stored.extend(
                query
                    .fetch_all(&mut *lease)
                    .await?
                    .into_iter()
                    .map(|(id,)| id),
            );
        }
        Ok(stored)
    }
}

/// The versioned admin surface's analytics over one period: users, content
/// and engagement figures computed from the stored rows.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PlatformFigures {
    pub users_total: i64,
    /// Users who signed in, sent an event or wrote a post in the period.
    pub users_active: i64,
    pub users_new: i64,
    /// Users created before the period (the base growth is measured on).
    pub users_before: i64,
    pub posts_total: i64,
    pub posts_new: i64,
    /// Posts a moderator acted on in the period (the audit trail).
    pub posts_moderated: i64,
    /// Posts flagged now.
    pub posts_flagged: i64,
    /// Mean `duration_ms` of the period's `session_end` events.
    pub average_session_millis: Option<f64>,
    /// Active (user, day) pairs in the period: divided by the period's days,
    /// the daily active users.
    pub active_user_days: i64,
}

impl crate::Database {
    /// [`PlatformFigures`] for `since` (inclusive) to `until` (exclusive),
    /// Unix milliseconds: one round trip of index range scans.
    pub async fn platform_figures(
        &self,
        since: i64,
        until: i64,
    ) -> Result<PlatformFigures, DomainError> {
        let row: (i64, i64, i64, i64, i64, i64, i64, i64, Option<f64>, i64) = sqlx::query_as(
            "SELECT \
             (SELECT COUNT(*) FROM users), \
             (SELECT COUNT(*) FROM (\
                SELECT user_id FROM sign_ins WHERE created_at >= $1 AND created_at < $2 \
                UNION SELECT user_id FROM analytics_events WHERE occurred_at >= $1 AND occurred_at < $2 \
                UNION SELECT author_id FROM posts WHERE created_at >= $1 AND created_at < $2) AS active), \
             (SELECT COUNT(*) FROM users WHERE created_at >= $1 AND created_at < $2), \
             (SELECT COUNT(*) FROM users WHERE created_at < $1), \
             (SELECT CAST(COALESCE(SUM(total), 0) AS BIGINT) FROM post_counts WHERE scope LIKE '%published:%'), \
             (SELECT COUNT(*) FROM posts WHERE created_at >= $1 AND created_at < $2), \
             (SELECT COUNT(DISTINCT target_id) FROM audit_log \
                WHERE action LIKE 'post.moderate.%' AND created_at >= $1 AND created_at < $2), \
             (SELECT CAST(COALESCE(SUM(total), 0) AS BIGINT) FROM post_counts WHERE scope LIKE '%:flagged'), \
             (SELECT CAST(AVG(duration_ms) AS DOUBLE PRECISION) FROM analytics_events \
                WHERE event_type = 'session_end' AND occurred_at >= $1 AND occurred_at < $2), \
             (SELECT COUNT(*) FROM (\
                SELECT user_id, created_at / 86400000 AS day FROM sign_ins WHERE created_at >= $1 AND created_at < $2 \
                UNION SELECT user_id, occurred_at / 86400000 FROM analytics_events WHERE occurred_at >= $1 AND occurred_at < $2 \
                UNION SELECT author_id, created_at / 86400000 FROM posts WHERE created_at >= $1 AND created_at < $2) AS days)",
        )
        .bind(since)
        .bind(until)
        .fetch_one(&mut *self.lease().await?)
        .await?;
        Ok(PlatformFigures {
            users_total: row.0,
            users_active: row.1,
            users_new: row.2,
            users_before: row.3,
            posts_total: row.4,
            posts_new: row.5,
            posts_moderated: row.6,
            posts_flagged: row.7,
            average_session_millis: row.8,
            active_user_days: row.9,
        })
    }
}

/// Which events a dashboard figure counts: a period and the optional
/// filters of `GET /api/admin/analytics`.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Inclusive, Unix milliseconds.
    pub since: i64,
    /// Exclusive, Unix milliseconds.
    pub until: i64,
    pub country: Option<String>,
    pub device_type: Option<String>,
    /// `false` leaves out events flagged as coming through a VPN.
    pub include_vpn: bool,
}

impl EventFilter {
    /// The conditions (placeholders numbered in `args`) that select the
    /// filtered events.
    fn clause(&self, args: &mut Args) -> String {
        let mut sql = format!(
            "occurred_at >= {} AND occurred_at < {}",
            args.push(Arg::Int(self.since)),
            args.push(Arg::Int(self.until))
        );
        if let Some(country) = &self.country {
            sql.push_str(&format!(
                " AND country = {}",
                args.push(Arg::Text(country.clone()))
            ));
        }
        if let Some(device) = &self.device_type {
            sql.push_str(&format!(
                " AND device_type = {}",
                args.push(Arg::Text(device.clone()))
            ));
        }
        if !self.include_vpn {
            sql.push_str(&format!(" AND is_vpn = {}", args.push(Arg::Bool(false))));
        }
        sql
    }
}

/// The dashboard's headline figures over the filtered events.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DashboardOverview {
    /// Distinct `session_id`s.
    pub sessions: i64,
    pub page_views: i64,
    pub clicks: i64,
    pub unique_users: i64,
    /// Mean `duration_ms` of `session_end` events.
    pub average_session_millis: Option<f64>,
    /// Sessions with page views that had exactly one.
    pub bounced_sessions: i64,
    /// Sessions with at least one page view.
    pub viewing_sessions: i64,
    pub vpn_events: i64,
    pub events: i64,
}

/// Counts per 15-minute slice of UTC time (`slice * 900_000` ms is its
/// start): fine enough to be summed into hours, days, weeks or months of
/// any time zone, whose offsets are multiples of 15 minutes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SliceCounts {
    /// Sessions, each in the slice of its first event.
    pub sessions: Vec<(i64, i64)>,
    pub page_views: Vec<(i64, i64)>,
}

/// The length of a [`SliceCounts`] slice in milliseconds.
pub const SLICE_MILLIS: i64 = 900_000;

/// One page's views.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PageViews {
    pub path: String,
    pub views: i64,
    /// Distinct users who viewed it.
    pub unique_views: i64,
}

/// Events and users from one country (`None`: no trusted header named it).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CountryCount {
    pub country: Option<String>,
    pub events: i64,
    pub users: i64,
}

/// Clicks in one cell of a page's heatmap grid.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct HeatCell {
    pub path: String,
    /// The cell's column and row: `x / HEATMAP_CELL`, `y / HEATMAP_CELL`.
    pub cell_x: i64,
    pub cell_y: i64,
    pub clicks: i64,
}

/// Pixels per side of a heatmap cell.
pub const HEATMAP_CELL: i64 = 20;

impl crate::Database {
    /// The headline figures of the events `filter` selects.
    pub async fn dashboard_overview(
        &self,
        filter: &EventFilter,
    ) -> Result<DashboardOverview, DomainError> {
        let mut args = Args::default();
        let clause = filter.clause(&mut args);
        let vpn = args.push(Arg::Bool(true));
        let sql = format!(
            "SELECT \
             (SELECT COUNT(DISTINCT session_key) FROM analytics_events WHERE {clause}), \
             (SELECT COUNT(*) FROM analytics_events WHERE {clause} AND event_type = 'page_view'), \
             (SELECT COUNT(*) FROM analytics_events WHERE {clause} AND event_type = 'button_click'), \
             (SELECT COUNT(DISTINCT user_id) FROM analytics_events WHERE {clause}), \
             (SELECT CAST(AVG(duration_ms) AS DOUBLE PRECISION) FROM analytics_events \
                WHERE {clause} AND event_type = 'session_end'), \
             (SELECT COUNT(*) FROM (SELECT session_key FROM analytics_events \
                WHERE {clause} AND event_type = 'page_view' AND session_key IS NOT NULL \
                GROUP BY session_key HAVING COUNT(*) = 1) AS bounced), \
             (SELECT COUNT(DISTINCT session_key) FROM analytics_events \
                WHERE {clause} AND event_type = 'page_view'), \
             (SELECT COUNT(*) FROM analytics_events WHERE {clause} AND is_vpn = {vpn}), \
             (SELECT COUNT(*) FROM analytics_events WHERE {clause})"
        );
        let query =
            sqlx::query_as::<_, (i64, i64, i64, i64, Option<f64>, i64, i64, i64, i64)>(&sql);
        let row = bind_all(query, args.into_vec())
            .fetch_one(&mut *self.lease().await?)
            .await?;
        Ok(DashboardOverview {
            sessions: row.0,
            page_views: row.1,
            clicks: row.2,
            unique_users: row.3,
            average_session_millis: row.4,
            bounced_sessions: row.5,
            viewing_sessions: row.6,
            vpn_events: row.7,
            events: row.8,
        })
    }

    /// Sessions and page views per 15-minute UTC slice, for the trends.
    pub async fn dashboard_slices(&self, filter: &EventFilter) -> Result<SliceCounts, DomainError> {
        let mut args = Args::default();
        let clause = filter.clause(&mut args);
        let values = args.into_vec();
        let mut lease = self.lease().await?;
        let sessions_sql = format!(
            "SELECT first_at / {SLICE_MILLIS} AS slice, COUNT(*) FROM \
             (SELECT MIN(occurred_at) AS first_at FROM analytics_events \
              WHERE {clause} AND session_key IS NOT NULL GROUP BY session_key) AS firsts \
             GROUP BY first_at / {SLICE_MILLIS} ORDER BY slice"
        );
        let sessions = bind_all(
            sqlx::query_as::<_, (i64, i64)>(&sessions_sql),
            values.clone(),
        )
        .fetch_all(&mut *lease)
        .await?;
        let views_sql = format!(
            "SELECT occurred_at / {SLICE_MILLIS} AS slice, COUNT(*) FROM analytics_events \
             WHERE {clause} AND event_type = 'page_view' \
             GROUP BY occurred_at / {SLICE_MILLIS} ORDER BY slice"
        );
        let page_views = bind_all(sqlx::query_as::<_, (i64, i64)>(&views_sql), values)
            .fetch_all(&mut *lease)
            .await?;
        Ok(SliceCounts {
            sessions,
            page_views,
        })
    }

    /// The `limit` most viewed paths.
    pub async fn dashboard_top_pages(
        &self,
        filter: &EventFilter,
        limit: i64,
    ) -> Result<Vec<PageViews>, DomainError> {
        let mut args = Args::default();
        let clause = filter.clause(&mut args);
        let sql = format!(
            "SELECT path, COUNT(*) AS views, COUNT(DISTINCT user_id) AS unique_views \
             FROM analytics_events WHERE {clause} AND event_type = 'page_view' AND path IS NOT NULL \
             GROUP BY path ORDER BY views DESC, path LIMIT {limit}"
        );
        Ok(
            bind_all(sqlx::query_as::<_, PageViews>(&sql), args.into_vec())
                .fetch_all(&mut *self.lease().await?)
                .await?,
        )
    }

    /// Events by device type.
    pub async fn dashboard_devices(
        &self,
        filter: &EventFilter,
    ) -> Result<Vec<(String, i64)>, DomainError> {
        let mut args = Args::default();
        let clause = filter.clause(&mut args);
        let sql = format!(
            "SELECT device_type, COUNT(*) FROM analytics_events WHERE {clause} \
             GROUP BY device_type ORDER BY device_type"
        );
        Ok(
            bind_all(sqlx::query_as::<_, (String, i64)>(&sql), args.into_vec())
                .fetch_all(&mut *self.lease().await?)
                .await?,
        )
    }

    /// Events and users by country, most events first, at most `limit`.
    pub async fn dashboard_countries(
        &self,
        filter: &EventFilter,
        limit: i64,
    ) -> Result<Vec<CountryCount>, DomainError> {
        let mut args = Args::default();
        let clause = filter.clause(&mut args);
        let sql = format!(
            "SELECT country, COUNT(*) AS events, COUNT(DISTINCT user_id) AS users \
             FROM analytics_events WHERE {clause} \
             GROUP BY country ORDER BY events DESC, country LIMIT {limit}"
        );
        Ok(
            bind_all(sqlx::query_as::<_, CountryCount>(&sql), args.into_vec())
                .fetch_all(&mut *self.lease().await?)
                .await?,
        )
    }

    /// Clicks per heatmap cell, busiest first, at most `limit` cells.
    pub async fn dashboard_heatmap(
        &self,
        filter: &EventFilter,
        limit: i64,
    ) -> Result<Vec<HeatCell>, DomainError> {
        let mut args = Args::default();
        let clause = filter.clause(&mut args);
        let sql = format!(
            "SELECT path, click_x / {HEATMAP_CELL} AS cell_x, click_y / {HEATMAP_CELL} AS cell_y, \
             COUNT(*) AS clicks FROM analytics_events \
             WHERE {clause} AND event_type = 'button_click' AND path IS NOT NULL \
             AND click_x IS NOT NULL AND click_y IS NOT NULL \
             GROUP BY path, click_x / {HEATMAP_CELL}, click_y / {HEATMAP_CELL} \
             ORDER BY clicks DESC, path, cell_x, cell_y LIMIT {limit}"
        );
        Ok(
            bind_all(sqlx::query_as::<_, HeatCell>(&sql), args.into_vec())
                .fetch_all(&mut *self.lease().await?)
                .await?,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_790_000_000_000;

    fn rules() -> EventRules {
        EventRules {
            extra_event_types: vec!["video_play".to_owned()],
            max_data_bytes: 96,
            retention_millis: 90 * 86_400_000,
            max_clock_skew_millis: 300_000,
        }
    }

    fn at(millis: i64) -> String {
        crate::time::from_millis(millis).format(&Rfc3339).unwrap()
    }

    fn problem(raw: Value) -> EventProblem {
        validate(&raw, &rules(), NOW, "").unwrap_err()
    }

    #[test]
    fn each_broken_rule_names_its_field() {
        let ok =
            json!({"event_type": "page_view", "event_data": {"path": "/a"}, "timestamp": at(NOW)});
        assert!(validate(&ok, &rules(), NOW, "").is_ok());
        assert_eq!(problem(json!([])).field, "body");
        assert_eq!(
            problem(json!({"event_data": {}, "timestamp": at(NOW)})).field,
            "event_type"
        );
        assert_eq!(
            problem(json!({"event_type": "teleport", "event_data": {}, "timestamp": at(NOW)}))
                .field,
            "event_type"
        );
        assert_eq!(
            problem(json!({"event_type": "scroll", "event_data": "{}", "timestamp": at(NOW)}))
                .field,
            "event_data"
        );
        let big = json!({"event_type": "scroll", "event_data": {"k": "x".repeat(96)}, "timestamp": at(NOW)});
        assert_eq!(problem(big).field, "event_data");
        for bad in [
            json!("yesterday"),
            json!(12),
            json!(at(NOW + 600_000)),
            json!(at(NOW - 91 * 86_400_000)),
        ] {
            let event = json!({"event_type": "scroll", "event_data": {}, "timestamp": bad});
            assert_eq!(problem(event).field, "timestamp");
        }
        let batch = validate(&json!({"event_type": 1}), &rules(), NOW, "events.2.").unwrap_err();
        assert_eq!(batch.field, "events.2.event_type");
    }

    #[test]
    fn an_operator_type_is_allowed_and_known_keys_are_lifted_out() {
        let event = json!({
            "event_type": "video_play",
            "event_data": {"path": "/watch", "session_id": "s1", "duration_ms": 1500, "x": 10.6, "y": -3},
            "timestamp": "2026-09-21T12:00:00+02:00",
        });
        let valid = validate(&event, &rules(), NOW, "").unwrap();
        assert_eq!(valid.path.as_deref(), Some("/watch"));
        assert_eq!(valid.session_key.as_deref(), Some("s1"));
        assert_eq!(
            (valid.duration_ms, valid.click_x, valid.click_y),
            (Some(1500), Some(11), Some(-3))
        );
        // 12:00 at +02:00 is 10:00 UTC.
        assert_eq!(valid.occurred_at, 1_789_984_800_000);
    }

    #[test]
    fn the_bulk_statement_numbers_every_value_once() {
        let sql = insert_statement(2);
        assert!(sql.ends_with(&format!("${})", 2 * COLUMN_COUNT)));
        assert_eq!(sql.matches('$').count(), 2 * COLUMN_COUNT);
        assert_eq!(COLUMNS.split(',').count(), COLUMN_COUNT);
    }
}
