//! Serde round trips at the boundary that say when they fail: a value that cannot be
//! written is an error, never an empty string or `null` in its place.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::Failure;

/// `value` as a JSON value; `what` names it in the error.
pub fn value(what: &str, value: &impl Serialize) -> Result<Value, Failure> {
    serde_json::to_value(value).map_err(|e| unwritable(what, &e))
}

/// `value` as JSON text.
pub fn text(what: &str, value: &impl Serialize) -> Result<String, Failure> {
    serde_json::to_string(value).map_err(|e| unwritable(what, &e))
}

/// `value` as UTF-8 JSON bytes.
pub fn bytes(what: &str, value: &impl Serialize) -> Result<Vec<u8>, Failure> {
    serde_json::to_vec(value).map_err(|e| unwritable(what, &e))
}

/// Saved state read back; `what` says what it should have been (`a saved keyring`).
pub fn restore<T: DeserializeOwned>(what: &str, data: &[u8]) -> Result<T, Failure> {
    serde_json::from_slice(data).map_err(|e| Failure::Snapshot(format!("not {what}: {e}")))
}

/// A JSON value given by the caller as a core type; `what` says what it should have been.
pub fn input<T: DeserializeOwned>(what: &str, value: Value) -> Result<T, Failure> {
    serde_json::from_value(value).map_err(|e| Failure::Input(format!("not {what}: {e}")))
}

fn unwritable(what: &str, e: &serde_json::Error) -> Failure {
    Failure::Serialize(format!("cannot write {what} as JSON (a bug; please report it): {e}"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A map with non-string keys has no JSON form: the failure surfaces with its code.
    #[test]
    fn a_value_without_a_json_form_is_an_error_not_an_empty_value() {
        let unwritable: BTreeMap<(u8, u8), u8> = BTreeMap::from([((1, 2), 3)]);
        for result in [
            value("the state", &unwritable).map(|_| ()),
            text("the state", &unwritable).map(|_| ()),
            bytes("the state", &unwritable).map(|_| ()),
        ] {
            let err = result.err();
            assert_eq!(err.as_ref().map(Failure::code), Some("internal.serialize"));
            assert!(err.is_some_and(|e| e.to_string().starts_with("cannot write the state as JSON")));
        }
    }

    #[test]
    fn bad_saved_state_and_bad_input_say_what_was_expected() {
        let err = restore::<Vec<u8>>("a saved keyring", b"{").err();
        assert_eq!(err.as_ref().map(Failure::code), Some("snapshot.invalid"));
        assert!(err.is_some_and(|e| e.to_string().starts_with("not a saved keyring: ")));
        let err = input::<Vec<u8>>("a list of components", Value::from("x")).err();
        assert_eq!(err.as_ref().map(Failure::code), Some("input.invalid"));
        assert!(err.is_some_and(|e| e.to_string().starts_with("not a list of components: ")));
    }
}
