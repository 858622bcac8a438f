//! The daemon's client: what `agentfw mcp`, `agentfw send|inbox|team|…` and the harness
//! hooks use to talk to the daemon.
//!
//! [`Client::connect_or_start`] connects to the home's daemon, starting it (detached, its
//! log in the home) if no daemon answers, and waits until the socket answers. Requests are
//! typed methods; errors are [`ClientError`], whose `Daemon` variant carries the daemon's
//! code and message (a refusal's text is meant to be shown to the agent as it is).
//!
//! [`Reconnecting`] wraps a client for long-lived callers (the MCP server, hooks): on a lost
//! connection it reconnects, restarting the daemon if it died, and retries. Every request
//! it retries is idempotent: sends carry a `key` and inbox reads a `batch`, so a retry after
//! a crash never sends or delivers twice (see [`crate::engine`]).
//!
//! # Hooks
//!
//! The `agentfw hook HARNESS EVENT` command (its per-harness output formats live with the
//! installer) needs three things from the daemon, each decided for the hook process's own
//! ancestry, which must resolve to the same agent session as its MCP server (ID4):
//!
//! - [`Client::session_start`]: record the harness session id (for Codex, the thread id
//!   that `codex queue --thread` wakes);
//! - [`Client::user_prompt`]: a person spoke, so the turn fuse resets (LM2) — unless the
//!   prompt is a wake-up agentfw sent itself, which the daemon recognises;
//! - [`Client::inbox`] (alias [`Client::pending`]): the messages waiting for the session,
//!   delivered and fenced, to print as the hook's additional context.

use std::io::{self, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use agentfw_core::admission::{ComponentId, Mode, Ratings};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::home::Home;
use crate::proto::{
    self, AuditQuery, AuditResult, DashboardResult, Done, ErrorBody, HelloResult, HookEvent, InboxResult, Op, Request,
    Response, SendResult, StatusResult, TeamResult,
};

/// How long to wait for a daemon we started to answer.
const START_WAIT: Duration = Duration::from_secs(10);

/// Why a request did not get an answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "the agentfw daemon is not running (nothing answers on `{socket}`); it starts with `agentfw daemon`, or by itself with `agentfw mcp` and `agentfw send`"
    )]
    NotRunning { socket: String },
    #[error("cannot start the agentfw daemon: {0}")]
    Start(String),
    #[error("lost the connection to the agentfw daemon: {0}")]
    Io(#[from] io::Error),
    #[error("{0}")]
    Daemon(ErrorBody),
    #[error("the agentfw daemon's answer is not understood: {0}")]
    Protocol(String),
}

impl ClientError {
    /// A connection problem: reconnecting (and restarting the daemon) may help.
    pub fn is_connection(&self) -> bool {
        matches!(self, ClientError::Io(_) | ClientError::NotRunning { .. })
    }

    /// The daemon's error code, if the daemon answered with an error.
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Daemon(e) => Some(&e.code),
            _ => None,
        }
    }
}

/// One connection to the daemon.
#[derive(Debug)]
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
}

