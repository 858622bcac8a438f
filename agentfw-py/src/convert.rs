//! Python values at the boundary: JSON data, text or bytes, fingerprints.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;

use crate::errors::Failure;

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

/// A core value as Python data, through its JSON form; `what` names it should that fail.
pub fn to_py_data<'py>(py: Python<'py>, what: &str, value: &impl serde::Serialize) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &agentfw_bind::json::value(what, value).map_err(|f| crate::errors::exception(py, f))?)
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
        let ty = obj.get_type().name().map_or_else(|_| "value of an unnamed type".to_owned(), |n| n.to_string());
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
