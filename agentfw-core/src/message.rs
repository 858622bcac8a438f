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
}

impl fmt::Display for AgentId {
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
    /// The device the agent runs on; empty for this machine.
    pub machine: String,
}

impl Agent {
    pub fn new(id: impl Into<String>, kind: impl Into<String>, project: impl Into<String>) -> Self {
        Self { id: AgentId::new(id), kind: kind.into(), project: project.into(), machine: String::new() }
    }

    /// The display label of ID3, `<project> (<agent>)`, e.g. `web (claude)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.project, self.kind)
    }

    /// The same agent as a hop on a provenance path.
    pub fn hop(&self) -> Hop {
        Hop { agent: self.id.clone(), label: self.label() }
    }
}

/// One agent on a message's path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Hop {
    pub agent: AgentId,
    pub label: String,
}
