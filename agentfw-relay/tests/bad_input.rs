//! Bad input, each refused with a clear error and the connection closed where it should
//! be, with nothing else disturbed: garbage frames, forged signatures, unknown devices,
//! replays, oversized envelopes, slow clients, floods, bad enrollments, admin calls
//! without the credential, revoked and rotated keys.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agentfw_core::message::{Agent, MessageId};
use agentfw_core::seal::{DeviceKeys, Limits, PublicBundle};
use agentfw_core::time::Timestamp;
use agentfw_relay::client::{Client, Incoming, http};
use agentfw_relay::protocol::{self, AUTH_CONTEXT, ENROLL_CONTEXT, Routed, ToRelay, VERSION, auth_message};
use agentfw_relay::{Config, Relay, clock};
use common::*;
use futures_util::{SinkExt, StreamExt};
use rand_core::SeedableRng;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

const WAIT: Duration = Duration::from_secs(10);

async fn relay_with(dir: &std::path::Path, tune: impl FnOnce(&mut Config)) -> Relay {
    let mut config = relay_config(&sqlite_url(dir));
    tune(&mut config);
    Relay::start(config).await.unwrap()
}

async fn enrolled(relay: &Relay, seed: u64) -> Arc<DeviceKeys> {
    let k = keys(seed);
    agentfw_relay::client::join(&endpoint(&relay.url()), &relay.invite("test").await.unwrap(), &k, "device")
        .await
        .unwrap();
    k
}

