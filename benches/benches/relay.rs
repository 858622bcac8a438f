//! The relay on loopback (SC1, TX3).
//!
//! - `relay/throughput/sqlite` (and `…/postgres` when `AGENTFW_RELAY_TEST_DATABASE_URL` is
//!   set): envelopes relayed per second. Each sample starts a fresh relay on a fresh
//!   database, logs in four sending and four receiving devices, and times 4,000 envelopes
//!   with 1 KiB bodies from the first submission to the last delivery: each one parsed,
//!   its signature and routing binding verified, re-checked by policy, stored durably (committed before the
//!   sender is answered) and forwarded; receivers acknowledge as they go. Envelopes are
//!   sealed before the clock starts.
//! - `relay/latency`: one message at a time, device to relay to device, including sealing
//!   on the sender and verifying and opening on the recipient. The run prints the median
//!   and the 99th percentile.
//!
//! `cargo bench -p agentfw-benches --bench relay`
//! (memory with 1,000 connected devices: `cargo test --release -p agentfw-relay --test memory -- --nocapture`)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // A benchmark reads the clock and its environment.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentfw_core::message::{Agent, MessageId};
use agentfw_core::seal::{self, DeviceKeys, Keyring, Limits, ReplayCache};
use agentfw_relay::client::{Client, ClientConfig, Endpoint, Incoming};
use agentfw_relay::protocol::Routed;
use agentfw_relay::{Config, Relay, clock};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::StreamExt;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use sqlx::Connection as _;

const PAIRS: usize = 4;
const PER_SENDER: usize = 1000;

fn config(database_url: &str) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        database_url: database_url.to_owned(),
        admin_token: Some("bench".to_owned()),
        rate_per_second: 1_000_000,
        burst: 1_000_000,
        window: 1024,
        max_in_flight: 1024,
        ..Config::default()
    }
}

fn agent(name: &str) -> Agent {
    Agent::new(format!("claude:{name}:1:1"), "claude", name)
}

/// Senders and receivers with keys, and each sender's envelopes, sealed and routed.
struct Fleet {
    senders: Vec<Arc<DeviceKeys>>,
    receivers: Vec<Arc<DeviceKeys>>,
    frames: Vec<Vec<(MessageId, Arc<Vec<u8>>)>>,
}

impl Fleet {
    fn new() -> Self {
        let now = clock::now();
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let senders: Vec<_> = (0..PAIRS).map(|_| Arc::new(DeviceKeys::generate(now, &mut rng))).collect();
        let receivers: Vec<_> = (0..PAIRS).map(|_| Arc::new(DeviceKeys::generate(now, &mut rng))).collect();
        let body = agentfw_benches::ascii_1k();
        // Sealing (HPKE with X-Wing) is the slow part of setup: both cores.
        let frames = std::thread::scope(|s| {
            let handles: Vec<_> = (0..PAIRS)
                .map(|i| {
                    let (from, to, body) = (senders[i].clone(), receivers[i].clone(), body.clone());
                    s.spawn(move || {
                        let mut rng = ChaCha20Rng::seed_from_u64(100 + i as u64);
                        (0..PER_SENDER)
                            .map(|_| {
                                let id = MessageId::generate(now, &mut rng);
                                let (a, b, limits) =
                                    (agent(&format!("s{i}")), agent(&format!("r{i}")), Limits::default());
                                let (json, body) = ("application/json", body.as_bytes());
                                let routed =
                                    Routed::seal(&from, to.public(), a, b, id, json, body, &limits, now, &mut rng)
                                        .unwrap();
                                (id, Arc::new(routed.to_submit_frame()))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        Self { senders, receivers, frames }
    }
}

fn client_config(url: &str) -> ClientConfig {
    let mut c = ClientConfig::new(Endpoint::new(url, None).unwrap());
    c.backoff_min = Duration::from_millis(20);
    c
}

/// CPU time this process has used (user and system), from /proc (Linux).
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// CPU time per envelope over every sample, to print at the end: a figure that other
/// work on a shared machine does not skew the way it skews elapsed time.
static CPU: std::sync::Mutex<(Duration, u64)> = std::sync::Mutex::new((Duration::ZERO, 0));

/// One sample: a fresh relay on `database_url`, every envelope through it; the time from
/// the first submission to the last delivery.
async fn relay_all(fleet: &Fleet, database_url: &str) -> Duration {
    let relay = Relay::start(config(database_url)).await.unwrap();
    let url = relay.url();
    for k in fleet.senders.iter().chain(&fleet.receivers) {
        agentfw_relay::client::join(
            &Endpoint::new(&url, None).unwrap(),
            &relay.invite("bench").await.unwrap(),
            k,
            "bench",
        )
        .await
        .unwrap();
    }
    let mut receivers = Vec::new();
    for k in &fleet.receivers {
        let (client, incoming) = Client::connect(client_config(&url), k.clone());
        client.wait_connected().await.unwrap();
        receivers.push((client, incoming));
    }
    let mut senders = Vec::new();
    for k in &fleet.senders {
        let (client, incoming) = Client::connect(client_config(&url), k.clone());
        client.wait_connected().await.unwrap();
        senders.push((client, incoming));
    }
    let started = Instant::now();
    let cpu_before = cpu_time();
    let receiving: Vec<_> = receivers
        .into_iter()
        .map(|(client, mut incoming)| {
            tokio::spawn(async move {
                let mut got = 0;
                while got < PER_SENDER {
                    if let Some(Incoming::Delivery(d)) = incoming.recv().await {
                        client.ack(d.seq);
                        got += 1;
                    }
                }
                client.stop();
                Instant::now()
            })
        })
        .collect();
    let sending: Vec<_> = senders
        .iter()
        .zip(&fleet.frames)
        .map(|((client, _), frames)| {
            let (client, frames) = (client.clone(), frames.clone());
            tokio::spawn(async move {
                futures_util::stream::iter(frames)
                    .map(|(id, frame)| {
                        let client = client.clone();
                        async move { client.submit_frame(id, frame).await.unwrap() }
                    })
                    .buffer_unordered(512)
                    .for_each(|_| async {})
                    .await;
            })
        })
        .collect();
    for s in sending {
        s.await.unwrap();
    }
    let mut last = started;
    for r in receiving {
        last = last.max(r.await.unwrap());
    }
    if let (Some(before), Some(after), Ok(mut cpu)) = (cpu_before, cpu_time(), CPU.lock()) {
        cpu.0 += after.saturating_sub(before);
        cpu.1 += (PAIRS * PER_SENDER) as u64;
    }
    for (client, _) in senders {
        client.stop();
    }
    relay.shutdown().await;
    last - started
}

async fn fresh_postgres(url: &str) -> String {
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let name = format!("agentfw_relay_bench_{}", u64::from_le_bytes(clock::random_bytes::<8>().unwrap()));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut conn).await.unwrap();
    let base = url.split('?').next().unwrap();
    format!("{}/{name}", base.rsplit_once('/').unwrap().0)
}

fn throughput(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let fleet = Fleet::new();
    let mut group = c.benchmark_group("relay/throughput");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements((PAIRS * PER_SENDER) as u64));
    let report = |name: &str| {
        if let Ok(mut cpu) = CPU.lock() {
            if cpu.1 > 0 {
                let per = cpu.0.as_secs_f64() * 1e6 / cpu.1 as f64;
                eprintln!(
                    "relay/throughput/{name}: {per:.0} µs of CPU per envelope (relay and the simulated devices, one process): \
                     {:.0} envelopes/s on two free cores",
                    2e6 / per
                );
            }
            *cpu = (Duration::ZERO, 0);
        }
    };
    group.bench_function("sqlite", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let dir = tempfile::tempdir().unwrap();
                    total += relay_all(&fleet, &format!("sqlite://{}", dir.path().join("relay.db").display())).await;
                }
                total
            })
        });
    });
    report("sqlite");
    if let Some(url) = std::env::var("AGENTFW_RELAY_TEST_DATABASE_URL").ok().filter(|u| !u.is_empty()) {
        group.bench_function("postgres", |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += relay_all(&fleet, &fresh_postgres(&url).await).await;
                    }
                    total
                })
            });
        });
        report("postgres");
    } else {
        eprintln!("relay/throughput/postgres skipped: AGENTFW_RELAY_TEST_DATABASE_URL is not set");
    }
    group.finish();
}

