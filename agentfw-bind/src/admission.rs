//! Admission input as the bindings take it (JSON values) and verdicts as they return them.

use std::collections::BTreeSet;

use agentfw_core::admission::{Component, ComponentId, Inventory, NotAdmitted};
use serde_json::Value;

use crate::error::Failure;
use crate::json;

/// An inventory given as the spec's JSON text (a string) or as the JSON value itself.
pub fn inventory(value: Value) -> Result<Inventory, Failure> {
    let text = match value {
        Value::String(text) => text,
        other => other.to_string(),
    };
    Ok(Inventory::from_json(&text)?)
}

/// `[{"id": "mcp:github", "score": 7.5}, ...]`.
pub fn components(value: Value) -> Result<Vec<Component>, Failure> {
    json::input("a list of components", value)
}

pub fn component_set(ids: Vec<String>) -> Result<BTreeSet<ComponentId>, Failure> {
    ids.into_iter().map(|id| ComponentId::new(id).map_err(Failure::from)).collect()
}

/// Why an agent is not admitted: `{why, component, score, level}` plus its stable `code`
/// and the sentence as `text`.
pub fn refused(r: &NotAdmitted) -> Result<Value, Failure> {
    let mut value = json::value("an admission refusal", r)?;
    if let Some(map) = value.as_object_mut() {
        map.insert("code".into(), r.code().as_str().into());
        map.insert("text".into(), r.to_string().into());
    }
    Ok(value)
}
