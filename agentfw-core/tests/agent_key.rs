//! Containment and limits hold the agent, not the process (issue 17): a harness started
//! again in the same folder is the same agent, so it neither escapes a quarantine nor
//! starts its limits afresh. Another project, another harness or another machine is
//! another agent.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::Duration;

use agentfw_core::firewall::{AdminAction, Config, Firewall, Input, Output, State};
use agentfw_core::limits::LimitsConfig;
use agentfw_core::message::{Agent, Enclosing};
use agentfw_core::sim::Sim;
use agentfw_core::time::Timestamp;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const T0: u64 = 1_796_047_500_000;

/// `web (codex)` as the process started at `start`.
fn web(pid: u32, start: u64) -> Agent {
    Agent::new(format!("codex:{pid}:{start}"), "codex", "web")
}

fn api() -> Agent {
    Agent::new("claude:4343:1796047300000", "claude", "api")
}

fn sim(config: Config) -> Sim<ChaCha20Rng> {
    Sim::new(Firewall::new(config), Timestamp::from_millis(T0), ChaCha20Rng::seed_from_u64(7))
}

fn code(out: &Output) -> String {
    match out {
        Output::Refused(r) => r.reason.code.to_string(),
        Output::Accepted { .. } => "accepted".into(),
        other => panic!("expected a send outcome, got {other:?}"),
    }
}

#[test]
fn a_quarantine_holds_every_process_of_the_agent_and_no_other() {
    let mut sim = sim(Config::default());
    let first = web(3100, 1_796_047_100_000);
    assert_eq!(code(&sim.send(&first, &api(), "the build is green")), "accepted");
    sim.admin(AdminAction::Quarantine { agent: first.id.clone(), seconds: 3600, reason: "worm".into(), key: None });
    // The harness is started again in the same folder: a new pid and start time.
    let second = web(3900, 1_796_047_400_000);
    assert_ne!(first.id, second.id);
    assert_eq!(code(&sim.send(&second, &api(), "hello again")), "containment.quarantined");
    // Nor can anyone reach it.
    assert_eq!(code(&sim.send(&api(), &second, "hi")), "containment.quarantined");
    // Another project with the same harness, the same project with another harness, and the
    // same on another machine are other agents.
    let other_project = Agent::new("codex:4000:1796047450000", "codex", "docs");
    let other_kind = Agent::new("gemini:4100:1796047450000", "gemini", "web");
    let other_machine = Agent { machine: "laptop".into(), ..web(4200, 1_796_047_450_000) };
    // A session of the same project nested in another is another agent too (ID6).
    let host = Agent::new("cursor:4300:1796047000000", "cursor", "worker");
    let nested = Agent {
        within: vec![Enclosing { id: host.id.clone(), kind: host.kind, project: host.project }],
        ..web(4400, 1_796_047_450_000)
    };
    for agent in [other_project, other_kind, other_machine, nested] {
        assert_eq!(code(&sim.send(&agent, &api(), "status of the build")), "accepted", "{}", agent.label());
    }
    // Lifting it by naming the new process releases the agent.
    sim.admin(AdminAction::LiftQuarantine { agent: second.id.clone() });
    assert_eq!(code(&sim.send(&second, &api(), "back again")), "accepted");
    assert_eq!(code(&sim.send(&first, &api(), "and the old one")), "accepted");
}

#[test]
fn a_quarantine_of_an_outer_session_holds_a_new_process_of_it_and_what_runs_inside() {
    let mut sim = sim(Config::default());
    let host = Agent::new("cursor:3000:1796047000000", "cursor", "worker");
    assert_eq!(code(&sim.send(&host, &api(), "the build is green")), "accepted");
    sim.admin(AdminAction::Quarantine { agent: host.id.clone(), seconds: 3600, reason: "worm".into(), key: None });
    let restarted = Agent::new("cursor:3300:1796047300000", "cursor", "worker");
    let inside = Agent {
        within: vec![Enclosing { id: restarted.id.clone(), kind: "cursor".into(), project: "worker".into() }],
        ..Agent::new("claude:3400:1796047400000", "claude", "web")
    };
    assert_eq!(code(&sim.send(&inside, &api(), "hello")), "containment.quarantined");
    assert_eq!(code(&sim.send(&restarted, &api(), "hello")), "containment.quarantined");
}

#[test]
fn a_quarantine_put_before_the_agent_was_known_holds_it_once_seen() {
    // An admin (or a policy from the relay) names a session this firewall has not seen yet.
    let mut sim = sim(Config::default());
    let first = web(3100, 1_796_047_100_000);
    sim.admin(AdminAction::Quarantine { agent: first.id.clone(), seconds: 3600, reason: "worm".into(), key: None });
    assert_eq!(code(&sim.send(&first, &api(), "hello")), "containment.quarantined");
    assert_eq!(code(&sim.send(&web(3900, 1_796_047_400_000), &api(), "hello")), "containment.quarantined");
}

