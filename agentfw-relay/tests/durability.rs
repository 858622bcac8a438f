//! The relay as a separate process: killed in the middle of traffic it loses and
//! duplicates nothing it acknowledged; and its files and logs never hold message text.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use agentfw_core::firewall::Accepted;
use agentfw_core::message::MessageId;
use agentfw_core::seal::Limits;
use agentfw_relay::client::ClientError;
use agentfw_relay::clock;
use agentfw_relay::protocol::Routed;
use common::*;
use rand_core::SeedableRng;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_killed_in_the_middle_of_traffic_loses_and_duplicates_nothing_it_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_url(dir.path());
    let port = free_port();
    let log = dir.path().join("relay.log");
    let mut relay = RelayProcess::spawn(&db, port, &log).await;
    let (web, api) = (agent("web", "claude", "laptop"), agent("api", "codex", "desktop"));
    let mut a =
        Daemon::join_at(&endpoint(&relay.url), &invite(&relay.url).await, "laptop", 31, vec![web.clone()]).await;
    let mut b =
        Daemon::join_at(&endpoint(&relay.url), &invite(&relay.url).await, "desktop", 32, vec![api.clone()]).await;
    a.pump_until(WAIT, |d| d.directory.device_of(&api.id).is_some()).await;
    let template = a.send(&web, &api, "Warming up: which port?").await.unwrap();
    b.pump_until(WAIT, |d| d.inbox.contains_key(&template.id)).await;

    // 400 envelopes, sealed up front, submitted in waves while the relay is killed and
    // restarted underneath.
    const N: usize = 400;
    let bundle = b.keys.public().clone();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(33);
    let mut envelopes = Vec::new();
    for i in 0..N {
        let message = Accepted {
            id: MessageId::generate(now(), &mut rng),
            body: format!("message {i} of the restart test"),
            ..template.clone()
        };
        let body = serde_json::to_vec(&message).unwrap();
        let (from, to, id) = (message.from.clone(), message.to.clone(), message.id);
        let routed =
            Routed::seal(&a.keys, &bundle, from, to, id, CONTENT_TYPE, &body, &Limits::default(), now(), &mut rng)
                .unwrap();
        envelopes.push((id, routed));
    }
    let sent_ids: BTreeSet<MessageId> = envelopes.iter().map(|(id, _)| *id).collect();
    let client = a.client.clone();
    // A steady stream: one submission every half millisecond, each waiting for its answer, so that at
    // any moment some are in flight (sent, stored, or stored and not yet answered).
    let sender = tokio::spawn(async move {
        let tasks: Vec<_> = envelopes
            .into_iter()
            .enumerate()
            .map(|(i, (id, e))| {
                let client = client.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_micros(500 * i as u64)).await;
                    (id, client.submit(&e).await)
                })
            })
            .collect();
        let mut results = Vec::new();
        for t in tasks {
            results.push(t.await.unwrap());
        }
        results
    });

    b.pump_until(WAIT, |d| d.received.len() > 150).await;
    relay.kill();
    let during = b.received.len();
    b.pump_for(Duration::from_millis(300)).await;
    relay = RelayProcess::spawn(&db, port, &log).await;
    b.pump_until(Duration::from_secs(60), |d| sent_ids.iter().all(|id| d.received.contains(id))).await;

    let results = sender.await.unwrap();
    let acknowledged: Vec<MessageId> = results
        .iter()
        .map(|(id, r)| match r {
            Ok(_) => *id,
            Err(ClientError::Refused { code, reason }) => panic!("{id} refused: {code}: {reason}"),
            Err(e) => panic!("{id}: {e}"),
        })
        .collect();
    let duplicates = results.iter().filter(|(_, r)| r.as_ref().is_ok_and(|s| s.duplicate)).count();
    assert_eq!(acknowledged.len(), N);
    // Nothing acknowledged is lost; nothing is in the inbox twice.
    assert!(acknowledged.iter().all(|id| b.received.contains(id)));
    assert_eq!(b.received.len(), N + 1);
    assert_eq!(b.inbox.len(), N + 1);
    eprintln!(
        "killed after {during} deliveries; {duplicates} resends were recognised as stored; {} repeats on the wire were dropped by id",
        b.repeats
    );
    // Everything was acknowledged by the recipient too: nothing waits at the relay.
    let deadline = clock::instant() + WAIT;
    loop {
        b.pump_for(Duration::from_millis(100)).await;
        let (_, overview) = admin(&relay.url, "GET", "/admin/api/overview", serde_json::Value::Null).await;
        if overview["relay"]["pending"] == 0 {
            break;
        }
        assert!(clock::instant() < deadline, "envelopes still pending: {overview}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relays_database_files_and_logs_never_hold_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_url(dir.path());
    let log = dir.path().join("relay.log");
    let mut relay = RelayProcess::spawn(&db, free_port(), &log).await;
    let (web, api) = (agent("web", "claude", "laptop"), agent("api", "codex", "desktop"));
    let mut a =
        Daemon::join_at(&endpoint(&relay.url), &invite(&relay.url).await, "laptop", 41, vec![web.clone()]).await;
    let mut b =
        Daemon::join_at(&endpoint(&relay.url), &invite(&relay.url).await, "desktop", 42, vec![api.clone()]).await;
    a.pump_until(WAIT, |d| d.directory.device_of(&api.id).is_some()).await;

    const MARKER: &str = "zebra-quartz-7f3a9c: the staging password is hunter2-plaintext";
    // Delivered and read, refused by the recipient's rules, and still waiting at the relay.
    let delivered = a.send(&web, &api, &format!("Note for the API team. {MARKER}")).await.unwrap();
    b.pump_until(WAIT, |d| d.inbox.contains_key(&delivered.id)).await;
    let outputs = b.read(&api);
    let text = match outputs.as_slice() {
        [agentfw_core::firewall::Output::Delivered { delivery, .. }] => delivery.fenced.text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(text.contains(MARKER), "the recipient reads the text");
    b.client.stop();
    let waiting = a.send(&web, &api, &format!("Second note, not yet collected. {MARKER}")).await.unwrap();
    let _ = waiting;

    // Stop the relay hard and look at every byte it wrote.
    relay.kill();
    let mut searched = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        searched += bytes.len();
        for needle in [MARKER.as_bytes(), b"hunter2-plaintext".as_slice(), b"zebra-quartz".as_slice()] {
            assert!(!bytes.windows(needle.len()).any(|w| w == needle), "{} holds the text", path.display());
        }
    }
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(log_text.contains("device connected"), "the log is there and was written");
    assert!(searched > 10_000, "the database files were searched ({searched} bytes)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_makes_invites_and_admin_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_url(dir.path());
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentfw-relay"))
            .args(["--database-url", &db])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8(out.stdout).unwrap().trim().to_owned(), String::from_utf8(out.stderr).unwrap())
    };
    // A relay started without a token makes one and prints it once.
    let port = free_port();
    let log = dir.path().join("relay.log");
    let file = std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(&log).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentfw-relay"))
        .args(["--database-url", &db, "serve", "--listen", &format!("127.0.0.1:{port}")])
        .env_remove("AGENTFW_RELAY_ADMIN_TOKEN")
        .stderr(file)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let deadline = clock::instant() + Duration::from_secs(20);
    let token = loop {
        let text = std::fs::read_to_string(&log).unwrap();
        if let Some(line) = text.lines().find(|l| l.starts_with("admin token (shown once; keep it): ")) {
            break line.rsplit(' ').next().unwrap().to_owned();
        }
        assert!(clock::instant() < deadline, "no admin token printed:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(token.starts_with("afwa_") && token.len() > 40, "{token}");
    let auth = format!("Bearer {token}");
    let overview = |auth: String| {
        let url = url.clone();
        async move {
            agentfw_relay::client::http::request(
                &endpoint(&url),
                "GET",
                "/admin/api/overview",
                &[("authorization", &auth)],
                Vec::new(),
            )
            .await
            .unwrap()
            .status
        }
    };
    assert_eq!(overview(auth.clone()).await, 200);

    // `invite` on the same database, while the relay runs: the device joins with it, once.
    let (invite, hint) = cli(&["invite", "--note", "laptop"]);
    assert!(invite.starts_with("afwi_"), "{invite}");
    assert!(hint.contains("agentfw join"), "{hint}");
    let k = keys(77);
    agentfw_relay::client::join(&endpoint(&url), &invite, &k, "laptop").await.unwrap();
    let again = agentfw_relay::client::join(&endpoint(&url), &invite, &keys(78), "other").await.unwrap_err();
    assert_eq!(again.code(), Some("relay.bad_invite"));

    // A restart keeps the token and prints nothing new.
    child.kill().unwrap();
    child.wait().unwrap();
    let serve = |log: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentfw-relay"))
            .args(["--database-url", &db, "serve", "--listen", &format!("127.0.0.1:{port}")])
            .env_remove("AGENTFW_RELAY_ADMIN_TOKEN")
            .stderr(std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(log).unwrap())
            .spawn()
            .unwrap()
    };
    let up = || async {
        let deadline = clock::instant() + Duration::from_secs(20);
        while agentfw_relay::client::http::request(&endpoint(&url), "GET", "/healthz", &[], Vec::new()).await.is_err() {
            assert!(clock::instant() < deadline, "the relay did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let mut child = serve(&dir.path().join("second.log"));
    up().await;
    assert_eq!(overview(auth.clone()).await, 200);
    let text = std::fs::read_to_string(dir.path().join("second.log")).unwrap();
    assert!(!text.contains("admin token (shown once"), "{text}");
    child.kill().unwrap();
    child.wait().unwrap();

    // `admin-token` makes a new one; the old one stops working.
    let (fresh, _) = cli(&["admin-token"]);
    let mut child = serve(&dir.path().join("third.log"));
    up().await;
    assert_eq!(overview(auth).await, 401);
    assert_eq!(overview(format!("Bearer {fresh}")).await, 200);
    child.kill().unwrap();
    child.wait().unwrap();
}
