//! The firewall state machine and the message types it passes around.

use std::path::Path;

use agentfw_bind::names::stage_name;
use agentfw_bind::{config, json, output, trust};
use agentfw_core::firewall::{self as core, Accepted, AdminAction, Firewall as CoreFirewall, Input, Outgoing, State};
use agentfw_core::message::{self, AgentId, MessageId, ThreadId};
use agentfw_core::provenance;
use agentfw_core::time::Timestamp;
use napi::bindgen_prelude::{Buffer, ClassInstance, Either};
use napi_derive::napi;
use rand_chacha::ChaCha20Rng;
use serde_json::Value;

use crate::convert::{at, bytes, ms, rng, to_js};
use crate::errors::{Failure, Result, guard};
use crate::policy::{Policy, Reloadable, rules_of};
use crate::text::Fenced;

/// One agent session: its id (from the identity layer), harness kind, project and machine.
#[napi(object)]
#[derive(Clone, Debug)]
pub struct Agent {
    pub id: String,
    pub kind: String,
    pub project: String,
    pub machine: Option<String>,
}

impl Agent {
    fn core(&self) -> message::Agent {
        message::Agent {
            // An agent on no named machine is on this one, as the core's `Agent::new` has it.
            machine: self.machine.clone().unwrap_or_default(),
            ..message::Agent::new(self.id.clone(), self.kind.clone(), self.project.clone())
        }
    }
}

impl From<&message::Agent> for Agent {
    fn from(a: &message::Agent) -> Self {
        Agent {
            id: a.id.to_string(),
            kind: a.kind.clone(),
            project: a.project.clone(),
            machine: Some(a.machine.clone()),
        }
    }
}

/// `<project> (<kind>)`, e.g. `web (claude)`.
#[napi]
pub fn label(agent: Agent) -> String {
    agent.core().label()
}

/// One agent on a message's path.
#[napi(object)]
#[derive(Clone, Debug)]
pub struct Hop {
    pub agent: String,
    pub label: String,
}

/// Where a message's text came from (PV2).
#[napi(object)]
#[derive(Clone, Debug)]
pub struct Provenance {
    pub origin: Hop,
    pub path: Vec<Hop>,
    pub hops: u32,
    /// `web (claude) -> api (codex)`; informational, not read back.
    pub display_path: Option<String>,
}

/// A message the firewall accepted: keep it in the recipient's inbox (it is plain data,
/// safe to store as JSON) and hand it to `Firewall.deliver` when the recipient reads.
#[napi(object)]
#[derive(Clone, Debug)]
pub struct Message {
    pub id: String,
    pub from: Agent,
    pub to: Agent,
    pub body: String,
    pub thread: String,
    pub thread_turns: u32,
    pub reply_to: Option<String>,
    pub provenance: Provenance,
    pub turn: u32,
    pub sent_at: i64,
}

impl From<&Accepted> for Message {
    fn from(m: &Accepted) -> Self {
        let hop = |h: &message::Hop| Hop { agent: h.agent.to_string(), label: h.label.clone() };
        Message {
            id: m.id.to_string(),
            from: (&m.from).into(),
            to: (&m.to).into(),
            body: m.body.clone(),
            thread: m.thread.to_string(),
            thread_turns: m.thread_turns,
            reply_to: m.reply_to.map(|id| id.to_string()),
            provenance: Provenance {
                origin: hop(&m.provenance.origin),
                path: m.provenance.path.iter().map(hop).collect(),
                hops: m.provenance.hops,
                display_path: Some(m.provenance.display_path()),
            },
            turn: m.turn,
            sent_at: ms(m.sent_at),
        }
    }
}

