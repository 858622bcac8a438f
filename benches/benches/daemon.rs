//! The daemon end to end, as an agent sees it: `send_message` through `agentfw mcp` to a
//! durable inbox (SQLite, WAL, `synchronous = FULL`), and `check_inbox`. Each fake agent is a
//! copy of `/bin/sh` named `claude` or `codex` that runs this benchmark binary as
//! `agentfw mcp` (the binary answers to `mcp` and `daemon` like `agentfw` does), so every
//! request crosses stdio, the MCP server, the Unix socket, the firewall and the database.
//!
//! After the timings it prints the daemon's resident memory, idle, with 2 and with 50
//! sessions connected.
//!
//! Then across machines: two homes with their own daemons (two "machines") joined to a relay
//! in this process on loopback, and the time from `send_message` on one machine until
//! `check_inbox` on the other returns the text (`relay/send_to_inbox`): the sender's commit,
//! sealing, the relay's durable store and forward, opening, the recipient's commit, and the
//! read. `daemon/send_to_inbox` is the same on one machine, so the difference is what the
//! relay leg adds. Each message is timed alone: the bench waits a few milliseconds between
//! messages (untimed) for the commits that follow a delivery (the outbox row cleared, the
//! relay's acknowledgement) to finish, so the figure is latency, not a queue behind them.
//! `relay/send_to_inbox_back_to_back` sends the next message at once instead.
//!
//! `cargo bench -p agentfw-benches --bench daemon` (add `AGENTFW_BENCH_SYNC=normal` to see the
//! cost without the fsync of each commit)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::Duration;

use agentfw_core::seal::DeviceKeys;
use criterion::{BatchSize, Criterion};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{Value, json};

const CONFIG: &str = "[wake]\nenabled = false\n[firewall.limits]\nrate = 100000000\nfan_out = 1000\n\
near_duplicate = \"off\"\nself_repeat = \"off\"\nack_only = \"off\"\nack_ping_pong = \"off\"\n";

struct World {
    dir: PathBuf,
    exe: PathBuf,
}

impl World {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("agentfw-bench-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["home", "user", "bin"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        // `AGENTFW_BENCH_SYNC=normal` measures without the per-commit fsync.
        #[allow(clippy::disallowed_methods)]
        let sync = std::env::var("AGENTFW_BENCH_SYNC").unwrap_or_else(|_| "full".into());
        std::fs::write(dir.join("home/config.toml"), format!("{CONFIG}[storage]\nsynchronous = \"{sync}\"\n")).unwrap();
        for name in ["claude", "codex"] {
            std::fs::copy("/bin/sh", dir.join("bin").join(name)).unwrap();
        }
        Self { dir, exe: std::env::current_exe().unwrap() }
    }

