//! `agentfw allow A B` and `agentfw quarantine lift AGENT`: admin actions on this machine.
//! The daemon refuses them from inside an agent session (an agent must not lift its own
//! quarantine), unless `[admin] from_agents = true`.

use std::process::ExitCode;

use super::{connect, daemon_error};

#[derive(Debug, clap::Args)]
pub struct AllowArgs {
    /// One agent: a label such as `web (claude)` or an agent id.
    a: String,
    /// The other agent.
    b: String,
}

#[derive(Debug, clap::Subcommand)]
pub enum Quarantine {
    /// Lift an agent's quarantine now.
    Lift {
        /// A label such as `api (codex)` or an agent id.
        agent: String,
    },
}

pub fn allow(args: &AllowArgs) -> ExitCode {
    let mut client = match connect(true) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match client.allow(&args.a, &args.b) {
        Ok(done) => {
            outln!("{}", done.message);
            ExitCode::SUCCESS
        }
        Err(e) => daemon_error(&e),
    }
}

pub fn quarantine(command: &Quarantine) -> ExitCode {
    let Quarantine::Lift { agent } = command;
    let mut client = match connect(true) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match client.quarantine_lift(agent) {
        Ok(done) => {
            outln!("{}", done.message);
            ExitCode::SUCCESS
        }
        Err(e) => daemon_error(&e),
    }
}
