//! The firewall: one state machine that ties identity-checked agents, provenance,
//! containment, limits and rules into a decision for every message.
//!
//! The run loop an adapter follows:
//!
//! 1. Feed each [`Input`] to [`Firewall::handle`] with the current time and an RNG, and act
//!    on the returned [`Output`]: store an accepted message in the recipient's inbox, show a
//!    delivery, tell the sender about a refusal.
//! 2. Drain [`Firewall::poll_event`] until it returns `None` and persist or forward what it
//!    says (audit records, quarantines, remembered texts, thread notes).
//! 3. At [`Firewall::poll_timeout`], feed [`Input::Timeout`] so expired state goes.
//! 4. Persist [`Firewall::snapshot`] whenever it suits; [`Firewall::restore`] brings it back.
//!
//! A message is judged twice: on [`Input::Send`], and again on [`Input::Deliver`] when its
//! recipient reads it, because the receiving side never trusts the sender's verdict (PR2).
//! The admission gate ([`crate::admission`]) is checked both times too: the sender on send,
//! the recipient and the sender on delivery (AD8). It is off unless configured.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use rand_core::CryptoRng;
use serde::{Deserialize, Serialize};

use crate::admission::{Admission, AdmissionConfig, Component, ComponentId, Inventory, Mode, Score};
use crate::agents::Agents;
use crate::code::ReasonCode;
use crate::containment::{Containment, ContainmentConfig, Quarantine, Remembered, TextId};
use crate::decode::{Decoded, decode, decoded_view};
use crate::fence::{Fenced, fence, sanitize};
use crate::fingerprint::Fingerprints;
use crate::limits::{Attempt, Check, Limits, LimitsConfig, ThreadNote, Trip};
use crate::message::{Agent, AgentId, AgentKey, MessageId, ThreadId};
use crate::normalize::fold;
use crate::policy::{MessageView, NoRules, Outcome, RuleVerdict, Rules, Stage, ThreadView, Verdict as Effect};
use crate::provenance::{Ledger, LedgerConfig, Provenance, Reading, Text};
use crate::route::{self, Checkpoint, Facts, Route};
use crate::time::Timestamp;
use crate::trust::{Overlay, Trust};

/// Every number the firewall uses; the defaults are the spec's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// Largest message body accepted, in bytes (default 64 KiB).
    pub max_message_bytes: usize,
    pub ledger: LedgerConfig,
    pub containment: ContainmentConfig,
    pub limits: LimitsConfig,
    /// The admission gate (AD1–AD8); off unless set.
    #[serde(default)]
    pub admission: AdmissionConfig,
    /// This machine's name: the machine of every agent whose [`Agent::machine`] is empty,
    /// in its key. Every machine must name it the same (its name on the relay), so that an
    /// agent has one key everywhere and containment reported by any machine holds it on
    /// all. Changed on a running state by [`Input::Machine`]; empty in states saved before.
    #[serde(default)]
    pub machine: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_message_bytes: 64 * 1024,
            ledger: LedgerConfig::default(),
            containment: ContainmentConfig::default(),
            limits: LimitsConfig::default(),
            admission: AdmissionConfig::default(),
            machine: String::new(),
        }
    }
}

/// A message an agent wants to send. There is no "from" that a model could set: `from` is
/// the agent the adapter's identity layer decided the caller is (ID5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outgoing {
    pub from: Agent,
    pub to: Agent,
    pub body: String,
    pub reply_to: Option<MessageId>,
}

impl Outgoing {
    /// An outgoing message from raw bytes, as they arrive at a boundary.
    pub fn from_bytes(from: Agent, to: Agent, body: &[u8], reply_to: Option<MessageId>) -> Result<Self, MessageError> {
        let body =
            core::str::from_utf8(body).map_err(|e| MessageError::InvalidUtf8 { offset: e.valid_up_to() })?.to_owned();
        Ok(Self { from, to, body, reply_to })
    }
}

/// Why bytes are not a message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("message text is not valid UTF-8 (first bad byte at offset {offset}); send text, not binary data")]
    InvalidUtf8 { offset: usize },
}

impl MessageError {
    /// A stable code for bindings and logs: `message.invalid_utf8`.
    pub fn code(&self) -> &'static str {
        match self {
            MessageError::InvalidUtf8 { .. } => "message.invalid_utf8",
        }
    }
}

/// A message the firewall accepted on send. The adapter keeps it in the recipient's inbox
/// (durably: it was accepted, so it must not be lost) and hands it back in
/// [`Input::Deliver`] when the recipient reads its inbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    pub id: MessageId,
    pub from: Agent,
    pub to: Agent,
    /// The sanitized body (DL2).
    pub body: String,
    pub thread: ThreadId,
    /// Messages in the thread before this one.
    pub thread_turns: u32,
    pub reply_to: Option<MessageId>,
    pub provenance: Provenance,
    /// Place in the chain of agent turns since a person last spoke (LM2).
    pub turn: u32,
    pub sent_at: Timestamp,
}

