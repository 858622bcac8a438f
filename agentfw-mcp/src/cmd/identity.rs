//! `agentfw identity [--pid N] [--json]`: which agent session a process belongs to, decided
//! as the daemon decides it (ID1–ID6), or why it is none; `agentfw identity pin`: pin the
//! digests of the harness programs installed now (ID2), for a person only (AM6).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentfw_core::identity::Resolver;
use agentfw_mcp::config::DaemonConfig;
use agentfw_mcp::pins::{self, Pin, Pins};
use agentfw_mcp::procfs::{self, CollectError, ProcClock};
use agentfw_mcp::render::time;

use super::{EXIT_REFUSED, fail, files, print_json};
use crate::harness::Harness;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Sub>,
    /// The process to name (default: this one, i.e. the session it runs in).
    #[arg(long, value_name = "N")]
    pid: Option<u32>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Pin the digests of the harness programs installed now, so that sessions they run are
    /// verified (after installing or updating a harness where its user can write).
    Pin {
        /// The harnesses to pin (default: all).
        #[arg(value_enum)]
        harness: Vec<Harness>,
    },
}

/// The home the daemon would use, found without creating anything.
#[allow(clippy::disallowed_methods)] // the adapter reads its environment
fn home_dir() -> Option<PathBuf> {
    match std::env::var_os("AGENTFW_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share/agentfw")),
    }
}

/// The configuration the daemon would use, pins included.
fn config() -> Result<DaemonConfig, String> {
    match home_dir() {
        Some(dir) => DaemonConfig::of_home(&dir).map_err(|e| e.to_string()),
        None => Ok(DaemonConfig::default()),
    }
}

/// Pin the digests of the programs of each agent kind in `kinds` found at its install
/// locations, in the home `state`; what was pinned, one line per kind. Earlier pins stay:
/// a session still running an older build stays verified.
pub fn pin(state: &Path, kinds: &[&str]) -> Result<Vec<String>, String> {
    let home = crate::dirs::home().ok();
    let home = home.as_ref().map(|h| h.display().to_string());
    let config = DaemonConfig::load(&state.join("config.toml"), home.as_deref()).map_err(|e| e.to_string())?;
    let before = Pins::load(state).map_err(|e| e.to_string())?;
    let mut pins = before.clone();
    pins.version = 1;
    let mut lines = Vec::new();
    for kind in kinds {
        let programs = pins::find_programs(&config.identity, kind);
        if programs.is_empty() {
            lines.push(format!("{kind}: no program of it at its install locations, so nothing pinned"));
            continue;
        }
        let entry = pins.agents.entry((*kind).to_owned()).or_default();
        let mut added = 0;
        for path in &programs {
            let Some(digest) = procfs::digest_file(path) else { continue };
            if !entry.iter().any(|p| p.digest == digest) {
                entry.push(Pin { digest, path: path.display().to_string() });
                added += 1;
            }
        }
        let shown: Vec<String> = programs.iter().map(|p| p.display().to_string()).collect();
        lines.push(format!("{kind}: pinned the digests of {} ({added} new)", shown.join(", ")));
    }
    if pins != before {
        files::owner_only_dir(state)?;
        files::write_atomic(&state.join(pins::FILE_NAME), &pins.text(), Some(0o600))?;
    }
    Ok(lines)
}

fn run_pin(harnesses: &[Harness]) -> ExitCode {
    let Some(state) = home_dir() else { return fail("no state directory: set `AGENTFW_HOME` or `HOME`") };
    if let Err(code) = super::require_person(None, "identity pin") {
        return code;
    }
    let all = [Harness::Claude, Harness::Codex, Harness::Cursor, Harness::Gemini];
    let kinds: Vec<&str> =
        if harnesses.is_empty() { all.iter() } else { harnesses.iter() }.map(|h| h.as_str()).collect();
    match pin(&state, &kinds) {
        Ok(lines) => {
            lines.iter().for_each(|l| outln!("{l}"));
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

pub fn run(args: &Args) -> ExitCode {
    if let Some(Sub::Pin { harness }) = &args.command {
        return run_pin(harness);
    }
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
            outln!("{} is {}", pid, identity.label);
            for outer in &identity.within {
                outln!(
                    "  inside: {} (pid {}, {})",
                    outer.label,
                    outer.pid,
                    if outer.verified { "verified" } else { "unverified" }
                );
            }
            outln!(
                "  agent: {} (pid {}, started {})",
                identity.agent,
                identity.pid,
                time(identity.started_at.as_millis())
            );
            outln!("  id: {}", identity.agent_id());
            outln!("  exe: {}", identity.exe.as_deref().unwrap_or("unknown"));
            if let Some(script) = &identity.script {
                outln!("  script: {script}");
            }
            outln!("  project: {}", identity.project);
            match &identity.unverified {
                None => outln!("  verified: yes"),
                Some(why) => outln!("  verified: no: {why}"),
            }
            if let Some(s) = &identity.session {
                outln!("  session: {} (from {})", s.id, s.source);
            }
            let chain: Vec<String> = identity.chain.iter().map(|s| format!("{} ({})", s.name, s.pid)).collect();
            outln!("  chain: {}", chain.join(" <- "));
            ExitCode::SUCCESS
        }
        Err(CollectError::Unsupported) => fail(CollectError::Unsupported),
        Err(e) => {
            if args.json {
                let _ = print_json(&serde_json::json!({"agent": null, "pid": pid, "error": e.to_string()}));
            } else {
                outln!("process {pid} is no known agent session: {e}");
            }
            ExitCode::from(EXIT_REFUSED)
        }
    }
}