impl Message {
    fn core(&self) -> std::result::Result<Accepted, Failure> {
        let hop = |h: &Hop| message::Hop { agent: AgentId::new(h.agent.clone()), label: h.label.clone() };
        Ok(Accepted {
            id: self.id.parse()?,
            from: self.from.core(),
            to: self.to.core(),
            body: self.body.clone(),
            thread: self.thread.parse::<ThreadId>()?,
            thread_turns: self.thread_turns,
            reply_to: self.reply_to.as_deref().map(str::parse).transpose()?,
            provenance: provenance::Provenance {
                origin: hop(&self.provenance.origin),
                path: self.provenance.path.iter().map(hop).collect(),
                hops: self.provenance.hops,
            },
            turn: self.turn,
            sent_at: Timestamp::from_millis(u64::try_from(self.sent_at).map_err(|_| {
                Failure::Input(format!("a message's `sentAt` must not be negative, not {}", self.sent_at))
            })?),
        })
    }
}

/// Why a message was refused, held or warned about.
#[napi(object)]
#[derive(Clone, Debug)]
pub struct Reason {
    /// A stable code: `rule`, `containment.quarantined`, `limit.fan_out`, …
    pub code: String,
    pub rule: Option<String>,
    pub text: String,
}

impl From<&core::Reason> for Reason {
    fn from(r: &core::Reason) -> Self {
        Reason { code: r.code.to_string(), rule: r.rule.clone(), text: r.text.clone() }
    }
}

/// A refused message, the reason, and the text to show the sender (PR5, LM6).
#[napi(object)]
#[derive(Clone, Debug)]
pub struct Refusal {
    pub id: String,
    pub stage: String,
    pub reason: Reason,
    pub message: String,
}

agentfw_bind::overlay! { #[napi(object)] [pub] }

/// The firewall's answer to one input. `kind` is `accepted`, `delivered`, `held`,
/// `refused` or `done`; the other fields are set where that kind has them. In
/// `index.d.ts` it is a union discriminated by `kind` (`scripts/typedefs.mjs` writes it).
#[napi(object)]
#[derive(Clone, Debug)]
pub struct Output {
    pub kind: String,
    pub message: Option<Message>,
    pub fenced: Option<Fenced>,
    pub overlay: Option<Overlay>,
    pub warnings: Vec<Reason>,
    pub until: Option<i64>,
    pub reason: Option<Reason>,
    pub refusal: Option<Refusal>,
}

impl From<core::Output> for Output {
    fn from(out: core::Output) -> Self {
        let out = output::flatten(out);
        Output {
            kind: out.kind.to_owned(),
            message: out.message.as_ref().map(Message::from),
            fenced: out.fenced.map(Fenced::from),
            overlay: out.overlay.map(Overlay::from),
            warnings: out.warnings.iter().map(Reason::from).collect(),
            until: out.until.map(ms),
            reason: out.reason.as_ref().map(Reason::from),
            refusal: out.refusal.map(|r| Refusal {
                id: r.id.to_string(),
                stage: stage_name(r.stage).to_owned(),
                reason: (&r.reason).into(),
                message: r.message(),
            }),
        }
    }
}

/// Options of a new or restored firewall: rules (default: the default pack) and a seed
/// for tests (default: randomness from the OS).
#[napi(object)]
pub struct FirewallOptions<'a> {
    pub rules: Option<Either<ClassInstance<'a, Policy>, ClassInstance<'a, Reloadable>>>,
    pub seed: Option<i64>,
}

/// Options of `send`.
#[napi(object)]
pub struct SendOptions {
    /// The id of the message this one answers.
    pub reply_to: Option<String>,
    pub now: Option<i64>,
}

fn rules_option(
    options: &Option<FirewallOptions<'_>>,
) -> std::result::Result<std::sync::Arc<dyn agentfw_core::policy::Rules>, Failure> {
    rules_of(match options.as_ref().and_then(|o| o.rules.as_ref()) {
        None => None,
        Some(Either::A(p)) => Some(Either::A(&**p)),
        Some(Either::B(r)) => Some(Either::B(&**r)),
    })
}

