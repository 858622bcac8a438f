//! Policy: what the text of a message may say (PR1–PR8).
//!
//! The firewall asks a [`Rules`] implementation for a verdict on every message twice: when
//! it is sent ([`Stage::Sending`]) and again when it is delivered ([`Stage::Delivering`]).
//! The rule engine plugs in here; the firewall knows nothing of how rules are written.

use serde::{Deserialize, Serialize};

use crate::message::{Agent, MessageId};
use crate::provenance::Provenance;
use crate::time::Timestamp;

/// When a message is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// On the sender's side, before the message is accepted (`message.sending`).
    Sending,
    /// On the recipient's side, before the text reaches the model (`message.delivering`).
    Delivering,
}

impl Stage {
    /// The event name rule files use in `on:`.
    pub fn event(self) -> &'static str {
        match self {
            Stage::Sending => "message.sending",
            Stage::Delivering => "message.delivering",
        }
    }
}

/// Everything a rule may look at (PR3), borrowed from the firewall for one evaluation.
#[derive(Clone, Copy, Debug)]
pub struct MessageView<'a> {
    pub id: MessageId,
    /// The text as delivered: sanitized (DL2) but otherwise as written.
    pub body: &'a str,
    /// The text after normalization (PV1, PV3): what content rules should match, so that
    /// look-alike letters, zero-width characters and odd spacing cannot dodge them.
    pub folded: &'a str,
    pub provenance: &'a Provenance,
    pub from: &'a Agent,
    pub to: &'a Agent,
    /// Size of `body` in bytes.
    pub size: usize,
    pub thread: ThreadView,
    pub now: Timestamp,
}

/// The thread a message belongs to, as rules see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadView {
    pub id: MessageId,
    /// Messages in the thread before this one.
    pub turns: u32,
}

/// A rule set's answer for one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleVerdict {
    /// No rule refused the message.
    Allow,
    /// A rule refused it; `rule` is its id and `reason` the text the sender is shown.
    Deny { rule: String, reason: String },
}

/// A compiled set of rules. Implementations must not panic and must fail closed: a rule
/// that cannot be evaluated is a [`RuleVerdict::Deny`] that says so (PR7).
pub trait Rules: Send + Sync {
    fn judge(&self, stage: Stage, message: &MessageView<'_>) -> RuleVerdict;
}

/// The empty rule set: every message is allowed by content. The other layers
/// (containment, limits, admission) still apply.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRules;

impl Rules for NoRules {
    fn judge(&self, _stage: Stage, _message: &MessageView<'_>) -> RuleVerdict {
        RuleVerdict::Allow
    }
}
