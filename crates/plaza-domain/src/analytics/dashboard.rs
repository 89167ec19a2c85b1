//! The dashboards' queries. Each reads the whole days or slices of its
//! period from the rollups and only the ragged ends of the period (less than
//! a slice or a day at either side) from the events (and, for the sessions
//! starting there, the session rollup), so its cost follows the number of
//! rollup rows, not of events.

use std::collections::{BTreeMap, HashMap};

use crate::error::DomainError;
use crate::listing::{Arg, Args, bind_all};

use super::rollups::{DAY_MILLIS, HEATMAP_CELL, SLICE_MILLIS};

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

/// The SQL conditions of one query over a period: `whole` selects the
/// rollup rows of the whole units (slices or days) inside it, `ends` the
/// events of its ragged ends, `dims` the filters (the same columns in the
/// rollups and the events). Placeholders are numbered in `args`.
pub(super) struct Scope {
    pub whole: String,
    pub ends: String,
    pub dims: String,
    pub args: Args,
}

/// A half-open range `from..to`, of units or of milliseconds.
type Span = (i64, i64);

/// How `since..until` splits over units of `grain` milliseconds: the whole
/// units `first..end` (none if empty) and the millisecond ranges left.
fn split(since: i64, until: i64, grain: i64) -> (Option<Span>, Vec<Span>) {
    let first = since.div_euclid(grain) + i64::from(since.rem_euclid(grain) != 0);
    let end = until.div_euclid(grain);
    if first >= end {
        return (
            None,
            vec![(since, until)]
                .into_iter()
                .filter(|(a, b)| a < b)
                .collect(),
        );
    }
    let ends = [(since, first * grain), (end * grain, until)]
        .into_iter()
        .filter(|(a, b)| a < b)
        .collect();
    (Some((first, end)), ends)
}

impl EventFilter {
    /// The filters as one condition on the columns the rollups and the
    /// events share (country, device type, VPN flag).
    fn dimension_conditions(&self, args: &mut Args) -> String {
        let mut dims = vec!["1 = 1".to_owned()];
        if let Some(country) = &self.country {
            dims.push(format!(
                "country = {}",
                args.push(Arg::Text(country.clone()))
            ));
        }
        if let Some(device) = &self.device_type {
            dims.push(format!(
                "device_type = {}",
                args.push(Arg::Text(device.clone()))
            ));
        }
        if !self.include_vpn {
            dims.push(format!("is_vpn = {}", args.push(Arg::Bool(false))));
        }
        dims.join(" AND ")
    }

    /// The conditions for rollups of `grain` whose time key is `unit`.
    pub(super) fn scope(&self, grain: i64, unit: &str) -> Scope {
        let mut args = Args::default();
        let (whole_units, ends) = split(self.since, self.until, grain);
        let whole = in_spans(unit, whole_units.as_slice(), &mut args);
        let ends = in_spans("occurred_at", &ends, &mut args);
        let dims = self.dimension_conditions(&mut args);
        Scope {
            whole,
            ends,
            dims,
            args,
        }
    }

    /// The conditions for the totals, from three tiers: the whole UTC days
    /// of the period from the day rollup, the whole slices of its partial
    /// days from the slice rollup, and the ragged ends from the events and
    /// the session rollup.
    fn tiered_scope(&self) -> TieredScope {
        let mut args = Args::default();
        let (whole_days, day_ends) = split(self.since, self.until, DAY_MILLIS);
        let mut slices = Vec::new();
        let mut ends = Vec::new();
        for (from, to) in day_ends {
            let (whole, ragged) = split(from, to, SLICE_MILLIS);
            slices.extend(whole);
            ends.extend(ragged);
        }
        TieredScope {
            days: in_spans("day", whole_days.as_slice(), &mut args),
            slices: in_spans("slice", &slices, &mut args),
            starts: in_spans("first_at", &ends, &mut args),
            ends: in_spans("occurred_at", &ends, &mut args),
            dims: self.dimension_conditions(&mut args),
            args,
        }
    }
}

