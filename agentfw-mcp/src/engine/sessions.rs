//! Agent sessions: registered on first sight from the caller's identity, kept in `sessions`,
//! found by id, label or project; their components listed and rated for admission (AD1, AD5).

use std::path::{Path, PathBuf};

use agentfw_core::admission::{Component, ComponentId};
use agentfw_core::firewall::{AdminAction, Input};
use agentfw_core::identity::Identity;
use agentfw_core::message::{Agent, AgentId};
use agentfw_core::time::Timestamp;

use super::waking::WakeState;
use super::{Caller, Engine, EngineError, one_line, reply};
use crate::components;
use crate::procfs;
use crate::proto::code;
use crate::store::StoreError;

#[derive(Debug)]
pub(super) struct Session {
    pub(super) identity: Identity,
    /// Fixed when the session is first seen (see [`Session::agent`]).
    agent: Agent,
    /// `agent`'s label, built once: finding a recipient by label compares it with every
    /// session's, at each send.
    label: String,
    pub(super) thread_id: Option<String>,
    pub(super) project_dir: Option<String>,
    pub(super) home: Option<String>,
    pub(super) codex_home: Option<String>,
    pub(super) claude_wake: Option<(PathBuf, String)>,
    pub(super) components: Option<Vec<ComponentId>>,
    pub(super) components_error: Option<String>,
    pub(super) last_seen: Timestamp,
    pub(super) wake: WakeState,
    /// The last inbox batch that delivered something: its text is erased when the next
    /// batch is asked for. `None` after a restart until the first read, which then clears
    /// every older batch.
    pub(super) last_batch: Option<String>,
    pub(super) cleared: bool,
}

impl Session {
    fn new(identity: Identity, last_seen: Timestamp) -> Self {
        let agent = identity.to_agent();
        Self {
            label: agent.label(),
            agent,
            identity,
            thread_id: None,
            project_dir: None,
            home: None,
            codex_home: None,
            claude_wake: None,
            components: None,
            components_error: None,
            last_seen,
            wake: WakeState::default(),
            last_batch: None,
            cleared: false,
        }
    }

    /// The agent this session is. It never changes (a hook that refines the identity
    /// refines its harness session, not the agent), which is what keeps [`Session::label`]
    /// true.
    pub(super) fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The agent's label, as [`Agent::label`] builds it.
    pub(super) fn label(&self) -> &str {
        &self.label
    }
}

impl Engine {
    /// The sessions kept in the database. The firewall is told this machine's name when
    /// it is new to it (a fresh home, a state saved before machine names, a machine joined
    /// under another name; [`Input::Machine`]), so this machine's agents have the keys every
    /// other machine gives them. Then it is told the agent of each session it does not
    /// know (a state saved before agent keys, or one it has forgotten), so a quarantine or
    /// counts kept under a session id hold every process of its agent.
    pub(super) fn load_sessions(&mut self, now: Timestamp) -> Result<(), StoreError> {
        for stored in self.db.sessions()? {
            let mut session = Session::new(stored.identity, stored.last_seen);
            session.thread_id = stored.thread_id;
            self.sessions.insert(session.agent.id.clone(), session);
        }
        let unknown: Vec<Agent> = self
            .sessions
            .values()
            .filter(|s| self.fw.agents().key_of(&s.agent().id).is_none())
            .map(|s| s.agent().clone())
            .collect();
        let machine = self.config.relay.machine();
        let renamed = (self.fw.config().machine != machine).then_some(Input::Machine(machine));
        if unknown.is_empty() && renamed.is_none() {
            return Ok(());
        }
        self.tx(now, |e| {
            for input in renamed.into_iter().chain(unknown.into_iter().map(Input::Seen)) {
                e.apply(now, input)?;
            }
            Ok(())
        })
        .map_err(|e| match e {
            EngineError::Store(e) => e,
            EngineError::Reply(body) => StoreError::Corrupt(body.message),
        })
    }

    /// The caller's session, registered on first sight.
    pub(super) fn session_for(&mut self, now: Timestamp, caller: &Caller) -> Result<AgentId, EngineError> {
        let identity = caller
            .identity
            .as_ref()
            .map_err(|why| reply(code::NOT_AGENT, format!("agentfw cannot tell which agent session this is: {why}")))?;
        let id = identity.agent_id();
        let claude_wake =
            match (caller.env.get("CLAUDE_CODE_MESSAGING_SOCKET"), caller.env.get("CLAUDE_CODE_MESSAGING_TOKEN")) {
                (Some(socket), Some(token)) if socket.starts_with('/') && !token.is_empty() => {
                    Some((PathBuf::from(socket), token.clone()))
                }
                _ => None,
            };
        if !self.sessions.contains_key(&id) {
            self.db.register_session(now, &id, identity)?;
            self.sessions.insert(id.clone(), Session::new(identity.clone(), now));
        }
        let Some(s) = self.sessions.get_mut(&id) else {
            return Err(reply(code::INTERNAL, "session vanished"));
        };
        s.last_seen = now;
        if caller.project_dir.is_some() {
            s.project_dir.clone_from(&caller.project_dir);
        }
        if let Some(home) = caller.env.get("HOME") {
            s.home = Some(home.clone());
        }
        if let Some(codex_home) = caller.env.get("CODEX_HOME") {
            s.codex_home = Some(codex_home.clone());
        }
        if claude_wake.is_some() {
            s.claude_wake = claude_wake;
        }
        if s.components.is_none() && s.components_error.is_none() {
            // Components are listed once per session (and again on an admission refresh),
            // so `team` shows "would refuse" before the first message.
            let agent = s.agent().clone();
            self.tx(now, |e| e.refresh_admission(now, &agent))?;
        }
        Ok(id)
    }

