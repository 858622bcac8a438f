//! The admin dashboard in a real headless Chromium (AM1–AM3): log in, see conversations
//! with their state and last refusal, disconnect a pair and quarantine an agent with one
//! click each, preview a threshold and leave report-only mode; then check the effect
//! through the API and on both devices' firewalls. Saves `target/dashboard.png`.
//!
//! Needs `AGENTFW_CHROMIUM` and `AGENTFW_PLAYWRIGHT_DIR` (`scripts/browser-for-tests` sets
//! them). Without them the test fails under CI (`CI=true`) and is skipped locally.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;
#[path = "../../tests/browser/env.rs"]
mod env;

use std::time::Duration;

use common::*;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_disconnects_quarantines_and_switches_admission_in_a_real_browser() {
    let Some((chromium, playwright)) = env::browser() else { return };
    let dir = tempfile::tempdir().unwrap();
    let relay = start_relay(&sqlite_url(dir.path())).await;
    let (web, worker, ops) =
        (agent("web", "claude", "laptop"), agent("worker", "cursor", "laptop"), agent("ops", "gemini", "laptop"));
    let (api, docs) = (agent("api", "codex", "desktop"), agent("docs", "claude", "desktop"));
    let mut a = Daemon::join(&relay, "laptop", 1, vec![web.clone(), worker.clone(), ops.clone()]).await;
    let mut b = Daemon::join(&relay, "desktop", 2, vec![api.clone(), docs.clone()]).await;
    a.pump_until(WAIT, |d| d.directory.device_of(&docs.id).is_some()).await;
    b.pump_until(WAIT, |d| d.directory.device_of(&worker.id).is_some()).await;
    // Traffic: a question and its answer between web and api; a forwarded injection from
    // ops through docs to worker, refused on the desktop (ops and docs contained).
    let m = a.send(&web, &api, "What JSON should /health return?").await.unwrap();
    b.pump_until(WAIT, |d| d.inbox.contains_key(&m.id)).await;
    b.read(&api);
    let m = b.send(&api, &web, "{\"status\": \"ok\"}").await.unwrap();
    a.pump_until(WAIT, |d| d.inbox.contains_key(&m.id)).await;
    a.read(&web);
    let m = a.send(&ops, &docs, INJECTION).await.unwrap();
    b.pump_until(WAIT, |d| d.inbox.contains_key(&m.id)).await;
    b.read(&docs);
    b.send(&docs, &worker, INJECTION).await.unwrap_err();
    b.pump_for(Duration::from_millis(300)).await;
    let (_, overview) = admin(&relay.url(), "GET", "/admin/api/overview", Value::Null).await;
    // The pair the browser disconnects: web and api.
    let conv = overview["conversations"].as_array().unwrap().iter().find(|c| {
        (c["a_label"] == "web (claude)" && c["b_label"] == "api (codex)")
            || (c["b_label"] == "web (claude)" && c["a_label"] == "api (codex)")
    });
    let conv = conv.unwrap_or_else(|| panic!("{overview}"));
    let pair = format!("{}|{}", conv["a_label"].as_str().unwrap(), conv["b_label"].as_str().unwrap());

    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    std::fs::create_dir_all(&target).unwrap();
    let screenshot = target.join("dashboard.png");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dashboard/dashboard.mjs");
    let run = tokio::process::Command::new("node")
        .arg(&script)
        .args([relay.url().as_str(), ADMIN_TOKEN, screenshot.to_str().unwrap(), &pair, "worker (cursor)"])
        .env("AGENTFW_CHROMIUM", chromium)
        .env("AGENTFW_PLAYWRIGHT_DIR", playwright)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run).await.expect("the browser finishes").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the browser script failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(seen["before"], "Connected", "{seen}");
    assert_eq!(seen["afterDisconnect"], "Disconnected", "{seen}");
    assert!(seen["preview"].as_str().unwrap().starts_with("threshold 2.5 (LOW) keeps out"), "{seen}");
    assert_eq!(seen["cookieVisibleToScripts"], false);
    assert_eq!(seen["external"], serde_json::json!([]), "the page loads nothing from elsewhere");
    let refusals = seen["lastRefusal"].as_array().unwrap();
    assert!(refusals.iter().any(|r| r.as_str().unwrap().contains("Commands relayed from another agent")), "{seen}");
    assert!(std::fs::metadata(&screenshot).unwrap().len() > 10_000);

    // The effect, through the API...
    let (_, overview) = admin(&relay.url(), "GET", "/admin/api/overview", Value::Null).await;
    let blocked = &overview["disconnected"][0];
    let mut ids = [blocked["a"].as_str().unwrap(), blocked["b"].as_str().unwrap()];
    ids.sort_unstable();
    let mut want = [web.id.as_str(), api.id.as_str()];
    want.sort_unstable();
    assert_eq!(ids, want, "{overview}");
    assert!(overview["quarantined"].as_array().unwrap().iter().any(|q| q["agent"] == worker.id.as_str()), "{overview}");
    assert_eq!(overview["admission"]["mode"], "enforce");
    // ...and on both devices, for the next message.
    a.pump_until(WAIT, |d| d.quarantined(&worker) && !d.firewall.disconnected().is_empty()).await;
    b.pump_until(WAIT, |d| d.quarantined(&worker) && !d.firewall.disconnected().is_empty()).await;
    let r = b.send(&api, &web, "still there?").await.unwrap_err();
    assert!(r.starts_with("admin.disconnected"), "{r}");
    let r = b.send(&api, &worker, "still there?").await.unwrap_err();
    assert!(r.starts_with("containment.quarantined"), "{r}");
    eprintln!("screenshot: {}", screenshot.display());
    relay.shutdown().await;
}
