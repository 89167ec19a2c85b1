//! Checks shared by the content routes: paging, sort order, ids and
//! booleans in query strings, and the rules every stored text follows.
//! Query parameters arrive as strings and are checked here, so each bad one
//! gets a 422 naming it and saying what would be right.

use plaza_domain::listing::{Page, SortOrder};
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::error::{AppError, FieldError};

/// Page size when none is asked for.
pub const DEFAULT_LIMIT: i64 = 20;
/// Largest page size.
pub const MAX_LIMIT: i64 = 100;

/// The problems found in one request, reported together.
#[derive(Debug, Default)]
pub struct Problems(Vec<FieldError>);

impl Problems {
    pub fn add(&mut self, field: impl Into<String>, reason: impl Into<String>) {
        self.0.push(FieldError::new(field, reason));
    }

    /// Records `problem` as it is (with the issue kind the unversioned
    /// admin surface lists).
    pub fn push(&mut self, problem: FieldError) {
        self.0.push(problem);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `result`, or `None` with its error recorded under `field`.
    pub fn check<T>(&mut self, field: &str, result: Result<T, String>) -> Option<T> {
        result.map_err(|reason| self.add(field, reason)).ok()
    }

    /// `Ok` when nothing was wrong, else a 422 listing every field.
    pub fn finish(self) -> Result<(), AppError> {
        if self.0.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = self.0.iter().map(|field| field.field.as_str()).collect();
        Err(AppError::Validation {
            message: format!("invalid {}", names.join(", ")),
            fields: self.0,
        })
    }
}

/// `limit` (1 to [`MAX_LIMIT`], default [`DEFAULT_LIMIT`]) and `offset`
/// (0 or more, default 0). An offset past the end is not an error: the page
/// is empty.
pub fn page(problems: &mut Problems, limit: Option<&str>, offset: Option<&str>) -> Page {
    page_or(problems, limit, offset, DEFAULT_LIMIT)
}

/// [`page`] with another default `limit` (the versioned admin lists: 50).
pub fn page_or(
    problems: &mut Problems,
    limit: Option<&str>,
    offset: Option<&str>,
    default_limit: i64,
) -> Page {
    let limit = problems
        .check("limit", parse_limit(limit, default_limit))
        .unwrap_or(default_limit);
    let offset = problems.check("offset", parse_offset(offset)).unwrap_or(0);
    Page { limit, offset }
}

/// `limit` alone (1 to [`MAX_LIMIT`], default `default_limit`), for the
/// lists paged by a cursor.
pub fn limit(problems: &mut Problems, raw: Option<&str>, default_limit: i64) -> i64 {
    problems
        .check("limit", parse_limit(raw, default_limit))
        .unwrap_or(default_limit)
}

fn parse_limit(raw: Option<&str>, default_limit: i64) -> Result<i64, String> {
    let Some(raw) = raw else {
        return Ok(default_limit);
    };
    let reason = format!("must be a whole number from 1 to {MAX_LIMIT}");
    match raw.trim().parse::<i64>() {
        Ok(limit) if (1..=MAX_LIMIT).contains(&limit) => Ok(limit),
        _ => Err(reason),
    }
}

fn parse_offset(raw: Option<&str>) -> Result<i64, String> {
    let Some(raw) = raw else { return Ok(0) };
    match raw.trim().parse::<i64>() {
        Ok(offset) if offset >= 0 => Ok(offset),
        _ => Err(format!("must be a whole number from 0 to {}", i64::MAX)),
    }
}

/// The years a date parameter may name (DECISIONS.md, Operations).
const DATE_YEARS: std::ops::RangeInclusive<i32> = 1970..=9999;

const DAY_MILLIS: i64 = 24 * 60 * 60 * 1000;

/// An instant as Unix milliseconds, from an RFC 3339 time
/// (`2026-11-23T10:00:00Z`) or a date (`2026-11-23`, read as the start of
/// that day in UTC, or with `end_of_day` as the start of the next, so that
/// a date range includes its last day). The year written must be one of
/// [`DATE_YEARS`].
pub fn instant(
    problems: &mut Problems,
    field: &str,
    raw: Option<&str>,
    end_of_day: bool,
) -> Option<i64> {
    problems.check(field, parse_instant(raw?.trim(), end_of_day))
}

fn parse_instant(raw: &str, end_of_day: bool) -> Result<i64, String> {
    let malformed =
        || "must be a date (2026-11-23) or an RFC 3339 time (2026-11-23T10:00:00Z)".to_owned();
    let (year, millis) =
        match time::OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc3339) {
            Ok(at) => (at.year(), Some(plaza_domain::time::to_millis(at))),
            Err(_) => {
                let date = time::Date::parse(
                    raw,
                    time::macros::format_description!("[year]-[month]-[day]"),
                )
                .map_err(|_| malformed())?;
                let start = plaza_domain::time::to_millis(date.midnight().assume_utc());
                let millis = if end_of_day {
                    start.checked_add(DAY_MILLIS)
                } else {
                    Some(start)
                };
                (date.year(), millis)
            }
        };
    if !DATE_YEARS.contains(&year) {
        return Err(format!(
            "must be in the years {} to {}",
            DATE_YEARS.start(),
            DATE_YEARS.end()
        ));
    }
    millis.ok_or_else(malformed)
}

