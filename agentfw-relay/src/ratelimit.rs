//! A token bucket: `rate` a second sustained, up to `burst` at once. Sans-IO: the caller
//! passes the time.

use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    pub fn new(rate_per_second: u32, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        Self { rate: f64::from(rate_per_second.max(1)), burst, tokens: burst, at: now }
    }

    /// Takes one token, or says how long until one is there.
    pub fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = self.at.max(now);
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(((1.0 - self.tokens) / self.rate).max(0.001)))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::disallowed_methods)]

    use super::*;

    #[test]
    fn bursts_then_refills_at_the_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(10, 3, t0);
        assert!((0..3).all(|_| b.take(t0).is_ok()));
        let wait = b.take(t0).unwrap_err();
        assert!(wait > Duration::from_millis(90) && wait <= Duration::from_millis(100), "{wait:?}");
        assert!(b.take(t0 + Duration::from_millis(100)).is_ok());
        assert!(b.take(t0 + Duration::from_millis(100)).is_err());
        // A long pause refills only to the burst.
        let later = t0 + Duration::from_secs(60);
        assert!((0..3).all(|_| b.take(later).is_ok()));
        assert!(b.take(later).is_err());
    }
}
