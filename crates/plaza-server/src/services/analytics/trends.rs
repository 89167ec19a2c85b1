//! The dashboard's trend buckets: hours, days, weeks (from Monday) or
//! months of an IANA time zone, summed from 15-minute UTC slices. A day is
//! the zone's calendar day, so across a daylight-saving change it lasts 23
//! or 25 hours, and the repeated hour of a fall-back change is two hourly
//! buckets told apart by their offset.

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use plaza_domain::analytics::SLICE_MILLIS;

const HOUR_MILLIS: i64 = 3_600_000;

/// The size of a trend bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granularity {
    Hourly,
    Daily,
    Weekly,
    Monthly,
}

impl Granularity {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "hourly" => Some(Granularity::Hourly),
            "daily" => Some(Granularity::Daily),
            "weekly" => Some(Granularity::Weekly),
            "monthly" => Some(Granularity::Monthly),
            _ => None,
        }
    }
}

/// One bucket: its label (a local date, or for hours a local time with its
/// offset) and its count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    pub date: String,
    pub count: i64,
}

/// Every bucket from the one holding `since` to the one holding the last
/// millisecond before `until`, empty ones as zero, each with the sum of the
/// `slices` (start index, count; see [`SLICE_MILLIS`]) that start in it.
pub fn buckets(
    slices: &[(i64, i64)],
    since: i64,
    until: i64,
    zone: Tz,
    granularity: Granularity,
) -> Vec<Bucket> {
    let mut starts = Vec::new();
    let mut start = bucket_start(since, zone, granularity);
    while start < until {
        starts.push(start);
        start = next_start(start, zone, granularity);
    }
    let mut counts = vec![0i64; starts.len()];
    for &(slice, count) in slices {
        let at = slice.saturating_mul(SLICE_MILLIS);
        let index = starts.partition_point(|&start| start <= at);
        if index > 0 {
            counts[index - 1] += count;
        }
    }
    starts
        .into_iter()
        .zip(counts)
        .map(|(start, count)| Bucket {
            date: label(start, zone, granularity),
            count,
        })
        .collect()
}

fn local(millis: i64, zone: Tz) -> DateTime<Tz> {
    Utc.timestamp_millis_opt(millis)
        .single()
        .unwrap_or_default()
        .with_timezone(&zone)
}

/// The start (Unix milliseconds) of the bucket holding `millis`.
fn bucket_start(millis: i64, zone: Tz, granularity: Granularity) -> i64 {
    let at = local(millis, zone);
    let date = at.date_naive();
    match granularity {
        Granularity::Hourly => {
            millis - i64::from(at.minute() * 60 + at.second()) * 1000 - millis.rem_euclid(1000)
        }
        Granularity::Daily => day_start(date, zone),
        Granularity::Weekly => day_start(
            date - Days::new(u64::from(date.weekday().num_days_from_monday())),
            zone,
        ),
        Granularity::Monthly => day_start(date.with_day(1).unwrap_or(date), zone),
    }
}

fn next_start(start: i64, zone: Tz, granularity: Granularity) -> i64 {
    let date = local(start, zone).date_naive();
    let next = match granularity {
        Granularity::Hourly => return start + HOUR_MILLIS,
        Granularity::Daily => date + Days::new(1),
        Granularity::Weekly => date + Days::new(7),
        Granularity::Monthly => date.with_day(1).unwrap_or(date) + Months::new(1),
    };
    day_start(next, zone)
}

/// The first instant of `date` in `zone`: midnight, or where a
/// daylight-saving change skips midnight, the first hour that exists.
fn day_start(date: NaiveDate, zone: Tz) -> i64 {
    (0..24)
        .find_map(|hour| {
            zone.from_local_datetime(&date.and_hms_opt(hour, 0, 0)?)
                .earliest()
        })
        .map_or(0, |start| start.timestamp_millis())
}

fn label(start: i64, zone: Tz, granularity: Granularity) -> String {
    let at = local(start, zone);
    match granularity {
        Granularity::Hourly => at.format("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        _ => at.format("%Y-%m-%d").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(text: &str) -> i64 {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .timestamp_millis()
    }

    fn slice(text: &str) -> (i64, i64) {
        (millis(text) / SLICE_MILLIS, 1)
    }

    #[test]
    fn a_fall_back_day_has_25_hours_and_its_repeated_hour_twice() {
        let zone: Tz = "America/New_York".parse().unwrap();
        // 2026-11-01: at 06:00 UTC New York goes from 01:59 EDT back to 01:00 EST.
        let first = slice("2026-11-01T05:30:00Z");
        let repeat = slice("2026-11-01T06:30:00Z");
        let since = millis("2026-11-01T04:00:00Z");
        let until = millis("2026-11-02T05:00:00Z");
        let hours = buckets(&[first, repeat], since, until, zone, Granularity::Hourly);
        assert_eq!(hours.len(), 25);
        let filled: Vec<&str> = hours
            .iter()
            .filter(|bucket| bucket.count == 1)
            .map(|bucket| bucket.date.as_str())
            .collect();
        assert_eq!(
            filled,
            ["2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00"]
        );
        let days = buckets(&[first, repeat], since, until, zone, Granularity::Daily);
        assert_eq!(days.len(), 1);
        assert_eq!((days[0].date.as_str(), days[0].count), ("2026-11-01", 2));
    }

    #[test]
    fn days_follow_the_zone_not_utc() {
        let zone: Tz = "America/New_York".parse().unwrap();
        // 23:30 in New York on 1 November is already 2 November in UTC.
        let late = slice("2026-11-02T04:30:00Z");
        let since = millis("2026-10-31T04:00:00Z");
        let until = millis("2026-11-03T05:00:00Z");
        let days = buckets(&[late], since, until, zone, Granularity::Daily);
        let dates: Vec<(&str, i64)> = days.iter().map(|b| (b.date.as_str(), b.count)).collect();
        assert_eq!(
            dates,
            [("2026-10-31", 0), ("2026-11-01", 1), ("2026-11-02", 0)]
        );
        let utc = buckets(&[late], since, until, Tz::UTC, Granularity::Daily);
        assert!(utc.iter().any(|b| b.date == "2026-11-02" && b.count == 1));
    }

    #[test]
    fn a_spring_forward_day_has_23_hours_and_weeks_start_on_monday() {
        let zone: Tz = "Europe/Berlin".parse().unwrap();
        // 2026-03-29: Berlin skips from 02:00 to 03:00.
        let since = millis("2026-03-28T23:00:00Z");
        let until = millis("2026-03-29T22:00:00Z");
        assert_eq!(
            buckets(&[], since, until, zone, Granularity::Hourly).len(),
            23
        );
        let weeks = buckets(&[], since, until, zone, Granularity::Weekly);
        assert_eq!(weeks[0].date, "2026-03-23");
        let months = buckets(
            &[],
            since,
            millis("2026-05-01T00:00:00Z"),
            zone,
            Granularity::Monthly,
        );
        let labels: Vec<&str> = months.iter().map(|b| b.date.as_str()).collect();
        assert_eq!(labels, ["2026-03-01", "2026-04-01", "2026-05-01"]);
    }
}
