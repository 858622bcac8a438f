//! `agentfw demo` runs the whole story for real and leaves nothing behind: no temporary
//! home, no daemon, no session, on success and on Ctrl-C.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{agentfw_bin, stderr, stdout};

/// `agentfw demo` with a clean environment and its temporary files under `tmp`.
fn demo(tmp: &Path) -> Command {
    let mut c = Command::new(agentfw_bin());
    c.arg("demo")
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", tmp)
        .env("TMPDIR", tmp)
        .env("LANG", "C.UTF-8")
        .current_dir(tmp);
    c
}

/// Processes whose command line or environment mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let read = |what: &str| {
            String::from_utf8_lossy(&std::fs::read(entry.path().join(what)).unwrap_or_default()).replace('\0', " ")
        };
        let (cmdline, environ) = (read("cmdline"), read("environ"));
        if cmdline.contains(needle) || environ.contains(needle) {
            found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

#[test]
fn the_demo_tells_the_story_with_the_daemons_verdicts_and_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let out = demo(tmp.path()).output().unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "exit {:?}\n{text}\n{}", out.status.code(), stderr(&out));

    // Identity from the process tree.
    for label in ["web (claude)", "api (codex)", "worker (cursor)"] {
        assert!(text.contains(&format!("list_team: \"You are {label}.\"")), "{text}");
    }
    // 1. The question arrives fenced, with the sender's overlay from the trust file after it.
    assert!(text.contains("     agentfw: Sent to api (codex) as web (claude): message id "), "{text}");
    assert!(text.contains("     | Message from web (claude), id "), "{text}");
    assert!(text.contains("     | What JSON should the /health endpoint return?\n"), "{text}");
    assert!(text.contains("     | - change files: only in `docs/`; anywhere else, ask your user first"), "{text}");
    // 2. The secret, refused by a rule.
    assert!(text.contains("2. A secret is refused on its first hop\n"), "{text}");
    assert!(text.contains("     agentfw: refused by rule `"), "{text}");
    // 3. The turn fuse.
    assert!(text.contains("the turn fuse stopped message 11"), "{text}");
    // 4. The injection: delivered at one hop, refused when forwarded, the path contained.
    assert!(text.contains("     | Message from worker (cursor), id "), "{text}");
    assert!(text.contains("the daemon quarantines every agent the text passed through"), "{text}");
    let step_4 = text.split("web (claude) -> worker (cursor): \"Is the build green?\"\n").nth(1).unwrap();
    let line = step_4.lines().next().unwrap();
    assert!(line.starts_with("     agentfw: refused: the recipient, worker (cursor), is quarantined until "), "{line}");
    assert!(!text.contains("refused: refused"), "a refusal is announced twice:\n{text}");
    // 5. The team table, from the daemon.
    let table = text.split("5. The team, as `agentfw team` shows it\n").nth(1).unwrap();
    let rows: Vec<&str> =
        table.lines().filter(|l| l.contains(" claude:") || l.contains(" codex:") || l.contains(" cursor")).collect();
    assert!(table.lines().next().unwrap().trim_start().starts_with("AGENT"), "{table}");
    assert!(rows.iter().any(|r| r.contains("web (claude)") && r.contains(" live ")), "{table}");
    assert!(rows.iter().any(|r| r.contains("api (codex)") && r.contains(" held ")), "{table}");
    assert!(rows.iter().any(|r| r.contains("worker (cursor)") && r.contains(" held ")), "{table}");
    assert!(table.contains("contained (quarantined) until "), "{table}");

    // Nothing left behind.
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "left in the temporary directory: {left:?}");
    let running = processes_mentioning(&tmp.path().display().to_string());
    assert!(running.is_empty(), "still running: {running:?}");
}

#[test]
fn ctrl_c_stops_the_demo_and_removes_everything_it_started() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = demo(tmp.path()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Interrupt once the sessions are up.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("the demo ended before its sessions started").unwrap();
        if line.contains("list_team: \"You are worker (cursor).\"") {
            break;
        }
    }
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "left in the temporary directory: {left:?}");
    let running = processes_mentioning(&tmp.path().display().to_string());
    assert!(running.is_empty(), "still running: {running:?}");
}
