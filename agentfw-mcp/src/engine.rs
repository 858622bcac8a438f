//! The daemon's engine: the core [`Firewall`] and the SQLite store, driven by one thread.
//!
//! Every request that changes something runs in one `BEGIN IMMEDIATE … COMMIT`
//! transaction, and the daemon answers only after the commit. In order:
//!
//! 1. **Journal first.** Each firewall input is written to `journal` (time, a fresh RNG
//!    seed, the input) before the firewall sees it, then fed to the firewall with that time
//!    and an RNG built from that seed. The core is deterministic, so the snapshot plus the
//!    journal replayed in order rebuilds exactly the state it had (message ids and fence
//!    markers included).
//! 2. **Effects in the same transaction.** An accepted message's inbox row, the delivered or
//!    refused mark of a delivery with its fenced text, audit rows (metadata only), the
//!    outcome of a keyed send: all written before the commit.
//! 3. **Commit, make durable, then answer.** The daemon's loop answers a group of requests
//!    after one [`Engine::sync`] made all their commits durable (group commit); what a commit
//!    sends to the relay or the dashboard is held until then too. A crash before the sync
//!    leaves no acknowledged trace of the request (the client never heard "accepted", and
//!    the firewall state that died with the process was never saved). A crash after it
//!    loses nothing acknowledged. If a write fails (a full
//!    disk: `SQLITE_FULL`), the transaction is rolled back, the in-memory firewall is
//!    rebuilt from the database, and the caller gets a clear error: nothing half-written.
//! 4. **Answering is idempotent.** The one gap is a crash between the commit and the
//!    answer. A send carries a client `key`: the same key returns the stored outcome rather
//!    than sending again. An inbox read carries a client `batch`: the rows delivered are
//!    marked with it, in the transaction, with their fenced text, and the same batch
//!    returns them again. So a client that retries after losing its connection gets each
//!    message exactly once. (A client that dies after receiving a batch has received it;
//!    there is no later point at which the daemon could know better.) Text of a batch is
//!    erased when the same recipient asks for its next batch.
//!
//! A refusal or a containment event (quarantine, remembered text) also writes a snapshot in
//! its transaction and drops the journal, so refused text (a secret, an injection) does not
//! linger in the journal, and containment survives a restart even if the rules changed.
//! Otherwise a snapshot is taken every 500 inputs or 30 seconds.
//!
//! The engine's operations live in one module each: [`journal`] (transactions, the journal,
//! snapshots, firewall events into audit rows), [`sessions`] (who is calling, finding a
//! recipient, admission refresh), [`send`], [`inbox`], [`trust`] (the trust file handed
//! to the firewall), [`hooks`], [`admin`], [`status`] (`hello`, `team`, `status`,
//! `audit`), [`rules`], [`waking`] (WK1, WK2), [`tick`] (what the daemon's loop runs between
//! requests), [`relay`] (the link to other devices) and [`dashboard`] (`agentfw dashboard`).
//! They decide; what they persist goes through [`crate::store`], which holds all the SQL.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use agentfw_core::admission::Ratings;
use agentfw_core::firewall::Firewall;
use agentfw_core::identity::{Identity, Placement};
use agentfw_core::message::{Agent, AgentId};
use agentfw_core::policy::{Reloadable, RuleSet};
use agentfw_core::time::Timestamp;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::Value;

use crate::config::DaemonConfig;
use crate::home::Home;
use crate::procfs::{self, ProcClock};
use crate::proto::{Done, ErrorBody, Op, RulesInfo, code};
use crate::store::{self, Store, StoreError};
use crate::trust::Trust;
use crate::{clock, wake};

mod admin;
mod dashboard;
mod hooks;
mod inbox;
mod journal;
mod relay;
mod rules;
mod send;
mod sessions;
mod status;
#[cfg(test)]
mod tests;
mod tick;
mod trust;
mod waking;

use rules::{compile_rules, stamp};
use sessions::Session;

/// Who is asking, as the daemon decided it from the kernel and `/proc`.
#[derive(Clone, Debug)]
pub struct Caller {
    pub pid: u32,
    /// The agent session, or why the caller is none.
    pub identity: Result<Identity, String>,
    /// The agent's git root, else working directory.
    pub project_dir: Option<String>,
    /// Environment of the agent's direct child on the walk: what the harness gave it.
    pub env: BTreeMap<String, String>,
    /// For an admin request: where the caller stands (AM6). `None` is never a person.
    pub placement: Option<Placement>,
}

