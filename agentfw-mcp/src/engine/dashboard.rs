//! The engine's side of `agentfw dashboard` ([`crate::dashboard`]): the `dashboard` op (an
//! admin request), the answers to the server's questions, and the feed of decisions, which
//! are published only once their transaction is committed.

use std::sync::Arc;

use agentfw_core::time::Timestamp;
use serde_json::Value;

use super::status::mode_name;
use super::{Caller, Engine, EngineError, reply, version};
use crate::dashboard::feed::DecisionView;
use crate::dashboard::view::{
    DaemonView, DisconnectedView, LimitsView, Member, QuarantineView, RememberedView, RuleView, RulesView, State,
    agent_arg,
};
use crate::dashboard::{Ask, Dashboard, News, Query};
use crate::proto::{AdmissionInfo, AuditQuery, AuditRecord, code};

/// Decisions a page gets when it opens.
const BACKLOG: u32 = 2000;

impl Engine {
    /// Serve the dashboard from this engine's daemon.
    pub fn attach_dashboard(&mut self, dashboard: Arc<Dashboard>) {
        self.dashboard = Some(dashboard);
    }

    pub(super) fn op_dashboard(
        &mut self,
        caller: &Caller,
        port: Option<u16>,
        show_text: bool,
        stop: bool,
    ) -> Result<Value, EngineError> {
        self.require_person(caller, "dashboard")?;
        let Some(dashboard) = self.dashboard.clone() else {
            return Err(reply(code::INTERNAL, "this daemon cannot serve a dashboard"));
        };
        let result = if stop {
            dashboard.stop()
        } else {
            dashboard.serve(port, show_text).map_err(|e| reply(code::BAD_REQUEST, e.to_string()))?
        };
        dashboard.feed.publish(News::Changed);
        Ok(serde_json::to_value(result)?)
    }

    /// Answer a question from the dashboard's server.
    pub fn dashboard_answer(&mut self, now: Timestamp, query: Query) {
        let answer = match query.ask {
            Ask::State => self.dashboard_state(now),
            Ask::Backlog => self.dashboard_backlog(),
        };
        let _ = query.reply.send(answer.map_err(|e| e.body().message));
    }

    fn dashboard_state(&self, now: Timestamp) -> Result<String, EngineError> {
        let Some(dashboard) = &self.dashboard else { return Err(reply(code::INTERNAL, "no dashboard")) };
        let views = self.team(now, None);
        let limits = self.fw.limits();
        let team: Vec<Member> = views
            .iter()
            .map(|v| {
                let key = self.fw.agents().key_or_session(&agentfw_core::message::AgentId::new(v.id.as_str()));
                Member {
                    agent: v.clone(),
                    turn: limits.turn_of(&key),
                    rate: limits.rate_of(now, &key),
                    arg: agent_arg(v, &views),
                }
            })
            .collect();
        let arg_of = |agent: &str| team.iter().find(|m| m.agent.id == agent).map(|m| m.arg.clone());
        let quarantined = self
            .fw
            .containment()
            .quarantined()
            .filter(|(_, q)| q.until > now)
            .map(|(agent, q)| {
                let arg = arg_of(agent.as_str()).unwrap_or_else(|| crate::dashboard::view::shell_quote(agent.as_str()));
                QuarantineView {
                    agent: agent.to_string(),
                    label: self.label(agent),
                    until: q.until.as_millis(),
                    reason: q.reason.clone(),
                    command: format!("{} quarantine lift {arg}", dashboard.command),
                }
            })
            .collect();
        let remembered = self
            .fw
            .containment()
            .remembered()
            .map(|r| RememberedView { text: r.text.to_string(), rule: r.rule.clone(), message: r.message.to_string() })
            .collect();
        let disconnected = self
            .fw
            .disconnected()
            .iter()
            .map(|d| DisconnectedView { a: d.a.to_string(), b: d.b.to_string(), reason: d.reason.clone() })
            .collect();
        let c = limits.config();
        let admission = self.fw.admission();
        let rules = self.rules.current();
        let state = State {
            daemon: DaemonView {
                version: version(),
                pid: std::process::id(),
                home: self.home.dir.display().to_string(),
                machine: dashboard.machine.clone(),
                started_at: self.started_at.as_millis(),
                show_text: dashboard.feed.show_text(),
                command: dashboard.command.clone(),
            },
            team,
            quarantined,
            remembered,
            disconnected,
            limits: LimitsView {
                max_turns: c.max_turns,
                rate: c.rate,
                rate_window_secs: c.rate_window.as_secs(),
                fan_out: c.fan_out,
                thread_messages: c.thread_messages,
            },
            admission: AdmissionInfo {
                mode: mode_name(admission.mode()).to_owned(),
                threshold: admission.threshold().as_f64(),
                exceptions: admission.config().exceptions.iter().map(ToString::to_string).collect(),
                ratings: self.ratings.len(),
            },
            rules: RulesView {
                info: self.rules_info.clone(),
                list: rules
                    .rules()
                    .map(|r| RuleView {
                        id: r.id.clone(),
                        verdict: r.verdict.as_str().to_owned(),
                        file: r.file.clone(),
                        line: r.line,
                    })
                    .collect(),
            },
        };
        Ok(serde_json::to_string(&state)?)
    }