/// An admin action from JavaScript: a text id given as a string (as events give it) is
/// read back as the number the core uses.
fn admin_action(mut action: Value) -> std::result::Result<AdminAction, Failure> {
    if let Some(text) = action.get_mut("text")
        && let Some(n) = text.as_str().and_then(|s| s.parse::<u64>().ok())
    {
        *text = Value::from(n);
    }
    json::input("an admin action", action)
}

/// The firewall state machine. Time defaults to the wall clock (pass `now`, in ms since
/// the epoch, to drive it yourself); randomness comes from the OS unless `seed` is given.
#[napi]
pub struct Firewall {
    inner: CoreFirewall,
    rng: ChaCha20Rng,
}

#[napi]
impl Firewall {
    /// `config` overrides the defaults key by key (the core's `Config` in JSON form, e.g.
    /// `{max_message_bytes: 1024, admission: {mode: 'enforce'}}`).
    #[napi(
        constructor,
        ts_args_type = "config?: JsonObject | undefined | null, options?: FirewallOptions | undefined | null"
    )]
    pub fn new(config: Option<Value>, options: Option<FirewallOptions>) -> Result<Self> {
        guard(|| {
            let mut inner = CoreFirewall::new(config::firewall(config)?);
            inner.set_rules(rules_option(&options)?);
            Ok(Firewall { inner, rng: rng(options.as_ref().and_then(|o| o.seed))? })
        })
    }

    /// A firewall continuing from a snapshot (JSON text or a Buffer). Rules are not state:
    /// pass them again.
    #[napi(factory)]
    pub fn restore(snapshot: Either<String, Buffer>, options: Option<FirewallOptions>) -> Result<Self> {
        guard(|| {
            let state: State = json::restore("a firewall snapshot", &bytes(snapshot))?;
            let mut inner = CoreFirewall::restore(state);
            inner.set_rules(rules_option(&options)?);
            Ok(Firewall { inner, rng: rng(options.as_ref().and_then(|o| o.seed))? })
        })
    }

    /// The whole state, pending events included, as UTF-8 JSON in a Buffer.
    #[napi]
    pub fn snapshot(&self) -> Result<Buffer> {
        guard(|| Ok(json::bytes("the firewall state", &self.inner.snapshot())?.into()))
    }

    /// The whole state as JSON text.
    #[napi]
    pub fn snapshot_json(&self) -> Result<String> {
        guard(|| json::text("the firewall state", &self.inner.snapshot()))
    }

    /// Judge content with these rules from now on (none: the default pack).
    #[napi]
    pub fn set_rules(&mut self, rules: Option<Either<&Policy, &Reloadable>>) -> Result<()> {
        let rules = guard(|| rules_of(rules))?;
        self.inner.set_rules(rules);
        Ok(())
    }

    /// Judge a message `from` wants to send to `to`.
    #[napi]
    pub fn send(
        &mut self,
        from: Agent,
        to: Agent,
        body: Either<String, Buffer>,
        options: Option<SendOptions>,
    ) -> Result<Output> {
        guard(|| {
            let (reply_to, now) = options.map_or((None, None), |o| (o.reply_to, o.now));
            let reply_to = reply_to.as_deref().map(str::parse::<MessageId>).transpose()?;
            let outgoing = match body {
                Either::A(body) => Outgoing { from: from.core(), to: to.core(), body, reply_to },
                Either::B(buffer) => Outgoing::from_bytes(from.core(), to.core(), &buffer, reply_to)?,
            };
            Ok(self.inner.handle(at(now)?, &mut self.rng, Input::Send(outgoing)).into())
        })
    }

    /// Judge an accepted message again as its recipient reads it, and fence it.
    #[napi]
    pub fn deliver(&mut self, message: Message, now: Option<i64>) -> Result<Output> {
        guard(|| {
            let message = message.core()?;
            Ok(self.inner.handle(at(now)?, &mut self.rng, Input::Deliver(message)).into())
        })
    }

    /// A person spoke in this agent's session: its turn fuse resets (LM2).
    #[napi]
    pub fn human_turn(&mut self, agent: String, now: Option<i64>) -> Result<()> {
        guard(|| {
            let _ = self.inner.handle(at(now)?, &mut self.rng, Input::HumanTurn(AgentId::new(agent)));
            Ok(())
        })
    }

    /// Apply this trust file's text from now on (TR1, DL4): a blocked sender, or an unlisted
    /// one when unknown teammates are rejected, is refused on send and on delivery. `null`
    /// unsets it. `name` names the file in errors (default `trust.yaml`). A file with errors
    /// is an error (`trust.invalid`, every diagnostic in its message) and the trust file in
    /// force stays, so a typo never lifts a block.
    #[napi(ts_args_type = "text: string | null, name?: string | undefined | null, now?: number | undefined | null")]
    pub fn set_trust(&mut self, text: Option<String>, name: Option<String>, now: Option<i64>) -> Result<()> {
        guard(|| {
            let input = trust::text(name.as_deref(), text)?;
            let _ = self.inner.handle(at(now)?, &mut self.rng, input);
            Ok(())
        })
    }

    /// Apply the trust file at `path` from now on (see `setTrust`).
    #[napi]
    pub fn set_trust_file(&mut self, path: String, now: Option<i64>) -> Result<()> {
        guard(|| {
            let input = trust::file(Path::new(&path))?;
            let _ = self.inner.handle(at(now)?, &mut self.rng, input);
            Ok(())
        })
    }

    /// An admin action in the core's JSON form, e.g.
    /// `{action: 'lift_quarantine', agent: 'codex:api'}`.
    #[napi(ts_args_type = "action: AdminAction, now?: number | undefined | null")]
    pub fn admin(&mut self, action: Value, now: Option<i64>) -> Result<()> {
        guard(|| {
            let action = admin_action(action)?;
            let _ = self.inner.handle(at(now)?, &mut self.rng, Input::Admin(action));
            Ok(())
        })
    }

    /// Expire what is due (call at `pollTimeout()`).
    #[napi]
    pub fn timeout(&mut self, now: Option<i64>) -> Result<()> {
        guard(|| {
            let _ = self.inner.handle(at(now)?, &mut self.rng, Input::Timeout);
            Ok(())
        })
    }

    /// When `timeout` next has something to expire, in ms since the epoch.
    #[napi]
    pub fn poll_timeout(&self) -> Option<i64> {
        self.inner.poll_timeout().map(ms)
    }

    /// The next event (the core's JSON form, e.g. `{event: 'decision', ...}`), or null.
    #[napi(ts_return_type = "FirewallEvent | null")]
    pub fn poll_event(&mut self) -> Result<Option<Value>> {
        guard(|| self.inner.poll_event().map(|e| to_js("an event", &e)).transpose())
    }

    /// Every pending event, oldest first (drains them).
    #[napi(ts_return_type = "Array<FirewallEvent>")]
    pub fn events(&mut self) -> Result<Vec<Value>> {
        guard(|| std::iter::from_fn(|| self.inner.poll_event()).map(|e| to_js("an event", &e)).collect())
    }

    /// The live quarantine of `agent` (`{until, message, reason}`), or null.
    #[napi(ts_return_type = "Quarantine | null")]
    pub fn quarantine_of(&self, agent: String, now: Option<i64>) -> Result<Option<Value>> {
        guard(|| self.inner.quarantine_of(at(now)?, &AgentId::new(agent)).map(|q| to_js("a quarantine", q)).transpose())
    }

    /// The configuration in force, in the core's JSON form.
    #[napi(getter, ts_return_type = "JsonObject")]
    pub fn config(&self) -> Result<Value> {
        guard(|| to_js("the firewall config", self.inner.config()))
    }
}
