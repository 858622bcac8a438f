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
            outln!("{}", render::team_table(&team));
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
    outln!("daemon: pid {}, version {}, protocol {}, up since {}", d.pid, d.version, d.protocol, time(d.started_at));
    outln!("home: {} ({} KiB of data)", d.home, d.db_bytes / 1024);
    outln!("socket: {}", d.socket);
    outln!(
        "sessions: {} live, {} known; {} message{} waiting",
        status.sessions_live,
        status.sessions_total,
        status.inbox_pending,
        if status.inbox_pending == 1 { "" } else { "s" }
    );
    let a = &status.admission;
    let exceptions = if a.exceptions.is_empty() { "none".to_owned() } else { a.exceptions.join(", ") };
    outln!("admission: {} (threshold {:.1}, {} ratings, exceptions: {exceptions})", a.mode, a.threshold, a.ratings);
    match &status.rules.error {
        None => outln!("rules: {} in force ({} user files)", status.rules.rules, status.rules.user_files),
        Some(e) => outln!("rules: {} in force; the user rule files do not compile:\n{e}", status.rules.rules),
    }
    if status.quarantined.is_empty() {
        outln!("quarantined: nobody");
    } else {
        outln!("quarantined:");
        for q in &status.quarantined {
            outln!("  {} until {}: {}", q.label, time(q.until), q.reason);
        }
    }
    outln!("remembered refused texts: {}", status.remembered_texts);
    match &status.relay {
        None => outln!("relay: none (this machine only; `agentfw join URL INVITE` to join one)"),
        Some(r) => {
            let state = match (&r.problem, r.connected) {
                (_, true) => "connected".to_owned(),
                (Some(why), false) => format!("not connected: {why}"),
                (None, false) => "connecting".to_owned(),
            };
            outln!(
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
    for warning in &status.warnings {
        outln!("warning: {warning}");
    }
    let team = agentfw_mcp::proto::TeamResult {
        you: None,
        admission_mode: status.admission.mode.clone(),
        agents: status.team.clone(),
    };
    outln!("\n{}", render::team_table(&team));
    ExitCode::SUCCESS
}