#[test]
fn limits_count_across_a_restart() {
    let limits = LimitsConfig { rate: 3, ..LimitsConfig::default() };
    let mut sim = sim(Config { limits, ..Config::default() });
    let first = web(3100, 1_796_047_100_000);
    for i in 0..3 {
        assert_eq!(code(&sim.send(&first, &api(), &format!("update number {i} on the build"))), "accepted");
    }
    assert_eq!(code(&sim.send(&first, &api(), "one more update")), "limit.rate");
    let second = web(3900, 1_796_047_400_000);
    assert_eq!(code(&sim.send(&second, &api(), "a fresh start, or so it hopes")), "limit.rate");
    // Another agent has its own count.
    let docs = Agent::new("codex:4000:1796047450000", "codex", "docs");
    assert_eq!(code(&sim.send(&docs, &api(), "docs are published")), "accepted");
    // The window passes for everyone alike.
    sim.advance(Duration::from_secs(61));
    assert_eq!(code(&sim.send(&second, &api(), "after the window")), "accepted");
}

#[test]
fn fan_out_counts_across_a_restart() {
    let limits = LimitsConfig { fan_out: 2, ..LimitsConfig::default() };
    let mut sim = sim(Config { limits, ..Config::default() });
    let first = web(3100, 1_796_047_100_000);
    let peers: Vec<Agent> = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(i, p)| Agent::new(format!("claude:{}:1", 5000 + i), "claude", *p))
        .collect();
    assert_eq!(code(&sim.send(&first, &peers[0], "hello a")), "accepted");
    assert_eq!(code(&sim.send(&first, &peers[1], "hello b")), "accepted");
    let second = web(3900, 1_796_047_400_000);
    assert_eq!(code(&sim.send(&second, &peers[2], "hello c")), "limit.fan_out");
}

#[test]
fn the_turn_fuse_counts_across_a_restart() {
    let limits = LimitsConfig { max_turns: 2, ..LimitsConfig::default() };
    let mut sim = sim(Config { limits, ..Config::default() });
    let first = web(3100, 1_796_047_100_000);
    let other = api();
    sim.human(&first);
    assert_eq!(code(&sim.send(&first, &other, "can you check the tests")), "accepted");
    sim.read(&other);
    assert_eq!(code(&sim.send(&other, &first, "they pass on my side")), "accepted");
    sim.read(&first);
    // web's chain is at turn 2; its restarted harness answers without a person speaking.
    let second = web(3900, 1_796_047_400_000);
    assert_eq!(code(&sim.send(&second, &other, "great, merging now")), "limit.turn_fuse");
    // A person speaking in the new session resets the agent's chain.
    sim.human(&second);
    assert_eq!(code(&sim.send(&second, &other, "merging now")), "accepted");
}

/// The state as a build from before agent keys saved it: the same JSON with every agent
/// key a bare session id, no `agents` table and no `key` on quarantines.
fn saved_before_agent_keys(fw: &Firewall, agents: &[&Agent]) -> State {
    let mut json = serde_json::to_value(fw.snapshot()).unwrap();
    let object = json.as_object_mut().unwrap();
    object.remove("agents");
    for q in object["containment"]["quarantined"].as_object_mut().unwrap().values_mut() {
        q.as_object_mut().unwrap().remove("key");
    }
    let mut text = json.to_string();
    for agent in agents {
        let key = serde_json::to_string(&agent.key("")).unwrap();
        text = text.replace(&key, &serde_json::to_string(&agent.id).unwrap());
    }
    assert!(!text.contains("\\\"codex\\\"@"), "no agent key is left: {text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_state_saved_before_agent_keys_keeps_its_quarantines_and_counts() {
    let limits = LimitsConfig { rate: 3, ..LimitsConfig::default() };
    let mut old = sim(Config { limits, ..Config::default() });
    let first = web(3100, 1_796_047_100_000);
    let worker = Agent::new("cursor:5000:1796047000000", "cursor", "worker");
    for i in 0..3 {
        assert_eq!(code(&old.send(&first, &api(), &format!("update number {i} on the build"))), "accepted");
    }
    assert_eq!(code(&old.send(&worker, &api(), "the build is green")), "accepted");
    old.admin(AdminAction::Quarantine { agent: worker.id.clone(), seconds: 3600, reason: "worm".into(), key: None });
    let state = saved_before_agent_keys(&old.firewall, &[&first, &worker, &api()]);

    let mut sim = Sim::new(Firewall::restore(state), old.now, ChaCha20Rng::seed_from_u64(8));
    // The adapter tells the firewall the sessions it kept (the daemon: its `sessions` table).
    for agent in [&first, &worker] {
        sim.input(Input::Seen(agent.clone()));
    }
    let restarted_worker = Agent::new("cursor:5900:1796047400000", "cursor", "worker");
    assert_eq!(code(&sim.send(&restarted_worker, &api(), "hello")), "containment.quarantined");
    let restarted_web = web(3900, 1_796_047_400_000);
    assert_eq!(code(&sim.send(&restarted_web, &api(), "a fresh start, or so it hopes")), "limit.rate");
    sim.advance(Duration::from_secs(61));
    assert_eq!(code(&sim.send(&restarted_web, &api(), "after the window")), "accepted");
}
