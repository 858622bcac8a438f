//! `agentfw.firewall`: the state machine (send, deliver, human turn, admin, timeouts,
//! events, snapshots) and the message types it passes around.

use std::path::PathBuf;

use agentfw_bind::host::{at, rng};
use agentfw_bind::names::stage_name;
use agentfw_bind::{config, json, output, trust};
use agentfw_core::firewall::{
    self as core, Accepted, AdminAction, Firewall as CoreFirewall, Input, Outgoing, Output as CoreOutput, State,
};
use agentfw_core::message::{self, AgentId, MessageId};
use agentfw_core::provenance;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rand_chacha::ChaCha20Rng;

use crate::convert::{Data, from_py, to_py_data};
use crate::errors::{Failure, exception, guard};
use crate::policy::rules_of;
use crate::text::Fenced;

/// One agent session: its id (from the identity layer), harness kind, project and machine.
#[pyclass(frozen, eq, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agent {
    id: String,
    kind: String,
    project: String,
    machine: String,
}

#[pymethods]
impl Agent {
    #[new]
    #[pyo3(signature = (id, kind, project, machine = String::new()))]
    fn new(id: String, kind: String, project: String, machine: String) -> Self {
        Agent { id, kind, project, machine }
    }

    /// `<project> (<kind>)`, e.g. `web (claude)`.
    #[getter]
    fn label(&self) -> String {
        self.core().label()
    }

    fn __repr__(&self) -> String {
        format!("Agent(id={:?}, kind={:?}, project={:?}, machine={:?})", self.id, self.kind, self.project, self.machine)
    }
}

impl Agent {
    fn core(&self) -> message::Agent {
        message::Agent {
            machine: self.machine.clone(),
            ..message::Agent::new(self.id.clone(), self.kind.clone(), self.project.clone())
        }
    }
}

impl From<&message::Agent> for Agent {
    fn from(a: &message::Agent) -> Self {
        Agent { id: a.id.to_string(), kind: a.kind.clone(), project: a.project.clone(), machine: a.machine.clone() }
    }
}

/// One agent on a message's path.
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Hop {
    agent: String,
    label: String,
}

/// Where a message's text came from (PV2).
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Provenance {
    origin: Hop,
    path: Vec<Hop>,
    hops: u32,
    /// `web (claude) -> api (codex)`.
    display_path: String,
}

impl From<&provenance::Provenance> for Provenance {
    fn from(p: &provenance::Provenance) -> Self {
        let hop = |h: &message::Hop| Hop { agent: h.agent.to_string(), label: h.label.clone() };
        Provenance {
            origin: hop(&p.origin),
            path: p.path.iter().map(hop).collect(),
            hops: p.hops,
            display_path: p.display_path(),
        }
    }
}

/// A message the firewall accepted: keep it in the recipient's inbox (durably, e.g. as
/// `to_json()`) and hand it to `Firewall.deliver` when the recipient reads.
#[pyclass(frozen, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Message {
    inner: Accepted,
}

#[pymethods]
impl Message {
    #[getter]
    fn id(&self) -> String {
        self.inner.id.to_string()
    }
    #[getter]
    fn sender(&self) -> Agent {
        (&self.inner.from).into()
    }
    #[getter]
    fn to(&self) -> Agent {
        (&self.inner.to).into()
    }
    /// The sanitized body.
    #[getter]
    fn body(&self) -> String {
        self.inner.body.clone()
    }
    #[getter]
    fn thread(&self) -> String {
        self.inner.thread.to_string()
    }
    #[getter]
    fn thread_turns(&self) -> u32 {
        self.inner.thread_turns
    }
    #[getter]
    fn reply_to(&self) -> Option<String> {
        self.inner.reply_to.map(|id| id.to_string())
    }
    #[getter]
    fn provenance(&self) -> Provenance {
        (&self.inner.provenance).into()
    }
    #[getter]
    fn turn(&self) -> u32 {
        self.inner.turn
    }
    #[getter]
    fn sent_at(&self) -> u64 {
        self.inner.sent_at.as_millis()
    }

    /// The message as JSON (the core's serde form), to store in an inbox.
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        guard(py, || json::text("a message", &self.inner))
    }

    #[staticmethod]
    fn from_json(py: Python<'_>, data: Data) -> PyResult<Self> {
        guard(py, || {
            serde_json::from_slice(&data.into_bytes())
                .map(|inner| Message { inner })
                .map_err(|e| Failure::Input(format!("not a stored message: {e}")))
        })
    }

    fn __repr__(&self) -> String {
        format!("Message(id={:?}, from={:?}, to={:?})", self.id(), self.inner.from.label(), self.inner.to.label())
    }
}

/// Why a message was refused, held or warned about.
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Reason {
    /// A stable code: `rule`, `containment.quarantined`, `limit.fan_out`, …
    code: String,
    rule: Option<String>,
    text: String,
}