/// A message cleared for its recipient, fenced (DL1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub message: Accepted,
    pub fenced: Fenced,
    /// What the trust file lets the sender's messages lead the recipient to do (DL4), to
    /// show under the fence ([`Overlay::render`]); `None` when the firewall has no trust
    /// file ([`AdminAction::SetTrust`]).
    pub overlay: Option<Overlay>,
}

/// Why a message was refused, held or warned about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    /// A stable code: `rule`, `containment.quarantined`, `limit.fan_out`, `message.too_large`…
    pub code: ReasonCode,
    /// The rule that decided, when a rule did (PR5).
    pub rule: Option<String>,
    /// What happened and what to do, in words for the agent and its user (LM6).
    pub text: String,
}

impl Reason {
    pub(crate) fn new(code: ReasonCode, text: impl Into<String>) -> Self {
        Self { code, rule: None, text: text.into() }
    }

    fn rule(rule: String, reason: String) -> Self {
        Self { code: ReasonCode::Rule, rule: Some(rule), text: reason }
    }

    fn trip(trip: &Trip) -> Self {
        Self::new(trip.code(), trip.to_string())
    }
}

/// A refused message and the reason that decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub id: MessageId,
    pub stage: Stage,
    pub reason: Reason,
}

impl Refusal {
    /// The text the sending agent is shown: what happened, which rule, and to ask its user
    /// rather than retry (PR5, LM6).
    pub fn message(&self) -> String {
        match &self.reason.rule {
            Some(rule) => format!(
                "refused by rule `{rule}`: {}. Tell your user what was refused and why; do not retry the same text.",
                self.reason.text.trim_end_matches('.')
            ),
            None => format!("refused: {}", self.reason.text),
        }
    }
}

/// Admin actions on this firewall (CT3, LM2, AM2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum AdminAction {
    /// Quarantine an agent for a while: the session `agent` and every process of its
    /// agent, `key` when given (containment another machine reported, [`Quarantine::key`]),
    /// else the key this firewall knows for the session.
    Quarantine {
        agent: AgentId,
        seconds: u64,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<AgentKey>,
    },
    LiftQuarantine {
        agent: AgentId,
    },
    /// Stop refusing a remembered text.
    Forget {
        text: TextId,
    },
    /// `agentfw allow A B`: reset the turn fuse of both agents.
    Allow {
        a: AgentId,
        b: AgentId,
    },
    /// Disconnect a pair of agents (AM2): nothing passes between them, either way, until
    /// [`AdminAction::Reconnect`].
    Disconnect {
        a: AgentId,
        b: AgentId,
        reason: String,
    },
    Reconnect {
        a: AgentId,
        b: AgentId,
    },
    /// Refuse this text on sight, as if this firewall had refused it (CT2): how a text
    /// refused on another machine reaches this one. Emits no event, so it is not reported
    /// back.
    Remember {
        remembered: Remembered,
        prints: Fingerprints,
    },
    /// Replace the admission verdict copy: the inventory from the relay or a file (AD8).
    SetInventory {
        inventory: Inventory,
    },
    /// Set one agent's components, e.g. after an [`Event::AdmissionRefresh`].
    SetComponents {
        agent: String,
        components: Vec<Component>,
    },
    /// `agentfw admission enforce|report` (AD6).
    SetAdmissionMode {
        mode: Mode,
    },
    SetAdmissionThreshold {
        threshold: Score,
    },
    /// `agentfw admission except COMPONENT` (AD4).
    Except {
        component: ComponentId,
    },
    /// Withdraw a component's exception.
    Unexcept {
        component: ComponentId,
    },
    /// Apply this trust file from now on (TR1, DL4): the sender's standing is checked on
    /// every send and delivery, and a delivery carries its overlay.
    SetTrust {
        trust: Trust,
    },
}

/// Everything the firewall is told. The firewall is deterministic given its inputs, their
/// times and its randomness, so an adapter can journal inputs and replay them to rebuild its
/// state; the serialized form is stable for that: `{"input": "send", "data": {…}}`,
/// `{"input": "timeout"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "input", content = "data", rename_all = "snake_case")]
pub enum Input {
    Send(Outgoing),
    Deliver(Accepted),
    /// A person spoke in this agent's session (seen through the harness hooks).
    HumanTurn(AgentId),
    /// An agent session is known to the adapter (e.g. kept in its database): note which
    /// agent it is a process of, so what was put on the session id before (a quarantine,
    /// counts saved before agent keys) holds its agent. Sending and receiving note it too.
    Seen(Agent),
    /// This machine's name is now this ([`Config::machine`]): what was kept under its
    /// previous name, or under none (a state saved before machines were named in keys), is
    /// kept under the new one, so quarantines, counts and the ledger carry over.
    Machine(String),
    Admin(AdminAction),
    /// Time passed: expire what is due.
    Timeout,
}

