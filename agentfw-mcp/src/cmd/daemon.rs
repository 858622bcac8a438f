//! `agentfw daemon` and `agentfw mcp`.

use std::path::PathBuf;
use std::process::ExitCode;

use agentfw_mcp::client::{Client, ClientError};
use agentfw_mcp::daemon::{self, DaemonError};
use agentfw_mcp::home::Home;

use super::fail;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The state directory (default: `AGENTFW_HOME`, else `~/.local/share/agentfw`).
    #[arg(long, value_name = "DIR")]
    home: Option<PathBuf>,
    /// Ask the running daemon to stop, and wait until it has.
    #[arg(long)]
    stop: bool,
    /// Keep a connection to this relay (`http://HOST:PORT`) instead of the one `agentfw
    /// join` wrote into the configuration.
    #[arg(long, value_name = "URL")]
    relay: Option<String>,
}

pub fn run(args: &Args) -> ExitCode {
    let home = match Home::resolve(args.home.as_deref()) {
        Ok(home) => home,
        Err(e) => return fail(e),
    };
    if args.stop {
        return stop(&home);
    }
    // Another relay would carry this machine's messages and name its peers (AM6).
    if args.relay.is_some()
        && let Err(code) = super::require_person(Some(&home.dir), "daemon --relay")
    {
        return code;
    }
    match daemon::run(&home, args.relay.as_deref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ DaemonError::AlreadyRunning { .. }) => {
            eprintln!("agentfw daemon: {e}");
            ExitCode::from(1)
        }
        Err(e) => fail(e),
    }
}

fn stop(home: &Home) -> ExitCode {
    match stop_running(home) {
        Ok(true) => {
            eprintln!("agentfw daemon stopped");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            eprintln!("no agentfw daemon is running for `{}`", home.dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => super::daemon_error(&e),
    }
}

/// Asks the home's daemon to stop and waits until it has. False if none was running. The
/// daemon stops only for a person (AM6).
pub fn stop_running(home: &Home) -> Result<bool, ClientError> {
    let Ok(mut client) = Client::connect(home) else { return Ok(false) };
    client.shutdown()?;
    for _ in 0..500 {
        if !home.socket.exists() {
            return Ok(true);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Err(ClientError::Protocol("the daemon did not stop within 5 seconds".to_owned()))
}

pub fn mcp() -> ExitCode {
    match Home::resolve(None) {
        Ok(home) => agentfw_mcp::mcp::run(home),
        Err(e) => fail(e),
    }
}