    /// The latest decisions, oldest first.
    fn dashboard_backlog(&mut self) -> Result<String, EngineError> {
        let last = self.db.last_audit_seq()?;
        let query = AuditQuery {
            after: Some(last.saturating_sub(i64::from(BACKLOG))),
            limit: Some(BACKLOG),
            ..AuditQuery::default()
        };
        let page = self.op_audit(&query)?;
        Ok(serde_json::to_string(page.get("records").unwrap_or(&Value::Array(Vec::new())))?)
    }

    /// A decision was recorded in the current transaction: keep it for the pages, if any
    /// page is open.
    pub(super) fn feed_decision(&mut self, record: impl FnOnce() -> AuditRecord) {
        if self.dashboard.as_ref().is_some_and(|d| d.feed.watched()) {
            self.feed_pending.push(DecisionView { record: record(), text: None });
        }
    }

    /// How many decisions are waiting for the commit: the ones after this mark are the
    /// current input's.
    pub(super) fn feed_mark(&self) -> usize {
        self.feed_pending.len()
    }

    /// The text of the input that made the decisions after `mark`, shown on pages started
    /// with `--show-text` for the ones the firewall accepted.
    pub(super) fn feed_text(&mut self, mark: usize, text: Option<String>) {
        let Some(text) = text else { return };
        for d in self.feed_pending.iter_mut().skip(mark) {
            if d.record.verdict == "allow" {
                d.text = Some(text.clone());
            }
        }
    }

    /// Whether the text of inputs is worth keeping for the pages.
    pub(super) fn feed_wants_text(&self) -> bool {
        self.dashboard.as_ref().is_some_and(|d| d.feed.watched() && d.feed.show_text())
    }

    /// After a commit: what it decided, published once the commit is durable.
    pub(super) fn feed_committed(&mut self) {
        self.held.feed.append(&mut self.feed_pending);
    }

    /// Publishes what durable commits decided.
    pub(super) fn feed_release(&self, decisions: Vec<DecisionView>) {
        let Some(dashboard) = &self.dashboard else { return };
        for d in decisions {
            dashboard.feed.publish(News::Decision(Arc::new(d)));
        }
    }

    /// After a rollback: nothing of the transaction happened.
    pub(super) fn feed_rolled_back(&mut self) {
        self.feed_pending.clear();
    }

    /// After a request: the team, counters or settings may have changed.
    pub(super) fn feed_changed(&self) {
        if let Some(d) = self.dashboard.as_ref().filter(|d| d.feed.watched()) {
            d.feed.publish(News::Changed);
        }
    }
}
