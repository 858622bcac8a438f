//! The metadata log (AM4): query by sender, recipient and time from the API and the CLI,
//! JSONL export, and 90-day retention.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agentfw_core::seal::DeviceId;
use agentfw_core::time::Timestamp;
use agentfw_relay::audit::{AuditQuery, AuditRecord};
use agentfw_relay::clock;
use agentfw_relay::store::{AfterCommit, Store, Writer};
use common::*;

const WAIT: Duration = Duration::from_secs(10);

fn record(at: Timestamp, from: &str, to: &str, verdict: &str) -> AuditRecord {
    AuditRecord {
        at,
        source: "relay".into(),
        message: None,
        stage: "relaying".into(),
        from: format!("id:{from}"),
        from_label: format!("{from} (claude)"),
        to: format!("id:{to}"),
        to_label: format!("{to} (codex)"),
        size: 2400,
        hops: None,
        verdict: verdict.into(),
        code: (verdict == "deny").then(|| "admin.disconnected".into()),
        rule: None,
        reason: (verdict == "deny").then(|| "an admin disconnected them".into()),
    }
}

struct Quiet;
impl AfterCommit for Quiet {
    fn stored(&self, _: DeviceId, _: u64, _: Arc<Vec<u8>>) {}
    fn audited(&self) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_is_queried_exported_and_pruned_after_ninety_days() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_url(dir.path());
    let store = Store::open(&db).await.unwrap();
    let writer = Writer::start(store.clone(), "test".into(), clock::now, Arc::new(Quiet));
    let now = clock::now();
    let day = |n: u64| Timestamp::from_millis(now.as_millis() - n * 86_400_000);
    writer
        .audit(vec![
            record(day(100), "web", "api", "allow"),
            record(day(10), "web", "api", "deny"),
            record(day(2), "api", "web", "allow"),
            record(day(1), "ops", "api", "allow"),
        ])
        .await
        .unwrap();
    // Wait for the commit (audit records ride the next group commit).
    let all = AuditQuery { limit: 100, ..AuditQuery::default() };
    while store.audit(&all).await.unwrap().len() < 4 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let q = |from: Option<&str>, to: Option<&str>, since: Option<Timestamp>| AuditQuery {
        from: from.map(Into::into),
        to: to.map(Into::into),
        since,
        limit: 100,
        ..AuditQuery::default()
    };
    assert_eq!(store.audit(&q(Some("web (claude)"), None, None)).await.unwrap().len(), 2);
    assert_eq!(store.audit(&q(Some("id:web"), Some("id:api"), Some(day(30)))).await.unwrap().len(), 1);
    assert_eq!(store.audit(&q(None, Some("api (codex)"), Some(day(5)))).await.unwrap().len(), 1);

    // The CLI, on the same database: table, JSON and JSONL.
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentfw-relay"))
            .args(["--database-url", &db, "audit"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let jsonl = cli(&["--from", "web (claude)", "--since", "30d", "--jsonl"]);
    let lines: Vec<serde_json::Value> = jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["verdict"], "deny");
    assert_eq!(lines[0]["reason"], "an admin disconnected them");
    assert_eq!(lines[0]["at"].as_str().unwrap().len(), "2026-11-30T14:05:00.000Z".len());
    let table = cli(&["--to", "api (codex)"]);
    assert_eq!(table.lines().count(), 3, "{table}");
    assert!(table.contains("web (claude) -> api (codex)"), "{table}");
    let json: Vec<serde_json::Value> = serde_json::from_str(&cli(&["--json", "--verdict", "deny"])).unwrap();
    assert_eq!(json.len(), 1);
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_agentfw-relay"))
        .args(["--database-url", &db, "audit", "--since", "last tuesday"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a time"));

    // Retention: the 100-day-old record goes, the rest stays.
    let pruned = store
        .prune(now, Duration::from_secs(90 * 86_400), Duration::from_secs(3900), Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(pruned.audit, 1);
    assert_eq!(store.audit(&all).await.unwrap().len(), 3);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_exports_jsonl_of_every_sides_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let relay = start_relay(&sqlite_url(dir.path())).await;
    let (web, api) = (agent("web", "claude", "a"), agent("api", "codex", "b"));
    let mut a = Daemon::join(&relay, "a", 1, vec![web.clone()]).await;
    let mut b = Daemon::join(&relay, "b", 2, vec![api.clone()]).await;
    a.pump_until(WAIT, |d| d.directory.device_of(&api.id).is_some()).await;
    let m = a.send(&web, &api, "What JSON should /health return?").await.unwrap();
    b.pump_until(WAIT, |d| d.inbox.contains_key(&m.id)).await;
    b.read(&api);
    b.pump_for(Duration::from_millis(300)).await;

    let auth = format!("Bearer {ADMIN_TOKEN}");
    let mut stages = Vec::new();
    for _ in 0..50 {
        let r = agentfw_relay::client::http::request(
            &endpoint(&relay.url()),
            "GET",
            "/admin/api/audit.jsonl?to=api%20(codex)&since=1h",
            &[("authorization", &auth)],
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!(r.header("content-type"), Some("application/x-ndjson"));
        stages = r
            .text()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["stage"].as_str().unwrap().to_owned())
            .collect();
        if stages.len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Sent (laptop's firewall), relayed (the relay), delivered (desktop's firewall).
    stages.sort();
    assert_eq!(stages, ["delivering", "relaying", "sending"]);
    let (status, _) = admin(&relay.url(), "GET", "/admin/api/audit?since=yesterday", serde_json::Value::Null).await;
    assert_eq!(status, 400);
    relay.shutdown().await;
}
