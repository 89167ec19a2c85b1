//! `GET /api/admin/analytics`: the detailed analytics dashboard (SPEC.md
//! "Detailed analytics for admin dashboard"), from the stored events, in
//! JSON or CSV.

use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use plaza_domain::DomainError;
use plaza_domain::analytics::{self, DashboardOverview, EventFilter, HEATMAP_CELL, TrendSlice};
use plaza_domain::time::now_millis;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::{Administrator, ReadAnalytics};
use crate::http::csv_cells;
use crate::http::error::schema::AdminError;
use crate::http::error::{AppError, FieldError};
use crate::http::extract::AppJson;
use crate::services::analytics::trends::{self, Bucket, Granularity, Zone};
use crate::state::AppState;

const DAY_MILLIS: i64 = 86_400_000;
const RANGES: [(&str, i64); 4] = [("7d", 7), ("30d", 30), ("90d", 90), ("1y", 365)];
const METRICS: [&str; 9] = [
    "sessions",
    "pageviews",
    "clicks",
    "users",
    "geographic",
    "devices",
    "vpn",
    "heatmap",
    "subscriptions",
];
/// Hourly buckets over more than 30 days would be thousands of points.
const MAX_HOURLY_DAYS: i64 = 30;
const TOP_PAGES: i64 = 10;
const TOP_COUNTRIES: usize = 50;
const HEATMAP_CELLS: i64 = 500;

/// The headline figures.
#[derive(Serialize, ToSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    /// Sessions (one user's `session_id`) that started in the range: whose
    /// first event is in it and, with the filters, matches them.
    pub total_sessions: i64,
    pub total_page_views: i64,
    /// `button_click` events.
    pub total_clicks: i64,
    pub unique_users: i64,
    /// Mean `duration_ms` of `session_end` events, in seconds.
    pub avg_session_duration: f64,
    /// Percent of sessions with page views that had exactly one.
    pub bounce_rate: f64,
    /// Percent of the events sent through a VPN.
    pub vpn_percentage: f64,
}

/// Counts per bucket of `granularity` in `timezone`; empty buckets are 0.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Trends {
    /// Sessions, each in the bucket of its first event.
    pub sessions: Vec<TrendPoint>,
    pub page_views: Vec<TrendPoint>,
}

/// One bucket.
#[derive(Serialize, ToSchema)]
pub struct TrendPoint {
    /// The bucket's local date (`2026-11-01`), or for hourly buckets its
    /// local start with offset (`2026-11-01T01:00:00-05:00`).
    pub date: String,
    pub count: i64,
}

/// One of the most viewed pages.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopPage {
    pub path: String,
    pub views: i64,
    /// Distinct users who viewed it.
    pub unique_views: i64,
}

/// Events by device type.
#[derive(Serialize, ToSchema, Default)]
pub struct Devices {
    pub desktop: i64,
    pub mobile: i64,
    pub tablet: i64,
    /// Bots, appliances and unknown agents.
    pub other: i64,
}

/// Events and users of one country (`unknown` when no trusted header named it).
#[derive(Serialize, ToSchema)]
pub struct CountryFigures {
    pub country: String,
    pub events: i64,
    pub users: i64,
}

/// Events sent through a VPN and not.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VpnFigures {
    pub vpn_events: i64,
    pub other_events: i64,
    pub vpn_percentage: f64,
}

/// Clicks in one cell of a page's grid of 20 × 20 pixel cells.
#[derive(Serialize, ToSchema)]
pub struct HeatmapCell {
    pub path: String,
    /// The cell's left and top edge in pixels.
    pub x: i64,
    pub y: i64,
    pub clicks: i64,
}

/// Subscriptions now and in the range.
#[derive(Serialize, ToSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFigures {
    /// Active now (stored as active and not past their end).
    pub active: i64,
    /// Started within the range.
    pub started: i64,
    pub by_plan: Vec<PlanFigures>,
}

/// One plan's subscriptions.
#[derive(Serialize, ToSchema)]
pub struct PlanFigures {
    pub plan: String,
    pub active: i64,
    pub started: i64,
}

/// The dashboard. `overview` is always there; the other sections follow
/// `metrics`: `trends` with `sessions` or `pageviews`, `topPages` with
/// `pageviews`, `devices`, `geographic`, `vpn`, `heatmap`, `subscriptions`
/// (from the subscriptions admins manage; the filters on events do not
/// apply to it).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dashboard {
    pub overview: Overview,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trends: Option<Trends>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_pages: Option<Vec<TopPage>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<Devices>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geographic: Option<Vec<CountryFigures>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vpn: Option<VpnFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heatmap: Option<Vec<HeatmapCell>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscriptions: Option<SubscriptionFigures>,
}

