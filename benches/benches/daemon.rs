//! The daemon end to end, exactly as agents reach it, against the disk's own floor.
//!
//! Each fake agent is a copy of `/bin/sh` named `claude` or `codex` (as `agentfw demo` does)
//! that runs this benchmark binary as `agentfw mcp` (the binary answers to `mcp` and
//! `daemon` like `agentfw` does), so identity comes from the process tree and every request
//! crosses the agent's stdio, the MCP server, the Unix socket, the firewall and the database
//! of a real daemon in a temporary home (limits lifted, wake-ups off).
//!
//! **The floor.** A commit cannot be faster than the disk's flush, so each figure is set
//! against one: a SQLite database in WAL mode beside the home on the same disk, where one
//! commit inserts 1 KiB and is made durable as the daemon makes its commits durable (one
//! `fdatasync` of the log), on a log already filled once (see [`FLOOR_WARM_UP`]). The floor
//! is measured in the same run, half just before and half just after each chunk of the
//! operation it is compared with, so both see the same disk and the same neighbours;
//! `ratio` is the operation's median over the floor's.
//!
//! On one machine (`daemon/…`):
//! - `send_message`: one session sends, back to back;
//! - `check_inbox/one_waiting`: the recipient reads its inbox with one message in it (the
//!   send before it is not timed);
//! - `send_to_inbox`: from `send_message` until the recipient's `check_inbox` shows the text;
//! - `concurrent/N`: N sessions send at once, each its next message as soon as the last one
//!   is acknowledged; `msgs/s` is all of them together, against the floor's sequential
//!   commits per second (`floor/s`).
//!
//! Across machines (`relay/…`): two homes with their own daemons, both joined to a relay in
//! this process on loopback. `send_message` to the agent on the other machine;
//! `send_to_inbox` until its `check_inbox` there shows the text (the sender's commit,
//! sealing, the relay's durable store and push, opening, the recipient's commit, the read),
//! one message at a time with a pause of a few milliseconds between them (untimed), and
//! `send_to_inbox/back_to_back` without the pause; `concurrent/8` as above.
//!
//! Memory: the daemon's resident set with 50 sessions connected, before and after the
//! load, split as the kernel counts it (heap and stacks, file pages), with its thread count.
//! Where it goes (measured with `/proc/PID/status` at 0, 1, 10 and 50 sessions and with
//! heaptrack around a daemon under the same load; this binary answers `daemon --home DIR`,
//! so a daemon started that way under `heaptrack` before the sessions connect is theirs):
//! - **File pages, ~14 MiB**: the binary's code and read-only data, mapped; shared with
//!   every `agentfw mcp` of the same binary (its proportional share, Pss, is far lower).
//! - **Fixed heap, ~9.6 MiB anonymous with no session**: the compiled rule pack (the
//!   larger part: several MiB of automata and literal tables), SQLite's page cache (at
//!   most 512 KiB, `store.rs`), the runtime's threads (2 workers, the engine, the wake-up
//!   thread; stacks are touched only as deep as used).
//! - **Per session, ~24 KiB**: its connection task (no read buffer between requests), the
//!   caller's identity and environment, the session and its firewall bookkeeping.
//! - **Under load, growing with what the firewall remembers**: after 7,200 messages to one
//!   recipient the firewall's state (the provenance ledger's entries and spans, the limits'
//!   tracked messages and threads: the core's, kept within its own limits) is 6.2 MB as
//!   JSON, and the daemon grows by ~12 MiB: that state and what the allocator keeps
//!   around it. A snapshot (every 500 inputs) serializes it in place and streams it into
//!   SQLite: neither a copy of the state nor a string of it. The split printed with the
//!   memory lines shows where: after three rounds of every scenario (about 10,000
//!   messages) the main heap (what was built before the threads started: the rule pack)
//!   stayed at 6.6 MiB and the stacks at 0.2 MiB, while the other threads' allocator
//!   arenas grew from 2.2 to 23.6 MiB: the engine thread's firewall state and SQLite page
//!   cache, and what the allocator keeps of them.
//!
//! **What the daemon did**, beside each timing and unchanged by the machine's load: per
//! operation, the bytes the daemon wrote and its write calls (`/proc/PID/io`: `wchar`,
//! `syscw`; the database, its write-ahead log, where SQLite writes each frame of a commit as
//! two calls, header and page, and the answers on its socket), and the CPU time its threads
//! ran (`/proc/PID/task/*/schedstat`), in all and on the engine thread alone, and how many
//! times its threads were scheduled in (`runs`: each hand-off between the socket's task and
//! the engine thread wakes a thread). Across machines, both daemons together.
//!
//! `AGENTFW_BENCH_WRAP` runs each daemon under a command, started before any session so
//! that the sessions use it: `strace -f -c -o FILE -e trace=pwrite64,write,fdatasync,fsync`
//! counts its system calls, `valgrind --tool=callgrind` its instructions (with
//! `AGENTFW_BENCH_ROUNDS=1` and a scenario filter: a daemon under valgrind is slow).
//!
//! Criterion is not used: it reports each iteration's mean with a confidence interval, not
//! tail percentiles, throughput under concurrency or a floor taken alongside. Every figure
//! is measured `AGENTFW_BENCH_ROUNDS` times (default 5) and the median of the rounds is
//! printed with the lowest and highest, with the load average before and after: on a shared
//! machine single runs mislead.
//!
//! ```text
//! cargo bench -p agentfw-benches --bench daemon               # everything
//! cargo bench -p agentfw-benches --bench daemon -- relay      # the scenarios whose name contains `relay`
//! AGENTFW_BENCH_SYNC=normal cargo bench -p agentfw-benches --bench daemon   # without the fsync of each commit
//! AGENTFW_BENCH_ROUNDS=1 AGENTFW_BENCH_WRAP='strace -f -c -o calls.txt -e trace=pwrite64,write,fdatasync,fsync' \
//!     cargo bench -p agentfw-benches --bench daemon -- daemon/send_message   # one scenario, its system calls
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
#![allow(clippy::disallowed_methods)] // a benchmark reads the clock and its environment

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use agentfw_core::seal::DeviceKeys;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{Value, json};

