//! Binding failures to Python exceptions: the class for each, the stable code and message
//! from `agentfw_bind::Failure`.
//!
//! The exception classes are plain Python (`agentfw/_errors.py`), so that they can inherit
//! from both `AgentfwError` and `ValueError`; each carries the core's stable `code`.

pub use agentfw_bind::Failure;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::policy::Diagnostic;

/// The class in `agentfw._errors` a failure is raised as.
fn class(failure: &Failure) -> &'static str {
    match failure {
        Failure::Policy(_) => "PolicyError",
        Failure::Key(_) => "KeysError",
        Failure::Seal(_) => "SealError",
        Failure::Open(_) => "OpenError",
        Failure::Handoff(_) => "HandoffError",
        Failure::Admission(_) => "AdmissionError",
        Failure::Id(_) | Failure::Message(_) => "MessageError",
        Failure::Input(_) | Failure::Trust(_) => "InputError",
        Failure::Snapshot(_) => "SnapshotError",
        Failure::Read(_) => "FileError",
        Failure::Serialize(_) | Failure::Panic(_) => "InternalError",
    }
}

/// The failure as a Python exception (or, should building it fail, that error).
pub fn exception(py: Python<'_>, failure: Failure) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let exc =
            py.import("agentfw._errors")?.getattr(class(&failure))?.call1((failure.to_string(), failure.code()))?;
        if let Failure::Policy(e) = &failure {
            let list = PyList::empty(py);
            for d in e.diagnostics().iter() {
                list.append(Diagnostic::from(d))?;
            }
            exc.setattr("diagnostics", list)?;
        }
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|err| err)
}

/// Runs `f`, turning a failure or a panic into a Python exception.
pub fn guard<T>(py: Python<'_>, f: impl FnOnce() -> Result<T, Failure>) -> PyResult<T> {
    agentfw_bind::catch(f).map_err(|failure| exception(py, failure))
}
