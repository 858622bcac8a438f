//! Which agent each session is a process of: the [`AgentKey`] of every [`AgentId`] the
//! firewall has seen.
//!
//! Admin actions, harness hooks and provenance paths name sessions by id; containment and
//! limits keep their state by agent key. The adapter passes whole [`Agent`]s with each
//! message, so the firewall learns the key of every session that sends or receives, and of
//! every session those run inside (ID6), and looks it up when it is only given the id.
//! A session not seen for as long as text is remembered is forgotten; its id then stands
//! for itself alone.

use core::time::Duration;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::message::{Agent, AgentId, AgentKey};
use crate::time::Timestamp;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    key: AgentKey,
    at: Timestamp,
}

/// The agent key of each session seen, with when it was last seen.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Agents {
    seen: BTreeMap<AgentId, Seen>,
}

impl Agents {
    /// Note `agent` and the sessions it runs inside, keyed on the machine `here`; returns
    /// the (session, key) of each seen for the first time, or now known as another agent.
    pub fn learn(&mut self, now: Timestamp, agent: &Agent, here: &str) -> Vec<(AgentId, AgentKey)> {
        let mut new = Vec::new();
        for (id, key) in agent.keyed_chain(here) {
            let seen = Seen { key: key.clone(), at: now };
            if self.seen.insert(id.clone(), seen).is_none_or(|old| old.key != key) {
                new.push((id, key));
            }
        }
        new
    }

    /// The agent `session` is a process of, if it has been seen.
    pub fn key_of(&self, session: &AgentId) -> Option<AgentKey> {
        self.seen.get(session).map(|s| s.key.clone())
    }

    /// The agent `session` is a process of, or, for a session never seen, a key that
    /// stands for that session alone (it cannot equal the key of any [`Agent`]).
    pub fn key_or_session(&self, session: &AgentId) -> AgentKey {
        self.key_of(session).unwrap_or_else(|| AgentKey::session(session))
    }

    /// The keys of the sessions seen, for [`crate::firewall::Input::Machine`].
    pub fn keys(&self) -> impl Iterator<Item = &AgentKey> {
        self.seen.values().map(|s| &s.key)
    }

    /// Every key `rekey` moves is that agent's new key.
    pub fn rekey(&mut self, rekey: impl Fn(&AgentKey) -> Option<AgentKey>) {
        for seen in self.seen.values_mut() {
            if let Some(key) = rekey(&seen.key) {
                seen.key = key;
            }
        }
    }

    /// Forget sessions not seen for `keep`.
    pub fn expire(&mut self, now: Timestamp, keep: Duration) {
        self.seen.retain(|_, s| now.since(s.at) < keep);
    }
}
