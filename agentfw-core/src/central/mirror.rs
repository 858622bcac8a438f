//! What the relay says centrally, kept on the device: [`PolicyMirror`].

use std::collections::BTreeSet;

use super::PolicyFrame;
use crate::admission::ComponentId;
use crate::containment::TextId;
use crate::firewall::AdminAction;
use crate::message::AgentId;

/// What the relay's policy frames mean for the local firewall (AD8, AM2, CT2).
///
/// Feed every policy frame from the relay to [`PolicyMirror::apply`] and hand the actions it
/// returns to the firewall in order (`Input::Admin`). A reset frame replaces what earlier
/// frames said: the mirror remembers what the relay had set (blocks, quarantines,
/// exceptions, remembered texts) and undoes what the reset no longer has, without touching
/// what the local admin did. Keep the mirror with the firewall's snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PolicyMirror {
    pub seq: u64,
    disconnected: BTreeSet<(AgentId, AgentId)>,
    quarantined: BTreeSet<AgentId>,
    exceptions: BTreeSet<ComponentId>,
    remembered: BTreeSet<TextId>,
}

impl PolicyMirror {
    pub fn new() -> Self {
        Self::default()
    }

    /// The actions to apply for one policy frame. Stale frames (an entry at or below the
    /// last one applied) give none.
    pub fn apply(&mut self, frame: &PolicyFrame) -> Vec<AdminAction> {
        let PolicyFrame { seq, reset, ref actions } = *frame;
        if !reset && seq <= self.seq {
            return Vec::new();
        }
        let mut out = Vec::new();
        if reset {
            let mut next = PolicyMirror { seq, ..PolicyMirror::default() };
            for a in actions {
                next.track(a);
            }
            out.extend(
                self.disconnected
                    .difference(&next.disconnected)
                    .map(|(a, b)| AdminAction::Reconnect { a: a.clone(), b: b.clone() }),
            );
            out.extend(
                self.quarantined
                    .difference(&next.quarantined)
                    .map(|a| AdminAction::LiftQuarantine { agent: a.clone() }),
            );
            out.extend(
                self.exceptions.difference(&next.exceptions).map(|c| AdminAction::Unexcept { component: c.clone() }),
            );
            out.extend(self.remembered.difference(&next.remembered).map(|t| AdminAction::Forget { text: *t }));
            *self = next;
        } else {
            for a in actions {
                self.track(a);
            }
            self.seq = seq;
        }
        out.extend(actions.iter().cloned());
        out
    }

    fn track(&mut self, action: &AdminAction) {
        let pair = |a: &AgentId, b: &AgentId| if a <= b { (a.clone(), b.clone()) } else { (b.clone(), a.clone()) };
        match action {
            AdminAction::Disconnect { a, b, .. } => {
                self.disconnected.insert(pair(a, b));
            }
            AdminAction::Reconnect { a, b } => {
                self.disconnected.remove(&pair(a, b));
            }
            AdminAction::Quarantine { agent, .. } => {
                self.quarantined.insert(agent.clone());
            }
            AdminAction::LiftQuarantine { agent } => {
                self.quarantined.remove(agent);
            }
            AdminAction::Except { component } => {
                self.exceptions.insert(component.clone());
            }
            AdminAction::Unexcept { component } => {
                self.exceptions.remove(component);
            }
            AdminAction::Remember { remembered, .. } => {
                self.remembered.insert(remembered.text);
            }
            AdminAction::Forget { text } => {
                self.remembered.remove(text);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(n: &str) -> AgentId {
        AgentId::new(n)
    }

    fn frame(seq: u64, reset: bool, actions: &[AdminAction]) -> PolicyFrame {
        PolicyFrame { seq, reset, actions: actions.to_vec() }
    }

    #[test]
    fn a_reset_undoes_what_the_relay_no_longer_says_and_keeps_the_rest() {
        let mut mirror = PolicyMirror::new();
        let block = AdminAction::Disconnect { a: agent("b"), b: agent("a"), reason: "r".into() };
        let q = AdminAction::Quarantine { agent: agent("x"), seconds: 60, reason: "r".into(), key: None };
        assert_eq!(mirror.apply(&frame(1, true, &[block.clone(), q.clone()])), vec![block.clone(), q.clone()]);
        // Stale increments are ignored; new ones pass through.
        assert!(mirror.apply(&frame(1, false, &[AdminAction::LiftQuarantine { agent: agent("x") }])).is_empty());
        let lift = AdminAction::LiftQuarantine { agent: agent("x") };
        assert_eq!(mirror.apply(&frame(2, false, std::slice::from_ref(&lift))), vec![lift]);
        // Missed while offline: the block was lifted, a quarantine added.
        let q2 = AdminAction::Quarantine { agent: agent("y"), seconds: 60, reason: "r".into(), key: None };
        let out = mirror.apply(&frame(5, true, std::slice::from_ref(&q2)));
        assert_eq!(out, vec![AdminAction::Reconnect { a: agent("a"), b: agent("b") }, q2]);
        assert_eq!(mirror.seq, 5);
    }
}
