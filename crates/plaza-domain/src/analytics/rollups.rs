//! Rollups: the events pre-counted per 15-minute slice (totals with the
//! sessions starting there, and who was active), per UTC day (the same
//! totals, page views, clicks per heatmap cell) and per session (where and
//! when it started, its page views). The ingest writer adds a batch's
//! counts and the retention purge subtracts a chunk's, each in the transaction that stores or deletes the
//! events, so the rollups never disagree with the events and a dashboard
//! reads thousands of rows instead of millions.

use std::collections::BTreeMap;

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::Tx;
use crate::dialect::Dialect;
use crate::error::DomainError;
use crate::listing::Arg;
use crate::statements::Statements;

/// The length of a slice in milliseconds: 15 minutes divide every time
/// zone's offset, so slices sum into the buckets of any zone.
pub const SLICE_MILLIS: i64 = 900_000;

/// The length of a rollup day in milliseconds (UTC days).
pub const DAY_MILLIS: i64 = 86_400_000;

/// Pixels per side of a heatmap cell.
pub const HEATMAP_CELL: i64 = 20;

/// What a rollup counts of one event, borrowed from a new event or a row
/// about to be purged.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventFacts<'a> {
    pub user_id: i64,
    pub event_type: &'a str,
    pub path: Option<&'a str>,
    pub session_key: Option<&'a str>,
    pub duration_ms: Option<i64>,
    pub click_x: Option<i64>,
    pub click_y: Option<i64>,
    pub device_type: &'a str,
    pub country: Option<&'a str>,
    pub is_vpn: bool,
    pub occurred_at: i64,
}

/// The filterable attributes every rollup row carries.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Dims {
    device_type: String,
    country: String,
    is_vpn: bool,
}

impl Dims {
    fn of(event: &EventFacts<'_>) -> Dims {
        Dims {
            device_type: event.device_type.to_owned(),
            country: event.country.unwrap_or("").to_owned(),
            is_vpn: event.is_vpn,
        }
    }

    fn args(&self) -> [Arg; 3] {
        [
            Arg::Text(self.device_type.clone()),
            Arg::Text(self.country.clone()),
            Arg::Bool(self.is_vpn),
        ]
    }
}

/// What a set of events adds to one session: its start (the earliest
/// event's time and attributes, ties broken by the attributes; `None` when
/// purged events are taken away) and its page views.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SessionDelta {
    start: Option<(i64, Dims)>,
    page_views: i64,
}

/// A session as its rollup row holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SessionState {
    first_at: i64,
    dims: Dims,
    page_views: i64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct SliceTotals {
    events: i64,
    page_views: i64,
    clicks: i64,
    timed_sessions: i64,
    session_millis: i64,
    /// Sessions that start here (at their first event), those of them with
    /// page views, and those with exactly one.
    session_starts: i64,
    viewing_starts: i64,
    bounced_starts: i64,
}

/// The change a set of events makes to the rollups: added when they are
/// stored, subtracted when they are purged. Keys are kept sorted, so
/// concurrent writers touch rows in one order and cannot deadlock.
#[derive(Debug, Default)]
pub(crate) struct RollupDelta {
    slices: BTreeMap<(i64, Dims), SliceTotals>,
    days: BTreeMap<(i64, Dims), SliceTotals>,
    visits: BTreeMap<(i64, i64, String, Dims), (i64, i64)>,
    pages: BTreeMap<(i64, String, Dims), i64>,
    clicks: BTreeMap<(i64, String, i64, i64, Dims), i64>,
    sessions: BTreeMap<(i64, String), SessionDelta>,
    /// Events are taken away: the sessions they belong to end.
    purging: bool,
}