/// `section` when `wanted`; otherwise it is never started.
async fn optional<T>(
    wanted: bool,
    section: impl Future<Output = Result<T, DomainError>>,
) -> Result<Option<T>, DomainError> {
    if wanted {
        section.await.map(Some)
    } else {
        Ok(None)
    }
}

/// What the query asked for, checked.
struct DashboardQuery {
    days: i64,
    metrics: Vec<String>,
    granularity: Granularity,
    zone: Zone,
    filter_country: Option<String>,
    filter_device: Option<String>,
    include_vpn: bool,
    csv: bool,
}

/// The detailed analytics of the admin dashboard, over the stored events
/// of the period ending now.
#[utoipa::path(
    get,
    path = "/api/admin/analytics",
    tag = "admin",
    params(
        ("dateRange" = Option<String>, Query, description = "`7d`, `30d` (default), `90d` or `1y`, ending now"),
        ("metrics" = Option<Vec<String>>, Query, description = "Repeated or comma-separated: sessions, pageviews, clicks, users, geographic, devices, vpn, heatmap, subscriptions; default all"),
        ("granularity" = Option<String>, Query, description = "`hourly` (ranges up to 30 days), `daily` (default), `weekly` (from Monday) or `monthly`"),
        ("timezone" = Option<String>, Query, description = "An IANA time zone such as `Europe/Berlin`, default `UTC`: buckets are its local hours, days, weeks and months"),
        ("country" = Option<String>, Query, description = "Only events from this ISO 3166 alpha-2 country"),
        ("device_type" = Option<String>, Query, description = "Only `desktop`, `mobile` or `tablet` events"),
        ("include_vpn" = Option<bool>, Query, description = "`false` leaves out events sent through a VPN (default true)"),
        ("format" = Option<String>, Query, description = "`json` (default) or `csv`: rows of section, metric, key, value; a text cell beginning with `=`, `+`, `-`, `@`, tab or carriage return gets a leading `'`"),
    ),
    responses(
        (status = 200, description = "The dashboard (`format=csv`: `text/csv` with a header row)", body = Dashboard),
        (status = 400, description = "A bad parameter; `details` lists each", body = AdminError),
        (status = 401, description = "Not signed in, and no valid admin token", body = AdminError),
        (status = 403, description = "Not an administrator holding `analytics:read`", body = AdminError),
    )
)]
pub async fn analytics_dashboard(
    State(state): State<AppState>,
    _viewer: Administrator<ReadAnalytics>,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    let (dashboard, csv) = build_dashboard(&state, query.as_deref().unwrap_or("")).await?;
    if csv {
        let body = to_csv(&dashboard).map_err(AppError::internal)?;
        return Ok((
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"analytics.csv\"",
                ),
            ],
            body,
        )
            .into_response());
    }
    Ok(AppJson(dashboard).into_response())
}

