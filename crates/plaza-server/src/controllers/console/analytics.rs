//! The console's analytics (administrators holding `analytics:read`): the
//! dashboard of `GET /api/admin/analytics` over 7, 30 or 90 days or a
//! year, with that route's filters (a country, a device type, without
//! VPN traffic, the time zone of the buckets), drawn as charts in SVG
//! written by the server (trends, top pages, devices, countries, the click
//! heatmap), with its CSV download under the same filters. No script draws
//! them and nothing comes from elsewhere.

use axum::extract::State;
use axum::response::Response;
use plaza_domain::grants;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::page::{ConsoleUser, page};
use crate::controllers::admin::analytics::{Dashboard, build_dashboard};
use crate::http::error::AppError;
use crate::http::extract::AppQuery;
use crate::state::AppState;

/// The ranges offered, as the API names them.
const RANGES: [&str; 4] = ["7d", "30d", "90d", "1y"];
/// Width and height of a column chart, in SVG units.
const CHART_WIDTH: f64 = 600.0;
const CHART_HEIGHT: f64 = 160.0;
/// Width of the longest bar of a bar chart (labels sit left of the bars).
const BAR_SPACE: f64 = 380.0;
/// Height of one bar's row.
const ROW_HEIGHT: f64 = 24.0;
/// Most characters of a label beside a bar.
const LABEL_CHARS: usize = 32;

#[derive(Deserialize)]
pub struct AnalyticsQuery {
    range: Option<String>,
    /// An ISO 3166 alpha-2 code.
    country: Option<String>,
    /// `desktop`, `mobile` or `tablet`.
    device_type: Option<String>,
    /// `false` leaves out events sent through a VPN.
    include_vpn: Option<String>,
    /// An IANA time zone.
    timezone: Option<String>,
}

/// A column of a column chart, or a bar of a bar chart.
#[derive(Serialize)]
struct Shape {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    label: String,
    /// The label cut to fit beside a bar.
    short: String,
    value: i64,
}

/// A dot of the heatmap.
#[derive(Serialize)]
struct Dot {
    cx: f64,
    cy: f64,
    r: f64,
    label: String,
}

/// `GET /admin/analytics`.
pub async fn dashboard(
    State(state): State<AppState>,
    user: ConsoleUser,
    AppQuery(query): AppQuery<AnalyticsQuery>,
) -> Result<Response, AppError> {
    user.require_administrator(Some(grants::READ_ANALYTICS), "analytics")?;
    let given = |value: Option<String>| {
        value
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    let range = given(query.range).unwrap_or_else(|| "30d".to_owned());
    if !RANGES.contains(&range.as_str()) {
        return Err(AppError::invalid("range", "must be 7d, 30d, 90d or 1y"));
    }
    let country = given(query.country);
    let device_type = given(query.device_type);
    let timezone = given(query.timezone);
    let without_vpn = match given(query.include_vpn).as_deref() {
        None | Some("true") => false,
        Some("false") => true,
        Some(_) => return Err(AppError::invalid("include_vpn", "must be true or false")),
    };
    // The filters as the API names them, kept by the period tabs; the
    // API's checks name a bad one.
    let kept = filter_query(&[
        ("country", &country),
        ("device_type", &device_type),
        ("timezone", &timezone),
        ("include_vpn", &without_vpn.then(|| "false".to_owned())),
    ]);
    let filters = if kept.is_empty() {
        format!("dateRange={range}")
    } else {
        format!("dateRange={range}&{kept}")
    };
    let granularity = if range == "1y" { "weekly" } else { "daily" };
    let (figures, _) =
        build_dashboard(&state, &format!("{filters}&granularity={granularity}")).await?;
    page(
        &state,
        &user,
        "analytics",
        "analytics.html",
        json!({
            "range": range,
            "ranges": RANGES,
            "country": country.unwrap_or_default(),
            "device_type": device_type.unwrap_or_default(),
            "device_types": ["desktop", "mobile", "tablet"],
            "timezone": timezone.unwrap_or_default(),
            "without_vpn": without_vpn,
            "kept_filters": kept,
            "csv_query": format!("{filters}&format=csv"),
            "overview": figures.overview,
            "charts": charts(&figures),
            "chart_width": CHART_WIDTH,
            "chart_height": CHART_HEIGHT,
        }),
    )
}

/// The query string of the `filters` given.
fn filter_query(filters: &[(&str, &Option<String>)]) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in filters {
        if let Some(value) = value {
            query.append_pair(name, value);
        }
    }
    query.finish()
}