impl RollupDelta {
    /// Counts `event` once, `sign` 1 to add it or -1 to take it away.
    pub(crate) fn count(&mut self, event: EventFacts<'_>, sign: i64) {
        let dims = Dims::of(&event);
        // Truncating division, as SQL's: stored times are never negative.
        let slice = event.occurred_at / SLICE_MILLIS;
        let day = event.occurred_at / DAY_MILLIS;
        let page_view = i64::from(event.event_type == "page_view");
        let click = event.event_type == "button_click";
        let timed = match (event.event_type, event.duration_ms) {
            ("session_end", Some(millis)) => Some(millis),
            _ => None,
        };
        for totals in [
            self.slices.entry((slice, dims.clone())).or_default(),
            self.days.entry((day, dims.clone())).or_default(),
        ] {
            totals.events += sign;
            totals.page_views += sign * page_view;
            totals.clicks += sign * i64::from(click);
            if let Some(millis) = timed {
                totals.timed_sessions += sign;
                totals.session_millis += sign * millis;
            }
        }
        if let Some(key) = event.session_key.filter(|key| !key.is_empty()) {
            let start = (sign > 0).then(|| (event.occurred_at, dims.clone()));
            let session = self
                .sessions
                .entry((event.user_id, key.to_owned()))
                .or_insert_with(|| SessionDelta {
                    start: start.clone(),
                    page_views: 0,
                });
            session.start = match (session.start.take(), start) {
                (Some(known), Some(new)) => Some(known.min(new)),
                (known, new) => known.or(new),
            };
            session.page_views += sign * page_view;
        }
        self.purging |= sign < 0;
        let visit = self
            .visits
            .entry((
                slice,
                event.user_id,
                event.session_key.unwrap_or("").to_owned(),
                dims.clone(),
            ))
            .or_default();
        visit.0 += sign;
        visit.1 += sign * page_view;
        if let Some(path) = event.path {
            if page_view == 1 {
                *self
                    .pages
                    .entry((day, path.to_owned(), dims.clone()))
                    .or_default() += sign;
            }
            if let (true, Some(x), Some(y)) = (click, event.click_x, event.click_y) {
                *self
                    .clicks
                    .entry((
                        day,
                        path.to_owned(),
                        x / HEATMAP_CELL,
                        y / HEATMAP_CELL,
                        dims,
                    ))
                    .or_default() += sign;
            }
        }
    }

    /// Writes the change in `tx` after `first` (the statements that store
    /// the events themselves): several rows per statement, each added to
    /// the row of its key or inserted; rows counted down to nothing go. An
    /// ingest batch is two round trips (the events with their sessions'
    /// rows claimed and answered, then every rollup written), a purge chunk
    /// four.
    pub(crate) async fn apply(
        mut self,
        tx: &mut Tx<'_>,
        first: Statements<'_>,
    ) -> Result<(), DomainError> {
        let dialect = Dialect::of(tx);
        let sessions = std::mem::take(&mut self.sessions);
        let (changes, mut writes) = settle_sessions(tx, sessions, self.purging, first).await?;
        for (state, sign) in changes {
            self.count_start(&state, sign);
        }
        let totals_rows = |rows: BTreeMap<(i64, Dims), SliceTotals>| {
            rows.into_iter().map(|((time, dims), totals)| {
                let [device, country, vpn] = dims.args();
                vec![
                    Arg::Int(time),
                    device,
                    country,
                    vpn,
                    Arg::Int(totals.events),
                    Arg::Int(totals.page_views),
                    Arg::Int(totals.clicks),
                    Arg::Int(totals.timed_sessions),
                    Arg::Int(totals.session_millis),
                    Arg::Int(totals.session_starts),
                    Arg::Int(totals.viewing_starts),
                    Arg::Int(totals.bounced_starts),
                ]
            })
        };
        let mut emptied = Vec::new();
        let mut upsert = |table: &'static RollupTable, rows: Vec<Vec<Arg>>| {
            if let Some(latest) = add_upserts(&mut writes, dialect, table, rows) {
                emptied.push((table, latest));
            }
        };
        upsert(&SLICES, totals_rows(self.slices).collect());
        upsert(&DAYS, totals_rows(self.days).collect());
        let visits = self.visits.into_iter().map(
            |((slice, user_id, session_key, dims), (events, views))| {
                let [device, country, vpn] = dims.args();
                vec![
                    Arg::Int(slice),
                    Arg::Int(user_id),
                    Arg::Text(session_key),
                    device,
                    country,
                    vpn,
                    Arg::Int(events),
                    Arg::Int(views),
                ]
            },
        );
        upsert(&VISITS, visits.collect());
        let pages = self.pages.into_iter().map(|((day, path, dims), views)| {
            let [device, country, vpn] = dims.args();
            vec![
                Arg::Int(day),
                Arg::Text(path),
                device,
                country,
                vpn,
                Arg::Int(views),
            ]
        });
        upsert(&PAGES, pages.collect());
        let clicks = self
            .clicks
            .into_iter()
            .map(|((day, path, cell_x, cell_y, dims), clicks)| {
                let [device, country, vpn] = dims.args();
                vec![
                    Arg::Int(day),
                    Arg::Text(path),
                    Arg::Int(cell_x),
                    Arg::Int(cell_y),
                    device,
                    country,
                    vpn,
                    Arg::Int(clicks),
                ]
            });
        upsert(&CLICKS, clicks.collect());
        writes.execute(tx).await?;
        // Only purges subtract, and they take the oldest events: the rows
        // they emptied lie in each key's leading time range up to `latest`.
        let mut removals = Statements::new(dialect);
        for (table, latest) in emptied {
            removals
                .add(&format!(
                    "DELETE FROM {} WHERE {} <= $1 AND {} <= 0",
                    table.name, table.keys[0], table.counters[0]
                ))
                .bind(latest);
        }
        removals.execute(tx).await
    }

    /// Counts `session` as starting in its slice and day (`sign` 1), or no
    /// longer (-1).
    fn count_start(&mut self, session: &SessionState, sign: i64) {
        let slice = session.first_at / SLICE_MILLIS;
        let day = session.first_at / DAY_MILLIS;
        for totals in [
            self.slices
                .entry((slice, session.dims.clone()))
                .or_default(),
            self.days.entry((day, session.dims.clone())).or_default(),
        ] {
            totals.session_starts += sign;
            totals.viewing_starts += sign * i64::from(session.page_views > 0);
            totals.bounced_starts += sign * i64::from(session.page_views == 1);
        }
    }
}