/// The dashboard the query string `query` asks for (this route's
/// parameters), and whether it asked for CSV; a bad parameter is 400
/// naming each. The operator console draws the same figures.
pub async fn build_dashboard(state: &AppState, query: &str) -> Result<(Dashboard, bool), AppError> {
    let query = parse_query(query)?;
    let until = now_millis();
    let since = until - query.days * DAY_MILLIS;
    let filter = EventFilter {
        since,
        until,
        country: query.filter_country.clone(),
        device_type: query.filter_device.clone(),
        include_vpn: query.include_vpn,
    };
    let wants = |metric: &str| query.metrics.iter().any(|wanted| wanted == metric);
    let db = &state.db;
    // The sections do not depend on each other: each runs on a connection
    // of its own, at once: one after the other, a year's dashboard took
    // several times as long on two cores.
    let trends_wanted = wants("sessions") || wants("pageviews");
    let (totals, users, trend, pages, cells, plans) = tokio::try_join!(
        db.dashboard_totals(&filter),
        db.dashboard_users(&filter),
        optional(trends_wanted, db.dashboard_trend(&filter)),
        optional(
            wants("pageviews"),
            db.dashboard_top_pages(&filter, TOP_PAGES)
        ),
        optional(
            wants("heatmap"),
            db.dashboard_heatmap(&filter, HEATMAP_CELLS)
        ),
        optional(
            wants("subscriptions"),
            db.subscription_figures(since, until)
        ),
    )?;
    let figures = DashboardOverview::of(&totals, users.all);
    let device_counts = wants("devices").then(|| analytics::device_events(&totals));
    let countries = wants("geographic")
        .then(|| analytics::countries(&totals, &users.by_country, TOP_COUNTRIES));
    let percent = |part: i64, whole: i64| {
        if whole == 0 {
            0.0
        } else {
            (part as f64 * 10_000.0 / whole as f64).round() / 100.0
        }
    };
    let overview = Overview {
        total_sessions: figures.sessions,
        total_page_views: figures.page_views,
        total_clicks: figures.clicks,
        unique_users: figures.unique_users,
        avg_session_duration: (figures.average_session_millis.unwrap_or(0.0) / 10.0).round()
            / 100.0,
        bounce_rate: percent(figures.bounced_sessions, figures.viewing_sessions),
        vpn_percentage: percent(figures.vpn_events, figures.events),
    };
    let trends = trend.map(|trend| {
        let points = |count: fn(&TrendSlice) -> i64| {
            let slices: Vec<(i64, i64)> = trend
                .iter()
                .map(|slice| (slice.slice, count(slice)))
                .collect();
            trends::buckets(&slices, since, until, query.zone, query.granularity)
                .into_iter()
                .map(|Bucket { date, count }| TrendPoint { date, count })
                .collect()
        };
        Trends {
            sessions: points(|slice| slice.sessions),
            page_views: points(|slice| slice.page_views),
        }
    });
    let top_pages = pages.map(|pages| {
        pages
            .into_iter()
            .map(|page| TopPage {
                path: page.path,
                views: page.views,
                unique_views: page.unique_views,
            })
            .collect()
    });
    let devices = device_counts.map(|counts| {
        let mut devices = Devices::default();
        for (device, events) in counts {
            match device.as_str() {
                "desktop" => devices.desktop += events,
                "mobile" => devices.mobile += events,
                "tablet" => devices.tablet += events,
                _ => devices.other += events,
            }
        }
        devices
    });
    let geographic = countries.map(|countries| {
        countries
            .into_iter()
            .map(|row| CountryFigures {
                country: row.country.unwrap_or_else(|| "unknown".to_owned()),
                events: row.events,
                users: row.users,
            })
            .collect()
    });
    let vpn = wants("vpn").then_some(VpnFigures {
        vpn_events: figures.vpn_events,
        other_events: figures.events - figures.vpn_events,
        vpn_percentage: overview.vpn_percentage,
    });
    let heatmap = cells.map(|cells| {
        cells
            .into_iter()
            .map(|cell| HeatmapCell {
                path: cell.path,
                x: cell.cell_x * HEATMAP_CELL,
                y: cell.cell_y * HEATMAP_CELL,
                clicks: cell.clicks,
            })
            .collect()
    });
    let subscriptions = plans.map(|plans| {
        let mut figures = SubscriptionFigures::default();
        for plan in plans {
            figures.active += plan.active;
            figures.started += plan.started;
            figures.by_plan.push(PlanFigures {
                plan: plan.plan_name,
                active: plan.active,
                started: plan.started,
            });
        }
        figures
    });
    let dashboard = Dashboard {
        overview,
        trends,
        top_pages,
        devices,
        geographic,
        vpn,
        heatmap,
        subscriptions,
    };
    Ok((dashboard, query.csv))
}

/// Reads and checks every parameter, naming each bad one.
fn parse_query(query: &str) -> Result<DashboardQuery, AppError> {
    let mut problems = Vec::new();
    let mut wrong = |name: &str, expected: &str, received: &str| {
        problems.push(
            FieldError::new(name, format!("must be {expected}, not {received:?}")).with_kind(
                "invalid_enum_value",
                expected,
                received,
            ),
        );
    };
    let mut days = 30;
    let mut metrics = Vec::new();
    let mut granularity = Granularity::Daily;
    let mut zone = Zone::UTC;
    let mut filter_country = None;
    let mut filter_device = None;
    let mut include_vpn = true;
    let mut csv = false;
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let value = value.trim();
        match key.as_ref() {
            "dateRange" => match RANGES.iter().find(|(name, _)| *name == value) {
                Some(&(_, range)) => days = range,
                None => wrong("dateRange", "one of 7d, 30d, 90d, 1y", value),
            },
            "metrics" | "metrics[]" => {
                for metric in value.split(',').map(str::trim).filter(|m| !m.is_empty()) {
                    if METRICS.contains(&metric) {
                        metrics.push(metric.to_owned());
                    } else {
                        wrong("metrics", &METRICS.join(", "), metric);
                    }
                }
            }
            "granularity" => match Granularity::parse(value) {
                Some(parsed) => granularity = parsed,
                None => wrong(
                    "granularity",
                    "one of hourly, daily, weekly, monthly",
                    value,
                ),
            },
            "timezone" => match Zone::named(value) {
                Some(named) => zone = named,
                None => wrong("timezone", "an IANA time zone such as Europe/Berlin", value),
            },
            "country" => {
                if value.len() == 2 && value.bytes().all(|b| b.is_ascii_alphabetic()) {
                    filter_country = Some(value.to_ascii_uppercase());
                } else {
                    wrong("country", "an ISO 3166 alpha-2 code such as DE", value);
                }
            }
            "device_type" => match value {
                "desktop" | "mobile" | "tablet" => filter_device = Some(value.to_owned()),
                _ => wrong("device_type", "one of desktop, mobile, tablet", value),
            },
            "include_vpn" => match value {
                "true" => include_vpn = true,
                "false" => include_vpn = false,
                _ => wrong("include_vpn", "true or false", value),
            },
            "format" => match value {
                "json" => csv = false,
                "csv" => csv = true,
                _ => wrong("format", "json or csv", value),
            },
            _ => {}
        }
    }
    if granularity == Granularity::Hourly && days > MAX_HOURLY_DAYS {
        problems.push(FieldError::new(
            "granularity",
            "hourly buckets cover ranges of up to 30 days; use daily or a shorter dateRange",
        ));
    }
    if let Some(first) = problems.first() {
        return Err(AppError::Validation {
            message: format!("invalid {}: {}", first.field, first.reason),
            fields: problems,
        });
    }
    if metrics.is_empty() {
        metrics = METRICS.iter().map(|name| (*name).to_owned()).collect();
    }
    Ok(DashboardQuery {
        days,
        metrics,
        granularity,
        zone,
        filter_country,
        filter_device,
        include_vpn,
        csv,
    })
}

