//! One module per command group.

pub mod rules;
pub mod scan;

mod load;

use std::process::ExitCode;

/// Exit status when something went wrong that is not a verdict: bad input, a file that
/// cannot be read, rules that do not compile.
pub const EXIT_ERROR: u8 = 2;

/// Prints `error: ...` to stderr and returns the error exit code.
pub fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_ERROR)
}

/// The wall clock, for the `now` rules see. The core never reads it itself.
#[allow(clippy::disallowed_methods)]
pub fn now() -> agentfw_core::time::Timestamp {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    agentfw_core::time::Timestamp::from_millis(ms)
}
