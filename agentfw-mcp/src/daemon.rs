//! `agentfw daemon`: one per user per home, on a Unix socket in the user's runtime
//! directory (see [`crate::home`]).
//!
//! - **One daemon.** It takes an exclusive `flock` on its lock file before touching the
//!   socket; a second daemon for the same home exits with an error naming the first. A
//!   socket left by a daemon that died is removed; one that answers is never replaced.
//! - **Identity from the kernel.** For every connection the peer's pid and uid come from
//!   `SO_PEERCRED`; a peer of another uid is refused, and the pid's ancestry (from `/proc`,
//!   [`crate::procfs`]) decides the agent session (ID1). The identity is fixed for the
//!   connection: nothing the client sends can change it. An admin request is placed again
//!   when it comes ([`crate::admin`], AM6), and refused if the process that connected is gone.
//! - **Bounded.** At most [`MAX_CONNECTIONS`] connections at once (one user's daemon: they
//!   are all that user's), [`MAX_PER_PEER`] of them from one process, and
//!   [`proto::MAX_REQUEST_BYTES`] buffered per connection; the excess is refused with
//!   `daemon.busy` or `proto.too_large`, and the connection closed. A connection with no
//!   complete first request within `FIRST_REQUEST` is closed.
//! - **One engine thread** owns the firewall and the database ([`crate::engine`]); socket
//!   tasks hand it requests and wait for its answer. It also runs the firewall's timeouts
//!   (`Input::Timeout` when `poll_timeout` falls due), snapshots, rule reloads, retention
//!   and wake-ups. The loop reads the clock for each request and tick and hands the time to
//!   the engine, which never reads it itself.
//! - It serves `agentfw dashboard` ([`crate::dashboard`]) on the same runtime when a person
//!   asks, until asked to stop or until the daemon stops.
//! - It stops on SIGTERM/SIGINT, on `shutdown` from a person, or when its home is deleted
//!   (so a test's temporary home never leaves a daemon behind), after a final snapshot.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::mpsc;

use agentfw_core::identity::{Placement, Resolver};
use agentfw_core::time::Timestamp;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Notify, Semaphore, oneshot};

use crate::config::{ConfigError, DaemonConfig};
use crate::dashboard::{self, Dashboard};
use crate::engine::{Caller, Engine};
use crate::home::{Home, HomeError, uid};
use crate::procfs::{self, ProcClock};
use crate::proto::{self, ErrorBody, Op, Response, code};
use crate::relay_link::{self, FromLink};
use crate::store::StoreError;
use crate::{clock, pins, wake};

/// Most connections served at once. Each costs a task, a buffer of up to
/// [`proto::MAX_REQUEST_BYTES`] and, while its caller is decided, a blocking thread.
pub const MAX_CONNECTIONS: usize = 64;

/// Most connections one process holds at once, so that one leaking or hung client cannot
/// take the slots every other agent needs (an `agentfw mcp` server holds one, a command one).
pub const MAX_PER_PEER: usize = 8;

/// How long a new connection may wait before its first complete request: one that sends
/// nothing is closed then and its slot freed.
const FIRST_REQUEST: std::time::Duration = std::time::Duration::from_secs(10);

/// Connections held per peer process, for [`MAX_PER_PEER`].
type PerPeer = Arc<std::sync::Mutex<std::collections::HashMap<u32, usize>>>;

/// A peer's share of [`MAX_PER_PEER`], given back when its connection ends.
struct PeerSlot {
    peers: PerPeer,
    pid: u32,
}