/// A condition that `column` lies in one of `spans` (`1 = 0` for none).
fn in_spans(column: &str, spans: &[Span], args: &mut Args) -> String {
    if spans.is_empty() {
        return "1 = 0".to_owned();
    }
    let ranges: Vec<String> = spans
        .iter()
        .map(|(from, to)| {
            format!(
                "({column} >= {} AND {column} < {})",
                args.push(Arg::Int(*from)),
                args.push(Arg::Int(*to))
            )
        })
        .collect();
    format!("({})", ranges.join(" OR "))
}

/// [`EventFilter::tiered_scope`]: a condition per tier, the filters and
/// their numbered placeholders.
struct TieredScope {
    days: String,
    slices: String,
    ends: String,
    /// The ragged ends again, for the sessions' starts.
    starts: String,
    dims: String,
    args: Args,
}

/// The dashboard's headline figures over the filtered events. A session
/// (one user's `session_id`) counts in the period it starts in (its first
/// event, whose device type, country and VPN flag the filters look at),
/// with the page views of its whole life.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DashboardOverview {
    pub page_views: i64,
    pub clicks: i64,
    pub unique_users: i64,
    /// Mean `duration_ms` of `session_end` events.
    pub average_session_millis: Option<f64>,
    pub vpn_events: i64,
    pub events: i64,
    pub sessions: i64,
    /// Sessions with at least one page view.
    pub viewing_sessions: i64,
    /// Sessions with exactly one page view.
    pub bounced_sessions: i64,
}

/// The period's sums for one device type and country.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimensionTotals {
    pub device_type: String,
    /// `None`: no trusted header named one.
    pub country: Option<String>,
    pub events: i64,
    pub page_views: i64,
    pub clicks: i64,
    pub vpn_events: i64,
    /// `session_end` events with a duration, and their durations' sum.
    pub timed_sessions: i64,
    pub session_millis: i64,
    /// Sessions that started in the period (see [`DashboardOverview`]).
    pub sessions: i64,
    pub viewing_sessions: i64,
    pub bounced_sessions: i64,
}

impl DashboardOverview {
    /// The headline figures from the period's [`DimensionTotals`].
    pub fn of(totals: &[DimensionTotals], unique_users: i64) -> DashboardOverview {
        let add = |field: fn(&DimensionTotals) -> i64| totals.iter().map(field).sum::<i64>();
        let (timed, millis) = (add(|t| t.timed_sessions), add(|t| t.session_millis));
        DashboardOverview {
            page_views: add(|t| t.page_views),
            clicks: add(|t| t.clicks),
            unique_users,
            average_session_millis: (timed > 0).then(|| millis as f64 / timed as f64),
            vpn_events: add(|t| t.vpn_events),
            events: add(|t| t.events),
            sessions: add(|t| t.sessions),
            viewing_sessions: add(|t| t.viewing_sessions),
            bounced_sessions: add(|t| t.bounced_sessions),
        }
    }
}

/// Events by device type, in device order.
pub fn device_events(totals: &[DimensionTotals]) -> Vec<(String, i64)> {
    let mut devices: BTreeMap<&str, i64> = BTreeMap::new();
    for total in totals {
        *devices.entry(&total.device_type).or_default() += total.events;
    }
    devices
        .into_iter()
        .map(|(device, events)| (device.to_owned(), events))
        .collect()
}

/// Events and users by country, most events first, at most `limit`:
/// events from the period's totals, users from
/// [`crate::Database::dashboard_users`].
pub fn countries(
    totals: &[DimensionTotals],
    users: &HashMap<String, i64>,
    limit: usize,
) -> Vec<CountryCount> {
    let mut events: BTreeMap<Option<&str>, i64> = BTreeMap::new();
    for total in totals {
        *events.entry(total.country.as_deref()).or_default() += total.events;
    }
    let mut countries: Vec<CountryCount> = events
        .into_iter()
        .map(|(country, events)| CountryCount {
            users: users.get(country.unwrap_or("")).copied().unwrap_or(0),
            country: country.map(str::to_owned),
            events,
        })
        .collect();
    countries.sort_by(|a, b| b.events.cmp(&a.events).then(a.country.cmp(&b.country)));
    countries.truncate(limit);
    countries
}

