//! JavaScript values at the boundary: times and seeds as numbers, JSON values, bytes.

pub use agentfw_bind::numbers::{count, ms};
use agentfw_core::time::Timestamp;
use napi::bindgen_prelude::{Buffer, Either};
use rand_chacha::ChaCha20Rng;
use serde_json::Value;

use crate::errors::Failure;

/// JavaScript numbers are exact up to here; larger integers (text ids) travel as strings.
const MAX_SAFE: u64 = (1 << 53) - 1;

/// `now` in ms since the epoch, else the wall clock; a time before 1970 is refused.
pub fn at(now: Option<i64>) -> Result<Timestamp, Failure> {
    let now =
        now.map(|ms| u64::try_from(ms).map_err(|_| Failure::Input(format!("`now` must not be negative, not {ms}"))));
    Ok(agentfw_bind::host::at(now.transpose()?))
}

/// Randomness from the OS, or from `seed` (tests and vectors only).
pub fn rng(seed: Option<i64>) -> Result<ChaCha20Rng, Failure> {
    let seed = seed.map(|s| u64::try_from(s).map_err(|_| Failure::Input("`seed` must not be negative".to_owned())));
    agentfw_bind::host::rng(seed.transpose()?)
}

/// A core JSON value made safe for JavaScript: integers past 2^53 become strings.
pub fn js(value: Value) -> Value {
    match value {
        Value::Number(n) if n.as_u64().is_some_and(|u| u > MAX_SAFE) => Value::String(n.to_string()),
        Value::Array(items) => Value::Array(items.into_iter().map(js).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, js(v))).collect()),
        other => other,
    }
}

/// A core value in its JSON form, made safe for JavaScript; `what` names it should that
/// fail.
pub fn to_js(what: &str, value: &impl serde::Serialize) -> Result<Value, Failure> {
    Ok(js(agentfw_bind::json::value(what, value)?))
}

/// Text as a string, or bytes as a Buffer.
pub type Data = Either<String, Buffer>; // written out in signatures, so the generated types name it

pub fn bytes(data: Data) -> Vec<u8> {
    match data {
        Either::A(s) => s.into_bytes(),
        Either::B(b) => b.to_vec(),
    }
}

pub fn hex64(h: u64) -> String {
    format!("{h:016x}")
}
