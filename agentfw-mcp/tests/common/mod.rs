//! A world for end-to-end tests: a temporary home, fake agent binaries (copies of a small
//! program, `/bin/sh`, installed where `claude`, `codex` and `cursor-agent` install
//! themselves, pinned, and linked from `bin/` by those names) that each start
//! `agentfw mcp` as their child, and a JSON-RPC client for each. The daemon is real and
//! started by the first MCP server, exactly as in a session. Nothing touches the real home:
//! every process gets a clean environment with `HOME` and `AGENTFW_HOME` in the world.

#![allow(dead_code)]

pub mod relay;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

pub fn agentfw_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agentfw"))
}

pub struct World {
    pub dir: tempfile::TempDir,
    /// `AGENTFW_HOME`.
    pub home: PathBuf,
    /// The agents' `HOME`.
    pub user_home: PathBuf,
    pub bin: PathBuf,
}

/// Where each fake harness is installed under the agents' `HOME`: (kind, name, path).
pub const INSTALLED: [(&str, &str, &str); 3] = [
    ("claude", "claude", ".local/share/claude/versions/1.0.0"),
    ("codex", "codex", ".npm-global/lib/node_modules/@openai/codex/bin/codex"),
    ("cursor", "cursor-agent", ".local/share/cursor-agent/versions/1/cursor-agent"),
];

/// The configuration every world starts with: quick wake-ups, and admin commands allowed
/// from the test process even if the tests themselves run inside an agent session.
pub const BASE_CONFIG: &str = "[wake]\ndelay_ms = 50\ncooldown_secs = 1\n[admin]\nfrom_agents = true\n";

impl World {
    pub fn new() -> Self {
        Self::with_config(BASE_CONFIG)
    }

    pub fn with_config(config: &str) -> Self {
        let dir = tempfile::Builder::new().prefix("afw").tempdir().unwrap();
        let home = dir.path().join("home");
        let user_home = dir.path().join("user");
        let bin = dir.path().join("bin");
        for d in [&home, &user_home, &bin] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(home.join("config.toml"), config).unwrap();
        // The fake harnesses are installed where the real ones install themselves, and their
        // digests pinned, as `agentfw install` does: their sessions are verified (ID2).
        // `bin/NAME` links to each; `/proc/N/exe` names the installed file.
        let mut pins = serde_json::Map::new();
        for (kind, name, installed) in INSTALLED {
            let real = user_home.join(installed);
            std::fs::create_dir_all(real.parent().unwrap()).unwrap();
            std::fs::copy("/bin/sh", &real).unwrap();
            std::os::unix::fs::symlink(&real, bin.join(name)).unwrap();
            let digest = blake3::hash(&std::fs::read(&real).unwrap()).to_hex().to_string();
            pins.insert(kind.to_owned(), json!([{"digest": digest, "path": real.display().to_string()}]));
        }
        let pins = json!({"version": 1, "agents": pins});
        std::fs::write(home.join("identity-pins.json"), pins.to_string()).unwrap();
        Self { dir, home, user_home, bin }
    }

    /// A project directory (a git repository) named `name`.
    pub fn project(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join("projects").join(name);
        std::fs::create_dir_all(p.join(".git")).unwrap();
        p
    }

