//! The relay's central policy (AD8, AM2, CT2): admission facts and settings, admin blocks,
//! quarantines and remembered texts.
//!
//! The state is a [`Firewall`] that is only ever fed [`AdminAction`]s, so the relay and
//! every daemon interpret an action the same way. Every change is an entry in the policy
//! log (a sequence number, a time, actions); the state is the log applied in order, each
//! entry at its own time. Devices get the whole state as actions when they connect
//! ([`Policy::snapshot_actions`]) and each later entry as it commits.

use crate::admission::{Admission, Component, ComponentId, Mode, Score};
use crate::containment::{Quarantine, Remembered};
use crate::firewall::{AdminAction, Config, Disconnection, Event, Firewall, State};
use crate::message::{Agent, AgentId};
use crate::route::{Checkpoint, Route};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The central policy. See the module docs.
#[derive(Debug)]
pub struct Policy {
    firewall: Firewall,
    seq: u64,
}

/// A serialized policy: the firewall state and the last log entry applied.
#[derive(Debug, Serialize, Deserialize)]
pub struct PolicySnapshot {
    pub seq: u64,
    pub state: State,
}

impl Default for Policy {
    fn default() -> Self {
        Self::new()
    }
}

impl Policy {
    /// An empty policy. Admission starts in report-only mode (AD6): a fresh relay admits
    /// everyone and records who it would refuse.
    pub fn new() -> Self {
        let mut config = Config::default();
        config.admission.mode = Mode::Report;
        Self { firewall: Firewall::new(config), seq: 0 }
    }

    pub fn from_snapshot(snapshot: PolicySnapshot) -> Self {
        Self { firewall: Firewall::restore(snapshot.state), seq: snapshot.seq }
    }

    pub fn snapshot(&self) -> PolicySnapshot {
        PolicySnapshot { seq: self.seq, state: self.firewall.snapshot() }
    }

    /// The last log entry applied.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Applies log entry `seq`, made at `at`. Entries at or below the current sequence
    /// number were applied already and are skipped.
    pub fn apply(&mut self, seq: u64, at: Timestamp, actions: &[AdminAction]) {
        if seq <= self.seq {
            return;
        }
        for action in actions {
            self.firewall.admin(at, action.clone());
        }
        while self.firewall.poll_event().is_some() {}
        self.seq = seq;
    }

    /// Drops quarantines and remembered texts that ran out.
    pub fn expire(&mut self, now: Timestamp) {
        self.firewall.expire(now);
        while self.firewall.poll_event().is_some() {}
    }

    /// Re-checks an envelope from `from` to `to` by metadata, with the core's route check
    /// at the relay's checkpoint ([`crate::route`]): disconnected pair, quarantine, trust,
    /// then admission of the sender and the recipient (AM2, CT1, TR1, AD8), so the relay
    /// refuses for the same reason, in the same order, as the daemons at either end. At the
    /// relay nothing is held: the verdict passes or refuses.
    pub fn check(&self, now: Timestamp, from: &Agent, to: &Agent) -> Route {
        self.firewall.route(now, Checkpoint::Relay, from, to)
    }

    /// The pair's block, if an admin disconnected it.
    pub fn disconnection(&self, a: &AgentId, b: &AgentId) -> Option<&Disconnection> {
        self.firewall.disconnected().iter().find(|d| (&d.a == a && &d.b == b) || (&d.a == b && &d.b == a))
    }

    pub fn disconnected(&self) -> &[Disconnection] {
        self.firewall.disconnected()
    }

    pub fn quarantine_of(&self, now: Timestamp, agent: &AgentId) -> Option<&Quarantine> {
        self.firewall.quarantine_of(now, agent)
    }

    /// Live quarantines.
    pub fn quarantines(&self, now: Timestamp) -> Vec<(AgentId, Quarantine)> {
        self.firewall
            .containment()
            .quarantined()
            .filter(|(_, q)| q.until > now)
            .map(|(a, q)| (a.clone(), q.clone()))
            .collect()
    }

    pub fn admission(&self) -> &Admission {
        self.firewall.admission()
    }

