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
use crate::dialect::Dialect;
use crate::error::DomainError;
use crate::flag::Flag;
use crate::listing::{Arg, bind_all};
use crate::statements::Statements;

mod dashboard;
mod rollups;

use dashboard::Scope;
pub use dashboard::{
    CountryCount, DashboardOverview, DimensionTotals, DistinctUsers, EventFilter, HeatCell,
    PageViews, TrendSlice, countries, device_events,
};
pub use rollups::{DAY_MILLIS, HEATMAP_CELL, SLICE_MILLIS};
use rollups::{EventFacts, RollupDelta};

/// Slices in a UTC day.
const SLICES_PER_DAY: i64 = DAY_MILLIS / SLICE_MILLIS;

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

/// The `event_data` keys the admin views read as text: free text, stored
/// as sent, but without control characters (DECISIONS.md "Operations").
const TEXT_KEYS: [&str; 3] = ["path", "session_id", "referrer"];

/// Longest `duration_ms` kept (a day); a longer one is dropped, so sums of
/// durations cannot overflow and one client cannot skew the average.
const MAX_DURATION_MILLIS: i64 = 86_400_000;

/// Checks one event (SPEC.md "Analytics event"): an object with a string
/// `event_type` of the allowed set, an object `event_data` within the size
/// limit, and an RFC 3339 `timestamp` inside the retention window and not
/// ahead of `now` by more than the allowed skew; and `event_data`'s
/// `path`, `session_id` and `referrer`, when strings, without control
/// characters. `field_prefix` names the event in a batch (`events.3.`).
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
    if let Some(key) = TEXT_KEYS.iter().find(|key| {
        data.get(**key)
            .and_then(Value::as_str)
            .is_some_and(|text| text.chars().any(char::is_control))
    }) {
        return Err(EventProblem::new(
            field(&format!("event_data.{key}")),
            "must not contain control characters (U+0000 to U+001F, U+007F to U+009F)",
        ));
    }
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
        duration_ms: whole_number(data, "duration_ms")
            .filter(|ms| (0..=MAX_DURATION_MILLIS).contains(ms)),
        click_x: whole_number(data, "x"),
        click_y: whole_number(data, "y"),
        event_data,
        occurred_at,
    })
}

fn short_text(data: &Map<String, Value>, key: &str) -> Option<String> {
    let text = data.get(key)?.as_str().filter(|text| !text.is_empty())?;
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
/// trips, and adds them to the rollups.
pub async fn insert(tx: &mut Tx<'_>, events: &[NewEvent]) -> Result<(), DomainError> {
    let dialect = Dialect::of(tx);
    let rows_per_statement = (dialect.values_per_statement() / COLUMN_COUNT).max(1);
    let mut statements = Statements::new(dialect);
    for chunk in events.chunks(rows_per_statement) {
        statements.add(&insert_statement(chunk.len()));
        for event in chunk {
            statements
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
    }
    let mut delta = RollupDelta::default();
    for event in events {
        delta.count(event.facts(), 1);
    }
    delta.apply(tx, statements).await
}

impl NewEvent {
    fn facts(&self) -> EventFacts<'_> {
        EventFacts {
            user_id: self.user_id,
            event_type: &self.event_type,
            path: self.path.as_deref(),
            session_key: self.session_key.as_deref(),
            duration_ms: self.duration_ms,
            click_x: self.click_x,
            click_y: self.click_y,
            device_type: self.device_type,
            country: self.country.as_deref(),
            is_vpn: self.is_vpn,
            occurred_at: self.occurred_at,
        }
    }
}

/// Appends `rows` parenthesised rows of `columns` numbered placeholders
/// (`($1, $2), ($3, $4)`), the `VALUES` of a multi-row insert.
fn push_value_rows(sql: &mut String, rows: usize, columns: usize) {
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for column in 0..columns {
            if column > 0 {
                sql.push_str(", ");
            }
            sql.push('$');
            sql.push_str(&(row * columns + column + 1).to_string());
        }
        sql.push(')');
    }
}

fn insert_statement(rows: usize) -> String {
    let mut sql = format!("INSERT INTO analytics_events ({COLUMNS}) VALUES ");
    push_value_rows(&mut sql, rows, COLUMN_COUNT);
    sql
}

