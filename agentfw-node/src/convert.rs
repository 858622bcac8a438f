//! Conversions at the boundary: time, randomness, stages, JSON values, bytes.

use agentfw_core::policy::Stage;
use agentfw_core::time::Timestamp;
use napi::bindgen_prelude::{Buffer, Either};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::Value;

use crate::errors::Failure;

/// JavaScript numbers are exact up to here; larger integers (text ids) travel as strings.
const MAX_SAFE: u64 = (1 << 53) - 1;

pub fn at(now: Option<i64>) -> Timestamp {
    now.map_or_else(wall_clock, |ms| Timestamp::from_millis(u64::try_from(ms).unwrap_or(0)))
}

#[allow(clippy::disallowed_methods)]
fn wall_clock() -> Timestamp {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    Timestamp::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

pub fn ms(t: Timestamp) -> i64 {
    i64::try_from(t.as_millis()).unwrap_or(i64::MAX)
}

#[allow(clippy::disallowed_methods)]
pub fn rng(seed: Option<i64>) -> Result<ChaCha20Rng, Failure> {
    match seed {
        Some(seed) => Ok(ChaCha20Rng::seed_from_u64(
            u64::try_from(seed).map_err(|_| Failure::Input("`seed` must not be negative".to_owned()))?,
        )),
        None => {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).map_err(|e| Failure::Input(format!("the OS has no randomness to give: {e}")))?;
            Ok(ChaCha20Rng::from_seed(key))
        }
    }
}

pub fn stage(on: Option<&str>) -> Result<Stage, Failure> {
    match on.unwrap_or("sending") {
        "sending" | "message.sending" => Ok(Stage::Sending),
        "delivering" | "message.delivering" => Ok(Stage::Delivering),
        other => Err(Failure::Input(format!("`on` must be `sending` or `delivering`, not `{other}`"))),
    }
}

pub fn stage_name(stage: Stage) -> String {
    match stage {
        Stage::Sending => "sending",
        Stage::Delivering => "delivering",
    }
    .to_owned()
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

pub fn to_js(value: &impl serde::Serialize) -> Value {
    js(serde_json::to_value(value).unwrap_or_default())
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

pub fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
