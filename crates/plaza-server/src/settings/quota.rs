//! A rate limit's quota as the settings write it: a number of requests per
//! period, such as `"100/hour"`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A number of requests per period: `"100/hour"`, `"100/minute"`, `"5/10s"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub count: u32,
    pub period: Duration,
}

impl Quota {
    pub const fn per_hour(count: u32) -> Self {
        Quota {
            count,
            period: Duration::from_secs(3600),
        }
    }

    pub(crate) fn period_micros(&self) -> u64 {
        u64::try_from(self.period.as_micros()).unwrap_or(u64::MAX)
    }

    /// The time one request's cell takes to drain. Rounded down, so the
    /// N-th request of a burst is never refused by rounding.
    pub(crate) fn interval_micros(&self) -> u64 {
        self.period_micros() / u64::from(self.count.max(1))
    }
}

impl std::str::FromStr for Quota {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let problem = || format!("{text:?} is not a quota such as \"100/hour\" or \"5/10s\"");
        let (count, period) = text.split_once('/').ok_or_else(problem)?;
        let count: u32 = count.trim().parse().map_err(|_| problem())?;
        let period = period.trim();
        let period = match period {
            "second" | "s" => Duration::from_secs(1),
            "minute" | "m" => Duration::from_secs(60),
            "hour" | "h" => Duration::from_secs(3600),
            "day" | "d" => Duration::from_secs(86_400),
            other => {
                let split = other
                    .find(|c: char| !c.is_ascii_digit())
                    .ok_or_else(problem)?;
                let (amount, unit) = other.split_at(split);
                let amount: u64 = amount.parse().map_err(|_| problem())?;
                let unit = match unit {
                    "s" => 1,
                    "m" => 60,
                    "h" => 3600,
                    "d" => 86_400,
                    _ => return Err(problem()),
                };
                Duration::from_secs(amount.saturating_mul(unit))
            }
        };
        if count == 0 || period.is_zero() || period > Duration::from_secs(366 * 86_400) {
            return Err(format!(
                "{text:?}: the count must be at least 1 and the period between 1 second and a year"
            ));
        }
        Ok(Quota { count, period })
    }
}

impl std::fmt::Display for Quota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.period.as_secs() {
            1 => write!(f, "{}/second", self.count),
            60 => write!(f, "{}/minute", self.count),
            3600 => write!(f, "{}/hour", self.count),
            86_400 => write!(f, "{}/day", self.count),
            secs => write!(f, "{}/{secs}s", self.count),
        }
    }
}

impl Serialize for Quota {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Quota {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_parse_from_their_documented_forms() {
        assert_eq!("100/hour".parse(), Ok(Quota::per_hour(100)));
        assert_eq!(
            "5/10s".parse::<Quota>().map(|quota| quota.period),
            Ok(Duration::from_secs(10))
        );
        assert_eq!(
            "100/minute".parse::<Quota>().map(|quota| quota.to_string()),
            Ok("100/minute".to_owned())
        );
        for bad in [
            "",
            "100",
            "0/hour",
            "10/fortnight",
            "x/hour",
            "1/0s",
            "-1/h",
        ] {
            assert!(bad.parse::<Quota>().is_err(), "{bad}");
        }
    }
}
