//! Time as the caller tells it: milliseconds since the Unix epoch.
//!
//! The core never reads a clock. Every input carries `now`; if a caller's clock steps
//! backwards, windows are computed with saturating arithmetic, so nothing panics or expires
//! early, and entries simply live a little longer.

use core::time::Duration;

use serde::{Deserialize, Serialize};

/// A point in time, in milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    pub const fn from_millis(ms: u64) -> Self {
        Self(ms)
    }

    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// How long ago `earlier` was, zero if it is in the future.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

impl core::ops::Add<Duration> for Timestamp {
    type Output = Timestamp;

    /// `self + d`, saturating at the end of time.
    fn add(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_add(millis(d)))
    }
}

impl core::fmt::Display for Timestamp {
    /// RFC 3339 in UTC with milliseconds, e.g. `2026-11-30T14:05:00.000Z`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let secs = self.0 / 1000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (y, m, d) = civil_from_days(days);
        let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
        write!(f, "{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{:03}Z", self.0 % 1000)
    }
}

/// Year, month and day of the `days`th day after 1970-01-01 (the proleptic Gregorian
/// calendar, after Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_as_rfc3339_utc() {
        assert_eq!(Timestamp::from_millis(0).to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Timestamp::from_millis(951_782_400_123).to_string(), "2000-02-29T00:00:00.123Z");
        assert_eq!(Timestamp::from_millis(1_796_047_500_000).to_string(), "2026-11-30T14:05:00.000Z");
    }

    #[test]
    fn arithmetic_saturates() {
        let end = Timestamp::from_millis(u64::MAX) + Duration::from_secs(1);
        assert_eq!(end.as_millis(), u64::MAX);
        assert_eq!(Timestamp::from_millis(5).since(Timestamp::from_millis(9)), Duration::ZERO);
    }
}