    fn session(&self, kind: &str, project: &str) -> Session {
        let cwd = self.dir.join("projects").join(project);
        std::fs::create_dir_all(&cwd).unwrap();
        let script = format!("'{}' mcp; exit $?", self.exe.display());
        let mut child = Command::new(self.dir.join("bin").join(kind))
            .args(["-c", &script])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.dir.join("user"))
            .env("AGENTFW_HOME", self.dir.join("home"))
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Session { child, stdin, stdout, next: 1 };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        s.stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").unwrap();
        assert!(!s.tool("list_team", json!({})).0);
        s
    }

    /// Enrolls this home with the relay, as `agentfw join` does, before its daemon starts.
    fn join(&self, relay: &agentfw_relay::Relay, runtime: &tokio::runtime::Runtime, name: &str) {
        let home = agentfw_mcp::home::Home::resolve(Some(&self.dir.join("home"))).unwrap();
        let keys = DeviceKeys::generate(
            agentfw_mcp::clock::now(),
            &mut ChaCha20Rng::from_seed(agentfw_mcp::clock::random_seed()),
        );
        agentfw_mcp::keystore::KeyStore::open(&home).unwrap().save(&keys).unwrap();
        let invite = runtime.block_on(relay.invite("bench")).unwrap();
        let url = relay.url();
        let at = agentfw_relay::client::Endpoint::new(&url, None).unwrap();
        runtime.block_on(agentfw_relay::client::join(&at, &invite, &keys, name)).unwrap();
        let mut config = std::fs::OpenOptions::new().append(true).open(self.dir.join("home/config.toml")).unwrap();
        writeln!(config, "[relay]\nurl = \"{url}\"\ndevice = \"{}\"\nname = \"{name}\"", keys.device()).unwrap();
    }

    fn daemon_pid(&self) -> u32 {
        std::fs::read_to_string(self.dir.join("home/daemon.pid")).unwrap().trim().parse().unwrap()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("home/daemon.pid")) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
        std::thread::sleep(Duration::from_millis(200));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Session {
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        let mut buf = String::new();
        loop {
            buf.clear();
            assert!(self.stdout.read_line(&mut buf).unwrap() > 0, "agentfw mcp exited");
            let v: Value = serde_json::from_str(&buf).unwrap();
            if v["id"].as_u64() == Some(id) {
                return v;
            }
        }
    }

    fn tool(&mut self, name: &str, args: Value) -> (bool, String) {
        let r = self.request("tools/call", json!({"name": name, "arguments": args}));
        let text = r["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        (r["result"]["isError"].as_bool().unwrap_or(true), text)
    }

    fn send(&mut self, n: u64) {
        let text = format!("Benchmark message {n}: the /health endpoint returns 200 with status ok.");
        let (error, text) = self.tool("send_message", json!({"to": "api (codex)", "text": text}));
        assert!(!error, "{text}");
    }

    /// Reads the inbox until message `n` is in it.
    fn read_until(&mut self, n: u64) {
        let marker = format!("Benchmark message {n}:");
        while !self.tool("check_inbox", json!({})).1.contains(&marker) {}
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn benches(c: &mut Criterion) {
    let world = World::new("one");
    let mut api = world.session("codex", "api");
    let mut web = world.session("claude", "web");
    // Memory first, idle: 2 sessions, then 50.
    std::thread::sleep(Duration::from_millis(500));
    let pid = world.daemon_pid();
    let idle_two = rss_kib(pid);
    let more: Vec<Session> = (0..48).map(|i| world.session("claude", &format!("p{i}"))).collect();
    std::thread::sleep(Duration::from_secs(1));
    let idle_fifty = rss_kib(pid);
    let mcp: Vec<u64> = more.iter().filter_map(|s| mcp_pid(s.child.id())).map(rss_kib).collect();
    let mcp_avg = mcp.iter().sum::<u64>() / (mcp.len() as u64).max(1);
    drop(more);

    let mut g = c.benchmark_group("daemon");
    let mut n = 0u64;
    g.bench_function("send_message", |b| {
        b.iter(|| {
            n += 1;
            web.send(n);
        })
    });
    // Read what the sends left, then time reads of an empty inbox and of one message.
    while api.tool("check_inbox", json!({})).1 != "No new messages." {}
    g.bench_function("check_inbox/empty", |b| b.iter(|| api.tool("check_inbox", json!({}))));
    g.bench_function("send_to_inbox", |b| b.iter_custom(|iters| one_at_a_time(iters, &mut n, &mut web, &mut api)));
    g.bench_function("check_inbox/one_message", |b| {
        b.iter_batched(
            || {
                n += 1;
                web.send(n);
            },
            |()| api.tool("check_inbox", json!({})),
            BatchSize::PerIteration,
        )
    });
    g.finish();

    let after = rss_kib(pid);
    println!(
        "daemon memory (VmRSS): {idle_two} KiB idle with 2 sessions, {idle_fifty} KiB idle with 50 sessions, {after} KiB after the benchmarks; agentfw mcp: {mcp_avg} KiB each on average"
    );
    drop(web);
    drop(api);
}

/// `iters` messages from `web` until each is read by `api`, timed one at a time with a pause
/// between them.
#[allow(clippy::disallowed_methods)] // a benchmark reads the clock
fn one_at_a_time(iters: u64, n: &mut u64, web: &mut Session, api: &mut Session) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        *n += 1;
        let start = std::time::Instant::now();
        web.send(*n);
        api.read_until(*n);
        total += start.elapsed();
        std::thread::sleep(Duration::from_millis(5));
    }
    total
}

/// `web (claude)` on one machine sends to `api (codex)` on another through a relay.
fn relay(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = agentfw_relay::Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        database_url: format!("sqlite://{}", dir.path().join("relay.db").display()),
        admin_token: Some("afwa_bench-admin-token-0123456789".to_owned()),
        // The default per-device limit (100 a second after a burst of 1,000) would pace
        // the benchmark's thousands of messages; latency is what is measured here.
        rate_per_second: 1_000_000,
        burst: 1_000_000,
        ..agentfw_relay::Config::default()
    };
    let relay = runtime.block_on(agentfw_relay::Relay::start(config)).unwrap();
    let (m1, m2) = (World::new("m1"), World::new("m2"));
    m1.join(&relay, &runtime, "m1");
    m2.join(&relay, &runtime, "m2");
    let mut api = m2.session("codex", "api");
    let mut web = m1.session("claude", "web");
    // The sender's daemon learns of `api (codex)` from the relay's directory.
    while !web.tool("list_team", json!({})).1.contains("api (codex)") {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut n = 0u64;
    let mut g = c.benchmark_group("relay");
    g.bench_function("send_to_inbox", |b| b.iter_custom(|iters| one_at_a_time(iters, &mut n, &mut web, &mut api)));
    g.bench_function("send_to_inbox_back_to_back", |b| {
        b.iter(|| {
            n += 1;
            web.send(n);
            api.read_until(n);
        })
    });
    g.finish();
    drop((web, api, m1, m2));
    runtime.block_on(relay.shutdown());
}

/// The `agentfw mcp` child of a fake agent.
fn mcp_pid(agent: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{agent}/task/{agent}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

fn main() -> ExitCode {
    // This binary is also `agentfw` for the fake agents: `mcp`, and `daemon --home DIR`.
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("mcp") => match agentfw_mcp::home::Home::resolve(None) {
            Ok(home) => agentfw_mcp::mcp::run(home),
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        Some("daemon") => {
            let dir = args.iter().position(|a| a == "--home").and_then(|i| args.get(i + 1));
            let home = agentfw_mcp::home::Home::resolve(dir.map(Path::new));
            match home
                .map_err(|e| e.to_string())
                .and_then(|h| agentfw_mcp::daemon::run(&h, None).map_err(|e| e.to_string()))
            {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(1)
                }
            }
        }
        _ => {
            let mut c = Criterion::default().configure_from_args();
            benches(&mut c);
            relay(&mut c);
            c.final_summary();
            ExitCode::SUCCESS
        }
    }
}