/// Why a request failed.
#[derive(Debug)]
pub enum EngineError {
    Reply(ErrorBody),
    Store(StoreError),
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> Self {
        EngineError::Store(e)
    }
}

impl From<serde_json::Error> for EngineError {
    fn from(e: serde_json::Error) -> Self {
        EngineError::Store(e.into())
    }
}

impl From<ErrorBody> for EngineError {
    fn from(e: ErrorBody) -> Self {
        EngineError::Reply(e)
    }
}

impl EngineError {
    pub fn body(self) -> ErrorBody {
        match self {
            EngineError::Reply(body) => body,
            EngineError::Store(e @ StoreError::Full) => ErrorBody::new(code::STORAGE_FULL, e.to_string()),
            EngineError::Store(e) => ErrorBody::new(code::STORAGE, e.to_string()),
        }
    }
}

fn reply(code: &str, message: impl Into<String>) -> EngineError {
    EngineError::Reply(ErrorBody::new(code, message))
}

/// The engine. One thread owns it; see the module docs for its transactions.
pub struct Engine {
    home: Home,
    config: DaemonConfig,
    db: Store,
    fw: Firewall,
    rules: Arc<Reloadable>,
    rules_info: RulesInfo,
    rules_stamp: Vec<(PathBuf, Option<SystemTime>, u64)>,
    /// The trust file (TR1) on disk, handed to the firewall when it changes.
    trust: Trust,
    sessions: BTreeMap<AgentId, Session>,
    ratings: Ratings,
    clock: ProcClock,
    seeds: ChaCha20Rng,
    journal_rows: u64,
    last_snapshot: Timestamp,
    /// The firewall changed inside the current transaction.
    touched: bool,
    /// A containment or refusal happened: snapshot before committing.
    security_dirty: bool,
    /// Text was erased in the current transaction: truncate the WAL after committing, so
    /// it does not linger there ([`store::purge`]).
    erased: bool,
    /// A delivered batch's text was erased since the last truncation of the WAL: the next
    /// snapshot truncates it (within [`journal::SNAPSHOT_AFTER_MS`]), as it does for the
    /// journal entries that carried the same text.
    unpurged: bool,
    refreshes: Vec<Agent>,
    /// Recipients of messages accepted in the current transaction (waking after commit).
    accepted_for: Vec<AgentId>,
    wake_tx: Option<std::sync::mpsc::Sender<wake::Job>>,
    started_at: Timestamp,
    next_housekeeping: Timestamp,
    next_rules_check: Timestamp,
    next_timeout: Timestamp,
    stop: bool,
    /// The relay link, when this device joined one (`engine/relay.rs`).
    relay: Option<relay::RelaySide>,
    /// The dashboard this daemon serves (`engine/dashboard.rs`), and the decisions of the
    /// current transaction it publishes after the commit.
    dashboard: Option<Arc<crate::dashboard::Dashboard>>,
    feed_pending: Vec<crate::dashboard::feed::DecisionView>,
    /// What commits decided that leaves the process, held until they are durable
    /// ([`Engine::sync`]).
    held: journal::Held,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("home", &self.home.dir).field("sessions", &self.sessions.len()).finish()
    }
}

impl Engine {
    /// Open the home's database, restore the firewall (snapshot + journal), load sessions,
    /// ratings and rules.
    pub fn open(
        home: Home,
        config: DaemonConfig,
        wake_tx: Option<std::sync::mpsc::Sender<wake::Job>>,
        now: Timestamp,
    ) -> Result<Self, StoreError> {
        let db = store::open(&home.db(), &config.storage)?;
        let proc_clock = stable_clock(&db)?;
        let ratings = db.ratings()?;
        // The user's rules if they compile, else the default pack alone (and `status` says why).
        let (first, rules_info) = match compile_rules(&home.rules()) {
            Ok((set, files)) => {
                let rules = set.rules().count();
                (set, RulesInfo { rules, user_files: files, error: None })
            }
            Err(e) => {
                eprintln!(
                    "agentfw daemon: rule files in `{}` do not compile; using the default pack:\n{e}",
                    home.rules().display()
                );
                let set = RuleSet::default_pack().map_err(|e| StoreError::Corrupt(e.to_string()))?;
                let rules = set.rules().count();
                (set, RulesInfo { rules, user_files: 0, error: Some(e.to_string()) })
            }
        };
        let rules_stamp = stamp(&home.rules());
        let trust = Trust::new(&home.dir);
        let rules = Arc::new(Reloadable::new(first));
        let fw = Firewall::new(config.firewall.clone());
        let mut engine = Self {
            home,
            config,
            db,
            fw,
            rules,
            rules_info,
            rules_stamp,
            trust,
            sessions: BTreeMap::new(),
            ratings,
            clock: proc_clock,
            seeds: ChaCha20Rng::from_seed(clock::random_seed()),
            journal_rows: 0,
            last_snapshot: now,
            touched: false,
            security_dirty: false,
            erased: false,
            unpurged: false,
            refreshes: Vec::new(),
            accepted_for: Vec::new(),
            wake_tx,
            started_at: now,
            next_housekeeping: now,
            next_rules_check: now,
            next_timeout: now,
            stop: false,
            relay: None,
            dashboard: None,
            feed_pending: Vec::new(),
            held: journal::Held::default(),
        };
        engine.rebuild()?;
        engine.load_sessions(now)?;
        Ok(engine)
    }

