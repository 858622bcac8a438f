//! The route check (AM2, CT1, TR1, DL4, AD8): may anything pass from one agent to another
//! at all? It reads metadata only (who sends, who receives), never the text.
//!
//! The sender's firewall makes it on send, the recipient's on delivery, and the relay on
//! every envelope in between: one function ([`Firewall::route`]), so a message is refused
//! for the same reason, in the same order, wherever it is checked. The order:
//!
//! 1. **disconnected pair** (AM2): an admin cut the two off, either way;
//! 2. **quarantine** (CT1): either end's agent (by its key, so every process of it), or a
//!    session it runs inside (ID6); the checking side's own agent first;
//! 3. **trust** (TR1): the sender's standing with the trust file, if the firewall has one;
//! 4. **admission** (AD8): on send the sender; on delivery the recipient, then the sender;
//!    at the relay the sender, then the recipient. Report-only mode refuses no one and
//!    lists who enforcement would refuse.
//!
//! The first that stands in the way decides. On delivery, what may clear by itself holds
//! the message instead of dropping it: a quarantine (until it ends), an unknown agent's
//! one refresh (AD5) and an unreadable trust file (until it is fixed).
//!
//! [`Firewall::route`]: crate::firewall::Firewall::route

use crate::admission::{Admission, GateVerdict, Mode};
use crate::code::ReasonCode;
use crate::containment::Containment;
use crate::firewall::{Disconnection, Reason};
use crate::message::{Agent, AgentId};
use crate::time::Timestamp;
use crate::trust::{Overlay, Trust, TrustVerdict};

/// Where a message is checked. It decides whose admission counts and how reasons name the
/// two agents: the checking side's own agent is "you".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkpoint {
    /// The sender's firewall, on send. Admission is checked for the sender only: the
    /// recipient may run on another machine, whose firewall checks it on delivery.
    Send,
    /// The recipient's firewall, on delivery.
    Deliver,
    /// The relay, between machines: both agents named by their role. No admission refresh
    /// is offered here (the relay cannot collect an agent's components).
    Relay,
}

/// What the route check decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing stands in the way. `overlay` is what the trust file lets the sender's
    /// messages lead to (DL4), when the firewall has a trust file.
    Pass {
        overlay: Option<Overlay>,
    },
    /// Not now, on delivery: offer the message again after `until`.
    Hold {
        until: Timestamp,
        reason: Reason,
    },
    Refuse(Reason),
}

/// The route check's answer: the verdict, report-only admission warnings, and the agents
/// whose one admission refresh this is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub verdict: Verdict,
    /// Report-only admission (AD6): each agent enforcement would refuse, and why
    /// (`admission.would_refuse`).
    pub warnings: Vec<(AgentId, Reason)>,
    /// Agents unknown to the admission gate that get their one refresh now (AD5): the
    /// firewall records it and asks the adapter ([`crate::firewall::Event::AdmissionRefresh`]).
    pub refresh: Vec<Agent>,
}

/// The state the route check reads: a firewall's, or the relay's central policy's.
pub(crate) struct Facts<'a> {
    pub disconnected: &'a [Disconnection],
    pub containment: &'a Containment,
    /// This machine's name, the machine part of a local agent's key (issue 17).
    pub machine: &'a str,
    pub trust: &'a Trust,
    pub admission: &'a Admission,
}

/// One end of the message as a checkpoint sees it.
struct Side<'a> {
    agent: &'a Agent,
    /// `None` for the checking side's own agent ("you"), else `the sender`/`the recipient`.
    role: Option<&'static str>,
}

impl Side<'_> {
    /// The subject of a sentence about this end: `you are`, `the sender, web (claude), is`.
    fn subject(&self, you: &str) -> String {
        match self.role {
            None => you.to_owned(),
            Some(role) => format!("{role}, {}, is", self.agent.label()),
        }
    }
}

impl Checkpoint {
    /// Both ends, the checking side's own first (the sender first at the relay).
    fn sides<'a>(self, from: &'a Agent, to: &'a Agent) -> [Side<'a>; 2] {
        let (sender, recipient) = (Some("the sender"), Some("the recipient"));
        match self {
            Checkpoint::Send => [Side { agent: from, role: None }, Side { agent: to, role: recipient }],
            Checkpoint::Deliver => [Side { agent: to, role: None }, Side { agent: from, role: sender }],
            Checkpoint::Relay => [Side { agent: from, role: sender }, Side { agent: to, role: recipient }],
        }
    }

    /// How many of [`Checkpoint::sides`] the admission gate checks.
    fn admission_sides(self) -> usize {
        match self {
            Checkpoint::Send => 1,
            Checkpoint::Deliver | Checkpoint::Relay => 2,
        }
    }

    /// What may clear by itself is held on delivery; everywhere else it is refused.
    fn hold_or_refuse(self, until: Timestamp, reason: Reason) -> Verdict {
        match self {
            Checkpoint::Deliver => Verdict::Hold { until, reason },
            Checkpoint::Send | Checkpoint::Relay => Verdict::Refuse(reason),
        }
    }
}