    /// A command with the world's clean environment.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &self.user_home)
            .env("AGENTFW_HOME", &self.home)
            .env("LANG", "C.UTF-8");
        c
    }

    /// `agentfw ARGS` run by the test itself (no agent session).
    pub fn agentfw(&self, args: &[&str]) -> Output {
        self.command(agentfw_bin()).args(args).current_dir(self.dir.path()).output().unwrap()
    }

    /// `agentfw ARGS` as a person runs it: in a terminal of its own (the pseudo-terminal
    /// `script` allocates), in the foreground, with no agent around it (AM6). Returns the
    /// exit status and what the terminal showed (standard output and error together).
    pub fn person(&self, args: &[&str]) -> (i32, String) {
        let quoted: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
        let line = format!("{} {}", shell_quote(&agentfw_bin().display().to_string()), quoted.join(" "));
        let out = self
            .command("script")
            .args(["-qefc", &line, "/dev/null"])
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("`script` (util-linux) runs a command in a terminal of its own");
        (out.status.code().unwrap_or(-1), stdout(&out).replace("\r\n", "\n"))
    }

    /// `agentfw ARGS` run inside a fake agent `kind` working in project `project`.
    pub fn agentfw_as(&self, kind: &str, project: &str, args: &[&str]) -> Output {
        let quoted: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
        let script = format!("{} {}; exit $?", shell_quote(&agentfw_bin().display().to_string()), quoted.join(" "));
        self.command(self.bin.join(kind)).args(["-c", &script]).current_dir(self.project(project)).output().unwrap()
    }

    /// Start a fake agent `kind` in `project` running `agentfw mcp`, initialized.
    pub fn agent(&self, kind: &str, project: &str) -> Agent {
        self.agent_with_env(kind, project, &[])
    }

    /// The fake agent runs `agentfw mcp` in the background on its stdin and stdout, and
    /// in the foreground runs the commands [`Agent::run`] sends it through a FIFO, each as
    /// `sh -c`: as an agent's shell tool and hooks run (agent → `sh -c` → command).
    pub fn agent_with_env(&self, kind: &str, project: &str, env: &[(&str, &str)]) -> Agent {
        static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ctl = self.dir.path().join(format!("ctl-{n}"));
        assert!(Command::new("mkfifo").arg(&ctl).status().unwrap().success());
        let script = r#"exec 3<&0
"$AFW" mcp <&3 3<&- &
exec 0</dev/null 3<&-
while :; do
  IFS= read -r line < "$AFW_CTL" || continue
  [ "$line" = exit ] && break
  sh -c "$line" > "$AFW_CTL.out" 2> "$AFW_CTL.err"
  echo $? > "$AFW_CTL.rc.tmp"
  mv "$AFW_CTL.rc.tmp" "$AFW_CTL.rc"
done
wait"#;
        let mut cmd = self.command(self.bin.join(kind));
        cmd.args(["-c", script])
            .env("AFW", agentfw_bin())
            .env("AFW_CTL", &ctl)
            .current_dir(self.project(project))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut agent = Agent { child, stdin: Some(stdin), lines: reader(stdout), next_id: 1, ctl };
        let init = agent.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fake", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        agent.notify("notifications/initialized", json!({}));
        // The first tool call waits for the server's connection to the daemon: from here on
        // the session is registered and others can reach it.
        let team = agent.team();
        assert!(!team.error, "{}", team.text);
        agent
    }

    pub fn daemon_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.home.join("daemon.pid")).ok()?.trim().parse().ok()
    }

    /// Wait until a daemon is running (its pid file exists) and return its pid.
    pub fn wait_daemon(&self) -> u32 {
        for _ in 0..500 {
            if let Some(pid) = self.daemon_pid() {
                return pid;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no daemon started")
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some(pid) = self.daemon_pid() {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    }
}

/// Lines from a child's stdout, read on a thread so that reads can time out.
fn reader(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// One fake agent session speaking MCP to its `agentfw mcp`.
pub struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: u64,
    ctl: PathBuf,
}

/// What a command run inside an agent session printed.
#[derive(Debug)]
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A tool's answer: its text and whether it is an error.
#[derive(Debug)]
pub struct ToolResult {
    pub error: bool,
    pub text: String,
}

impl Agent {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Run `command` (a shell command line) inside this session, as its shell tool or a
    /// hook would. `$AFW` is the agentfw binary.
    pub fn run(&mut self, command: &str) -> Ran {
        let rc = PathBuf::from(format!("{}.rc", self.ctl.display()));
        let _ = std::fs::remove_file(&rc);
        let mut fifo = std::fs::OpenOptions::new().write(true).open(&self.ctl).unwrap();
        fifo.write_all(format!("{command}\n").as_bytes()).unwrap();
        drop(fifo);
        for _ in 0..1000 {
            if let Ok(code) = std::fs::read_to_string(&rc) {
                let read =
                    |ext: &str| std::fs::read_to_string(format!("{}.{ext}", self.ctl.display())).unwrap_or_default();
                return Ran { code: code.trim().parse().unwrap(), stdout: read("out"), stderr: read("err") };
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("`{command}` did not finish")
    }

    /// The MCP server's stdin, for a test that writes from another thread.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().unwrap()
    }

    /// The next line from the server within `timeout`, if any.
    pub fn try_read_line(&mut self, timeout: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(timeout).ok()?;
        Some(serde_json::from_str(&line).unwrap())
    }

    /// Write `bytes` and a line break to the server, whatever they hold.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub fn write_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line from the server, within 10 seconds.
    pub fn read_line(&mut self) -> Value {
        let line = self.lines.recv_timeout(Duration::from_secs(10)).expect("an answer from agentfw mcp");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON from agentfw mcp: {e}: {line}"))
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.write_line(&json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string());
    }

    /// Send a request and wait for the response with its id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.write_line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        self.response(id)
    }

    pub fn response(&mut self, id: u64) -> Value {
        loop {
            let msg = self.read_line();
            if msg.get("id").and_then(Value::as_u64) == Some(id) {
                return msg;
            }
        }
    }

    pub fn tool(&mut self, name: &str, args: Value) -> ToolResult {
        let r = self.request("tools/call", json!({"name": name, "arguments": args}));
        let result = r.get("result").unwrap_or_else(|| panic!("tools/call {name} failed: {r}"));
        let text = result["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        ToolResult { error: result["isError"].as_bool().unwrap_or(false), text }
    }

    pub fn send(&mut self, to: &str, text: &str) -> ToolResult {
        self.tool("send_message", json!({"to": to, "text": text}))
    }

    pub fn inbox(&mut self) -> ToolResult {
        self.tool("check_inbox", json!({}))
    }

    pub fn team(&mut self) -> ToolResult {
        self.tool("list_team", json!({}))
    }

    /// End the session: close the MCP server's stdin and wait for both processes.
    pub fn stop(mut self) {
        self.end();
    }

    fn end(&mut self) {
        drop(self.stdin.take());
        // Non-blocking: if the agent's shell is already gone there is no reader.
        const O_NONBLOCK: i32 = 0o4000;
        let open = std::os::unix::fs::OpenOptionsExt::custom_flags(std::fs::OpenOptions::new().write(true), O_NONBLOCK)
            .open(&self.ctl);
        if let Ok(mut fifo) = open {
            let _ = fifo.write_all(b"exit\n");
        }
        for _ in 0..300 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Agent {
    /// The same as [`Agent::stop`]: the MCP server must be gone before the world kills
    /// the daemon, or it would start another one.
    fn drop(&mut self) {
        self.end();
    }
}

/// The message id in a fence header: `Message from web (claude), id 01J…. Its text …`.
pub fn message_ids(fenced: &str) -> Vec<String> {
    fenced
        .lines()
        .filter_map(|l| l.strip_prefix("Message from "))
        .filter_map(|l| l.split(", id ").nth(1))
        .filter_map(|l| l.split('.').next())
        .map(str::to_owned)
        .collect()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
