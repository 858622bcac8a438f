//! A relay in the test process and machines joined to it: two worlds (each its own home,
//! daemon and fake agent sessions, as two machines would have) on one relay on loopback.

use std::time::Duration;

use std::path::{Path, PathBuf};

use agentfw_relay::client::{Endpoint, http};
use agentfw_relay::server::tls;
use agentfw_relay::{Config, Relay};
use serde_json::Value;

use super::{World, stderr, stdout};

const ADMIN_TOKEN: &str = "afwa_test-admin-token-0123456789";

/// A relay in this process, on a fixed loopback port so that it can be restarted there.
pub struct TestRelay {
    runtime: tokio::runtime::Runtime,
    relay: Option<Relay>,
    config: Config,
    /// With TLS: the CA (PEM file) that signed the relay's certificate.
    ca: Option<PathBuf>,
    _dir: tempfile::TempDir,
}

impl TestRelay {
    pub fn start() -> Self {
        Self::start_with(false)
    }

    /// A relay serving TLS with a certificate for `127.0.0.1` from a CA made here
    /// ([`TestRelay::ca_file`]).
    pub fn start_tls() -> Self {
        Self::start_with(true)
    }

    fn start_with(tls: bool) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let ca = tls.then(|| throwaway_ca(dir.path()));
        let config = Config {
            listen: format!("127.0.0.1:{port}").parse().unwrap(),
            database_url: format!("sqlite://{}", dir.path().join("relay.db").display()),
            admin_token: Some(ADMIN_TOKEN.to_owned()),
            tls: tls.then(|| tls::load(&dir.path().join("relay.crt"), &dir.path().join("relay.key")).unwrap()),
            ..Config::default()
        };
        let relay = runtime.block_on(Relay::start(config.clone())).expect("the relay starts");
        Self { runtime, relay: Some(relay), config, ca, _dir: dir }
    }

    pub fn url(&self) -> String {
        let scheme = if self.config.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.config.listen)
    }

    pub fn ca_file(&self) -> Option<&Path> {
        self.ca.as_deref()
    }

    pub fn invite(&self) -> String {
        self.runtime.block_on(self.relay.as_ref().unwrap().invite("test")).unwrap()
    }

    /// Stops the relay: its connections drop, and nothing answers on its port.
    pub fn stop(&mut self) {
        let relay = self.relay.take().unwrap();
        self.runtime.block_on(relay.shutdown());
    }

    /// Starts the stopped relay again on the same port and database.
    pub fn start_again(&mut self) {
        let relay = self.runtime.block_on(Relay::start(self.config.clone())).expect("the relay starts again");
        self.relay = Some(relay);
    }

    /// An admin API call, as the dashboard makes it.
    pub fn admin(&self, method: &str, path: &str, body: Value) -> (u16, Value) {
        let auth = format!("Bearer {ADMIN_TOKEN}");
        let bytes = serde_json::to_vec(&body).unwrap();
        let url = self.url();
        let r = self
            .runtime
            .block_on(http::request(
                &Endpoint::new(&url, self.ca_file()).unwrap(),
                method,
                path,
                &[("authorization", &auth), ("content-type", "application/json")],
                bytes,
            ))
            .unwrap();
        (r.status, serde_json::from_slice(&r.body).unwrap_or(Value::Null))
    }
}

/// Writes a CA (`ca.pem`) and a certificate for `127.0.0.1` it signed (`relay.crt`,
/// `relay.key`) into `dir`; returns the CA file.
fn throwaway_ca(dir: &Path) -> PathBuf {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    std::fs::write(dir.join("ca.pem"), params.self_signed(&ca_key).unwrap().pem()).unwrap();
    let issuer = Issuer::new(params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap().signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("relay.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("relay.key"), key.serialize_pem()).unwrap();
    dir.join("ca.pem")
}

/// A machine: a world joined to the relay as `name` (trusting its CA, if it has TLS).
pub fn machine(relay: &TestRelay, name: &str, config: &str) -> World {
    let w = World::with_config(config);
    let (url, invite) = (relay.url(), relay.invite());
    let mut args = vec!["join", url.as_str(), &invite, "--name", name];
    let ca = relay.ca_file().map(|ca| ca.to_str().unwrap().to_owned());
    if let Some(ca) = &ca {
        args.extend(["--ca", ca.as_str()]);
    }
    let out = w.agentfw(&args);
    assert_eq!(out.status.code(), Some(0), "join: {}", stderr(&out));
    assert!(stdout(&out).starts_with(&format!("joined the relay at {} as device ", relay.url())), "{}", stdout(&out));
    let config = std::fs::read_to_string(w.home.join("config.toml")).unwrap();
    assert!(config.contains("[relay]") && config.contains(&format!("name = \"{name}\"")), "{config}");
    w
}

/// Polls `f` until it gives a value, for at most about 30 seconds.
pub fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    for _ in 0..600 {
        if let Some(v) = f() {
            return v;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}")
}

pub fn json_of(w: &World, args: &[&str]) -> Value {
    let out = w.agentfw(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// The agent id of `label` in this machine's team, waiting until it is listed.
pub fn agent_id(w: &World, label: &str) -> String {
    wait_for(&format!("{label} in the team"), || {
        let team = json_of(w, &["team", "--json"]);
        team["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["label"] == label)
            .map(|a| a["id"].as_str().unwrap().to_owned())
    })
}

/// The relay part of `agentfw status --json`.
pub fn relay_status(w: &World) -> Value {
    json_of(w, &["status", "--json"])["relay"].clone()
}