/// Deletes up to `chunk` events that occurred before `cutoff` (Unix
/// milliseconds), oldest first, takes them out of the rollups, and answers
/// how many went. The retention job calls it until it answers fewer than
/// `chunk`, one short transaction each, so writers wait at most one chunk's
/// time.
pub async fn purge_before(tx: &mut Tx<'_>, cutoff: i64, chunk: i64) -> Result<u64, DomainError> {
    let purged: Vec<PurgedEvent> = sqlx::query_as(
        "DELETE FROM analytics_events WHERE id IN \
         (SELECT id FROM analytics_events WHERE occurred_at < $1 ORDER BY occurred_at LIMIT $2) \
         RETURNING user_id, event_type, path, session_key, duration_ms, click_x, click_y, \
         device_type, country, is_vpn, occurred_at",
    )
    .bind(cutoff)
    .bind(chunk)
    .fetch_all(&mut **tx)
    .await?;
    let mut delta = RollupDelta::default();
    for event in &purged {
        delta.count(event.facts(), -1);
    }
    delta.apply(tx, Statements::new(Dialect::of(tx))).await?;
    Ok(purged.len() as u64)
}

/// Deletes, in `tx`, up to `chunk` of `user_id`'s events, takes them out of
/// the rollups (their sessions end, as in a purge) and answers how many
/// went: an erasure calls it until it answers fewer than `chunk`.
pub async fn erase_user_events(
    tx: &mut Tx<'_>,
    user_id: i64,
    chunk: i64,
) -> Result<u64, DomainError> {
    let erased: Vec<PurgedEvent> = sqlx::query_as(
        "DELETE FROM analytics_events WHERE id IN \
         (SELECT id FROM analytics_events WHERE user_id = $1 ORDER BY id LIMIT $2) \
         RETURNING user_id, event_type, path, session_key, duration_ms, click_x, click_y, \
         device_type, country, is_vpn, occurred_at",
    )
    .bind(user_id)
    .bind(chunk)
    .fetch_all(&mut **tx)
    .await?;
    let mut delta = RollupDelta::default();
    for event in &erased {
        delta.count(event.facts(), -1);
    }
    delta.apply(tx, Statements::new(Dialect::of(tx))).await?;
    Ok(erased.len() as u64)
}

/// One stored event as its user's export shows it: what they sent and what
/// the server added, but the keyed hash of their address.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredEvent {
    pub id: i64,
    pub event_id: String,
    pub event_type: String,
    /// The event's data as stored (a JSON object).
    pub event_data: String,
    pub path: Option<String>,
    pub session_key: Option<String>,
    pub duration_ms: Option<i64>,
    pub click_x: Option<i64>,
    pub click_y: Option<i64>,
    pub device_type: String,
    pub country: Option<String>,
    pub is_vpn: Flag,
    pub occurred_at: i64,
    pub received_at: i64,
}

impl crate::Database {
    /// A page of `user_id`'s events in the order they were stored, after
    /// the event `after_id`.
    pub async fn events_of_user(
        &self,
        user_id: i64,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<StoredEvent>, DomainError> {
        Ok(sqlx::query_as(
            "SELECT id, event_id, event_type, event_data, path, session_key, duration_ms, \
             click_x, click_y, device_type, country, is_vpn, occurred_at, received_at \
             FROM analytics_events WHERE user_id = $1 AND id > $2 ORDER BY id LIMIT $3",
        )
        .bind(user_id)
        .bind(after_id)
        .bind(limit)
        .fetch_all(&mut *self.lease().await?)
        .await?)
    }
}

/// What a purge deleted, as much as the rollups counted of it.
#[derive(Debug, sqlx::FromRow)]
struct PurgedEvent {
    user_id: i64,
    event_type: String,
    path: Option<String>,
    session_key: Option<String>,
    duration_ms: Option<i64>,
    click_x: Option<i64>,
    click_y: Option<i64>,
    device_type: String,
    country: Option<String>,
    is_vpn: Flag,
    occurred_at: i64,
}

impl PurgedEvent {
    fn facts(&self) -> EventFacts<'_> {
        EventFacts {
            user_id: self.user_id,
            event_type: &self.event_type,
            path: self.path.as_deref(),
            session_key: self.session_key.as_deref(),
            duration_ms: self.duration_ms,
            click_x: self.click_x,
            click_y: self.click_y,
            device_type: &self.device_type,
            country: self.country.as_deref(),
            is_vpn: self.is_vpn.0,
            occurred_at: self.occurred_at,
        }
    }
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

    /// Counts every stored event into the rollups again, from scratch: for
    /// events loaded around the writer (a restore, a bulk import, a
    /// benchmark's seed).
    pub async fn rebuild_analytics_rollups(&self) -> Result<(), DomainError> {
        self.write(|tx| Box::pin(async move { rollups::rebuild(tx).await }))
            .await
    }

