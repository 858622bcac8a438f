//! Small conversions at the boundary: time, randomness, JSON values, stages.

use agentfw_core::policy::Stage;
use agentfw_core::time::Timestamp;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::Value;

use crate::errors::Failure;

/// `now` as given (milliseconds since the epoch), else the wall clock.
pub fn at(now: Option<u64>) -> Timestamp {
    now.map_or_else(wall_clock, Timestamp::from_millis)
}

/// The binding owns the clock; the core never reads one.
#[allow(clippy::disallowed_methods)]
fn wall_clock() -> Timestamp {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    Timestamp::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

/// A ChaCha20 generator: from `seed` (tests, vectors), else seeded from the OS.
#[allow(clippy::disallowed_methods)]
pub fn rng(seed: Option<u64>) -> Result<ChaCha20Rng, Failure> {
    match seed {
        Some(seed) => Ok(ChaCha20Rng::seed_from_u64(seed)),
        None => {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).map_err(|e| Failure::Input(format!("the OS has no randomness to give: {e}")))?;
            Ok(ChaCha20Rng::from_seed(key))
        }
    }
}

pub fn stage(on: &str) -> Result<Stage, Failure> {
    match on {
        "sending" | "message.sending" => Ok(Stage::Sending),
        "delivering" | "message.delivering" => Ok(Stage::Delivering),
        other => Err(Failure::Input(format!("`on` must be `sending` or `delivering`, not `{other}`"))),
    }
}

pub fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Sending => "sending",
        Stage::Delivering => "delivering",
    }
}

/// A JSON value as Python data: dicts, lists, str, int, float, bool, None.
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => u.into_pyobject(py)?.into_any(),
            (None, Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, None, f) => f.unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// Python data (or a JSON string) as a JSON value.
pub fn from_py(obj: &Bound<'_, PyAny>) -> Result<Value, Failure> {
    if let Ok(text) = obj.cast::<PyString>() {
        let text = text.to_str().map_err(|e| Failure::Input(e.to_string()))?;
        return serde_json::from_str(text).map_err(|e| Failure::Input(format!("not JSON: {e}")));
    }
    value(obj)
}

fn value(obj: &Bound<'_, PyAny>) -> Result<Value, Failure> {
    let bad = |e: PyErr| Failure::Input(e.to_string());
    if obj.is_none() {
        Ok(Value::Null)
    } else if let Ok(b) = obj.cast::<PyBool>() {
        Ok(Value::Bool(b.is_true()))
    } else if obj.cast::<PyInt>().is_ok() {
        match obj.extract::<i64>() {
            Ok(i) => Ok(Value::from(i)),
            Err(_) => obj.extract::<u64>().map(Value::from).map_err(bad),
        }
    } else if let Ok(f) = obj.cast::<PyFloat>() {
        serde_json::Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| Failure::Input("numbers must be finite".to_owned()))
    } else if let Ok(s) = obj.cast::<PyString>() {
        Ok(Value::String(s.to_str().map_err(bad)?.to_owned()))
    } else if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, v) in d.iter() {
            let key = k.cast::<PyString>().map_err(|_| Failure::Input("object keys must be strings".to_owned()))?;
            map.insert(key.to_str().map_err(bad)?.to_owned(), value(&v)?);
        }
        Ok(Value::Object(map))
    } else if let Ok(l) = obj.cast::<PyList>() {
        l.iter().map(|v| value(&v)).collect::<Result<Vec<_>, _>>().map(Value::Array)
    } else if let Ok(t) = obj.cast::<PyTuple>() {
        t.iter().map(|v| value(&v)).collect::<Result<Vec<_>, _>>().map(Value::Array)
    } else {
        let ty = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        Err(Failure::Input(format!("cannot use a `{ty}` as JSON data")))
    }
}

/// Text given as `str` or as UTF-8 `bytes`.
#[derive(FromPyObject)]
pub enum Data {
    Text(String),
    Bytes(Vec<u8>),
}

impl Data {
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            Data::Text(s) => s.into_bytes(),
            Data::Bytes(b) => b,
        }
    }
}

/// Lowercase 16-digit hex of a 64-bit fingerprint, as the vectors write it.
pub fn hex64(h: u64) -> String {
    format!("{h:016x}")
}
