//! `agentfw dashboard`: a live, read-only page about this machine, served by the daemon.
//!
//! A person asks for it with the `dashboard` op (an admin request: the page shows every
//! agent's metadata). The daemon then listens on `127.0.0.1` only, on the port asked for or
//! a free one, and answers with a URL holding a one-time token. The page shows the team,
//! each pair's conversation as a timeline of decisions, the turn fuse and rate against
//! their limits, quarantines, remembered refusals (fingerprints, never text), admission and
//! the rules in force; message text only when asked for with `--show-text`, and then only
//! of messages the firewall accepted. Nothing on the page acts: it shows the command to run
//! instead, so every action that lowers protection stays on the command line, where the
//! daemon checks who is calling.
//!
//! | module | what it holds |
//! |---|---|
//! | [`feed`] | the engine's decisions and changes, published after each commit |
//! | [`guard`] | who may read: the token, the session cookie, `Host` and `Origin` |
//! | [`http`] | the HTTP server (hyper), its routes and the event stream |
//! | [`view`] | what the page is sent, and the commands it shows, quoted for a shell |
//!
//! The engine thread owns the data; the server's tasks ask it through [`Query`]s that the
//! daemon's loop hands to [`crate::engine::Engine::dashboard_answer`]. The server stops when
//! asked (`--stop`) or when the daemon stops ([`Dashboard::shutdown`]).

pub mod feed;
pub mod guard;
pub mod http;
pub mod view;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{oneshot, watch};

use crate::proto::DashboardResult;
pub use feed::{Feed, News};
use guard::Auth;

/// Why the dashboard cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    #[error("cannot listen on 127.0.0.1:{port}: {source}; choose another `--port`, or leave it out for a free one")]
    Listen { port: u16, source: std::io::Error },
    #[error("no randomness from the operating system for the dashboard's token")]
    NoRandomness,
    #[error("the daemon is stopping")]
    Stopping,
}

/// What a server task asks the engine thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    /// Everything but the decisions ([`view::State`]), as JSON.
    State,
    /// The latest decisions, oldest first, as a JSON array of audit records.
    Backlog,
}

/// A question for the engine thread and where its answer (JSON text) goes.
#[derive(Debug)]
pub struct Query {
    pub ask: Ask,
    pub reply: oneshot::Sender<Result<String, String>>,
}

/// Hands a query to the engine thread; false once the engine is gone.
pub type EngineLine = Box<dyn Fn(Query) -> bool + Send + Sync>;

/// The dashboard of one daemon: at most one server at a time.
pub struct Dashboard {
    runtime: tokio::runtime::Handle,
    /// `None` once the daemon stops, so that nothing here keeps the engine's queue open.
    engine: Mutex<Option<EngineLine>>,
    pub feed: Feed,
    /// `agentfw`, or `AGENTFW_HOME='…' agentfw` for a daemon outside the default home: the
    /// start of every command the page shows.
    pub command: String,
    /// This machine's host name.
    pub machine: String,
    serving: Mutex<Option<Serving>>,
}

impl std::fmt::Debug for Dashboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let port = lock(&self.serving).as_ref().map(|s| s.port);
        f.debug_struct("Dashboard").field("port", &port).finish()
    }
}

struct Serving {
    port: u16,
    auth: Arc<Auth>,
    stop: watch::Sender<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Dashboard {
    /// A dashboard whose server runs on `runtime` and asks the engine through `engine`.
    pub fn new(runtime: tokio::runtime::Handle, engine: EngineLine, command: String) -> Arc<Self> {
        Arc::new(Self {
            runtime,
            engine: Mutex::new(Some(engine)),
            feed: Feed::default(),
            command,
            machine: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_owned())
                .unwrap_or_else(|_| "this machine".to_owned()),
            serving: Mutex::new(None),
        })
    }

    /// Serve on `port` (a free one if `None`; the running server's if one runs and no other
    /// port is asked for) and mint a one-time token for the URL.
    pub fn serve(self: &Arc<Self>, port: Option<u16>, show_text: bool) -> Result<DashboardResult, DashboardError> {
        if lock(&self.engine).is_none() {
            return Err(DashboardError::Stopping);
        }
        self.feed.set_show_text(show_text);
        let mut serving = lock(&self.serving);
        if let Some(s) = serving.as_ref().filter(|s| port.is_none_or(|p| p == s.port)) {
            let token = s.auth.mint().ok_or(DashboardError::NoRandomness)?;
            return Ok(result(s.port, Some(&token), show_text, "the dashboard is already running; here is a new link"));
        }
        if let Some(old) = serving.take() {
            let _ = old.stop.send(true);
        }
        let asked = port.unwrap_or(0);
        let listener = std::net::TcpListener::bind(("127.0.0.1", asked))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|source| DashboardError::Listen { port: asked, source })?;
        let port = listener.local_addr().map_err(|source| DashboardError::Listen { port: asked, source })?.port();
        let listener = {
            let _runtime = self.runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(|source| DashboardError::Listen { port, source })?
        };
        let auth = Arc::new(Auth::new(port));
        let token = auth.mint().ok_or(DashboardError::NoRandomness)?;
        let (stop, stopped) = watch::channel(false);
        self.runtime.spawn(http::serve(listener, Arc::clone(self), Arc::clone(&auth), stopped));
        *serving = Some(Serving { port, auth, stop });
        Ok(result(port, Some(&token), show_text, "serving the dashboard"))
    }

    /// Stop the server, if one runs.
    pub fn stop(&self) -> DashboardResult {
        match lock(&self.serving).take() {
            Some(s) => {
                let _ = s.stop.send(true);
                result(s.port, None, self.feed.show_text(), &format!("the dashboard on port {} is stopped", s.port))
            }
            None => result(0, None, false, "no dashboard was running"),
        }
    }

    /// The daemon is stopping: stop the server and let go of the engine's queue.
    pub fn shutdown(&self) {
        self.stop();
        lock(&self.engine).take();
    }

    /// Ask the engine thread; `None` when the daemon is stopping.
    pub async fn ask(&self, ask: Ask) -> Option<Result<String, String>> {
        let (reply, answer) = oneshot::channel();
        let sent = lock(&self.engine).as_ref().is_some_and(|line| line(Query { ask, reply }));
        if !sent {
            return None;
        }
        answer.await.ok()
    }
}

fn result(port: u16, token: Option<&str>, show_text: bool, message: &str) -> DashboardResult {
    DashboardResult {
        url: token.map(|t| format!("http://127.0.0.1:{port}/?token={t}")),
        port,
        show_text,
        message: message.to_owned(),
    }
}