/// The firewall's answer to one input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// The message may go to its recipient's inbox.
    Accepted {
        message: Accepted,
        warnings: Vec<Reason>,
    },
    /// The message is cleared and fenced for its recipient.
    Delivered {
        delivery: Delivery,
        warnings: Vec<Reason>,
    },
    /// Not now: keep the message in the inbox and offer it again after `until`.
    Held {
        message: Accepted,
        until: Timestamp,
        reason: Reason,
    },
    Refused(Refusal),
    /// The input needed no answer.
    Done,
}

/// The metadata of one decision: never the text (AM4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub at: Timestamp,
    pub id: MessageId,
    pub stage: Stage,
    pub from: AgentId,
    pub from_label: String,
    pub to: AgentId,
    pub to_label: String,
    pub size: usize,
    pub hops: u32,
    pub verdict: Verdict,
    pub reason: Option<Reason>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    Deny,
    Hold,
}

/// What happened, for the caller to persist or pass on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Decision(Decision),
    Quarantined {
        agent: AgentId,
        quarantine: Quarantine,
    },
    Released {
        agent: AgentId,
    },
    Remembered {
        text: TextId,
        message: MessageId,
        rule: String,
        /// The refused text's reason, as [`Remembered::reason`].
        reason: String,
        /// What another firewall needs to refuse the same text on sight
        /// ([`AdminAction::Remember`]); fingerprints only, never the text.
        prints: Fingerprints,
    },
    Forgotten {
        text: TextId,
    },
    ThreadNote(ThreadNote),
    TurnReset {
        agent: AgentId,
    },
    /// Report-only admission (AD6): the message went through, but enforcement would have
    /// refused it for this reason.
    WouldRefuse {
        id: MessageId,
        stage: Stage,
        agent: AgentId,
        reason: Reason,
    },
    /// `agent` is unknown to the admission gate and this is its one refresh (AD5): look up
    /// its components and ratings and set them ([`AdminAction::SetComponents`] or
    /// [`AdminAction::SetInventory`]). A send refused with code `admission.refresh` may then
    /// be retried once; a delivery held for it is offered again after its `until`.
    AdmissionRefresh {
        agent: Agent,
    },
}

/// The firewall's whole state, for snapshots: restore it and nothing is lost.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    config: Config,
    ledger: Ledger,
    containment: Containment,
    limits: Limits,
    #[serde(default)]
    admission: Admission,
    /// Pairs an admin disconnected (AM2). A short list: admins disconnect pairs one by one.
    #[serde(default)]
    disconnected: Vec<Disconnection>,
    /// The agent of each session seen, for what is kept per agent (containment, limits).
    #[serde(default)]
    agents: Agents,
    /// The trust file applied (TR1); unset unless an adapter sets one.
    #[serde(default)]
    trust: Trust,
    events: VecDeque<Event>,
}

/// A pair of agents an admin disconnected (AM2), in both directions. `a` sorts before `b`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Disconnection {
    pub a: AgentId,
    pub b: AgentId,
    pub reason: String,
}

impl Disconnection {
    /// The pair in its canonical order.
    pub fn pair(x: AgentId, y: AgentId) -> (AgentId, AgentId) {
        if x <= y { (x, y) } else { (y, x) }
    }

    /// Whether this is the pair of `x` and `y`, in either order.
    pub fn is(&self, x: &AgentId, y: &AgentId) -> bool {
        (&self.a == x && &self.b == y) || (&self.a == y && &self.b == x)
    }
}

/// The firewall state machine. See the module docs for the run loop.
pub struct Firewall {
    state: State,
    rules: Arc<dyn Rules>,
    /// The texts of the last messages accepted, as read on send, for their delivery here.
    read: VecDeque<Read>,
}

/// A message's text as its send read it: folded, decoded, fingerprinted and winnowed, most
/// of what a delivery costs beside the rules. A message delivered by the firewall that
/// accepted it (an agent on the same machine) has the same body, so its delivery takes
/// this instead of reading it again, if the body is still the same to the byte. Not state:
/// after a restore a delivery reads its text again.
struct Read {
    id: MessageId,
    body: String,
    folded: String,
    decoded: Vec<Decoded>,
    text: Text,
}

/// How many accepted messages' texts are held for their delivery: a local delivery follows
/// its send at once, and each holds about three times its body.
const READ_AHEAD: usize = 4;

impl core::fmt::Debug for Firewall {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Firewall").field("state", &self.state).finish_non_exhaustive()
    }
}

impl Firewall {
    /// A firewall with no content rules; add them with [`Firewall::set_rules`].
    pub fn new(config: Config) -> Self {
        Self::restore(State {
            ledger: Ledger::new(config.ledger.clone()),
            containment: Containment::new(config.containment.clone()),
            limits: Limits::new(config.limits.clone()),
            admission: Admission::new(config.admission.clone()),
            disconnected: Vec::new(),
            agents: Agents::default(),
            trust: Trust::default(),
            events: VecDeque::new(),
            config,
        })
    }

