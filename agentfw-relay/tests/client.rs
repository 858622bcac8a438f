//! The client library the daemon uses: join, connect with backoff, submit (kept across
//! reconnects), receive, acknowledge, look up bundles, and mirror central policy.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::Duration;

use agentfw_core::central::PolicyMirror;
use agentfw_core::firewall::AdminAction;
use agentfw_core::message::MessageId;
use agentfw_core::seal::Limits;
use agentfw_relay::Relay;
use agentfw_relay::client::{Client, ClientError, Incoming, join};
use agentfw_relay::clock;
use agentfw_relay::protocol::Routed;
use common::*;
use rand_core::SeedableRng;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(10);

async fn next(rx: &mut tokio::sync::mpsc::Receiver<Incoming>, pick: impl Fn(&Incoming) -> bool) -> Incoming {
    loop {
        let i = tokio::time::timeout(WAIT, rx.recv()).await.expect("in time").expect("running");
        if pick(&i) {
            return i;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_waits_for_the_relay_keeps_submissions_and_delivers_them_once_it_is_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_url(dir.path());
    // Enroll both devices, then stop the relay.
    let relay = start_relay(&db).await;
    let addr = relay.addr();
    let (a, b) = (keys(1), keys(2));
    for (k, name) in [(&a, "a"), (&b, "b")] {
        join(&endpoint(&relay.url()), &relay.invite(name).await.unwrap(), k, name).await.unwrap();
    }
    relay.shutdown().await;

    // The client starts while nothing listens, and backs off.
    let url = format!("http://{addr}");
    let (client, mut incoming) = Client::connect(client_config(&endpoint(&url)), a.clone());
    let (web, api) = (agent("web", "claude", "a"), agent("api", "codex", "b"));
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    let id = MessageId::generate(clock::now(), &mut rng);
    let (now, limits) = (clock::now(), Limits::default());
    let routed =
        Routed::seal(&a, b.public(), web.clone(), api.clone(), id, CONTENT_TYPE, b"queued", &limits, now, &mut rng)
            .unwrap();
    let submit = {
        let client = client.clone();
        tokio::spawn(async move { client.submit(&routed).await })
    };
    assert!(matches!(client.lookup(vec![b.device()]).await, Err(ClientError::NotConnected)));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!client.is_connected());
    assert!(!submit.is_finished(), "a submission waits for the relay");

    // The relay comes back on the same address: the client connects and the envelope goes.
    let mut config = relay_config(&db);
    config.listen = addr;
    let relay = Relay::start(config).await.unwrap();
    client.wait_connected().await.unwrap();
    assert!(matches!(
        next(&mut incoming, |i| matches!(i, Incoming::Connected { .. })).await,
        Incoming::Connected { .. }
    ));
    assert!(!submit.await.unwrap().unwrap().duplicate);
    let bundles = client.lookup(vec![b.device(), keys(9).device()]).await.unwrap();
    assert_eq!(bundles.len(), 1);
    assert_eq!(bundles[0].bundle, *b.public());

    // The recipient gets it, acknowledges it, and does not get it again after a reconnect.
    let (bc, mut bi) = Client::connect(client_config(&endpoint(&relay.url())), b.clone());
    let Incoming::Delivery(d) = next(&mut bi, |i| matches!(i, Incoming::Delivery(_))).await else { panic!() };
    d.verify(a.public()).unwrap();
    assert_eq!(d.routing().from.id, web.id);
    assert_eq!(d.envelope().header().id, id);
    bc.ack(d.seq);
    tokio::time::sleep(Duration::from_millis(300)).await;
    bc.stop();
    let (bc, mut bi) = Client::connect(client_config(&endpoint(&relay.url())), b.clone());
    next(&mut bi, |i| matches!(i, Incoming::Connected { .. })).await;
    let again =
        tokio::time::timeout(Duration::from_millis(500), next(&mut bi, |i| matches!(i, Incoming::Delivery(_)))).await;
    assert!(again.is_err(), "an acknowledged envelope is not delivered again");
    bc.stop();
    client.stop();
    assert!(matches!(client.lookup(vec![]).await, Err(ClientError::Stopped)));
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_missed_while_offline_is_undone_by_the_reset() {
    let dir = tempfile::tempdir().unwrap();
    let relay = start_relay(&sqlite_url(dir.path())).await;
    let (web, api) = (agent("web", "claude", "a"), agent("api", "codex", "b"));
    let mut d = Daemon::join(&relay, "a", 1, vec![web.clone()]).await;
    relay
        .admin(vec![AdminAction::Disconnect { a: web.id.clone(), b: api.id.clone(), reason: "r".into() }])
        .await
        .unwrap();
    d.pump_until(WAIT, |d| d.firewall.disconnected().len() == 1).await;
    // A block the device's own admin made is not the relay's to undo.
    let (ops, dev) = (agent("ops", "gemini", "a"), agent("dev", "claude", "a"));
    d.admin_local(AdminAction::Disconnect { a: ops.id.clone(), b: dev.id.clone(), reason: "local".into() });

    // Offline while the relay lifts the block and quarantines someone.
    let keys = d.keys.clone();
    d.client.stop();
    let mut mirror = d.mirror.clone();
    let firewall_state = d.firewall.snapshot();
    drop(d);
    relay.admin(vec![AdminAction::Reconnect { a: api.id.clone(), b: web.id.clone() }]).await.unwrap();
    relay
        .admin(vec![AdminAction::Quarantine { agent: api.id.clone(), seconds: 600, reason: "r".into(), key: None }])
        .await
        .unwrap();

    let (client, mut incoming) = Client::connect(client_config(&endpoint(&relay.url())), keys);
    let Incoming::Policy(frame) = next(&mut incoming, |i| matches!(i, Incoming::Policy(_))).await else { panic!() };
    assert!(frame.reset);
    let applied = mirror.apply(&frame);
    // The mirror names pairs in their canonical order.
    assert!(applied.contains(&AdminAction::Reconnect { a: web.id.clone(), b: api.id.clone() }), "{applied:?}");
    let mut firewall = agentfw_core::firewall::Firewall::restore(firewall_state);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    for action in applied {
        let _ = firewall.handle(clock::now(), &mut rng, agentfw_core::firewall::Input::Admin(action));
    }
    assert_eq!(firewall.disconnected().len(), 1, "only the local block is left");
    assert_eq!(firewall.disconnected()[0].reason, "local");
    assert!(firewall.quarantine_of(clock::now(), &api.id).is_some());
    assert_eq!(mirror, {
        let mut m = PolicyMirror::new();
        m.apply(&frame);
        m
    });
    client.stop();
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_is_decided_centrally_and_enforced_at_both_ends() {
    let dir = tempfile::tempdir().unwrap();
    let relay = start_relay(&sqlite_url(dir.path())).await;
    let url = relay.url();
    let (web, api, new) = (agent("web", "claude", "a"), agent("api", "codex", "b"), agent("new", "cursor", "a"));
    let mut a = Daemon::join(&relay, "a", 1, vec![web.clone(), new.clone()]).await;
    let mut b = Daemon::join(&relay, "b", 2, vec![api.clone()]).await;
    a.pump_until(WAIT, |d| d.directory.device_of(&api.id).is_some()).await;

    // A fresh relay reports only (AD6): admitted, with a warning in the audit log.
    let first = a.send(&web, &api, "hello").await.unwrap();
    b.pump_until(WAIT, |d| d.inbox.contains_key(&first.id)).await;
    let (_, records) =
        admin(&url, "GET", "/admin/api/audit?verdict=allow&from=web%20(claude)", serde_json::Value::Null).await;
    assert!(records.as_array().unwrap().iter().any(|r| r["code"] == "admission.would_refuse"), "{records}");

    // The admin loads ratings, previews a threshold, and turns enforcement on.
    let inventory = json!({"agents": [
        {"agent": "web (claude)", "components": [{"id": "mcp:github", "score": 7.5}, {"id": "skill:deploy", "score": 2.0}]},
        {"agent": "api (codex)", "components": [{"id": "mcp:fs", "score": 3.0}]}]});
    let r = agentfw_relay::client::http::request(
        &endpoint(&url),
        "PUT",
        "/admin/api/admission/inventory",
        &[("authorization", &format!("Bearer {ADMIN_TOKEN}"))],
        inventory.to_string().into_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, preview) = admin(&url, "POST", "/admin/api/admission/preview", json!({"threshold": "2.5"})).await;
    assert_eq!(preview["kept_out"].as_array().unwrap().len(), 2, "{preview}");
    assert_eq!(
        preview["summary"].as_str().unwrap().lines().next().unwrap(),
        "threshold 2.5 (LOW) keeps out 2 of 2 agents (1 more than the current 7.0)"
    );
    let (status, _) = admin(&url, "POST", "/admin/api/admission/mode", json!({"mode": "enforce"})).await;
    assert_eq!(status, 200);
    a.pump_until(WAIT, |d| d.firewall.admission().mode() == agentfw_core::admission::Mode::Enforce).await;

    // Refused at the sender's daemon, naming the component (AD3)...
    let r = a.send(&web, &api, "hello again").await.unwrap_err();
    assert!(r.contains("mcp:github is HIGH (7.5)"), "{r}");
    // ...and at the relay for a daemon that would not refuse.
    let bypass = a.fabricate(&first, "hello from a daemon without the policy");
    let r = a.relay(bypass, b.device()).await.unwrap_err();
    assert_eq!(
        r,
        "admission.refused: the relay refused (admission.refused): the sender, web (claude), is not admitted to the network: mcp:github is HIGH (7.5)"
    );

    // A per-component exception lets it through everywhere (AD4).
    let (status, _) =
        admin(&url, "POST", "/admin/api/admission/exception", json!({"component": "mcp:github", "granted": true}))
            .await;
    assert_eq!(status, 200);
    a.pump_until(WAIT, |d| !d.firewall.admission().config().exceptions.is_empty()).await;
    a.send(&web, &api, "excused now").await.unwrap();

    // An agent nobody rated is unknown (AD5): its daemon reports its components once, the
    // relay rates them from the inventory, and everyone gets the verdict.
    let r = a.send(&new, &api, "first contact").await.unwrap_err();
    assert!(r.starts_with("admission.refresh"), "{r}");
    a.client.components(&new, &[agentfw_core::admission::ComponentId::mcp("fs").unwrap()]);
    a.pump_until(WAIT, |d| d.firewall.admission().inventory().get(new.id.as_str()).is_some()).await;
    a.send(&new, &api, "rated now").await.unwrap();
    b.pump_until(WAIT, |d| d.firewall.admission().inventory().get(new.id.as_str()).is_some()).await;
    relay.shutdown().await;
}
