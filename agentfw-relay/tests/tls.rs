//! A relay behind TLS (`serve --tls-cert/--tls-key`), with a throwaway CA made here: devices
//! trusting that CA join, connect and exchange a message; an untrusted, expired or
//! wrong-name certificate, a self-signed one not given as the CA file (or an impostor's in
//! its place), plain HTTP to the TLS relay and TLS to a plain relay each end with an error
//! that says what is wrong.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentfw_relay::client::{Client, ClientError, Endpoint, Incoming, http, join};
use agentfw_relay::server::tls;
use agentfw_relay::{Config, Relay, RelayError};
use common::*;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};

const WAIT: Duration = Duration::from_secs(10);

/// A certificate authority made for one test.
struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

impl Ca {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Self { issuer: Issuer::new(params, key), pem }
    }

    /// A server certificate for `names` (host names or IP addresses) and its key, as PEM
    /// files in `dir`; `expired` makes one whose validity ended in 2020.
    fn issue(&self, dir: &Path, names: &[&str], expired: bool) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let cert = server_params(names, expired).signed_by(&key, &self.issuer).unwrap();
        write_pair(dir, &cert, &key)
    }

    fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, &self.pem).unwrap();
        path
    }
}

/// A self-signed server certificate for `names` (no authority behind it) and its key, as
/// PEM files in `dir`, its subject the same every time; `expired` as for [`Ca::issue`].
fn self_signed(dir: &Path, names: &[&str], expired: bool) -> (PathBuf, PathBuf) {
    let mut params = server_params(names, expired);
    params.distinguished_name.push(rcgen::DnType::CommonName, "agentfw relay");
    let key = KeyPair::generate().unwrap();
    write_pair(dir, &params.self_signed(&key).unwrap(), &key)
}

fn server_params(names: &[&str], expired: bool) -> CertificateParams {
    let mut params = CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>()).unwrap();
    if expired {
        params.not_before = rcgen::date_time_ymd(2019, 1, 1);
        params.not_after = rcgen::date_time_ymd(2020, 1, 1);
    }
    params
}