/// The dashboard as rows of `section, metric, key, value`: every number of
/// the JSON answer once, so a spreadsheet sums what the JSON shows. The
/// text cells keep the cell rule of [`csv_cells`]; the value is a number.
fn to_csv(dashboard: &Dashboard) -> Result<Vec<u8>, csv::Error> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(["section", "metric", "key", "value"])?;
    let mut row = |section: &str, metric: &str, key: &str, value: String| {
        let (section, metric, key) = (
            csv_cells::text(section),
            csv_cells::text(metric),
            csv_cells::text(key),
        );
        writer.write_record([&*section, &*metric, &*key, &value])
    };
    let overview = &dashboard.overview;
    for (metric, value) in [
        ("totalSessions", overview.total_sessions.to_string()),
        ("totalPageViews", overview.total_page_views.to_string()),
        ("totalClicks", overview.total_clicks.to_string()),
        ("uniqueUsers", overview.unique_users.to_string()),
        (
            "avgSessionDuration",
            overview.avg_session_duration.to_string(),
        ),
        ("bounceRate", overview.bounce_rate.to_string()),
        ("vpnPercentage", overview.vpn_percentage.to_string()),
    ] {
        row("overview", metric, "", value)?;
    }
    if let Some(trends) = &dashboard.trends {
        for (metric, points) in [
            ("sessions", &trends.sessions),
            ("pageViews", &trends.page_views),
        ] {
            for point in points {
                row("trends", metric, &point.date, point.count.to_string())?;
            }
        }
    }
    for page in dashboard.top_pages.iter().flatten() {
        row("topPages", "views", &page.path, page.views.to_string())?;
        row(
            "topPages",
            "uniqueViews",
            &page.path,
            page.unique_views.to_string(),
        )?;
    }
    if let Some(devices) = &dashboard.devices {
        for (device, events) in [
            ("desktop", devices.desktop),
            ("mobile", devices.mobile),
            ("tablet", devices.tablet),
            ("other", devices.other),
        ] {
            row("devices", device, "", events.to_string())?;
        }
    }
    for country in dashboard.geographic.iter().flatten() {
        row(
            "geographic",
            "events",
            &country.country,
            country.events.to_string(),
        )?;
        row(
            "geographic",
            "users",
            &country.country,
            country.users.to_string(),
        )?;
    }
    if let Some(vpn) = &dashboard.vpn {
        row("vpn", "vpnEvents", "", vpn.vpn_events.to_string())?;
        row("vpn", "otherEvents", "", vpn.other_events.to_string())?;
        row("vpn", "vpnPercentage", "", vpn.vpn_percentage.to_string())?;
    }
    for cell in dashboard.heatmap.iter().flatten() {
        let key = format!("{} {} {}", cell.path, cell.x, cell.y);
        row("heatmap", "clicks", &key, cell.clicks.to_string())?;
    }
    if let Some(subscriptions) = &dashboard.subscriptions {
        row(
            "subscriptions",
            "active",
            "",
            subscriptions.active.to_string(),
        )?;
        row(
            "subscriptions",
            "started",
            "",
            subscriptions.started.to_string(),
        )?;
        for plan in &subscriptions.by_plan {
            row(
                "subscriptions",
                "active",
                &plan.plan,
                plan.active.to_string(),
            )?;
            row(
                "subscriptions",
                "started",
                &plan.plan,
                plan.started.to_string(),
            )?;
        }
    }
    writer
        .into_inner()
        .map_err(|error| csv::Error::from(error.into_error()))
}
