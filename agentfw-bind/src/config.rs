//! Configuration given as overrides: JSON laid over the defaults' JSON form, key by key.

use agentfw_core::firewall::Config;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::Failure;

/// `defaults` with the fields given in `overrides` replaced, recursively for objects: a
/// caller names only what it changes.
pub fn merged<T: Serialize + DeserializeOwned>(defaults: &T, overrides: Value) -> Result<T, serde_json::Error> {
    let mut base = serde_json::to_value(defaults)?;
    merge(&mut base, overrides);
    serde_json::from_value(base)
}

fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (k, v) in over {
                match base.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        base.insert(k, v);
                    }
                }
            }
        }
        (slot, over) => *slot = over,
    }
}

/// The firewall's config: the defaults, with `overrides` (absent or null: none) laid over.
pub fn firewall(overrides: Option<Value>) -> Result<Config, Failure> {
    match overrides.filter(|o| !o.is_null()) {
        None => Ok(Config::default()),
        Some(overrides) => {
            merged(&Config::default(), overrides).map_err(|e| Failure::Input(format!("bad firewall config: {e}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn overrides_replace_only_the_keys_they_name() -> Result<(), Failure> {
        let default = Config::default();
        let config = firewall(Some(json!({"max_message_bytes": 1024})))?;
        assert_eq!(config.max_message_bytes, 1024);
        let (a, b) = (serde_json::to_value(&config), serde_json::to_value(&default));
        let differing: Vec<String> = match (a, b) {
            (Ok(Value::Object(a)), Ok(Value::Object(b))) => {
                a.iter().filter(|(k, v)| b.get(*k) != Some(*v)).map(|(k, _)| k.clone()).collect()
            }
            _ => vec!["not objects".to_owned()],
        };
        assert_eq!(differing, ["max_message_bytes"]);
        Ok(())
    }

    #[test]
    fn a_wrong_type_is_an_input_error_naming_the_config() {
        let err = firewall(Some(json!({"max_message_bytes": "big"}))).err();
        assert_eq!(err.as_ref().map(Failure::code), Some("input.invalid"));
        assert!(err.is_some_and(|e| e.to_string().starts_with("bad firewall config: ")));
    }
}