impl PeerSlot {
    /// A slot for `pid`, or `None` when it holds [`MAX_PER_PEER`] already.
    fn take(peers: &PerPeer, pid: u32) -> Option<Self> {
        let mut held = peers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = held.entry(pid).or_insert(0);
        if *n >= MAX_PER_PEER {
            return None;
        }
        *n += 1;
        Some(Self { peers: Arc::clone(peers), pid })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut held = self.peers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = held.get_mut(&self.pid) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.pid);
            }
        }
    }
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("the agentfw daemon is not supported on this platform yet: it needs Linux (peer credentials and `/proc`)")]
    Unsupported,
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error("another agentfw daemon{} already serves this home (socket `{socket}`)", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    AlreadyRunning { pid: Option<u32>, socket: String },
    #[error("cannot listen on `{path}`: {source}")]
    Listen { path: String, source: io::Error },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("identity configuration: {0}")]
    Identity(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(io::Error),
    #[error("relay: {0}")]
    Relay(String),
}

struct Job {
    caller: Arc<Caller>,
    op: Op,
    reply: oneshot::Sender<Result<Value, ErrorBody>>,
}

/// What the engine thread takes: requests from sockets, news from the relay link, and the
/// dashboard's questions.
enum Work {
    Request(Job),
    Relay(FromLink),
    Dashboard(dashboard::Query),
}

/// How much is read from a connection at a time, into the line being gathered (up to
/// [`proto::MAX_REQUEST_BYTES`]); nothing is held between requests (see [`Lines`]).
const READ_BUFFER: usize = 8 * 1024;

/// Most requests answered by one sync of the database.
const GROUP_MAX: usize = MAX_CONNECTIONS;

type Answer = Result<Value, ErrorBody>;

/// Group commit: the answers of the requests handled since the last [`Engine::sync`]. Each
/// request commits on its own, so one that fails takes no other with it, but none is
/// answered before a sync made its commit durable; the requests that arrive meanwhile
/// share the next sync, so throughput grows with the number of agents sending.
#[derive(Default)]
struct Group {
    answers: Vec<(oneshot::Sender<Answer>, Answer)>,
}

impl Group {
    fn push(&mut self, reply: oneshot::Sender<Answer>, answer: Answer) {
        self.answers.push((reply, answer));
    }

    fn full(&self) -> bool {
        self.answers.len() >= GROUP_MAX
    }

    /// After the sync: every answer, or, if the sync failed, its error for every request.
    fn answer(&mut self, synced: Result<(), ErrorBody>) {
        for (reply, answer) in self.answers.drain(..) {
            let _ = reply.send(match &synced {
                Ok(()) => answer,
                Err(e) => Err(e.clone()),
            });
        }
    }
}

