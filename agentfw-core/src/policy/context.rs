//! What a rule sees: the PR3 fields of one message, resolved on demand.
//!
//! Rules read `message.body`, `message.hops`, `message.from.label`, … The evaluation
//! context answers each name only when a rule asks for it, straight from the firewall's
//! [`MessageView`] and mostly without copying (the body is borrowed), so a field no loaded
//! rule references is never built: unused fields cost nothing.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cel::Value;
use cel::common::types::{CelDouble, CelInt, CelString, Type};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::context::VariableResolver;

use crate::message::Agent;

use super::MessageView;
use super::patterns::Hits;
use super::plain::without_asides;
use super::rot13::rot13;
use super::views::View;

/// The fields a rule can read, as (name, what it is). The validator checks rules against
/// this table at load, so a typo is an error before the first message, not at it.
pub(crate) const MESSAGE_FIELDS: &[(&str, &str)] = &[
    ("id", "the message id (a ULID string)"),
    ("body", "the text as delivered: control and invisible characters removed"),
    (
        "folded",
        "the text normalized for matching: NFKC, lowercase, look-alike letters folded, whitespace runs collapsed",
    ),
    ("hops", "1 for text its sender wrote, 2 once a recipient passes it on, …"),
    ("origin", "the label of the agent that first wrote the text, e.g. `web (claude)`"),
    ("path", "the labels of every agent the text passed through, ending with the recipient"),
    ("size", "size of the body in bytes"),
    ("from", "the sending agent"),
    ("to", "the receiving agent"),
    ("thread", "the thread the message belongs to"),
    ("signals", "numbers computed from the text: `injection`, 0 to 1, how much it reads like a prompt injection"),
];

pub(crate) const AGENT_FIELDS: &[&str] = &["id", "agent", "project", "machine", "label"];
pub(crate) const THREAD_FIELDS: &[&str] = &["id", "turns"];
pub(crate) const SIGNAL_FIELDS: &[&str] = &["injection"];

/// Resolves `message.*` and `now` for one evaluation.
pub(crate) struct MessageScope<'m> {
    pub view: &'m MessageView<'m>,
    pub memo: Memo,
}

impl<'m> MessageScope<'m> {
    pub(crate) fn new(view: &'m MessageView<'m>) -> Self {
        Self { view, memo: Memo::new(view) }
    }
}

/// What the pattern-set scans and signals of one evaluation found, so that rules testing
/// different sets on the same text share one scan of it, and rules reading a signal share
/// one computation of it. Rules reach it through the variable `@memo`, which no rule can
/// spell.
#[derive(Clone, Debug)]
pub(crate) struct Memo {
    /// Address and length of the body and of the folded text: how a scan knows which one
    /// it was handed.
    texts: [(usize, usize); 2],
    hits: [OnceLock<Hits>; 2],
    /// `message.signals.injection`, or `None` if the shipped model cannot be read (the
    /// rule reading it then fails, and so refuses).
    injection: OnceLock<Option<f64>>,
}

impl Memo {
    fn new(view: &MessageView<'_>) -> Self {
        let at = |s: &str| (s.as_ptr() as usize, s.len());
        Self {
            texts: [at(view.body), at(view.folded)],
            hits: [OnceLock::new(), OnceLock::new()],
            injection: OnceLock::new(),
        }
    }

    fn injection(&self, body: &str) -> Option<f64> {
        *self.injection.get_or_init(|| injection(body))
    }

    /// Which text `text` is: 0 for the body, 1 for the folded text.
    pub(crate) fn subject(&self, text: &str) -> Option<usize> {
        let at = (text.as_ptr() as usize, text.len());
        self.texts.iter().position(|t| *t == at)
    }

    pub(crate) fn hits(&self, subject: usize, scan: impl FnOnce() -> Hits) -> Option<&Hits> {
        Some(self.hits.get(subject)?.get_or_init(scan))
    }
}

/// `message.signals.injection`: the highest score of the text as sent and of the views of
/// it a reader, or the next agent, reads at no cost: markup looked past and words read as
/// words ([`View::Plain`]), encoded stretches decoded ([`View::Decoded`]), and rot13 when
/// the text names it ([`rot13`]), and the text with its asides looked past ([`asides`]).
/// Each view is built once, only when it differs from the text, so text with nothing to
/// look past is scored once; the worst costs five scores.
fn injection(body: &str) -> Option<f64> {
    let model = crate::signals::injection_model().ok()?;
    let views = [View::Plain.of(body), View::Decoded.of(body), rot13(body), without_asides(body)];
    let seen = core::iter::once(body).chain(views.iter().flatten().map(String::as_str));
    Some(seen.map(|text| model.score(text)).fold(0.0, f64::max))
}

