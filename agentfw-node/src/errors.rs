//! Core errors to JavaScript errors with a stable `code`, by one exhaustive `match`.

use agentfw_core::admission::AdmissionError;
use agentfw_core::firewall::MessageError;
use agentfw_core::handoff::HandoffError;
use agentfw_core::message::IdError;
use agentfw_core::policy::PolicyError;
use agentfw_core::seal::{KeyError, OpenError, SealError};

/// What a call returns: the value, or an error whose `code` is the core's stable code.
pub type Result<T> = napi::Result<T, String>;

#[derive(Debug)]
pub enum Failure {
    Policy(PolicyError),
    Key(KeyError),
    Seal(SealError),
    Open(OpenError),
    Handoff(HandoffError),
    Admission(AdmissionError),
    Id(IdError),
    Message(MessageError),
    Input(String),
    Snapshot(String),
    Io(String),
    Panic(String),
}

impl Failure {
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
            Failure::Input(_) => "input.invalid",
            Failure::Snapshot(_) => "snapshot.invalid",
            Failure::Io(_) => "io.read",
            Failure::Panic(_) => "internal.panic",
        }
    }

    fn message(&self) -> String {
        match self {
            Failure::Policy(e) => e.to_string(),
            Failure::Key(e) => e.to_string(),
            Failure::Seal(e) => e.to_string(),
            Failure::Open(e) => e.to_string(),
            Failure::Handoff(e) => e.to_string(),
            Failure::Admission(e) => e.to_string(),
            Failure::Id(e) => e.to_string(),
            Failure::Message(e) => e.to_string(),
            Failure::Input(m) | Failure::Snapshot(m) | Failure::Io(m) | Failure::Panic(m) => m.clone(),
        }
    }
}

impl From<Failure> for napi::Error<String> {
    fn from(f: Failure) -> Self {
        napi::Error::new(f.code().to_owned(), f.message())
    }
}

macro_rules! from {
    ($($ty:ty => $variant:ident),* $(,)?) => {
        $(impl From<$ty> for Failure {
            fn from(e: $ty) -> Self {
                Failure::$variant(e)
            }
        })*
    };
}

from!(
    PolicyError => Policy,
    KeyError => Key,
    SealError => Seal,
    OpenError => Open,
    HandoffError => Handoff,
    AdmissionError => Admission,
    IdError => Id,
    MessageError => Message,
);

/// Runs `f`, turning a failure or a panic into a JavaScript error with a code.
pub fn guard<T>(f: impl FnOnce() -> std::result::Result<T, Failure>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result.map_err(Into::into),
        Err(payload) => {
            let detail = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Failure::Panic(format!("agentfw panicked (a bug; please report it): {detail}")).into())
        }
    }
}