/// Brings the sessions of `sessions` up to date in their rollup rows and
/// answers how their starts change: each session's old start taken away
/// (-1) and its new one counted (1). New events move a start earlier and
/// add page views; purged events end their session (it began before the
/// retention window), so its row goes and its start is no longer counted.
///
/// New events claim their sessions' rows with `first`, in the same round
/// trip: one upsert inserts the missing rows as unsettled and locks the
/// others with an update that changes nothing, and answers every row as it
/// stands (PostgreSQL's `RETURNING` gives the latest committed row it
/// waited for, not the statement's snapshot). So two instances' writers
/// that meet one new session take turns instead of both counting it as
/// new. Purged events read their rows locked after `first`. The sessions'
/// writes come back, to run with the other rollups'.
async fn settle_sessions(
    tx: &mut Tx<'_>,
    sessions: BTreeMap<(i64, String), SessionDelta>,
    purging: bool,
    mut first: Statements<'_>,
) -> Result<(Vec<(SessionState, i64)>, Statements<'static>), DomainError> {
    let mut changes = Vec::new();
    let dialect = Dialect::of(tx);
    let mut writes = Statements::new(dialect);
    if sessions.is_empty() {
        first.execute(tx).await?;
        return Ok((changes, writes));
    }
    let keys: Vec<&(i64, String)> = sessions.keys().collect();
    let mut stored = if purging {
        first.execute(tx).await?;
        read_sessions(tx, dialect, &keys).await?
    } else {
        let claims: Vec<_> = sessions
            .iter()
            .filter_map(|(key, delta)| {
                let (first_at, dims) = delta.start.clone()?;
                let claim = SessionState {
                    first_at,
                    dims,
                    page_views: UNSETTLED,
                };
                Some((key, claim))
            })
            .collect();
        write_sessions(&mut first, dialect, &claims, SessionWrite::Claim);
        first
            .fetch_all(tx)
            .await?
            .iter()
            .map(session_row)
            .collect::<Result<_, _>>()?
    };
    let mut settled = Vec::new();
    for (key, delta) in &sessions {
        let old = stored.remove(key).filter(|old| old.page_views != UNSETTLED);
        if let Some(old) = &old {
            changes.push((old.clone(), -1));
        }
        if purging {
            continue;
        }
        let Some(start) = delta.start.clone() else {
            continue;
        };
        let new = match old {
            Some(old) => {
                let (first_at, dims) = (old.first_at, old.dims).min(start);
                SessionState {
                    first_at,
                    dims,
                    page_views: old.page_views + delta.page_views,
                }
            }
            None => SessionState {
                first_at: start.0,
                dims: start.1,
                page_views: delta.page_views,
            },
        };
        changes.push((new.clone(), 1));
        settled.push((key, new));
    }
    if purging {
        delete_sessions(&mut writes, dialect, &keys);
    } else {
        write_sessions(&mut writes, dialect, &settled, SessionWrite::Settle);
    }
    Ok((changes, writes))
}