    /// List `agent`'s components from its harness files, rate them, and give them to the
    /// firewall (AD1, AD5). Runs inside a transaction.
    fn refresh_admission(&mut self, now: Timestamp, agent: &Agent) -> Result<(), EngineError> {
        let Some(s) = self.sessions.get_mut(&agent.id) else { return Ok(()) };
        let home = s.home.as_deref().map(Path::new);
        let codex_home = s.codex_home.as_deref().map(Path::new);
        let project = s.project_dir.as_deref().or(s.identity.cwd.as_deref()).map(Path::new);
        let at = components::Where { kind: &s.identity.agent, home, codex_home, project };
        match components::collect(&at) {
            Ok(list) => {
                s.components = Some(list.clone());
                s.components_error = None;
                self.relay_components(agent, &list);
            }
            Err(e) => {
                eprintln!("agentfw daemon: cannot list the components of {}: {e}", s.label());
                s.components = None;
                s.components_error = Some(e);
                return Ok(());
            }
        }
        self.rate(now, &agent.id)
    }

    /// Give the firewall `agent`'s components with today's ratings.
    pub(super) fn rate(&mut self, now: Timestamp, agent: &AgentId) -> Result<(), EngineError> {
        let Some(list) = self.sessions.get(agent).and_then(|s| s.components.clone()) else { return Ok(()) };
        let components: Vec<Component> = list
            .into_iter()
            .map(|id| {
                let score = self.ratings.get(&id).copied().flatten();
                Component { id, score }
            })
            .collect();
        let action = AdminAction::SetComponents { agent: agent.as_str().to_owned(), components };
        self.apply(now, Input::Admin(action))?;
        Ok(())
    }

    /// Refresh the agents the firewall asked about (AD5).
    pub(super) fn run_refreshes(&mut self, now: Timestamp) -> Result<bool, EngineError> {
        let agents = std::mem::take(&mut self.refreshes);
        let any = !agents.is_empty();
        for agent in agents {
            self.refresh_admission(now, &agent)?;
        }
        Ok(any)
    }

    pub(super) fn alive(&self, s: &Session) -> bool {
        procfs::alive(s.identity.pid, s.identity.started_at, &self.clock)
    }

    /// The session `to` names: an agent id, a label, or a project name; live ones first.
    pub(super) fn find(&self, to: &str, live_only: bool) -> Result<AgentId, EngineError> {
        let to = to.trim();
        let id = AgentId::new(to);
        if let Some(s) = self.sessions.get(&id) {
            if live_only && !self.alive(s) {
                return Err(gone(s));
            }
            return Ok(id);
        }
        let by_label: Vec<&Session> = self.sessions.values().filter(|s| s.label().eq_ignore_ascii_case(to)).collect();
        let candidates = if by_label.is_empty() && !to.contains('(') {
            self.sessions.values().filter(|s| s.agent().project.eq_ignore_ascii_case(to)).collect()
        } else {
            by_label
        };
        if candidates.is_empty() {
            if let Some(remote) = self.find_remote(to)? {
                return Ok(remote);
            }
            return Err(reply(
                code::UNKNOWN_RECIPIENT,
                format!(
                    "there is no agent `{}` on this machine; call list_team (or run `agentfw team`) to see who is reachable, and use a label such as `api (codex)` or an agent id",
                    one_line(to)
                ),
            ));
        }
        let live: Vec<&&Session> = candidates.iter().filter(|s| self.alive(s)).collect();
        match (live.as_slice(), live_only) {
            ([one], _) => Ok(one.agent().id.clone()),
            ([], true) => Err(candidates.first().map_or_else(|| reply(code::GONE_RECIPIENT, "gone"), |s| gone(s))),
            ([], false) => Ok(candidates.first().map(|s| s.agent().id.clone()).unwrap_or(id)),
            (many, _) => {
                let ids: Vec<String> = many.iter().map(|s| s.agent().id.to_string()).collect();
                Err(reply(
                    code::AMBIGUOUS_RECIPIENT,
                    format!(
                        "`{}` names {} live sessions: {}; use one of these agent ids",
                        one_line(to),
                        many.len(),
                        ids.join(", ")
                    ),
                ))
            }
        }
    }

    /// The label of agent `id`: a session of this machine's, one on another device (from the
    /// relay's directory), else its id, cleaned (ID7).
    pub(super) fn label(&self, id: &AgentId) -> String {
        if let Some(s) = self.sessions.get(id) {
            return s.label().to_owned();
        }
        match self.remote_agent(id) {
            Some(agent) => agent.label(),
            None => agentfw_core::label::bounded(id.as_str(), agentfw_core::label::MAX_LABEL_CHARS),
        }
    }
}

fn gone(s: &Session) -> EngineError {
    reply(
        code::GONE_RECIPIENT,
        format!(
            "{} ({}) is gone: its session has ended, so nothing can be delivered to it; call list_team to see who is reachable, or ask your user",
            s.label(),
            s.agent().id
        ),
    )
}