const CONFIG: &str = "[wake]\nenabled = false\n[firewall.limits]\nrate = 100000000\nfan_out = 1000\n\
near_duplicate = \"off\"\nself_repeat = \"off\"\nack_only = \"off\"\nack_ping_pong = \"off\"\n";

/// Timed operations per scenario per round.
const SAMPLES: usize = 400;
/// Messages each concurrent sender sends per round.
const CONCURRENT_EACH: usize = 150;
/// Sessions connected while everything is measured (the memory target is for 50).
const SESSIONS: usize = 50;

// ---------------------------------------------------------------------------------------
// Statistics

/// The timings of one chunk of operations.
#[derive(Clone, Debug, Default)]
struct Chunk {
    each: Vec<Duration>,
    /// Wall time of the whole chunk (for concurrent senders, less than the sum).
    wall: Duration,
    /// What the daemons did for the chunk's untimed steps, left out of its [`Work`].
    untimed: Delta,
}

impl Chunk {
    fn timed(n: usize, mut op: impl FnMut() -> Duration) -> Self {
        let start = Instant::now();
        let each = (0..n).map(|_| op()).collect();
        Self { each, wall: start.elapsed(), untimed: Delta::default() }
    }

    fn pct(&self, p: f64) -> Duration {
        let mut sorted = self.each.clone();
        sorted.sort();
        let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted.get(i).copied().unwrap_or_default()
    }