    /// Events stored now.
    #[cfg(feature = "testing")]
    pub async fn analytics_event_count(&self) -> Result<i64, DomainError> {
        let mut lease = self.lease().await?;
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM analytics_events")
            .fetch_one(&mut *lease)
            .await?)
    }

    /// Which of `event_ids` are stored: how a client (or the durability
    /// test) checks that acknowledged events were kept.
    #[cfg(feature = "testing")]
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
    /// Unix milliseconds: one round trip of index range scans, the events'
    /// part read from the rollups but for the period's ragged ends.
    pub async fn platform_figures(
        &self,
        since: i64,
        until: i64,
    ) -> Result<PlatformFigures, DomainError> {
        let events = EventFilter {
            since,
            until,
            include_vpn: true,
            ..EventFilter::default()
        };
        let Scope {
            whole, ends, args, ..
        } = events.scope(SLICE_MILLIS, "slice");
        let mut args = args;
        let (from, to) = (args.push(Arg::Int(since)), args.push(Arg::Int(until)));
        let created = format!("created_at >= {from} AND created_at < {to}");
        let sql = format!(
            "SELECT \
             (SELECT COUNT(*) FROM users), \
             (SELECT COUNT(*) FROM (\
                SELECT user_id FROM sign_ins WHERE {created} \
                UNION SELECT user_id FROM analytics_rollup_visits WHERE {whole} \
                UNION SELECT user_id FROM analytics_events WHERE {ends} \
                UNION SELECT author_id FROM posts WHERE {created}) AS active), \
             (SELECT COUNT(*) FROM users WHERE {created}), \
             (SELECT COUNT(*) FROM users WHERE created_at < {from}), \
             (SELECT CAST(COALESCE(SUM(total), 0) AS BIGINT) FROM post_counts WHERE scope LIKE '%published:%'), \
             (SELECT COUNT(*) FROM posts WHERE {created}), \
             (SELECT COUNT(DISTINCT target_id) FROM audit_log \
                WHERE action LIKE 'post.moderate.%' AND {created}), \
             (SELECT CAST(COALESCE(SUM(total), 0) AS BIGINT) FROM post_counts WHERE scope LIKE '%:flagged'), \
             (SELECT CAST(SUM(millis) AS DOUBLE PRECISION) / NULLIF(SUM(timed), 0) FROM (\
                SELECT session_millis AS millis, timed_sessions AS timed FROM analytics_rollup_slices \
                WHERE {whole} \
                UNION ALL SELECT duration_ms, 1 FROM analytics_events WHERE {ends} \
                AND event_type = 'session_end' AND duration_ms IS NOT NULL) AS timed), \
             (SELECT COUNT(*) FROM (\
                SELECT user_id, created_at / {DAY_MILLIS} AS day FROM sign_ins WHERE {created} \
                UNION SELECT user_id, slice / {SLICES_PER_DAY} FROM analytics_rollup_visits WHERE {whole} \
                UNION SELECT user_id, occurred_at / {DAY_MILLIS} FROM analytics_events WHERE {ends} \
                UNION SELECT author_id, created_at / {DAY_MILLIS} FROM posts WHERE {created}) AS days)"
        );
        let row = bind_all(
            sqlx::query_as::<_, (i64, i64, i64, i64, i64, i64, i64, i64, Option<f64>, i64)>(&sql),
            args.into_vec(),
        )
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
    fn text_keys_with_control_characters_are_refused_and_others_kept_as_sent() {
        for key in TEXT_KEYS {
            for control in ['\0', '\t', '\n', '\r', '\u{1b}', '\u{7f}', '\u{85}'] {
                let event = json!({
                    "event_type": "page_view",
                    "event_data": {key: format!("/a{control}b")},
                    "timestamp": at(NOW),
                });
                let refused = validate(&event, &rules(), NOW, "events.1.").unwrap_err();
                assert_eq!(
                    refused.field,
                    format!("events.1.event_data.{key}"),
                    "{control:?}"
                );
            }
        }
        let free_text = json!({
            "event_type": "page_view",
            "event_data": {
                "path": "=HYPERLINK(\"http://x\")",
                "session_id": "@SUM(1)",
                "referrer": "-2+3",
                "note": "\u{0}",
            },
            "timestamp": at(NOW),
        });
        let valid = validate(&free_text, &rules(), NOW, "").unwrap();
        assert_eq!(valid.path.as_deref(), Some("=HYPERLINK(\"http://x\")"));
        assert_eq!(valid.session_key.as_deref(), Some("@SUM(1)"));
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