/// `relay.crt` and `relay.key` in `dir`.
fn write_pair(dir: &Path, cert: &rcgen::Certificate, key: &KeyPair) -> (PathBuf, PathBuf) {
    let (cert_file, key_file) = (dir.join("relay.crt"), dir.join("relay.key"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    (cert_file, key_file)
}

/// Joining with the system's roots (the default) fails as for an untrusted authority: a
/// throwaway CA or a self-signed certificate is not among them (or the machine has none).
async fn refused_by_the_system_roots(relay: &Relay, invite: &str) {
    match Endpoint::new(&relay.url(), None) {
        Ok(system) => {
            let e = join(&system, invite, &keys(1), "laptop").await.unwrap_err();
            let message = tls_message(&e);
            assert!(message.contains("is not signed by an authority this device trusts"), "{message}");
            assert!(message.contains("--ca FILE"), "{message}");
        }
        Err(ClientError::Trust(m)) => assert!(m.contains("no trusted root certificates"), "{m}"),
        Err(other) => panic!("{other:?}"),
    }
}

/// A relay serving TLS with `cert` and `key`.
async fn tls_relay(dir: &Path, cert: &Path, key: &Path) -> Relay {
    let config = Config { tls: Some(tls::load(cert, key).unwrap()), ..relay_config(&sqlite_url(dir)) };
    Relay::start(config).await.unwrap()
}

/// The relay's TLS URL with the CA file to trust.
fn trusting(relay: &Relay, ca: &Path) -> Endpoint {
    Endpoint::new(&relay.url(), Some(ca)).unwrap()
}

/// The first reason a client gives for not getting connected.
async fn first_disconnect(relay: &Endpoint) -> String {
    let (client, mut incoming) = Client::connect(client_config(relay), keys(99));
    let news = tokio::time::timeout(WAIT, incoming.recv()).await.expect("news from the client");
    let Some(Incoming::Disconnected { reason }) = news else { panic!("{news:?}") };
    client.stop();
    reason
}

fn tls_message(e: &ClientError) -> &str {
    match e {
        ClientError::Tls(m) => m,
        other => panic!("expected a TLS error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_trusting_the_relays_ca_join_and_a_message_crosses() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("agentfw test CA");
    let (cert, key) = ca.issue(dir.path(), &["localhost", "127.0.0.1"], false);
    let relay = tls_relay(dir.path(), &cert, &key).await;
    assert!(relay.url().starts_with("https://127.0.0.1:"), "{}", relay.url());
    let at = trusting(&relay, &ca.write(dir.path(), "ca.pem"));

    let web = agent("web", "claude", "laptop");
    let api = agent("api", "codex", "desktop");
    let mut a = Daemon::join_at(&at, &relay.invite("laptop").await.unwrap(), "laptop", 1, vec![web.clone()]).await;
    let mut b = Daemon::join_at(&at, &relay.invite("desktop").await.unwrap(), "desktop", 2, vec![api.clone()]).await;
    a.pump_until(WAIT, |d| d.directory.device_of(&api.id).is_some()).await;
    let sent = a.send(&web, &api, "Which port does the staging database listen on?").await.unwrap();
    b.pump_until(WAIT, |d| d.inbox.contains_key(&sent.id)).await;
    assert_eq!(b.inbox[&sent.id].body, "Which port does the staging database listen on?");

    // The same name works (`localhost` is on the certificate too), and the admin API
    // answers over TLS, its session cookie marked `Secure`.
    let by_name = Endpoint::new(&relay.url().replace("127.0.0.1", "localhost"), Some(&dir.path().join("ca.pem")));
    let r = http::request(&by_name.unwrap(), "GET", "/healthz", &[], Vec::new()).await.unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "ok"));
    let body = serde_json::to_vec(&serde_json::json!({ "token": ADMIN_TOKEN })).unwrap();
    let r = http::request(&at, "POST", "/admin/login", &[("content-type", "application/json")], body).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let cookie = r.header("set-cookie").unwrap();
    assert!(cookie.contains("; Secure"), "{cookie}");
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_another_authority_is_refused_and_says_to_give_the_ca() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("the relay's CA");
    let (cert, key) = ca.issue(dir.path(), &["127.0.0.1"], false);
    let relay = tls_relay(dir.path(), &cert, &key).await;
    let invite = relay.invite("laptop").await.unwrap();

    // Another CA: refused at join and at every connection attempt, nothing enrolled.
    let other = Ca::new("another CA").write(dir.path(), "other.pem");
    let at = trusting(&relay, &other);
    let e = join(&at, &invite, &keys(1), "laptop").await.unwrap_err();
    let message = tls_message(&e);
    assert!(message.contains("is not signed by an authority this device trusts"), "{message}");
    assert!(message.contains("--ca FILE"), "{message}");
    let reason = first_disconnect(&at).await;
    assert!(reason.contains("is not signed by an authority this device trusts"), "{reason}");

    // The system's roots (the default) do not know a throwaway CA either.
    refused_by_the_system_roots(&relay, &invite).await;

    // The invite was not spent: with the right CA it enrolls.
    join(&trusting(&relay, &ca.write(dir.path(), "ca.pem")), &invite, &keys(1), "laptop").await.unwrap();
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_certificate_and_one_for_another_name_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("agentfw test CA");
    let ca_file = ca.write(dir.path(), "ca.pem");

    let expired_dir = tempfile::tempdir().unwrap();
    let (cert, key) = ca.issue(expired_dir.path(), &["127.0.0.1"], true);
    let relay = tls_relay(expired_dir.path(), &cert, &key).await;
    let e = join(&trusting(&relay, &ca_file), &relay.invite("x").await.unwrap(), &keys(1), "x").await.unwrap_err();
    assert!(tls_message(&e).contains("`127.0.0.1` has expired"), "{e}");
    let reason = first_disconnect(&trusting(&relay, &ca_file)).await;
    assert!(reason.contains("has expired"), "{reason}");
    relay.shutdown().await;

    let (cert, key) = ca.issue(dir.path(), &["relay.test"], false);
    let relay = tls_relay(dir.path(), &cert, &key).await;
    let e = join(&trusting(&relay, &ca_file), &relay.invite("x").await.unwrap(), &keys(1), "x").await.unwrap_err();
    let message = tls_message(&e);
    assert!(message.contains("is not for `127.0.0.1`"), "{message}");
    assert!(message.contains("relay.test"), "it names what the certificate is for: {message}");
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_to_a_tls_relay_and_tls_to_a_plain_relay_say_which_to_use() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("agentfw test CA");
    let ca_file = ca.write(dir.path(), "ca.pem");
    let (cert, key) = ca.issue(dir.path(), &["127.0.0.1"], false);
    let relay = tls_relay(dir.path(), &cert, &key).await;

    // http:// to the TLS relay: the relay answers in plain HTTP that it speaks TLS only,
    // to enrollment and to the WebSocket alike.
    let plain = endpoint(&relay.url().replace("https://", "http://"));
    let e = join(&plain, &relay.invite("x").await.unwrap(), &keys(1), "x").await.unwrap_err();
    assert_eq!(e.code(), Some("relay.tls_required"), "{e}");
    assert!(e.to_string().contains("use an https:// URL"), "{e}");
    let reason = first_disconnect(&plain).await;
    assert!(reason.contains("relay.tls_required") && reason.contains("use an https:// URL"), "{reason}");
    // A TLS client still gets through after those.
    join(&trusting(&relay, &ca_file), &relay.invite("x").await.unwrap(), &keys(1), "x").await.unwrap();
    relay.shutdown().await;

    // https:// to a plain relay.
    let plain_dir = tempfile::tempdir().unwrap();
    let relay = start_relay(&sqlite_url(plain_dir.path())).await;
    let at = Endpoint::new(&relay.url().replace("http://", "https://"), Some(&ca_file)).unwrap();
    let e = join(&at, &relay.invite("x").await.unwrap(), &keys(1), "x").await.unwrap_err();
    assert!(tls_message(&e).contains("did not answer in TLS: if the relay serves plain HTTP, use an http:// URL"));
    let reason = first_disconnect(&at).await;
    assert!(reason.contains("did not answer in TLS"), "{reason}");
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_certificate_is_trusted_only_when_given_as_the_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path(), &["127.0.0.1"], false);
    let relay = tls_relay(dir.path(), &cert, &key).await;
    let invite = relay.invite("laptop").await.unwrap();

    // Neither the system's roots nor an unrelated CA vouch for it: refused with the hint.
    refused_by_the_system_roots(&relay, &invite).await;
    let other = Ca::new("another CA").write(dir.path(), "other.pem");
    let e = join(&trusting(&relay, &other), &invite, &keys(1), "laptop").await.unwrap_err();
    assert!(tls_message(&e).contains("is not signed by an authority this device trusts"), "{e}");

    // An impostor's self-signed certificate with the same names and subject, checked
    // against the genuine one: refused, and said to be a possible impersonation.
    let impostor_dir = tempfile::tempdir().unwrap();
    let (fake_cert, fake_key) = self_signed(impostor_dir.path(), &["127.0.0.1"], false);
    let impostor = tls_relay(impostor_dir.path(), &fake_cert, &fake_key).await;
    let at_impostor = trusting(&impostor, &cert);
    let e = join(&at_impostor, &impostor.invite("laptop").await.unwrap(), &keys(1), "laptop").await.unwrap_err();
    let message = tls_message(&e);
    assert!(message.contains("is not signed by its key: something may be impersonating the relay"), "{message}");
    assert!(message.contains("--ca FILE"), "{message}");
    let reason = first_disconnect(&at_impostor).await;
    assert!(reason.contains("something may be impersonating the relay"), "{reason}");
    impostor.shutdown().await;

    // The certificate itself as the CA file: trusted, and the invite (unspent) enrolls.
    join(&trusting(&relay, &cert), &invite, &keys(1), "laptop").await.unwrap();
    relay.shutdown().await;

    // Expired, even when given as the CA file: refused as expired.
    let expired_dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(expired_dir.path(), &["127.0.0.1"], true);
    let relay = tls_relay(expired_dir.path(), &cert, &key).await;
    let e = join(&trusting(&relay, &cert), &relay.invite("x").await.unwrap(), &keys(1), "x").await.unwrap_err();
    let message = tls_message(&e);
    assert!(message.contains("the certificate of `127.0.0.1` has expired"), "{message}");
    assert!(message.contains("needs a renewed certificate"), "{message}");
    relay.shutdown().await;
}

#[test]
fn unusable_certificate_and_key_files_are_named_with_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("agentfw test CA");
    let (cert, key) = ca.issue(dir.path(), &["127.0.0.1"], false);
    let missing = dir.path().join("missing.pem");
    let message = |r: Result<_, RelayError>| match r {
        Err(RelayError::Tls(m)) => m,
        other => panic!("{other:?}"),
    };

    let m = message(tls::load(&missing, &key));
    assert!(m.starts_with("cannot read the TLS certificate `") && m.contains("missing.pem"), "{m}");
    let m = message(tls::load(&cert, &missing));
    assert!(m.starts_with("cannot read the TLS key `"), "{m}");
    // The certificate and key swapped, a key that is not the certificate's.
    let m = message(tls::load(&key, &cert));
    assert!(m.contains("relay.key` cannot be used: it holds no `-----BEGIN CERTIFICATE-----` block"), "{m}");
    let other = tempfile::tempdir().unwrap();
    let (_, other_key) = ca.issue(other.path(), &["127.0.0.1"], false);
    let m = message(tls::load(&cert, &other_key));
    assert!(m.contains("does the key belong to it?"), "{m}");
    std::fs::write(dir.path().join("junk.key"), "not a key").unwrap();
    let m = message(tls::load(&cert, &dir.path().join("junk.key")));
    assert!(m.contains("junk.key` cannot be used") && m.contains("expected a PEM private key"), "{m}");
}
