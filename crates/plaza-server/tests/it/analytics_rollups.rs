//! The analytics rollups: every dashboard figure read through
//! the rollups equals the same figure counted event by event, over periods
//! with ragged and aligned ends, with and without filters, after the
//! retention purge has subtracted events, and after a rebuild.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{Backend, TestServer};
use plaza_domain::Database;
use plaza_domain::analytics::{
    self, CountryCount, DAY_MILLIS, DashboardOverview, EventFilter, HEATMAP_CELL, HeatCell,
    NewEvent, PageViews, SLICE_MILLIS, TrendSlice,
};
use plaza_domain::time::now_millis;

on_both_databases!(
    rollups_answer_what_the_events_answer,
    two_writers_that_meet_one_new_session_count_it_once,
);

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

const TYPES: [&str; 5] = [
    "page_view",
    "page_view",
    "button_click",
    "session_end",
    "scroll",
];
const DEVICES: [&str; 3] = ["desktop", "mobile", "tablet"];
const COUNTRIES: [Option<&str>; 3] = [None, Some("DE"), Some("US")];
const PATHS: [Option<&str>; 4] = [None, Some("/a"), Some("/b"), Some("/c")];

fn events(first: i64, span: i64, count: usize, rng: &mut Rng) -> Vec<NewEvent> {
    (0..count)
        .map(|n| {
            let user = 1 + rng.below(6) as i64;
            let session = rng.below(4);
            let event_type = rng.pick(&TYPES);
            NewEvent {
                event_id: format!("rollup-{n}-{}", rng.below(1 << 40)),
                user_id: user,
                event_type: event_type.to_owned(),
                event_data: "{}".to_owned(),
                path: rng.pick(&PATHS).map(str::to_owned),
                session_key: (session > 0).then(|| format!("s{session}")),
                duration_ms: (event_type == "session_end" && rng.below(4) > 0)
                    .then(|| rng.below(600_000) as i64),
                click_x: (rng.below(5) > 0).then(|| rng.below(300) as i64 - 20),
                click_y: Some(rng.below(200) as i64),
                client_hash: "h".to_owned(),
                device_type: rng.pick(&DEVICES),
                country: rng.pick(&COUNTRIES).map(str::to_owned),
                is_vpn: rng.below(5) == 0,
                occurred_at: first + rng.below(span as u64) as i64,
                received_at: now_millis(),
            }
        })
        .collect()
}

/// Everything the dashboards answer for one filter.
#[derive(Debug, PartialEq)]
struct Figures {
    overview: DashboardOverview,
    trend: Vec<TrendSlice>,
    top_pages: Vec<PageViews>,
    devices: Vec<(String, i64)>,
    countries: Vec<CountryCount>,
    heatmap: Vec<HeatCell>,
    active_users: i64,
    active_user_days: i64,
    platform_session_millis: Option<f64>,
}

async fn through_rollups(db: &Database, filter: &EventFilter) -> Figures {
    let platform = db
        .platform_figures(filter.since, filter.until)
        .await
        .unwrap();
    let totals = db.dashboard_totals(filter).await.unwrap();
    let users = db.dashboard_users(filter).await.unwrap();
    Figures {
        overview: DashboardOverview::of(&totals, users.all),
        trend: db.dashboard_trend(filter).await.unwrap(),
        top_pages: db.dashboard_top_pages(filter, 2).await.unwrap(),
        devices: analytics::device_events(&totals),
        countries: analytics::countries(&totals, &users.by_country, 2),
        heatmap: db.dashboard_heatmap(filter, 5).await.unwrap(),
        active_users: platform.users_active,
        active_user_days: platform.active_user_days,
        platform_session_millis: platform.average_session_millis,
    }
}

