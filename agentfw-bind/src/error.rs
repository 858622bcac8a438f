//! One error for every binding call, with the core's stable code, and the panic guard.

use agentfw_core::admission::AdmissionError;
use agentfw_core::firewall::MessageError;
use agentfw_core::handoff::HandoffError;
use agentfw_core::message::IdError;
use agentfw_core::policy::PolicyError;
use agentfw_core::seal::{KeyError, OpenError, SealError};
use agentfw_core::trust::TrustError;

use crate::load::ReadError;

/// Everything that can go wrong in a binding call. [`Failure::code`] is stable: the
/// bindings expose it as `err.code` (Node) and `exc.code` (Python).
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(transparent)]
    Seal(#[from] SealError),
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Handoff(#[from] HandoffError),
    #[error(transparent)]
    Admission(#[from] AdmissionError),
    #[error(transparent)]
    Id(#[from] IdError),
    #[error(transparent)]
    Message(#[from] MessageError),
    /// A trust file with errors (its diagnostics are in the message).
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// A rule file or folder that could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// An argument the binding could not turn into a core value (`on: 'sideways'`, a
    /// malformed config object).
    #[error("{0}")]
    Input(String),
    /// A snapshot or saved state that does not parse.
    #[error("{0}")]
    Snapshot(String),
    /// A core value that could not be written as JSON: a bug, reported rather than
    /// replaced by an empty value.
    #[error("{0}")]
    Serialize(String),
    /// A panic caught at the boundary; the core is written never to panic.
    #[error("{0}")]
    Panic(String),
}

impl Failure {
    /// The stable code: the core error's own, or one of the binding's.
    pub fn code(&self) -> &'static str {
        match self {
            Failure::Policy(e) => e.code(),
            Failure::Key(e) => e.code(),
            Failure::Seal(e) => e.code(),
            Failure::Open(e) => e.code(),
            Failure::Handoff(e) => e.code(),
            Failure::Admission(e) => e.code(),
            Failure::Id(e) => e.code(),
            Failure::Message(e) => e.code(),
            Failure::Trust(e) => e.code(),
            Failure::Read(_) => "io.read",
            Failure::Input(_) => "input.invalid",
            Failure::Snapshot(_) => "snapshot.invalid",
            Failure::Serialize(_) => "internal.serialize",
            Failure::Panic(_) => "internal.panic",
        }
    }
}

/// Runs `f`, turning a panic into [`Failure::Panic`] so that no panic crosses into the
/// host language's runtime.
pub fn catch<T>(f: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let detail = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        Err(Failure::Panic(format!("agentfw panicked (a bug; please report it): {detail}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_coded_failure() {
        #[allow(clippy::panic)]
        let failure = catch::<()>(|| panic!("boom")).err();
        let failure = failure.as_ref();
        assert_eq!(failure.map(Failure::code), Some("internal.panic"));
        assert!(failure.is_some_and(|f| f.to_string().ends_with("boom")), "{failure:?}");
    }

    #[test]
    fn core_errors_keep_their_codes() {
        let bad = "nope".parse::<agentfw_core::message::MessageId>().map_err(Failure::from);
        assert_eq!(bad.err().as_ref().map(Failure::code), Some("message.bad_id"));
    }
}
