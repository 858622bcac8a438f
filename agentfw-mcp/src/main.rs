//! `agentfw`: the command line of agentfw, a firewall for messages between AI agents.
//!
//! Each command group lives in its own module under `cmd/`; this file only parses the
//! command line and hands over.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod dirs;
mod harness;
mod hooks;
mod install;

#[derive(Debug, Parser)]
#[command(name = "agentfw", version, about = "A firewall for messages between AI agents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The whole story on one machine in seconds: three real agent sessions and a real
    /// daemon in a temporary home, a question and answer, a refused secret, a limit
    /// tripping, a forwarded injection contained, and the team table.
    Demo(cmd::demo::Args),
    /// Judge text with the rule engine, as if it were a message.
    Scan(cmd::scan::Args),
    /// Check, test and list policy rules.
    #[command(subcommand)]
    Rules(cmd::rules::Command),
    /// Run the local daemon in the foreground (normally started by `agentfw mcp`).
    Daemon(cmd::daemon::Args),
    /// The stdio MCP server for one agent session.
    Mcp,
    /// Send a message as the agent session this command runs in.
    Send(cmd::messages::SendArgs),
    /// Read the messages waiting for the agent session this command runs in.
    Inbox(cmd::messages::InboxArgs),
    /// Who is reachable, who is refused or contained, and why.
    Team(cmd::team::Args),
    /// The daemon, the team, quarantines, admission and rules.
    Status(cmd::team::Args),
    /// The decision log, metadata only.
    Audit(cmd::audit::Args),
    /// A live, read-only page about this machine (team, conversations, refusals, quarantines),
    /// served by the daemon on 127.0.0.1; prints its URL.
    Dashboard(cmd::dashboard::Args),
    /// Let two agents talk again after the turn fuse stopped them.
    Allow(cmd::admin::AllowArgs),
    /// Quarantines.
    #[command(subcommand)]
    Quarantine(cmd::admin::Quarantine),
    /// Which agent session a process belongs to.
    Identity(cmd::identity::Args),
    /// The admission gate: evaluate inventories, preview thresholds, import ratings, switch modes.
    #[command(subcommand)]
    Admission(cmd::admission::Command),
    /// What the installed harness hooks run.
    Hook(cmd::hook::Args),
    /// Register agentfw's MCP server, hooks and permission overlay with a harness.
    Install(cmd::install::InstallArgs),
    /// Remove exactly what `agentfw install` added, putting back what it replaced.
    Uninstall(cmd::install::UninstallArgs),
    /// Refuse every message from a teammate (adds it to the trust file's `blocked` list).
    Block(cmd::trust::Args),
    /// Lift a block.
    Unblock(cmd::trust::Args),
    /// This device's keys for sealed envelopes between devices.
    #[command(subcommand)]
    Keys(cmd::keys::Command),
    /// Seal stdin for another device, signed by this one; the envelope goes to stdout.
    Seal(cmd::keys::SealArgs),
    /// Open an envelope on stdin sent by another device to this one; plaintext to stdout.
    Open(cmd::keys::OpenArgs),
    /// Enroll this device with a relay; the daemon then keeps a connection to it.
    Join(cmd::join::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo(args) => cmd::demo::run(&args),
        Command::Scan(args) => cmd::scan::run(&args),
        Command::Rules(command) => cmd::rules::run(&command),
        Command::Daemon(args) => cmd::daemon::run(&args),
        Command::Mcp => cmd::daemon::mcp(),
        Command::Send(args) => cmd::messages::send(&args),
        Command::Inbox(args) => cmd::messages::inbox(&args),
        Command::Team(args) => cmd::team::team(&args),
        Command::Status(args) => cmd::team::status(&args),
        Command::Audit(args) => cmd::audit::run(&args),
        Command::Dashboard(args) => cmd::dashboard::run(&args),
        Command::Allow(args) => cmd::admin::allow(&args),
        Command::Quarantine(command) => cmd::admin::quarantine(&command),
        Command::Identity(args) => cmd::identity::run(&args),
        Command::Admission(command) => cmd::admission::run(&command),
        Command::Hook(args) => cmd::hook::run(&args),
        Command::Install(args) => cmd::install::install(&args),
        Command::Uninstall(args) => cmd::install::uninstall(&args),
        Command::Block(args) => cmd::trust::block(&args),
        Command::Unblock(args) => cmd::trust::unblock(&args),
        Command::Keys(command) => cmd::keys::run(&command),
        Command::Seal(args) => cmd::keys::seal_cmd(&args),
        Command::Open(args) => cmd::keys::open_cmd(&args),
        Command::Join(args) => cmd::join::run(&args),
    }
}
