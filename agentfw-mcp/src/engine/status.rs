//! What the daemon shows: `hello`, `team`, `status` and the audit log (AM4).

use agentfw_core::admission::Mode;
use agentfw_core::message::AgentId;
use agentfw_core::time::Timestamp;
use serde_json::Value;

use super::sessions::Session;
use super::{Caller, Engine, EngineError, version};
use crate::proto::{
    self, AgentView, AuditQuery, Contained, DaemonInfo, HelloResult, QuarantineView, StatusResult, TeamResult, code,
};

/// Gone sessions stay in `team` this long: long enough for a model that tries to reach one
/// to be told it is gone, short enough that the team is the sessions that are there.
const GONE_SHOWN_MS: u64 = 5 * 60 * 1000;

impl Engine {
    pub(super) fn op_hello(&mut self, now: Timestamp, caller: &Caller) -> Result<Value, EngineError> {
        let (you, not_agent) = match self.session_for(now, caller) {
            Ok(id) => (self.sessions.get(&id).map(|s| self.view(s, Some(&id), now).cleaned()), None),
            Err(EngineError::Reply(e)) if e.code == code::NOT_AGENT => (None, Some(e.message)),
            Err(e) => return Err(e),
        };
        let hello = HelloResult { protocol: proto::VERSION, daemon: version(), you, not_agent };
        Ok(serde_json::to_value(hello)?)
    }

    fn view(&self, s: &Session, me: Option<&AgentId>, now: Timestamp) -> AgentView {
        let admission = self.fw.admission();
        let verdict = match admission.mode() {
            Mode::Off => None,
            mode => {
                let e = admission.evaluate_agent(s.agent());
                e.refused.as_ref().map(|why| {
                    let verb = if mode == Mode::Report { "would refuse" } else { "refused" };
                    format!("{verb}: not admitted to the network: {why}")
                })
            }
        };
        AgentView {
            id: s.agent().id.to_string(),
            label: s.label().to_owned(),
            agent: s.agent().kind.clone(),
            project: s.agent().project.clone(),
            pid: s.identity.pid,
            started_at: s.identity.started_at.as_millis(),
            live: self.alive(s),
            you: me == Some(&s.agent().id),
            verified: s.identity.verified,
            unverified: s.identity.unverified.as_ref().map(ToString::to_string),
            session: s.identity.session.as_ref().map(|x| x.id.clone()).or_else(|| s.thread_id.clone()),
            contained: self
                .fw
                .quarantine_for(now, s.agent())
                .map(|q| Contained { until: q.until.as_millis(), reason: q.reason.clone() }),
            admission: verdict,
            components_error: s.components_error.clone(),
            wake: s.channel().map(|c| c.describe().to_owned()),
            last_seen: s.last_seen.as_millis(),
            machine: None,
        }
    }

    pub(super) fn team(&self, now: Timestamp, me: Option<&AgentId>) -> Vec<AgentView> {
        let mut views: Vec<AgentView> = self
            .sessions
            .values()
            .map(|s| self.view(s, me, now))
            .filter(|v| v.live || now.as_millis().saturating_sub(v.last_seen) < GONE_SHOWN_MS)
            .collect();
        views.extend(self.remote_views(now));
        let mut views: Vec<AgentView> = views.into_iter().map(AgentView::cleaned).collect();
        views.sort_by(|a, b| b.live.cmp(&a.live).then_with(|| a.label.cmp(&b.label)).then_with(|| a.id.cmp(&b.id)));
        views
    }

    pub(super) fn op_team(&mut self, now: Timestamp, caller: &Caller) -> Result<Value, EngineError> {
        let me = self.session_for(now, caller).ok();
        let you = me.as_ref().and_then(|id| self.sessions.get(id)).map(|s| s.label().to_owned());
        let result = TeamResult {
            you,
            admission_mode: mode_name(self.fw.admission().mode()).to_owned(),
            agents: self.team(now, me.as_ref()),
        };
        Ok(serde_json::to_value(result)?)
    }

    pub(super) fn op_status(&mut self, now: Timestamp, caller: &Caller) -> Result<Value, EngineError> {
        let me = self.session_for(now, caller).ok();
        let team = self.team(now, me.as_ref());
        let quarantined = self
            .fw
            .containment()
            .quarantined()
            .filter(|(_, q)| q.until > now)
            .map(|(agent, q)| QuarantineView {
                agent: agentfw_core::label::bounded(agent.as_str(), agentfw_core::label::MAX_LABEL_CHARS),
                label: self.label(agent),
                until: q.until.as_millis(),
                reason: agentfw_core::label::bounded(&q.reason, 600),
            })
            .collect();
        let admission = self.fw.admission();
        let db_bytes = std::fs::metadata(self.home.db()).map(|m| m.len()).unwrap_or(0)
            + std::fs::metadata(self.home.db().with_extension("db-wal")).map(|m| m.len()).unwrap_or(0);
        let result = StatusResult {
            daemon: DaemonInfo {
                pid: std::process::id(),
                version: version(),
                protocol: proto::VERSION,
                home: self.home.dir.display().to_string(),
                socket: self.home.socket.display().to_string(),
                started_at: self.started_at.as_millis(),
                db_bytes,
            },
            sessions_live: team.iter().filter(|v| v.live && v.machine.is_none()).count(),
            sessions_total: self.sessions.len(),
            inbox_pending: self.db.waiting_total()?,
            quarantined,
            remembered_texts: self.fw.containment().remembered().count(),
            admission: proto::AdmissionInfo {
                mode: mode_name(admission.mode()).to_owned(),
                threshold: admission.threshold().as_f64(),
                exceptions: admission.config().exceptions.iter().map(ToString::to_string).collect(),
                ratings: self.ratings.len(),
            },
            rules: self.rules_info.clone(),
            relay: self.relay_info(now)?,
            team,
            warnings: machine_warnings(),
        };
        Ok(serde_json::to_value(result)?)
    }

    pub(super) fn op_audit(&mut self, q: &AuditQuery) -> Result<Value, EngineError> {
        Ok(serde_json::to_value(self.db.audit_records(q)?)?)
    }
}

pub(super) fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Off => "off",
        Mode::Report => "report",
        Mode::Enforce => "enforce",
    }
}

/// What about this machine weakens the guarantees `agentfw status` describes.
fn machine_warnings() -> Vec<String> {
    crate::procfs::ptrace_open()
        .map(|why| {
            format!(
                "{why}, so an agent can attach a debugger to another agent's process and send as it \
                 (`gdb -p`); run `sudo sysctl kernel.yama.ptrace_scope=1` (and set it in /etc/sysctl.d) to stop that"
            )
        })
        .into_iter()
        .collect()
}
