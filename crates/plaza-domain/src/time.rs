//! Timestamps as the database stores them: Unix milliseconds, UTC.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The current time in Unix milliseconds, the unit every timestamp column uses.
pub fn now_millis() -> i64 {
    to_millis(OffsetDateTime::now_utc())
}

/// Converts a point in time to the stored unit.
pub fn to_millis(at: OffsetDateTime) -> i64 {
    (at.unix_timestamp_nanos() / 1_000_000) as i64
}

/// Converts a stored timestamp back; values outside the representable range
/// (which the service never writes) clamp to the Unix epoch.
pub fn from_millis(millis: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// A stored timestamp as RFC 3339 in UTC, as every API answer writes times.
pub fn rfc3339(millis: i64) -> String {
    from_millis(millis).format(&Rfc3339).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_round_trip_keeps_millisecond_precision() {
        let at = OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_000_000).unwrap();
        assert_eq!(from_millis(to_millis(at)), at);
    }
}