/// Run the daemon for `home` in the foreground until it is stopped. `relay` overrides the
/// relay URL `agentfw join` wrote into the configuration.
pub fn run(home: &Home, relay: Option<&str>) -> Result<(), DaemonError> {
    if !cfg!(target_os = "linux") {
        return Err(DaemonError::Unsupported);
    }
    let _lock = lock(home)?;
    if home.socket.exists() {
        if std::os::unix::net::UnixStream::connect(&home.socket).is_ok() {
            return Err(DaemonError::AlreadyRunning {
                pid: home.daemon_pid(),
                socket: home.socket.display().to_string(),
            });
        }
        let _ = std::fs::remove_file(&home.socket);
    }
    let config = DaemonConfig::of_home(&home.dir)?;
    let resolver = Arc::new(Identities::new(home, &config)?);

    let (wake_tx, wake_rx) = mpsc::channel::<wake::Job>();
    std::thread::Builder::new()
        .name("agentfw-wake".into())
        .spawn(move || {
            while let Ok(job) = wake_rx.recv() {
                let _ = std::thread::Builder::new().name("agentfw-wake-job".into()).spawn(move || wake::run(&job));
            }
        })
        .map_err(DaemonError::Runtime)?;
    let config_relay = config.relay.clone();
    let mut engine = Engine::open(home.clone(), config, Some(wake_tx), clock::now())?;
    let proc_clock = engine.proc_clock();

    // Two workers. One made fewer hand-offs (threads scheduled in per send 9.6 -> 8.2 in the
    // daemon benchmark) but left the daemon at 69 MB after the benchmark's load instead of
    // 48 (the other threads' allocator arenas: 44 MiB against 23.5), the build otherwise
    // the same.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("agentfw-daemon")
        .enable_all()
        .build()
        .map_err(DaemonError::Runtime)?;
    let listener = {
        let _guard = runtime.enter();
        let listener = UnixListener::bind(&home.socket)
            .map_err(|source| DaemonError::Listen { path: home.socket.display().to_string(), source })?;
        let _ = std::fs::set_permissions(&home.socket, std::fs::Permissions::from_mode(0o600));
        listener
    };
    // Owner-only whatever the umask, like everything in the home.
    if let Err(e) = crate::keystore::write_private(&home.pid_file(), format!("{}\n", std::process::id()).as_bytes()) {
        eprintln!("agentfw daemon: {e}");
    }
    eprintln!(
        "agentfw daemon {}: listening on {} for {} (pid {})",
        crate::engine::version(),
        home.socket.display(),
        home.dir.display(),
        std::process::id()
    );

    let stopped = Arc::new(Notify::new());
    let (jobs_tx, jobs_rx) = mpsc::channel::<Work>();
    if let Some((link, name)) =
        relay_link::start_for(home, &config_relay, relay, &runtime, jobs_tx.clone(), Work::Relay)
            .map_err(DaemonError::Relay)?
    {
        engine.attach_relay(link, name)?;
    }
    let dashboard = {
        let jobs = jobs_tx.clone();
        let line: dashboard::EngineLine = Box::new(move |query| jobs.send(Work::Dashboard(query)).is_ok());
        let command = dashboard::view::command_prefix(&home.dir, Home::default_dir().as_deref());
        Dashboard::new(runtime.handle().clone(), line, command)
    };
    engine.attach_dashboard(Arc::clone(&dashboard));
    let engine_stopped = Arc::clone(&stopped);
    let engine_thread = std::thread::Builder::new()
        .name("agentfw-engine".into())
        .spawn(move || {
            let mut group = Group::default();
            loop {
                let wait = engine.tick(clock::now());
                if engine.should_stop() {
                    break;
                }
                // Work that arrived while the last group was made durable joins this one.
                let waiting = if group.full() { None } else { jobs_rx.try_recv().ok() };
                let work = match waiting {
                    Some(work) => work,
                    None => {
                        group.answer(engine.sync());
                        match jobs_rx.recv_timeout(wait) {
                            Ok(work) => work,
                            Err(mpsc::RecvTimeoutError::Timeout) => continue,
                            Err(mpsc::RecvTimeoutError::Disconnected) => break,
                        }
                    }
                };
                match work {
                    Work::Relay(news) => engine.relay_input(clock::now(), news),
                    Work::Dashboard(query) => engine.dashboard_answer(clock::now(), query),
                    Work::Request(job) => {
                        group.push(job.reply, engine.handle(clock::now(), &job.caller, job.op));
                        if engine.should_stop() {
                            break;
                        }
                    }
                }
            }
            group.answer(engine.sync());
            engine.shutdown(clock::now());
            engine_stopped.notify_one();
        })
        .map_err(DaemonError::Runtime)?;

    runtime.block_on(serve(listener, jobs_tx, resolver, proc_clock, Arc::clone(&stopped)));
    dashboard.shutdown();
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    let _ = engine_thread.join();
    let _ = std::fs::remove_file(&home.socket);
    let _ = std::fs::remove_file(home.pid_file());
    eprintln!("agentfw daemon: stopped");
    Ok(())
}

/// The exclusive lock that makes this the home's only daemon, held while the file lives.
/// `agentfw keys rotate` holds it too, so that no daemon starts with the old keys while the
/// relay retires them.
#[allow(clippy::disallowed_types)] // the adapter owns files
pub fn lock(home: &Home) -> Result<std::fs::File, DaemonError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&home.lock)
        .map_err(|source| DaemonError::Listen { path: home.lock.display().to_string(), source })?;
    // A daemon that is stopping still holds the lock for a moment: wait for it, unless
    // the socket answers (then another daemon is really running).
    for _ in 0..500 {
        if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok() {
            return Ok(file);
        }
        if std::os::unix::net::UnixStream::connect(&home.socket).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Err(DaemonError::AlreadyRunning { pid: home.daemon_pid(), socket: home.socket.display().to_string() })
}

