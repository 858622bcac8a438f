//! Soak: agent sessions on two machines (two homes and daemons) joined by a relay exchange
//! messages for a while, most of them across machines, with refusals (secrets in about one
//! message in ten), a `kill -9` of one daemon and a restart of the relay in the first half,
//! and inboxes read at random moments. At the end every acknowledged message was delivered
//! (or refused on delivery) exactly once, nothing refused was delivered, neither daemon's
//! memory grew during the quiet second half, and the two audit logs together have one send
//! decision per attempt and one delivery decision per acknowledged message.
//!
//! The normal suite runs it briefly; `scripts/soak [SECONDS]` runs it for longer
//! (`AGENTFW_SOAK_SECS`, `AGENTFW_SOAK_AGENTS`).

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // the test reads its duration from the environment

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::relay::{TestRelay, machine, relay_status, wait_for};
use common::{Agent, BASE_CONFIG, message_ids, stdout};

/// Limits that a busy team of simulated agents would trip all the time are raised: the
/// refusals here come from the rules; the limits have their own tests. Every window the
/// firewall remembers things for is 20 seconds instead of minutes or hours, so that a run
/// of a few minutes reaches the steady state in which memory must stay flat.
const SOAK_LIMITS: &str = "[firewall.ledger]\nwindow = { secs = 20, nanos = 0 }\n\
[firewall.containment]\nremember = { secs = 20, nanos = 0 }\nquarantine = { secs = 20, nanos = 0 }\n\
[firewall.limits]\nrate = 1000000\nmax_turns = 1000000\nfan_out = 1000\nthread_messages = 1000000\n\
fan_out_window = { secs = 20, nanos = 0 }\nrate_window = { secs = 20, nanos = 0 }\n\
repeat_window = { secs = 20, nanos = 0 }\nthread_age = { secs = 20, nanos = 0 }\n";

const WORDS: [&str; 32] = [
    "schema",
    "deploy",
    "latency",
    "parser",
    "migration",
    "review",
    "cache",
    "index",
    "retry",
    "budget",
    "queue",
    "shard",
    "timeout",
    "rollback",
    "feature",
    "flag",
    "metric",
    "alert",
    "ticket",
    "branch",
    "release",
    "build",
    "lint",
    "fixture",
    "handler",
    "endpoint",
    "payload",
    "token",
    "window",
    "socket",
    "thread",
    "buffer",
];

/// A small deterministic generator: the run is reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim().parse().ok()
}

#[derive(Default)]
struct Tally {
    acked: BTreeSet<String>,
    refused_on_send: usize,
    /// Message id → times it reached its recipient (fenced or refused on delivery).
    seen: BTreeMap<String, u32>,
}

impl Tally {
    fn read(&mut self, agent: &mut Agent) -> usize {
        let r = agent.inbox();
        assert!(!r.error, "check_inbox failed: {}", r.text);
        let mut ids = message_ids(&r.text);
        ids.extend(
            r.text
                .lines()
                .filter_map(|l| l.strip_prefix("- message "))
                .filter_map(|l| l.split(' ').next())
                .map(str::to_owned),
        );
        for id in &ids {
            *self.seen.entry(id.clone()).or_default() += 1;
        }
        ids.len()
    }
}