/// `asc` or `desc` (default).
pub fn order(problems: &mut Problems, raw: Option<&str>) -> SortOrder {
    raw.and_then(|raw| {
        problems.check(
            "order",
            SortOrder::parse(raw).ok_or_else(|| "must be asc or desc".to_owned()),
        )
    })
    .unwrap_or_default()
}

/// `true` or `false`.
pub fn boolean(problems: &mut Problems, field: &str, raw: Option<&str>) -> Option<bool> {
    raw.and_then(|raw| {
        problems.check(
            field,
            match raw {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err("must be true or false".to_owned()),
            },
        )
    })
}

/// A database id given as a filter: digits only, like ids in paths.
pub fn id(problems: &mut Problems, field: &str, raw: Option<&str>) -> Option<i64> {
    raw.and_then(|raw| {
        let parsed = raw
            .bytes()
            .all(|byte| byte.is_ascii_digit())
            .then(|| raw.parse::<i64>().ok())
            .flatten()
            .filter(|id| *id > 0);
        problems.check(
            field,
            parsed.ok_or_else(|| "must be a user id (digits only)".to_owned()),
        )
    })
}

/// Ids of site rules as a body gives them (strings of digits or numbers),
/// recording a problem for `field` when one is neither; whether each is a
/// rule is the domain's check ([`plaza_domain::rules::check_cited`]).
pub fn rule_ids(problems: &mut Problems, field: &str, raw: &[serde_json::Value]) -> Vec<i64> {
    let mut ids = Vec::with_capacity(raw.len());
    for value in raw {
        let id = match value {
            serde_json::Value::String(text) => crate::http::extract::parse_id(text),
            serde_json::Value::Number(number) => number.as_i64().filter(|id| *id > 0),
            _ => None,
        };
        match id {
            Some(id) => ids.push(id),
            None => {
                problems.add(field, "must be ids of site rules");
                break;
            }
        }
    }
    ids
}

/// A list filter that is `all` (the default) or one value `parse` knows;
/// anything else is a problem of `field` saying which values it takes.
pub fn filter<T>(
    problems: &mut Problems,
    field: &str,
    raw: Option<&str>,
    parse: impl Fn(&str) -> Option<T>,
    values: &str,
) -> Option<T> {
    match raw {
        None | Some("all") => None,
        Some(raw) => problems.check(
            field,
            parse(raw).ok_or_else(|| format!("must be all, {values}")),
        ),
    }
}

/// How a stored text is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextRule {
    /// One line: no control characters at all.
    Line,
    /// Several lines: newlines and tabs allowed, other control characters
    /// (NUL among them, which PostgreSQL cannot store) refused.
    Lines,
    /// Several lines as replies are written: newlines and tabs only (no
    /// carriage return either).
    NewlinesAndTabs,
}

