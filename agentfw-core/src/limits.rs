//! Limits that need a person (LM1–LM6): fan-out, the turn fuse, rate, the thread fuse and
//! loop signals. None of them looks at what the text means; each trips at its number and
//! its refusal says what happened and asks the agent to fetch its user (LM6).
//!
//! The turn fuse counts a *chain*: a message's turn is one more than the highest turn its
//! sender has received since a person last spoke in that session, so a pair, a triangle or
//! any longer cycle of agents answering each other all count towards the same fuse.

use core::fmt;
use core::time::Duration;
use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::code::ReasonCode;
use crate::message::{AgentId, AgentKey, MessageId, ThreadId};
use crate::time::Timestamp;

pub mod wake;

/// What to do when a loop signal fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Refuse,
    /// Let the message through with a warning in its verdict.
    Warn,
    Off,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsConfig {
    /// LM1: distinct recipients one agent may reach in `fan_out_window`.
    pub fan_out: usize,
    pub fan_out_window: Duration,
    /// LM2: messages in one chain of agents with no person in between.
    pub max_turns: u32,
    /// LM3: messages one agent may send in `rate_window`.
    pub rate: usize,
    pub rate_window: Duration,
    /// LM4: messages in one thread, and its age, before it closes.
    pub thread_messages: u32,
    pub thread_age: Duration,
    /// LM5: how similar (in percent) adjacent messages may be before they count as a
    /// near-duplicate, and how far back repeats are looked for.
    pub similarity_percent: u8,
    pub repeat_window: Duration,
    pub self_repeat: Action,
    pub near_duplicate: Action,
    pub ack_ping_pong: Action,
    pub ack_only: Action,
    /// Bounds the message → thread map that lets replies find their thread.
    pub max_tracked_messages: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            fan_out: 8,
            fan_out_window: Duration::from_secs(600),
            max_turns: 10,
            rate: 60,
            rate_window: Duration::from_secs(60),
            thread_messages: 30,
            thread_age: Duration::from_secs(24 * 3600),
            similarity_percent: 85,
            repeat_window: Duration::from_secs(600),
            self_repeat: Action::Refuse,
            near_duplicate: Action::Refuse,
            ack_ping_pong: Action::Refuse,
            ack_only: Action::Warn,
            max_tracked_messages: 100_000,
        }
    }
}

/// A limit that tripped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Trip {
    FanOut {
        limit: usize,
        window_secs: u64,
    },
    TurnFuse {
        limit: u32,
    },
    Rate {
        limit: usize,
        window_secs: u64,
    },
    ThreadMessages {
        thread: ThreadId,
        limit: u32,
    },
    ThreadAge {
        thread: ThreadId,
        hours: u64,
    },
    SelfRepeat,
    NearDuplicate {
        percent: u8,
    },
    AckPingPong,
    AckOnly,
    /// `reply_to` names no message the sender took part in within the thread window.
    UnknownReply {
        reply_to: MessageId,
    },
}

impl Trip {
    /// A stable code for logs and scripts, e.g. `limit.fan_out`.
    pub fn code(&self) -> ReasonCode {
        match self {
            Trip::FanOut { .. } => ReasonCode::LimitFanOut,
            Trip::TurnFuse { .. } => ReasonCode::LimitTurnFuse,
            Trip::Rate { .. } => ReasonCode::LimitRate,
            Trip::ThreadMessages { .. } => ReasonCode::LimitThreadMessages,
            Trip::ThreadAge { .. } => ReasonCode::LimitThreadAge,
            Trip::SelfRepeat => ReasonCode::LoopSelfRepeat,
            Trip::NearDuplicate { .. } => ReasonCode::LoopNearDuplicate,
            Trip::AckPingPong => ReasonCode::LoopAckPingPong,
            Trip::AckOnly => ReasonCode::LoopAckOnly,
            Trip::UnknownReply { .. } => ReasonCode::MessageUnknownReply,
        }
    }
}