/// The page views of a session row claimed but not yet settled: never
/// left after a commit.
const UNSETTLED: i64 = -1;

/// What [`write_sessions`] does to a session's row already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SessionWrite {
    /// Locks it, changing nothing, and answers it (the new rows too).
    Claim,
    /// Replaces it.
    Settle,
}

/// The columns of a session row, in the order [`session_row`] reads them.
const SESSION_COLUMNS: &str =
    "user_id, session_key, first_at, device_type, country, is_vpn, page_views";

/// Adds the statements that insert the sessions' rows.
fn write_sessions(
    statements: &mut Statements<'_>,
    dialect: Dialect,
    rows: &[(&(i64, String), SessionState)],
    write: SessionWrite,
) {
    const COLUMNS: usize = 7;
    for chunk in rows.chunks((dialect.values_per_statement() / COLUMNS).max(1)) {
        let mut sql = format!("INSERT INTO analytics_rollup_sessions ({SESSION_COLUMNS}) VALUES ");
        super::push_value_rows(&mut sql, chunk.len(), COLUMNS);
        sql.push_str(" ON CONFLICT (user_id, session_key) DO UPDATE SET ");
        match write {
            SessionWrite::Claim => {
                sql.push_str(&format!(
                    "page_views = analytics_rollup_sessions.page_views RETURNING {SESSION_COLUMNS}"
                ));
                statements.add_returning(&sql);
            }
            SessionWrite::Settle => {
                sql.push_str(
                    "first_at = excluded.first_at, device_type = excluded.device_type, \
                     country = excluded.country, is_vpn = excluded.is_vpn, \
                     page_views = excluded.page_views",
                );
                statements.add(&sql);
            }
        }
        for ((user_id, session_key), session) in chunk {
            statements
                .bind(*user_id)
                .bind(session_key.clone())
                .bind(session.first_at)
                .bind(session.dims.device_type.clone())
                .bind(session.dims.country.clone())
                .bind(session.dims.is_vpn)
                .bind(session.page_views);
        }
    }
}

/// `(user_id, session_key) IN (VALUES …)` for `rows` keys, numbered from $1.
fn session_keys_condition(rows: usize) -> String {
    let mut sql = "(user_id, session_key) IN (VALUES ".to_owned();
    super::push_value_rows(&mut sql, rows, 2);
    sql.push(')');
    sql
}

fn bind_keys<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    keys: &[&'q (i64, String)],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for (user_id, session_key) in keys {
        query = query.bind(*user_id).bind(session_key.as_str());
    }
    query
}

/// The stored rows of `keys`, locked until the commit, in key order (as
/// every writer locks them, so two cannot deadlock).
async fn read_sessions(
    tx: &mut Tx<'_>,
    dialect: Dialect,
    keys: &[&(i64, String)],
) -> Result<BTreeMap<(i64, String), SessionState>, DomainError> {
    let mut stored = BTreeMap::new();
    for chunk in keys.chunks((dialect.values_per_statement() / 2).max(1)) {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM analytics_rollup_sessions WHERE {} \
             ORDER BY user_id, session_key{}",
            session_keys_condition(chunk.len()),
            dialect.for_update()
        );
        for row in bind_keys(sqlx::query(&sql), chunk)
            .fetch_all(&mut **tx)
            .await?
        {
            let (key, state) = session_row(&row)?;
            stored.insert(key, state);
        }
    }
    Ok(stored)
}

