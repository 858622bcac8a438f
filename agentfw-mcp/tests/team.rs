//! The engine on a clock of the test's own, with sessions that are real processes: a session
//! whose process ended shows as gone for a few minutes (so a model trying to reach it is
//! told why), then leaves the team; and no later process takes its place, whether it reuses
//! its pid or its label.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::process::{Child, Command};
use std::time::Duration;

use agentfw_core::identity::Identity;
use agentfw_core::time::Timestamp;
use agentfw_mcp::config::DaemonConfig;
use agentfw_mcp::engine::{Caller, Engine};
use agentfw_mcp::home::Home;
use agentfw_mcp::procfs::{self, ProcClock};
use agentfw_mcp::proto::{InboxResult, Op, SendResult, TeamResult, code};
use serde_json::json;

/// A running process standing in for an agent, killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn() -> Proc {
    Proc(Command::new("sleep").arg("600").spawn().expect("sleep runs"))
}

/// The caller as the resolver would name a `claude` session in `project` run by `pid`,
/// started at `started_at` (which the resolver reads from the kernel, never from the caller).
fn caller(project: &str, pid: u32, started_at: Timestamp) -> Caller {
    let identity: Identity = serde_json::from_value(json!({
        "agent": "claude", "pid": pid, "started_at": started_at, "exe": null, "cwd": null,
        "project": project, "label": format!("{project} (claude)"), "verified": true,
        "shared_host": false, "chain": []
    }))
    .unwrap();
    Caller { pid, identity: Ok(identity), project_dir: None, env: Default::default(), placement: None }
}

/// The caller for a live process, with the start time `/proc` gives it.
fn live(project: &str, p: &Proc, clock: &ProcClock) -> Caller {
    let pid = p.0.id();
    caller(project, pid, procfs::started_at(pid, clock).expect("the process runs"))
}

fn team(engine: &mut Engine, now: Timestamp, who: &Caller) -> Vec<(String, String, bool)> {
    let team: TeamResult = serde_json::from_value(engine.handle(now, who, Op::Team {}).unwrap()).unwrap();
    team.agents.into_iter().map(|a| (a.label, a.id, a.live)).collect()
}

fn send(
    engine: &mut Engine,
    now: Timestamp,
    from: &Caller,
    to: &str,
) -> Result<SendResult, agentfw_mcp::proto::ErrorBody> {
    send_text(engine, now, from, to, "the schema is in docs/api.md")
}

fn send_text(
    engine: &mut Engine,
    now: Timestamp,
    from: &Caller,
    to: &str,
    text: &str,
) -> Result<SendResult, agentfw_mcp::proto::ErrorBody> {
    let op = Op::Send { to: to.to_owned(), text: text.to_owned(), reply_to: None, key: None };
    engine.handle(now, from, op).map(|v| serde_json::from_value(v).unwrap())
}

fn inbox(engine: &mut Engine, now: Timestamp, who: &Caller) -> InboxResult {
    serde_json::from_value(engine.handle(now, who, Op::Inbox { batch: None }).unwrap()).unwrap()
}

#[test]
fn an_ended_session_leaves_the_team_and_no_later_process_becomes_it() {
    let clock = ProcClock::read().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(&dir.path().join("home")).unwrap();
    let t0 = Timestamp::from_millis(1_796_100_000_000);
    let mut engine = Engine::open(home, DaemonConfig::default(), None, t0).unwrap();
    let (web_proc, api_proc) = (spawn(), spawn());
    let (web, api) = (live("web", &web_proc, &clock), live("api", &api_proc, &clock));
    let web_id = web.identity.as_ref().unwrap().agent_id().to_string();
    let _ = team(&mut engine, t0, &web);
    assert!(team(&mut engine, t0, &api).contains(&("web (claude)".to_owned(), web_id.clone(), true)));
    let sent = send(&mut engine, t0, &api, "web (claude)").unwrap();
    assert_eq!(sent.to_id, web_id);

    // web's process ends before it reads its inbox.
    let web_pid = web.pid;
    drop(web_proc);
    let shown = team(&mut engine, t0 + Duration::from_secs(4 * 60), &api);
    assert!(shown.contains(&("web (claude)".to_owned(), web_id.clone(), false)), "shown as gone: {shown:?}");
    for to in [web_id.as_str(), "web (claude)", "web"] {
        let e = send(&mut engine, t0 + Duration::from_secs(4 * 60), &api, to).unwrap_err();
        assert_eq!(e.code, code::GONE_RECIPIENT, "{to}: {}", e.message);
    }
    let later = t0 + Duration::from_secs(6 * 60);
    let shown = team(&mut engine, later, &api);
    assert!(!shown.iter().any(|(_, id, _)| *id == web_id), "gone from the team after five minutes: {shown:?}");

    // A process that reuses web's pid started later (the kernel says when): another session,
    // which neither gets web's mail nor is web.
    let reused = caller("web", web_pid, web.identity.as_ref().unwrap().started_at + Duration::from_secs(90));
    assert_ne!(reused.identity.as_ref().unwrap().agent_id().to_string(), web_id);
    let got = inbox(&mut engine, later, &reused);
    assert!(got.deliveries.is_empty(), "web's message went to a process reusing its pid: {got:?}");
    // A new session in the same project takes web's label, not its identity or its mail.
    let new_proc = spawn();
    let new_web = live("web", &new_proc, &clock);
    let new_id = new_web.identity.as_ref().unwrap().agent_id().to_string();
    let got = inbox(&mut engine, later, &new_web);
    assert!(got.deliveries.is_empty(), "web's message went to a new session with its label: {got:?}");
    let shown = team(&mut engine, later, &api);
    assert!(shown.contains(&("web (claude)".to_owned(), new_id.clone(), true)), "{shown:?}");
    assert!(!shown.iter().any(|(_, id, _)| *id == web_id), "{shown:?}");
    // Sent to the old id, a message is refused as gone; by label it reaches the new session.
    let e = send(&mut engine, later, &api, &web_id).unwrap_err();
    assert_eq!(e.code, code::GONE_RECIPIENT, "{}", e.message);
    // (In other words: the new session is the same agent, so the text api already sent web
    // would be a repeat to it, refused as a loop; api writes anew.)
    let to = send_text(&mut engine, later, &api, "web (claude)", "the schema moved to docs/schema.md").unwrap().to_id;
    assert_eq!(to, new_id);
}