impl fmt::Display for Trip {
    /// What happened and what to do, in words an agent can pass on to its user (LM6).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trip::FanOut { limit, window_secs } => write!(
                f,
                "you have already messaged {limit} different agents in the last {} minutes, the most allowed; ask your user before reaching anyone else",
                window_secs / 60
            ),
            Trip::TurnFuse { limit } => write!(
                f,
                "this conversation has gone {limit} messages back and forth between agents with no person in between; stop and ask your user to step in"
            ),
            Trip::Rate { limit, window_secs } => write!(
                f,
                "you have sent {limit} messages in the last {window_secs} seconds, the most allowed; wait, and ask your user if this keeps happening"
            ),
            Trip::ThreadMessages { thread, limit } => write!(
                f,
                "thread {thread} is closed: it reached {limit} messages; ask your user whether to start a new conversation"
            ),
            Trip::ThreadAge { thread, hours } => write!(
                f,
                "thread {thread} is closed: it is older than {hours} hours; ask your user whether to start a new conversation"
            ),
            Trip::SelfRepeat => {
                f.write_str("you already sent this exact text to this agent recently; the conversation looks stuck, ask your user")
            }
            Trip::NearDuplicate { percent } => write!(
                f,
                "this message is at least {percent}% the same as the one before it in this conversation; the agents look stuck in a loop, ask your user"
            ),
            Trip::AckPingPong => f.write_str(
                "both agents are only acknowledging each other; nothing is left to say, so stop here and tell your user",
            ),
            Trip::AckOnly => f.write_str("this message only acknowledges; agents need not acknowledge each other"),
            Trip::UnknownReply { reply_to } => write!(
                f,
                "`{reply_to}` is not a message you sent or received in a thread that is still open; reply without reply_to or check the id with your user"
            ),
        }
    }
}

/// A message the limits are asked about.
#[derive(Clone, Copy, Debug)]
pub struct Attempt<'a> {
    pub id: MessageId,
    /// The sending session, for threads (DL3).
    pub from: &'a AgentId,
    /// The receiving session, for threads.
    pub to: &'a AgentId,
    /// The sending agent: rate, fan-out, turns and loop signals count per agent, so a
    /// restarted harness keeps its counts for the window.
    pub agent: &'a AgentKey,
    /// The agents of the sessions `from` runs inside (ID6): the message counts against each
    /// of them too, so starting nested sessions never multiplies an agent's rate, fan-out or
    /// turns.
    pub within: &'a [AgentKey],
    /// The receiving agent.
    pub to_agent: &'a AgentKey,
    /// The thread, from [`Limits::thread_for`].
    pub thread: ThreadId,
    /// The folded text, for loop signals.
    pub folded: &'a str,
    /// The whole-text fingerprint, for self-repeats.
    pub whole: u64,
}

/// What the limits decided for one message that may be sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admit {
    pub thread: ThreadId,
    /// The message's place in its chain of agent turns (1 = prompted by a person).
    pub turn: u32,
    /// Loop signals set to [`Action::Warn`] that fired.
    pub warnings: Vec<Trip>,
    /// Kept for the near-duplicate check of the next message in this pair.
    grams: Vec<u32>,
    ack: bool,
}

/// The outcome of [`Limits::check`]: admitted, or refused with the trip and, when a thread
/// fuse blew for the first time, the note to leave in the thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    Admit(Admit),
    Refuse { trip: Trip, note: Option<ThreadNote> },
}

/// A system note left in a thread when it closes (LM4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadNote {
    pub thread: ThreadId,
    pub participants: Vec<AgentId>,
    pub text: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct AgentState {
    /// (when, to whom, whole-text fingerprint) of each accepted send, oldest first.
    sent: VecDeque<(Timestamp, AgentKey, u64)>,
    /// Highest turn received since a person last spoke in this session.
    chain: u32,
    last_active: Timestamp,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct LastMessage {
    from: AgentKey,
    at: Timestamp,
    grams: Vec<u32>,
    ack: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct ThreadState {
    count: u32,
    participants: Vec<AgentId>,
    noted: bool,
}

/// A message's thread and the agents at its two ends: any process of either may reply.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Tracked {
    thread: ThreadId,
    from: AgentKey,
    to: AgentKey,
}

/// The counters behind every limit, all bounded in time.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Limits {
    config: LimitsConfig,
    /// By agent key. Databases from before agent keys hold session ids here: those counts
    /// stay with that session and age out with their window.
    agents: HashMap<AgentKey, AgentState>,
    /// The last message between each pair of agents, keyed by the two keys in order.
    #[serde(with = "pairs_as_list")]
    pairs: HashMap<(AgentKey, AgentKey), LastMessage>,
    threads: HashMap<ThreadId, ThreadState>,
    /// Accepted messages by id (ULIDs sort by time, so expiry trims from the front).
    messages: BTreeMap<MessageId, Tracked>,
}