fn session_row(row: &AnyRow) -> Result<((i64, String), SessionState), DomainError> {
    let vpn: crate::flag::Flag = row.try_get(5)?;
    Ok((
        (row.try_get(0)?, row.try_get(1)?),
        SessionState {
            first_at: row.try_get(2)?,
            dims: Dims {
                device_type: row.try_get(3)?,
                country: row.try_get(4)?,
                is_vpn: vpn.0,
            },
            page_views: row.try_get(6)?,
        },
    ))
}

fn delete_sessions(statements: &mut Statements<'_>, dialect: Dialect, keys: &[&(i64, String)]) {
    for chunk in keys.chunks((dialect.values_per_statement() / 2).max(1)) {
        statements.add(&format!(
            "DELETE FROM analytics_rollup_sessions WHERE {}",
            session_keys_condition(chunk.len())
        ));
        for (user_id, session_key) in chunk {
            statements.bind(*user_id).bind(session_key.clone());
        }
    }
}

/// One rollup table: its key columns (the time first) and its counter
/// columns (the first one reaches zero exactly when the row counts nothing).
struct RollupTable {
    name: &'static str,
    keys: &'static [&'static str],
    counters: &'static [&'static str],
}

const SLICES: RollupTable = RollupTable {
    name: "analytics_rollup_slices",
    keys: &["slice", "device_type", "country", "is_vpn"],
    counters: &[
        "events",
        "page_views",
        "clicks",
        "timed_sessions",
        "session_millis",
        "session_starts",
        "viewing_starts",
        "bounced_starts",
    ],
};

/// The slices' totals per UTC day: a long period's totals read a row per
/// day instead of 96.
const DAYS: RollupTable = RollupTable {
    name: "analytics_rollup_days",
    keys: &["day", "device_type", "country", "is_vpn"],
    counters: SLICES.counters,
};

const VISITS: RollupTable = RollupTable {
    name: "analytics_rollup_visits",
    keys: &[
        "slice",
        "user_id",
        "session_key",
        "device_type",
        "country",
        "is_vpn",
    ],
    counters: &["events", "page_views"],
};

const PAGES: RollupTable = RollupTable {
    name: "analytics_rollup_pages",
    keys: &["day", "path", "device_type", "country", "is_vpn"],
    counters: &["views"],
};

const CLICKS: RollupTable = RollupTable {
    name: "analytics_rollup_clicks",
    keys: &[
        "day",
        "path",
        "cell_x",
        "cell_y",
        "device_type",
        "country",
        "is_vpn",
    ],
    counters: &["clicks"],
};

const TABLES: [&RollupTable; 5] = [&SLICES, &DAYS, &VISITS, &PAGES, &CLICKS];

/// Adds the statements that add `rows` (key values then counter values, in
/// the table's column order) to `table`, and answers the latest time of a
/// row they subtract from, whose emptied rows are then removed.
fn add_upserts(
    statements: &mut Statements<'_>,
    dialect: Dialect,
    table: &RollupTable,
    rows: Vec<Vec<Arg>>,
) -> Option<i64> {
    let columns = table.keys.len() + table.counters.len();
    let rows_per_statement = (dialect.values_per_statement() / columns).max(1);
    let mut latest_emptied = None;
    for chunk in rows.chunks(rows_per_statement) {
        statements.add(&upsert_statement(table, chunk.len()));
        for row in chunk {
            if let (Some(Arg::Int(time)), Some(Arg::Int(first))) =
                (row.first(), row.get(table.keys.len()))
                && *first < 0
            {
                latest_emptied = latest_emptied.max(Some(*time));
            }
            for value in row {
                match value.clone() {
                    Arg::Int(number) => statements.bind(number),
                    Arg::Text(text) => statements.bind(text),
                    Arg::Bool(flag) => statements.bind(flag),
                };
            }
        }
    }
    latest_emptied
}

