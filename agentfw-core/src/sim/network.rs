//! Several machines on one relay, with one fake clock: each machine a [`Sim`] (its
//! daemon's firewall and inboxes) with the daemon's [`PolicyMirror`], and between them the
//! relay's central [`Policy`]. What crosses the relay is what the relay and the daemons
//! exchange, through the same code they use:
//!
//! - a message accepted for an agent on another machine waits in its machine's outbox,
//!   is re-checked by the relay's policy ([`Policy::check`]) when submitted, stored for the
//!   recipient's machine, and taken into the recipient's inbox there
//!   ([`Accepted::arrived_from`]);
//! - each machine's firewall events are reported to the relay, which turns containment into
//!   log entries for everyone ([`Policy::contain_reported`]); so do the relay admin's
//!   actions ([`Network::admin`]);
//! - each log entry goes to every connected machine as a [`PolicyFrame`], and a machine
//!   that connects gets the whole policy as a reset; its mirror turns frames into the admin
//!   actions its firewall applies ([`PolicyMirror::apply`]).
//!
//! A machine that is offline keeps its reports and outbox, and the relay keeps what is
//! stored for it, until it connects again, as the relay client and the relay do.
//!
//! An agent is named as the relay's directory names it: [`Agent::machine`] is its machine.
//! Each machine's firewall sees its own agents as local (no machine).

use core::time::Duration;
use std::collections::BTreeMap;

use rand_core::CryptoRng;

use super::Sim;
use crate::central::{Policy, PolicyFrame, PolicyMirror};
use crate::code::ReasonCode;
use crate::firewall::{Accepted, AdminAction, Firewall, Input, Outgoing, Output, Reason};
use crate::message::{Agent, MessageId};
use crate::route::{Checkpoint, Route, Verdict};
use crate::time::Timestamp;

/// One machine: its daemon's firewall and inboxes, and its connection to the relay.
#[derive(Debug)]
pub struct Machine<R> {
    pub sim: Sim<R>,
    /// The daemon's mirror of the relay's policy.
    pub mirror: PolicyMirror,
    online: bool,
    /// How many of the firewall's events were reported to the relay.
    reported: usize,
    /// Accepted here for agents on other machines, not yet taken by the relay.
    outbox: Vec<Accepted>,
}

/// Machines by name, the relay's policy and its store, one clock. See the module docs.
#[derive(Debug)]
pub struct Network<R> {
    pub now: Timestamp,
    /// The relay's central policy.
    pub relay: Policy,
    machines: BTreeMap<String, Machine<R>>,
    /// Taken by the relay for each machine, with the machine it came from, not yet delivered.
    stored: BTreeMap<String, Vec<(String, Accepted)>>,
    /// Messages the relay refused when they were submitted, and why, oldest first.
    refused: Vec<(MessageId, Reason)>,
}

impl<R: CryptoRng> Network<R> {
    /// A relay with a fresh policy and no machines yet.
    pub fn new(now: Timestamp) -> Self {
        Self { now, relay: Policy::new(), machines: BTreeMap::new(), stored: BTreeMap::new(), refused: Vec::new() }
    }

    /// The machine `name` joins with this firewall (named `name` from now on, as its daemon
    /// names it on the relay) and connects.
    pub fn join(&mut self, name: &str, firewall: Firewall, rng: R) {
        let mut sim = Sim::new(firewall, self.now, rng);
        sim.input(Input::Machine(name.to_owned()));
        let machine = Machine { sim, mirror: PolicyMirror::new(), online: false, reported: 0, outbox: Vec::new() };
        self.machines.insert(name.to_owned(), machine);
        self.connect(name);
    }

    /// The machine `name` loses its connection to the relay.
    pub fn disconnect(&mut self, name: &str) {
        if let Some(m) = self.machines.get_mut(name) {
            m.online = false;
        }
    }

    /// The machine `name` connects (again): the relay sends it the whole policy, then it
    /// reports what it kept, submits its outbox and takes what the relay stored for it.
    pub fn connect(&mut self, name: &str) {
        let frame = PolicyFrame { seq: self.relay.seq(), reset: true, actions: self.relay.snapshot_actions(self.now) };
        let Some(m) = self.machines.get_mut(name) else { return };
        m.online = true;
        for action in m.mirror.apply(&frame) {
            m.sim.admin(action);
        }
        self.settle();
    }

    pub fn machine(&self, name: &str) -> Option<&Machine<R>> {
        self.machines.get(name)
    }

    /// The machine `name`, to do what the network does not: hand its inbox a message no
    /// firewall or relay checked (a compromised machine's), or feed its firewall an input.
    pub fn machine_mut(&mut self, name: &str) -> Option<&mut Machine<R>> {
        self.machines.get_mut(name)
    }

    /// `from` sends `text` to `to`. The answer is the sender's firewall's; a message for
    /// another machine goes on through the relay, which may still refuse it
    /// ([`Network::refused_by_relay`]). Nothing happens if `from`'s machine never joined.
    pub fn send(&mut self, from: &Agent, to: &Agent, text: &str) -> Output {
        let Some(m) = self.machines.get_mut(&from.machine) else { return Output::Done };
        let outgoing = Outgoing {
            from: local(from),
            to: if to.machine == from.machine { local(to) } else { to.clone() },
            body: text.to_owned(),
            reply_to: None,
        };
        let out = m.sim.input(Input::Send(outgoing));
        if let Output::Accepted { message, .. } = &out {
            match message.to.machine.is_empty() {
                true => m.sim.receive(message.clone()),
                false => m.outbox.push(message.clone()),
            }
        }
        self.settle();
        out
    }

