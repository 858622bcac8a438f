//! Containment: what to hold back when an injection spreads (CT1–CT3).
//!
//! When rules refuse text that was forwarded (hops ≥ 2), every agent it passed through is
//! quarantined: for an hour it can neither send nor receive. The text itself is remembered
//! for seven days and refused on sight wherever it shows up again. An admin can lift a
//! quarantine or forget a text.
//!
//! A quarantine is put on a session ([`AgentId`]) and holds its agent ([`AgentKey`]): once
//! the key of the quarantined session is known, every process of the same agent is held
//! with it, so restarting the harness does not escape it.

use core::fmt;
use core::time::Duration;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::fingerprint::{Fingerprints, TextMemory};
use crate::message::{Agent, AgentId, AgentKey, Hop, MessageId};
use crate::time::Timestamp;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainmentConfig {
    /// How long an agent on a refused text's path is quarantined (CT1).
    pub quarantine: Duration,
    /// How long refused text is remembered (CT2).
    pub remember: Duration,
    /// At most this many remembered texts; the oldest go first.
    pub max_remembered: usize,
}

impl Default for ContainmentConfig {
    fn default() -> Self {
        Self {
            quarantine: Duration::from_secs(3600),
            remember: Duration::from_secs(7 * 24 * 3600),
            max_remembered: 10_000,
        }
    }
}

/// Names a remembered text, so an admin can forget it: the fingerprint of the whole text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TextId(pub u64);

impl fmt::Display for TextId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// Why an agent is quarantined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quarantine {
    pub until: Timestamp,
    /// The refused message that put it there, or `None` when an admin did.
    pub message: Option<MessageId>,
    pub reason: String,
    /// The agent the quarantined session is a process of, once known: every session with
    /// this key is held too. `None` for a session never seen (an admin's quarantine of an
    /// id from elsewhere) and in databases from before agent keys, until it is seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<AgentKey>,
}

/// A refused text, remembered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remembered {
    pub text: TextId,
    pub message: MessageId,
    pub rule: String,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Containment {
    config: ContainmentConfig,
    quarantined: BTreeMap<AgentId, Quarantine>,
    remembered: TextMemory<Remembered>,
}

impl Containment {
    pub fn new(config: ContainmentConfig) -> Self {
        let remembered = TextMemory::new(config.remember, config.max_remembered);
        Self { config, quarantined: BTreeMap::new(), remembered }
    }

    /// The live quarantine of `agent`, if any.
    pub fn quarantine_of(&self, now: Timestamp, agent: &AgentId) -> Option<&Quarantine> {
        self.quarantined.get(agent).filter(|q| q.until > now)
    }

    /// The live quarantine that holds `agent`: its own, or that of a session it runs inside
    /// (ID6), with the id of the session in `agent`'s chain that it holds. A quarantine holds
    /// a session by its id and, through its key, every other process of the same agent.
    /// `here` is the machine an agent with no machine runs on ([`Agent::key`]).
    pub fn quarantine_within(&self, now: Timestamp, agent: &Agent, here: &str) -> Option<(AgentId, &Quarantine)> {
        if let Some(q) = self.quarantine_of(now, &agent.id) {
            return Some((agent.id.clone(), q));
        }
        let live = || self.quarantined.iter().filter(|(_, q)| q.until > now);
        if let Some((id, q)) = live().find(|(id, _)| agent.is_within(id)) {
            return Some((id.clone(), q));
        }
        agent
            .keyed_chain(here)
            .find_map(|(id, key)| live().find(|(_, q)| q.key.as_ref() == Some(&key)).map(|(_, q)| (id, q)))
    }

    /// The agent `session` is a process of is `key`: a quarantine put on it before its key
    /// was known now holds that agent.
    pub fn bind_key(&mut self, session: &AgentId, key: &AgentKey) {
        if let Some(q) = self.quarantined.get_mut(session).filter(|q| q.key.is_none()) {
            q.key = Some(key.clone());
        }
    }

    /// The keys quarantines hold, for [`crate::firewall::Input::Machine`].
    pub fn keys(&self) -> impl Iterator<Item = &AgentKey> {
        self.quarantined.values().filter_map(|q| q.key.as_ref())
    }