/// One 15-minute slice of UTC time (`slice * SLICE_MILLIS` is its start)
/// of the trends: fine enough to be summed into hours, days, weeks or months
/// of any time zone, whose offsets are multiples of 15 minutes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrendSlice {
    pub slice: i64,
    pub page_views: i64,
    /// Sessions that started in it.
    pub sessions: i64,
}

/// Distinct users with events in a period.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DistinctUsers {
    pub all: i64,
    /// Keyed by country code, '' when no trusted header named one.
    pub by_country: HashMap<String, i64>,
}

/// One page's views.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageViews {
    pub path: String,
    pub views: i64,
    /// Distinct users who viewed it.
    pub unique_views: i64,
}

/// Events and users from one country (`None`: no trusted header named it).
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// One event's share of the totals, in the rollups' columns `events,
/// page_views, clicks, vpn_events, timed_sessions, session_millis,
/// session_starts, viewing_starts, bounced_starts, device_type, country`.
const EVENT_TOTALS: &str = "SELECT 1, CASE WHEN event_type = 'page_view' THEN 1 ELSE 0 END, \
     CASE WHEN event_type = 'button_click' THEN 1 ELSE 0 END, CASE WHEN is_vpn THEN 1 ELSE 0 END, \
     CASE WHEN event_type = 'session_end' AND duration_ms IS NOT NULL THEN 1 ELSE 0 END, \
     CASE WHEN event_type = 'session_end' AND duration_ms IS NOT NULL THEN duration_ms ELSE 0 END, \
     0, 0, 0, device_type, COALESCE(country, '')";

/// One session's start, in the same columns.
const SESSION_STARTS: &str = "SELECT 0, 0, 0, 0, 0, 0, 1, \
     CASE WHEN page_views > 0 THEN 1 ELSE 0 END, CASE WHEN page_views = 1 THEN 1 ELSE 0 END, \
     device_type, country";

/// Who was active in the period, from which country: the visit rollup's
/// rows and the raw events in one shape, `user_id, country`.
fn visitors(scope: &Scope) -> String {
    let Scope {
        whole, ends, dims, ..
    } = scope;
    format!(
        "SELECT user_id, country FROM analytics_rollup_visits WHERE {whole} AND {dims} \
         UNION ALL SELECT user_id, COALESCE(country, '') \
         FROM analytics_events WHERE {ends} AND {dims}"
    )
}

/// `SUM` as a BIGINT on both engines (PostgreSQL sums BIGINTs to NUMERIC).
fn sum(expression: &str) -> String {
    format!("CAST(COALESCE(SUM({expression}), 0) AS BIGINT)")
}

impl crate::Database {
    /// The period's sums per device type and country, in one pass over
    /// its days, the slices of its partial days and its ragged ends: the
    /// headline figures, the devices and the countries' events all add
    /// these up.
    pub async fn dashboard_totals(
        &self,
        filter: &EventFilter,
    ) -> Result<Vec<DimensionTotals>, DomainError> {
        let TieredScope {
            days,
            slices,
            ends,
            starts,
            dims,
            args,
        } = filter.tiered_scope();
        let rollup = "SELECT events, page_views, clicks, \
             CASE WHEN is_vpn THEN events ELSE 0 END AS vpn_events, timed_sessions, \
             session_millis, session_starts, viewing_starts, bounced_starts, device_type, country";
        let sql = format!(
            "SELECT device_type, country, {}, {}, {}, {}, {}, {}, {}, {}, {} FROM (\
             {rollup} FROM analytics_rollup_days WHERE {days} AND {dims} \
             UNION ALL {rollup} FROM analytics_rollup_slices WHERE {slices} AND {dims} \
             UNION ALL {EVENT_TOTALS} FROM analytics_events WHERE {ends} AND {dims} \
             UNION ALL {SESSION_STARTS} FROM analytics_rollup_sessions WHERE {starts} AND {dims}\
             ) AS totals GROUP BY device_type, country ORDER BY device_type, country",
            sum("events"),
            sum("page_views"),
            sum("clicks"),
            sum("vpn_events"),
            sum("timed_sessions"),
            sum("session_millis"),
            sum("session_starts"),
            sum("viewing_starts"),
            sum("bounced_starts"),
        );
        type Row = (String, String, i64, i64, i64, i64, i64, i64, i64, i64, i64);
        let rows = bind_all(sqlx::query_as::<_, Row>(&sql), args.into_vec())
            .fetch_all(&mut *self.lease().await?)
            .await?;
        Ok(rows
            .into_iter()
            .map(
                |(
                    device_type,
                    country,
                    events,
                    page_views,
                    clicks,
                    vpn_events,
                    timed,
                    millis,
                    sessions,
                    viewing,
                    bounced,
                )| {
                    DimensionTotals {
                        device_type,
                        country: (!country.is_empty()).then_some(country),
                        events,
                        page_views,
                        clicks,
                        vpn_events,
                        timed_sessions: timed,
                        session_millis: millis,
                        sessions,
                        viewing_sessions: viewing,
                        bounced_sessions: bounced,
                    }
                },
            )
            .collect())
    }