/// Checks a text: at most `max_chars`, non-blank when `required`, and no
/// control characters its rule does not allow. Returns the reason when
/// it is refused.
pub fn check_text(
    value: &str,
    max_chars: usize,
    required: bool,
    rule: TextRule,
) -> Result<(), String> {
    if required && value.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    if value.chars().count() > max_chars {
        return Err(format!("must be at most {max_chars} characters"));
    }
    let allowed = |c: char| match rule {
        TextRule::Line => false,
        TextRule::Lines => matches!(c, '\n' | '\r' | '\t'),
        TextRule::NewlinesAndTabs => matches!(c, '\n' | '\t'),
    };
    if value.chars().any(|c| c.is_control() && !allowed(c)) {
        return Err("must not contain control characters".to_owned());
    }
    if rule == TextRule::Line && value.chars().any(plaza_domain::text::is_bidi_control) {
        return Err("must not contain bidirectional override or isolate characters".to_owned());
    }
    Ok(())
}

/// Paging of a list answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Pagination {
    /// How many items match in all.
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
    /// Whether items follow this page.
    #[serde(rename = "hasMore")]
    pub has_more: bool,
}

impl Pagination {
    pub fn new(total: i64, page: Page) -> Self {
        Pagination {
            total,
            limit: page.limit,
            offset: page.offset,
            has_more: page.offset.saturating_add(page.limit) < total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_outside_the_range_are_refused() {
        assert_eq!(parse_limit(None, DEFAULT_LIMIT), Ok(DEFAULT_LIMIT));
        assert_eq!(parse_limit(Some("100"), DEFAULT_LIMIT), Ok(100));
        assert!(parse_limit(Some("0"), DEFAULT_LIMIT).is_err());
        assert!(parse_limit(Some("101"), DEFAULT_LIMIT).is_err());
        assert!(parse_limit(Some("-1"), DEFAULT_LIMIT).is_err());
        assert!(parse_limit(Some("1e3"), DEFAULT_LIMIT).is_err());
        assert!(parse_offset(Some("-1")).is_err());
        assert_eq!(parse_offset(Some("99999999999")), Ok(99_999_999_999));
    }

    #[test]
    fn dates_are_read_in_the_years_1970_to_9999_without_overflow() {
        assert_eq!(parse_instant("1970-01-01", false), Ok(0));
        assert_eq!(parse_instant("1970-01-01", true), Ok(DAY_MILLIS));
        assert_eq!(
            parse_instant("9999-12-31", true),
            Ok(253_402_300_800_000),
            "the end of the last day"
        );
        assert_eq!(
            parse_instant("9999-12-31T23:59:59-23:59", false),
            Ok(253_402_387_139_000)
        );
        for outside in ["1969-12-31", "0000-01-01", "1969-12-31T23:59:59Z"] {
            assert_eq!(
                parse_instant(outside, true),
                Err("must be in the years 1970 to 9999".to_owned()),
                "{outside}"
            );
        }
        assert!(parse_instant("10000-01-01", true).is_err());
        assert!(parse_instant("2026-02-30", false).is_err());
    }

    #[test]
    fn texts_refuse_control_characters_by_rule() {
        assert!(check_text("a\nb", 10, true, TextRule::Lines).is_ok());
        assert!(check_text("a\nb", 10, true, TextRule::Line).is_err());
        assert!(check_text("a\0b", 10, true, TextRule::Lines).is_err());
        assert!(check_text("   ", 10, true, TextRule::Line).is_err());
        assert!(check_text("日本語", 3, true, TextRule::Line).is_ok());
        assert!(check_text("日本語!", 3, true, TextRule::Line).is_err());
        assert!(check_text("evil\u{202E}gpj.exe", 30, true, TextRule::Line).is_err());
        assert!(check_text("a\u{2066}b", 30, true, TextRule::Line).is_err());
    }
}
