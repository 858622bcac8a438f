//! The native module of the `agentfw` Python package: `agentfw._agentfw`.
//!
//! Each submodule mirrors one module of `agentfw-core` and adds no logic of its own: it
//! converts arguments, calls the core, and converts the result or the error. Time defaults
//! to the wall clock and randomness to the OS; both can be passed in (`now=`, `seed=`).

mod admission;
mod convert;
mod errors;
mod firewall;
mod handoff;
mod policy;
mod seal;
mod text;

use pyo3::prelude::*;

#[pymodule]
fn _agentfw(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TRAILER", agentfw_core::fence::TRAILER)?;
    m.add_function(wrap_pyfunction!(policy::scan, m)?)?;
    m.add_class::<policy::Verdict>()?;
    m.add_class::<policy::Explanation>()?;
    m.add_class::<policy::RuleOutcome>()?;
    m.add_class::<policy::RuleInfo>()?;
    m.add_class::<policy::Diagnostic>()?;
    m.add_class::<policy::CaseResult>()?;
    m.add_class::<policy::Policy>()?;
    m.add_class::<policy::Reloadable>()?;

    m.add_class::<firewall::Agent>()?;
    m.add_class::<firewall::Hop>()?;
    m.add_class::<firewall::Provenance>()?;
    m.add_class::<firewall::Message>()?;
    m.add_class::<firewall::Reason>()?;
    m.add_class::<firewall::Refusal>()?;
    m.add_class::<firewall::Overlay>()?;
    m.add_class::<firewall::Output>()?;
    m.add_class::<firewall::Firewall>()?;

    m.add_class::<text::Fenced>()?;
    m.add_class::<text::Fingerprints>()?;
    m.add_function(wrap_pyfunction!(text::fence, m)?)?;
    m.add_function(wrap_pyfunction!(text::sanitize, m)?)?;
    m.add_function(wrap_pyfunction!(text::sanitize_line, m)?)?;
    m.add_function(wrap_pyfunction!(text::fold, m)?)?;
    m.add_function(wrap_pyfunction!(text::is_invisible, m)?)?;
    m.add_function(wrap_pyfunction!(text::is_line_break, m)?)?;
    m.add_function(wrap_pyfunction!(text::fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(text::message_id, m)?)?;
    m.add_function(wrap_pyfunction!(text::message_id_time, m)?)?;

    m.add_class::<seal::PublicBundle>()?;
    m.add_class::<seal::Rotation>()?;
    m.add_class::<seal::Keys>()?;
    m.add_class::<seal::Keyring>()?;
    m.add_class::<seal::ReplayCache>()?;
    m.add_class::<seal::Header>()?;
    m.add_class::<seal::Opened>()?;
    m.add_function(wrap_pyfunction!(seal::seal, m)?)?;
    m.add_function(wrap_pyfunction!(seal::open, m)?)?;
    m.add_function(wrap_pyfunction!(seal::envelope_header, m)?)?;

    m.add_class::<handoff::Signer>()?;
    m.add_class::<handoff::Verifier>()?;
    m.add_class::<handoff::VerifiedPlan>()?;

    m.add_class::<admission::Admission>()?;
    m.add_class::<admission::Evaluation>()?;
    m.add_class::<admission::Preview>()?;
    m.add_class::<admission::ImportedReport>()?;
    m.add_function(wrap_pyfunction!(admission::evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(admission::import_cisco_mcp_scanner, m)?)?;
    m.add_function(wrap_pyfunction!(admission::configured_servers, m)?)?;
    m.add_function(wrap_pyfunction!(admission::parse_threshold, m)?)?;
    Ok(())
}