    /// Every key `rekey` moves is that agent's new key.
    pub fn rekey(&mut self, rekey: impl Fn(&AgentKey) -> Option<AgentKey>) {
        for q in self.quarantined.values_mut() {
            if let Some(key) = q.key.as_ref().and_then(&rekey) {
                q.key = Some(key);
            }
        }
    }

    /// The remembered refusal this text matches, if any (CT2).
    pub fn recall(&self, now: Timestamp, prints: &Fingerprints) -> Option<&Remembered> {
        self.remembered.matches(now, prints).into_iter().next()
    }

    /// Contain refused forwarded text: quarantine every agent on `path` except `spared` (the
    /// recipient, which never saw it) and remember the text. Returns who was quarantined.
    /// `key_of` gives the agent of a session on the path, where it is known.
    pub fn contain(
        &mut self,
        now: Timestamp,
        path: &[Hop],
        spared: &AgentId,
        key_of: impl Fn(&AgentId) -> Option<AgentKey>,
        prints: &Fingerprints,
        refusal: Remembered,
    ) -> Vec<(AgentId, Quarantine)> {
        let until = now + self.config.quarantine;
        let reason =
            format!("forwarded text refused by rule `{}`: {}", refusal.rule, refusal.reason.trim_end_matches('.'));
        let mut held = Vec::new();
        for hop in path.iter().filter(|h| &h.agent != spared) {
            let key = key_of(&hop.agent);
            let q = Quarantine { until, message: Some(refusal.message), reason: reason.clone(), key };
            if self.quarantined.get(&hop.agent).is_none_or(|old| old.until < until) {
                self.quarantined.insert(hop.agent.clone(), q.clone());
                held.push((hop.agent.clone(), q));
            }
        }
        self.remember(now, prints, refusal);
        held
    }

    /// Remember refused text without quarantining anyone.
    pub fn remember(&mut self, now: Timestamp, prints: &Fingerprints, refusal: Remembered) {
        if self.recall(now, prints).is_none() {
            self.remembered.insert(now, prints.clone(), refusal);
        }
    }

    /// An admin's quarantine (AM2), for `duration`, of the session `agent` and, when `key`
    /// is known, of every process of its agent.
    pub fn quarantine(
        &mut self,
        now: Timestamp,
        agent: AgentId,
        key: Option<AgentKey>,
        duration: Duration,
        reason: String,
    ) -> Quarantine {
        let q = Quarantine { until: now + duration, message: None, reason, key };
        self.quarantined.insert(agent, q.clone());
        q
    }

    /// Lift a quarantine (CT3): that of the session `agent` and every one that holds its
    /// agent `key`, so naming any process of a quarantined agent releases it. Returns the
    /// sessions released.
    pub fn lift(&mut self, agent: &AgentId, key: Option<&AgentKey>) -> Vec<AgentId> {
        let released: Vec<AgentId> = self
            .quarantined
            .iter()
            .filter(|(id, q)| *id == agent || (key.is_some() && q.key.as_ref() == key))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &released {
            self.quarantined.remove(id);
        }
        released
    }

    /// Forget a remembered text (CT3). Returns whether it was remembered.
    pub fn forget(&mut self, text: TextId) -> bool {
        self.remembered.forget(|r| r.text == text) > 0
    }

    /// Drop expired quarantines and texts; returns the agents released.
    pub fn expire(&mut self, now: Timestamp) -> Vec<AgentId> {
        let released: Vec<AgentId> =
            self.quarantined.iter().filter(|(_, q)| q.until <= now).map(|(a, _)| a.clone()).collect();
        for agent in &released {
            self.quarantined.remove(agent);
        }
        self.remembered.expire(now);
        released
    }

    pub fn next_expiry(&self) -> Option<Timestamp> {
        self.quarantined.values().map(|q| q.until).chain(self.remembered.next_expiry()).min()
    }

    /// Every quarantined agent, live or not yet expired by a timeout.
    pub fn quarantined(&self) -> impl Iterator<Item = (&AgentId, &Quarantine)> {
        self.quarantined.iter()
    }

    /// Every remembered text.
    pub fn remembered(&self) -> impl Iterator<Item = &Remembered> {
        self.remembered.values()
    }

    /// Every remembered text with its fingerprints (never the text), so another machine
    /// can refuse it on sight too (CT2).
    pub fn remembered_with_prints(&self) -> impl Iterator<Item = (&Remembered, &Fingerprints)> {
        self.remembered.entries().map(|(r, prints, _)| (r, prints))
    }
}
