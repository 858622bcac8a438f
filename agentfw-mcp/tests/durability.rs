//! Nothing acknowledged is lost and nothing is delivered twice: across a `kill -9` of the
//! daemon in the middle of a burst, and across a full disk.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Agent, World, message_ids};
use serde_json::json;

/// Limits that would stop a burst of 1,000 near-identical messages are off: this is about
/// storage, not judgement.
const BURST_CONFIG: &str = "[wake]\nenabled = false\n[admin]\nfrom_agents = true\n\
[firewall.limits]\nrate = 1000000\nnear_duplicate = \"off\"\nself_repeat = \"off\"\nack_only = \"off\"\nack_ping_pong = \"off\"\n";

/// Read `api`'s inbox until it is empty: every delivered message id, in order.
fn drain(api: &mut Agent) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..50 {
        let r = api.inbox();
        assert!(!r.error, "{}", r.text);
        let got = message_ids(&r.text);
        if got.is_empty() {
            return ids;
        }
        ids.extend(got);
    }
    panic!("the inbox never emptied")
}

/// What a burst of pipelined sends got back: the acknowledged message ids (with their
/// send's number) and the errors.
#[derive(Default)]
struct Burst {
    acked: BTreeMap<String, u64>,
    failed: Vec<String>,
}

/// `n` sends from `agent` to `api (codex)`, all written at once from another thread (so they
/// queue up in the daemon); `answered` is called after each answer.
fn burst(agent: &mut Agent, tag: &str, n: u64, mut answered: impl FnMut()) -> Burst {
    let mut stdin = agent.take_stdin();
    let tag = tag.to_owned();
    let writer = std::thread::spawn(move || {
        for i in 0..n {
            let req = json!({"jsonrpc": "2.0", "id": 10_000 + i, "method": "tools/call",
                "params": {"name": "send_message", "arguments": {"to": "api (codex)", "text": format!("burst {tag} message {i}")}}});
            stdin.write_all(format!("{req}\n").as_bytes()).unwrap();
        }
        stdin.flush().unwrap();
        stdin
    });
    let mut out = Burst::default();
    for _ in 0..n {
        let msg = loop {
            let msg = agent.try_read_line(Duration::from_secs(20)).expect("an answer for every send");
            if msg["id"].as_u64().is_some() {
                break msg;
            }
        };
        let text = msg["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        if msg["result"]["isError"] == false {
            let mid = text.split("message id ").nth(1).unwrap().split(',').next().unwrap().to_owned();
            out.acked.insert(mid, msg["id"].as_u64().unwrap() - 10_000);
        } else {
            out.failed.push(text);
        }
        answered();
    }
    drop(writer.join().unwrap());
    out
}

fn kill_9(pid: u32) {
    assert!(std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap().success());
}

#[test]
fn kill_9_in_the_middle_of_1000_sends_loses_nothing_acknowledged_and_delivers_once() {
    let w = World::with_config(BURST_CONFIG);
    let mut web = w.agent("claude", "web");
    let mut api = w.agent("codex", "api");
    let first_daemon = w.wait_daemon();

    let mut answered = 0;
    let Burst { acked, failed } = burst(&mut web, "web", 1000, || {
        answered += 1;
        if answered == 300 {
            kill_9(first_daemon);
        }
    });
    let second_daemon = w.wait_daemon();
    assert_ne!(first_daemon, second_daemon, "the daemon was restarted by the next request");
    // The MCP server reconnects, restarts the daemon and retries with the same key, so in
    // practice every send is acknowledged; the claim checked is about the acknowledged ones.
    assert!(failed.is_empty(), "{} sends failed, e.g. {:?}", failed.len(), failed.first());
    assert_eq!(acked.len(), 1000);

    let delivered = drain(&mut api);
    let unique: BTreeSet<&String> = delivered.iter().collect();
    assert_eq!(unique.len(), delivered.len(), "a message was delivered twice");
    let acked_ids: BTreeSet<&String> = acked.keys().collect();
    assert_eq!(unique, acked_ids, "every acknowledged message is delivered, and nothing else");
}

/// Group commit: sends from several sessions at once share the daemon's syncs. A `kill -9`
/// while they stream in loses none that was acknowledged (an answer before its commit
/// would be lost here), and delivers each once.
#[test]
fn kill_9_while_sessions_send_at_once_loses_nothing_acknowledged() {
    let w = World::with_config(BURST_CONFIG);
    let mut api = w.agent("codex", "api");
    let mut senders: Vec<Agent> = (0..4).map(|i| w.agent("claude", &format!("web{i}"))).collect();
    let first_daemon = w.wait_daemon();

    let answered = AtomicUsize::new(0);
    let bursts: Vec<Burst> = std::thread::scope(|scope| {
        let answered = &answered;
        let handles: Vec<_> = senders
            .iter_mut()
            .enumerate()
            .map(|(i, agent)| {
                scope.spawn(move || {
                    burst(agent, &format!("web{i}"), 200, || {
                        if answered.fetch_add(1, Ordering::SeqCst) + 1 == 250 {
                            kill_9(first_daemon);
                        }
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_ne!(first_daemon, w.wait_daemon(), "the daemon was restarted by the next request");
    let mut acked = BTreeSet::new();
    for b in &bursts {
        assert!(b.failed.is_empty(), "{} sends failed, e.g. {:?}", b.failed.len(), b.failed.first());
        assert_eq!(b.acked.len(), 200);
        acked.extend(b.acked.keys().cloned());
    }
    let delivered = drain(&mut api);
    let unique: BTreeSet<String> = delivered.iter().cloned().collect();
    assert_eq!(unique.len(), delivered.len(), "a message was delivered twice");
    assert_eq!(unique, acked, "every acknowledged message is delivered, and nothing else");
}

#[test]
fn a_full_disk_is_a_clear_error_and_loses_nothing() {
    let config = format!("{BURST_CONFIG}[storage]\nmax_pages = 60\n");
    let w = World::with_config(&config);
    let mut web = w.agent("claude", "web");
    let mut api = w.agent("codex", "api");
    let mut acked = BTreeSet::new();
    let mut full = None;
    for i in 0..2000 {
        let r = web.send("api (codex)", &format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(20)));
        if r.error {
            full = Some(r.text);
            break;
        }
        acked.insert(r.text.split("message id ").nth(1).unwrap().split(',').next().unwrap().to_owned());
    }
    let full = full.expect("the database filled up");
    assert!(full.contains("the disk is full") && full.contains("nothing was stored"), "{full}");
    assert!(acked.len() > 5, "{}", acked.len());

    // Still full: reading may fail too, but only with the same clear error.
    let r = api.inbox();
    let mut delivered: Vec<String> = Vec::new();
    if r.error {
        assert!(r.text.contains("the disk is full"), "{}", r.text);
    } else {
        delivered.extend(message_ids(&r.text));
    }

    // Make room (raise the cap) and restart the daemon: every acknowledged message arrives once.
    std::fs::write(w.home.join("config.toml"), BURST_CONFIG).unwrap();
    let out = w.agentfw(&["daemon", "--stop"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    delivered.extend(drain(&mut api));
    let unique: BTreeSet<String> = delivered.iter().cloned().collect();
    assert_eq!(unique.len(), delivered.len(), "delivered twice");
    assert_eq!(unique, acked);
    assert!(!web.send("api (codex)", "room again").error);
}
