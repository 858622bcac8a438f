//! `agentfw identity [--pid N] [--json]`: which agent session a process belongs to, decided
//! as the daemon decides it (ID1–ID3), or why it is none.

use std::path::PathBuf;
use std::process::ExitCode;

use agentfw_core::identity::Resolver;
use agentfw_mcp::config::DaemonConfig;
use agentfw_mcp::procfs::{self, CollectError, ProcClock};
use agentfw_mcp::render::time;

use super::{EXIT_REFUSED, fail, print_json};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The process to name (default: this one, i.e. the session it runs in).
    #[arg(long, value_name = "N")]
    pid: Option<u32>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// The configuration the daemon would use, read without creating anything.
#[allow(clippy::disallowed_methods)] // the adapter reads its environment
fn config() -> Result<DaemonConfig, String> {
    let user_home = std::env::var("HOME").ok();
    let dir = match std::env::var_os("AGENTFW_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => user_home.as_ref().map(|h| PathBuf::from(h).join(".local/share/agentfw")),
    };
    match dir {
        Some(dir) => DaemonConfig::load(&dir.join("config.toml"), user_home.as_deref()).map_err(|e| e.to_string()),
        None => Ok(DaemonConfig::default()),
    }
}

pub fn run(args: &Args) -> ExitCode {
    let config = match config() {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let resolver = match Resolver::new(config.identity) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let clock = match ProcClock::read() {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let pid = args.pid.unwrap_or_else(std::process::id);
    match procfs::identify(&resolver, pid, &clock) {
        Ok((identity, _)) => {
            if args.json {
                let mut value = match serde_json::to_value(&identity) {
                    Ok(v) => v,
                    Err(e) => return fail(e),
                };
                if let Some(map) = value.as_object_mut() {
                    map.insert("id".into(), identity.agent_id().to_string().into());
                    map.insert("started".into(), time(identity.started_at.as_millis()).into());
                    if let Some(why) = &identity.unverified {
                        map.insert("unverified_reason".into(), why.to_string().into());
                    }
                }
                return print_json(&value);
            }
            println!("{} is {}", pid, identity.label);
            println!(
                "  agent: {} (pid {}, started {})",
                identity.agent,
                identity.pid,
                time(identity.started_at.as_millis())
            );
            println!("  id: {}", identity.agent_id());
            println!("  exe: {}", identity.exe.as_deref().unwrap_or("unknown"));
            if let Some(script) = &identity.script {
                println!("  script: {script}");
            }
            println!("  project: {}", identity.project);
            match &identity.unverified {
                None => println!("  verified: yes"),
                Some(why) => println!("  verified: no: {why}"),
            }
            if let Some(s) = &identity.session {
                println!("  session: {} (from {})", s.id, s.source);
            }
            let chain: Vec<String> = identity.chain.iter().map(|s| format!("{} ({})", s.name, s.pid)).collect();
            println!("  chain: {}", chain.join(" <- "));
            ExitCode::SUCCESS
        }
        Err(CollectError::Unsupported) => fail(CollectError::Unsupported),
        Err(e) => {
            if args.json {
                let _ = print_json(&serde_json::json!({"agent": null, "pid": pid, "error": e.to_string()}));
            } else {
                println!("process {pid} is no known agent session: {e}");
            }
            ExitCode::from(EXIT_REFUSED)
        }
    }
}
