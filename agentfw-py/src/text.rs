//! `agentfw.fence`, `agentfw.normalize`, `agentfw.fingerprint` and message ids.

use agentfw_bind::host::{at, rng};
use agentfw_core::fence as core_fence;
use agentfw_core::fingerprint::Fingerprints as CoreFingerprints;
use agentfw_core::message::MessageId;
use agentfw_core::normalize;
use pyo3::prelude::*;

use crate::convert::hex64;
use crate::errors::{Failure, guard};

/// A fenced delivery: the marker and the whole text to show the receiving model (DL1).
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Fenced {
    marker: String,
    text: String,
}

impl From<core_fence::Fenced> for Fenced {
    fn from(f: core_fence::Fenced) -> Self {
        Fenced { marker: f.marker, text: f.text }
    }
}

/// Fences `body` from the agent labelled `sender`, with a marker drawn from the OS (or
/// from `seed`).
#[pyfunction]
#[pyo3(signature = (sender, id, body, *, seed = None))]
pub fn fence(py: Python<'_>, sender: &str, id: &str, body: &str, seed: Option<u64>) -> PyResult<Fenced> {
    guard(py, || {
        let id: MessageId = id.parse()?;
        Ok(core_fence::fence(sender, id, body, &mut rng(seed)?).into())
    })
}

/// `text` without control or invisible formatting characters, line breaks as `\n` (DL2).
#[pyfunction]
pub fn sanitize(text: &str) -> String {
    core_fence::sanitize(text).into_owned()
}

/// `text` made safe for a one-line header.
#[pyfunction]
pub fn sanitize_line(text: &str) -> String {
    core_fence::sanitize_line(text)
}

/// The folded form of `text` for matching: NFKC, lower case, look-alikes to ASCII,
/// invisibles removed, whitespace collapsed (PV1, PV3).
#[pyfunction]
pub fn fold(py: Python<'_>, text: &str) -> String {
    py.detach(|| normalize::fold(text))
}

/// Whether `ch` (one character) is invisible formatting that folding removes.
#[pyfunction]
pub fn is_invisible(ch: char) -> bool {
    normalize::is_invisible(ch)
}

/// Whether `ch` (one character) breaks a line.
#[pyfunction]
pub fn is_line_break(ch: char) -> bool {
    normalize::is_line_break(ch)
}

/// The fingerprints of a folded text, as 16-digit lowercase hex.
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Fingerprints {
    whole: String,
    lines: Vec<String>,
    sketch: Vec<String>,
}

/// The whole-text, long-line and sketch fingerprints of `folded` (the output of `fold`).
#[pyfunction]
pub fn fingerprint(py: Python<'_>, folded: &str) -> Fingerprints {
    let p = py.detach(|| CoreFingerprints::of(folded));
    Fingerprints {
        whole: hex64(p.whole),
        lines: p.lines.iter().map(|&h| hex64(h)).collect(),
        sketch: p.sketch.iter().map(|&h| hex64(h)).collect(),
    }
}

/// A fresh message id (a ULID) for `now`.
#[pyfunction]
#[pyo3(signature = (*, now = None, seed = None))]
pub fn message_id(py: Python<'_>, now: Option<u64>, seed: Option<u64>) -> PyResult<String> {
    guard(py, || Ok(MessageId::generate(at(now), &mut rng(seed)?).to_string()))
}

/// The milliseconds since the epoch in a message id.
#[pyfunction]
pub fn message_id_time(py: Python<'_>, id: &str) -> PyResult<u64> {
    guard(py, || Ok(id.parse::<MessageId>().map_err(Failure::from)?.timestamp().as_millis()))
}
