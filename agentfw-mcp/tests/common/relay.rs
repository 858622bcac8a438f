//! A relay in the test process and machines joined to it: two worlds (each its own home,
//! daemon and fake agent sessions, as two machines would have) on one relay on loopback.

use std::time::Duration;

use agentfw_relay::client::http;
use agentfw_relay::{Config, Relay};
use serde_json::Value;

use super::{World, stderr, stdout};

const ADMIN_TOKEN: &str = "afwa_test-admin-token-0123456789";

/// A relay in this process, on a fixed loopback port so that it can be restarted there.
pub struct TestRelay {
    runtime: tokio::runtime::Runtime,
    relay: Option<Relay>,
    config: Config,
    _dir: tempfile::TempDir,
}

impl TestRelay {
    pub fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = Config {
            listen: format!("127.0.0.1:{port}").parse().unwrap(),
            database_url: format!("sqlite://{}", dir.path().join("relay.db").display()),
            admin_token: Some(ADMIN_TOKEN.to_owned()),
            ..Config::default()
        };
        let relay = runtime.block_on(Relay::start(config.clone())).expect("the relay starts");
        Self { runtime, relay: Some(relay), config, _dir: dir }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.config.listen)
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
                &url,
                method,
                path,
                &[("authorization", &auth), ("content-type", "application/json")],
                bytes,
            ))
            .unwrap();
        (r.status, serde_json::from_slice(&r.body).unwrap_or(Value::Null))
    }
}

/// A machine: a world joined to the relay as `name`.
pub fn machine(relay: &TestRelay, name: &str, config: &str) -> World {
    let w = World::with_config(config);
    let out = w.agentfw(&["join", &relay.url(), &relay.invite(), "--name", name]);
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
