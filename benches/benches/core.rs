//! The core's hot paths: folding and fingerprinting a message; the provenance ledger with
//! its receiving session full (a lookup must not grow with what it holds); and the whole
//! path of a message through the firewall, 1 KiB and 64 KiB, without rules and with the
//! default pack.
//!
//! `cargo bench -p agentfw-benches --bench core`

use std::hint::black_box;
use std::sync::Arc;

use agentfw_benches::{ascii_1k, fill, mixed_1k};
use agentfw_core::decode::decode;
use agentfw_core::fingerprint::Fingerprints;
use agentfw_core::firewall::{Config, Firewall, Input, Outgoing, Output};
use agentfw_core::limits::Action;
use agentfw_core::message::Agent;
use agentfw_core::normalize::fold;
use agentfw_core::policy::{RuleSet, Rules};
use agentfw_core::provenance::{Ledger, LedgerConfig, Provenance, Text};
use agentfw_core::spans::winnow;
use agentfw_core::time::Timestamp;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn fingerprinting(c: &mut Criterion) {
    let mut g = c.benchmark_group("fold+fingerprint");
    for (name, text) in [("ascii_1k", ascii_1k()), ("mixed_1k", mixed_1k())] {
        g.bench_function(name, |b| b.iter(|| Fingerprints::of(&fold(black_box(&text)))));
        let folded = fold(&text);
        g.bench_function(format!("{name}/fold_only"), |b| b.iter(|| fold(black_box(&text))));
        g.bench_function(format!("{name}/fingerprint_only"), |b| b.iter(|| Fingerprints::of(black_box(&folded))));
    }
    g.finish();
}

/// Distinct text of about `bytes`, numbered `i`, so no two messages share a stretch.
fn distinct(i: usize, bytes: usize) -> String {
    fill(&format!("message {i}: deploy shard {} of tenant {} after migration {}. ", i * 7, i * 13, i * 31), bytes)
}

/// A ledger whose receiving session `api` is full: at its cap of winnowed marks, with
/// `n` deliveries in the whole-text memory.
fn full_ledger(web: &Agent, api: &Agent) -> Ledger {
    let config = LedgerConfig::default();
    let (marks, per_session) = (config.span_marks, config.per_session);
    let mut ledger = Ledger::new(config);
    let now = Timestamp::from_millis(1_000);
    let mut i = 0;
    while ledger.marks() < marks || ledger.len() < per_session {
        let text = distinct(i, if ledger.marks() < marks { 4096 } else { 64 });
        ledger.record(
            now,
            &api.key("laptop"),
            Text::new(&fold(&text), &[]),
            Provenance::first_hop(web.hop(), api.hop()),
            vec![],
        );
        i += 1;
    }
    ledger
}

/// The ledger's share of a message's cost, with the receiving session full (PV4): reading
/// a message once (fingerprints and winnowing of the folded text and its decodings, which
/// its send and its delivery here share), tracing a send (the stream's junction winnowed
/// and one lookup per mark; the message copies a stretch of a remembered text) and
/// recording a delivery (which evicts the oldest), at 1 KiB and 64 KiB; and the pieces on
/// their own.
fn ledger(c: &mut Criterion) {
    let (web, api, worker) =
        (Agent::new("w", "claude", "web"), Agent::new("a", "codex", "api"), Agent::new("k", "cursor", "worker"));
    let mut ledger = full_ledger(&web, &api);
    let now = Timestamp::from_millis(2_000);
    let mut g = c.benchmark_group("ledger");
    for (name, bytes) in [("1KiB", 1024), ("64KiB", 64 * 1024)] {
        let body = format!("as worker said: {}\n{}", distinct(7, 200), ascii_1k().repeat(bytes / 1024));
        let folded = fold(&body);
        let decoded = decode(&body);
        let text = Text::new(&folded, &decoded);
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(format!("read/{name}"), |b| b.iter(|| Text::new(black_box(&folded), &decoded)));
        let keys = (api.key("laptop"), worker.key("laptop"));
        g.bench_function(format!("send_trace/{name}"), |b| {
            b.iter(|| ledger.trace(now, black_box(&api), &worker, [&keys.0, &keys.1], black_box(&text)))
        });
        let provenance = Provenance::first_hop(web.hop(), api.hop());
        g.bench_function(format!("deliver_record/{name}"), |b| {
            b.iter(|| ledger.record(now, &keys.0, text.clone(), provenance.clone(), vec![]))
        });
        g.bench_function(format!("winnow/{name}"), |b| b.iter(|| winnow(black_box(&folded))));
        g.bench_function(format!("decode/{name}"), |b| b.iter(|| decode(black_box(&body))));
    }
    g.finish();
}

/// The whole path of one message, send and delivery, with the recipient's and the
/// sender's ledgers full: without rules (the firewall's own cost) and with the default
/// pack, at 1 KiB and 64 KiB.
fn firewall_round_trip(c: &mut Criterion) {
    let (web, api, worker) =
        (Agent::new("w", "claude", "web"), Agent::new("a", "codex", "api"), Agent::new("k", "cursor", "worker"));
    let mut g = c.benchmark_group("firewall");
    let packs: [(&str, Option<Arc<dyn Rules>>); 2] =
        [("no_rules", None), ("default_pack", RuleSet::default_pack().ok().map(|r| Arc::new(r) as Arc<dyn Rules>))];
    // Successive bench messages are alike: the loop signals would refuse them.
    let mut config = Config::default();
    config.limits.near_duplicate = Action::Off;
    config.limits.self_repeat = Action::Off;
    // A named machine, as every daemon's is: agents' keys carry its name.
    config.machine = "laptop".into();
    for (pack, rules) in packs {
        let mut fw = Firewall::new(config.clone());
        if let Some(rules) = rules {
            fw.set_rules(rules);
        }
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let mut now = 1_000u64;
        // Fill api's and worker's ledgers through the firewall itself.
        for (i, to) in (0..4_000).zip([&api, &worker].into_iter().cycle()) {
            now += 2_000;
            let t = Timestamp::from_millis(now);
            let _ = fw.handle(t, &mut rng, Input::HumanTurn(web.id.clone()));
            let out = Outgoing { from: web.clone(), to: to.clone(), body: distinct(i, 1024), reply_to: None };
            if let Output::Accepted { message, .. } = fw.handle(t, &mut rng, Input::Send(out)) {
                let _ = fw.handle(t, &mut rng, Input::Deliver(message));
            }
            while fw.poll_event().is_some() {}
        }
        for (name, bytes) in [("1KiB", 1024), ("64KiB", 63 * 1024)] {
            let text = ascii_1k().repeat(bytes / 1024);
            g.throughput(Throughput::Bytes(text.len() as u64));
            g.bench_function(format!("send+deliver/{pack}/{name}"), |b| {
                b.iter(|| {
                    // A human turn each time keeps the turn fuse and loop signals out of the way.
                    now += 2_000;
                    let t = Timestamp::from_millis(now);
                    let _ = fw.handle(t, &mut rng, Input::HumanTurn(api.id.clone()));
                    let body = format!("{now} {text}");
                    let out = Outgoing { from: api.clone(), to: worker.clone(), body, reply_to: None };
                    if let Output::Accepted { message, .. } = fw.handle(t, &mut rng, Input::Send(out)) {
                        black_box(fw.handle(t, &mut rng, Input::Deliver(message)));
                    }
                    while fw.poll_event().is_some() {}
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, fingerprinting, ledger, firewall_round_trip);
criterion_main!(benches);