/// The resolver, built again when the pinned digests change (`agentfw identity pin`).
#[derive(Debug)]
pub struct Identities {
    dir: std::path::PathBuf,
    current: std::sync::Mutex<(Option<pins::Stamp>, Arc<Resolver>)>,
}

impl Identities {
    fn new(home: &Home, config: &DaemonConfig) -> Result<Self, DaemonError> {
        let resolver = Resolver::new(config.identity.clone()).map_err(|e| DaemonError::Identity(e.to_string()))?;
        let current = (pins::stamp(&home.dir), Arc::new(resolver));
        Ok(Self { dir: home.dir.clone(), current: std::sync::Mutex::new(current) })
    }

    /// The resolver for the pins as they are now. A pins file that cannot be used keeps the
    /// last good resolver (and says so in the log).
    fn resolver(&self) -> Arc<Resolver> {
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let stamp = pins::stamp(&self.dir);
        if stamp != current.0 {
            current.0 = stamp;
            let rebuilt = DaemonConfig::of_home(&self.dir)
                .map_err(|e| e.to_string())
                .and_then(|c| Resolver::new(c.identity).map_err(|e| e.to_string()));
            match rebuilt {
                Ok(resolver) => {
                    eprintln!("agentfw daemon: the pinned harness digests changed; identities use them from now on");
                    current.1 = Arc::new(resolver);
                }
                Err(e) => eprintln!("agentfw daemon: keeping the pinned digests as they were: {e}"),
            }
        }
        Arc::clone(&current.1)
    }
}

