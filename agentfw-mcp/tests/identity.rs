//! Issue 4's Linux identity test: a copy of a small program renamed `claude` starts `sh -c`,
//! which starts the probe (`agentfw identity`); agentfw names the fake agent by its real pid
//! and start time, and flags it as outside the trusted install locations unless configured.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::process::Stdio;

use common::{World, agentfw_bin, shell_quote, stdout};
use serde_json::Value;

/// A process's start time in ms since the epoch, computed here independently of agentfw.
fn start_ms(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(')').unwrap().1;
    let ticks: u64 = after.split_whitespace().nth(19).unwrap().parse().unwrap();
    let btime: u64 = std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let hz: u64 = String::from_utf8(std::process::Command::new("getconf").arg("CLK_TCK").output().unwrap().stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    btime * 1000 + ticks * 1000 / hz
}

/// Run `claude -c 'sh -c "agentfw identity --json"; …'` and return the fake agent's pid,
/// its start time and what the probe printed.
fn probe(w: &World) -> (u32, u64, Value) {
    let inner = format!("{} identity --json", shell_quote(&agentfw_bin().display().to_string()));
    // The agent waits for a line on stdin before exiting, so its /proc entry can be read.
    let script = format!("sh -c {}; read _", shell_quote(&inner));
    let mut child = w
        .command(w.bin.join("claude"))
        .args(["-c", &script])
        .current_dir(w.project("web"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = start_ms(pid);
    let mut out = String::new();
    let mut stdout_pipe = child.stdout.take().unwrap();
    let mut line = [0u8; 1];
    while !out.ends_with('\n') {
        use std::io::Read;
        if stdout_pipe.read(&mut line).unwrap() == 0 {
            break;
        }
        out.push(char::from(line[0]));
    }
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"\n").unwrap();
    child.wait().unwrap();
    (pid, started, serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}")))
}

#[test]
fn a_renamed_program_is_named_by_real_pid_and_start_time_and_flagged_unverified() {
    let w = World::new();
    let (pid, started, id) = probe(&w);
    assert_eq!(id["agent"], "claude", "{id}");
    assert_eq!(id["pid"], pid, "{id}");
    let got = id["started_at"].as_u64().unwrap();
    assert!(got.abs_diff(started) <= 1000, "start time {got} vs {started}");
    assert_eq!(id["id"], format!("claude:{pid}:{got}"));
    assert_eq!(id["project"], "web");
    assert_eq!(id["label"], "web (claude)");
    assert_eq!(id["exe"], w.bin.join("claude").display().to_string());
    assert_eq!(id["verified"], false);
    assert_eq!(id["unverified"]["why"], "outside_install_locations", "{id}");
    assert!(id["unverified_reason"].as_str().unwrap().contains("is not at a trusted install location"));
    let roles: Vec<&str> = id["chain"].as_array().unwrap().iter().map(|s| s["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["start", "launcher", "agent"], "probe <- sh -c <- claude: {id}");
}

#[test]
fn an_install_location_in_the_configuration_verifies_it() {
    let w = World::new();
    let config = format!(
        "[[identity.agents]]\nkind = \"claude\"\nexecutables = [\"claude\"]\ninstall_locations = [{:?}]\n",
        format!("{}/**", w.bin.display())
    );
    std::fs::write(w.home.join("config.toml"), config).unwrap();
    let (pid, _, id) = probe(&w);
    assert_eq!(id["pid"], pid);
    assert_eq!(id["verified"], true, "{id}");
    assert!(id.get("unverified").is_none());
}

#[test]
fn a_process_outside_any_agent_session_is_no_agent_and_says_why() {
    let w = World::new();
    // pid 1 (init) is no agent: its ancestry ends at once. (The test process itself may run
    // inside an agent session, when a developer runs the tests from one.)
    let out = w.agentfw(&["identity", "--pid", "1", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["agent"], Value::Null);
    assert!(v["error"].as_str().unwrap().contains("not started by a known agent"), "{v}");
    assert_eq!(v["pid"], 1);
    let out = w.agentfw(&["identity", "--pid", "999999999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("is no known agent session"), "{}", stdout(&out));
}