fn upsert_statement(table: &RollupTable, rows: usize) -> String {
    let columns = table.keys.len() + table.counters.len();
    let mut sql = format!(
        "INSERT INTO {} ({}, {}) VALUES ",
        table.name,
        table.keys.join(", "),
        table.counters.join(", ")
    );
    super::push_value_rows(&mut sql, rows, columns);
    let updates = table
        .counters
        .iter()
        .map(|counter| format!("{counter} = {}.{counter} + excluded.{counter}", table.name))
        .collect::<Vec<_>>()
        .join(", ");
    sql.push_str(&format!(
        " ON CONFLICT ({}) DO UPDATE SET {updates}",
        table.keys.join(", ")
    ));
    sql
}

/// The day rollup summed from the slice rollup (96 slices a day).
const DAYS_FROM_SLICES: &str = "INSERT INTO analytics_rollup_days \
     (day, device_type, country, is_vpn, events, page_views, clicks, timed_sessions, \
     session_millis, session_starts, viewing_starts, bounced_starts) \
     SELECT slice / 96, device_type, country, is_vpn, SUM(events), SUM(page_views), SUM(clicks), \
     SUM(timed_sessions), SUM(session_millis), SUM(session_starts), SUM(viewing_starts), \
     SUM(bounced_starts) FROM analytics_rollup_slices GROUP BY 1, 2, 3, 4";

/// Counts every stored event again from scratch, in one transaction: for
/// events loaded around the writer (a restore, a bulk import). Sessions
/// start again at their first event still stored.
pub(crate) async fn rebuild(tx: &mut Tx<'_>) -> Result<(), DomainError> {
    for table in TABLES {
        sqlx::query(&format!("DELETE FROM {}", table.name))
            .execute(&mut **tx)
            .await?;
    }
    sqlx::query("DELETE FROM analytics_rollup_sessions")
        .execute(&mut **tx)
        .await?;
    let order = Dialect::of(tx).byte_order();
    let sessions = format!(
        "INSERT INTO analytics_rollup_sessions \
         (user_id, session_key, first_at, device_type, country, is_vpn, page_views) \
         SELECT user_id, session_key, occurred_at, device_type, country, is_vpn, page_views \
         FROM (SELECT user_id, session_key, occurred_at, device_type, \
         COALESCE(country, '') AS country, is_vpn, \
         ROW_NUMBER() OVER (PARTITION BY user_id, session_key ORDER BY occurred_at, \
         device_type{order}, COALESCE(country, ''){order}, is_vpn) AS position, \
         SUM(CASE WHEN event_type = 'page_view' THEN 1 ELSE 0 END) \
         OVER (PARTITION BY user_id, session_key) AS page_views \
         FROM analytics_events WHERE session_key <> '') AS ordered WHERE position = 1"
    );
    for statement in [sessions.as_str()]
        .into_iter()
        .chain(REBUILD)
        .chain([DAYS_FROM_SLICES])
    {
        sqlx::query(statement).execute(&mut **tx).await?;
    }
    Ok(())
}