async fn serve(
    listener: UnixListener,
    jobs: mpsc::Sender<Work>,
    resolver: Arc<Identities>,
    clock: ProcClock,
    stopped: Arc<Notify>,
) {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
    let mut connections = tokio::task::JoinSet::new();
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let peers = PerPeer::default();
    loop {
        while connections.try_join_next().is_some() {}
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((mut stream, _)) => {
                    let pid = stream.peer_cred().ok().and_then(|c| c.pid()).and_then(|p| u32::try_from(p).ok()).unwrap_or(0);
                    let taken = PeerSlot::take(&peers, pid).map(|peer| (peer, Arc::clone(&slots).try_acquire_owned()));
                    let refusal = match &taken {
                        None => Some(format!("process {pid} already holds {MAX_PER_PEER} connections to the agentfw daemon, the most it takes from one process; this one is closed: close the ones it does not use")),
                        Some((_, Err(_))) => Some(format!("the agentfw daemon already serves {MAX_CONNECTIONS} connections, the most it takes; this one is closed: try again when others have finished")),
                        Some((_, Ok(_))) => None,
                    };
                    let Some((peer, Ok(slot))) = taken else {
                        let body = ErrorBody::new(code::BUSY, refusal.unwrap_or_default());
                        // Told without waiting on a client that may not read.
                        let _ = tokio::time::timeout(std::time::Duration::from_millis(100), send(&mut stream, &Response::err(0, body))).await;
                        continue;
                    };
                    let (jobs, resolver) = (jobs.clone(), resolver.resolver());
                    connections.spawn(async move {
                        if let Err(e) = connection(stream, jobs, resolver, clock).await {
                            eprintln!("agentfw daemon: connection: {e}");
                        }
                        drop((slot, peer));
                    });
                }
                Err(e) => {
                    eprintln!("agentfw daemon: accept: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            () = stopped.notified() => break,
            Some(()) = async { match term.as_mut() { Some(s) => s.recv().await, None => std::future::pending().await } } => break,
            Some(()) = async { match int.as_mut() { Some(s) => s.recv().await, None => std::future::pending().await } } => break,
        }
    }
    // Let the engine finish (it notices the dropped sender) before the caller removes the socket.
    drop(jobs);
    // Answers already decided (the `shutdown` request's own, say) reach their clients:
    // connections that end within a moment are waited for, idle ones are not.
    let _ = tokio::time::timeout(std::time::Duration::from_millis(500), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
}

/// Serve one client: decide who it is, then answer its requests in order.
async fn connection(
    stream: UnixStream,
    jobs: mpsc::Sender<Work>,
    resolver: Arc<Resolver>,
    clock: ProcClock,
) -> io::Result<()> {
    let cred = stream.peer_cred()?;
    let (read, mut write) = stream.into_split();
    if cred.uid() != uid() {
        let body = ErrorBody::new(
            code::OTHER_USER,
            format!("this agentfw daemon serves uid {}, not uid {}; each user runs their own", uid(), cred.uid()),
        );
        return send(&mut write, &Response::err(0, body)).await;
    }
    let pid = cred.pid().and_then(|p| u32::try_from(p).ok()).unwrap_or(0);
    let started = procfs::started_at(pid, &clock);
    let placing = Arc::clone(&resolver);
    let caller = tokio::task::spawn_blocking(move || caller(pid, &resolver, &clock))
        .await
        .map_err(|e| io::Error::other(e.to_string()))?;
    let caller = Arc::new(caller);
    let mut lines = Lines { read, pending: Vec::new() };
    let mut first = true;
    loop {
        let next = lines.next(proto::MAX_REQUEST_BYTES);
        let next = if std::mem::take(&mut first) {
            match tokio::time::timeout(FIRST_REQUEST, next).await {
                Ok(next) => next,
                Err(_) => return Ok(()),
            }
        } else {
            next.await
        };
        let line = match next {
            Ok(Some(line)) => line,
            Ok(None) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                let body = ErrorBody::new(
                    code::TOO_LARGE,
                    format!("the request is over {} bytes; the connection is closed", proto::MAX_REQUEST_BYTES),
                );
                return send(&mut write, &Response::err(0, body)).await;
            }
            Err(e) => return Err(e),
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let response = match proto::parse_request(&line) {
            Err((id, body)) => Response::err(id, *body),
            Ok((id, op)) => {
                let caller = if op.is_admin() {
                    let placing = Arc::clone(&placing);
                    let placement = tokio::task::spawn_blocking(move || place(pid, started, &placing, &clock))
                        .await
                        .unwrap_or_else(|e| Placement::Unknown { why: e.to_string() });
                    Arc::new(Caller { placement: Some(placement), ..(*caller).clone() })
                } else {
                    Arc::clone(&caller)
                };
                let (tx, rx) = oneshot::channel();
                let job = Job { caller, op, reply: tx };
                if jobs.send(Work::Request(job)).is_err() {
                    return Ok(());
                }
                match rx.await {
                    Ok(Ok(result)) => Response::ok(id, result),
                    Ok(Err(body)) => Response::err(id, body),
                    Err(_) => return Ok(()),
                }
            }
        };
        send(&mut write, &response).await?;
    }
}

async fn send(write: &mut (impl AsyncWriteExt + Unpin), response: &Response) -> io::Result<()> {
    let mut line = serde_json::to_vec(response).map_err(io::Error::other)?;
    line.push(b'\n');
    write.write_all(&line).await
}

/// A connection's requests, one line each. Between requests nothing is held: a buffer is
/// reserved only once bytes are ready to read, and what is left past a line is kept in a
/// vector of its own size. With a read buffer for each connection for its whole life, 50
/// idle sessions held 400 KiB of the daemon for nothing.
struct Lines {
    read: tokio::net::unix::OwnedReadHalf,
    /// Bytes read past the last line returned; no allocation when there are none.
    pending: Vec<u8>,
}

impl Lines {
    /// The next line without its newline; the rest of the bytes if the peer closed without
    /// one; `None` at the end. A line over `limit` bytes is an `InvalidData` error.
    async fn next(&mut self, limit: usize) -> io::Result<Option<Vec<u8>>> {
        let mut searched = 0;
        loop {
            let newline = self.pending.get(searched..).and_then(|new| new.iter().position(|b| *b == b'\n'));
            if let Some(at) = newline.map(|i| searched + i) {
                if at > limit {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "line too long"));
                }
                let rest = self.pending.split_off(at + 1);
                let mut line = std::mem::replace(&mut self.pending, rest);
                line.pop();
                return Ok(Some(line));
            }
            if self.pending.len() > limit {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "line too long"));
            }
            searched = self.pending.len();
            self.read.readable().await?;
            self.pending.reserve(READ_BUFFER);
            match self.read.try_read_buf(&mut self.pending) {
                Ok(0) => return Ok((!self.pending.is_empty()).then(|| std::mem::take(&mut self.pending))),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if self.pending.is_empty() {
                // Woken for nothing: hold no buffer while waiting again.
                self.pending = Vec::new();
            }
        }
    }
}

