//! The core's hot paths: folding and fingerprinting a message, and the provenance ledger
//! with 1,000 versus 100,000 remembered messages (a lookup must not grow with the count).

use std::hint::black_box;
use std::time::Duration;

use agentfw_benches::{ascii_1k, mixed_1k};
use agentfw_core::fingerprint::Fingerprints;
use agentfw_core::firewall::{Config, Firewall, Input, Outgoing, Output};
use agentfw_core::message::Agent;
use agentfw_core::normalize::fold;
use agentfw_core::provenance::{Ledger, LedgerConfig, Provenance};
use agentfw_core::time::Timestamp;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
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

/// A ledger whose one receiving session remembers `n` distinct messages.
fn ledger_with(n: usize, web: &Agent, api: &Agent) -> Ledger {
    let mut ledger = Ledger::new(LedgerConfig { window: Duration::from_secs(3600), per_session: n });
    let now = Timestamp::from_millis(1_000);
    for i in 0..n {
        let text = format!("message {i}: deploy shard {} of tenant {} after the migration {}", i * 7, i * 13, i * 31);
        let prints = Fingerprints::of(&fold(&text));
        ledger.record(now, &api.id, prints, Provenance::first_hop(web.hop(), api.hop()));
    }
    ledger
}

fn ledger(c: &mut Criterion) {
    let (web, api, worker) =
        (Agent::new("w", "claude", "web"), Agent::new("a", "codex", "api"), Agent::new("k", "cursor", "worker"));
    let text = ascii_1k();
    let prints = Fingerprints::of(&fold(&text));
    let now = Timestamp::from_millis(2_000);
    let mut g = c.benchmark_group("ledger");
    for n in [1_000, 100_000] {
        let mut ledger = ledger_with(n, &web, &api);
        g.bench_with_input(BenchmarkId::new("send_trace", n), &n, |b, _| {
            b.iter(|| ledger.trace(now, black_box(&api), &worker, black_box(&prints)))
        });
        let provenance = Provenance::first_hop(web.hop(), api.hop());
        g.bench_with_input(BenchmarkId::new("deliver_record", n), &n, |b, _| {
            b.iter(|| ledger.record(now, &api.id, prints.clone(), provenance.clone()))
        });
    }
    g.finish();
}

fn firewall_round_trip(c: &mut Criterion) {
    let (web, api) = (Agent::new("w", "claude", "web"), Agent::new("a", "codex", "api"));
    let text = ascii_1k();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut fw = Firewall::new(Config::default());
    let mut now = 0u64;
    c.bench_function("firewall/send+deliver_1k_no_rules", |b| {
        b.iter(|| {
            // A human turn each time keeps the turn fuse and loop signals out of the way.
            now += 1_000;
            let t = Timestamp::from_millis(now);
            let _ = fw.handle(t, &mut rng, Input::HumanTurn(web.id.clone()));
            let body = format!("{now} {text}");
            let out = fw.handle(
                t,
                &mut rng,
                Input::Send(Outgoing { from: web.clone(), to: api.clone(), body, reply_to: None }),
            );
            if let Output::Accepted { message, .. } = out {
                black_box(fw.handle(t, &mut rng, Input::Deliver(message)));
            }
            while fw.poll_event().is_some() {}
        })
    });
}

criterion_group!(benches, fingerprinting, ledger, firewall_round_trip);
criterion_main!(benches);
