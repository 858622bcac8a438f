//! What the host gives the sans-IO core: the time and randomness. A caller may pass both
//! (`now`, `seed`) to drive the core deterministically; otherwise they come from the
//! wall clock and the OS.

use agentfw_core::time::Timestamp;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use crate::error::Failure;

/// `now` as given (milliseconds since the epoch), else the wall clock.
pub fn at(now: Option<u64>) -> Timestamp {
    now.map_or_else(wall_clock, Timestamp::from_millis)
}

/// The binding owns the clock; the core never reads one. A clock set before 1970 reads as
/// the epoch, one past the year 584 million as the largest time.
#[allow(clippy::disallowed_methods)]
fn wall_clock() -> Timestamp {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    Timestamp::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

/// A ChaCha20 generator seeded from the OS, or from `seed`: a fixed seed makes keys,
/// markers and ids predictable, so it is for tests and test vectors only.
#[allow(clippy::disallowed_methods)]
pub fn rng(seed: Option<u64>) -> Result<ChaCha20Rng, Failure> {
    match seed {
        Some(seed) => Ok(ChaCha20Rng::seed_from_u64(seed)),
        None => {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).map_err(|e| Failure::Input(format!("the OS has no randomness to give: {e}")))?;
            Ok(ChaCha20Rng::from_seed(key))
        }
    }
}