/// Where process `pid`, which connected when it had started at `started`, stands for an admin
/// request (AM6). A process that is gone (or whose pid now names another) is unknown: a
/// connection handed on by a process that exited must not borrow a later owner of its pid.
fn place(pid: u32, started: Option<Timestamp>, resolver: &Resolver, clock: &ProcClock) -> Placement {
    if started.is_none() || procfs::started_at(pid, clock) != started {
        return Placement::Unknown { why: format!("the process that connected (pid {pid}) has exited") };
    }
    procfs::placement(resolver, pid, clock)
}

/// Decide who process `pid` is (ID1): its agent session, the agent's project directory, and
/// the environment the harness gave the agent's direct child (where waking details live).
pub fn caller(pid: u32, resolver: &Resolver, clock: &ProcClock) -> Caller {
    match procfs::identify(resolver, pid, clock) {
        Ok((identity, snapshot)) => {
            let agent = snapshot.get(identity.pid);
            let project_dir = agent.and_then(|p| p.git_root.clone().or_else(|| p.cwd.clone()));
            let child = identity.chain.iter().rev().nth(1).and_then(|step| snapshot.get(step.pid));
            let env = child.map(|p| p.env.clone()).unwrap_or_default();
            Caller { pid, identity: Ok(identity), project_dir, env, placement: None }
        }
        Err(e) => {
            Caller { pid, identity: Err(e.to_string()), project_dir: None, env: Default::default(), placement: None }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn pending(group: &mut Group, answer: Answer) -> oneshot::Receiver<Answer> {
        let (reply, answered) = oneshot::channel();
        group.push(reply, answer);
        answered
    }

    /// No request of a group hears anything before its sync; then each its own answer.
    #[test]
    fn a_group_is_answered_only_after_its_sync() {
        let mut group = Group::default();
        let mut sent = pending(&mut group, Ok(serde_json::json!({"id": "m1"})));
        let mut refused = pending(&mut group, Err(ErrorBody::new(code::REFUSED, "no")));
        assert!(sent.try_recv().is_err() && refused.try_recv().is_err());
        group.answer(Ok(()));
        assert_eq!(sent.try_recv().unwrap().unwrap()["id"], "m1");
        assert_eq!(refused.try_recv().unwrap().unwrap_err().code, code::REFUSED);
        assert!(group.answers.is_empty());
    }

    /// A sync that fails is every request's answer: none is told it was stored.
    #[test]
    fn a_failed_sync_acknowledges_nothing() {
        let mut group = Group::default();
        let answered: Vec<_> = (0..3).map(|i| pending(&mut group, Ok(serde_json::json!({"id": i})))).collect();
        group.answer(Err(ErrorBody::new(code::STORAGE, "the write-ahead log could not be made durable")));
        for mut a in answered {
            assert_eq!(a.try_recv().unwrap().unwrap_err().code, code::STORAGE);
        }
    }
}