/// Largest text compared for near-duplicates; longer texts are compared on this prefix.
const MAX_COMPARED: usize = 4096;

impl Limits {
    pub fn new(config: LimitsConfig) -> Self {
        Self {
            config,
            agents: HashMap::new(),
            pairs: HashMap::new(),
            threads: HashMap::new(),
            messages: BTreeMap::new(),
        }
    }

    pub fn config(&self) -> &LimitsConfig {
        &self.config
    }

    /// Would this message pass every limit? Changes nothing but a thread's `noted` flag.
    pub fn check(&mut self, now: Timestamp, attempt: &Attempt<'_>) -> Check {
        let &Attempt { agent: from, within, to_agent: to, thread, folded, whole, .. } = attempt;
        let c = &self.config;
        let state = self.agents.get(from);
        let sent = || state.into_iter().flat_map(|s| s.sent.iter());
        let rate_since = now.as_millis().saturating_sub(millis(c.rate_window));
        let fan_since = now.as_millis().saturating_sub(millis(c.fan_out_window));
        let mut turn = 0;
        for sender in core::iter::once(from).chain(within) {
            let Some(state) = self.agents.get(sender) else { continue };
            if state.sent.iter().filter(|(at, _, _)| at.as_millis() > rate_since).count() >= c.rate {
                return refuse(Trip::Rate { limit: c.rate, window_secs: c.rate_window.as_secs() });
            }
            if fans_out(
                state.sent.iter().filter(|(at, _, _)| at.as_millis() > fan_since).map(|(_, a, _)| a),
                to,
                c.fan_out,
            ) {
                return refuse(Trip::FanOut { limit: c.fan_out, window_secs: c.fan_out_window.as_secs() });
            }
            turn = turn.max(state.chain);
        }
        let turn = turn.saturating_add(1);
        if turn > c.max_turns {
            return refuse(Trip::TurnFuse { limit: c.max_turns });
        }
        if let Some(trip) = self.thread_closed(now, thread) {
            let note = self.threads.get_mut(&thread).filter(|t| !t.noted).map(|t| {
                t.noted = true;
                ThreadNote {
                    thread,
                    participants: t.participants.clone(),
                    text: format!("agentfw: this thread is closed ({trip}). A person can start a new one."),
                }
            });
            return Check::Refuse { trip, note };
        }

        let c = &self.config;
        let mut warnings = Vec::new();
        let repeat_since = now.as_millis().saturating_sub(millis(c.repeat_window));
        let repeated = sent().any(|(at, a, h)| at.as_millis() > repeat_since && a == to && *h == whole);
        let grams = grams(folded);
        let ack = is_ack_only(folded);
        let last = self.pairs.get(&pair(from, to)).filter(|l| l.at.as_millis() > repeat_since);
        let signals = [
            (repeated, c.self_repeat, Trip::SelfRepeat),
            (
                last.is_some_and(|l| similar(&l.grams, &grams, c.similarity_percent)),
                c.near_duplicate,
                Trip::NearDuplicate { percent: c.similarity_percent },
            ),
            (ack && last.is_some_and(|l| l.ack && &l.from != from), c.ack_ping_pong, Trip::AckPingPong),
            (ack, c.ack_only, Trip::AckOnly),
        ];
        for (fired, action, trip) in signals {
            match (fired, action) {
                (true, Action::Refuse) => return refuse(trip),
                (true, Action::Warn) => warnings.push(trip),
                _ => {}
            }
        }
        Check::Admit(Admit { thread, turn, warnings, grams, ack })
    }

    /// The thread a message `id` from `from` joins: the thread of the message it replies to,
    /// which `from` must have sent or received, or a new one named after `id` (DL3).
    pub fn thread_for(&self, id: MessageId, from: &AgentKey, reply_to: Option<MessageId>) -> Result<ThreadId, Trip> {
        let Some(r) = reply_to else { return Ok(id) };
        match self.messages.get(&r) {
            Some(t) if &t.from == from || &t.to == from => Ok(t.thread),
            _ => Err(Trip::UnknownReply { reply_to: r }),
        }
    }

    /// Messages accepted in `thread` so far.
    pub fn thread_turns(&self, thread: ThreadId) -> u32 {
        self.threads.get(&thread).map_or(0, |t| t.count)
    }

