//! The engine's side of the relay link ([`crate::relay_link`]): the outbox, deliveries from
//! other devices into the inbox, the relay's central policy applied to the local firewall
//! (AD8, AM2, CT2), the directory of remote agents for `list_team`, and reports of this
//! firewall's events. Everything here runs on the engine thread inside its transactions,
//! like every other input (see the parent module's docs).

use agentfw_core::admission::ComponentId;
use agentfw_core::central::PolicyMirror;
use agentfw_core::firewall::{Accepted, AdminAction, Event, Input};
use agentfw_core::message::{Agent, AgentId, MessageId};
use agentfw_core::seal::DeviceId;
use agentfw_core::time::Timestamp;
use agentfw_relay::client::Directory;
use agentfw_relay::protocol::DirectoryFrame;

use super::{Engine, EngineError, one_line};
use crate::proto::{AgentView, RelayInfo};
use crate::relay_link::{FromLink, Link, Outbound, ToLink};
use crate::store::StoreError;

/// Where the relay's policy mirror is kept (`meta`), with the firewall's state.
const MIRROR_KEY: &str = "relay_mirror";
/// Where the last directory the relay sent is kept (`meta`): a restarted daemon can address
/// agents on other machines at once, before its link is back (their messages wait in the
/// outbox), instead of calling them unknown.
const DIRECTORY_KEY: &str = "relay_directory";

/// The engine's relay state. `None` in the engine when no relay is configured.
#[derive(Debug)]
pub(super) struct RelaySide {
    link: Link,
    /// This machine's name on the relay (`Agent::machine` of the agents it announces).
    name: String,
    directory: Directory,
    mirror: PolicyMirror,
    connected: bool,
    /// Why the link is down, or the relay stopped taking this device.
    problem: Option<String>,
    /// Collected inside a transaction; sent after its commit, dropped on rollback.
    events: Vec<Event>,
    outbound: Vec<Outbound>,
    /// The live agents last announced, how many sessions there were then, and when to
    /// look again.
    announced: Vec<Agent>,
    sessions_seen: usize,
    next_announce: Timestamp,
}

impl Engine {
    /// Connects the engine to a relay link: loads the policy mirror, and submits what the
    /// outbox still holds (accepted before a restart, not yet stored by the relay).
    pub fn attach_relay(&mut self, link: Link, name: String) -> Result<(), StoreError> {
        let mirror = match self.db.meta(MIRROR_KEY)? {
            Some(json) => serde_json::from_str(&json)?,
            None => PolicyMirror::new(),
        };
        let mut directory = Directory::default();
        match self.db.meta(DIRECTORY_KEY)?.map(|json| serde_json::from_str::<DirectoryFrame>(&json)) {
            Some(Ok(saved)) => directory.apply(saved),
            Some(Err(e)) => {
                eprintln!("agentfw daemon: ignoring the kept relay directory ({e}); the relay sends it again")
            }
            None => {}
        }
        let (waiting, unreadable) = self.db.outbox()?;
        if unreadable > 0 {
            eprintln!("agentfw daemon: dropping {unreadable} unreadable outbox row(s)");
        }
        let waiting: Vec<Outbound> =
            waiting.into_iter().map(|(device, message)| Outbound { message, device }).collect();
        if !waiting.is_empty() {
            eprintln!("agentfw daemon: {} message(s) for other devices still to submit to the relay", waiting.len());
            link.send(ToLink::Submit(waiting));
        }
        self.relay = Some(RelaySide {
            link,
            name,
            directory,
            mirror,
            connected: false,
            problem: None,
            events: Vec::new(),
            outbound: Vec::new(),
            announced: Vec::new(),
            sessions_seen: 0,
            next_announce: Timestamp::from_millis(0),
        });
        Ok(())
    }

