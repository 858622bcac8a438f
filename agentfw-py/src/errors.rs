//! Core errors to Python exceptions, by one exhaustive `match`.
//!
//! The exception classes are plain Python (`agentfw/_errors.py`), so that they can inherit
//! from both `AgentfwError` and `ValueError`; each carries the core's stable `code`.

use agentfw_core::admission::AdmissionError;
use agentfw_core::firewall::MessageError;
use agentfw_core::handoff::HandoffError;
use agentfw_core::message::IdError;
use agentfw_core::policy::PolicyError;
use agentfw_core::seal::{KeyError, OpenError, SealError};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::policy::Diagnostic;

/// Everything that can go wrong in a call, before it becomes a Python exception.
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
    /// An argument the binding could not turn into a core value (`on="sideways"`, a
    /// malformed config object).
    Input(String),
    /// A snapshot or saved state that does not parse.
    Snapshot(String),
    /// A file that could not be read.
    Io(String),
    /// A panic caught at the boundary; the core is written never to panic.
    Panic(String),
}

impl Failure {
    /// The Python class (in `agentfw._errors`), the stable code and the message.
    fn parts(&self) -> (&'static str, &'static str, String) {
        match self {
            Failure::Policy(e) => ("PolicyError", e.code(), e.to_string()),
            Failure::Key(e) => ("KeysError", e.code(), e.to_string()),
            Failure::Seal(e) => ("SealError", e.code(), e.to_string()),
            Failure::Open(e) => ("OpenError", e.code(), e.to_string()),
            Failure::Handoff(e) => ("HandoffError", e.code(), e.to_string()),
            Failure::Admission(e) => ("AdmissionError", e.code(), e.to_string()),
            Failure::Id(e) => ("MessageError", e.code(), e.to_string()),
            Failure::Message(e) => ("MessageError", e.code(), e.to_string()),
            Failure::Input(m) => ("InputError", "input.invalid", m.clone()),
            Failure::Snapshot(m) => ("SnapshotError", "snapshot.invalid", m.clone()),
            Failure::Io(m) => ("FileError", "io.read", m.clone()),
            Failure::Panic(m) => ("InternalError", "internal.panic", m.clone()),
        }
    }

    pub fn into_py(self, py: Python<'_>) -> PyErr {
        match self.build(py) {
            Ok(err) | Err(err) => err,
        }
    }

    fn build(self, py: Python<'_>) -> PyResult<PyErr> {
        let (class, code, message) = self.parts();
        let module = py.import("agentfw._errors")?;
        let exc = module.getattr(class)?.call1((message, code))?;
        if let Failure::Policy(e) = &self {
            let list = PyList::empty(py);
            for d in e.diagnostics().iter() {
                list.append(Diagnostic::from(d))?;
            }
            exc.setattr("diagnostics", list)?;
        }
        Ok(PyErr::from_value(exc))
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

/// Runs `f`, turning a failure or a panic into a Python exception.
pub fn guard<T>(py: Python<'_>, f: impl FnOnce() -> Result<T, Failure>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(failure)) => Err(failure.into_py(py)),
        Err(payload) => Err(Failure::Panic(panic_text(payload.as_ref())).into_py(py)),
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    format!("agentfw panicked (a bug; please report it): {detail}")
}