    fn thread_closed(&self, now: Timestamp, thread: ThreadId) -> Option<Trip> {
        let c = &self.config;
        if now.since(thread.timestamp()) >= c.thread_age {
            return Some(Trip::ThreadAge { thread, hours: c.thread_age.as_secs() / 3600 });
        }
        let count = self.threads.get(&thread).map_or(0, |t| t.count);
        (count >= c.thread_messages).then_some(Trip::ThreadMessages { thread, limit: c.thread_messages })
    }

    /// Count a message the firewall accepted.
    pub fn record_send(&mut self, now: Timestamp, attempt: &Attempt<'_>, admit: Admit) {
        let &Attempt { id, from, to, agent: sender_key, within, to_agent, whole, .. } = attempt;
        let keep = millis(self.config.rate_window.max(self.config.fan_out_window).max(self.config.repeat_window));
        for sender in core::iter::once(sender_key).chain(within) {
            let agent = self.agents.entry(sender.clone()).or_default();
            agent.sent.push_back((now, to_agent.clone(), whole));
            trim(&mut agent.sent, now, keep);
            agent.last_active = now;
        }
        let last = LastMessage { from: sender_key.clone(), at: now, grams: admit.grams, ack: admit.ack };
        self.pairs.insert(pair(sender_key, to_agent), last);
        let thread = self.threads.entry(admit.thread).or_default();
        thread.count = thread.count.saturating_add(1);
        for a in [from, to] {
            if !thread.participants.contains(a) {
                thread.participants.push(a.clone());
            }
        }
        while self.messages.len() >= self.config.max_tracked_messages.max(1) {
            self.messages.pop_first();
        }
        let tracked = Tracked { thread: admit.thread, from: sender_key.clone(), to: to_agent.clone() };
        self.messages.insert(id, tracked);
    }

    /// `key` is the agent of the session `id`: counts a state saved before agent keys kept
    /// under the bare session id ([`AgentKey::legacy`]) are the agent's from now on, so an
    /// upgraded daemon keeps its limits.
    pub fn adopt(&mut self, id: &AgentId, key: &AgentKey) {
        self.rekey(&AgentKey::legacy(id), key);
    }

    /// What was counted under `legacy` is the agent `key`'s from now on, merged with what
    /// it has: [`Limits::adopt`], and a machine's new name ([`crate::firewall::Input::Machine`]).
    pub fn rekey(&mut self, legacy: &AgentKey, key: &AgentKey) {
        let legacy = legacy.clone();
        if let Some(old) = self.agents.remove(&legacy) {
            let agent = self.agents.entry(key.clone()).or_default();
            agent.sent.extend(old.sent);
            agent.sent.make_contiguous().sort_by_key(|(at, _, _)| *at);
            agent.chain = agent.chain.max(old.chain);
            agent.last_active = agent.last_active.max(old.last_active);
        }
        for (_, to, _) in self.agents.values_mut().flat_map(|a| a.sent.iter_mut()) {
            if *to == legacy {
                to.clone_from(key);
            }
        }
        let pairs: Vec<(AgentKey, AgentKey)> =
            self.pairs.keys().filter(|(a, b)| *a == legacy || *b == legacy).cloned().collect();
        for (a, b) in pairs {
            if let Some(mut last) = self.pairs.remove(&(a.clone(), b.clone())) {
                let rekey = |k: AgentKey| if k == legacy { key.clone() } else { k };
                last.from = rekey(last.from);
                self.pairs.insert(pair(&rekey(a), &rekey(b)), last);
            }
        }
        for t in self.messages.values_mut() {
            for end in [&mut t.from, &mut t.to] {
                if *end == legacy {
                    end.clone_from(key);
                }
            }
        }
    }

    /// The agent `to` received a message at `turn` in its chain.
    pub fn record_delivery(&mut self, now: Timestamp, to: &AgentKey, turn: u32) {
        let agent = self.agents.entry(to.clone()).or_default();
        agent.chain = agent.chain.max(turn);
        agent.last_active = now;
    }

    /// A person spoke in a session of `agent`: its chain starts again (LM2).
    pub fn human_turn(&mut self, agent: &AgentKey) {
        if let Some(a) = self.agents.get_mut(agent) {
            a.chain = 0;
        }
    }

