//! Time as the caller tells it: milliseconds since the Unix epoch.
//!
//! The core never reads a clock. Every input carries `now`; if a caller's clock steps
//! backwards, windows are computed with saturating arithmetic, so nothing panics or expires
//! early, and entries simply live a little longer.

use core::time::Duration;

use serde::{Deserialize, Serialize};

/// A point in time, in milliseconds since the Unix epoch.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
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

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