/// The same figures counted one event at a time from the stored `events`;
/// the sessions in `ended` lost events to a purge (since the rollups were
/// last built) and count no more.
fn by_hand(events: &[NewEvent], ended: &BTreeSet<(i64, String)>, filter: &EventFilter) -> Figures {
    let in_period =
        |event: &&NewEvent| event.occurred_at >= filter.since && event.occurred_at < filter.until;
    let period: Vec<&NewEvent> = events.iter().filter(in_period).collect();
    let chosen: Vec<&NewEvent> = period
        .iter()
        .copied()
        .filter(|event| {
            filter
                .country
                .as_ref()
                .is_none_or(|country| event.country.as_ref() == Some(country))
                && filter
                    .device_type
                    .as_ref()
                    .is_none_or(|device| device == event.device_type)
                && (filter.include_vpn || !event.is_vpn)
        })
        .collect();
    let of_type = |kind: &'static str| chosen.iter().filter(move |event| event.event_type == kind);
    // A session starts at its first event, ties broken by device, country
    // and VPN flag, and is counted with all of its page views when that
    // start is in the period and matches the filters.
    let mut starts: BTreeMap<(i64, &str), (i64, &str, &str, bool)> = BTreeMap::new();
    for event in events {
        if let Some(key) = &event.session_key
            && !ended.contains(&(event.user_id, key.clone()))
        {
            let start = (
                event.occurred_at,
                event.device_type,
                event.country.as_deref().unwrap_or(""),
                event.is_vpn,
            );
            let known = starts.entry((event.user_id, key.as_str())).or_insert(start);
            *known = (*known).min(start);
        }
    }
    let mut sessions: BTreeMap<(i64, &str), (i64, i64)> = BTreeMap::new();
    for event in events {
        if let Some(key) = &event.session_key
            && let Some(&(at, device, country, vpn)) = starts.get(&(event.user_id, key.as_str()))
        {
            let counted = at >= filter.since
                && at < filter.until
                && filter
                    .country
                    .as_deref()
                    .is_none_or(|wanted| wanted == country)
                && filter
                    .device_type
                    .as_deref()
                    .is_none_or(|wanted| wanted == device)
                && (filter.include_vpn || !vpn);
            if counted {
                let entry = sessions
                    .entry((event.user_id, key.as_str()))
                    .or_insert((0, at / SLICE_MILLIS));
                entry.0 += i64::from(event.event_type == "page_view");
            }
        }
    }
    let average = |durations: Vec<i64>| {
        (!durations.is_empty())
            .then(|| durations.iter().sum::<i64>() as f64 / durations.len() as f64)
    };
    let session_durations = |events: &[&NewEvent]| {
        events
            .iter()
            .filter(|event| event.event_type == "session_end")
            .filter_map(|event| event.duration_ms)
            .collect::<Vec<_>>()
    };
    let overview = DashboardOverview {
        page_views: of_type("page_view").count() as i64,
        clicks: of_type("button_click").count() as i64,
        unique_users: chosen
            .iter()
            .map(|event| event.user_id)
            .collect::<BTreeSet<_>>()
            .len() as i64,
        average_session_millis: average(session_durations(&chosen)),
        vpn_events: chosen.iter().filter(|event| event.is_vpn).count() as i64,
        events: chosen.len() as i64,
        sessions: sessions.len() as i64,
        viewing_sessions: sessions.values().filter(|(views, _)| *views > 0).count() as i64,
        bounced_sessions: sessions.values().filter(|(views, _)| *views == 1).count() as i64,
    };
    let mut trend: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for event in of_type("page_view") {
        trend.entry(event.occurred_at / SLICE_MILLIS).or_default().0 += 1;
    }
    for (_, first) in sessions.values() {
        trend.entry(*first).or_default().1 += 1;
    }
    let trend = trend
        .into_iter()
        .map(|(slice, (page_views, sessions))| TrendSlice {
            slice,
            page_views,
            sessions,
        })
        .collect();
    let mut pages: BTreeMap<&str, (i64, BTreeSet<i64>)> = BTreeMap::new();
    for event in of_type("page_view") {
        if let Some(path) = &event.path {
            let page = pages.entry(path).or_default();
            page.0 += 1;
            page.1.insert(event.user_id);
        }
    }
    let mut top_pages: Vec<PageViews> = pages
        .into_iter()
        .map(|(path, (views, users))| PageViews {
            path: path.to_owned(),
            views,
            unique_views: users.len() as i64,
        })
        .collect();
    top_pages.sort_by(|a, b| b.views.cmp(&a.views).then(a.path.cmp(&b.path)));
    top_pages.truncate(2);
    let mut devices: BTreeMap<String, i64> = BTreeMap::new();
    let mut countries: BTreeMap<Option<String>, (i64, BTreeSet<i64>)> = BTreeMap::new();
    let mut cells: BTreeMap<(String, i64, i64), i64> = BTreeMap::new();
    for event in &chosen {
        *devices.entry(event.device_type.to_owned()).or_default() += 1;
        let country = countries.entry(event.country.clone()).or_default();
        country.0 += 1;
        country.1.insert(event.user_id);
        if let ("button_click", Some(path), Some(x), Some(y)) = (
            event.event_type.as_str(),
            &event.path,
            event.click_x,
            event.click_y,
        ) {
            *cells
                .entry((path.clone(), x / HEATMAP_CELL, y / HEATMAP_CELL))
                .or_default() += 1;
        }
    }
    let mut countries: Vec<CountryCount> = countries
        .into_iter()
        .map(|(country, (events, users))| CountryCount {
            country,
            events,
            users: users.len() as i64,
        })
        .collect();
    countries.sort_by(|a, b| b.events.cmp(&a.events).then(a.country.cmp(&b.country)));
    countries.truncate(2);
    let mut heatmap: Vec<HeatCell> = cells
        .into_iter()
        .map(|((path, cell_x, cell_y), clicks)| HeatCell {
            path,
            cell_x,
            cell_y,
            clicks,
        })
        .collect();
    heatmap.sort_by(|a, b| {
        b.clicks
            .cmp(&a.clicks)
            .then(a.path.cmp(&b.path))
            .then(a.cell_x.cmp(&b.cell_x))
            .then(a.cell_y.cmp(&b.cell_y))
    });
    heatmap.truncate(5);
    Figures {
        overview,
        trend,
        top_pages,
        devices: devices.into_iter().collect(),
        countries,
        heatmap,
        active_users: period
            .iter()
            .map(|event| event.user_id)
            .collect::<BTreeSet<_>>()
            .len() as i64,
        active_user_days: period
            .iter()
            .map(|event| (event.user_id, event.occurred_at / DAY_MILLIS))
            .collect::<BTreeSet<_>>()
            .len() as i64,
        platform_session_millis: average(session_durations(&period)),
    }
}