impl From<&core::Reason> for Reason {
    fn from(r: &core::Reason) -> Self {
        Reason { code: r.code.to_string(), rule: r.rule.clone(), text: r.text.clone() }
    }
}

/// A refused message, the reason, and the text to show the sender (PR5, LM6).
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Refusal {
    id: String,
    stage: &'static str,
    reason: Reason,
    message: String,
}

agentfw_bind::overlay! { #[pyclass(frozen, get_all, module = "agentfw._agentfw")] [] }

/// The firewall's answer to one input. `kind` is `accepted`, `delivered`, `held`,
/// `refused` or `done`; the other fields are set where that kind has them.
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Output {
    kind: &'static str,
    message: Option<Message>,
    fenced: Option<Fenced>,
    overlay: Option<Overlay>,
    warnings: Vec<Reason>,
    until: Option<u64>,
    reason: Option<Reason>,
    refusal: Option<Refusal>,
}

#[pymethods]
impl Output {
    fn __repr__(&self) -> String {
        match (&self.reason, &self.message) {
            (Some(r), _) => format!("Output(kind={:?}, reason={:?})", self.kind, r.text),
            (None, Some(m)) => format!("Output(kind={:?}, id={:?})", self.kind, m.id()),
            _ => format!("Output(kind={:?})", self.kind),
        }
    }
}

impl From<CoreOutput> for Output {
    fn from(out: CoreOutput) -> Self {
        let out = output::flatten(out);
        Output {
            kind: out.kind,
            message: out.message.map(|inner| Message { inner }),
            fenced: out.fenced.map(Fenced::from),
            overlay: out.overlay.map(Overlay::from),
            warnings: out.warnings.iter().map(Reason::from).collect(),
            until: out.until.map(|t| t.as_millis()),
            reason: out.reason.as_ref().map(Reason::from),
            refusal: out.refusal.map(|r| Refusal {
                id: r.id.to_string(),
                stage: stage_name(r.stage),
                reason: (&r.reason).into(),
                message: r.message(),
            }),
        }
    }
}

/// The firewall state machine. Time defaults to the wall clock (pass `now`, in ms since
/// the epoch, to drive it yourself); randomness comes from the OS unless `seed` is given.
#[pyclass(module = "agentfw._agentfw")]
#[derive(Debug)]
pub struct Firewall {
    inner: CoreFirewall,
    rng: ChaCha20Rng,
}

fn message_id(text: Option<&str>) -> Result<Option<MessageId>, Failure> {
    text.map(|t| t.parse::<MessageId>()).transpose().map_err(Failure::from)
}

#[pymethods]
impl Firewall {
    /// `config` overrides the defaults key by key (the core's `Config` in JSON form, e.g.
    /// `{"max_message_bytes": 1024, "admission": {"mode": "enforce"}}`).
    #[new]
    #[pyo3(signature = (config = None, *, rules = None, seed = None))]
    fn new(
        py: Python<'_>,
        config: Option<&Bound<'_, PyAny>>,
        rules: Option<&Bound<'_, PyAny>>,
        seed: Option<u64>,
    ) -> PyResult<Self> {
        guard(py, || {
            let overrides = config.filter(|c| !c.is_none()).map(from_py).transpose()?;
            let mut inner = CoreFirewall::new(config::firewall(overrides)?);
            inner.set_rules(rules_of(rules)?);
            Ok(Firewall { inner, rng: rng(seed)? })
        })
    }

    /// A firewall continuing from a snapshot (JSON text or bytes). Rules are not state:
    /// pass them again.
    #[staticmethod]
    #[pyo3(signature = (snapshot, *, rules = None, seed = None))]
    fn restore(py: Python<'_>, snapshot: Data, rules: Option<&Bound<'_, PyAny>>, seed: Option<u64>) -> PyResult<Self> {
        guard(py, || {
            let state: State = json::restore("a firewall snapshot", &snapshot.into_bytes())?;
            let mut inner = CoreFirewall::restore(state);
            inner.set_rules(rules_of(rules)?);
            Ok(Firewall { inner, rng: rng(seed)? })
        })
    }

    /// The whole state, pending events included, as UTF-8 JSON bytes.
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &guard(py, || json::bytes("the firewall state", &self.inner.snapshot()))?))
    }

    /// The whole state as JSON text.
    fn snapshot_json(&self, py: Python<'_>) -> PyResult<String> {
        guard(py, || json::text("the firewall state", &self.inner.snapshot()))
    }

    /// Judge content with these rules from now on (`None`: the default pack).
    #[pyo3(signature = (rules = None))]
    fn set_rules(&mut self, py: Python<'_>, rules: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let rules = rules_of(rules).map_err(|f| exception(py, f))?;
        self.inner.set_rules(rules);
        Ok(())
    }

    /// Judge a message `sender` wants to send to `to`.
    #[pyo3(signature = (sender, to, body, *, reply_to = None, now = None))]
    fn send(
        &mut self,
        py: Python<'_>,
        sender: &Agent,
        to: &Agent,
        body: Data,
        reply_to: Option<&str>,
        now: Option<u64>,
    ) -> PyResult<Output> {
        guard(py, || {
            let reply_to = message_id(reply_to)?;
            let outgoing = match body {
                Data::Text(body) => Outgoing { from: sender.core(), to: to.core(), body, reply_to },
                Data::Bytes(bytes) => Outgoing::from_bytes(sender.core(), to.core(), &bytes, reply_to)?,
            };
            Ok(self.inner.handle(at(now), &mut self.rng, Input::Send(outgoing)).into())
        })
    }

    /// Judge an accepted message again as its recipient reads it, and fence it.
    #[pyo3(signature = (message, *, now = None))]
    fn deliver(&mut self, py: Python<'_>, message: &Message, now: Option<u64>) -> PyResult<Output> {
        guard(py, || Ok(self.inner.handle(at(now), &mut self.rng, Input::Deliver(message.inner.clone())).into()))
    }

    /// A person spoke in this agent's session: its turn fuse resets (LM2).
    #[pyo3(signature = (agent, *, now = None))]
    fn human_turn(&mut self, py: Python<'_>, agent: &str, now: Option<u64>) -> PyResult<()> {
        guard(py, || {
            let _ = self.inner.handle(at(now), &mut self.rng, Input::HumanTurn(AgentId::new(agent)));
            Ok(())
        })
    }

    /// Apply this trust file's text from now on (TR1, DL4): a blocked sender, or an unlisted
    /// one when unknown teammates are rejected, is refused on send and on delivery. `None`
    /// unsets it. `name` names the file in errors (default `trust.yaml`). A file with errors
    /// is an error (`trust.invalid`, every diagnostic in its message) and the trust file in
    /// force stays, so a typo never lifts a block.
    #[pyo3(signature = (text, *, name = None, now = None))]
    fn set_trust(
        &mut self,
        py: Python<'_>,
        text: Option<String>,
        name: Option<String>,
        now: Option<u64>,
    ) -> PyResult<()> {
        guard(py, || {
            let input = trust::text(name.as_deref(), text)?;
            let _ = self.inner.handle(at(now), &mut self.rng, input);
            Ok(())
        })
    }

    /// Apply the trust file at `path` from now on (see `set_trust`).
    #[pyo3(signature = (path, *, now = None))]
    fn set_trust_file(&mut self, py: Python<'_>, path: PathBuf, now: Option<u64>) -> PyResult<()> {
        guard(py, || {
            let input = trust::file(&path)?;
            let _ = self.inner.handle(at(now), &mut self.rng, input);
            Ok(())
        })
    }

    /// An admin action in the core's JSON form, e.g.
    /// `{"action": "lift_quarantine", "agent": "codex:api"}`.
    #[pyo3(signature = (action, *, now = None))]
    fn admin(&mut self, py: Python<'_>, action: &Bound<'_, PyAny>, now: Option<u64>) -> PyResult<()> {
        guard(py, || {
            let action: AdminAction = json::input("an admin action", from_py(action)?)?;
            let _ = self.inner.handle(at(now), &mut self.rng, Input::Admin(action));
            Ok(())
        })
    }

    /// Expire what is due (call at `poll_timeout()`).
    #[pyo3(signature = (*, now = None))]
    fn timeout(&mut self, py: Python<'_>, now: Option<u64>) -> PyResult<()> {
        guard(py, || {
            let _ = self.inner.handle(at(now), &mut self.rng, Input::Timeout);
            Ok(())
        })
    }

    /// When `timeout` next has something to expire, in ms since the epoch.
    fn poll_timeout(&self) -> Option<u64> {
        self.inner.poll_timeout().map(|t| t.as_millis())
    }

    /// The next event (the core's JSON form, e.g. `{"event": "decision", ...}`), or None.
    fn poll_event<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner.poll_event().map(|e| to_py_data(py, "an event", &e)).transpose()
    }

    /// Every pending event, oldest first (drains them).
    fn events<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let mut out = Vec::new();
        while let Some(e) = self.inner.poll_event() {
            out.push(to_py_data(py, "an event", &e)?);
        }
        Ok(out)
    }

    /// The live quarantine of `agent` (`{"until", "message", "reason"}`), or None.
    #[pyo3(signature = (agent, *, now = None))]
    fn quarantine_of<'py>(
        &self,
        py: Python<'py>,
        agent: &str,
        now: Option<u64>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner.quarantine_of(at(now), &AgentId::new(agent)).map(|q| to_py_data(py, "a quarantine", q)).transpose()
    }

    /// The configuration in force, in the core's JSON form.
    #[getter]
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py_data(py, "the firewall config", self.inner.config())
    }
}