    /// `agent` checks its inbox on its machine (see [`Sim::read`]).
    pub fn read(&mut self, agent: &Agent) -> Vec<Output> {
        let Some(m) = self.machines.get_mut(&agent.machine) else { return Vec::new() };
        let outputs = m.sim.read(&local(agent));
        self.settle();
        outputs
    }

    /// The relay's admin changes the policy: one log entry, sent to every connected machine.
    pub fn admin(&mut self, actions: Vec<AdminAction>) {
        self.append(actions);
        self.settle();
    }

    /// Move the clock on for the relay and every machine, running their timeouts.
    pub fn advance(&mut self, by: Duration) {
        self.now = self.now + by;
        self.relay.expire(self.now);
        for m in self.machines.values_mut() {
            m.sim.advance(by);
        }
        self.settle();
    }

    /// Messages the relay refused when they were submitted, and why, oldest first.
    pub fn refused_by_relay(&self) -> &[(MessageId, Reason)] {
        &self.refused
    }

    /// Where the relay's policy and a connected machine's firewall disagree on a route
    /// between two of `agents` (named by machine): for each ordered pair, the relay's check
    /// and each machine's route check at the relay's checkpoint must pass or refuse alike,
    /// with the same code and the same warnings; and each connected machine's mirror is at
    /// the relay's last log entry. Empty when they agree.
    pub fn disagreements(&self, agents: &[Agent]) -> Vec<String> {
        let mut found = Vec::new();
        for (name, m) in self.machines.iter().filter(|(_, m)| m.online) {
            if m.mirror.seq != self.relay.seq() {
                found.push(format!("{name} mirrors entry {}, the relay is at {}", m.mirror.seq, self.relay.seq()));
            }
            for from in agents {
                for to in agents.iter().filter(|to| to.id != from.id) {
                    let relay = outcome(self.relay.check(self.now, from, to));
                    let here = outcome(m.sim.firewall.route(self.now, Checkpoint::Relay, from, to));
                    if relay != here {
                        found.push(format!(
                            "{} to {}: the relay says {relay:?}, {name} says {here:?}",
                            from.label(),
                            to.label()
                        ));
                    }
                }
            }
        }
        found
    }

    /// Carry what waits across the relay until nothing does: each connected machine's
    /// reports (their containment a log entry for everyone), outbox and stored deliveries.
    fn settle(&mut self) {
        loop {
            let mut appended = false;
            let online: Vec<String> = self.machines.iter().filter(|(_, m)| m.online).map(|(n, _)| n.clone()).collect();
            for name in &online {
                let Some(m) = self.machines.get_mut(name) else { continue };
                let events = m.sim.events().get(m.reported..).unwrap_or_default();
                m.reported = m.sim.events().len();
                // One report, one log entry, as the relay makes it.
                let actions: Vec<AdminAction> =
                    events.iter().filter_map(|e| self.relay.contain_reported(self.now, e)).collect();
                for message in std::mem::take(&mut m.outbox) {
                    let from = Agent { machine: name.clone(), ..message.from.clone() };
                    match self.relay.check(self.now, &from, &message.to).verdict {
                        Verdict::Pass { .. } => {
                            self.stored.entry(message.to.machine.clone()).or_default().push((name.clone(), message));
                        }
                        Verdict::Refuse(reason) | Verdict::Hold { reason, .. } => {
                            self.refused.push((message.id, reason))
                        }
                    }
                }
                appended |= !actions.is_empty();
                self.append(actions);
            }
            for name in &online {
                let Some(m) = self.machines.get_mut(name) else { continue };
                for (from, message) in self.stored.remove(name).unwrap_or_default() {
                    m.sim.receive(message.arrived_from(&from));
                }
            }
            if !appended {
                return;
            }
        }
    }

    /// A new entry in the relay's policy log, applied there and sent to every connected
    /// machine, whose mirror turns it into admin actions for its firewall.
    fn append(&mut self, actions: Vec<AdminAction>) {
        if actions.is_empty() {
            return;
        }
        let frame = PolicyFrame { seq: self.relay.seq() + 1, reset: false, actions };
        self.relay.apply(frame.seq, self.now, &frame.actions);
        for m in self.machines.values_mut().filter(|m| m.online) {
            for action in m.mirror.apply(&frame) {
                m.sim.admin(action);
            }
        }
    }
}

/// `agent` as its own machine's firewall sees it: local, with no machine.
fn local(agent: &Agent) -> Agent {
    Agent { machine: String::new(), ..agent.clone() }
}

/// A route check's verdict and warnings as codes, to compare two checks.
fn outcome(route: Route) -> (Option<ReasonCode>, Vec<ReasonCode>) {
    let refused = match route.verdict {
        Verdict::Pass { .. } => None,
        Verdict::Refuse(reason) | Verdict::Hold { reason, .. } => Some(reason.code),
    };
    (refused, route.warnings.into_iter().map(|(_, r)| r.code).collect())
}