/// Periods with ragged ends, ends on slice and day boundaries, one shorter
/// than a slice, and filters of each kind.
fn filters(first: i64, span: i64, rng: &mut Rng) -> Vec<EventFilter> {
    let day = first / DAY_MILLIS * DAY_MILLIS;
    let mut periods = vec![
        (first - DAY_MILLIS, first + span + DAY_MILLIS),
        (day + DAY_MILLIS, day + 3 * DAY_MILLIS),
        (
            day + DAY_MILLIS + 7 * SLICE_MILLIS,
            day + 2 * DAY_MILLIS + SLICE_MILLIS,
        ),
        (first + 1_000, first + 61_000),
    ];
    for _ in 0..5 {
        let since = first + rng.below(span as u64) as i64;
        periods.push((since, since + 1 + rng.below(span as u64) as i64));
    }
    let mut filters = Vec::new();
    for (n, (since, until)) in periods.into_iter().enumerate() {
        let base = EventFilter {
            since,
            until,
            include_vpn: true,
            ..EventFilter::default()
        };
        filters.push(base.clone());
        filters.push(match n % 3 {
            0 => EventFilter {
                country: Some("DE".to_owned()),
                ..base
            },
            1 => EventFilter {
                device_type: Some("mobile".to_owned()),
                ..base
            },
            _ => EventFilter {
                include_vpn: false,
                ..base
            },
        });
    }
    filters
}

async fn assert_figures(
    db: &Database,
    (events, ended): (&[NewEvent], &BTreeSet<(i64, String)>),
    filters: &[EventFilter],
    when: &str,
) {
    for filter in filters {
        let mut read = through_rollups(db, filter).await;
        let mut counted = by_hand(events, ended, filter);
        // Means are compared to the microsecond, then set aside.
        for (a, b) in [
            (
                &mut read.overview.average_session_millis,
                &mut counted.overview.average_session_millis,
            ),
            (
                &mut read.platform_session_millis,
                &mut counted.platform_session_millis,
            ),
        ] {
            assert_eq!(a.is_some(), b.is_some(), "{when}: {filter:?}");
            if let (Some(x), Some(y)) = (*a, *b) {
                assert!((x - y).abs() < 0.001, "{when}: {x} != {y} for {filter:?}");
            }
            *a = None;
            *b = None;
        }
        assert_eq!(read, counted, "{when}: {filter:?}");
    }
}

