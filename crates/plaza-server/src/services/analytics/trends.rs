//! The dashboard's trend buckets: hours, days, weeks (from Monday) or
//! months of an IANA time zone, summed from 15-minute UTC slices. A day is
//! the zone's calendar day, so across a daylight-saving change it lasts 23
//! or 25 hours, and the repeated hour of a fall-back change is two hourly
//! buckets told apart by their offset.
//!
//! Calendar arithmetic is the `time` crate's; a zone's offsets come from
//! the time-zone database built into the binary (`tzdb_data`, read with
//! `tz-rs`), so the answer does not depend on the host's zone files.

use plaza_domain::analytics::SLICE_MILLIS;
use plaza_domain::time::from_millis;
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::{Date, Duration, Month, OffsetDateTime, UtcOffset};
use tz::TimeZoneRef;
use tz::datetime::{DateTime as ZoneDateTime, FoundDateTimeKind};

const HOUR_MILLIS: i64 = 3_600_000;

/// The label of an hourly bucket: its local start with its offset.
const HOUR_LABEL: &[BorrowedFormatItem<'_>] = format_description!(
    "[year]-[month]-[day]T[hour]:[minute]:[second][offset_hour sign:mandatory]:[offset_minute]"
);
/// The label of a daily, weekly or monthly bucket: its local first day.
const DAY_LABEL: &[BorrowedFormatItem<'_>] = format_description!("[year]-[month]-[day]");

/// An IANA time zone of the built-in database.
#[derive(Debug, Clone, Copy)]
pub struct Zone(TimeZoneRef<'static>);

impl Zone {
    pub const UTC: Zone = Zone(tzdb_data::time_zone::UTC);

    /// The zone called `name`, spelled exactly as the database spells it
    /// (`Europe/Berlin`, `UTC`; links such as `US/Eastern` too). `Factory`,
    /// the database's stand-in for a machine whose zone was never set, is
    /// no place and is refused.
    pub fn named(name: &str) -> Option<Zone> {
        if name == "Factory" || !tzdb_data::TZ_NAMES.contains(&name) {
            return None;
        }
        tzdb_data::find_tz(name.as_bytes()).map(|zone| Zone(*zone))
    }

    /// The zone's offset from UTC at `millis` (UTC where the database has
    /// no answer, which it has for every instant of a real zone).
    fn offset_at(self, millis: i64) -> UtcOffset {
        self.0
            .find_local_time_type(millis.div_euclid(1000))
            .ok()
            .and_then(|local| UtcOffset::from_whole_seconds(local.ut_offset()).ok())
            .unwrap_or(UtcOffset::UTC)
    }

    /// The earliest instant (Unix seconds) whose local time in the zone is
    /// `hour` o'clock of `date`, or `None` when a change skips that hour.
    fn earliest_at(self, date: Date, hour: u8) -> Option<i64> {
        let found = ZoneDateTime::find(
            date.year(),
            u8::from(date.month()),
            date.day(),
            hour,
            0,
            0,
            0,
            self.0,
        )
        .ok()?;
        found.into_inner().into_iter().find_map(|kind| match kind {
            FoundDateTimeKind::Normal(at) => Some(at.unix_time()),
            FoundDateTimeKind::Skipped { .. } => None,
        })
    }
}

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
    zone: Zone,
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

/// `millis` as the zone's local date and time, with its offset.
fn local(millis: i64, zone: Zone) -> OffsetDateTime {
    let utc = from_millis(millis);
    utc.checked_to_offset(zone.offset_at(millis)).unwrap_or(utc)
}

/// The start (Unix milliseconds) of the bucket holding `millis`.
fn bucket_start(millis: i64, zone: Zone, granularity: Granularity) -> i64 {
    let at = local(millis, zone);
    let date = at.date();
    match granularity {
        Granularity::Hourly => {
            millis
                - i64::from(u16::from(at.minute()) * 60 + u16::from(at.second())) * 1000
                - millis.rem_euclid(1000)
        }
        Granularity::Daily => day_start(date, zone),
        Granularity::Weekly => day_start(
            date.saturating_sub(Duration::days(i64::from(
                date.weekday().number_days_from_monday(),
            ))),
            zone,
        ),
        Granularity::Monthly => day_start(date.replace_day(1).unwrap_or(date), zone),
    }
}

/// The start of the bucket after the one starting at `start`; past the
/// last date `time` can hold, none follows.
fn next_start(start: i64, zone: Zone, granularity: Granularity) -> i64 {
    let date = local(start, zone).date();
    let next = match granularity {
        Granularity::Hourly => return start + HOUR_MILLIS,
        Granularity::Daily => date.next_day(),
        Granularity::Weekly => date.checked_add(Duration::weeks(1)),
        Granularity::Monthly => first_of_next_month(date),
    };
    next.map_or(i64::MAX, |next| day_start(next, zone))
}

fn first_of_next_month(date: Date) -> Option<Date> {
    let (year, month) = match date.month() {
        Month::December => (date.year().checked_add(1)?, Month::January),
        month => (date.year(), month.next()),
    };
    Date::from_calendar_date(year, month, 1).ok()
}

/// The first instant of `date` in `zone`: midnight, or where a
/// daylight-saving change skips midnight, the first hour that exists.
fn day_start(date: Date, zone: Zone) -> i64 {
    (0..24)
        .find_map(|hour| zone.earliest_at(date, hour))
        .map_or(0, |seconds| seconds * 1000)
}

fn label(start: i64, zone: Zone, granularity: Granularity) -> String {
    let format = match granularity {
        Granularity::Hourly => HOUR_LABEL,
        _ => DAY_LABEL,
    };
    local(start, zone).format(format).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use time::format_description::well_known::Rfc3339;

    use super::*;

    fn millis(text: &str) -> i64 {
        let at = OffsetDateTime::parse(text, &Rfc3339).unwrap();
        i64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap()
    }

    fn slice(text: &str) -> (i64, i64) {
        (millis(text) / SLICE_MILLIS, 1)
    }

    #[test]
    fn a_fall_back_day_has_25_hours_and_its_repeated_hour_twice() {
        let zone = Zone::named("America/New_York").unwrap();
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
        let zone = Zone::named("America/New_York").unwrap();
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
        let utc = buckets(&[late], since, until, Zone::UTC, Granularity::Daily);
        assert!(utc.iter().any(|b| b.date == "2026-11-02" && b.count == 1));
    }

    #[test]
    fn a_spring_forward_day_has_23_hours_and_weeks_start_on_monday() {
        let zone = Zone::named("Europe/Berlin").unwrap();
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

    #[test]
    fn where_a_change_skips_midnight_the_day_starts_at_the_change() {
        // 2024-03-10: Havana goes from 23:59:59 CST to 01:00 CDT, so that
        // day has no midnight and begins at 05:00 UTC.
        let zone = Zone::named("America/Havana").unwrap();
        let since = millis("2024-03-09T05:00:00Z");
        let until = millis("2024-03-11T04:00:00Z");
        let days = buckets(&[], since, until, zone, Granularity::Daily);
        let labels: Vec<&str> = days.iter().map(|b| b.date.as_str()).collect();
        assert_eq!(labels, ["2024-03-09", "2024-03-10"]);
        assert_eq!(
            day_start(
                Date::from_calendar_date(2024, Month::March, 10).unwrap(),
                zone
            ),
            millis("2024-03-10T05:00:00Z")
        );
    }

    #[test]
    fn zones_are_named_exactly_as_the_database_names_them() {
        assert!(Zone::named("Europe/Berlin").is_some());
        assert!(
            Zone::named("US/Eastern").is_some(),
            "a link of the database"
        );
        assert!(Zone::named("UTC").is_some());
        assert!(Zone::named("europe/berlin").is_none());
        assert!(Zone::named("Mars/Olympus").is_none());
        assert!(Zone::named("Factory").is_none());
        assert!(Zone::named("").is_none());
    }
}