    /// Remembered texts (fingerprints and why, never the text).
    pub fn remembered(&self) -> impl Iterator<Item = &Remembered> {
        self.firewall.containment().remembered()
    }

    /// The whole policy as actions, for a device that connects: applied to a firewall that
    /// has no relay policy yet, they give it this one.
    pub fn snapshot_actions(&self, now: Timestamp) -> Vec<AdminAction> {
        let admission = self.firewall.admission();
        let mut actions = vec![
            AdminAction::SetInventory { inventory: admission.inventory().clone() },
            AdminAction::SetAdmissionMode { mode: admission.mode() },
            AdminAction::SetAdmissionThreshold { threshold: admission.threshold() },
        ];
        actions.extend(admission.config().exceptions.iter().map(|c| AdminAction::Except { component: c.clone() }));
        actions.extend(self.firewall.disconnected().iter().map(|d| AdminAction::Disconnect {
            a: d.a.clone(),
            b: d.b.clone(),
            reason: d.reason.clone(),
        }));
        for (agent, q) in self.quarantines(now) {
            actions.push(AdminAction::Quarantine {
                agent,
                seconds: q.until.since(now).as_secs().max(1),
                reason: q.reason,
                key: q.key,
            });
        }
        actions.extend(self.firewall.containment().remembered_with_prints().map(|(remembered, prints)| {
            AdminAction::Remember { remembered: remembered.clone(), prints: prints.clone() }
        }));
        actions
    }

    /// What a daemon's reported event asks of everyone, if anything new: containment it
    /// decided (CT1, CT2). Quarantines an admin made (no message) and texts already
    /// remembered are not repeated, so reports never loop.
    pub fn contain_reported(&self, now: Timestamp, event: &Event) -> Option<AdminAction> {
        match event {
            Event::Quarantined { agent, quarantine } if quarantine.message.is_some() && quarantine.until > now => {
                let covered = self.firewall.quarantine_of(now, agent).is_some_and(|q| q.until >= quarantine.until);
                (!covered).then(|| AdminAction::Quarantine {
                    agent: agent.clone(),
                    seconds: quarantine.until.since(now).as_secs().max(1),
                    reason: quarantine.reason.clone(),
                    key: quarantine.key.clone(),
                })
            }
            Event::Remembered { text, message, rule, reason, prints } => {
                let known = self.firewall.containment().recall(now, prints).is_some();
                (!known).then(|| AdminAction::Remember {
                    remembered: Remembered {
                        text: *text,
                        message: *message,
                        rule: rule.clone(),
                        reason: reason.clone(),
                    },
                    prints: prints.clone(),
                })
            }
            _ => None,
        }
    }

    /// An admin's quarantine of `agent` (CT3): when the relay knows the agent (`known`, named
    /// on its machine), by its key, so every process of it on every machine is held; else
    /// the session alone.
    pub fn quarantine(agent: AgentId, known: Option<&Agent>, seconds: u64, reason: String) -> AdminAction {
        AdminAction::Quarantine { agent, seconds, reason, key: known.map(|a| a.key("")) }
    }

