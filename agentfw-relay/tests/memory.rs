//! The relay's memory with 1,000 devices connected, measured on the relay process.
//!
//! `cargo test --release -p agentfw-relay --test memory -- --nocapture` prints the figures.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::Duration;

use agentfw_relay::client::Client;
use common::*;

const DEVICES: usize = 1000;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_connected_devices() {
    if !std::path::Path::new("/proc/self/status").exists() {
        eprintln!("skipped: no /proc to read memory from");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let relay = RelayProcess::spawn(&sqlite_url(dir.path()), free_port(), &dir.path().join("relay.log")).await;
    let pid = relay.child.id();
    let mut all = Vec::new();
    for i in 0..DEVICES {
        let k = keys(10_000 + i as u64);
        agentfw_relay::client::join(&endpoint(&relay.url), &invite(&relay.url).await, &k, &format!("device {i}"))
            .await
            .unwrap();
        all.push(k);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib(pid);
    let mut clients = Vec::new();
    for k in &all {
        let (client, incoming) = Client::connect(client_config(&endpoint(&relay.url)), k.clone());
        clients.push((client, incoming));
    }
    for (client, incoming) in &mut clients {
        client.wait_connected().await.unwrap();
        // Take the login frames so the relay's queues drain.
        while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(1), incoming.recv()).await {}
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    for (_, incoming) in &mut clients {
        while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(1), incoming.recv()).await {}
    }
    let after = rss_kib(pid);
    let per_device = (after.saturating_sub(before)) as f64 / DEVICES as f64;
    eprintln!(
        "relay memory: {:.1} MiB with {DEVICES} devices enrolled and none connected, {:.1} MiB with all {DEVICES} connected: {per_device:.1} KiB per connected device",
        before as f64 / 1024.0,
        after as f64 / 1024.0
    );
    assert!(per_device < 256.0, "{per_device} KiB per device");
    for (client, _) in &clients {
        client.stop();
    }
}