/// The route check. See the module docs for the order.
pub(crate) fn check(facts: &Facts<'_>, now: Timestamp, at: Checkpoint, from: &Agent, to: &Agent) -> Route {
    let mut route = Route { verdict: Verdict::Pass { overlay: None }, warnings: Vec::new(), refresh: Vec::new() };
    let sides = at.sides(from, to);
    if let Some(reason) = cut_off(facts.disconnected, at, from, to) {
        route.verdict = Verdict::Refuse(reason);
        return route;
    }
    if let Some((until, reason)) = contained(facts.containment, facts.machine, now, &sides) {
        route.verdict = at.hold_or_refuse(until, reason);
        return route;
    }
    let overlay = match facts.trust {
        Trust::Unset => None,
        Trust::File(file) => match file.overlay_for(from) {
            TrustVerdict::Admit(overlay) => Some(overlay),
            TrustVerdict::Refuse(why) => {
                route.verdict = Verdict::Refuse(Reason::new(why.code(), why.to_string()));
                return route;
            }
        },
        Trust::Unreadable(why) => {
            route.verdict = match at {
                Checkpoint::Deliver => Verdict::Hold {
                    until: now,
                    reason: Reason::new(
                        ReasonCode::TrustInvalid,
                        format!("{why}\nMessages wait here until your user fixes the trust file."),
                    ),
                },
                Checkpoint::Send | Checkpoint::Relay => Verdict::Refuse(Reason::new(
                    ReasonCode::TrustInvalid,
                    format!("{why}\nNothing is sent until your user fixes the trust file."),
                )),
            };
            return route;
        }
    };
    // Off admits everyone: skip building each side's chain and sentences on every message.
    let admission_sides = match facts.admission.mode() {
        Mode::Off => 0,
        Mode::Report | Mode::Enforce => at.admission_sides(),
    };
    let refresh_wait = facts.admission.config().refresh_wait;
    for side in sides.iter().take(admission_sides) {
        let agent = side.agent;
        let chain =
            core::iter::once((agent.clone(), side.subject("your agent is"))).chain(agent.enclosing().map(|outer| {
                let subject = format!("the session {} runs inside, {}, is", agent.label(), outer.label());
                (outer, subject)
            }));
        for (agent, subject) in chain {
            let check = facts.admission.gate(&agent, &subject, at != Checkpoint::Relay);
            let refreshing = check.refresh;
            if refreshing {
                route.refresh.push(agent.clone());
            }
            match check.verdict {
                GateVerdict::Admit => {}
                GateVerdict::Warn { code, text } => route.warnings.push((agent.id.clone(), Reason::new(code, text))),
                GateVerdict::Refuse { code, text } => {
                    let reason = Reason::new(code, text);
                    route.verdict = match refreshing {
                        true => at.hold_or_refuse(now + refresh_wait, reason),
                        false => Verdict::Refuse(reason),
                    };
                    return route;
                }
            }
        }
    }
    route.verdict = Verdict::Pass { overlay };
    route
}

/// Did an admin disconnect the two (AM2), or sessions they run inside?
fn cut_off(disconnected: &[Disconnection], at: Checkpoint, from: &Agent, to: &Agent) -> Option<Reason> {
    let d = disconnected.iter().find(|d| from.chain().any(|x| to.chain().any(|y| d.is(x, y))))?;
    let why = if d.reason.trim().is_empty() { String::new() } else { format!(": {}", d.reason.trim()) };
    let text = match at {
        Checkpoint::Send => format!("an admin disconnected you from {}{why}; ask your user", to.label()),
        Checkpoint::Deliver => format!("an admin disconnected you from {}{why}; ask your user", from.label()),
        Checkpoint::Relay => format!("an admin disconnected {} from {}{why}", from.label(), to.label()),
    };
    Some(Reason::new(ReasonCode::AdminDisconnected, text))
}

/// Is either end quarantined, itself or a session it runs inside (ID6)? Until when, and why.
fn contained(
    containment: &Containment,
    here: &str,
    now: Timestamp,
    sides: &[Side<'_>; 2],
) -> Option<(Timestamp, Reason)> {
    let (side, (id, q)) =
        sides.iter().find_map(|s| containment.quarantine_within(now, s.agent, here).map(|found| (s, found)))?;
    let agent = side.agent;
    let who = match (side.role, id == agent.id) {
        (None, true) => "you are".to_owned(),
        (None, false) => format!("the session you run inside, {}, is", enclosing_label(agent, &id)),
        (Some(role), true) => format!("{role}, {}, is", agent.label()),
        (Some(role), false) => {
            format!("{role}, {}, runs inside {}, which is", agent.label(), enclosing_label(agent, &id))
        }
    };
    let text = format!(
        "{who} quarantined until {}: {}; ask your user (an admin can lift it with `agentfw quarantine lift`)",
        q.until, q.reason
    );
    Some((q.until, Reason::new(ReasonCode::ContainmentQuarantined, text)))
}

/// The label of the session `id` that `agent` runs inside (ID6), or the id if it is not one.
fn enclosing_label(agent: &Agent, id: &AgentId) -> String {
    agent
        .enclosing()
        .find(|e| id.is_session_of(&e.id) || e.id.is_session_of(id))
        .map_or_else(|| crate::label::clean(id.as_str()), |e| e.label())
}