    /// A firewall continuing from a snapshot. Rules are not state: set them again.
    pub fn restore(state: State) -> Self {
        Self { state, rules: Arc::new(NoRules), read: VecDeque::new() }
    }

    /// Everything needed to continue after a restart, pending events included.
    pub fn snapshot(&self) -> State {
        self.state.clone()
    }

    /// The state [`Firewall::snapshot`] copies, to serialize without a copy: a busy
    /// firewall's state is megabytes, and an adapter writing it to disk needs no second one.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Judge content with `rules` from now on (a reload swaps them atomically).
    pub fn set_rules(&mut self, rules: Arc<dyn Rules>) {
        self.rules = rules;
    }

    pub fn config(&self) -> &Config {
        &self.state.config
    }

    /// The live quarantine of `agent`, if any.
    pub fn quarantine_of(&self, now: Timestamp, agent: &AgentId) -> Option<&Quarantine> {
        self.state.containment.quarantine_of(now, agent)
    }

    /// The live quarantine that holds `agent`: its own, or that of a session it runs inside
    /// (ID6).
    pub fn quarantine_for(&self, now: Timestamp, agent: &Agent) -> Option<&Quarantine> {
        self.state.containment.quarantine_within(now, agent, &self.state.config.machine).map(|(_, q)| q)
    }

    pub fn containment(&self) -> &Containment {
        &self.state.containment
    }

    pub fn ledger(&self) -> &Ledger {
        &self.state.ledger
    }

    pub fn limits(&self) -> &Limits {
        &self.state.limits
    }

    /// The pairs an admin disconnected (AM2).
    pub fn disconnected(&self) -> &[Disconnection] {
        &self.state.disconnected
    }

    /// Which agent each session seen is a process of.
    pub fn agents(&self) -> &Agents {
        &self.state.agents
    }

    /// The admission gate: its settings, inventory, verdicts and previews.
    pub fn admission(&self) -> &Admission {
        &self.state.admission
    }

    /// The trust file applied (TR1).
    pub fn trust(&self) -> &Trust {
        &self.state.trust
    }

    /// The route check (AM2, CT1, TR1, AD8) between `from` and `to` at `at`, by metadata
    /// only: what this firewall's send and delivery check first, and what the relay checks
    /// on every envelope. It changes nothing: the one admission refresh it may offer is
    /// recorded only when a send or delivery acts on it. See [`crate::route`].
    pub fn route(&self, now: Timestamp, at: Checkpoint, from: &Agent, to: &Agent) -> Route {
        let s = &self.state;
        let facts = Facts {
            disconnected: &s.disconnected,
            containment: &s.containment,
            machine: &s.config.machine,
            trust: &s.trust,
            admission: &s.admission,
        };
        route::check(&facts, now, at, from, to)
    }

