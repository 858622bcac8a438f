//! One module per command group.

/// `println!` for a command's output, through [`write_out`]: a reader that stops reading
/// (`agentfw audit | head -3`) ends the command quietly instead of with a panic.
macro_rules! outln {
    () => {
        $crate::cmd::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cmd::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for a command's output, through [`write_out`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cmd::write_out(format_args!($($arg)*))
    };
}

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

use std::io::Write as _;
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

/// Exit status when the reader of the output went away (a pipe into `head` closed early):
/// 128 + SIGPIPE, what a shell reports for a filter the signal ended. Never 0, since the
/// status of `scan` is its verdict: a refusal must not read as "allow" because nobody read it.
pub const EXIT_PIPE_CLOSED: i32 = 141;

/// Writes a command's output to stdout. When the reader has gone the command ends at once and
/// quietly ([`EXIT_PIPE_CLOSED`]); any other failure to write is an error exit. `println!`
/// would panic on both. SIGPIPE itself stays ignored (the standard library's default): the
/// daemon and the clients write to sockets a peer may close, where an error beats a silent
/// death.
pub fn write_out(args: std::fmt::Arguments) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(EXIT_PIPE_CLOSED);
        }
        eprintln!("error: cannot write the output: {e}");
        std::process::exit(i32::from(EXIT_ERROR));
    }
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
            outln!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
