//! One module per command group.

pub mod admin;
pub mod admission;
pub mod audit;
pub mod daemon;
pub mod dashboard;
pub mod demo;
pub mod hook;
pub mod identity;
pub mod install;
pub mod join;
pub mod keys;
pub mod messages;
pub mod rules;
pub mod scan;
pub mod team;
pub mod trust;

mod files;
pub(crate) use agentfw_mcp::load;

use std::process::ExitCode;

use agentfw_mcp::client::{Client, ClientError};
use agentfw_mcp::home::Home;

/// Exit status when something went wrong that is not a verdict: bad input, a file that
/// cannot be read, rules that do not compile.
pub const EXIT_ERROR: u8 = 2;
/// Exit status for a refusal or a "no": a message refused, a process that is no agent.
pub const EXIT_REFUSED: u8 = 1;

/// Prints `error: ...` to stderr and returns the error exit code.
pub fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_ERROR)
}

/// The wall clock, for the `now` rules see. The core never reads it itself.
pub fn now() -> agentfw_core::time::Timestamp {
    agentfw_mcp::clock::now()
}

/// The admin check (AM6) for a command this process carries out itself in the home (`home`,
/// else the default one): the refusal's exit status if it is refused.
pub fn require_person(home: Option<&std::path::Path>, what: &str) -> Result<(), ExitCode> {
    let home = Home::resolve(home).map_err(fail)?;
    agentfw_mcp::admin::check_here(&home.dir, what).map_err(|e| match e {
        agentfw_mcp::admin::AdminError::Refused(why) => {
            eprintln!("error: {why}");
            ExitCode::from(EXIT_REFUSED)
        }
        agentfw_mcp::admin::AdminError::Config(why) => fail(why),
    })
}

/// A client for the home's daemon, starting the daemon if `start`.
pub fn connect(start: bool) -> Result<Client, ExitCode> {
    let home = Home::resolve(None).map_err(fail)?;
    let client = if start { Client::connect_or_start(&home) } else { Client::connect(&home) };
    client.map_err(fail)
}

/// A daemon error as the command's outcome: refusals and "no such agent" exit 1, the rest 2.
pub fn daemon_error(e: &ClientError) -> ExitCode {
    eprintln!("error: {e}");
    match e.code() {
        Some(code) if code == agentfw_mcp::proto::code::REFUSED || code.starts_with("recipient.") => {
            ExitCode::from(EXIT_REFUSED)
        }
        Some(code) if code == agentfw_mcp::proto::code::NOT_AGENT || code == agentfw_mcp::proto::code::NOT_FOUND => {
            ExitCode::from(EXIT_REFUSED)
        }
        Some(code) if code.starts_with("admin.") => ExitCode::from(EXIT_REFUSED),
        _ => ExitCode::from(EXIT_ERROR),
    }
}

/// Print `value` as one line of JSON.
pub fn print_json(value: &impl serde::Serialize) -> ExitCode {
    match serde_json::to_string(value) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