    /// The next thing that happened, oldest first. Drain after every input.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.state.events.pop_front()
    }

    /// When [`Input::Timeout`] next has something to expire.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        let s = &self.state;
        let expiries =
            [s.ledger.next_expiry(), s.containment.next_expiry(), s.limits.next_expiry(), s.admission.next_expiry()];
        expiries.into_iter().flatten().min()
    }

    /// Handle one input at `now`. `rng` supplies message ids and fence markers.
    pub fn handle(&mut self, now: Timestamp, rng: &mut impl CryptoRng, input: Input) -> Output {
        match input {
            Input::Send(outgoing) => {
                let id = MessageId::generate(now, rng);
                self.send(now, id, outgoing)
            }
            Input::Deliver(message) => self.deliver(now, rng, message),
            Input::Seen(agent) => {
                self.learn(now, &agent);
                Output::Done
            }
            Input::Machine(name) => {
                self.rename_machine(name);
                Output::Done
            }
            Input::HumanTurn(agent) => {
                self.state.limits.human_turn(&self.state.agents.key_or_session(&agent));
                self.state.events.push_back(Event::TurnReset { agent });
                Output::Done
            }
            Input::Admin(action) => {
                self.admin(now, action);
                Output::Done
            }
            Input::Timeout => {
                self.expire(now);
                Output::Done
            }
        }
    }

    fn send(&mut self, now: Timestamp, id: MessageId, out: Outgoing) -> Output {
        self.learn(now, &out.from);
        self.learn(now, &out.to);
        let size = out.body.len();
        let s = &self.state;
        let early = if size > s.config.max_message_bytes {
            Some(Reason::new(
                ReasonCode::MessageTooLarge,
                format!(
                    "the message is {size} bytes, over the limit of {} bytes; send a shorter summary or share a file path instead",
                    s.config.max_message_bytes
                ),
            ))
        } else if out.from.id == out.to.id {
            Some(Reason::new(ReasonCode::MessageToSelf, "an agent cannot message itself"))
        } else {
            None
        };
        let mut warnings = Vec::new();
        let early = match early {
            Some(reason) => Some(reason),
            None => match self.routed(now, id, Stage::Sending, &out.from, &out.to, &mut warnings) {
                route::Verdict::Pass { .. } => None,
                route::Verdict::Refuse(reason) | route::Verdict::Hold { reason, .. } => Some(reason),
            },
        };
        let body = sanitize(&out.body).into_owned();
        let early = early.or_else(|| {
            body.trim().is_empty().then(|| {
                Reason::new(ReasonCode::MessageEmpty, "the message has no visible text; write what you want to say")
            })
        });
        if let Some(reason) = early {
            return self.refuse_send(now, id, &out, size, 1, reason);
        }
        let folded = fold(&body);
        let decoded = decode(&body);
        let text = Text::new(&folded, &decoded);
        let prints = &text.prints;
        if let Some(reason) = self.recalled(now, prints) {
            return self.refuse_send(now, id, &out, size, 1, reason);
        }
        let decoded_body = decoded_view(&body, &decoded);
        let here = self.state.config.machine.as_str();
        let (agent, to_agent) = (out.from.key(here), out.to.key(here));
        let shown = ledger_key(&out.from, here);
        let trace = self.state.ledger.trace(now, &out.from, &out.to, [&shown, &to_agent], &text);
        let provenance = trace.provenance.clone();
        let thread = match self.state.limits.thread_for(id, &agent, out.reply_to) {
            Ok(t) => t,
            Err(trip) => return self.refuse_send(now, id, &out, size, provenance.hops, Reason::trip(&trip)),
        };
        let thread_turns = self.state.limits.thread_turns(thread);
        let view = MessageView {
            id,
            body: &body,
            folded: &folded,
            provenance: &provenance,
            from: &out.from,
            to: &out.to,
            size: body.len(),
            thread: ThreadView { id: thread, turns: thread_turns },
            now,
        };
        if let RuleVerdict::Deny { rule, reason } = self.rules.judge(Stage::Sending, &view) {
            self.contain(now, id, &provenance, &out.to.id, prints, &rule, &reason);
            return self.refuse_send(now, id, &out, size, provenance.hops, Reason::rule(rule, reason));
        }
        if let Some((judged, rule, reason)) =
            self.judge_readings(Stage::Sending, &view, decoded_body.as_deref(), &trace.readings)
        {
            self.contain(now, id, &judged, &out.to.id, prints, &rule, &reason);
            return self.refuse_send(now, id, &out, size, judged.hops, Reason::rule(rule, reason));
        }
        let here = self.state.config.machine.as_str();
        let within: Vec<AgentKey> = out.from.enclosing().map(|e| e.key(here)).collect();
        let attempt = Attempt {
            id,
            from: &out.from.id,
            to: &out.to.id,
            agent: &agent,
            within: &within,
            to_agent: &to_agent,
            thread,
            folded: &folded,
            whole: prints.whole,
        };
        let admit = match self.state.limits.check(now, &attempt) {
            Check::Admit(admit) => admit,
            Check::Refuse { trip, note } => {
                self.state.events.extend(note.map(Event::ThreadNote));
                return self.refuse_send(now, id, &out, size, provenance.hops, Reason::trip(&trip));
            }
        };
        warnings.extend(admit.warnings.iter().map(Reason::trip));
        let turn = admit.turn;
        self.state.limits.record_send(now, &attempt, admit);
        self.state.ledger.sent(&shown, &to_agent, trace);
        if self.read.len() == READ_AHEAD {
            self.read.pop_front();
        }
        self.read.push_back(Read { id, body: body.clone(), folded, decoded, text });
        let message = Accepted {
            id,
            from: out.from,
            to: out.to,
            body,
            thread,
            thread_turns,
            reply_to: out.reply_to,
            provenance,
            turn,
            sent_at: now,
        };
        self.record(
            now,
            Stage::Sending,
            &message.from,
            &message.to,
            id,
            size,
            message.provenance.hops,
            Verdict::Allow,
            None,
        );
        Output::Accepted { message, warnings }
    }

    fn deliver(&mut self, now: Timestamp, rng: &mut impl CryptoRng, m: Accepted) -> Output {
        self.learn(now, &m.from);
        self.learn(now, &m.to);
        let id = m.id;
        let mut warnings = Vec::new();
        let overlay = match self.routed(now, id, Stage::Delivering, &m.to, &m.from, &mut warnings) {
            route::Verdict::Pass { overlay } => overlay,
            route::Verdict::Hold { until, reason } => {
                self.record_delivery(now, &m, Verdict::Hold, Some(reason.clone()));
                return Output::Held { message: m, until, reason };
            }
            route::Verdict::Refuse(reason) => {
                self.record_delivery(now, &m, Verdict::Deny, Some(reason.clone()));
                return Output::Refused(Refusal { id, stage: Stage::Delivering, reason });
            }
        };
        let body = sanitize(&m.body);
        let (folded, decoded, text) = self
            .read
            .iter()
            .position(|r| r.id == id && r.body == *body)
            .and_then(|at| self.read.remove(at))
            .map(|r| (r.folded, r.decoded, r.text))
            .unwrap_or_else(|| {
                let (folded, decoded) = (fold(&body), decode(&body));
                let text = Text::new(&folded, &decoded);
                (folded, decoded, text)
            });
        let prints = &text.prints;
        let decoded_body = decoded_view(&body, &decoded);
        let view = MessageView {
            id,
            body: &body,
            folded: &folded,
            provenance: &m.provenance,
            from: &m.from,
            to: &m.to,
            size: body.len(),
            thread: ThreadView { id: m.thread, turns: m.thread_turns },
            now,
        };
        let refusal = match self.recalled(now, prints) {
            Some(reason) => Some(reason),
            None => {
                let denied = match self.rules.judge(Stage::Delivering, &view) {
                    RuleVerdict::Deny { rule, reason } => Some((rule, reason)),
                    RuleVerdict::Allow => self
                        .judge_readings(Stage::Delivering, &view, decoded_body.as_deref(), &[])
                        .map(|(_, rule, reason)| (rule, reason)),
                };
                denied.map(|(rule, reason)| {
                    self.contain(now, id, &m.provenance, &m.to.id, prints, &rule, &reason);
                    Reason::rule(rule, reason)
                })
            }
        };
        if let Some(reason) = refusal {
            self.record_delivery(now, &m, Verdict::Deny, Some(reason.clone()));
            return Output::Refused(Refusal { id, stage: Stage::Delivering, reason });
        }
        let refused_forwarded = self.refused_forwarded(&view, decoded_body.as_deref());
        let recipient = m.to.key(&self.state.config.machine);
        let shown = ledger_key(&m.to, &self.state.config.machine);
        self.state.ledger.record(now, &shown, text, m.provenance.clone(), refused_forwarded);
        let fenced = fence(&m.from.header_label(), id, &body, rng);
        self.state.limits.record_delivery(now, &recipient, m.turn);
        self.record_delivery(now, &m, Verdict::Allow, None);
        Output::Delivered { delivery: Delivery { message: m, fenced, overlay }, warnings }
    }

    /// The route check on a send (`me` is the sender) or a delivery (`me` is the recipient),
    /// acted on: the one admission refresh it offers is recorded and asked of the adapter
    /// (AD5), and each report-only warning is an event and goes into `warnings` (AD6).
    fn routed(
        &mut self,
        now: Timestamp,
        id: MessageId,
        stage: Stage,
        me: &Agent,
        other: &Agent,
        warnings: &mut Vec<Reason>,
    ) -> route::Verdict {
        let route = match stage {
            Stage::Sending => self.route(now, Checkpoint::Send, me, other),
            Stage::Delivering => self.route(now, Checkpoint::Deliver, other, me),
        };
        for agent in route.refresh {
            self.state.admission.refreshing(now, &agent.id);
            self.state.events.push_back(Event::AdmissionRefresh { agent });
        }
        for (agent, reason) in route.warnings {
            warnings.push(reason.clone());
            self.state.events.push_back(Event::WouldRefuse { id, stage, agent, reason });
        }
        route.verdict
    }

    /// Judge the other readings of a message (PV4): when it is forwarded, its decoded view
    /// (`decoded`, the body with its encoded stretches decoded); and each of `readings`,
    /// the stretches it copies of texts the rules would refuse forwarded and the message as
    /// forwarded from a taint. The first refusal, and the provenance it was judged with.
    fn judge_readings(
        &self,
        stage: Stage,
        view: &MessageView<'_>,
        decoded: Option<&str>,
        readings: &[Reading],
    ) -> Option<(Provenance, String, String)> {
        let mut texts: Vec<(&str, &Provenance, &[String])> = Vec::new();
        if view.provenance.hops >= 2 {
            texts.extend(decoded.map(|d| (d, view.provenance, &[][..])));
        }
        for r in readings {
            match &r.text {
                Some(text) => texts.push((text, &r.provenance, &r.only)),
                None => {
                    texts.extend(core::iter::once(view.body).chain(decoded).map(|t| (t, &r.provenance, &r.only[..])))
                }
            }
        }
        for (text, provenance, only) in texts {
            let folded = fold(text);
            let v = MessageView { body: text, folded: &folded, provenance, size: text.len(), ..*view };
            if let Some((rule, reason)) = self.refusal(stage, &v, only) {
                return Some((provenance.clone(), rule, reason));
            }
        }
        None
    }

    /// The rules' refusal of `view`; if `only` is not empty, only a refusal by one of those
    /// rules counts (a taint's kind).
    fn refusal(&self, stage: Stage, view: &MessageView<'_>, only: &[String]) -> Option<(String, String)> {
        let (rule, reason) = match self.rules.judge(stage, view) {
            RuleVerdict::Allow => return None,
            RuleVerdict::Deny { rule, reason } => (rule, reason),
        };
        if only.is_empty() || only.contains(&rule) {
            return Some((rule, reason));
        }
        let rule = refusing_rules(&*self.rules, stage, view).into_iter().find(|r| only.contains(r))?;
        let reason = format!(
            "this session was shown text from another agent that the rules refuse to pass on, and this message is of the same kind (rule `{rule}` refuses it passed on), so it is judged as passed on; tell your user what you were asked to do"
        );
        Some((rule, reason))
    }

    /// The rules that would refuse this delivery's text if its recipient passed it on (PV4
    /// taint): it is judged at one more hop, on send to an agent not yet known (empty id,
    /// kind and project), as sent and decoded.
    fn refused_forwarded(&self, view: &MessageView<'_>, decoded: Option<&str>) -> Vec<String> {
        let next = Agent::new("", "", "");
        let provenance = view.provenance.forwarded(view.to.hop(), next.hop());
        let mut rules = Vec::new();
        let texts =
            core::iter::once((view.body, Cow::Borrowed(view.folded))).chain(decoded.map(|d| (d, Cow::Owned(fold(d)))));
        for (text, folded) in texts {
            let v = MessageView {
                body: text,
                folded: &folded,
                provenance: &provenance,
                from: view.to,
                to: &next,
                size: text.len(),
                ..*view
            };
            if self.rules.judge(Stage::Sending, &v).is_deny() {
                rules.extend(refusing_rules(&*self.rules, Stage::Sending, &v));
            }
        }
        rules.sort_unstable();
        rules.dedup();
        rules
    }

    /// Refused on sight: the text matches one refused earlier (CT2).
    fn recalled(&self, now: Timestamp, prints: &Fingerprints) -> Option<Reason> {
        let r = self.state.containment.recall(now, prints)?;
        Some(Reason {
            code: ReasonCode::ContainmentRemembered,
            rule: Some(r.rule.clone()),
            text: format!(
                "this text matches text {} refused earlier by rule `{}` ({}) and is refused on sight",
                r.text, r.rule, r.reason
            ),
        })
    }

    /// Rules refused this text: if it was forwarded, quarantine everyone it passed through
    /// but `spared` (who never saw it) and remember it (CT1, CT2).
    #[allow(clippy::too_many_arguments)]
    fn contain(
        &mut self,
        now: Timestamp,
        id: MessageId,
        provenance: &Provenance,
        spared: &AgentId,
        prints: &Fingerprints,
        rule: &str,
        reason: &str,
    ) {
        if provenance.hops < 2 {
            return;
        }
        let text = TextId(prints.whole);
        let refusal = Remembered { text, message: id, rule: rule.to_owned(), reason: reason.to_owned() };
        let agents = &self.state.agents;
        let held =
            self.state.containment.contain(now, &provenance.path, spared, |id| agents.key_of(id), prints, refusal);
        let events = &mut self.state.events;
        events.extend(held.into_iter().map(|(agent, quarantine)| Event::Quarantined { agent, quarantine }));
        events.push_back(Event::Remembered {
            text,
            message: id,
            rule: rule.to_owned(),
            reason: reason.to_owned(),
            prints: prints.clone(),
        });
    }

    /// Note which agent `agent` and the sessions it runs inside are processes of. On first
    /// sight of a session, a quarantine put on it before now holds its agent from here on,
    /// and what a state saved before agent keys counted under its id is its agent's.
    fn learn(&mut self, now: Timestamp, agent: &Agent) {
        for (id, key) in self.state.agents.learn(now, agent, &self.state.config.machine) {
            self.state.containment.bind_key(&id, &key);
            self.state.limits.adopt(&id, &key);
            self.state.ledger.adopt(&id, &key);
        }
    }

    /// [`Input::Machine`]: keys of agents on the old name, or on none, move to `name`.
    fn rename_machine(&mut self, name: String) {
        let s = &mut self.state;
        let old = core::mem::replace(&mut s.config.machine, name);
        let new = s.config.machine.as_str();
        let moved = |key: &AgentKey| (key.is_on("") || key.is_on(&old)).then(|| key.on_machine(new)).flatten();
        let mut pairs: Vec<(AgentKey, AgentKey)> = s
            .agents
            .keys()
            .chain(s.containment.keys())
            .filter_map(|key| moved(key).map(|to| (key.clone(), to)))
            .filter(|(from, to)| from != to)
            .collect();
        pairs.sort();
        pairs.dedup();
        for (from, to) in &pairs {
            s.limits.rekey(from, to);
            s.ledger.rekey(from, to);
        }
        s.agents.rekey(moved);
        s.containment.rekey(moved);
    }

    fn refuse_send(
        &mut self,
        now: Timestamp,
        id: MessageId,
        out: &Outgoing,
        size: usize,
        hops: u32,
        reason: Reason,
    ) -> Output {
        self.record(now, Stage::Sending, &out.from, &out.to, id, size, hops, Verdict::Deny, Some(reason.clone()));
        Output::Refused(Refusal { id, stage: Stage::Sending, reason })
    }

    /// Record a decision about delivering `m`.
    fn record_delivery(&mut self, now: Timestamp, m: &Accepted, verdict: Verdict, reason: Option<Reason>) {
        let (id, size, hops) = (m.id, m.body.len(), m.provenance.hops);
        self.record(now, Stage::Delivering, &m.from, &m.to, id, size, hops, verdict, reason);
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        now: Timestamp,
        stage: Stage,
        from: &Agent,
        to: &Agent,
        id: MessageId,
        size: usize,
        hops: u32,
        verdict: Verdict,
        reason: Option<Reason>,
    ) {
        self.state.events.push_back(Event::Decision(Decision {
            at: now,
            id,
            stage,
            from: from.id.clone(),
            from_label: from.label(),
            to: to.id.clone(),
            to_label: to.label(),
            size,
            hops,
            verdict,
            reason,
        }));
    }

    pub(crate) fn admin(&mut self, now: Timestamp, action: AdminAction) {
        let s = &mut self.state;
        match action {
            AdminAction::Quarantine { agent, seconds, reason, key } => {
                let key = key.or_else(|| s.agents.key_of(&agent));
                let duration = core::time::Duration::from_secs(seconds);
                let q = s.containment.quarantine(now, agent.clone(), key, duration, reason);
                s.events.push_back(Event::Quarantined { agent, quarantine: q });
            }
            AdminAction::LiftQuarantine { agent } => {
                let key = s.agents.key_of(&agent);
                for agent in s.containment.lift(&agent, key.as_ref()) {
                    s.events.push_back(Event::Released { agent });
                }
            }
            AdminAction::Forget { text } => {
                if s.containment.forget(text) {
                    s.events.push_back(Event::Forgotten { text });
                }
            }
            AdminAction::Allow { a, b } => {
                for agent in [a, b] {
                    s.limits.human_turn(&s.agents.key_or_session(&agent));
                    s.events.push_back(Event::TurnReset { agent });
                }
            }
            AdminAction::Disconnect { a, b, reason } => {
                let (a, b) = Disconnection::pair(a, b);
                match s.disconnected.iter_mut().find(|d| d.is(&a, &b)) {
                    Some(d) => d.reason = reason,
                    None => s.disconnected.push(Disconnection { a, b, reason }),
                }
            }
            AdminAction::Reconnect { a, b } => s.disconnected.retain(|d| !d.is(&a, &b)),
            AdminAction::Remember { remembered, prints } => s.containment.remember(now, &prints, remembered),
            AdminAction::SetInventory { inventory } => s.admission.set_inventory(inventory),
            AdminAction::SetComponents { agent, components } => s.admission.set_components(agent, components),
            AdminAction::SetAdmissionMode { mode } => s.admission.set_mode(mode),
            AdminAction::SetAdmissionThreshold { threshold } => s.admission.set_threshold(threshold),
            AdminAction::Except { component } => {
                s.admission.except(component);
            }
            AdminAction::Unexcept { component } => {
                s.admission.unexcept(&component);
            }
            AdminAction::SetTrust { trust } => s.trust = trust,
        }
    }

    pub(crate) fn expire(&mut self, now: Timestamp) {
        let s = &mut self.state;
        s.ledger.expire(now);
        s.limits.expire(now);
        s.admission.expire(now);
        s.agents.expire(now, s.config.containment.remember);
        for agent in s.containment.expire(now) {
            s.events.push_back(Event::Released { agent });
        }
    }
}

/// The key the ledger keeps what `agent` was shown under (PV-5): that of the outermost
/// session it runs inside, or its own. A nested session acts for the sessions around it
/// (ID6), so what any session of a chain was shown, the host or a harness it started, counts
/// as shown to all of them: their taints, kept texts and send streams are one.
fn ledger_key(agent: &Agent, here: &str) -> AgentKey {
    agent.enclosing().last().map_or_else(|| agent.key(here), |top| top.key(here))
}

/// Every rule that refuses `view`: each matching deny rule, and each rule that fails to
/// evaluate (which refuses, failing closed); the deciding rule if the rule set says no more.
fn refusing_rules(rules: &dyn Rules, stage: Stage, view: &MessageView<'_>) -> Vec<String> {
    let explanation = rules.explain(stage, view);
    let mut refusing: Vec<String> = explanation
        .outcomes
        .into_iter()
        .filter(|o| matches!((o.verdict, &o.result), (Effect::Deny, Outcome::Matched) | (_, Outcome::Failed(_))))
        .map(|o| o.rule)
        .collect();
    if refusing.is_empty() && explanation.verdict.is_deny() {
        refusing.extend(explanation.decided_by);
    }
    refusing
}