    /// One piece of news from the link.
    pub fn relay_input(&mut self, now: Timestamp, news: FromLink) {
        let Some(relay) = self.relay.as_mut() else { return };
        match news {
            FromLink::Connected { device } => {
                eprintln!("agentfw daemon: connected to the relay at {} as device {device}", relay.link.url());
                relay.connected = true;
                relay.problem = None;
            }
            FromLink::Disconnected { reason } => {
                if relay.connected {
                    eprintln!("agentfw daemon: lost the relay ({reason}); reconnecting");
                }
                relay.connected = false;
                relay.problem = Some(reason);
            }
            FromLink::Stopped { code, reason } => {
                eprintln!("agentfw daemon: the relay no longer takes this device ({code}): {reason}");
                relay.connected = false;
                relay.problem = Some(format!("{reason} ({code})"));
            }
            FromLink::Directory(frame) => {
                relay.directory.apply(frame);
                let saved = DirectoryFrame {
                    full: true,
                    devices: relay.directory.devices.values().cloned().collect(),
                    agents: relay.directory.agents.values().cloned().collect(),
                };
                // The firewall learns the key of each agent on another machine it does not
                // know yet, so a quarantine put on one of its sessions holds the agent.
                let here = &self.fw.config().machine;
                let unknown: Vec<Agent> = self
                    .remote_agents()
                    .filter(|a| self.fw.agents().key_of(&a.id).is_none_or(|k| k != a.key(here)))
                    .collect();
                let result = self.tx(now, |e| {
                    for agent in unknown {
                        e.apply(now, Input::Seen(agent))?;
                    }
                    Ok(e.db.set_meta(DIRECTORY_KEY, &serde_json::to_string(&saved)?)?)
                });
                if let Err(e) = result {
                    eprintln!("agentfw daemon: cannot keep the relay directory: {}", e.body().message);
                }
            }
            FromLink::Rejected { seq, why } => {
                eprintln!("agentfw daemon: dropped a delivery from the relay: {why}");
                relay.link.send(ToLink::Ack(vec![seq]));
            }
            FromLink::Delivery { seq, sender, message } => match self.tx(now, |e| e.receive(now, sender, *message)) {
                Ok(()) => self.link_send(ToLink::Ack(vec![seq])),
                // Not acknowledged: the relay sends it again after the next login.
                Err(e) => eprintln!("agentfw daemon: cannot store a delivery from the relay: {}", e.body().message),
            },
            FromLink::Stored { id } => {
                if let Err(e) = self.tx(now, |e| e.unqueue(id).map(|_| ())) {
                    eprintln!("agentfw daemon: cannot update the outbox: {}", e.body().message);
                }
            }
            FromLink::Refused { id, code, reason } => {
                if let Err(e) = self.tx(now, |e| e.refused_by_relay(now, id, &code, &reason)) {
                    eprintln!("agentfw daemon: cannot update the outbox: {}", e.body().message);
                }
            }
            FromLink::Policy(frame) => {
                let mut mirror = relay.mirror.clone();
                let actions = mirror.apply(&frame);
                if actions.is_empty() && mirror == relay.mirror {
                    return;
                }
                let replaced = actions.iter().any(|a| matches!(a, AdminAction::SetInventory { .. }));
                let result = self.tx(now, |e| {
                    for action in actions {
                        e.apply(now, Input::Admin(action))?;
                    }
                    if replaced {
                        // The relay's inventory replaced the local one: add back what this
                        // daemon knows of its own sessions' components.
                        let local: Vec<AgentId> = e.sessions.keys().cloned().collect();
                        for agent in local {
                            e.rate(now, &agent)?;
                        }
                    }
                    e.security_dirty = true;
                    e.db.set_meta(MIRROR_KEY, &serde_json::to_string(&mirror)?)?;
                    Ok(mirror)
                });
                match result {
                    Ok(mirror) => {
                        if let Some(relay) = self.relay.as_mut() {
                            relay.mirror = mirror;
                        }
                    }
                    Err(e) => eprintln!("agentfw daemon: cannot apply the relay's policy: {}", e.body().message),
                }
            }
        }
    }

    /// `message` to the link once the commits before it are durable (an acknowledgement
    /// lets the relay drop its copy).
    fn link_send(&mut self, message: ToLink) {
        if self.relay.is_some() {
            self.held.link.push(message);
        }
    }

    /// A delivery from the device `sender` into the recipient's inbox, once (by message id).
    fn receive(&mut self, now: Timestamp, sender: DeviceId, message: Accepted) -> Result<(), EngineError> {
        if self.db.in_inbox(message.id)? {
            return Ok(());
        }
        if !self.sessions.contains_key(&message.to.id) {
            eprintln!(
                "agentfw daemon: a message from the relay for {}, which is no session here, was dropped",
                one_line(message.to.id.as_str())
            );
            return Ok(());
        }
        // The recipient is local; the sender is on the machine of the device that sealed
        // the envelope, named as every machine names it (never empty: not this machine).
        let from = match &self.relay {
            Some(relay) => machine_name(&relay.directory, sender, &message.from),
            None => message.from.machine.clone(),
        };
        let message = message.arrived_from(&from);
        self.enqueue(now, &message, &[])?;
        self.accepted_for.push(message.to.id.clone());
        Ok(())
    }