impl Client {
    /// Connect to the home's daemon, without starting one.
    pub fn connect(home: &Home) -> Result<Self, ClientError> {
        let stream = UnixStream::connect(&home.socket).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => {
                ClientError::NotRunning { socket: home.socket.display().to_string() }
            }
            _ => ClientError::Io(e),
        })?;
        let writer = stream.try_clone()?;
        Ok(Self { reader: BufReader::with_capacity(64 * 1024, stream), writer, next_id: 1 })
    }

    /// Connect, starting the daemon first if none answers.
    pub fn connect_or_start(home: &Home) -> Result<Self, ClientError> {
        match Self::connect(home) {
            Err(ClientError::NotRunning { .. }) => {}
            other => return other,
        }
        start_daemon(home)?;
        let mut waited = Duration::ZERO;
        let step = Duration::from_millis(5);
        loop {
            match Self::connect(home) {
                Err(ClientError::NotRunning { .. }) if waited < START_WAIT => {
                    std::thread::sleep(step);
                    waited += step;
                }
                Err(ClientError::NotRunning { socket }) => {
                    return Err(ClientError::Start(format!(
                        "it did not answer on `{socket}` within {} seconds; see `{}`",
                        START_WAIT.as_secs(),
                        home.log().display()
                    )));
                }
                other => return other,
            }
        }
    }

    /// Send `op`, wait for its answer.
    pub fn call_raw(&mut self, op: &Op) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = serde_json::to_vec(&Request { v: proto::VERSION, id, op: op.clone() })
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        line.push(b'\n');
        if let Err(e) = self.writer.write_all(&line) {
            // A daemon that refuses the connection (busy) answers and closes before reading:
            // its answer says why, the broken pipe does not.
            return match proto::read_line(&mut self.reader, proto::MAX_RESPONSE_BYTES) {
                Ok(Some(answer)) => match serde_json::from_slice::<Response>(&answer) {
                    Ok(Response { error: Some(error), .. }) => Err(ClientError::Daemon(error)),
                    _ => Err(e.into()),
                },
                _ => Err(e.into()),
            };
        }
        let Some(answer) = proto::read_line(&mut self.reader, proto::MAX_RESPONSE_BYTES)? else {
            return Err(ClientError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the daemon closed the connection",
            )));
        };
        let response: Response = serde_json::from_slice(&answer).map_err(|e| ClientError::Protocol(e.to_string()))?;
        if response.id != id && response.id != 0 {
            return Err(ClientError::Protocol(format!("answer to request {} while waiting for {id}", response.id)));
        }
        match (response.ok, response.result, response.error) {
            (true, Some(result), _) => Ok(result),
            (false, _, Some(error)) => Err(ClientError::Daemon(error)),
            _ => Err(ClientError::Protocol("an answer with neither result nor error".into())),
        }
    }

    /// Send `op` and read its result as `T`.
    pub fn call<T: DeserializeOwned>(&mut self, op: &Op) -> Result<T, ClientError> {
        let value = self.call_raw(op)?;
        serde_json::from_value(value).map_err(|e| ClientError::Protocol(e.to_string()))
    }

    pub fn hello(&mut self, client: &str) -> Result<HelloResult, ClientError> {
        self.call(&Op::Hello { client: client.to_owned() })
    }

    /// Send `text` to `to`. Give a `key` to make a retry safe.
    pub fn send(
        &mut self,
        to: &str,
        text: &str,
        reply_to: Option<&str>,
        key: Option<&str>,
    ) -> Result<SendResult, ClientError> {
        self.call(&send_op(to, text, reply_to, key))
    }

    /// Deliver what is waiting. Give a `batch` to make a retry safe.
    pub fn inbox(&mut self, batch: Option<&str>) -> Result<InboxResult, ClientError> {
        self.call(&Op::Inbox { batch: batch.map(str::to_owned) })
    }

    /// For hooks: the same as [`Client::inbox`].
    pub fn pending(&mut self, batch: Option<&str>) -> Result<InboxResult, ClientError> {
        self.inbox(batch)
    }

    pub fn team(&mut self) -> Result<TeamResult, ClientError> {
        self.call(&Op::Team {})
    }

    pub fn status(&mut self) -> Result<StatusResult, ClientError> {
        self.call(&Op::Status {})
    }

    pub fn audit(&mut self, query: AuditQuery) -> Result<AuditResult, ClientError> {
        self.call(&Op::Audit(query))
    }

    pub fn allow(&mut self, a: &str, b: &str) -> Result<Done, ClientError> {
        self.call(&Op::Allow { a: a.to_owned(), b: b.to_owned() })
    }

    pub fn quarantine_lift(&mut self, agent: &str) -> Result<Done, ClientError> {
        self.call(&Op::QuarantineLift { agent: agent.to_owned() })
    }

    pub fn admission_import(
        &mut self,
        ratings: Ratings,
        source: &str,
        notes: Vec<String>,
    ) -> Result<Done, ClientError> {
        self.call(&Op::AdmissionImport { ratings, source: source.to_owned(), notes })
    }

    pub fn admission_mode(&mut self, mode: Mode) -> Result<Done, ClientError> {
        self.call(&Op::AdmissionMode { mode })
    }

    pub fn admission_except(&mut self, component: ComponentId, remove: bool) -> Result<Done, ClientError> {
        self.call(&Op::AdmissionExcept { component, remove })
    }

    /// Hook: record the harness session (Codex thread) id of the caller's session (ID4).
    pub fn session_start(&mut self, harness: &str, session_id: &str) -> Result<Done, ClientError> {
        self.call(&Op::Hook {
            harness: harness.to_owned(),
            event: HookEvent::SessionStart,
            session_id: Some(session_id.to_owned()),
            prompt: None,
        })
    }

    /// Hook: a prompt was submitted in the caller's session; a person's resets the turn fuse.
    pub fn user_prompt(&mut self, harness: &str, session_id: Option<&str>, prompt: &str) -> Result<Done, ClientError> {
        self.call(&Op::Hook {
            harness: harness.to_owned(),
            event: HookEvent::UserPromptSubmit,
            session_id: session_id.map(str::to_owned),
            prompt: Some(prompt.to_owned()),
        })
    }

    pub fn reload(&mut self) -> Result<Done, ClientError> {
        self.call(&Op::Reload {})
    }

    pub fn shutdown(&mut self) -> Result<Done, ClientError> {
        self.call(&Op::Shutdown {})
    }

    /// Serve the dashboard (or `stop` it); see [`Op::Dashboard`].
    pub fn dashboard(
        &mut self,
        port: Option<u16>,
        show_text: bool,
        stop: bool,
    ) -> Result<DashboardResult, ClientError> {
        self.call(&Op::Dashboard { port, show_text, stop })
    }
}