async fn rollups_answer_what_the_events_answer(backend: Backend) {
    let server = TestServer::start(backend).await;
    let db = server.domain().await;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let span = 4 * DAY_MILLIS;
    let first = now_millis() - 10 * DAY_MILLIS;
    // The purge's cutoff halves a slice. A burst around it, and one session
    // of three page views before it and one after, so the purge leaves
    // rollup rows partly counted down as well as emptied, and ends a
    // session that goes on after it (a rebuild starts it again, a bounce).
    let cutoff = (first + span / 3) / SLICE_MILLIS * SLICE_MILLIS + SLICE_MILLIS / 2;
    let mut stored = events(first, span, 1_500, &mut rng);
    stored.extend(events(
        cutoff - SLICE_MILLIS,
        2 * SLICE_MILLIS,
        300,
        &mut rng,
    ));
    for (n, offset) in [-3_000, -2_000, -1_000, 1_000].into_iter().enumerate() {
        let mut view = events(cutoff + offset, 1, 1, &mut rng).remove(0);
        view.event_id = format!("halved-{n}");
        view.event_type = "page_view".to_owned();
        view.session_key = Some("halved".to_owned());
        (view.user_id, view.device_type, view.country, view.is_vpn) = (1, "mobile", None, false);
        stored.push(view);
    }
    for batch in stored.chunks(97) {
        let batch = batch.to_vec();
        db.write(|tx| Box::pin(async move { analytics::insert(tx, &batch).await }))
            .await
            .unwrap();
    }
    let filters = filters(first, span, &mut rng);
    assert_figures(
        &db,
        (&stored, &BTreeSet::new()),
        &filters,
        "after the writes",
    )
    .await;

    loop {
        let removed = db
            .write(|tx| Box::pin(async move { analytics::purge_before(tx, cutoff, 37).await }))
            .await
            .unwrap();
        if removed < 37 {
            break;
        }
    }
    let kept: Vec<NewEvent> = stored
        .iter()
        .filter(|event| event.occurred_at >= cutoff)
        .cloned()
        .collect();
    // A session that lost events to the purge began before the window: it
    // no longer counts.
    let ended: BTreeSet<(i64, String)> = stored
        .iter()
        .filter(|event| event.occurred_at < cutoff)
        .filter_map(|event| Some((event.user_id, event.session_key.clone()?)))
        .collect();
    assert_figures(&db, (&kept, &ended), &filters, "after the purge").await;
    for (table, emptied) in [
        ("slices", "events <= 0"),
        ("days", "events <= 0"),
        ("visits", "events <= 0"),
        ("pages", "views <= 0"),
        ("clicks", "clicks <= 0"),
        ("sessions", "page_views < 0"),
    ] {
        let left = server
            .sql_count(&format!(
                "SELECT COUNT(*) FROM analytics_rollup_{table} WHERE {emptied}"
            ))
            .await;
        assert_eq!(left, 0, "rows counted down to nothing stay in {table}");
    }
    let ended_rows = server
        .sql_count(&format!(
            "SELECT COUNT(*) FROM analytics_rollup_sessions WHERE first_at < {cutoff}"
        ))
        .await;
    assert_eq!(ended_rows, 0, "the sessions the purge ended stay");

    db.rebuild_analytics_rollups().await.unwrap();
    assert_figures(&db, (&kept, &BTreeSet::new()), &filters, "after a rebuild").await;
}

/// Two instances' writers (each its own pool) store batches at the same
/// time, each batch starting the same new sessions as the other writer's:
/// each session is counted as starting once, with every page view.
async fn two_writers_that_meet_one_new_session_count_it_once(backend: Backend) {
    const ROUNDS: i64 = 30;
    const SESSIONS_PER_ROUND: i64 = 4;
    let server = TestServer::start(backend).await;
    let writers = [server.domain().await, server.domain().await];
    let at = now_millis() - DAY_MILLIS;
    let batch = |writer: usize, round: i64| -> Vec<NewEvent> {
        (0..SESSIONS_PER_ROUND)
            .map(|session| NewEvent {
                event_id: format!("meet-{writer}-{round}-{session}"),
                user_id: 1,
                event_type: "page_view".to_owned(),
                event_data: "{}".to_owned(),
                path: Some("/a".to_owned()),
                session_key: Some(format!("meet-{round}-{session}")),
                duration_ms: None,
                click_x: None,
                click_y: None,
                client_hash: "h".to_owned(),
                device_type: "desktop",
                country: None,
                is_vpn: false,
                occurred_at: at + round * 1_000 + writer as i64,
                received_at: now_millis(),
            })
            .collect()
    };
    let write_all = |writer: usize| {
        let db = writers[writer].clone();
        async move {
            for round in 0..ROUNDS {
                let events = batch(writer, round);
                db.write(|tx| Box::pin(async move { analytics::insert(tx, &events).await }))
                    .await
                    .unwrap();
            }
        }
    };
    tokio::join!(write_all(0), write_all(1));
    let sessions = ROUNDS * SESSIONS_PER_ROUND;
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM analytics_rollup_sessions WHERE page_views = 2")
            .await,
        sessions,
        "every session holds both writers' page views"
    );
    for table in ["slices", "days"] {
        assert_eq!(
            server
                .sql_count(&format!(
                    "SELECT CAST(SUM(session_starts) AS BIGINT) FROM analytics_rollup_{table}"
                ))
                .await,
            sessions,
            "sessions counted as starting in {table}"
        );
        assert_eq!(
            server
                .sql_count(&format!(
                    "SELECT CAST(SUM(bounced_starts) AS BIGINT) FROM analytics_rollup_{table}"
                ))
                .await,
            0,
            "no session of two page views is a bounce in {table}"
        );
    }
}