/// The shapes of every chart of `figures`.
fn charts(figures: &Dashboard) -> serde_json::Value {
    let trend = |points: &[crate::controllers::admin::analytics::TrendPoint]| {
        columns(
            points
                .iter()
                .map(|point| (point.date.clone(), point.count))
                .collect(),
        )
    };
    let (page_views, sessions) = figures
        .trends
        .as_ref()
        .map(|trends| (trend(&trends.page_views), trend(&trends.sessions)))
        .unwrap_or_default();
    let top_pages = bars(
        figures
            .top_pages
            .iter()
            .flatten()
            .map(|page| (page.path.clone(), page.views))
            .collect(),
    );
    let devices = bars(
        figures
            .devices
            .as_ref()
            .map(|devices| {
                vec![
                    ("desktop".to_owned(), devices.desktop),
                    ("mobile".to_owned(), devices.mobile),
                    ("tablet".to_owned(), devices.tablet),
                    ("other".to_owned(), devices.other),
                ]
            })
            .unwrap_or_default(),
    );
    let countries = bars(
        figures
            .geographic
            .iter()
            .flatten()
            .map(|country| (country.country.clone(), country.events))
            .collect(),
    );
    let cells = figures.heatmap.as_deref().unwrap_or_default();
    let widest = cells.iter().map(|cell| cell.x).max().unwrap_or(0).max(1) as f64;
    let deepest = cells.iter().map(|cell| cell.y).max().unwrap_or(0).max(1) as f64;
    let most = cells
        .iter()
        .map(|cell| cell.clicks)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let heatmap: Vec<Dot> = cells
        .iter()
        .map(|cell| Dot {
            cx: 12.0 + cell.x as f64 / widest * (CHART_WIDTH - 24.0),
            cy: 12.0 + cell.y as f64 / deepest * (CHART_HEIGHT - 24.0),
            r: 3.0 + 9.0 * cell.clicks as f64 / most,
            label: format!(
                "{} at {}, {}: {} clicks",
                cell.path, cell.x, cell.y, cell.clicks
            ),
        })
        .collect();
    json!({
        "page_views": page_views,
        "sessions": sessions,
        "top_pages": top_pages,
        "devices": devices,
        "countries": countries,
        "heatmap": heatmap,
    })
}

/// Columns side by side, as tall as their values against the largest.
fn columns(values: Vec<(String, i64)>) -> Vec<Shape> {
    let largest = values
        .iter()
        .map(|(_, value)| *value)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let width = CHART_WIDTH / values.len().max(1) as f64;
    values
        .into_iter()
        .enumerate()
        .map(|(index, (label, value))| {
            let height = value as f64 / largest * (CHART_HEIGHT - 10.0);
            Shape {
                x: index as f64 * width,
                y: CHART_HEIGHT - height,
                width: (width - 1.0).max(1.0),
                height,
                short: shortened(&label),
                label,
                value,
            }
        })
        .collect()
}

/// Bars one under the other, as long as their values against the largest.
fn bars(values: Vec<(String, i64)>) -> Vec<Shape> {
    let largest = values
        .iter()
        .map(|(_, value)| *value)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    values
        .into_iter()
        .enumerate()
        .map(|(index, (label, value))| Shape {
            x: CHART_WIDTH - BAR_SPACE,
            y: index as f64 * ROW_HEIGHT,
            width: (value as f64 / largest * (BAR_SPACE - 60.0)).max(1.0),
            height: ROW_HEIGHT - 6.0,
            short: shortened(&label),
            label,
            value,
        })
        .collect()
}

/// `label` cut to [`LABEL_CHARS`] characters, marked when cut.
fn shortened(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        label.to_owned()
    } else {
        let kept: String = label.chars().take(LABEL_CHARS - 1).collect();
        format!("{kept}…")
    }
}
