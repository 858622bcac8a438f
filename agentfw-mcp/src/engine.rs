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
//! 3. **Commit, then answer.** A crash before the commit leaves no trace of the request (the
//!    client never heard "accepted", and the firewall state that died with the process was
//!    never saved). A crash after it loses nothing acknowledged. If a write fails (a full
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

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use agentfw_core::admission::{Component, ComponentId, Mode, Ratings};
use agentfw_core::firewall::{
    Accepted, AdminAction, Decision, Event, Firewall, Input, Outgoing, Output, Reason, Refusal, State, Verdict,
};
use agentfw_core::identity::Identity;
use agentfw_core::message::{Agent, AgentId, MessageId};
use agentfw_core::policy::{Reloadable, RuleSet, Rules, Stage};
use agentfw_core::time::Timestamp;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::components;
use crate::config::DaemonConfig;
use crate::home::Home;
use crate::load::{Files, LoadError};
use crate::procfs::{self, ProcClock};
use crate::proto::{
    self, AgentView, AuditQuery, AuditRecord, AuditResult, Contained, DaemonInfo, DeliveryView, Done, ErrorBody,
    HelloResult, HookEvent, InboxResult, Op, QuarantineView, RefusalInfo, RefusedView, RulesInfo, SendResult,
    StatusResult, TeamResult, code,
};
use crate::store::{self, StoreError, ms};
use crate::trust::{self, Standing, Trust};
use crate::{clock, wake};

mod relay;

/// Most deliveries in one inbox batch.
const BATCH: i64 = 200;
/// Snapshot after this many journalled inputs…
const SNAPSHOT_EVERY: u64 = 500;
/// …or this long after the last one, if anything was journalled.
const SNAPSHOT_AFTER_MS: u64 = 30_000;
/// Gone sessions stay in `team` this long.
const GONE_SHOWN_MS: u64 = 24 * 3600 * 1000;

/// Statements are compiled once and kept in the connection's statement cache: compiling
/// them again for every request cost more than running them.
trait Cached {
    fn exec(&self, sql: &str, params: impl rusqlite::Params) -> rusqlite::Result<usize>;
    fn row<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T>;
}

impl Cached for Connection {
    fn exec(&self, sql: &str, params: impl rusqlite::Params) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn row<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}

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
}

/// A firewall input as the journal keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "input", content = "data", rename_all = "snake_case")]
enum Journaled {
    Send(Outgoing),
    Deliver(Accepted),
    HumanTurn(AgentId),
    Admin(AdminAction),
    Timeout,
}

impl Journaled {
    fn into_input(self) -> Input {
        match self {
            Journaled::Send(o) => Input::Send(o),
            Journaled::Deliver(a) => Input::Deliver(a),
            Journaled::HumanTurn(a) => Input::HumanTurn(a),
            Journaled::Admin(a) => Input::Admin(a),
            Journaled::Timeout => Input::Timeout,
        }
    }
}