    /// Page views and session starts per 15-minute UTC slice, for the
    /// trends: the slice rollup's whole slices, the events and the session
    /// starts of the ragged ends.
    pub async fn dashboard_trend(
        &self,
        filter: &EventFilter,
    ) -> Result<Vec<TrendSlice>, DomainError> {
        let mut scope = filter.scope(SLICE_MILLIS, "slice");
        let (_, ragged) = split(filter.since, filter.until, SLICE_MILLIS);
        let starts = in_spans("first_at", &ragged, &mut scope.args);
        let Scope {
            whole, ends, dims, ..
        } = &scope;
        let sql = format!(
            "SELECT slice, {}, {} FROM (\
             SELECT page_views, session_starts, slice FROM analytics_rollup_slices \
             WHERE {whole} AND {dims} \
             UNION ALL SELECT CASE WHEN event_type = 'page_view' THEN 1 ELSE 0 END, 0, \
             occurred_at / {SLICE_MILLIS} FROM analytics_events WHERE {ends} AND {dims} \
             UNION ALL SELECT 0, 1, first_at / {SLICE_MILLIS} FROM analytics_rollup_sessions \
             WHERE {starts} AND {dims}) AS trend \
             WHERE page_views > 0 OR session_starts > 0 GROUP BY slice ORDER BY slice",
            sum("page_views"),
            sum("session_starts"),
        );
        let rows = bind_all(
            sqlx::query_as::<_, (i64, i64, i64)>(&sql),
            scope.args.into_vec(),
        )
        .fetch_all(&mut *self.lease().await?)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(slice, page_views, sessions)| TrendSlice {
                slice,
                page_views,
                sessions,
            })
            .collect())
    }

    /// The `limit` most viewed paths. Views come from the day rollups;
    /// distinct viewers, which no rollup can sum, are counted on the events
    /// of those paths alone.
    pub async fn dashboard_top_pages(
        &self,
        filter: &EventFilter,
        limit: i64,
    ) -> Result<Vec<PageViews>, DomainError> {
        let Scope {
            whole,
            ends,
            dims,
            args,
        } = filter.scope(DAY_MILLIS, "day");
        let views_sql = format!(
            "SELECT path, {} AS views FROM (\
             SELECT path, views FROM analytics_rollup_pages WHERE {whole} AND {dims} \
             UNION ALL SELECT path, 1 FROM analytics_events \
             WHERE {ends} AND {dims} AND event_type = 'page_view' AND path IS NOT NULL) AS viewed \
             GROUP BY path ORDER BY views DESC, path LIMIT {limit}",
            sum("views")
        );
        let mut lease = self.lease().await?;
        let top = bind_all(
            sqlx::query_as::<_, (String, i64)>(&views_sql),
            args.into_vec(),
        )
        .fetch_all(&mut *lease)
        .await?;
        if top.is_empty() {
            return Ok(Vec::new());
        }
        let mut args = Args::default();
        let paths: Vec<String> = top
            .iter()
            .map(|(path, _)| args.push(Arg::Text(path.clone())))
            .collect();
        let period = format!(
            "occurred_at >= {} AND occurred_at < {}",
            args.push(Arg::Int(filter.since)),
            args.push(Arg::Int(filter.until))
        );
        let dims = filter.dimension_conditions(&mut args);
        let viewers_sql = format!(
            "SELECT path, COUNT(DISTINCT user_id) FROM analytics_events \
             WHERE event_type = 'page_view' AND path IN ({}) AND {period} AND {dims} \
             GROUP BY path",
            paths.join(", "),
        );
        let viewers: std::collections::HashMap<String, i64> = bind_all(
            sqlx::query_as::<_, (String, i64)>(&viewers_sql),
            args.into_vec(),
        )
        .fetch_all(&mut *lease)
        .await?
        .into_iter()
        .collect();
        Ok(top
            .into_iter()
            .map(|(path, views)| PageViews {
                unique_views: viewers.get(&path).copied().unwrap_or(0),
                path,
                views,
            })
            .collect())
    }

    /// Distinct users with events in the period, in all and per country
    /// ('' when no trusted header named one), from one pass over the
    /// period's visits: their distinct (country, user) pairs, counted both
    /// ways (two passes with `COUNT(DISTINCT …)` sorted the year's 533,000
    /// visits twice).
    pub async fn dashboard_users(
        &self,
        filter: &EventFilter,
    ) -> Result<DistinctUsers, DomainError> {
        let scope = filter.scope(SLICE_MILLIS, "slice");
        let sql = format!(
            "WITH pairs AS MATERIALIZED (SELECT DISTINCT country, user_id FROM ({}) AS visitors) \
             SELECT country, COUNT(*) FROM pairs GROUP BY country \
             UNION ALL SELECT NULL, COUNT(DISTINCT user_id) FROM pairs",
            visitors(&scope)
        );
        let rows = bind_all(
            sqlx::query_as::<_, (Option<String>, i64)>(&sql),
            scope.args.into_vec(),
        )
        .fetch_all(&mut *self.lease().await?)
        .await?;
        let mut users = DistinctUsers::default();
        for (country, count) in rows {
            match country {
                Some(country) => {
                    users.by_country.insert(country, count);
                }
                None => users.all = count,
            }
        }
        Ok(users)
    }

    /// Clicks per heatmap cell, busiest first, at most `limit` cells.
    pub async fn dashboard_heatmap(
        &self,
        filter: &EventFilter,
        limit: i64,
    ) -> Result<Vec<HeatCell>, DomainError> {
        let Scope {
            whole,
            ends,
            dims,
            args,
        } = filter.scope(DAY_MILLIS, "day");
        let sql = format!(
            "SELECT path, cell_x, cell_y, {} AS clicks FROM (\
             SELECT path, cell_x, cell_y, clicks FROM analytics_rollup_clicks WHERE {whole} AND {dims} \
             UNION ALL SELECT path, click_x / {HEATMAP_CELL}, click_y / {HEATMAP_CELL}, 1 \
             FROM analytics_events WHERE {ends} AND {dims} AND event_type = 'button_click' \
             AND path IS NOT NULL AND click_x IS NOT NULL AND click_y IS NOT NULL) AS clicked \
             GROUP BY path, cell_x, cell_y ORDER BY clicks DESC, path, cell_x, cell_y LIMIT {limit}",
            sum("clicks")
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

    #[test]
    fn a_period_splits_into_whole_units_and_ragged_ends() {
        assert_eq!(split(15, 95, 10), (Some((2, 9)), vec![(15, 20), (90, 95)]));
        assert_eq!(split(20, 90, 10), (Some((2, 9)), vec![]));
        assert_eq!(split(12, 18, 10), (None, vec![(12, 18)]));
        assert_eq!(split(12, 20, 10), (None, vec![(12, 20)]));
        assert_eq!(split(10, 10, 10), (None, vec![]));
    }
}