    /// Removes a message from the outbox; returns it if it was there.
    fn unqueue(&mut self, id: MessageId) -> Result<Option<Accepted>, EngineError> {
        Ok(self.db.take_from_outbox(id)?)
    }

    /// The relay refused a message this daemon had accepted: tell its sender in a note.
    fn refused_by_relay(&mut self, now: Timestamp, id: MessageId, code: &str, reason: &str) -> Result<(), EngineError> {
        let Some(message) = self.unqueue(id)? else { return Ok(()) };
        if code == "relay.replayed" {
            // Resubmitted after a restart with new sealing randomness: the relay already
            // has this message (the same sender device and message id).
            return Ok(());
        }
        eprintln!("agentfw daemon: the relay refused message {id} ({code}): {reason}");
        let text = format!(
            "agentfw: your message {id} to {} was accepted here but refused by the relay ({code}): {reason}. It was not delivered; tell your user.",
            message.to.label()
        );
        self.note(now, &message.from.id, &text)
    }

    /// The live agent on another device with this id, label or project, if the relay's
    /// directory has exactly one.
    pub(super) fn find_remote(&self, to: &str) -> Result<Option<AgentId>, EngineError> {
        let Some(relay) = &self.relay else { return Ok(None) };
        let own = relay.link.device();
        let live = || relay.directory.agents.values().filter(|a| a.live && a.device != own);
        let id = AgentId::new(to);
        if live().any(|a| a.agent.id == id) {
            return Ok(Some(id));
        }
        let by_label: Vec<&Agent> = live().map(|a| &a.agent).filter(|a| a.label().eq_ignore_ascii_case(to)).collect();
        let candidates = if by_label.is_empty() && !to.contains('(') {
            live().map(|a| &a.agent).filter(|a| a.project.eq_ignore_ascii_case(to)).collect()
        } else {
            by_label
        };
        match candidates.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one.id.clone())),
            many => {
                let ids: Vec<String> = many.iter().map(|a| a.id.to_string()).collect();
                Err(super::reply(
                    crate::proto::code::AMBIGUOUS_RECIPIENT,
                    format!(
                        "`{}` names {} agents on other machines: {}; use one of these agent ids",
                        one_line(to),
                        many.len(),
                        ids.join(", ")
                    ),
                ))
            }
        }
    }

    /// The agent on another device with this id, live in the relay's directory.
    pub(super) fn remote_agent(&self, id: &AgentId) -> Option<Agent> {
        self.remote_agents().find(|a| &a.id == id)
    }

    /// The live agents on other devices, each on its machine as every machine names it.
    fn remote_agents(&self) -> impl Iterator<Item = Agent> + '_ {
        self.relay.iter().flat_map(|relay| {
            let own = relay.link.device();
            relay.directory.agents.values().filter(move |a| a.live && a.device != own).map(|entry| Agent {
                machine: machine_name(&relay.directory, entry.device, &entry.agent),
                ..entry.agent.clone()
            })
        })
    }

    /// For a message accepted for an agent on another device: into the outbox (in this
    /// transaction), submitted after the commit. False when the recipient is local.
    pub(super) fn outbox(&mut self, now: Timestamp, m: &Accepted) -> Result<bool, EngineError> {
        if self.sessions.contains_key(&m.to.id) {
            return Ok(false);
        }
        let Some(relay) = self.relay.as_ref() else { return Ok(false) };
        let Some(device) = relay.directory.device_of(&m.to.id) else {
            return Err(super::reply(
                crate::proto::code::GONE_RECIPIENT,
                format!("{} is no longer connected to the relay", m.to.label()),
            ));
        };
        self.db.add_to_outbox(now, m, device)?;
        if let Some(relay) = self.relay.as_mut() {
            relay.outbound.push(Outbound { message: m.clone(), device });
        }
        Ok(true)
    }

    /// An agent's components, for the relay's copy of the inventory (AD5, AD8).
    pub(super) fn relay_components(&self, agent: &Agent, components: &[ComponentId]) {
        if let Some(relay) = &self.relay {
            relay.link.send(ToLink::Components { agent: agent.clone(), components: components.to_vec() });
        }
    }

    /// Keeps a firewall event for the relay (inside a transaction).
    pub(super) fn relay_event(&mut self, event: &Event) {
        if let Some(relay) = self.relay.as_mut() {
            relay.events.push(event.clone());
        }
    }

    /// After a commit: the new outbox rows to submit and the events to report, once the
    /// commit is durable.
    pub(super) fn relay_committed(&mut self) {
        let Some(relay) = self.relay.as_mut() else { return };
        if !relay.outbound.is_empty() {
            self.held.link.push(ToLink::Submit(std::mem::take(&mut relay.outbound)));
        }
        if !relay.events.is_empty() {
            self.held.link.push(ToLink::Report(std::mem::take(&mut relay.events)));
        }
    }

    /// Sends what durable commits let out to the link.
    pub(super) fn relay_release(&mut self, messages: Vec<ToLink>) {
        if let Some(relay) = &self.relay {
            for message in messages {
                relay.link.send(message);
            }
        }
    }

    /// After a rollback: nothing of the transaction happened.
    pub(super) fn relay_rolled_back(&mut self) {
        if let Some(relay) = self.relay.as_mut() {
            relay.outbound.clear();
            relay.events.clear();
        }
    }

    /// Tells the relay which agents live here, when that changed: at once for a new
    /// session, and sessions that ended are noticed within a second.
    pub(super) fn relay_announce(&mut self, now: Timestamp) {
        let Some(relay) = self.relay.as_mut() else { return };
        if self.sessions.len() == relay.sessions_seen && now < relay.next_announce {
            return;
        }
        relay.sessions_seen = self.sessions.len();
        relay.next_announce = now + std::time::Duration::from_secs(1);
        let name = relay.name.clone();
        let mut live: Vec<Agent> = self
            .sessions
            .values()
            .filter(|s| self.alive(s))
            .map(|s| Agent { machine: name.clone(), ..s.agent().clone() })
            .collect();
        live.sort_by(|a, b| a.id.cmp(&b.id));
        let Some(relay) = self.relay.as_mut() else { return };
        if live != relay.announced {
            relay.announced.clone_from(&live);
            relay.link.send(ToLink::Announce(live));
        }
    }

    /// The live agents on other devices, for `list_team` and `agentfw team`.
    pub(super) fn remote_views(&self, now: Timestamp) -> Vec<AgentView> {
        self.remote_agents()
            .map(|a| {
                let contained = self
                    .fw
                    .quarantine_for(now, &a)
                    .map(|q| crate::proto::Contained { until: q.until.as_millis(), reason: q.reason.clone() });
                AgentView {
                    id: a.id.to_string(),
                    label: a.label(),
                    agent: a.kind.clone(),
                    project: a.project.clone(),
                    pid: 0,
                    started_at: 0,
                    live: true,
                    you: false,
                    verified: false,
                    unverified: None,
                    session: None,
                    contained,
                    admission: None,
                    components_error: None,
                    wake: None,
                    last_seen: now.as_millis(),
                    machine: Some(a.machine),
                }
            })
            .collect()
    }

    /// The relay as `agentfw status` shows it.
    pub(super) fn relay_info(&self, now: Timestamp) -> Result<Option<RelayInfo>, EngineError> {
        let Some(relay) = &self.relay else { return Ok(None) };

        Ok(Some(RelayInfo {
            url: relay.link.url().to_owned(),
            device: relay.link.device().to_string(),
            name: relay.name.clone(),
            connected: relay.connected,
            problem: relay.problem.clone(),
            outbox: self.db.outbox_len()?,
            remote_agents: self.remote_views(now).len(),
            policy_seq: relay.mirror.seq,
        }))
    }
}

/// The machine of `agent` on `device`, as every machine and the relay name it
/// ([`agentfw_relay::protocol::machine_name`]).
fn machine_name(directory: &Directory, device: DeviceId, agent: &Agent) -> String {
    let enrolled = directory.devices.get(&device).map_or("", |d| d.name.as_str());
    agentfw_relay::protocol::machine_name(enrolled, device, &agent.machine)
}