    fn per_sec(&self) -> f64 {
        self.each.len() as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// One round's figures for one scenario.
#[derive(Clone, Copy, Debug)]
struct Figures {
    p50: f64,
    p95: f64,
    p99: f64,
    per_sec: f64,
    floor_p50: f64,
    floor_per_sec: f64,
    work: Work,
}

impl Figures {
    fn of(op: &Chunk, floor: &Chunk, work: Work) -> Self {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        Self {
            p50: ms(op.pct(0.5)),
            p95: ms(op.pct(0.95)),
            p99: ms(op.pct(0.99)),
            per_sec: op.per_sec(),
            floor_p50: ms(floor.pct(0.5)),
            floor_per_sec: floor.per_sec(),
            work,
        }
    }
}

/// Every round of every scenario, printed as medians at the end.
#[derive(Default)]
struct Report {
    rows: Vec<(String, Vec<Figures>)>,
}

impl Report {
    fn add(&mut self, name: &str, figures: Figures) {
        let w = figures.work;
        println!(
            "  {name:<34} p50 {:>6.3} ms  p95 {:>6.3}  p99 {:>6.3}  {:>7.0} msgs/s   floor p50 {:.3} ms, {:.0}/s  ratio {:.2}\n  {:<34} each: {:.1} KiB in {:.1} writes, cpu {:.0} µs (engine {:.0}), threads scheduled in {:.1} times",
            figures.p50,
            figures.p95,
            figures.p99,
            figures.per_sec,
            figures.floor_p50,
            figures.floor_per_sec,
            figures.p50 / figures.floor_p50,
            "",
            w.kib,
            w.writes,
            w.cpu_us,
            w.engine_us,
            w.runs,
        );
        match self.rows.iter_mut().find(|(n, _)| n == name) {
            Some((_, all)) => all.push(figures),
            None => self.rows.push((name.to_owned(), vec![figures])),
        }
    }

    fn print(&self) {
        println!("\nmedian of rounds (lowest–highest p50 of the rounds)");
        println!(
            "{:<34} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7} {:>5}",
            "scenario",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "msgs/s",
            "floor ms",
            "floor/s",
            "ratio",
            "x floor/s",
            "KiB",
            "writes",
            "cpu µs",
            "engine",
            "runs"
        );
        for (name, all) in &self.rows {
            let med = |f: fn(&Figures) -> f64| median(all.iter().map(f).collect());
            let ratio = median(all.iter().map(|f| f.p50 / f.floor_p50).collect());
            let speed = median(all.iter().map(|f| f.per_sec / f.floor_per_sec).collect());
            let lo = all.iter().map(|f| f.p50).fold(f64::INFINITY, f64::min);
            let hi = all.iter().map(|f| f.p50).fold(0.0, f64::max);
            println!(
                "{name:<34} {:>9.3} {:>9.3} {:>9.3} {:>9.0} {:>10.3} {:>8.0} {:>8.2} {:>8.2} {:>7.1} {:>7.1} {:>7.0} {:>7.0} {:>5.1}   ({lo:.3}–{hi:.3})",
                med(|f| f.p50),
                med(|f| f.p95),
                med(|f| f.p99),
                med(|f| f.per_sec),
                med(|f| f.floor_p50),
                med(|f| f.floor_per_sec),
                ratio,
                speed,
                med(|f| f.work.kib),
                med(|f| f.work.writes),
                med(|f| f.work.cpu_us),
                med(|f| f.work.engine_us),
                med(|f| f.work.runs),
            );
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------------------
// What the daemon did

/// The counters of some daemons at one moment (see the module docs).
#[derive(Clone, Debug, Default)]
struct Counters {
    written: u64,
    writes: u64,
    /// Each thread's CPU time in ns and how many times it was scheduled in, by pid and
    /// thread id, and whether it is the engine.
    threads: Vec<((u32, u32), u64, u64, bool)>,
}

impl Counters {
    fn read(pids: &[u32]) -> Self {
        let mut c = Self::default();
        for &pid in pids {
            for line in std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default().lines() {
                let value = |v: &str| v.trim().parse::<u64>().unwrap_or(0);
                match line.split_once(':') {
                    Some(("wchar", v)) => c.written += value(v),
                    Some(("syscw", v)) => c.writes += value(v),
                    _ => {}
                }
            }
            for task in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
                let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else { continue };
                // CPU time, time waiting to run, times run.
                let schedstat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
                let field = |i: usize| schedstat.split_whitespace().nth(i).and_then(|v| v.parse().ok()).unwrap_or(0);
                let engine =
                    std::fs::read_to_string(task.path().join("comm")).is_ok_and(|n| n.trim() == "agentfw-engine");
                c.threads.push(((pid, tid), field(0), field(2), engine));
            }
        }
        c
    }

    /// What happened since `before`: the CPU time of threads that ran throughout or started
    /// since (one that ended meanwhile takes its time with it).
    fn since(&self, before: &Self) -> Delta {
        let (mut cpu_ns, mut engine_ns, mut runs) = (0, 0, 0);
        for (id, ns, n, engine) in &self.threads {
            let earlier = before.threads.iter().find(|(b, ..)| b == id);
            let ran = ns.saturating_sub(earlier.map_or(0, |(_, ns, _, _)| *ns));
            runs += n.saturating_sub(earlier.map_or(0, |(_, _, n, _)| *n));
            cpu_ns += ran;
            if *engine {
                engine_ns += ran;
            }
        }
        Delta {
            written: self.written.saturating_sub(before.written),
            writes: self.writes.saturating_sub(before.writes),
            cpu_ns,
            engine_ns,
            runs,
        }
    }
}

/// What the daemons did between two readings of their [`Counters`].
#[derive(Clone, Copy, Debug, Default)]
struct Delta {
    written: u64,
    writes: u64,
    cpu_ns: u64,
    engine_ns: u64,
    /// Times a thread was scheduled in: each hand-off from one thread to another is one.
    runs: u64,
}

impl std::ops::AddAssign for Delta {
    fn add_assign(&mut self, other: Self) {
        self.written += other.written;
        self.writes += other.writes;
        self.cpu_ns += other.cpu_ns;
        self.engine_ns += other.engine_ns;
        self.runs += other.runs;
    }
}

/// What the daemons did per operation of a chunk.
#[derive(Clone, Copy, Debug, Default)]
struct Work {
    kib: f64,
    writes: f64,
    cpu_us: f64,
    engine_us: f64,
    runs: f64,
}

impl Work {
    /// `all` less the chunk's untimed steps, over its operations.
    fn per_op(all: Delta, chunk: &Chunk) -> Self {
        let ops = chunk.each.len().max(1) as f64;
        let per = |all: u64, untimed: u64| all.saturating_sub(untimed) as f64 / ops;
        Self {
            kib: per(all.written, chunk.untimed.written) / 1024.0,
            writes: per(all.writes, chunk.untimed.writes),
            cpu_us: per(all.cpu_ns, chunk.untimed.cpu_ns) / 1e3,
            engine_us: per(all.engine_ns, chunk.untimed.engine_ns) / 1e3,
            runs: per(all.runs, chunk.untimed.runs),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The floor

/// SQLite in WAL mode, one 1 KiB insert per commit, beside the homes, each commit made
/// durable the way the daemon makes its own: `synchronous = NORMAL` and one `fdatasync` of
/// the log. (`synchronous = FULL` would have SQLite call `fsync`, which also waits for the
/// log's times to reach the file system's journal: not the flush the daemon waits for.)
#[allow(clippy::disallowed_types)] // the floor flushes its log itself, as the daemon does
struct Floor {
    db: rusqlite::Connection,
    wal: std::fs::File,
    body: Vec<u8>,
}

/// Commits that fill the floor's log past SQLite's checkpoint (1,000 pages), so that it
/// starts again from its beginning. A commit that makes the log longer waits for the file
/// system's journal too (its size changed), one that writes over it does not: measured on a
/// fresh log, the floor was the slower kind in the first scenarios and the faster in the
/// later ones (0.29 against 0.15 ms in one quiet run), and ratios did not compare.
const FLOOR_WARM_UP: usize = 1_100;

impl Floor {
    #[allow(clippy::disallowed_types)] // see `Floor`
    fn new(dir: &Path) -> Self {
        let path = dir.join("floor.db");
        let db = rusqlite::Connection::open(&path).unwrap();
        let mode: String = db.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        db.execute_batch(
            "PRAGMA synchronous = NORMAL; CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body BLOB NOT NULL);",
        )
        .unwrap();
        let wal = std::fs::File::open(dir.join("floor.db-wal")).unwrap();
        let mut floor = Self { db, wal, body: agentfw_benches::ascii_1k().into_bytes() };
        floor.chunk(FLOOR_WARM_UP);
        floor
    }

    fn chunk(&mut self, n: usize) -> Chunk {
        let mut insert = self.db.prepare_cached("INSERT INTO t (body) VALUES (?1)").unwrap();
        Chunk::timed(n, || {
            let start = Instant::now();
            insert.execute([&self.body]).unwrap();
            self.wal.sync_data().unwrap();
            start.elapsed()
        })
    }

    /// Half a chunk before `op` and half after it, as one: a disk that slows down or speeds
    /// up during the operation weighs on its floor alike.
    fn around(&mut self, n: usize, op: impl FnOnce() -> Chunk) -> (Chunk, Chunk) {
        let mut floor = self.chunk(n / 2);
        let chunk = op();
        let after = self.chunk(n - n / 2);
        floor.each.extend(after.each);
        floor.wall += after.wall;
        (floor, chunk)
    }
}

// ---------------------------------------------------------------------------------------
// Homes, agents and the relay

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

    /// `n` idle `claude` sessions in projects `idle0`…, connected to the daemon.
    fn idle_sessions(&self, n: usize) -> Vec<Session> {
        (0..n).map(|i| self.session("claude", &format!("idle{i}"))).collect()
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

    /// With `AGENTFW_BENCH_WRAP`, starts the home's daemon under that command and waits for
    /// it to answer, so that the sessions use it rather than start their own.
    fn start_daemon(&self) {
        let Ok(wrap) = std::env::var("AGENTFW_BENCH_WRAP") else { return };
        let mut words = wrap.split_whitespace();
        let mut command = Command::new(words.next().expect("AGENTFW_BENCH_WRAP names a command"));
        command
            .args(words)
            .arg(&self.exe)
            .args(["daemon", "--home"])
            .arg(self.dir.join("home"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.dir.join("user"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut daemon = command.spawn().unwrap();
        // Reaped when it exits (`World`'s drop stops it).
        std::thread::spawn(move || daemon.wait());
        let home = agentfw_mcp::home::Home::resolve(Some(&self.dir.join("home"))).unwrap();
        while agentfw_mcp::client::Client::connect(&home).is_err() {
            std::thread::sleep(Duration::from_millis(50));
        }
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
        let mut line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).unwrap();
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

    fn send(&mut self, to: &str, tag: &str) {
        let text = format!("Benchmark message {tag}: the /health endpoint returns 200 with status ok.");
        let (error, text) = self.tool("send_message", json!({"to": to, "text": text}));
        assert!(!error, "{text}");
    }

    /// Reads the inbox until message `tag` is in it.
    fn read_until(&mut self, tag: &str) {
        let marker = format!("Benchmark message {tag}:");
        while !self.tool("check_inbox", json!({})).1.contains(&marker) {}
    }

    /// Reads the inbox until it is empty.
    fn drain(&mut self) {
        while self.tool("check_inbox", json!({})).1 != "No new messages." {}
    }

    fn timed(&mut self, f: impl FnOnce(&mut Self)) -> Duration {
        let start = Instant::now();
        f(self);
        start.elapsed()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh tag for each message, so a read can wait for its own.
fn tag() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// One message from `from` to `to`, timed until `reader` sees it in its inbox.
fn send_to_inbox(from: &mut Session, reader: &mut Session, to: &str) -> Duration {
    let t = tag();
    let start = Instant::now();
    from.send(to, &t);
    reader.read_until(&t);
    start.elapsed()
}

/// `senders` send to `to` at once, `each` messages apiece; one chunk of all the sends.
fn concurrent(senders: &mut [Session], to: &str, each: usize) -> Chunk {
    let start = Instant::now();
    let each: Vec<Duration> = std::thread::scope(|scope| {
        let handles: Vec<_> = senders
            .iter_mut()
            .map(|s| scope.spawn(move || (0..each).map(|_| s.timed(|s| s.send(to, &tag()))).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    Chunk { each, wall: start.elapsed(), untimed: Delta::default() }
}

// ---------------------------------------------------------------------------------------
// Memory

fn proc_status(pid: u32) -> Vec<(String, String)> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

fn memory(what: &str, pid: u32) {
    let status = proc_status(pid);
    let get = |k: &str| status.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
    println!(
        "daemon memory {what}: VmRSS {} (anonymous {}, file {}), {} threads",
        get("VmRSS"),
        get("RssAnon"),
        get("RssFile"),
        get("Threads")
    );
    let kib = Mappings::read(pid);
    println!(
        "  resident by mapping: main heap {} KiB, other anonymous (the allocator's other arenas) {} KiB, \
         thread stacks {} KiB, files {} KiB (of which shared memory {} KiB)",
        kib.heap, kib.arenas, kib.stacks, kib.files, kib.shared
    );
}

/// A process's resident memory (KiB) by the kind of mapping that holds it, from
/// `/proc/PID/smaps`. A thread's stack is the mapping that holds its stack pointer, which
/// `/proc/PID/task/TID/syscall` shows while the thread waits in a system call (the daemon's
/// threads all do when it is idle).
#[derive(Debug, Default)]
struct Mappings {
    heap: u64,
    arenas: u64,
    stacks: u64,
    files: u64,
    shared: u64,
}

impl Mappings {
    fn read(pid: u32) -> Self {
        let mut pointers = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
            let syscall = std::fs::read_to_string(task.path().join("syscall")).unwrap_or_default();
            let fields: Vec<&str> = syscall.split_whitespace().collect();
            if fields.len() == 9
                && let Ok(sp) = u64::from_str_radix(fields[7].trim_start_matches("0x"), 16)
            {
                pointers.push(sp);
            }
        }
        let mut m = Self::default();
        let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
        let mut range = (0, 0);
        let mut name = String::new();
        for line in smaps.lines() {
            let mut words = line.split_whitespace();
            let first = words.next().unwrap_or_default();
            if let Some((from, to)) = first.split_once('-')
                && let (Ok(from), Ok(to)) = (u64::from_str_radix(from, 16), u64::from_str_radix(to, 16))
            {
                range = (from, to);
                name = words.nth(4).unwrap_or_default().to_owned();
                continue;
            }
            if first != "Rss:" {
                continue;
            }
            let rss: u64 = words.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            let stack = name == "[stack]" || pointers.iter().any(|&sp| range.0 <= sp && sp < range.1);
            match name.as_str() {
                _ if stack => m.stacks += rss,
                "[heap]" => m.heap += rss,
                "" => m.arenas += rss,
                n if n.starts_with('/') => {
                    m.files += rss;
                    if n.ends_with("-shm") {
                        m.shared += rss;
                    }
                }
                _ => m.arenas += rss,
            }
        }
        m
    }
}

// ---------------------------------------------------------------------------------------
// The scenarios

struct Bench {
    filter: Vec<String>,
    rounds: usize,
    report: Report,
    floor: Floor,
    /// The daemons whose counters the scenarios read.
    daemons: Vec<u32>,
}

impl Bench {
    fn wants(&self, name: &str) -> bool {
        self.filter.is_empty() || self.filter.iter().any(|f| name.contains(f.as_str()))
    }

    /// Some scenario of this group is wanted (else its homes are not even set up).
    fn wants_any(&self, names: &[&str]) -> bool {
        names.iter().any(|n| self.wants(n))
    }

    /// `op` as a chunk of its own, with the floor around it: one round of scenario `name`.
    fn measure(&mut self, name: &str, n: usize, op: impl FnOnce(usize) -> Chunk) {
        if !self.wants(name) {
            return;
        }
        let daemons = self.daemons.clone();
        let mut work = Delta::default();
        let (floor, chunk) = self.floor.around(n, || {
            let before = Counters::read(&daemons);
            let chunk = op(n);
            work = Counters::read(&daemons).since(&before);
            chunk
        });
        let work = Work::per_op(work, &chunk);
        self.report.add(name, Figures::of(&chunk, &floor, work));
    }
}

fn one_machine(b: &mut Bench) {
    if !b.wants_any(&[
        "daemon/send_message",
        "daemon/check_inbox/one_waiting",
        "daemon/send_to_inbox",
        "daemon/concurrent/8",
    ]) {
        return;
    }
    let world = World::new("one");
    world.start_daemon();
    let mut api = world.session("codex", "api");
    let mut web = world.session("claude", "web");
    let mut senders: Vec<Session> = (0..8).map(|i| world.session("claude", &format!("sender{i}"))).collect();
    let idle = world.idle_sessions(SESSIONS.saturating_sub(2 + senders.len()));
    std::thread::sleep(Duration::from_secs(1));
    let pid = world.daemon_pid();
    b.daemons = vec![pid];
    memory(&format!("with {SESSIONS} sessions, idle"), pid);
    let to = "api (codex)";
    for round in 0..b.rounds {
        println!("round {} (load {})", round + 1, load());
        b.measure("daemon/send_message", SAMPLES, |n| Chunk::timed(n, || web.timed(|s| s.send(to, &tag()))));
        api.drain();
        let daemons = b.daemons.clone();
        b.measure("daemon/check_inbox/one_waiting", SAMPLES, |n| {
            let mut each = Vec::with_capacity(n);
            let start = Instant::now();
            let (mut untimed, mut untimed_work) = (Duration::ZERO, Delta::default());
            for _ in 0..n {
                let t = tag();
                let before = Counters::read(&daemons);
                untimed += web.timed(|s| s.send(to, &t));
                untimed_work += Counters::read(&daemons).since(&before);
                each.push(api.timed(|s| s.read_until(&t)));
            }
            Chunk { each, wall: start.elapsed() - untimed, untimed: untimed_work }
        });
        b.measure("daemon/send_to_inbox", SAMPLES, |n| Chunk::timed(n, || send_to_inbox(&mut web, &mut api, to)));
        for c in [1, 2, 4, 8] {
            b.measure(&format!("daemon/concurrent/{c}"), c * CONCURRENT_EACH, |_| {
                concurrent(&mut senders[..c], to, CONCURRENT_EACH)
            });
        }
        api.drain();
    }
    memory(&format!("with {SESSIONS} sessions, after the load"), pid);
    drop(idle);
    b.daemons.clear();
}

/// `web (claude)` on one machine sends to `api (codex)` on another through a relay.
fn across_machines(b: &mut Bench) {
    if !b.wants_any(&["relay/send_message", "relay/send_to_inbox/back_to_back", "relay/concurrent/8"]) {
        return;
    }
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
    m1.start_daemon();
    m2.start_daemon();
    let mut api = m2.session("codex", "api");
    let mut web = m1.session("claude", "web");
    let mut senders: Vec<Session> = (0..8).map(|i| m1.session("claude", &format!("sender{i}"))).collect();
    // The senders' daemon learns of `api (codex)` from the relay's directory.
    while !web.tool("list_team", json!({})).1.contains("api (codex)") {
        std::thread::sleep(Duration::from_millis(20));
    }
    b.daemons = vec![m1.daemon_pid(), m2.daemon_pid()];
    let to = "api (codex)";
    for round in 0..b.rounds {
        println!("round {} across machines (load {})", round + 1, load());
        b.measure("relay/send_message", SAMPLES, |n| Chunk::timed(n, || web.timed(|s| s.send(to, &tag()))));
        api.drain();
        b.measure("relay/send_to_inbox", SAMPLES / 2, |n| {
            let mut each = Vec::with_capacity(n);
            let mut paused = Duration::ZERO;
            let start = Instant::now();
            for _ in 0..n {
                let t = tag();
                each.push(web.timed(|s| s.send(to, &t)) + api.timed(|s| s.read_until(&t)));
                // The commits that follow a delivery (the outbox row cleared, the relay's
                // acknowledgement) finish before the next message: latency, not a queue.
                let pause = Instant::now();
                std::thread::sleep(Duration::from_millis(5));
                paused += pause.elapsed();
            }
            Chunk { each, wall: start.elapsed() - paused, untimed: Delta::default() }
        });
        b.measure("relay/send_to_inbox/back_to_back", SAMPLES / 2, |n| {
            Chunk::timed(n, || send_to_inbox(&mut web, &mut api, to))
        });
        b.measure("relay/concurrent/8", 8 * CONCURRENT_EACH, |_| concurrent(&mut senders, to, CONCURRENT_EACH));
        api.drain();
    }
    b.daemons.clear();
    drop((web, api, senders, m1, m2));
    runtime.block_on(relay.shutdown());
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
            let filter: Vec<String> = args.iter().skip(1).filter(|a| !a.starts_with('-')).cloned().collect();
            let rounds = std::env::var("AGENTFW_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
            let floor_dir = tempfile::tempdir().unwrap();
            let mut b = Bench {
                filter,
                rounds,
                report: Report::default(),
                floor: Floor::new(floor_dir.path()),
                daemons: Vec::new(),
            };
            let before = load();
            one_machine(&mut b);
            across_machines(&mut b);
            b.report.print();
            println!("load average before {before}, after {}", load());
            ExitCode::SUCCESS
        }
    }
}
