//! Admin operations: only a person outside agent sessions may run them (unless
//! `admin.from_agents`); each is journalled as an admin action and snapshotted.

use agentfw_core::admission::{ComponentId, Mode, Ratings};
use agentfw_core::firewall::{AdminAction, Input};
use agentfw_core::identity::Placement;
use agentfw_core::message::AgentId;
use serde_json::Value;

use super::{Caller, Engine, EngineError, done, reply};
use crate::proto::code;
use crate::store::StoreError;
use agentfw_core::time::Timestamp;

impl Engine {
    /// Admin commands run only for a person (AM6): see [`crate::admin`].
    pub(super) fn require_person(&self, caller: &Caller, what: &str) -> Result<(), EngineError> {
        if self.config.admin.from_agents {
            return Ok(());
        }
        let unknown = Placement::Unknown { why: "the daemon did not place it".to_owned() };
        match crate::admin::refusal(what, caller.placement.as_ref().unwrap_or(&unknown)) {
            None => Ok(()),
            Some(body) => Err(EngineError::Reply(body)),
        }
    }

    fn admin(&mut self, now: Timestamp, action: AdminAction) -> Result<(), EngineError> {
        self.tx(now, |e| {
            e.apply(now, Input::Admin(action))?;
            e.security_dirty = true;
            Ok(())
        })
    }

    pub(super) fn op_allow(&mut self, now: Timestamp, caller: &Caller, a: &str, b: &str) -> Result<Value, EngineError> {
        self.require_person(caller, "allow")?;
        let (a, b) = (self.find(a, false)?, self.find(b, false)?);
        self.admin(now, AdminAction::Allow { a: a.clone(), b: b.clone() })?;
        let (la, lb) = (self.label(&a), self.label(&b));
        done(format!("the turn fuse between {la} and {lb} is reset: they may talk again"))
    }

    pub(super) fn op_lift(&mut self, now: Timestamp, caller: &Caller, agent: &str) -> Result<Value, EngineError> {
        self.require_person(caller, "quarantine lift")?;
        let id = match self.find(agent, false) {
            Ok(id) => id,
            // A quarantined agent this daemon never met (e.g. named on a remote path).
            Err(_) if self.fw.containment().quarantined().any(|(q, _)| q.as_str() == agent.trim()) => {
                AgentId::new(agent.trim())
            }
            Err(e) => return Err(e),
        };
        let label = self.label(&id);
        // A quarantine holds the agent: any process of it may be named (issue 17).
        let held = match self.sessions.get(&id) {
            Some(s) => self.fw.quarantine_for(now, s.agent()),
            None => self.fw.quarantine_of(now, &id),
        };
        if held.is_none() {
            return Err(reply(code::NOT_FOUND, format!("{label} is not quarantined")));
        }
        self.admin(now, AdminAction::LiftQuarantine { agent: id.clone() })?;
        if self.sessions.get(&id).is_some_and(|s| self.fw.quarantine_for(now, s.agent()).is_some()) {
            return done(format!(
                "the quarantine of {label} is lifted, but it runs inside a quarantined session (`agentfw team` names it): lift that one too"
            ));
        }
        done(format!("the quarantine of {label} is lifted"))
    }

    pub(super) fn op_import(
        &mut self,
        now: Timestamp,
        caller: &Caller,
        ratings: Ratings,
        source: &str,
        notes: &[String],
    ) -> Result<Value, EngineError> {
        self.require_person(caller, "admission import")?;
        let unrated = ratings.values().filter(|s| s.is_none()).count();
        let count = ratings.len();
        self.tx(now, |e| {
            for (id, score) in &ratings {
                e.db.set_rating(now, id, *score, source)?;
                e.ratings.insert(id.clone(), *score);
            }
            let agents: Vec<AgentId> = e.sessions.keys().cloned().collect();
            for agent in agents {
                e.rate(now, &agent)?;
            }
            Ok(())
        })
        .inspect_err(|_| {
            let _ = self.reload_ratings();
        })?;
        let mut message = format!("imported {count} rating{} from {source}", if count == 1 { "" } else { "s" });
        if unrated > 0 {
            message.push_str(&format!(" ({unrated} unrated: agents loading them are not admitted)"));
        }
        for note in notes {
            message.push_str(&format!("\n  note: {note}"));
        }
        done(message)
    }

    fn reload_ratings(&mut self) -> Result<(), StoreError> {
        self.ratings = self.db.ratings()?;
        Ok(())
    }

    pub(super) fn op_mode(&mut self, now: Timestamp, caller: &Caller, mode: Mode) -> Result<Value, EngineError> {
        self.require_person(caller, "admission")?;
        self.admin(now, AdminAction::SetAdmissionMode { mode })?;
        done(match mode {
            Mode::Enforce => "admission is enforced: agents that are not admitted are refused".to_owned(),
            Mode::Report => {
                "admission is report-only: everyone is admitted, and what would be refused is recorded".to_owned()
            }
            Mode::Off => "admission is off".to_owned(),
        })
    }

    pub(super) fn op_except(
        &mut self,
        now: Timestamp,
        caller: &Caller,
        component: ComponentId,
        remove: bool,
    ) -> Result<Value, EngineError> {
        self.require_person(caller, "admission except")?;
        let had = self.fw.admission().config().exceptions.contains(&component);
        if remove {
            self.admin(now, AdminAction::Unexcept { component: component.clone() })?;
            done(if had {
                format!("{component} no longer has an exception")
            } else {
                format!("{component} had no exception")
            })
        } else {
            self.admin(now, AdminAction::Except { component: component.clone() })?;
            done(if had {
                format!("{component} already has an exception")
            } else {
                format!("{component} is excused: it no longer keeps agents out (the threshold stays)")
            })
        }
    }

    pub(super) fn op_reload(&mut self, caller: &Caller) -> Result<Value, EngineError> {
        self.require_person(caller, "rules reload")?;
        self.reload_rules();
        match &self.rules_info.error {
            None => done(format!("{} rules in force", self.rules_info.rules)),
            Some(e) => Err(reply(
                code::BAD_REQUEST,
                format!("the rule files do not compile; the last good rules stay in force:\n{e}"),
            )),
        }
    }

    pub(super) fn op_shutdown(&mut self, caller: &Caller) -> Result<Value, EngineError> {
        self.require_person(caller, "daemon stop")?;
        self.stop = true;
        done("the daemon is stopping".to_owned())
    }
}