/// A stored send outcome, for keyed retries.
#[derive(Serialize, Deserialize)]
enum Outcome {
    Sent(SendResult),
    Failed(ErrorBody),
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

impl From<rusqlite::Error> for EngineError {
    fn from(e: rusqlite::Error) -> Self {
        EngineError::Store(e.into())
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

/// WK2: when a session was woken, and whether it has read since.
#[derive(Debug, Default)]
struct WakeState {
    /// Woken and not read since: do not wake again.
    outstanding: bool,
    scheduled: Option<Timestamp>,
    recent: VecDeque<Timestamp>,
    nonces: VecDeque<(String, Timestamp)>,
}

#[derive(Debug)]
struct Session {
    identity: Identity,
    agent: Agent,
    thread_id: Option<String>,
    project_dir: Option<String>,
    home: Option<String>,
    codex_home: Option<String>,
    claude_wake: Option<(PathBuf, String)>,
    components: Option<Vec<ComponentId>>,
    components_error: Option<String>,
    last_seen: Timestamp,
    wake: WakeState,
    /// The last inbox batch that delivered something: its text is erased when the next
    /// batch is asked for. `None` after a restart until the first read, which then clears
    /// every older batch.
    last_batch: Option<String>,
    cleared: bool,
}

impl Session {
    fn channel(&self) -> Option<wake::Channel> {
        if let Some((socket, token)) = &self.claude_wake {
            return Some(wake::Channel::Claude { socket: socket.clone(), token: token.clone() });
        }
        match (&self.thread_id, &self.identity.exe) {
            (Some(thread), Some(exe)) if self.identity.agent == "codex" => Some(wake::Channel::Codex {
                exe: PathBuf::from(exe.strip_suffix(" (deleted)").unwrap_or(exe)),
                thread: thread.clone(),
                cwd: self.identity.cwd.as_ref().map(PathBuf::from),
            }),
            _ => None,
        }
    }
}

/// The engine. One thread owns it; see the module docs for its transactions.
pub struct Engine {
    home: Home,
    config: DaemonConfig,
    db: Connection,
    fw: Firewall,
    rules: Arc<Reloadable>,
    rules_info: RulesInfo,
    rules_stamp: Vec<(PathBuf, Option<SystemTime>, u64)>,
    /// The trust file (TR1): each sender's standing and overlay (DL4).
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
    ) -> Result<Self, StoreError> {
        let db = store::open(&home.db(), &config.storage)?;
        let proc_clock = stable_clock(&db)?;
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
        let now = clock::now();
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
            ratings: Ratings::new(),
            clock: proc_clock,
            seeds: ChaCha20Rng::from_seed(clock::random_seed()),
            journal_rows: 0,
            last_snapshot: now,
            touched: false,
            security_dirty: false,
            refreshes: Vec::new(),
            accepted_for: Vec::new(),
            wake_tx,
            started_at: now,
            next_housekeeping: now,
            next_rules_check: now,
            next_timeout: now,
            stop: false,
            relay: None,
        };
        engine.rebuild()?;
        engine.load_sessions()?;
        engine.load_ratings()?;
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

    /// Restore the firewall from the snapshot and replay the journal.
    fn rebuild(&mut self) -> Result<(), StoreError> {
        let (snapshot, journal) = store::load_state(&self.db)?;
        let mut fw = match snapshot {
            Some((_, state)) => Firewall::restore(serde_json::from_str::<State>(&state)?),
            None => Firewall::new(self.config.firewall.clone()),
        };
        fw.set_rules(Arc::clone(&self.rules) as Arc<dyn Rules>);
        let count = journal.len();
        for row in journal {
            let input: Journaled = serde_json::from_str(&row.input)?;
            let mut rng = ChaCha20Rng::from_seed(row.seed);
            let _ = fw.handle(Timestamp::from_millis(row.at), &mut rng, input.into_input());
            while fw.poll_event().is_some() {}
        }
        self.journal_rows = u64::try_from(count).unwrap_or(u64::MAX);
        self.fw = fw;
        Ok(())
    }

    fn load_sessions(&mut self) -> Result<(), StoreError> {
        let mut stmt = self.db.prepare_cached("SELECT identity, thread_id, last_seen FROM sessions")?;
        let rows =
            stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, i64>(2)?)))?;
        let mut loaded = Vec::new();
        for row in rows {
            let (identity, thread_id, last_seen) = row?;
            let Ok(identity) = serde_json::from_str::<Identity>(&identity) else { continue };
            loaded.push((identity, thread_id, last_seen));
        }
        drop(stmt);
        for (identity, thread_id, last_seen) in loaded {
            let agent = identity.to_agent();
            let session = Session {
                agent: agent.clone(),
                identity,
                thread_id,
                project_dir: None,
                home: None,
                codex_home: None,
                claude_wake: None,
                components: None,
                components_error: None,
                last_seen: Timestamp::from_millis(u64::try_from(last_seen).unwrap_or(0)),
                wake: WakeState::default(),
                last_batch: None,
                cleared: false,
            };
            self.sessions.insert(agent.id, session);
        }
        Ok(())
    }

    fn load_ratings(&mut self) -> Result<(), StoreError> {
        let mut stmt = self.db.prepare_cached("SELECT component, score FROM ratings")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<f64>>(1)?)))?;
        for row in rows {
            let (component, score) = row?;
            let Ok(id) = ComponentId::new(component) else { continue };
            let score = score.and_then(|s| agentfw_core::admission::Score::new(s).ok());
            self.ratings.insert(id, score);
        }
        Ok(())
    }

    /// Compile the default pack plus the user's rule files. A failure keeps the rules in
    /// force (PR7) and is reported by `status`.
    fn reload_rules(&mut self) {
        let dir = self.home.rules();
        self.rules_stamp = stamp(&dir);
        match compile_rules(&dir) {
            Ok((set, files)) => {
                let count = set.rules().count();
                self.rules.replace(set);
                self.rules_info = RulesInfo { rules: count, user_files: files, error: None };
                eprintln!("agentfw daemon: rules reloaded ({count} rules, {files} user files)");
            }
            Err(e) => {
                let kept = self.rules.current().rules().count();
                eprintln!(
                    "agentfw daemon: rule files in `{}` do not compile; keeping the last good rules:\n{e}",
                    dir.display()
                );
                self.rules_info.rules = kept;
                self.rules_info.error = Some(e.to_string());
            }
        }
    }

    /// Handle one request from `caller`.
    pub fn handle(&mut self, caller: &Caller, op: Op) -> Result<Value, ErrorBody> {
        let result = match op {
            Op::Hello { client: _ } => self.op_hello(caller),
            Op::Send { to, text, reply_to, key } => self.op_send(caller, &to, text, reply_to.as_deref(), key),
            Op::Inbox { batch } => self.op_inbox(caller, batch),
            Op::Team {} => self.op_team(caller),
            Op::Status {} => self.op_status(caller),
            Op::Audit(q) => self.op_audit(&q),
            Op::Allow { a, b } => self.op_allow(caller, &a, &b),
            Op::QuarantineLift { agent } => self.op_lift(caller, &agent),
            Op::AdmissionImport { ratings, source, notes } => self.op_import(caller, ratings, &source, &notes),
            Op::AdmissionMode { mode } => self.op_mode(caller, mode),
            Op::AdmissionExcept { component, remove } => self.op_except(caller, component, remove),
            Op::Hook { harness, event, session_id, prompt } => {
                self.op_hook(caller, &harness, event, session_id.as_deref(), prompt.as_deref())
            }
            Op::Reload {} => self.op_reload(caller),
            Op::Shutdown {} => self.op_shutdown(caller),
        };
        result.map_err(EngineError::body)
    }

    // ---- transactions -------------------------------------------------------------------

    /// Run `f` in one transaction; see the module docs. On any error the transaction is
    /// rolled back and, if the firewall was fed inputs, rebuilt from the database.
    fn tx<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, EngineError>) -> Result<T, EngineError> {
        self.db.exec("BEGIN IMMEDIATE", [])?;
        self.touched = false;
        self.security_dirty = false;
        self.accepted_for.clear();
        let mut result = f(self);
        if result.is_ok() && self.security_dirty {
            let now = clock::now();
            if let Err(e) = self.snapshot_in_tx(now) {
                result = Err(e);
            }
        }
        let result = result.and_then(|v| self.db.exec("COMMIT", []).map(|_| v).map_err(EngineError::from));
        if result.is_err() {
            let _ = self.db.execute_batch("ROLLBACK");
            self.relay_rolled_back();
            self.refreshes.clear();
            self.accepted_for.clear();
            if self.touched
                && let Err(e) = self.rebuild()
            {
                eprintln!("agentfw daemon: cannot rebuild the firewall state from the database: {e}");
            }
        } else {
            self.relay_committed();
            for agent in std::mem::take(&mut self.accepted_for) {
                self.schedule_wake(&agent);
            }
        }
        self.touched = false;
        result
    }

    /// Journal `input`, feed it to the firewall, and record what it decided.
    fn apply(&mut self, now: Timestamp, input: Journaled) -> Result<Output, EngineError> {
        let mut seed = [0u8; 32];
        self.seeds.fill_bytes(&mut seed);
        let json = serde_json::to_string(&input)?;
        self.db
            .execute("INSERT INTO journal (at, seed, input) VALUES (?1, ?2, ?3)", params![ms(now), &seed[..], json])?;
        self.journal_rows += 1;
        self.touched = true;
        let mut rng = ChaCha20Rng::from_seed(seed);
        let out = self.fw.handle(now, &mut rng, input.into_input());
        self.drain(now)?;
        Ok(out)
    }

    fn drain(&mut self, now: Timestamp) -> Result<(), EngineError> {
        while let Some(event) = self.fw.poll_event() {
            self.relay_event(&event);
            match event {
                Event::Decision(d) => self.audit(&d)?,
                Event::WouldRefuse { id, stage, agent, reason } => {
                    let label = self.sessions.get(&agent).map_or_else(|| agent.to_string(), |s| s.agent.label());
                    let d = Decision {
                        at: now,
                        id,
                        stage,
                        from: agent.clone(),
                        from_label: label.clone(),
                        to: agent,
                        to_label: label,
                        size: 0,
                        hops: 0,
                        verdict: Verdict::Allow,
                        reason: Some(reason),
                    };
                    self.audit_as(&d, "would_refuse")?;
                }
                Event::AdmissionRefresh { agent } => self.refreshes.push(agent),
                Event::Quarantined { agent, quarantine } => {
                    eprintln!("agentfw daemon: quarantined {agent} until {}: {}", quarantine.until, quarantine.reason);
                    self.security_dirty = true;
                }
                Event::Remembered { text, rule, .. } => {
                    eprintln!("agentfw daemon: remembering refused text {text} (rule `{rule}`)");
                    self.security_dirty = true;
                }
                Event::Released { .. } | Event::Forgotten { .. } => self.security_dirty = true,
                Event::TurnReset { .. } => {}
                Event::ThreadNote(note) => {
                    for agent in &note.participants {
                        self.note(now, agent, &note.text)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn audit(&self, d: &Decision) -> Result<(), EngineError> {
        let verdict = match d.verdict {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
            Verdict::Hold => "hold",
        };
        self.audit_as(d, verdict)
    }

    fn audit_as(&self, d: &Decision, verdict: &str) -> Result<(), EngineError> {
        let stage = match d.stage {
            Stage::Sending => "sending",
            Stage::Delivering => "delivering",
        };
        let unverified = self.sessions.get(&d.from).and_then(|s| s.identity.unverified.as_ref()).map(|u| u.to_string());
        let (code, rule, reason) = match &d.reason {
            Some(r) => (Some(r.code.as_str()), r.rule.as_deref(), Some(r.text.as_str())),
            None => (None, None, None),
        };
        self.db.exec(
            "INSERT INTO audit (at, message, stage, from_id, from_label, to_id, to_label, size, hops, verdict, code, rule, reason, unverified)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                ms(d.at),
                d.id.to_string(),
                stage,
                d.from.as_str(),
                d.from_label,
                d.to.as_str(),
                d.to_label,
                i64::try_from(d.size).unwrap_or(i64::MAX),
                d.hops,
                verdict,
                code,
                rule,
                reason,
                unverified
            ],
        )?;
        Ok(())
    }

    /// A note from agentfw itself into `agent`'s inbox (a thread that closed, LM4).
    fn note(&mut self, now: Timestamp, agent: &AgentId, text: &str) -> Result<(), EngineError> {
        let id = format!("note-{}", clock::token());
        self.db.exec(
            "INSERT INTO inbox (id, kind, recipient, sender, sender_label, note, state, not_before, accepted_at)
             VALUES (?1, 'note', ?2, 'agentfw', 'agentfw', ?3, 'pending', 0, ?4)",
            params![id, agent.as_str(), text, ms(now)],
        )?;
        Ok(())
    }

    fn snapshot_in_tx(&mut self, now: Timestamp) -> Result<(), EngineError> {
        let state = serde_json::to_string(&self.fw.snapshot())?;
        let seq: i64 = self.db.row("SELECT COALESCE(MAX(seq), 0) FROM journal", [], |r| r.get(0))?;
        self.db.exec(
            "INSERT INTO snapshot (id, seq, at, state) VALUES (1, ?1, ?2, ?3)
             ON CONFLICT (id) DO UPDATE SET seq = ?1, at = ?2, state = ?3",
            params![seq, ms(now), state],
        )?;
        self.db.exec("DELETE FROM journal WHERE seq <= ?1", [seq])?;
        self.journal_rows = 0;
        self.last_snapshot = now;
        Ok(())
    }

    // ---- sessions -----------------------------------------------------------------------

    /// The caller's session, registered on first sight.
    fn session_for(&mut self, caller: &Caller) -> Result<AgentId, EngineError> {
        let identity = caller
            .identity
            .as_ref()
            .map_err(|why| reply(code::NOT_AGENT, format!("agentfw cannot tell which agent session this is: {why}")))?;
        let now = clock::now();
        let id = identity.agent_id();
        let claude_wake =
            match (caller.env.get("CLAUDE_CODE_MESSAGING_SOCKET"), caller.env.get("CLAUDE_CODE_MESSAGING_TOKEN")) {
                (Some(socket), Some(token)) if socket.starts_with('/') && !token.is_empty() => {
                    Some((PathBuf::from(socket), token.clone()))
                }
                _ => None,
            };
        let fresh = !self.sessions.contains_key(&id);
        if fresh {
            let identity_json = serde_json::to_string(identity)?;
            self.db.exec(
                "INSERT INTO sessions (agent_id, identity, session_id, first_seen, last_seen) VALUES (?1, ?2, ?3, ?4, ?4)
                 ON CONFLICT (agent_id) DO UPDATE SET identity = ?2, last_seen = ?4",
                params![id.as_str(), identity_json, identity.session.as_ref().map(|s| s.id.as_str()), ms(now)],
            )?;
            let session = Session {
                agent: identity.to_agent(),
                identity: identity.clone(),
                thread_id: None,
                project_dir: None,
                home: None,
                codex_home: None,
                claude_wake: None,
                components: None,
                components_error: None,
                last_seen: now,
                wake: WakeState::default(),
                last_batch: None,
                cleared: false,
            };
            self.sessions.insert(id.clone(), session);
        }
        let Some(s) = self.sessions.get_mut(&id) else {
            return Err(reply(code::INTERNAL, "session vanished"));
        };
        s.last_seen = now;
        if caller.project_dir.is_some() {
            s.project_dir.clone_from(&caller.project_dir);
        }
        if let Some(home) = caller.env.get("HOME") {
            s.home = Some(home.clone());
        }
        if let Some(codex_home) = caller.env.get("CODEX_HOME") {
            s.codex_home = Some(codex_home.clone());
        }
        if claude_wake.is_some() {
            s.claude_wake = claude_wake;
        }
        if s.components.is_none() && s.components_error.is_none() {
            // Components are listed once per session (and again on an admission refresh),
            // so `team` shows "would refuse" before the first message.
            let agent = s.agent.clone();
            self.tx(|e| e.refresh_admission(now, &agent))?;
        }
        Ok(id)
    }

    /// List `agent`'s components from its harness files, rate them, and give them to the
    /// firewall (AD1, AD5). Runs inside a transaction.
    fn refresh_admission(&mut self, now: Timestamp, agent: &Agent) -> Result<(), EngineError> {
        let Some(s) = self.sessions.get_mut(&agent.id) else { return Ok(()) };
        let home = s.home.as_deref().map(Path::new);
        let codex_home = s.codex_home.as_deref().map(Path::new);
        let project = s.project_dir.as_deref().or(s.identity.cwd.as_deref()).map(Path::new);
        let at = components::Where { kind: &s.identity.agent, home, codex_home, project };
        match components::collect(&at) {
            Ok(list) => {
                s.components = Some(list.clone());
                s.components_error = None;
                self.relay_components(agent, &list);
            }
            Err(e) => {
                eprintln!("agentfw daemon: cannot list the components of {}: {e}", s.agent.label());
                s.components = None;
                s.components_error = Some(e);
                return Ok(());
            }
        }
        self.rate(now, &agent.id)
    }

    /// Give the firewall `agent`'s components with today's ratings.
    fn rate(&mut self, now: Timestamp, agent: &AgentId) -> Result<(), EngineError> {
        let Some(list) = self.sessions.get(agent).and_then(|s| s.components.clone()) else { return Ok(()) };
        let components: Vec<Component> = list
            .into_iter()
            .map(|id| {
                let score = self.ratings.get(&id).copied().flatten();
                Component { id, score }
            })
            .collect();
        let action = AdminAction::SetComponents { agent: agent.as_str().to_owned(), components };
        self.apply(now, Journaled::Admin(action))?;
        Ok(())
    }

    /// Refresh the agents the firewall asked about (AD5).
    fn run_refreshes(&mut self, now: Timestamp) -> Result<bool, EngineError> {
        let agents = std::mem::take(&mut self.refreshes);
        let any = !agents.is_empty();
        for agent in agents {
            self.refresh_admission(now, &agent)?;
        }
        Ok(any)
    }

    fn alive(&self, s: &Session) -> bool {
        procfs::alive(s.identity.pid, s.identity.started_at, &self.clock)
    }

    /// The session `to` names: an agent id, a label, or a project name; live ones first.
    fn find(&self, to: &str, live_only: bool) -> Result<AgentId, EngineError> {
        let to = to.trim();
        let id = AgentId::new(to);
        if let Some(s) = self.sessions.get(&id) {
            if live_only && !self.alive(s) {
                return Err(gone(s));
            }
            return Ok(id);
        }
        let by_label: Vec<&Session> =
            self.sessions.values().filter(|s| s.agent.label().eq_ignore_ascii_case(to)).collect();
        let candidates = if by_label.is_empty() && !to.contains('(') {
            self.sessions.values().filter(|s| s.agent.project.eq_ignore_ascii_case(to)).collect()
        } else {
            by_label
        };
        if candidates.is_empty() {
            if let Some(remote) = self.find_remote(to)? {
                return Ok(remote);
            }
            return Err(reply(
                code::UNKNOWN_RECIPIENT,
                format!(
                    "there is no agent `{}` on this machine; call list_team (or run `agentfw team`) to see who is reachable, and use a label such as `api (codex)` or an agent id",
                    one_line(to)
                ),
            ));
        }
        let live: Vec<&&Session> = candidates.iter().filter(|s| self.alive(s)).collect();
        match (live.as_slice(), live_only) {
            ([one], _) => Ok(one.agent.id.clone()),
            ([], true) => Err(candidates.first().map_or_else(|| reply(code::GONE_RECIPIENT, "gone"), |s| gone(s))),
            ([], false) => Ok(candidates.first().map(|s| s.agent.id.clone()).unwrap_or(id)),
            (many, _) => {
                let ids: Vec<String> = many.iter().map(|s| s.agent.id.to_string()).collect();
                Err(reply(
                    code::AMBIGUOUS_RECIPIENT,
                    format!(
                        "`{}` names {} live sessions: {}; use one of these agent ids",
                        one_line(to),
                        many.len(),
                        ids.join(", ")
                    ),
                ))
            }
        }
    }

    fn require_person(&self, caller: &Caller, what: &str) -> Result<(), EngineError> {
        match &caller.identity {
            Ok(identity) if !self.config.admin.from_agents => Err(reply(
                code::AGENT_ADMIN,
                format!(
                    "`agentfw {what}` is an admin command, and this process belongs to the agent session {}: a person must run it in a terminal outside agent sessions",
                    identity.label
                ),
            )),
            _ => Ok(()),
        }
    }

    // ---- ops ----------------------------------------------------------------------------

    fn op_hello(&mut self, caller: &Caller) -> Result<Value, EngineError> {
        let (you, not_agent) = match self.session_for(caller) {
            Ok(id) => (self.sessions.get(&id).map(|s| self.view(s, Some(&id), clock::now())), None),
            Err(EngineError::Reply(e)) if e.code == code::NOT_AGENT => (None, Some(e.message)),
            Err(e) => return Err(e),
        };
        let hello = HelloResult { protocol: proto::VERSION, daemon: version(), you, not_agent };
        Ok(serde_json::to_value(hello)?)
    }

    fn op_send(
        &mut self,
        caller: &Caller,
        to: &str,
        text: String,
        reply_to: Option<&str>,
        key: Option<String>,
    ) -> Result<Value, EngineError> {
        let me = self.session_for(caller)?;
        if let Some(key) = &key {
            check_token(key, "key")?;
            let stored: Option<String> = self
                .db
                .query_row("SELECT outcome FROM sends WHERE sender = ?1 AND key = ?2", params![me.as_str(), key], |r| {
                    r.get(0)
                })
                .optional()?;
            if let Some(stored) = stored {
                return match serde_json::from_str::<Outcome>(&stored)? {
                    Outcome::Sent(r) => Ok(serde_json::to_value(r)?),
                    Outcome::Failed(e) => Err(EngineError::Reply(e)),
                };
            }
        }
        let recipient = self.find(to, true)?;
        let reply_to = match reply_to.map(str::trim).filter(|r| !r.is_empty()) {
            None => None,
            Some(r) => Some(r.parse::<MessageId>().map_err(|e| reply(code::BAD_REQUEST, format!("`reply_to`: {e}")))?),
        };
        let to_agent = self.sessions.get(&recipient).map(|s| s.agent.clone()).or_else(|| self.remote_agent(&recipient));
        let (Some(from), Some(to_agent)) = (self.sessions.get(&me), to_agent) else {
            return Err(reply(code::INTERNAL, "session vanished"));
        };
        let outgoing = Outgoing { from: from.agent.clone(), to: to_agent, body: text, reply_to };
        let now = clock::now();
        if let Some(body) = self.trust_refuses_send(now, &me, &outgoing, key.as_deref())? {
            return Err(EngineError::Reply(body));
        }
        let outcome = self.tx(|e| {
            let mut out = e.apply(now, Journaled::Send(outgoing.clone()))?;
            if matches!(&out, Output::Refused(r) if r.reason.code == "admission.refresh") && e.run_refreshes(now)? {
                out = e.apply(now, Journaled::Send(outgoing.clone()))?;
            }
            e.run_refreshes(now)?;
            let outcome = match out {
                Output::Accepted { message, warnings } => {
                    if !e.outbox(now, &message)? {
                        e.enqueue(now, &message, &warnings)?;
                        e.accepted_for.push(message.to.id.clone());
                    }
                    Outcome::Sent(SendResult {
                        id: message.id.to_string(),
                        thread: message.thread.to_string(),
                        from: message.from.label(),
                        to: message.to.label(),
                        to_id: message.to.id.to_string(),
                        hops: message.provenance.hops,
                        warnings: warnings.iter().map(|w| w.text.clone()).collect(),
                    })
                }
                Output::Refused(r) => {
                    e.security_dirty = true;
                    Outcome::Failed(refused(&r))
                }
                other => {
                    Outcome::Failed(ErrorBody::new(code::INTERNAL, format!("unexpected firewall output: {other:?}")))
                }
            };
            if let Some(key) = &key {
                e.db.exec(
                    "INSERT INTO sends (sender, key, at, outcome) VALUES (?1, ?2, ?3, ?4)",
                    params![me.as_str(), key, ms(now), serde_json::to_string(&outcome)?],
                )?;
            }
            Ok(outcome)
        })?;
        match outcome {
            Outcome::Sent(r) => Ok(serde_json::to_value(r)?),
            Outcome::Failed(e) => Err(EngineError::Reply(e)),
        }
    }

    /// The trust file's say on a send (TR1): a blocked sender, or an unlisted one when
    /// unknown teammates are rejected, is refused before the firewall sees the message. The
    /// refusal is recorded (AM4) and kept for a retry with the same `key`.
    fn trust_refuses_send(
        &mut self,
        now: Timestamp,
        me: &AgentId,
        m: &Outgoing,
        key: Option<&str>,
    ) -> Result<Option<ErrorBody>, EngineError> {
        let (trust_code, message) = match self.trust.standing(&m.from) {
            Standing::Deliver(_) => return Ok(None),
            Standing::Refuse { code, message } => (code, message),
            Standing::Unreadable(why) => {
                (trust::UNREADABLE, format!("refused: {why}\nNothing is sent until your user fixes the trust file."))
            }
        };
        let id = MessageId::generate(now, &mut self.seeds);
        let body = ErrorBody {
            code: code::REFUSED.to_owned(),
            message: message.clone(),
            refusal: Some(RefusalInfo { code: trust_code.to_owned(), rule: None, id: Some(id.to_string()) }),
        };
        let d = Decision {
            at: now,
            id,
            stage: Stage::Sending,
            from: m.from.id.clone(),
            from_label: m.from.label(),
            to: m.to.id.clone(),
            to_label: m.to.label(),
            size: m.body.len(),
            hops: 0,
            verdict: Verdict::Deny,
            reason: Some(Reason { code: trust_code.to_owned(), rule: None, text: message }),
        };
        let outcome = serde_json::to_string(&Outcome::Failed(body.clone()))?;
        self.tx(|e| {
            e.audit(&d)?;
            if let Some(key) = key {
                e.db.exec(
                    "INSERT INTO sends (sender, key, at, outcome) VALUES (?1, ?2, ?3, ?4)",
                    params![me.as_str(), key, ms(now), outcome],
                )?;
            }
            Ok(())
        })?;
        Ok(Some(body))
    }

    /// An accepted message into its recipient's inbox.
    fn enqueue(&mut self, now: Timestamp, m: &Accepted, warnings: &[Reason]) -> Result<(), EngineError> {
        let warnings: Vec<&str> = warnings.iter().map(|w| w.text.as_str()).collect();
        self.db.exec(
            "INSERT INTO inbox (id, kind, recipient, sender, sender_label, message, state, not_before, accepted_at, warnings)
             VALUES (?1, 'message', ?2, ?3, ?4, ?5, 'pending', 0, ?6, ?7)",
            params![
                m.id.to_string(),
                m.to.id.as_str(),
                m.from.id.as_str(),
                m.from.label(),
                serde_json::to_string(m)?,
                ms(now),
                serde_json::to_string(&warnings)?
            ],
        )?;
        Ok(())
    }

    fn op_inbox(&mut self, caller: &Caller, batch: Option<String>) -> Result<Value, EngineError> {
        let me = self.session_for(caller)?;
        let batch = batch.unwrap_or_else(clock::token);
        check_token(&batch, "batch")?;
        let (previous, cleared) = match self.sessions.get_mut(&me) {
            Some(s) => {
                s.wake.outstanding = false;
                (s.last_batch.clone().filter(|b| *b != batch), s.cleared)
            }
            None => (None, true),
        };
        if let Some(stored) = self.stored_batch(&me, &batch)? {
            return Ok(serde_json::to_value(stored)?);
        }
        let now = clock::now();
        let due: bool = self.db.row(
            "SELECT EXISTS (SELECT 1 FROM inbox WHERE recipient = ?1 AND state = 'pending' AND not_before <= ?2)",
            params![me.as_str(), ms(now)],
            |r| r.get(0),
        )?;
        if !due && previous.is_none() && cleared {
            let result = InboxResult { batch, held: self.waiting(&me)?, ..InboxResult::default() };
            return Ok(serde_json::to_value(result)?);
        }
        let result = self.tx(|e| {
            // The client asks for a new batch, so it has the previous one: erase its text.
            match (&previous, cleared) {
                (Some(prev), _) => e.db.exec(
                    "UPDATE inbox SET message = NULL, fenced = NULL, note = NULL WHERE recipient = ?1 AND batch = ?2",
                    params![me.as_str(), prev],
                )?,
                (None, false) => e.db.exec(
                    "UPDATE inbox SET message = NULL, fenced = NULL, note = NULL
                     WHERE recipient = ?1 AND state != 'pending' AND batch IS NOT NULL AND batch != ?2
                       AND (message IS NOT NULL OR note IS NOT NULL OR fenced IS NOT NULL)",
                    params![me.as_str(), batch],
                )?,
                (None, true) => 0,
            };
            let rows: Vec<(i64, String, Option<String>, Option<String>)> = {
                let mut stmt = e.db.prepare_cached(
                    "SELECT seq, kind, message, note FROM inbox
                     WHERE recipient = ?1 AND state = 'pending' AND not_before <= ?2 ORDER BY seq LIMIT ?3",
                )?;
                let rows = stmt.query_map(params![me.as_str(), ms(now), BATCH], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?;
                rows.collect::<Result<_, _>>()?
            };
            let mut result = InboxResult { batch: batch.clone(), ..InboxResult::default() };
            let mut unreadable_noted = false;
            for (seq, kind, message, note) in rows {
                if kind == "note" {
                    e.db.exec(
                        "UPDATE inbox SET state = 'delivered', batch = ?2, done_at = ?3 WHERE seq = ?1",
                        params![seq, batch, ms(now)],
                    )?;
                    result.notes.push(note.unwrap_or_default());
                    continue;
                }
                let Some(message) = message else { continue };
                let accepted: Accepted = serde_json::from_str(&message)?;
                // The trust file first (TR1): a refused sender's message never reaches the
                // firewall's ledger; an admitted one's overlay goes under the fence (DL4).
                let overlay = match e.trust.standing(&accepted.from) {
                    Standing::Deliver(overlay) => overlay,
                    Standing::Refuse { code: trust_code, message: reason } => {
                        e.refuse_untrusted(now, seq, &batch, &accepted, trust_code, &reason)?;
                        result.refused.push(RefusedView { id: accepted.id.to_string(), from: accepted.from.label(), reason });
                        continue;
                    }
                    Standing::Unreadable(why) => {
                        if !unreadable_noted {
                            unreadable_noted = true;
                            result.notes.push(format!("{why}\nMessages wait here until your user fixes the trust file."));
                        }
                        continue;
                    }
                };
                let mut out = e.apply(now, Journaled::Deliver(accepted.clone()))?;
                if matches!(&out, Output::Held { reason, .. } if reason.code.starts_with("admission")) && e.run_refreshes(now)? {
                    out = e.apply(now, Journaled::Deliver(accepted))?;
                }
                match out {
                    Output::Delivered { delivery, warnings } => {
                        let warnings: Vec<String> = warnings.into_iter().map(|w| w.text).collect();
                        let fenced = format!("{}\n{overlay}", delivery.fenced.text);
                        e.db.exec(
                            "UPDATE inbox SET state = 'delivered', batch = ?2, fenced = ?3, warnings = ?4, done_at = ?5 WHERE seq = ?1",
                            params![seq, batch, fenced, serde_json::to_string(&warnings)?, ms(now)],
                        )?;
                        result.deliveries.push(delivery_view(&delivery.message, fenced, warnings));
                    }
                    Output::Refused(r) => {
                        let reason = r.message();
                        e.db.exec(
                            "UPDATE inbox SET state = 'refused', batch = ?2, reason = ?3, message = NULL, done_at = ?4 WHERE seq = ?1",
                            params![seq, batch, reason, ms(now)],
                        )?;
                        e.security_dirty = true;
                        let m = &r;
                        result.refused.push(RefusedView {
                            id: m.id.to_string(),
                            from: e.label_of_sender(seq)?,
                            reason,
                        });
                    }
                    Output::Held { until, .. } => {
                        e.db.exec("UPDATE inbox SET not_before = ?2 WHERE seq = ?1", params![seq, ms(until)])?;
                    }
                    Output::Accepted { .. } | Output::Done => {}
                }
            }
            e.run_refreshes(now)?;
            result.held = e.waiting(&me)?;
            Ok(result)
        })?;
        if let Some(s) = self.sessions.get_mut(&me) {
            let delivered = !(result.deliveries.is_empty() && result.refused.is_empty() && result.notes.is_empty());
            s.last_batch = delivered.then(|| batch.clone());
            s.cleared = true;
        }
        Ok(serde_json::to_value(result)?)
    }

    /// A delivery the trust file refuses: marked refused without its text, and recorded.
    fn refuse_untrusted(
        &mut self,
        now: Timestamp,
        seq: i64,
        batch: &str,
        m: &Accepted,
        trust_code: &str,
        reason: &str,
    ) -> Result<(), EngineError> {
        self.db.exec(
            "UPDATE inbox SET state = 'refused', batch = ?2, reason = ?3, message = NULL, done_at = ?4 WHERE seq = ?1",
            params![seq, batch, reason, ms(now)],
        )?;
        self.audit(&Decision {
            at: now,
            id: m.id,
            stage: Stage::Delivering,
            from: m.from.id.clone(),
            from_label: m.from.label(),
            to: m.to.id.clone(),
            to_label: m.to.label(),
            size: m.body.len(),
            hops: m.provenance.hops,
            verdict: Verdict::Deny,
            reason: Some(Reason { code: trust_code.to_owned(), rule: None, text: reason.to_owned() }),
        })?;
        // Its text is in the journal (the send): snapshot so it does not linger there.
        self.security_dirty = true;
        Ok(())
    }

    fn label_of_sender(&self, seq: i64) -> Result<String, EngineError> {
        Ok(self.db.row("SELECT sender_label FROM inbox WHERE seq = ?1", [seq], |r| r.get(0))?)
    }

    fn waiting(&self, me: &AgentId) -> Result<u32, EngineError> {
        let n: i64 = self.db.row(
            "SELECT COUNT(*) FROM inbox WHERE recipient = ?1 AND state = 'pending'",
            [me.as_str()],
            |r| r.get(0),
        )?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// A batch already delivered, for a client retrying after a lost answer.
    fn stored_batch(&self, me: &AgentId, batch: &str) -> Result<Option<InboxResult>, EngineError> {
        let mut stmt = self.db.prepare_cached(
            "SELECT kind, state, message, note, fenced, warnings, reason, id, sender_label FROM inbox
             WHERE recipient = ?1 AND batch = ?2 ORDER BY seq",
        )?;
        type Row = (
            String,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            String,
            String,
        );
        let rows: Vec<Row> = stmt
            .query_map(params![me.as_str(), batch], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?))
            })?
            .collect::<Result<_, _>>()?;
        if rows.is_empty() {
            return Ok(None);
        }
        let mut result = InboxResult { batch: batch.to_owned(), ..InboxResult::default() };
        for (kind, state, message, note, fenced, warnings, reason, id, from) in rows {
            match (kind.as_str(), state.as_str()) {
                ("note", _) => result.notes.push(note.unwrap_or_default()),
                (_, "refused") => result.refused.push(RefusedView { id, from, reason: reason.unwrap_or_default() }),
                _ => {
                    let (Some(message), Some(fenced)) = (message, fenced) else { continue };
                    let accepted: Accepted = serde_json::from_str(&message)?;
                    let warnings: Vec<String> =
                        warnings.map(|w| serde_json::from_str(&w)).transpose()?.unwrap_or_default();
                    result.deliveries.push(delivery_view(&accepted, fenced, warnings));
                }
            }
        }
        result.held = self.waiting(me)?;
        Ok(Some(result))
    }

    fn view(&self, s: &Session, me: Option<&AgentId>, now: Timestamp) -> AgentView {
        let admission = self.fw.admission();
        let verdict = match admission.mode() {
            Mode::Off => None,
            mode => {
                let e = admission.evaluate_agent(&s.agent);
                e.refused.as_ref().map(|why| {
                    let verb = if mode == Mode::Report { "would refuse" } else { "refused" };
                    format!("{verb}: not admitted to the network: {why}")
                })
            }
        };
        AgentView {
            id: s.agent.id.to_string(),
            label: s.agent.label(),
            agent: s.agent.kind.clone(),
            project: s.agent.project.clone(),
            pid: s.identity.pid,
            started_at: s.identity.started_at.as_millis(),
            live: self.alive(s),
            you: me == Some(&s.agent.id),
            verified: s.identity.verified,
            unverified: s.identity.unverified.as_ref().map(ToString::to_string),
            session: s.identity.session.as_ref().map(|x| x.id.clone()).or_else(|| s.thread_id.clone()),
            contained: self
                .fw
                .quarantine_of(now, &s.agent.id)
                .map(|q| Contained { until: q.until.as_millis(), reason: q.reason.clone() }),
            admission: verdict,
            components_error: s.components_error.clone(),
            wake: s.channel().map(|c| c.describe().to_owned()),
            last_seen: s.last_seen.as_millis(),
            machine: None,
        }
    }

    fn team(&self, me: Option<&AgentId>) -> Vec<AgentView> {
        let now = clock::now();
        let mut views: Vec<AgentView> = self
            .sessions
            .values()
            .map(|s| self.view(s, me, now))
            .filter(|v| v.live || now.as_millis().saturating_sub(v.last_seen) < GONE_SHOWN_MS)
            .collect();
        views.extend(self.remote_views(now));
        views.sort_by(|a, b| b.live.cmp(&a.live).then_with(|| a.label.cmp(&b.label)).then_with(|| a.id.cmp(&b.id)));
        views
    }

    fn op_team(&mut self, caller: &Caller) -> Result<Value, EngineError> {
        let me = self.session_for(caller).ok();
        let you = me.as_ref().and_then(|id| self.sessions.get(id)).map(|s| s.agent.label());
        let result = TeamResult {
            you,
            admission_mode: mode_name(self.fw.admission().mode()).to_owned(),
            agents: self.team(me.as_ref()),
        };
        Ok(serde_json::to_value(result)?)
    }

    fn op_status(&mut self, caller: &Caller) -> Result<Value, EngineError> {
        let me = self.session_for(caller).ok();
        let now = clock::now();
        let team = self.team(me.as_ref());
        let pending: i64 = self.db.row("SELECT COUNT(*) FROM inbox WHERE state = 'pending'", [], |r| r.get(0))?;
        let quarantined = self
            .fw
            .containment()
            .quarantined()
            .filter(|(_, q)| q.until > now)
            .map(|(agent, q)| QuarantineView {
                agent: agent.to_string(),
                label: self.sessions.get(agent).map_or_else(|| agent.to_string(), |s| s.agent.label()),
                until: q.until.as_millis(),
                reason: q.reason.clone(),
            })
            .collect();
        let admission = self.fw.admission();
        let db_bytes = std::fs::metadata(self.home.db()).map(|m| m.len()).unwrap_or(0)
            + std::fs::metadata(self.home.db().with_extension("db-wal")).map(|m| m.len()).unwrap_or(0);
        let result = StatusResult {
            daemon: DaemonInfo {
                pid: std::process::id(),
                version: version(),
                protocol: proto::VERSION,
                home: self.home.dir.display().to_string(),
                socket: self.home.socket.display().to_string(),
                started_at: self.started_at.as_millis(),
                db_bytes,
            },
            sessions_live: team.iter().filter(|v| v.live && v.machine.is_none()).count(),
            sessions_total: self.sessions.len(),
            inbox_pending: u64::try_from(pending).unwrap_or(0),
            quarantined,
            remembered_texts: self.fw.containment().remembered().count(),
            admission: proto::AdmissionInfo {
                mode: mode_name(admission.mode()).to_owned(),
                threshold: admission.threshold().as_f64(),
                exceptions: admission.config().exceptions.iter().map(ToString::to_string).collect(),
                ratings: self.ratings.len(),
            },
            rules: self.rules_info.clone(),
            relay: self.relay_info()?,
            team,
        };
        Ok(serde_json::to_value(result)?)
    }

    fn op_audit(&mut self, q: &AuditQuery) -> Result<Value, EngineError> {
        let limit = i64::from(q.limit.unwrap_or(1000).clamp(1, 10_000));
        let mut sql = String::from(
            "SELECT seq, at, message, stage, from_id, from_label, to_id, to_label, size, hops, verdict, code, rule, reason, unverified
             FROM audit WHERE seq > ?1 AND at >= ?2",
        );
        let mut args: Vec<Value> = vec![
            Value::from(q.after.unwrap_or(0)),
            Value::from(i64::try_from(q.since.unwrap_or(0)).unwrap_or(i64::MAX)),
        ];
        for (field, value) in [("from", &q.from), ("to", &q.to)] {
            if let Some(v) = value {
                let n = args.len();
                sql.push_str(&format!(
                    " AND ({field}_id = ?{a} OR {field}_label = ?{a} COLLATE NOCASE OR {field}_label LIKE ?{b} ESCAPE '\\')",
                    a = n + 1,
                    b = n + 2
                ));
                let escaped = v.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
                args.push(Value::from(v.clone()));
                args.push(Value::from(format!("{escaped} (%")));
            }
        }
        sql.push_str(&format!(" ORDER BY seq LIMIT {limit}"));
        let mut stmt = self.db.prepare(&sql)?;
        let params: Vec<Box<dyn rusqlite::ToSql>> = args
            .into_iter()
            .map(|v| -> Box<dyn rusqlite::ToSql> {
                match v {
                    Value::Number(n) => Box::new(n.as_i64().unwrap_or(0)),
                    Value::String(s) => Box::new(s),
                    _ => Box::new(rusqlite::types::Null),
                }
            })
            .collect();
        let records: Vec<AuditRecord> = stmt
            .query_map(rusqlite::params_from_iter(params.iter()), |r| {
                Ok(AuditRecord {
                    seq: r.get(0)?,
                    at: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                    id: r.get(2)?,
                    stage: r.get(3)?,
                    from: r.get(4)?,
                    from_label: r.get(5)?,
                    to: r.get(6)?,
                    to_label: r.get(7)?,
                    size: u64::try_from(r.get::<_, i64>(8)?).unwrap_or(0),
                    hops: r.get(9)?,
                    verdict: r.get(10)?,
                    code: r.get(11)?,
                    rule: r.get(12)?,
                    reason: r.get(13)?,
                    unverified: r.get(14)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        let next = (i64::try_from(records.len()).unwrap_or(0) == limit).then(|| records.last().map_or(0, |r| r.seq));
        Ok(serde_json::to_value(AuditResult { records, next })?)
    }

    fn admin(&mut self, action: AdminAction) -> Result<(), EngineError> {
        let now = clock::now();
        self.tx(|e| {
            e.apply(now, Journaled::Admin(action))?;
            e.security_dirty = true;
            Ok(())
        })
    }

    fn op_allow(&mut self, caller: &Caller, a: &str, b: &str) -> Result<Value, EngineError> {
        self.require_person(caller, "allow")?;
        let (a, b) = (self.find(a, false)?, self.find(b, false)?);
        self.admin(AdminAction::Allow { a: a.clone(), b: b.clone() })?;
        let (la, lb) = (self.label(&a), self.label(&b));
        done(format!("the turn fuse between {la} and {lb} is reset: they may talk again"))
    }

    fn op_lift(&mut self, caller: &Caller, agent: &str) -> Result<Value, EngineError> {
        self.require_person(caller, "quarantine lift")?;
        let id = match self.find(agent, false) {
            Ok(id) => id,
            // A quarantined agent this daemon never met (e.g. named on a remote path).
            Err(_) if self.fw.containment().quarantined().any(|(q, _)| q.as_str() == agent.trim()) => {
                AgentId::new(agent.trim())
            }
            Err(e) => return Err(e),
        };
        let label = self.label(&id);
        if self.fw.quarantine_of(clock::now(), &id).is_none() {
            return Err(reply(code::NOT_FOUND, format!("{label} is not quarantined")));
        }
        self.admin(AdminAction::LiftQuarantine { agent: id })?;
        done(format!("the quarantine of {label} is lifted"))
    }

    fn op_import(
        &mut self,
        caller: &Caller,
        ratings: Ratings,
        source: &str,
        notes: &[String],
    ) -> Result<Value, EngineError> {
        self.require_person(caller, "admission import")?;
        let now = clock::now();
        let unrated = ratings.values().filter(|s| s.is_none()).count();
        let count = ratings.len();
        self.tx(|e| {
            for (id, score) in &ratings {
                e.db.exec(
                    "INSERT INTO ratings (component, score, source, at) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (component) DO UPDATE SET score = ?2, source = ?3, at = ?4",
                    params![id.as_str(), score.map(|s| s.as_f64()), source, ms(now)],
                )?;
                e.ratings.insert(id.clone(), *score);
            }
            let agents: Vec<AgentId> = e.sessions.keys().cloned().collect();
            for agent in agents {
                e.rate(now, &agent)?;
            }
            Ok(())
        })
        .inspect_err(|_| {
            let _ = self.reload_ratings();
        })?;
        let mut message = format!("imported {count} rating{} from {source}", if count == 1 { "" } else { "s" });
        if unrated > 0 {
            message.push_str(&format!(" ({unrated} unrated: agents loading them are not admitted)"));
        }
        for note in notes {
            message.push_str(&format!("\n  note: {note}"));
        }
        done(message)
    }

    fn reload_ratings(&mut self) -> Result<(), StoreError> {
        self.ratings.clear();
        self.load_ratings()
    }

    fn op_mode(&mut self, caller: &Caller, mode: Mode) -> Result<Value, EngineError> {
        self.require_person(caller, "admission")?;
        self.admin(AdminAction::SetAdmissionMode { mode })?;
        done(match mode {
            Mode::Enforce => "admission is enforced: agents that are not admitted are refused".to_owned(),
            Mode::Report => {
                "admission is report-only: everyone is admitted, and what would be refused is recorded".to_owned()
            }
            Mode::Off => "admission is off".to_owned(),
        })
    }

    fn op_except(&mut self, caller: &Caller, component: ComponentId, remove: bool) -> Result<Value, EngineError> {
        self.require_person(caller, "admission except")?;
        let had = self.fw.admission().config().exceptions.contains(&component);
        if remove {
            self.admin(AdminAction::Unexcept { component: component.clone() })?;
            done(if had {
                format!("{component} no longer has an exception")
            } else {
                format!("{component} had no exception")
            })
        } else {
            self.admin(AdminAction::Except { component: component.clone() })?;
            done(if had {
                format!("{component} already has an exception")
            } else {
                format!("{component} is excused: it no longer keeps agents out (the threshold stays)")
            })
        }
    }

    fn op_hook(
        &mut self,
        caller: &Caller,
        harness: &str,
        event: HookEvent,
        session_id: Option<&str>,
        prompt: Option<&str>,
    ) -> Result<Value, EngineError> {
        let me = self.session_for(caller)?;
        let now = clock::now();
        match event {
            HookEvent::SessionStart => {
                let Some(session_id) = session_id.map(str::trim).filter(|s| !s.is_empty()) else {
                    return done("no session id given".to_owned());
                };
                check_token(session_id, "session_id")?;
                let Some(s) = self.sessions.get_mut(&me) else { return Err(reply(code::INTERNAL, "session vanished")) };
                // The hook's own ancestry resolved to this session's process (ID4): the id
                // refines it. For Codex it is the thread id that `codex queue` wakes.
                let mut refined = s.identity.clone();
                if let Err(e) = refined.refine(session_id, "hook") {
                    return Err(reply(code::BAD_REQUEST, e.to_string()));
                }
                if s.identity.agent == "codex" || harness == "codex" {
                    s.thread_id = Some(session_id.to_owned());
                }
                if !s.identity.shared_host {
                    s.identity.session = refined.session;
                }
                let label = s.agent.label();
                let thread = s.thread_id.clone();
                let identity = serde_json::to_string(&s.identity)?;
                self.db.exec(
                    "UPDATE sessions SET session_id = ?2, thread_id = ?3, identity = ?4, last_seen = ?5 WHERE agent_id = ?1",
                    params![me.as_str(), session_id, thread, identity, ms(now)],
                )?;
                if self.waiting(&me)? > 0 {
                    self.schedule_wake(&me);
                }
                done(format!("{label}: {harness} session {session_id} recorded"))
            }
            HookEvent::UserPromptSubmit => {
                let Some(s) = self.sessions.get_mut(&me) else { return Err(reply(code::INTERNAL, "session vanished")) };
                if let Some(prompt) = prompt
                    && s.wake.nonces.iter().any(|(nonce, _)| prompt.contains(nonce.as_str()))
                {
                    return done("a wake-up from agentfw, not a person: the turn fuse is not reset".to_owned());
                }
                let label = s.agent.label();
                let id = me.clone();
                self.tx(|e| e.apply(now, Journaled::HumanTurn(id)).map(|_| ()))?;
                done(format!("a person spoke in {label}: its turn fuse is reset"))
            }
        }
    }

    fn op_reload(&mut self, caller: &Caller) -> Result<Value, EngineError> {
        self.require_person(caller, "rules reload")?;
        self.reload_rules();
        match &self.rules_info.error {
            None => done(format!("{} rules in force", self.rules_info.rules)),
            Some(e) => Err(reply(
                code::BAD_REQUEST,
                format!("the rule files do not compile; the last good rules stay in force:\n{e}"),
            )),
        }
    }

    fn op_shutdown(&mut self, caller: &Caller) -> Result<Value, EngineError> {
        self.require_person(caller, "daemon stop")?;
        self.stop = true;
        done("the daemon is stopping".to_owned())
    }

    fn label(&self, id: &AgentId) -> String {
        self.sessions.get(id).map_or_else(|| id.to_string(), |s| s.agent.label())
    }

    // ---- time ---------------------------------------------------------------------------

    /// Run what is due: firewall timeouts, wake-ups, snapshots, rule reloads, retention.
    /// Returns how long the caller may sleep.
    pub fn tick(&mut self) -> std::time::Duration {
        let now = clock::now();
        // At most one timeout input per 100 ms, so that a deadline the firewall cannot clear
        // (a clock stepped backwards) never spins the journal.
        if self.fw.poll_timeout().is_some_and(|t| t <= now) && now >= self.next_timeout {
            self.next_timeout = now + std::time::Duration::from_millis(100);
            if let Err(e) = self.tx(|e| e.apply(now, Journaled::Timeout).map(|_| ())) {
                eprintln!("agentfw daemon: timeout processing failed: {}", e.body());
            }
        }
        self.run_wakes(now);
        self.relay_announce(now);
        let snapshot_due = self.journal_rows >= SNAPSHOT_EVERY
            || (self.journal_rows > 0
                && now.as_millis().saturating_sub(self.last_snapshot.as_millis()) >= SNAPSHOT_AFTER_MS);
        if snapshot_due && let Err(e) = self.tx(|e| e.snapshot_in_tx(now)) {
            eprintln!("agentfw daemon: cannot write a snapshot: {}", e.body());
        }
        if now >= self.next_rules_check {
            self.next_rules_check = now + std::time::Duration::from_secs(2);
            if stamp(&self.home.rules()) != self.rules_stamp {
                self.reload_rules();
            }
            if !self.home.dir.exists() {
                eprintln!("agentfw daemon: the home `{}` is gone; stopping", self.home.dir.display());
                self.stop = true;
            }
        }
        if now >= self.next_housekeeping {
            self.next_housekeeping = now + std::time::Duration::from_secs(3600);
            if let Err(e) = self.housekeeping(now) {
                eprintln!("agentfw daemon: housekeeping failed: {e}");
            }
        }
        let mut next = now + std::time::Duration::from_secs(1);
        if let Some(t) = self.fw.poll_timeout() {
            next = next.min(t.max(self.next_timeout));
        }
        for s in self.sessions.values() {
            if let Some(t) = s.wake.scheduled {
                next = next.min(t);
            }
        }
        next.since(now).max(std::time::Duration::from_millis(1))
    }

    /// Retention: audit older than `audit.retention_days` (AM4), send outcomes and finished
    /// inbox rows older than a day, waiting rows for sessions gone for a week.
    fn housekeeping(&mut self, now: Timestamp) -> Result<(), StoreError> {
        let day = 24 * 3600 * 1000_i64;
        let now_ms = ms(now);
        let keep = i64::try_from(self.config.audit.retention_days).unwrap_or(i64::MAX / day).saturating_mul(day);
        let pruned = self.db.exec("DELETE FROM audit WHERE at < ?1", [now_ms.saturating_sub(keep)])?;
        self.db.exec("DELETE FROM sends WHERE at < ?1", [now_ms - day])?;
        self.db.exec("DELETE FROM inbox WHERE state != 'pending' AND done_at < ?1", [now_ms - day])?;
        let gone: Vec<AgentId> = self
            .sessions
            .iter()
            .filter(|(_, s)| {
                !self.alive(s) && now.as_millis().saturating_sub(s.last_seen.as_millis()) > 7 * 24 * 3600 * 1000
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            self.db.exec("DELETE FROM inbox WHERE recipient = ?1", [id.as_str()])?;
            self.db.exec("DELETE FROM sessions WHERE agent_id = ?1", [id.as_str()])?;
            self.sessions.remove(&id);
        }
        if pruned > 0 {
            eprintln!(
                "agentfw daemon: pruned {pruned} audit records older than {} days",
                self.config.audit.retention_days
            );
        }
        Ok(())
    }

    /// Final snapshot before stopping.
    pub fn shutdown(&mut self) {
        let now = clock::now();
        if self.journal_rows > 0
            && let Err(e) = self.tx(|e| e.snapshot_in_tx(now))
        {
            eprintln!("agentfw daemon: cannot write the final snapshot: {}", e.body());
        }
        for (id, s) in &self.sessions {
            let _ = self
                .db
                .exec("UPDATE sessions SET last_seen = ?2 WHERE agent_id = ?1", params![id.as_str(), ms(s.last_seen)]);
        }
    }

    // ---- waking (WK1, WK2) --------------------------------------------------------------

    /// A message arrived for `agent`: wake it after `wake.delay_ms`, unless it was woken
    /// and has not read since, or cannot be woken.
    fn schedule_wake(&mut self, agent: &AgentId) {
        if !self.config.wake.enabled {
            return;
        }
        let delay = std::time::Duration::from_millis(self.config.wake.delay_ms);
        let Some(s) = self.sessions.get_mut(agent) else { return };
        if s.wake.outstanding || s.wake.scheduled.is_some() || s.channel().is_none() {
            return;
        }
        s.wake.scheduled = Some(clock::now() + delay);
    }

    fn run_wakes(&mut self, now: Timestamp) {
        let due: Vec<AgentId> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.wake.scheduled.is_some_and(|t| t <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            let waiting = self.waiting(&id).unwrap_or(0);
            let alive = self.sessions.get(&id).is_some_and(|s| self.alive(s));
            let cooldown = std::time::Duration::from_secs(self.config.wake.cooldown_secs);
            let max = usize::try_from(self.config.wake.max_per_hour).unwrap_or(usize::MAX);
            let Some(s) = self.sessions.get_mut(&id) else { continue };
            s.wake.scheduled = None;
            if waiting == 0 || !alive {
                continue;
            }
            while s.wake.recent.front().is_some_and(|t| now.since(*t) >= std::time::Duration::from_secs(3600)) {
                s.wake.recent.pop_front();
            }
            if let Some(last) = s.wake.recent.back()
                && now.since(*last) < cooldown
            {
                s.wake.scheduled = Some(*last + cooldown);
                continue;
            }
            if s.wake.recent.len() >= max {
                eprintln!("agentfw daemon: not waking {}: {max} wake-ups in the last hour (WK2)", s.agent.label());
                continue;
            }
            let Some(channel) = s.channel() else { continue };
            let nonce = clock::token().chars().take(12).collect::<String>();
            s.wake.nonces.push_back((nonce.clone(), now));
            while s.wake.nonces.len() > 16 {
                s.wake.nonces.pop_front();
            }
            s.wake.recent.push_back(now);
            s.wake.outstanding = true;
            let job = wake::Job { label: s.agent.label(), channel, text: wake::text(u64::from(waiting), &nonce) };
            match &self.wake_tx {
                Some(tx) => {
                    let _ = tx.send(job);
                }
                None => wake::run(&job),
            }
        }
    }
}

/// The boot time to compute start times with: remembered per boot, so identities do not
/// shift when `btime` moves by a second after a clock step.
fn stable_clock(db: &Connection) -> Result<ProcClock, StoreError> {
    let fresh = || ProcClock::read().unwrap_or(ProcClock::with_boot(0));
    let Some(boot) = procfs::boot_id() else { return Ok(fresh()) };
    let stored_boot = store::meta(db, "boot_id")?;
    let stored_ms = store::meta(db, "boot_ms")?.and_then(|v| v.parse::<u64>().ok());
    if let (Some(b), Some(boot_ms)) = (stored_boot, stored_ms)
        && b == boot
    {
        return Ok(ProcClock::with_boot(boot_ms));
    }
    let clock = fresh();
    store::set_meta(db, "boot_id", &boot)?;
    store::set_meta(db, "boot_ms", &clock.boot_ms.to_string())?;
    Ok(clock)
}

/// The default pack followed by the user's rule files in `dir` (if any), and how many
/// user files there were.
fn compile_rules(dir: &Path) -> Result<(RuleSet, usize), LoadError> {
    if stamp(dir).is_empty() {
        return RuleSet::default_pack().map(|set| (set, 0)).map_err(LoadError::Policy);
    }
    let files = Files::read(&[dir.to_owned()])?;
    let n = files.rules.len() + files.patterns.len() + files.placeholders.len();
    files.compile_with_default_pack().map(|set| (set, n))
}

/// The rule files' names, times and sizes, to notice edits.
fn stamp(dir: &Path) -> Vec<(PathBuf, Option<SystemTime>, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                out.push((path, meta.modified().ok(), meta.len()));
            }
        }
    }
    out.sort();
    out
}

fn delivery_view(m: &Accepted, fenced: String, warnings: Vec<String>) -> DeliveryView {
    DeliveryView {
        id: m.id.to_string(),
        from: m.from.label(),
        from_id: m.from.id.to_string(),
        thread: m.thread.to_string(),
        reply_to: m.reply_to.map(|r| r.to_string()),
        hops: m.provenance.hops,
        path: m.provenance.display_path(),
        fenced,
        warnings,
    }
}

fn refused(r: &Refusal) -> ErrorBody {
    ErrorBody {
        code: code::REFUSED.to_owned(),
        message: r.message(),
        refusal: Some(RefusalInfo {
            code: r.reason.code.clone(),
            rule: r.reason.rule.clone(),
            id: Some(r.id.to_string()),
        }),
    }
}

fn gone(s: &Session) -> EngineError {
    reply(
        code::GONE_RECIPIENT,
        format!(
            "{} ({}) is gone: its session has ended, so nothing can be delivered to it; call list_team to see who is reachable, or ask your user",
            s.agent.label(),
            s.agent.id
        ),
    )
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

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Off => "off",
        Mode::Report => "report",
        Mode::Enforce => "enforce",
    }
}

/// This build's version.
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}
