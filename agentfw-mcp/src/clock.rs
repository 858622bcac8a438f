//! The adapter's clock and randomness: the core takes both from its caller, and these are
//! the only places this crate reads them.

use agentfw_core::time::Timestamp;

/// The wall clock, in milliseconds since the epoch.
#[allow(clippy::disallowed_methods)] // the adapter owns the clock
pub fn now() -> Timestamp {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    Timestamp::from_millis(ms)
}

/// 32 bytes from the operating system's random source.
#[allow(clippy::disallowed_methods)] // the adapter owns randomness
pub fn random_seed() -> [u8; 32] {
    let mut seed = [0u8; 32];
    if getrandom::fill(&mut seed).is_err() {
        // No OS randomness at all: fall back to the clock and pid, which still keeps
        // fence markers and ids distinct, if not secret. Linux always has getrandom.
        let mix = blake3::hash(format!("{:?}{}", std::time::SystemTime::now(), std::process::id()).as_bytes());
        seed = *mix.as_bytes();
    }
    seed
}

/// A random 128-bit token in lowercase hex (send keys, inbox batches, wake nonces).
pub fn token() -> String {
    let seed = random_seed();
    seed.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// A 256-bit secret in lowercase hex (the dashboard's tokens and sessions), or `None` when
/// the operating system gives no randomness: unlike [`random_seed`], never a guessable one.
#[allow(clippy::disallowed_methods)] // the adapter owns randomness
pub fn secret() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