/// The `send` request.
pub fn send_op(to: &str, text: &str, reply_to: Option<&str>, key: Option<&str>) -> Op {
    Op::Send {
        to: to.to_owned(),
        text: text.to_owned(),
        reply_to: reply_to.map(str::to_owned),
        key: key.map(str::to_owned),
    }
}

/// Start `agentfw daemon --home …` detached: its own process group, no terminal, output to
/// the home's `daemon.log`. A daemon that loses a start race exits by itself.
#[allow(clippy::disallowed_types)] // the adapter owns files
pub fn start_daemon(home: &Home) -> Result<(), ClientError> {
    use std::os::unix::fs::OpenOptionsExt;
    if !home.dir.is_dir() {
        return Err(ClientError::Start(format!("its home `{}` no longer exists", home.dir.display())));
    }
    let exe = std::env::current_exe().map_err(|e| ClientError::Start(format!("cannot find this program: {e}")))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(home.log())
        .map_err(|e| ClientError::Start(format!("cannot open `{}`: {e}", home.log().display())))?;
    let mut child = Command::new(exe)
        .arg("daemon")
        .arg("--home")
        .arg(&home.dir)
        .current_dir(&home.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .process_group(0)
        .spawn()
        .map_err(|e| ClientError::Start(e.to_string()))?;
    // Reap it if it exits while we live (a daemon that lost the start race).
    let _ = std::thread::Builder::new().name("agentfw-daemon-reaper".into()).spawn(move || child.wait());
    Ok(())
}

/// A client that reconnects (and restarts the daemon) when its connection is lost.
#[derive(Debug)]
pub struct Reconnecting {
    home: Home,
    client: Option<Client>,
    /// Hello as this kind of client after each connect.
    kind: String,
}

impl Reconnecting {
    pub fn new(home: Home, kind: &str) -> Self {
        Self { home, client: None, kind: kind.to_owned() }
    }

    /// Connect now (starting the daemon if needed), so later calls are quick.
    pub fn warm_up(&mut self) -> Result<HelloResult, ClientError> {
        let kind = self.kind.clone();
        let hello = self.client()?.hello(&kind);
        if hello.is_err() {
            self.client = None;
        }
        hello
    }

    fn client(&mut self) -> Result<&mut Client, ClientError> {
        if self.client.is_none() {
            self.client = Some(Client::connect_or_start(&self.home)?);
        }
        self.client.as_mut().ok_or_else(|| ClientError::Protocol("no connection".into()))
    }

    /// Send an idempotent request, retrying on a lost connection.
    pub fn call<T: DeserializeOwned>(&mut self, op: &Op) -> Result<T, ClientError> {
        let mut last = None;
        for attempt in 0..4u64 {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(20 * attempt));
            }
            let result = self.client().and_then(|c| c.call(op));
            match result {
                Err(e) if e.is_connection() => {
                    self.client = None;
                    last = Some(e);
                }
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| ClientError::Protocol("no attempt made".into())))
    }
}
