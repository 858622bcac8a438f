//! `agentfw team` and `agentfw status`.

use std::process::ExitCode;

use agentfw_mcp::render::{self, time};

use super::{connect, daemon_error, print_json};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn team(args: &Args) -> ExitCode {
    let mut client = match connect(true) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match client.team() {
        Ok(team) if args.json => print_json(&team),
        Ok(team) => {
            println!("{}", render::team_table(&team));
            ExitCode::SUCCESS
        }
        Err(e) => daemon_error(&e),
    }
}

pub fn status(args: &Args) -> ExitCode {
    let mut client = match connect(true) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let status = match client.status() {
        Ok(s) => s,
        Err(e) => return daemon_error(&e),
    };
    if args.json {
        return print_json(&status);
    }
    let d = &status.daemon;
    println!("daemon: pid {}, version {}, protocol {}, up since {}", d.pid, d.version, d.protocol, time(d.started_at));
    println!("home: {} ({} KiB of data)", d.home, d.db_bytes / 1024);
    println!("socket: {}", d.socket);
    println!(
        "sessions: {} live, {} known; {} message{} waiting",
        status.sessions_live,
        status.sessions_total,
        status.inbox_pending,
        if status.inbox_pending == 1 { "" } else { "s" }
    );
    let a = &status.admission;
    let exceptions = if a.exceptions.is_empty() { "none".to_owned() } else { a.exceptions.join(", ") };
    println!("admission: {} (threshold {:.1}, {} ratings, exceptions: {exceptions})", a.mode, a.threshold, a.ratings);
    match &status.rules.error {
        None => println!("rules: {} in force ({} user files)", status.rules.rules, status.rules.user_files),
        Some(e) => println!("rules: {} in force; the user rule files do not compile:\n{e}", status.rules.rules),
    }
    if status.quarantined.is_empty() {
        println!("quarantined: nobody");
    } else {
        println!("quarantined:");
        for q in &status.quarantined {
            println!("  {} until {}: {}", q.label, time(q.until), q.reason);
        }
    }
    println!("remembered refused texts: {}", status.remembered_texts);
    match &status.relay {
        None => println!("relay: none (this machine only; `agentfw join URL INVITE` to join one)"),
        Some(r) => {
            let state = match (&r.problem, r.connected) {
                (_, true) => "connected".to_owned(),
                (Some(why), false) => format!("not connected: {why}"),
                (None, false) => "connecting".to_owned(),
            };
            println!(
                "relay: {} as {} (device {}), {state}; {} agent{} on other machines, {} message{} waiting to go out",
                r.url,
                r.name,
                r.device,
                r.remote_agents,
                if r.remote_agents == 1 { "" } else { "s" },
                r.outbox,
                if r.outbox == 1 { "" } else { "s" }
            );
        }
    }
    // Read here, not by the daemon: it is this machine's kernel either way.
    if let Some(why) = agentfw_mcp::procfs::ptrace_open() {
        println!(
            "warning: {why}, so an agent can attach a debugger to another agent's process and send as it \
             (`gdb -p`); run `sudo sysctl kernel.yama.ptrace_scope=1` (and set it in /etc/sysctl.d) to stop that"
        );
    }
    let team = agentfw_mcp::proto::TeamResult {
        you: None,
        admission_mode: status.admission.mode.clone(),
        agents: status.team.clone(),
    };
    println!("\n{}", render::team_table(&team));
    ExitCode::SUCCESS
}