    /// Drop what no limit can look at any more. Agents idle for longer than a thread may
    /// live are forgotten, their turn chain with them.
    pub fn expire(&mut self, now: Timestamp) {
        let c = &self.config;
        let keep = millis(c.rate_window.max(c.fan_out_window).max(c.repeat_window));
        let idle = millis(c.thread_age);
        self.agents.retain(|_, a| {
            trim(&mut a.sent, now, keep);
            now.as_millis().saturating_sub(a.last_active.as_millis()) < idle
        });
        let repeat = millis(c.repeat_window);
        self.pairs.retain(|_, l| now.as_millis().saturating_sub(l.at.as_millis()) < repeat);
        self.threads.retain(|t, _| now.since(t.timestamp()) < c.thread_age);
        while self.messages.first_key_value().is_some_and(|(id, _)| now.since(id.timestamp()) >= c.thread_age) {
            self.messages.pop_first();
        }
    }

    /// When [`Limits::expire`] next has something to drop.
    pub fn next_expiry(&self) -> Option<Timestamp> {
        let c = &self.config;
        let agents = self.agents.values().map(|a| a.last_active + c.thread_age);
        let pairs = self.pairs.values().map(|l| l.at + c.repeat_window);
        let threads = self.threads.keys().chain(self.messages.keys()).map(|t| t.timestamp() + c.thread_age);
        agents.chain(pairs).chain(threads).min()
    }

    /// The chain each agent is at, for status displays.
    pub fn turn_of(&self, agent: &AgentKey) -> u32 {
        self.agents.get(agent).map_or(0, |a| a.chain)
    }

    /// Messages `agent` sent in the rate window before `now` (LM3), for status displays.
    pub fn rate_of(&self, now: Timestamp, agent: &AgentKey) -> usize {
        let since = now.as_millis().saturating_sub(millis(self.config.rate_window));
        self.agents.get(agent).map_or(0, |a| a.sent.iter().filter(|(at, _, _)| at.as_millis() > since).count())
    }
}

/// JSON maps need string keys; a pair of ids is stored as a list of entries instead.
mod pairs_as_list {
    use std::collections::HashMap;

    use serde::{Deserialize, Deserializer, Serializer};

    use super::{AgentKey, LastMessage};

    type Pairs = HashMap<(AgentKey, AgentKey), LastMessage>;

    pub fn serialize<S: Serializer>(pairs: &Pairs, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(pairs.iter())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Pairs, D::Error> {
        Ok(Vec::<((AgentKey, AgentKey), LastMessage)>::deserialize(d)?.into_iter().collect())
    }
}

fn refuse(trip: Trip) -> Check {
    Check::Refuse { trip, note: None }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Would a message to `to` reach more than `limit` distinct agents, counting those in
/// `reached`? Stops at the first sign of an answer and never holds more than `limit` names,
/// however many messages the window holds.
fn fans_out<'a>(reached: impl Iterator<Item = &'a AgentKey>, to: &AgentKey, limit: usize) -> bool {
    let mut distinct: Vec<&AgentKey> = Vec::with_capacity(limit);
    for agent in reached {
        if agent == to {
            return false;
        }
        if distinct.len() < limit && !distinct.contains(&agent) {
            distinct.push(agent);
        }
    }
    distinct.len() >= limit
}

fn trim(sent: &mut VecDeque<(Timestamp, AgentKey, u64)>, now: Timestamp, keep: u64) {
    let since = now.as_millis().saturating_sub(keep);
    while sent.front().is_some_and(|(at, _, _)| at.as_millis() <= since) {
        sent.pop_front();
    }
}

fn pair(a: &AgentKey, b: &AgentKey) -> (AgentKey, AgentKey) {
    if a <= b { (a.clone(), b.clone()) } else { (b.clone(), a.clone()) }
}

/// The distinct 3-byte windows of a text, packed into integers and sorted.
fn grams(folded: &str) -> Vec<u32> {
    let bytes = folded.as_bytes();
    let bytes = bytes.get(..MAX_COMPARED).unwrap_or(bytes);
    let mut grams: Vec<u32> =
        bytes.windows(3).map(|w| w.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b))).collect();
    if grams.is_empty() && !bytes.is_empty() {
        grams.push(bytes.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)));
    }
    grams.sort_unstable();
    grams.dedup();
    grams
}