/// The rollups of the stored events, one statement per table (the same
/// counting as [`RollupDelta::count`]), after the sessions, whose starts
/// the slices count; the days are summed from the slices last.
const REBUILD: [&str; 4] = [
    "INSERT INTO analytics_rollup_slices \
     (slice, device_type, country, is_vpn, events, page_views, clicks, timed_sessions, \
     session_millis, session_starts, viewing_starts, bounced_starts) \
     SELECT totals.slice, totals.device_type, totals.country, totals.is_vpn, events, page_views, \
     clicks, timed_sessions, session_millis, COALESCE(starts.sessions, 0), \
     COALESCE(starts.viewing, 0), COALESCE(starts.bounced, 0) FROM (\
     SELECT occurred_at / 900000 AS slice, device_type, COALESCE(country, '') AS country, \
     is_vpn, COUNT(*) AS events, \
     SUM(CASE WHEN event_type = 'page_view' THEN 1 ELSE 0 END) AS page_views, \
     SUM(CASE WHEN event_type = 'button_click' THEN 1 ELSE 0 END) AS clicks, \
     SUM(CASE WHEN event_type = 'session_end' AND duration_ms IS NOT NULL THEN 1 ELSE 0 END) \
     AS timed_sessions, \
     COALESCE(SUM(CASE WHEN event_type = 'session_end' THEN duration_ms END), 0) \
     AS session_millis FROM analytics_events GROUP BY 1, 2, 3, 4) AS totals \
     LEFT JOIN (SELECT first_at / 900000 AS slice, device_type, country, is_vpn, \
     COUNT(*) AS sessions, SUM(CASE WHEN page_views > 0 THEN 1 ELSE 0 END) AS viewing, \
     SUM(CASE WHEN page_views = 1 THEN 1 ELSE 0 END) AS bounced \
     FROM analytics_rollup_sessions GROUP BY 1, 2, 3, 4) AS starts \
     ON starts.slice = totals.slice AND starts.device_type = totals.device_type \
     AND starts.country = totals.country AND starts.is_vpn = totals.is_vpn",
    "INSERT INTO analytics_rollup_visits \
     (slice, user_id, session_key, device_type, country, is_vpn, events, page_views) \
     SELECT occurred_at / 900000, user_id, COALESCE(session_key, ''), device_type, \
     COALESCE(country, ''), is_vpn, COUNT(*), \
     SUM(CASE WHEN event_type = 'page_view' THEN 1 ELSE 0 END) \
     FROM analytics_events GROUP BY 1, 2, 3, 4, 5, 6",
    "INSERT INTO analytics_rollup_pages (day, path, device_type, country, is_vpn, views) \
     SELECT occurred_at / 86400000, path, device_type, COALESCE(country, ''), is_vpn, COUNT(*) \
     FROM analytics_events WHERE event_type = 'page_view' AND path IS NOT NULL \
     GROUP BY 1, 2, 3, 4, 5",
    "INSERT INTO analytics_rollup_clicks \
     (day, path, cell_x, cell_y, device_type, country, is_vpn, clicks) \
     SELECT occurred_at / 86400000, path, click_x / 20, click_y / 20, device_type, \
     COALESCE(country, ''), is_vpn, COUNT(*) FROM analytics_events \
     WHERE event_type = 'button_click' AND path IS NOT NULL \
     AND click_x IS NOT NULL AND click_y IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6, 7",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event_type: &str, occurred_at: i64) -> EventFacts<'_> {
        EventFacts {
            user_id: 7,
            event_type,
            path: Some("/a"),
            session_key: Some("s"),
            duration_ms: Some(1_000),
            click_x: Some(45),
            click_y: Some(-5),
            device_type: "mobile",
            country: None,
            is_vpn: false,
            occurred_at,
        }
    }

    #[test]
    fn adding_then_subtracting_leaves_every_row_at_zero() {
        let mut delta = RollupDelta::default();
        for (kind, at) in [("page_view", 0), ("button_click", 1), ("session_end", 2)] {
            delta.count(event(kind, at), 1);
        }
        let totals = delta.slices.values().next().copied().unwrap();
        assert_eq!(
            totals,
            SliceTotals {
                events: 3,
                page_views: 1,
                clicks: 1,
                timed_sessions: 1,
                session_millis: 1_000,
                ..SliceTotals::default()
            }
        );
        assert_eq!(delta.visits.values().next(), Some(&(3, 1)));
        let cell = delta.clicks.keys().next().unwrap();
        assert_eq!((cell.2, cell.3), (2, 0));
        for (kind, at) in [("page_view", 0), ("button_click", 1), ("session_end", 2)] {
            delta.count(event(kind, at), -1);
        }
        assert_eq!(delta.slices.values().next(), Some(&SliceTotals::default()));
        assert!(delta.pages.values().all(|views| *views == 0));
    }

    #[test]
    fn the_upsert_adds_every_counter_and_numbers_every_value_once() {
        let sql = upsert_statement(&PAGES, 2);
        assert_eq!(sql.matches('$').count(), 12);
        assert!(sql.contains("ON CONFLICT (day, path, device_type, country, is_vpn)"));
        assert!(sql.ends_with("views = analytics_rollup_pages.views + excluded.views"));
    }
}
