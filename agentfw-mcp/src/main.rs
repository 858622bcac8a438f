//! `agentfw`: the command line of agentfw, a firewall for messages between AI agents.
//!
//! Each command group lives in its own module under `cmd/`; this file only parses the
//! command line and hands over.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

#[derive(Debug, Parser)]
#[command(name = "agentfw", version, about = "A firewall for messages between AI agents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Judge text with the rule engine, as if it were a message.
    Scan(cmd::scan::Args),
    /// Check, test and list policy rules.
    #[command(subcommand)]
    Rules(cmd::rules::Command),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Scan(args) => cmd::scan::run(&args),
        Command::Rules(command) => cmd::rules::run(&command),
    }
}