#[test]
fn soak_every_accepted_message_delivered_once_memory_flat_audit_complete() {
    let secs = setting("AGENTFW_SOAK_SECS", 8);
    let n = setting("AGENTFW_SOAK_AGENTS", 12) as usize;
    let mut relay = TestRelay::start();
    let config = format!("{BASE_CONFIG}{SOAK_LIMITS}");
    let machines = [machine(&relay, "m1", &config), machine(&relay, "m2", &config)];
    let kinds = ["claude", "codex", "cursor-agent"];
    let mut agents: Vec<(String, usize, Agent)> = (0..n)
        .map(|i| {
            // Alternate machines, so most neighbours are across the relay.
            let m = i % 2;
            let mut agent = machines[m].agent(kinds[i % kinds.len()], &format!("p{i}"));
            // The label agentfw gives this session, as the session itself is told.
            let team = agent.team().text;
            let me = team.split("You are ").nth(1).and_then(|l| l.split(".\n").next()).unwrap().to_owned();
            (me, m, agent)
        })
        .collect();
    // Every machine knows every agent before the traffic starts, and again after a restart,
    // since the tallies below count on every agent being addressable: a daemon learns the
    // other machine's agents from the relay's directory (a restarted one starts from the
    // directory it kept, until its link brings the relay's).
    let all_known = |agents: &mut [(String, usize, Agent)]| {
        for (_, _, agent) in agents.iter_mut().take(2) {
            wait_for("every agent on both machines", || {
                let team = agent.team().text;
                (0..n).all(|i| team.contains(&format!("p{i} ("))).then_some(())
            });
        }
    };
    all_known(&mut agents);
    let mut rng = Rng(0x5eed_50a4);
    let mut tally = Tally::default();
    let mut attempts = 0usize;
    let started = Instant::now();
    let (half, end) = (Duration::from_secs(secs) / 2, Duration::from_secs(secs));
    let (kill_at, relay_restart_at) = (half / 3, half * 2 / 3);
    let (mut killed, mut restarted) = (false, false);
    let mut rss: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    let mut last_sample = Instant::now();
    while started.elapsed() < end {
        let from = rng.below(n);
        // Each agent talks to a few neighbours, as teams do.
        let to = (from + 1 + rng.below(4)) % n;
        if to == from {
            continue;
        }
        let mut text: Vec<&str> = (0..8 + rng.below(12)).map(|_| WORDS[rng.below(WORDS.len())]).collect();
        let secret;
        if rng.below(10) == 0 {
            secret = github_token(&format!("{:016x}{:014x}", rng.next(), rng.next() >> 8));
            text.push(&secret);
        }
        let target = agents[to].0.clone();
        let r = agents[from].2.send(&target, &format!("{} #{attempts}", text.join(" ")));
        attempts += 1;
        if r.error {
            assert!(
                r.text.contains("refused") || r.text.contains("Refused"),
                "a send failed for another reason: {}",
                r.text
            );
            tally.refused_on_send += 1;
        } else {
            let id = r.text.split("message id ").nth(1).unwrap().split(',').next().unwrap().to_owned();
            tally.acked.insert(id);
        }
        if rng.below(3) == 0 {
            let reader = rng.below(n);
            tally.read(&mut agents[reader].2);
        }
        if !killed && started.elapsed() >= kill_at {
            let pid = machines[0].wait_daemon();
            assert!(std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap().success());
            killed = true;
            all_known(&mut agents);
        }
        if !restarted && started.elapsed() >= relay_restart_at {
            relay.stop();
            relay.start_again();
            restarted = true;
            all_known(&mut agents);
        }
        if started.elapsed() >= half && last_sample.elapsed() >= Duration::from_millis(250) {
            for (m, w) in machines.iter().enumerate() {
                if let Some(kib) = w.daemon_pid().and_then(rss_kib) {
                    rss[m].push(kib);
                }
            }
            last_sample = Instant::now();
        }
    }
    // Drain: what crosses the relay arrives a little later, so read until every
    // acknowledged message has arrived and both outboxes are empty, or nothing moves.
    let mut idle_rounds = 0;
    while idle_rounds < 40 {
        let mut got = 0;
        for (_, _, agent) in agents.iter_mut() {
            got += tally.read(agent);
        }
        let outboxes: u64 = machines.iter().map(|w| relay_status(w)["outbox"].as_u64().unwrap_or(0)).sum();
        if got == 0 && outboxes == 0 && tally.acked.iter().all(|id| tally.seen.contains_key(id)) {
            break;
        }
        idle_rounds = if got == 0 { idle_rounds + 1 } else { 0 };
        std::thread::sleep(Duration::from_millis(50));
    }

    let lost: Vec<_> = tally.acked.iter().filter(|id| !tally.seen.contains_key(*id)).collect();
    assert!(lost.is_empty(), "{} acknowledged messages never arrived, e.g. {:?}", lost.len(), lost.first());
    let twice: Vec<_> = tally.seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "{} messages arrived more than once, e.g. {:?}", twice.len(), twice.first());
    let unknown: Vec<_> = tally.seen.keys().filter(|id| !tally.acked.contains(*id)).collect();
    assert!(unknown.is_empty(), "{} messages arrived that were never acknowledged", unknown.len());
    assert!(killed && restarted, "the run was too short to restart a daemon and the relay");
    assert!(tally.refused_on_send > 0 && !tally.acked.is_empty(), "the run needs both refusals and deliveries");

    // Memory in the quiet half: the last quarter of samples against the first.
    let mut memory = Vec::new();
    for samples in &rss {
        assert!(samples.len() >= 8, "too few memory samples: {}", samples.len());
        let quarter = samples.len() / 4;
        let avg = |s: &[u64]| s.iter().sum::<u64>() / s.len() as u64;
        let (early, late) = (avg(&samples[..quarter]), avg(&samples[samples.len() - quarter..]));
        assert!(late <= early + early / 4 + 4096, "daemon memory grew from {early} KiB to {late} KiB");
        memory.push(format!("{early} → {late} KiB"));
    }

    // The two audit logs together account for every decision.
    let mut records: Vec<serde_json::Value> = Vec::new();
    for w in &machines {
        let out = w.agentfw(&["audit", "--json"]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        records.extend(stdout(&out).lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()));
    }
    let sends: Vec<_> = records.iter().filter(|r| r["stage"] == "sending").collect();
    let delivered: BTreeSet<&str> =
        records.iter().filter(|r| r["stage"] == "delivering").filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(sends.len(), attempts, "one send decision per attempt");
    assert_eq!(sends.iter().filter(|r| r["verdict"] == "deny").count(), tally.refused_on_send);
    assert!(tally.acked.iter().all(|id| delivered.contains(id.as_str())), "a delivery is missing from the audit log");
    println!(
        "soak: {n} agents on 2 machines, {secs} s, {attempts} sends, {} accepted, {} refused on send, \
         1 daemon kill -9, 1 relay restart, daemon RSS {}",
        tally.acked.len(),
        tally.refused_on_send,
        memory.join(" and ")
    );
}

/// A GitHub token the way GitHub builds one: `ghp_`, 30 base62 characters, then their
/// CRC-32 in 6 base62 digits. The pack checks that checksum, so a made-up tail would pass.
fn github_token(entropy: &str) -> String {
    const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let crc = !entropy.bytes().fold(!0u32, |crc, b| {
        (0..8).fold(crc ^ u32::from(b), |c, _| if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 })
    });
    let mut n = u64::from(crc);
    let mut digits = [b'0'; 6];
    for d in digits.iter_mut().rev() {
        *d = BASE62[(n % 62) as usize];
        n /= 62;
    }
    format!("ghp_{entropy}{}", String::from_utf8_lossy(&digits))
}
