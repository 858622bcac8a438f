//! A deterministic simulation: several agents, their inboxes and one fake clock around a
//! [`Firewall`], so whole stories (a question and its answer, a three-hop worm, a loop)
//! run as plain unit tests. It is what an adapter does, minus the I/O.
//!
//! [`Network`] runs several of them as machines on one relay: the relay's central policy
//! and each daemon's mirror of it, the same types the relay and the daemon use.

use core::time::Duration;
use std::collections::{BTreeMap, VecDeque};

use rand_core::CryptoRng;

use crate::firewall::{Accepted, AdminAction, Event, Firewall, Input, Outgoing, Output};
use crate::message::{Agent, AgentId, MessageId};
use crate::time::Timestamp;

mod network;

pub use network::{Machine, Network};

/// A firewall, an inbox per agent, a clock and an RNG.
#[derive(Debug)]
pub struct Sim<R> {
    pub firewall: Firewall,
    pub now: Timestamp,
    rng: R,
    inboxes: BTreeMap<AgentId, VecDeque<Accepted>>,
    events: Vec<Event>,
}

impl<R: CryptoRng> Sim<R> {
    pub fn new(firewall: Firewall, now: Timestamp, rng: R) -> Self {
        Self { firewall, now, rng, inboxes: BTreeMap::new(), events: Vec::new() }
    }

    /// `from` sends `text` to `to`; an accepted message lands in `to`'s inbox.
    pub fn send(&mut self, from: &Agent, to: &Agent, text: &str) -> Output {
        self.send_reply(from, to, text, None)
    }

    /// As [`Sim::send`], answering the message `reply_to`.
    pub fn send_reply(&mut self, from: &Agent, to: &Agent, text: &str, reply_to: Option<MessageId>) -> Output {
        let outgoing = Outgoing { from: from.clone(), to: to.clone(), body: text.to_owned(), reply_to };
        let out = self.input(Input::Send(outgoing));
        if let Output::Accepted { message, .. } = &out {
            self.receive(message.clone());
        }
        out
    }

    /// A message accepted by a firewall, this one or another machine's, lands in its
    /// recipient's inbox here.
    pub fn receive(&mut self, message: Accepted) {
        self.inboxes.entry(message.to.id.clone()).or_default().push_back(message);
    }

    /// `agent` checks its inbox: every waiting message is delivered or refused; held ones
    /// stay for later.
    pub fn read(&mut self, agent: &Agent) -> Vec<Output> {
        let waiting = self.inboxes.remove(&agent.id).unwrap_or_default();
        let mut outputs = Vec::new();
        for message in waiting {
            let out = self.input(Input::Deliver(message));
            if let Output::Held { message, .. } = &out {
                self.inboxes.entry(agent.id.clone()).or_default().push_back(message.clone());
            }
            outputs.push(out);
        }
        outputs
    }

    /// Messages waiting in `agent`'s inbox.
    pub fn waiting(&self, agent: &Agent) -> usize {
        self.inboxes.get(&agent.id).map_or(0, VecDeque::len)
    }

    /// A person typed a prompt in `agent`'s session.
    pub fn human(&mut self, agent: &Agent) {
        self.input(Input::HumanTurn(agent.id.clone()));
    }

    pub fn admin(&mut self, action: AdminAction) {
        self.input(Input::Admin(action));
    }

    /// Move the clock on, running every timeout that falls due on the way.
    pub fn advance(&mut self, by: Duration) {
        let end = self.now + by;
        while let Some(due) = self.firewall.poll_timeout().filter(|&t| t <= end && t > self.now) {
            self.now = due;
            self.input(Input::Timeout);
        }
        self.now = end;
        self.input(Input::Timeout);
    }

    /// Every event so far, oldest first.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Feed the firewall any input, collecting its events.
    pub fn input(&mut self, input: Input) -> Output {
        let out = self.firewall.handle(self.now, &mut self.rng, input);
        while let Some(event) = self.firewall.poll_event() {
            self.events.push(event);
        }
        out
    }
}
