//! The stable codes of the firewall's own reasons ([`crate::firewall::Reason::code`]): why a
//! message was refused, held or warned about, as a type adapters match on rather than a
//! string they compare.
//!
//! Each code's text (`admission.refresh`, `trust.blocked`, …) is its `Display` and serde
//! form, so audit logs, the wire and the bindings see the same strings as before; the part
//! before the dot names the family (`is_admission`). A rule's refusal is the one code
//! `rule`: the rule's id travels beside it ([`crate::firewall::Reason::rule`]), since rules
//! are data, not codes of the firewall.

use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Serialize};

/// Declares [`ReasonCode`] from one table of variant, text and doc, so the enum, its text
/// and the list of every code cannot drift apart.
macro_rules! reason_codes {
    ($($(#[doc = $doc:literal])+ $variant:ident = $text:literal,)+) => {
        /// Why the firewall refused, held or warned about a message. See the module docs.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(into = "&'static str", try_from = "String")]
        pub enum ReasonCode {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl ReasonCode {
            /// Every code, in the order of the table.
            pub const ALL: &'static [ReasonCode] = &[$(ReasonCode::$variant,)+];

            /// The stable text: `rule`, `trust.blocked`, `admission.refresh`, …
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ReasonCode::$variant => $text,)+
                }
            }
        }
    };
}

reason_codes! {
    /// A rule refused the text; its id is in [`crate::firewall::Reason::rule`] (PR5).
    Rule = "rule",
    /// The body is over `max_message_bytes`.
    MessageTooLarge = "message.too_large",
    /// An agent addressed itself.
    MessageToSelf = "message.to_self",
    /// The body has no visible text.
    MessageEmpty = "message.empty",
    /// `reply_to` names no message the sender took part in within the thread window.
    MessageUnknownReply = "message.unknown_reply",
    /// Too many different recipients in the window (LM1).
    LimitFanOut = "limit.fan_out",
    /// Too many turns without a person speaking (LM2).
    LimitTurnFuse = "limit.turn_fuse",
    /// Too many messages in the window (LM3).
    LimitRate = "limit.rate",
    /// The thread has reached its message limit (LM4).
    LimitThreadMessages = "limit.thread_messages",
    /// The thread has reached its age limit (LM4).
    LimitThreadAge = "limit.thread_age",
    /// The sender repeats itself (LM5).
    LoopSelfRepeat = "loop.self_repeat",
    /// Nearly the same message again (LM5).
    LoopNearDuplicate = "loop.near_duplicate",
    /// Two agents acknowledging each other back and forth (LM5).
    LoopAckPingPong = "loop.ack_ping_pong",
    /// Nothing but acknowledgements (LM5).
    LoopAckOnly = "loop.ack_only",
    /// Either end, or a session it runs inside, is quarantined (CT1).
    ContainmentQuarantined = "containment.quarantined",
    /// The text matches text refused earlier (CT2).
    ContainmentRemembered = "containment.remembered",
    /// An admin disconnected the two agents (AM2).
    AdminDisconnected = "admin.disconnected",
    /// The trust file blocks the sender (TR1).
    TrustBlocked = "trust.blocked",
    /// The trust file does not list the sender and rejects unknown teammates (TR1).
    TrustUnknown = "trust.unknown",
    /// The trust file has errors and no earlier version was good (TR1).
    TrustInvalid = "trust.invalid",
    /// An agent's worst component is at or over the threshold (AD2, AD3).
    AdmissionRefused = "admission.refused",
    /// One of an agent's components has no rating (AD5).
    AdmissionUnrated = "admission.unrated",
    /// No inventory lists the agent (AD5).
    AdmissionUnknown = "admission.unknown",
    /// An unknown agent's one refresh is under way: retry (AD5).
    AdmissionRefresh = "admission.refresh",
    /// Report-only admission: enforcement would refuse (AD6).
    AdmissionWouldRefuse = "admission.would_refuse",
}

impl ReasonCode {
    /// An admission code (AD8): the agent's standing with the admission gate decided.
    pub const fn is_admission(self) -> bool {
        matches!(
            self,
            ReasonCode::AdmissionRefused
                | ReasonCode::AdmissionUnrated
                | ReasonCode::AdmissionUnknown
                | ReasonCode::AdmissionRefresh
                | ReasonCode::AdmissionWouldRefuse
        )
    }
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<ReasonCode> for &'static str {
    fn from(code: ReasonCode) -> Self {
        code.as_str()
    }
}

/// A text that is not one of the firewall's reason codes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a reason code of this agentfw (e.g. `rule`, `trust.blocked`, `admission.refresh`)")]
pub struct UnknownCode(pub String);

impl FromStr for ReasonCode {
    type Err = UnknownCode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ReasonCode::ALL.iter().copied().find(|c| c.as_str() == text).ok_or_else(|| UnknownCode(text.to_owned()))
    }
}

impl TryFrom<String> for ReasonCode {
    type Error = UnknownCode;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

/// So tests and tools can write `assert_eq!(reason.code, "trust.blocked")`.
impl PartialEq<&str> for ReasonCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<str> for ReasonCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_from_its_text_and_serializes_as_it() -> Result<(), serde_json::Error> {
        for &code in ReasonCode::ALL {
            assert_eq!(code.as_str().parse::<ReasonCode>(), Ok(code));
            assert_eq!(code.to_string(), code.as_str());
            let json = serde_json::to_string(&code)?;
            assert_eq!(json, format!("\"{code}\""));
            assert_eq!(serde_json::from_str::<ReasonCode>(&json)?, code);
            assert_eq!(serde_json::from_value::<ReasonCode>(serde_json::Value::from(code.as_str()))?, code);
        }
        let texts: std::collections::BTreeSet<_> = ReasonCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(texts.len(), ReasonCode::ALL.len(), "two codes share a text");
        Ok(())
    }

    #[test]
    fn an_unknown_text_is_an_error_naming_it() {
        let err = "trust.blockd".parse::<ReasonCode>().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("`trust.blockd`"), "{err}");
        assert!(serde_json::from_str::<ReasonCode>("\"admission\"").is_err());
    }

    #[test]
    fn the_admission_family_is_exactly_the_admission_codes() {
        for &code in ReasonCode::ALL {
            assert_eq!(code.is_admission(), code.as_str().starts_with("admission."), "{code}");
        }
    }
}