/// Jaccard similarity of two gram sets, at least `percent`%?
fn similar(a: &[u32], b: &[u32], percent: u8) -> bool {
    let (small, large) = if a.len() <= b.len() { (a.len(), b.len()) } else { (b.len(), a.len()) };
    // |A∩B| ≤ |small| and |A∪B| ≥ |large|: a size gap alone can rule it out.
    if large == 0 || small * 100 < large * usize::from(percent) {
        return false;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            core::cmp::Ordering::Less => i += 1,
            core::cmp::Ordering::Greater => j += 1,
            core::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - shared;
    shared * 100 >= union * usize::from(percent)
}

/// Words that, alone, only acknowledge. "yes", "no" and "done" are left out: they answer.
const ACK_WORDS: &[&str] = &[
    "a",
    "ack",
    "acknowledged",
    "all",
    "alright",
    "appreciate",
    "appreciated",
    "awesome",
    "cheers",
    "cool",
    "do",
    "for",
    "good",
    "got",
    "great",
    "it",
    "k",
    "kk",
    "lot",
    "makes",
    "much",
    "nice",
    "noted",
    "np",
    "ok",
    "okay",
    "perfect",
    "received",
    "right",
    "roger",
    "sense",
    "so",
    "sounds",
    "thank",
    "thanks",
    "that",
    "the",
    "thx",
    "ty",
    "understood",
    "very",
    "will",
    "you",
];

/// Is this (folded) text nothing but an acknowledgement: "Thanks, got it!", "ok 👍"?
///
/// Every message is asked this, so it reads words only until the answer is known (the
/// first word that is not an acknowledgement, or a ninth word), never the whole text.
pub fn is_ack_only(folded: &str) -> bool {
    let mut words = folded.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty());
    let Some(first) = words.next() else {
        // Only emoji and punctuation, like "👍" or "🙏!"
        return folded.chars().any(|c| !c.is_ascii() && !c.is_alphanumeric());
    };
    std::iter::once(first).chain(words).take(9).enumerate().all(|(i, w)| i < 8 && ACK_WORDS.binary_search(&w).is_ok())
}

#[cfg(test)]
mod tests {
    use rand_core::SeedableRng;

    use super::*;

    #[test]
    fn ack_words_are_sorted_for_binary_search() {
        assert!(ACK_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn acknowledgements_are_recognised_and_answers_are_not() {
        for t in ["ok", "thanks, got it!", "sounds good 👍", "👍", "will do.", "ok thank you very much"] {
            assert!(is_ack_only(t), "{t}");
        }
        for t in ["yes", "no", "done", "ok, but the test on line 40 fails", "thanks; use port 8080", ""] {
            assert!(!is_ack_only(t), "{t}");
        }
        // At most eight words.
        let words = |n: usize| vec!["ok"; n].join(" ");
        assert!(is_ack_only(&words(8)));
        assert!(!is_ack_only(&words(9)));
        assert!(!is_ack_only(&format!("{} ok", "thanks ".repeat(10_000))));
    }

    #[test]
    fn rate_of_counts_the_sends_in_the_rate_window() {
        let mut limits = Limits::new(LimitsConfig::default());
        let (web, api) = (AgentId::new("web"), AgentId::new("api"));
        let (web_key, api_key) = (AgentKey::session(&web), AgentKey::session(&api));
        let start = Timestamp::from_millis(1_000_000);
        for (i, text) in ["first question", "second, different question"].iter().enumerate() {
            let now = start + Duration::from_secs(30 * i as u64);
            let id = MessageId::generate(now, &mut rand_chacha::ChaCha20Rng::from_seed([7; 32]));
            let attempt = Attempt {
                id,
                from: &web,
                to: &api,
                agent: &web_key,
                within: &[],
                to_agent: &api_key,
                thread: id,
                folded: text,
                whole: i as u64,
            };
            match limits.check(now, &attempt) {
                Check::Admit(admit) => limits.record_send(now, &attempt, admit),
                refused => unreachable!("{refused:?}"),
            }
        }
        assert_eq!(limits.rate_of(start + Duration::from_secs(31), &web_key), 2);
        // The first send leaves the 60-second window after a minute; the receiver sent nothing.
        assert_eq!(limits.rate_of(start + Duration::from_secs(61), &web_key), 1);
        assert_eq!(limits.rate_of(start + Duration::from_secs(31), &api_key), 0);
    }

    #[test]
    fn similarity_is_jaccard_over_trigrams() {
        let a = grams("the build is green on main and the deploy can go ahead now");
        let b = grams("the build is green on main and the deploy can go ahead now!");
        let c = grams("please look at the flaky test in the payments module today");
        assert!(similar(&a, &b, 85));
        assert!(!similar(&a, &c, 85));
        assert!(similar(&a, &a, 100));
    }
}
