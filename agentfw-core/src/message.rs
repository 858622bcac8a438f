//! Messages, the agents that send them, and their ids (DL3).
//!
//! Ids are ULIDs built from the caller's clock and randomness, so they sort by time and a
//! test with a seeded RNG gets the same ids every run.

use core::fmt;
use core::str::FromStr;

use rand_core::CryptoRng;
use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// A message id: a ULID whose time part is when the firewall accepted the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct MessageId(ulid::Ulid);

impl MessageId {
    /// A fresh id for a message accepted at `now`, with 80 random bits from `rng`.
    pub fn generate(now: Timestamp, rng: &mut impl CryptoRng) -> Self {
        let mut random = [0u8; 16];
        rng.fill_bytes(&mut random);
        Self(ulid::Ulid::from_parts(now.as_millis(), u128::from_le_bytes(random)))
    }

    /// When the id was made.
    pub fn timestamp(self) -> Timestamp {
        Timestamp::from_millis(self.0.timestamp_ms())
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for MessageId {
    type Err = IdError;

    fn from_str(s: &str) -> Result<Self, IdError> {
        ulid::Ulid::from_string(s).map(Self).map_err(|_| IdError::Malformed(s.chars().take(64).collect()))
    }
}

impl From<MessageId> for String {
    fn from(id: MessageId) -> String {
        id.to_string()
    }
}

impl TryFrom<String> for MessageId {
    type Error = IdError;

    fn try_from(s: String) -> Result<Self, IdError> {
        s.parse()
    }
}

/// A thread is named by the id of the message that opened it, so its age is in its name.
pub type ThreadId = MessageId;

/// Why a string is not a message id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("`{0}` is not a message id: expected 26 characters of Crockford base32 (a ULID)")]
    Malformed(String),
}

impl IdError {
    /// A stable code for bindings and logs: `message.bad_id`.
    pub fn code(&self) -> &'static str {
        match self {
            IdError::Malformed(_) => "message.bad_id",
        }
    }
}

/// The stable id of one agent session, decided by the identity layer (ID3: agent kind, pid
/// and process start time), never by anything the model says.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AgentId(String);

