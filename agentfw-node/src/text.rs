//! Fence, normalization, fingerprints and message ids.

use agentfw_core::fence as core_fence;
use agentfw_core::fingerprint::Fingerprints as CoreFingerprints;
use agentfw_core::message::MessageId;
use agentfw_core::normalize;
use napi_derive::napi;

use crate::convert::{at, hex64, ms, rng};
use crate::errors::{Failure, Result, guard};

/// A fenced delivery: the marker and the whole text to show the receiving model (DL1).
#[napi(object)]
#[derive(Clone, Debug)]
pub struct Fenced {
    pub marker: String,
    pub text: String,
}

impl From<core_fence::Fenced> for Fenced {
    fn from(f: core_fence::Fenced) -> Self {
        Fenced { marker: f.marker, text: f.text }
    }
}

/// The line after the closing marker.
#[napi]
pub const TRAILER: &str = core_fence::TRAILER;

/// Fences `body` from the agent labelled `from`, with a marker drawn from the OS (or from
/// `seed`).
#[napi]
pub fn fence(from: String, id: String, body: String, seed: Option<i64>) -> Result<Fenced> {
    guard(|| {
        let id: MessageId = id.parse()?;
        Ok(core_fence::fence(&from, id, &body, &mut rng(seed)?).into())
    })
}

/// `text` without control or invisible formatting characters, line breaks as `\n` (DL2).
#[napi]
pub fn sanitize(text: String) -> String {
    core_fence::sanitize(&text).into_owned()
}

/// `text` made safe for a one-line header.
#[napi]
pub fn sanitize_line(text: String) -> String {
    core_fence::sanitize_line(&text)
}

/// The folded form of `text` for matching (PV1, PV3).
#[napi]
pub fn fold(text: String) -> String {
    normalize::fold(&text)
}

fn one_char(ch: &str) -> std::result::Result<char, Failure> {
    let mut chars = ch.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Ok(c),
        _ => Err(Failure::Input("expected exactly one character".to_owned())),
    }
}

/// Whether `ch` (one character) is invisible formatting that folding removes.
#[napi]
pub fn is_invisible(ch: String) -> Result<bool> {
    guard(|| Ok(normalize::is_invisible(one_char(&ch)?)))
}

/// Whether `ch` (one character) breaks a line.
#[napi]
pub fn is_line_break(ch: String) -> Result<bool> {
    guard(|| Ok(normalize::is_line_break(one_char(&ch)?)))
}

/// The fingerprints of a folded text, as 16-digit lowercase hex.
#[napi(object)]
pub struct Fingerprints {
    pub whole: String,
    pub lines: Vec<String>,
    pub sketch: Vec<String>,
}

/// The whole-text, long-line and sketch fingerprints of `folded` (the output of `fold`).
#[napi]
pub fn fingerprint(folded: String) -> Fingerprints {
    let p = CoreFingerprints::of(&folded);
    Fingerprints {
        whole: hex64(p.whole),
        lines: p.lines.iter().map(|&h| hex64(h)).collect(),
        sketch: p.sketch.iter().map(|&h| hex64(h)).collect(),
    }
}

/// A fresh message id (a ULID) for `now`.
#[napi]
pub fn message_id(now: Option<i64>, seed: Option<i64>) -> Result<String> {
    guard(|| Ok(MessageId::generate(at(now)?, &mut rng(seed)?).to_string()))
}

/// The milliseconds since the epoch in a message id.
#[napi]
pub fn message_id_time(id: String) -> Result<i64> {
    guard(|| Ok(ms(id.parse::<MessageId>()?.timestamp())))
}