async fn raw(relay: &Relay) -> Ws {
    let url = format!("ws://{}{}", relay.addr(), protocol::CONNECT_PATH);
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

/// The next text frame as JSON, or `{"close": code}` when the relay closes.
async fn next(ws: &mut Ws) -> Value {
    loop {
        match tokio::time::timeout(WAIT, ws.next()).await.expect("the relay answers") {
            Some(Ok(Message::Text(t))) => return serde_json::from_str(t.as_str()).unwrap(),
            Some(Ok(Message::Close(frame))) => return json!({"close": frame.map(|f| u16::from(f.code))}),
            Some(Ok(_)) => {}
            None | Some(Err(_)) => return json!({"close": null}),
        }
    }
}

/// The next frame of type `kind`, skipping others.
async fn next_of(ws: &mut Ws, kind: &str) -> Value {
    loop {
        let v = next(ws).await;
        if v["type"] == kind || v.get("close").is_some() {
            return v;
        }
    }
}

async fn hello(ws: &mut Ws, keys: &DeviceKeys) {
    let challenge = next(ws).await;
    assert_eq!(challenge["type"], "challenge");
    let nonce = base64_decode(challenge["nonce"].as_str().unwrap());
    let signature = keys.sign_statement(AUTH_CONTEXT, &auth_message(&nonce, keys.device())).to_vec();
    let hello = ToRelay::Hello { version: VERSION, device: keys.device(), signature };
    ws.send(Message::Text(serde_json::to_string(&hello).unwrap().into())).await.unwrap();
}

async fn login(relay: &Relay, keys: &DeviceKeys) -> Ws {
    let mut ws = raw(relay).await;
    hello(&mut ws, keys).await;
    assert_eq!(next(&mut ws).await["type"], "welcome");
    ws
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap()
}

/// An envelope from `from` to `to`, routed from web to api, sealed at `at`.
fn sealed(from: &DeviceKeys, to: &PublicBundle, body: &[u8], at: Timestamp, seed: u64) -> Routed {
    sealed_between(agents(), from, to, body, at, seed)
}

fn sealed_between(
    (a, b): (Agent, Agent),
    from: &DeviceKeys,
    to: &PublicBundle,
    body: &[u8],
    at: Timestamp,
    seed: u64,
) -> Routed {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let id = MessageId::generate(at, &mut rng);
    Routed::seal(from, to, a, b, id, CONTENT_TYPE, body, &Limits { max_plaintext: 1 << 20 }, at, &mut rng).unwrap()
}

fn agents() -> (Agent, Agent) {
    (agent("web", "claude", "a"), agent("api", "codex", "b"))
}

fn frame(routed: &Routed) -> Message {
    Message::Binary(routed.to_submit_frame().into())
}

/// A second pair of devices whose traffic must not be disturbed.
async fn bystanders(
    relay: &Relay,
    seed: u64,
) -> impl FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> {
    let (x, y) = (agent("x", "claude", "c"), agent("y", "codex", "d"));
    let mut c = Daemon::join(relay, "c", seed, vec![x.clone()]).await;
    let mut d = Daemon::join(relay, "d", seed + 1, vec![y.clone()]).await;
    c.pump_until(WAIT, |c| c.directory.device_of(&y.id).is_some()).await;
    move || {
        Box::pin(async move {
            let m = c.send(&x, &y, "still fine over here?").await.unwrap();
            d.pump_until(WAIT, |d| d.inbox.contains_key(&m.id)).await;
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_frames_close_the_connection_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_with(dir.path(), |_| {}).await;
    let still_fine = bystanders(&relay, 100).await;
    let a = enrolled(&relay, 1).await;
    for (garbage, code) in [
        (Message::Text("hello?".into()), "relay.bad_frame"),
        (Message::Text(r#"{"type":"ack","seqs":"all"}"#.into()), "relay.bad_frame"),
        (Message::Text(r#"{"type":"hello","version":1,"device":"00","signature":""}"#.into()), "relay.bad_frame"),
        (Message::Binary(b"GET / HTTP/1.1\r\n\r\n".to_vec().into()), "relay.bad_frame"),
        (Message::Binary(b"AFWR\x02\x01\0\0\0\0\0\0\0\0".to_vec().into()), "relay.unsupported_version"),
    ] {
        let mut ws = login(&relay, &a).await;
        ws.send(garbage).await.unwrap();
        let error = next_of(&mut ws, "error").await;
        assert_eq!(error["code"], code, "{error}");
        let close = next_of(&mut ws, "never").await;
        assert_eq!(close["close"], 1002, "{close}");
    }
    still_fine().await;
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logins_are_refused_for_unknown_devices_forged_hellos_and_slow_handshakes() {
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_with(dir.path(), |c| c.handshake_timeout = Duration::from_millis(400)).await;
    let a = enrolled(&relay, 1).await;
    let stranger = keys(99);

    let mut ws = raw(&relay).await;
    hello(&mut ws, &stranger).await;
    let e = next(&mut ws).await;
    assert_eq!((e["type"].as_str(), e["code"].as_str()), (Some("error"), Some("relay.unknown_device")), "{e}");
    assert_eq!(next(&mut ws).await["close"], 1008);

    // A's device id, signed by someone else (or over another nonce).
    let mut ws = raw(&relay).await;
    let challenge = next(&mut ws).await;
    let nonce = base64_decode(challenge["nonce"].as_str().unwrap());
    let forged = stranger.sign_statement(AUTH_CONTEXT, &auth_message(&nonce, a.device())).to_vec();
    let hello = ToRelay::Hello { version: VERSION, device: a.device(), signature: forged };
    ws.send(Message::Text(serde_json::to_string(&hello).unwrap().into())).await.unwrap();
    assert_eq!(next(&mut ws).await["code"], "relay.bad_signature");

    // A replayed hello: signed over an old nonce.
    let mut ws = raw(&relay).await;
    next(&mut ws).await;
    let old = a.sign_statement(AUTH_CONTEXT, &auth_message(&nonce, a.device())).to_vec();
    let hello = ToRelay::Hello { version: VERSION, device: a.device(), signature: old };
    ws.send(Message::Text(serde_json::to_string(&hello).unwrap().into())).await.unwrap();
    assert_eq!(next(&mut ws).await["code"], "relay.bad_signature");

    // A future protocol version.
    let mut ws = raw(&relay).await;
    next(&mut ws).await;
    ws.send(Message::Text(
        json!({"type": "hello", "version": 2, "device": a.device(), "signature": ""}).to_string().into(),
    ))
    .await
    .unwrap();
    assert_eq!(next(&mut ws).await["code"], "relay.unsupported_version");

    // Silence: the handshake times out.
    let mut ws = raw(&relay).await;
    let started = clock::instant();
    assert_eq!(next(&mut ws).await["type"], "challenge");
    let e = next(&mut ws).await;
    assert_eq!(e["code"], "relay.handshake_timeout", "{e}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(next(&mut ws).await["close"], 1008);
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_and_mismatched_envelopes_are_refused_and_the_connection_stays() {
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_with(dir.path(), |_| {}).await;
    let (a, b, mallory) = (enrolled(&relay, 1).await, enrolled(&relay, 2).await, keys(3));
    let mut ws = login(&relay, &a).await;
    let t = clock::now();

    // The envelope's signature does not verify (a flipped ciphertext byte).
    let good = sealed(&a, b.public(), b"hello", t, 1);
    let mut forged = good.to_submit_frame();
    let n = forged.len();
    forged[n - 80] ^= 1;
    ws.send(Message::Binary(forged.into())).await.unwrap();
    let r = next_of(&mut ws, "refused").await;
    let id = good.envelope.header().id.to_string();
    assert_eq!((r["code"].as_str(), r["id"].as_str()), (Some("relay.bad_signature"), Some(id.as_str())));
    assert_eq!(r["reason"], "signature does not verify");

    // The routing was changed on the way: web's message claims to come from "wex".
    let mut changed = sealed(&a, b.public(), b"hi", t, 2).to_submit_frame();
    let at = changed.windows(4).position(|w| w == b"\"web").unwrap();
    changed[at + 3] = b'x';
    ws.send(Message::Binary(changed.into())).await.unwrap();
    let r = next_of(&mut ws, "refused").await;
    assert_eq!(r["code"], "relay.bad_routing");
    assert_eq!(r["reason"], "the envelope was not sealed with this routing");

    // A routing taken from one envelope and put in front of another.
    let (ops, api) = (agent("ops", "gemini", "a"), agent("api", "codex", "b"));
    let other = sealed_between((ops, api), &a, b.public(), b"other", t, 3);
    let mut spliced = sealed(&a, b.public(), b"x", t, 4).to_submit_frame();
    let envelope_at = spliced.len() - sealed(&a, b.public(), b"x", t, 4).envelope.size();
    spliced.truncate(envelope_at);
    spliced.extend_from_slice(other.envelope.as_bytes());
    ws.send(Message::Binary(spliced.into())).await.unwrap();
    assert_eq!(next_of(&mut ws, "refused").await["code"], "relay.bad_routing");

    // Another device's envelope, sent over this device's connection.
    ws.send(frame(&sealed(&b, a.public(), b"not mine", t, 5))).await.unwrap();
    assert_eq!(next_of(&mut ws, "refused").await["code"], "relay.sender_mismatch");

    // To a device that is not enrolled.
    ws.send(frame(&sealed(&a, mallory.public(), b"who?", t, 6))).await.unwrap();
    assert_eq!(next_of(&mut ws, "refused").await["code"], "relay.unknown_recipient");

    // Malformed envelope bytes inside a well-formed frame.
    let mut broken = good.to_submit_frame();
    broken.truncate(broken.len() - 10);
    ws.send(Message::Binary(broken.into())).await.unwrap();
    assert_eq!(next_of(&mut ws, "refused").await["code"], "relay.bad_envelope");

    // After all that, the connection still carries a good envelope.
    ws.send(frame(&good)).await.unwrap();
    let stored = next_of(&mut ws, "stored").await;
    assert_eq!((stored["id"].as_str(), stored["duplicate"].as_bool()), (Some(id.as_str()), Some(false)));
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replays_resends_and_stale_envelopes() {
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_with(dir.path(), |_| {}).await;
    let (a, b) = (enrolled(&relay, 1).await, enrolled(&relay, 2).await);
    let mut ws = login(&relay, &a).await;
    let t = clock::now();
    let envelope = sealed(&a, b.public(), b"once", t, 1);

    ws.send(frame(&envelope)).await.unwrap();
    assert_eq!(next_of(&mut ws, "stored").await["duplicate"], false);
    // The same bytes again (a resend, or a replay): stored once, answered as a duplicate.
    ws.send(frame(&envelope)).await.unwrap();
    assert_eq!(next_of(&mut ws, "stored").await["duplicate"], true);
    // The same message id for other bytes: refused.
    let reused = sealed(&a, b.public(), b"different", t, 1);
    assert_eq!(reused.envelope.header().id, envelope.envelope.header().id);
    ws.send(frame(&reused)).await.unwrap();
    let r = next_of(&mut ws, "refused").await;
    assert_eq!(r["code"], "relay.replayed", "{r}");
    // Too old, and dated in the future.
    ws.send(frame(&sealed(&a, b.public(), b"old", Timestamp::from_millis(t.as_millis() - 2 * 3600 * 1000), 2)))
        .await
        .unwrap();
    assert_eq!(next_of(&mut ws, "refused").await["code"], "relay.expired");
    ws.send(frame(&sealed(&a, b.public(), b"later", Timestamp::from_millis(t.as_millis() + 3600 * 1000), 3)))
        .await
        .unwrap();
    assert_eq!(next_of(&mut ws, "refused").await["code"], "relay.not_yet_valid");

    // The recipient gets it exactly once from the relay, and its own replay cache refuses
    // the same envelope if it were delivered again.
    let mut wb = login(&relay, &b).await;
    let mut delivered = 0;
    while let Ok(Some(Ok(m))) = tokio::time::timeout(Duration::from_millis(500), wb.next()).await {
        if let Message::Binary(bytes) = m {
            let f = protocol::DeliverFrame::parse(&bytes, &Limits::default()).unwrap();
            assert_eq!(f.routed.envelope.header().id, envelope.envelope.header().id);
            delivered += 1;
        }
    }
    assert_eq!(delivered, 1);
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_envelopes_and_floods_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_with(dir.path(), |c| {
        c.rate_per_second = 5;
        c.burst = 5;
    })
    .await;
    let (a, b) = (enrolled(&relay, 1).await, enrolled(&relay, 2).await);
    let t = clock::now();

    // A body over the limit, in a frame the relay still reads: refused, connection kept.
    let mut ws = login(&relay, &a).await;
    ws.send(frame(&sealed(&a, b.public(), &vec![b'x'; 64 * 1024 + 1], t, 1))).await.unwrap();
    let r = next_of(&mut ws, "refused").await;
    assert_eq!(r["code"], "relay.too_large", "{r}");
    assert!(r["reason"].as_str().unwrap().contains("over the size limit"), "{r}");

    // Floods: past the burst, refused with when to retry.
    let mut limited = 0;
    for i in 0..12 {
        ws.send(frame(&sealed(&a, b.public(), b"flood", t, 10 + i))).await.unwrap();
    }
    for _ in 0..12 {
        let v = next(&mut ws).await;
        if v["code"] == "relay.rate_limited" {
            assert!(v["retry_after_ms"].as_u64().unwrap() > 0);
            limited += 1;
        }
    }
    assert!(limited >= 6, "{limited} refused");

    // A frame over the relay's largest: the connection is closed (1009, message too big).
    ws.send(Message::Binary(vec![0u8; protocol::max_frame(&Limits::default()) + 1].into())).await.unwrap();
    let closed = next_of(&mut ws, "never").await;
    assert!(closed["close"] == 1009 || closed["close"].is_null(), "{closed}");
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_client_is_disconnected_and_nobody_else_notices() {
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_with(dir.path(), |c| {
        c.send_timeout = Duration::from_millis(500);
        c.window = 1024;
    })
    .await;
    let still_fine = bystanders(&relay, 100).await;
    let (a, slow) = (enrolled(&relay, 1).await, enrolled(&relay, 2).await);
    // The slow device logs in and then never reads.
    let slow_ws = login(&relay, &slow).await;
    let (client, mut incoming) = Client::connect(client_config(&endpoint(&relay.url())), a.clone());
    client.wait_connected().await.unwrap();
    let body = vec![b'z'; 60 * 1024];
    let mut pending = futures_util::stream::FuturesUnordered::new();
    for i in 0..400 {
        let e = sealed(&a, slow.public(), &body, clock::now(), 1000 + i);
        let client = client.clone();
        pending.push(async move { client.submit(&e).await });
    }
    while let Some(r) = pending.next().await {
        r.unwrap();
    }
    let deadline = clock::instant() + Duration::from_secs(15);
    while relay.connected() > 3 {
        assert!(clock::instant() < deadline, "the slow client is still connected");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(slow_ws);
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(10), incoming.recv()).await {}
    still_fine().await;
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enrollment_refuses_bad_invites_and_signatures() {
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_with(dir.path(), |_| {}).await;
    let url = relay.url();
    let invite = relay.invite("one").await.unwrap();
    let a = keys(1);
    agentfw_relay::client::join(&endpoint(&url), &invite, &a, "a").await.unwrap();

    let b = keys(2);
    let e = agentfw_relay::client::join(&endpoint(&url), &invite, &b, "b").await.unwrap_err();
    assert_eq!(e.code(), Some("relay.bad_invite"), "{e}");
    let e = agentfw_relay::client::join(&endpoint(&url), "afwi_made-up", &b, "b").await.unwrap_err();
    assert_eq!(e.code(), Some("relay.bad_invite"));
    let fresh = relay.invite("two").await.unwrap();
    let e = agentfw_relay::client::join(&endpoint(&url), &fresh, &a, "a again").await.unwrap_err();
    assert_eq!(e.code(), Some("relay.already_enrolled"));

    // A bundle sent by someone without its key.
    let line = b.public().to_line();
    let signature = a.sign_statement(ENROLL_CONTEXT, &protocol::enroll_message(&fresh, &line)).to_vec();
    let body = serde_json::to_vec(&protocol::EnrollRequest {
        invite: fresh.clone(),
        bundle: line,
        name: String::new(),
        signature,
    })
    .unwrap();
    let r =
        http::request(&endpoint(&url), "POST", protocol::ENROLL_PATH, &[("content-type", "application/json")], body)
            .await
            .unwrap();
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(r.text().contains("relay.bad_signature"));
    // Not JSON, and not a bundle.
    let r = http::request(
        &endpoint(&url),
        "POST",
        protocol::ENROLL_PATH,
        &[("content-type", "application/json")],
        b"{".to_vec(),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400);
    let body = json!({"invite": fresh, "bundle": "agentfw-pub-v1 nope", "signature": ""}).to_string().into_bytes();
    let r =
        http::request(&endpoint(&url), "POST", protocol::ENROLL_PATH, &[("content-type", "application/json")], body)
            .await
            .unwrap();
    assert_eq!((r.status, r.text().contains("relay.bad_bundle")), (400, true), "{}", r.text());
    // The unused invite still works for the right device.
    agentfw_relay::client::join(&endpoint(&url), &fresh, &b, "b").await.unwrap();
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_endpoints_refuse_without_the_credential() {
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_with(dir.path(), |_| {}).await;
    let url = relay.url();
    let json_header = ("content-type", "application/json");
    for (method, path, body) in [
        ("GET", "/admin/api/overview", ""),
        ("GET", "/admin/events", ""),
        ("GET", "/admin/api/audit.jsonl", ""),
        ("POST", "/admin/api/disconnect", r#"{"a":"x","b":"y"}"#),
        ("POST", "/admin/api/quarantine", r#"{"agent":"x"}"#),
        ("POST", "/admin/api/invites", "{}"),
        ("POST", "/admin/api/admission/mode", r#"{"mode":"enforce"}"#),
    ] {
        for auth in [None, Some("Bearer wrong"), Some("Basic YWRtaW46YWRtaW4=")] {
            let mut headers = vec![json_header];
            if let Some(a) = auth {
                headers.push(("authorization", a));
            }
            let r = http::request(&endpoint(&url), method, path, &headers, body.as_bytes().to_vec()).await.unwrap();
            assert_eq!(r.status, 401, "{method} {path} with {auth:?}: {}", r.text());
            assert!(r.text().contains("admin.unauthorized"));
        }
    }
    // Nothing changed.
    let (_, overview) = admin(&url, "GET", "/admin/api/overview", Value::Null).await;
    assert_eq!(overview["disconnected"], json!([]));
    assert_eq!(overview["admission"]["mode"], "report");

    // The dashboard's login: a wrong token is refused; the right one gets a strict cookie.
    let r = http::request(&endpoint(&url), "POST", "/admin/login", &[json_header], br#"{"token":"guess"}"#.to_vec())
        .await
        .unwrap();
    assert_eq!(r.status, 401);
    let body = serde_json::to_vec(&json!({"token": ADMIN_TOKEN})).unwrap();
    let r = http::request(&endpoint(&url), "POST", "/admin/login", &[json_header], body).await.unwrap();
    assert_eq!(r.status, 200);
    let cookie = r.header("set-cookie").unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let session = cookie.split(';').next().unwrap().to_owned();
    let r = http::request(&endpoint(&url), "GET", "/admin/api/overview", &[("cookie", &session)], Vec::new())
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    // A state change needs a JSON body (a cross-site form cannot send one).
    let r = http::request(
        &endpoint(&url),
        "POST",
        "/admin/api/quarantine",
        &[("cookie", &session), ("content-type", "application/x-www-form-urlencoded")],
        b"agent=x".to_vec(),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400);
    let r =
        http::request(&endpoint(&url), "POST", "/admin/logout", &[("cookie", &session), json_header], b"{}".to_vec())
            .await
            .unwrap();
    assert_eq!(r.status, 200);
    let r = http::request(&endpoint(&url), "GET", "/admin/api/overview", &[("cookie", &session)], Vec::new())
        .await
        .unwrap();
    assert_eq!(r.status, 401);
    // The dashboard page itself is public (it holds no data) and locked down.
    let r = http::request(&endpoint(&url), "GET", "/admin", &[], Vec::new()).await.unwrap();
    assert_eq!(r.status, 200);
    assert!(r.header("content-security-policy").unwrap().contains("default-src 'none'"));
    assert!(!r.text().contains("http://") && !r.text().contains("https://"), "no external resources");
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_and_rotated_keys_stop_working_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_with(dir.path(), |_| {}).await;
    let (web, api) = (agent("web", "claude", "laptop"), agent("api", "codex", "desktop"));
    let mut a = Daemon::join(&relay, "laptop", 1, vec![web.clone()]).await;
    let b = Daemon::join(&relay, "desktop", 2, vec![api.clone()]).await;

    // Rotation (TX5): the relay retires the old key and ends the connection.
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
    let (new_keys, rotation) = a.keys.rotate(clock::now(), &mut rng);
    a.client.rotate(&rotation);
    let stopped = loop {
        match tokio::time::timeout(WAIT, a_incoming(&mut a)).await.unwrap() {
            Incoming::Stopped { code, .. } => break code,
            _ => continue,
        }
    };
    assert_eq!(stopped, "relay.rotated");
    // The old key cannot log in; the new one can, and keeps the device's agents.
    let mut ws = raw(&relay).await;
    hello(&mut ws, &a.keys).await;
    assert_eq!(next(&mut ws).await["code"], "relay.revoked");
    let new_keys = Arc::new(new_keys);
    let mut a2 = Daemon::connect(&endpoint(&relay.url()), "laptop", 3, new_keys.clone(), vec![web.clone()]).await;
    a2.pump_until(WAIT, |d| d.directory.device_of(&web.id) == Some(new_keys.device())).await;
    // Others learn the rotation from the relay, signed by the old key.
    let bundles = b.client.lookup(vec![a.keys.device()]).await.unwrap();
    assert_eq!(bundles[0].status, "superseded");
    assert!(bundles[0].rotation.is_some());

    // Revocation by the admin: the connection ends and the key is refused from then on.
    let (status, _) =
        admin(&relay.url(), "POST", "/admin/api/devices/revoke", json!({"device": new_keys.device()})).await;
    assert_eq!(status, 200);
    let stopped = loop {
        match tokio::time::timeout(WAIT, a_incoming(&mut a2)).await.unwrap() {
            Incoming::Stopped { code, .. } => break code,
            _ => continue,
        }
    };
    assert_eq!(stopped, "relay.revoked");
    let mut ws = raw(&relay).await;
    hello(&mut ws, &new_keys).await;
    assert_eq!(next(&mut ws).await["code"], "relay.revoked");
    relay.shutdown().await;
}

async fn a_incoming(d: &mut Daemon) -> Incoming {
    d.next_incoming().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_are_cut_off_and_connections_are_capped() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_with(dir.path(), |c| {
        c.header_timeout = Duration::from_millis(300);
        c.max_connections = 4;
    })
    .await;
    // A client that sends half a request line and then nothing: dropped after the timeout.
    let mut slow = tokio::net::TcpStream::connect(relay.addr()).await.unwrap();
    slow.write_all(b"GET /healthz HT").await.unwrap();
    let started = clock::instant();
    let mut buf = [0u8; 256];
    let n = tokio::time::timeout(Duration::from_secs(5), slow.read(&mut buf))
        .await
        .expect("the relay hangs up")
        .unwrap_or(0);
    let answer = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(n == 0 || answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(3));

    // Four idle connections fill the relay; a fifth is turned away; one leaving makes room.
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(tokio::net::TcpStream::connect(relay.addr()).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut turned_away = tokio::net::TcpStream::connect(relay.addr()).await.unwrap();
    turned_away.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").await.ok();
    let n = tokio::time::timeout(Duration::from_secs(5), turned_away.read(&mut buf)).await.unwrap().unwrap_or(0);
    assert_eq!(n, 0, "turned away: {}", String::from_utf8_lossy(&buf[..n]));
    drop(idle);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = http::request(&endpoint(&relay.url()), "GET", "/healthz", &[], Vec::new()).await.unwrap();
    assert_eq!(r.status, 200);
    relay.shutdown().await;
}