impl Val for Memo {
    fn get_type(&self) -> &Type {
        <Self as Val>::cel_type()
    }

    fn cel_type() -> &'static Type {
        &MEMO_TYPE
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for Memo {}

static MEMO_TYPE: Type = Type::new_unspecified_type("agentfw.memo");

fn string<'b>(s: impl Into<String>) -> CowVal<'b, 'b> {
    CowVal::owned(CelString::from(s.into()))
}

fn borrowed<'b>(s: &'b str) -> CowVal<'b, 'b> {
    CowVal::owned(CelString::from(s))
}

fn int<'b>(n: impl Into<i64>) -> CowVal<'b, 'b> {
    CowVal::owned(CelInt::from(n.into()))
}

fn value<'b>(v: Value) -> Option<CowVal<'b, 'b>> {
    let boxed: Box<dyn Val> = v.try_into().ok()?;
    Some(CowVal::Owned(boxed))
}

fn agent_field(agent: &Agent, field: &str) -> Option<Value> {
    Some(match field {
        "id" => Value::from(agent.id.as_str().to_owned()),
        "agent" => Value::from(agent.kind.clone()),
        "project" => Value::from(agent.project.clone()),
        "machine" => Value::from(agent.machine.clone()),
        "label" => Value::from(agent.label()),
        _ => return None,
    })
}

fn agent_map(agent: &Agent) -> Value {
    let map: HashMap<String, Value> =
        AGENT_FIELDS.iter().filter_map(|f| Some(((*f).to_owned(), agent_field(agent, f)?))).collect();
    Value::from(map)
}

impl MessageScope<'_> {
    fn signals(&self) -> Option<Value> {
        let injection = self.memo.injection(self.view.body)?;
        Some(Value::from(HashMap::from([("injection".to_owned(), Value::Float(injection))])))
    }

    fn thread(&self) -> Value {
        let map: HashMap<String, Value> = HashMap::from([
            ("id".to_owned(), Value::from(self.view.thread.id.to_string())),
            ("turns".to_owned(), Value::from(i64::from(self.view.thread.turns))),
        ]);
        Value::from(map)
    }

    fn path(&self) -> Value {
        let labels: Vec<Value> = self.view.provenance.path.iter().map(|h| Value::from(h.label.clone())).collect();
        Value::List(Arc::new(labels))
    }

    fn field(&self, name: &str) -> Option<Value> {
        let v = self.view;
        Some(match name {
            "id" => Value::from(v.id.to_string()),
            "body" => Value::from(v.body.to_owned()),
            "folded" => Value::from(v.folded.to_owned()),
            "hops" => Value::from(i64::from(v.provenance.hops)),
            "origin" => Value::from(v.provenance.origin.label.clone()),
            "path" => self.path(),
            "size" => Value::from(i64::try_from(v.size).unwrap_or(i64::MAX)),
            "from" => agent_map(v.from),
            "to" => agent_map(v.to),
            "thread" => self.thread(),
            "signals" => self.signals()?,
            _ => return None,
        })
    }

    fn now(&self) -> Option<Value> {
        let ms = i64::try_from(self.view.now.as_millis()).ok()?;
        let t = chrono::DateTime::from_timestamp_millis(ms)?;
        Some(Value::Timestamp(t.fixed_offset()))
    }
}

impl VariableResolver for MessageScope<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        let v = self.view;
        // The hot paths first, without building a `Value`.
        match variable {
            "message.body" => return Some(borrowed(v.body)),
            "message.folded" => return Some(borrowed(v.folded)),
            "message.hops" => return Some(int(v.provenance.hops)),
            "message.size" => return Some(int(i64::try_from(v.size).unwrap_or(i64::MAX))),
            "message.origin" => return Some(borrowed(&v.provenance.origin.label)),
            "message.thread.turns" => return Some(int(v.thread.turns)),
            "message.thread.id" => return Some(string(v.thread.id.to_string())),
            "message.signals.injection" => return Some(CowVal::owned(CelDouble::from(self.memo.injection(v.body)?))),
            "now" => return value(self.now()?),
            "@memo" => return Some(CowVal::Borrowed(&self.memo)),
            "message" => {
                let map: HashMap<String, Value> =
                    MESSAGE_FIELDS.iter().filter_map(|(f, _)| Some(((*f).to_owned(), self.field(f)?))).collect();
                return value(Value::from(map));
            }
            _ => {}
        }
        let rest = variable.strip_prefix("message.")?;
        match rest.split_once('.') {
            None => value(self.field(rest)?),
            Some(("from", f)) => value(agent_field(v.from, f)?),
            Some(("to", f)) => value(agent_field(v.to, f)?),
            Some(_) => None,
        }
    }
}
