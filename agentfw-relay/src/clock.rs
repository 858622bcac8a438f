//! The relay's clock and randomness: the only places this crate reads them.

use agentfw_core::time::Timestamp;

/// Now, by the system clock.
#[allow(clippy::disallowed_methods)] // The adapter owns the clock.
pub fn now() -> Timestamp {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Timestamp::from_millis(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

/// A monotonic instant, for timeouts and rate limits.
#[allow(clippy::disallowed_methods)] // The adapter owns the clock.
pub fn instant() -> std::time::Instant {
    std::time::Instant::now()
}

/// `n` bytes from the operating system.
#[allow(clippy::disallowed_methods)] // The adapter owns randomness.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], getrandom::Error> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out)?;
    Ok(out)
}