fn latency(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("relay.db").display());
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let (alice, bob) = (
        Arc::new(DeviceKeys::generate(clock::now(), &mut rng)),
        Arc::new(DeviceKeys::generate(clock::now(), &mut rng)),
    );
    let (relay, sender, mut incoming) = runtime.block_on(async {
        let relay = Relay::start(config(&db)).await.unwrap();
        for k in [&alice, &bob] {
            agentfw_relay::client::join(
                &Endpoint::new(&relay.url(), None).unwrap(),
                &relay.invite("bench").await.unwrap(),
                k,
                "bench",
            )
            .await
            .unwrap();
        }
        let (sender, _) = Client::connect(client_config(&relay.url()), alice.clone());
        let (receiver, incoming) = Client::connect(client_config(&relay.url()), bob.clone());
        sender.wait_connected().await.unwrap();
        receiver.wait_connected().await.unwrap();
        (relay, sender, (receiver, incoming))
    });
    let mut keyring = Keyring::new();
    keyring.trust(alice.public().clone()).unwrap();
    let mut replay = ReplayCache::default();
    let body = agentfw_benches::ascii_1k();
    let mut samples: Vec<Duration> = Vec::new();
    let mut group = c.benchmark_group("relay");
    group.sample_size(50).measurement_time(Duration::from_secs(10));
    group.bench_function("latency", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t0 = Instant::now();
                    let now = clock::now();
                    let id = MessageId::generate(now, &mut rng);
                    let (web, api, limits) = (agent("web"), agent("api"), Limits::default());
                    let (json, body) = ("application/json", body.as_bytes());
                    let routed =
                        Routed::seal(&alice, bob.public(), web, api, id, json, body, &limits, now, &mut rng).unwrap();
                    sender.submit(&routed).await.unwrap();
                    let delivery = loop {
                        if let Some(Incoming::Delivery(d)) = incoming.1.recv().await {
                            break d;
                        }
                    };
                    delivery.verify(alice.public()).unwrap();
                    let opened = seal::open(
                        &bob,
                        &keyring,
                        &mut replay,
                        delivery.envelope().as_bytes(),
                        &Limits::default(),
                        clock::now(),
                    )
                    .unwrap();
                    assert_eq!(opened.body.len(), body.len());
                    incoming.0.ack(delivery.seq);
                    let dt = t0.elapsed();
                    samples.push(dt);
                    total += dt;
                }
                total
            })
        });
    });
    group.finish();
    samples.sort_unstable();
    if !samples.is_empty() {
        let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
        eprintln!(
            "relay/latency over {} messages: median {:.2} ms, p90 {:.2} ms, p99 {:.2} ms",
            samples.len(),
            at(0.5).as_secs_f64() * 1e3,
            at(0.9).as_secs_f64() * 1e3,
            at(0.99).as_secs_f64() * 1e3
        );
    }
    runtime.block_on(relay.shutdown());
}

criterion_group!(benches, throughput, latency);
criterion_main!(benches);