    /// The clock identities are computed with (a boot time stable across restarts).
    pub fn proc_clock(&self) -> ProcClock {
        self.clock
    }

    /// The admin asked the daemon to stop, or its home is gone.
    pub fn should_stop(&self) -> bool {
        self.stop
    }

    /// Handle one request from `caller`.
    pub fn handle(&mut self, now: Timestamp, caller: &Caller, op: Op) -> Result<Value, ErrorBody> {
        let result = match op {
            Op::Hello { client: _ } => self.op_hello(now, caller),
            Op::Send { to, text, reply_to, key } => self.op_send(now, caller, &to, text, reply_to.as_deref(), key),
            Op::Inbox { batch } => self.op_inbox(now, caller, batch),
            Op::Team {} => self.op_team(now, caller),
            Op::Status {} => self.op_status(now, caller),
            Op::Audit(q) => self.op_audit(&q),
            Op::Allow { a, b } => self.op_allow(now, caller, &a, &b),
            Op::QuarantineLift { agent } => self.op_lift(now, caller, &agent),
            Op::AdmissionImport { ratings, source, notes } => self.op_import(now, caller, ratings, &source, &notes),
            Op::AdmissionMode { mode } => self.op_mode(now, caller, mode),
            Op::AdmissionExcept { component, remove } => self.op_except(now, caller, component, remove),
            Op::Hook { harness, event, session_id, prompt } => {
                self.op_hook(now, caller, &harness, event, session_id.as_deref(), prompt.as_deref())
            }
            Op::Reload {} => self.op_reload(caller),
            Op::Shutdown {} => self.op_shutdown(caller),
            Op::Dashboard { port, show_text, stop } => self.op_dashboard(caller, port, show_text, stop),
        };
        self.feed_changed();
        result.map_err(EngineError::body)
    }
}

/// The boot time to compute start times with: remembered per boot, so identities do not
/// shift when `btime` moves by a second after a clock step.
fn stable_clock(db: &Store) -> Result<ProcClock, StoreError> {
    let fresh = || ProcClock::read().unwrap_or(ProcClock::with_boot(0));
    let Some(boot) = procfs::boot_id() else { return Ok(fresh()) };
    let stored_boot = db.meta("boot_id")?;
    let stored_ms = db.meta("boot_ms")?.and_then(|v| v.parse::<u64>().ok());
    if let (Some(b), Some(boot_ms)) = (stored_boot, stored_ms)
        && b == boot
    {
        return Ok(ProcClock::with_boot(boot_ms));
    }
    let clock = fresh();
    db.set_meta("boot_id", &boot)?;
    db.set_meta("boot_ms", &clock.boot_ms.to_string())?;
    Ok(clock)
}

fn done(message: String) -> Result<Value, EngineError> {
    Ok(serde_json::to_value(Done { message })?)
}

/// Tokens (send keys, batches, session ids) are short and plain.
fn check_token(token: &str, what: &str) -> Result<(), EngineError> {
    if token.is_empty()
        || token.len() > 128
        || !token.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
    {
        return Err(reply(
            code::BAD_REQUEST,
            format!("`{what}` must be 1 to 128 letters, digits, `-`, `_`, `.` or `:`"),
        ));
    }
    Ok(())
}

fn one_line(text: &str) -> String {
    agentfw_core::fence::sanitize_line(text).chars().take(80).collect()
}

/// This build's version.
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}