    /// An agent's components rated from what the inventory knows (AD5): every rating any
    /// agent's entry gives a component. Unknown components stay unrated.
    pub fn rate_components(&self, components: &[ComponentId]) -> Vec<Component> {
        let inventory = self.firewall.admission().inventory();
        components
            .iter()
            .map(|id| {
                let score: Option<Score> = inventory
                    .agents()
                    .flat_map(|(_, cs)| cs.iter())
                    .filter(|c| &c.id == id)
                    .filter_map(|c| c.score)
                    .max();
                Component { id: id.clone(), score }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

    use core::time::Duration;

    use super::*;
    use crate::admission::Inventory;
    use crate::firewall::Reason;
    use crate::route::Verdict;

    const T0: Timestamp = Timestamp::from_millis(1_767_225_600_000);

    /// The relay's answer as codes and texts: a pass's warnings, or the refusal.
    fn check(p: &Policy, now: Timestamp, from: &Agent, to: &Agent) -> Result<Vec<(String, String)>, (String, String)> {
        let route = p.check(now, from, to);
        let text = |r: Reason| (r.code.to_string(), r.text);
        match route.verdict {
            Verdict::Pass { .. } => Ok(route.warnings.into_iter().map(|(_, r)| text(r)).collect()),
            Verdict::Refuse(r) => Err(text(r)),
            Verdict::Hold { .. } => panic!("the relay holds nothing"),
        }
    }

    fn agents() -> (Agent, Agent) {
        (Agent::new("claude:web:1:1", "claude", "web"), Agent::new("codex:api:2:2", "codex", "api"))
    }

    #[test]
    fn blocks_quarantines_and_admission_refuse_by_metadata() {
        let (web, api) = agents();
        let mut p = Policy::new();
        assert_eq!(
            check(&p, T0, &web, &api),
            Ok(vec![
                (
                    "admission.would_refuse".into(),
                    "would refuse: the sender, web (claude), is not admitted to the network: it is not in the admission inventory yet; retry in a few seconds, and if it persists ask your user".into()
                ),
                (
                    "admission.would_refuse".into(),
                    "would refuse: the recipient, api (codex), is not admitted to the network: it is not in the admission inventory yet; retry in a few seconds, and if it persists ask your user".into()
                )
            ])
        );
        let inventory = Inventory::from_json(
            r#"{"agents": [{"agent": "web (claude)", "components": [{"id": "mcp:github", "score": 7.5}]},
                           {"agent": "api (codex)", "components": [{"id": "mcp:fs", "score": 2.0}]}]}"#,
        )
        .unwrap();
        p.apply(
            1,
            T0,
            &[AdminAction::SetInventory { inventory }, AdminAction::SetAdmissionMode { mode: Mode::Enforce }],
        );
        let (code, reason) = check(&p, T0, &web, &api).unwrap_err();
        assert_eq!(code, "admission.refused");
        assert_eq!(reason, "the sender, web (claude), is not admitted to the network: mcp:github is HIGH (7.5)");
        p.apply(2, T0, &[AdminAction::Except { component: ComponentId::mcp("github").unwrap() }]);
        assert_eq!(check(&p, T0, &web, &api), Ok(vec![]));
        p.apply(
            3,
            T0,
            &[AdminAction::Quarantine { agent: api.id.clone(), seconds: 60, reason: "admin".into(), key: None }],
        );
        let (code, _) = check(&p, T0, &web, &api).unwrap_err();
        assert_eq!(code, "containment.quarantined");
        // Applied at its own time: a replayed log does not extend it.
        assert_eq!(check(&p, T0 + Duration::from_secs(61), &web, &api), Ok(vec![]));
        p.apply(4, T0, &[AdminAction::Disconnect { a: api.id.clone(), b: web.id.clone(), reason: String::new() }]);
        let (code, reason) = check(&p, T0 + Duration::from_secs(61), &web, &api).unwrap_err();
        assert_eq!(
            (code.as_str(), reason.as_str()),
            ("admin.disconnected", "an admin disconnected web (claude) from api (codex)")
        );
        // Old entries are skipped.
        p.apply(4, T0, &[AdminAction::Reconnect { a: api.id.clone(), b: web.id.clone() }]);
        assert_eq!(p.disconnected().len(), 1);
    }

    #[test]
    fn a_snapshot_rebuilds_the_same_policy_on_a_fresh_firewall() {
        let (web, api) = agents();
        let mut p = Policy::new();
        p.apply(
            1,
            T0,
            &[
                AdminAction::SetAdmissionThreshold { threshold: Score::new(5.0).unwrap() },
                AdminAction::Except { component: ComponentId::skill("deploy").unwrap() },
                AdminAction::Disconnect { a: web.id.clone(), b: api.id.clone(), reason: "review".into() },
                AdminAction::Quarantine { agent: web.id.clone(), seconds: 600, reason: "admin".into(), key: None },
            ],
        );
        let mut copy = Policy::new();
        let now = T0 + Duration::from_secs(100);
        copy.apply(1, now, &p.snapshot_actions(now));
        assert_eq!(copy.snapshot_actions(now), p.snapshot_actions(now));
        assert_eq!(copy.quarantine_of(now, &web.id).unwrap().until, T0 + Duration::from_secs(600));
    }
}
