//! Two relay instances sharing one PostgreSQL database (SC1): a message submitted through
//! one reaches a device connected to the other, and central policy (an admin block, a
//! containment report) reaches devices on both, by `LISTEN`/`NOTIFY`.
//!
//! Needs `AGENTFW_RELAY_TEST_DATABASE_URL` (`scripts/postgres-for-tests` starts a cluster
//! and sets it). Without it the test fails under CI (`CI=true`) and is skipped locally.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::Duration;

use agentfw_core::firewall::Output;
use agentfw_relay::Relay;
use common::*;
use serde_json::json;
use sqlx::Connection as _;

const WAIT: Duration = Duration::from_secs(15);

/// A fresh database on the test cluster, or `None` (skip) outside CI.
#[allow(clippy::disallowed_methods)] // The test reads its environment.
async fn fresh_database() -> Option<String> {
    let Some(url) = std::env::var("AGENTFW_RELAY_TEST_DATABASE_URL").ok().filter(|u| !u.is_empty()) else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!(
                "AGENTFW_RELAY_TEST_DATABASE_URL is not set, and CI must run the PostgreSQL tests: \
                 start a cluster with `source scripts/postgres-for-tests` first"
            );
        }
        eprintln!("skipped: AGENTFW_RELAY_TEST_DATABASE_URL is not set (run `source scripts/postgres-for-tests`)");
        return None;
    };
    let mut conn = sqlx::PgConnection::connect(&url).await.expect("the test cluster answers");
    let name = format!("agentfw_relay_test_{}", u64::from_le_bytes(agentfw_relay::clock::random_bytes::<8>().unwrap()));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut conn).await.unwrap();
    let (base, query) = url.split_once('?').map_or((url.as_str(), ""), |(b, q)| (b, q));
    let base = base.rsplit_once('/').map_or(base, |(b, _)| b);
    Some(if query.is_empty() { format!("{base}/{name}") } else { format!("{base}/{name}?{query}") })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relay_instances_share_state_through_postgresql() {
    let Some(db) = fresh_database().await else { return };
    let one = Relay::start(relay_config(&db)).await.unwrap();
    let two = Relay::start(relay_config(&db)).await.unwrap();
    let (web, worker) = (agent("web", "claude", "laptop"), agent("worker", "cursor", "laptop"));
    let api = agent("api", "codex", "desktop");

    // An invite made on one instance enrolls a device through the other.
    let invite = one.invite("laptop").await.unwrap();
    let mut a = Daemon::join_at(&endpoint(&two.url()), &invite, "laptop", 51, vec![web.clone(), worker.clone()]).await;
    // The laptop stays on instance two; the desktop is on instance one.
    let mut b = Daemon::join(&one, "desktop", 52, vec![api.clone()]).await;
    a.pump_until(WAIT, |d| d.directory.device_of(&api.id).is_some()).await;
    b.pump_until(WAIT, |d| d.directory.device_of(&web.id).is_some()).await;

    // Submitted through two, delivered by one.
    let m = a.send(&web, &api, "What JSON should /health return?").await.unwrap();
    b.pump_until(WAIT, |d| d.inbox.contains_key(&m.id)).await;
    assert!(matches!(b.read(&api).as_slice(), [Output::Delivered { .. }]));
    // And back, through one to two.
    let reply = b.send(&api, &web, "{\"status\": \"ok\"}").await.unwrap();
    a.pump_until(WAIT, |d| d.inbox.contains_key(&reply.id)).await;

    // A worm contained on the desktop (instance one) is contained on the laptop (two).
    let first = a.send(&web, &api, INJECTION).await.unwrap();
    b.pump_until(WAIT, |d| d.inbox.contains_key(&first.id)).await;
    b.read(&api);
    assert!(b.send(&api, &worker, INJECTION).await.unwrap_err().starts_with("rule:"));
    a.pump_until(WAIT, |d| d.quarantined(&web) && d.firewall.containment().remembered().count() == 1).await;

    // An admin block made on instance two reaches the desktop on instance one.
    let (_, _) = admin(&two.url(), "POST", "/admin/api/lift", json!({"agent": web.id})).await;
    let (_, _) = admin(&two.url(), "POST", "/admin/api/lift", json!({"agent": api.id})).await;
    let (status, _) = admin(&two.url(), "POST", "/admin/api/disconnect", json!({"a": web.id, "b": api.id})).await;
    assert_eq!(status, 200);
    b.pump_until(WAIT, |d| !d.firewall.disconnected().is_empty() && !d.quarantined(&api)).await;
    let r = b.send(&api, &web, "still there?").await.unwrap_err();
    assert!(r.starts_with("admin.disconnected"), "{r}");
    // Both instances' dashboards agree.
    for relay in [&one, &two] {
        let (_, overview) = admin(&relay.url(), "GET", "/admin/api/overview", serde_json::Value::Null).await;
        assert_eq!(overview["relay"]["database"], "postgresql");
        assert_eq!(overview["disconnected"].as_array().unwrap().len(), 1, "{overview}");
        assert_eq!(overview["devices"].as_array().unwrap().len(), 2, "{overview}");
    }
    // The audit log holds both instances' records.
    let (_, records) = admin(&one.url(), "GET", "/admin/api/audit", serde_json::Value::Null).await;
    let relayed = records.as_array().unwrap().iter().filter(|r| r["stage"] == "relaying").count();
    assert!(relayed >= 3, "{records}");
    one.shutdown().await;
    two.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelopes_stored_while_the_recipient_is_away_reach_it_through_another_instance() {
    let Some(db) = fresh_database().await else { return };
    let one = Relay::start(relay_config(&db)).await.unwrap();
    let two = Relay::start(relay_config(&db)).await.unwrap();
    let (web, api) = (agent("web", "claude", "laptop"), agent("api", "codex", "desktop"));
    let mut a = Daemon::join(&one, "laptop", 61, vec![web.clone()]).await;
    let mut b = Daemon::join(&one, "desktop", 62, vec![api.clone()]).await;
    a.pump_until(WAIT, |d| d.directory.device_of(&api.id).is_some()).await;
    let template = a.send(&web, &api, "The deploy window moved.").await.unwrap();
    b.pump_until(WAIT, |d| d.inbox.contains_key(&template.id)).await;
    let keys = b.keys.clone();
    b.client.stop();
    drop(b);
    let mut sent = Vec::new();
    for i in 0..20 {
        let m = a.fabricate(&template, &format!("note {i}: the deploy window moved to {i}:00"));
        sent.push(m.id);
        a.relay(m, keys.device()).await.unwrap();
    }
    // The desktop comes back through the other instance and gets everything.
    let mut b = Daemon::connect(&endpoint(&two.url()), "desktop", 63, keys, vec![api.clone()]).await;
    b.pump_until(WAIT, |d| sent.iter().all(|id| d.received.contains(id))).await;
    one.shutdown().await;
    two.shutdown().await;
}