impl AgentId {
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this id is `host`, or `host` refined by a harness session id (ID4): a
    /// process hosting many sessions (Codex's app-server) is `<kind>:<pid>:<start>`, each of
    /// its sessions `<kind>:<pid>:<start>:<session>`. What holds for the host holds for
    /// every session it carries.
    pub fn is_session_of(&self, host: &AgentId) -> bool {
        self == host || self.0.strip_prefix(host.as_str()).is_some_and(|rest| rest.starts_with(':'))
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The agent behind a session, across its processes: harness kind, machine and project,
/// then the same for each session it runs inside (ID6). Containment and limits are kept by
/// this key, so a quarantined agent stays quarantined, and a limited one limited, when its
/// harness is started again in the same folder; [`AgentId`] stays the key of one session
/// (delivery, the audit log). Two folders of the same name on one machine share a key, as
/// they share a label: what people cannot tell apart is held as one agent.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AgentKey(String);

impl AgentKey {
    /// The key of a session whose agent is not known: its own id, marked so that it cannot
    /// equal an agent's key (those start with a quote).
    pub fn session(id: &AgentId) -> Self {
        Self(format!("session {id}"))
    }

    /// The key a state saved before agent keys used for `id`: the bare session id. What
    /// is found under it belongs to the agent of `id` once that is known
    /// ([`crate::firewall::Input::Seen`]); it cannot equal an agent's or a session's key.
    pub fn legacy(id: &AgentId) -> Self {
        Self(id.as_str().to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the key of an agent on `machine`.
    pub fn is_on(&self, machine: &str) -> bool {
        self.machine_span().and_then(|span| self.0.get(span)).is_some_and(|quoted| *quoted == format!("{machine:?}"))
    }

    /// This key with its machine part `machine`, if it is an agent's key; how state kept
    /// under a machine's old name (or under none, before machines had names in keys) moves
    /// to its new name ([`crate::firewall::Input::Machine`]).
    pub fn on_machine(&self, machine: &str) -> Option<AgentKey> {
        let span = self.machine_span()?;
        let (head, tail) = (self.0.get(..span.start)?, self.0.get(span.end..)?);
        Some(AgentKey(format!("{head}{machine:?}{tail}")))
    }

    /// Where the quoted machine part is: an agent's key starts with its quoted kind, `@`,
    /// then the quoted machine ([`Agent::key`]).
    fn machine_span(&self) -> Option<core::ops::Range<usize>> {
        let kind_end = quoted_end(&self.0, 0)?;
        let start = kind_end + 1;
        (self.0.as_bytes().get(kind_end) == Some(&b'@')).then_some(())?;
        Some(start..quoted_end(&self.0, start)?)
    }
}

/// The end (exclusive) of the `Debug`-quoted string starting at byte `start` of `s`.
fn quoted_end(s: &str, start: usize) -> Option<usize> {
    let bytes = s.as_bytes();
    (bytes.get(start) == Some(&b'"')).then_some(())?;
    let mut i = start + 1;
    while let Some(b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

impl fmt::Display for AgentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One agent session as rules and people see it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Agent {
    pub id: AgentId,
    /// The harness: `claude`, `codex`, `cursor`, `gemini`, or a bot's own name.
    pub kind: String,
    /// Basename of the agent's working directory (its git root where there is one).
    pub project: String,
    /// The device the agent runs on; empty for this machine (whose name the firewall's
    /// [`crate::firewall::Config::machine`] gives, for the agent's key).
    pub machine: String,
    /// The sessions this one runs inside, nearest first (ID6): empty for a session started
    /// outside any other. A nested session inherits the standing of each of them (blocked,
    /// quarantined, not admitted, limits), and its label names them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub within: Vec<Enclosing>,
    /// Its harness binary (or that of a session it runs inside) is not a verified build
    /// (ID2): every delivery from it says so on its header line.
    #[serde(default, skip_serializing_if = "core::ops::Not::not")]
    pub unverified: bool,
}

/// A session another one runs inside (ID6).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Enclosing {
    pub id: AgentId,
    pub kind: String,
    pub project: String,
}

impl Agent {
    pub fn new(id: impl Into<String>, kind: impl Into<String>, project: impl Into<String>) -> Self {
        Self {
            id: AgentId::new(id),
            kind: kind.into(),
            project: project.into(),
            machine: String::new(),
            within: Vec::new(),
            unverified: false,
        }
    }

    /// The display label of ID3, `<project> (<agent>)`, e.g. `web (claude)`; for a nested
    /// session each enclosing one follows, nearest first: `web (claude) in worker (cursor)`.
    /// Every name is [cleaned](crate::label::clean), so a label is one bounded line.
    pub fn label(&self) -> String {
        let mut label = own_label(&self.project, &self.kind);
        for e in &self.within {
            label.push_str(" in ");
            label.push_str(&own_label(&e.project, &e.kind));
        }
        crate::label::bounded(&label, crate::label::MAX_LABEL_CHARS)
    }

    /// How a delivery's header line names this sender: its label, and a warning before the
    /// fence when it is unverified (ID2).
    pub fn header_label(&self) -> String {
        if self.unverified {
            format!(
                "{} [unverified: agentfw could not verify that its harness program is a genuine build]",
                self.label()
            )
        } else {
            self.label()
        }
    }

    /// `<project> (<agent>)` of this session alone, without what it runs inside.
    pub fn own_label(&self) -> String {
        own_label(&self.project, &self.kind)
    }

    /// This session's id, then those of the sessions it runs inside, nearest first: the
    /// nesting chain, as a key for whatever a session inherits from the ones around it.
    pub fn chain(&self) -> impl Iterator<Item = &AgentId> {
        core::iter::once(&self.id).chain(self.within.iter().map(|e| &e.id))
    }

    /// The sessions this one runs inside, each as an agent with its own enclosing chain.
    pub fn enclosing(&self) -> impl Iterator<Item = Agent> + '_ {
        self.within.iter().enumerate().map(|(i, e)| Agent {
            id: e.id.clone(),
            kind: e.kind.clone(),
            project: e.project.clone(),
            machine: self.machine.clone(),
            within: self.within.get(i + 1..).unwrap_or_default().to_vec(),
            unverified: false,
        })
    }

    /// Does this session run inside `host` (or a session `host` carries, ID4), or is it
    /// `host`?
    pub fn is_within(&self, host: &AgentId) -> bool {
        self.chain().any(|id| id.is_session_of(host) || host.is_session_of(id))
    }

    /// The [`AgentKey`] of the agent this session is a process of, as the firewall of the
    /// machine named `here` keys it: an agent whose `machine` is empty runs on `here`, so
    /// every machine that names it the same gives it the same key. Each part is quoted, so
    /// no choice of names makes two different agents' keys equal.
    pub fn key(&self, here: &str) -> AgentKey {
        use core::fmt::Write as _;
        let machine = if self.machine.is_empty() { here } else { &self.machine };
        let mut key = String::with_capacity(8 + self.kind.len() + machine.len() + self.project.len());
        // Writing to a String cannot fail.
        let _ = write!(key, "{:?}@{:?}:{:?}", self.kind, machine, self.project);
        for e in &self.within {
            let _ = write!(key, " in {:?}:{:?}", e.kind, e.project);
        }
        AgentKey(key)
    }

    /// The keys of this session's chain (its own, then each it runs inside, nearest first),
    /// with the session id each belongs to, as the firewall of `here` keys them.
    pub fn keyed_chain<'a>(&'a self, here: &'a str) -> impl Iterator<Item = (AgentId, AgentKey)> + 'a {
        core::iter::once((self.id.clone(), self.key(here)))
            .chain(self.enclosing().map(move |e| (e.id.clone(), e.key(here))))
    }

    /// The same agent as a hop on a provenance path.
    pub fn hop(&self) -> Hop {
        Hop { agent: self.id.clone(), label: self.label() }
    }
}

fn own_label(project: &str, kind: &str) -> String {
    format!("{} ({})", crate::label::clean(project), crate::label::clean(kind))
}

/// One agent on a message's path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Hop {
    pub agent: AgentId,
    pub label: String,
}
