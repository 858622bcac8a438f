//! Editing a harness's JSON config: every change is recorded, so uninstall can undo exactly
//! what install did, and nothing else in the file moves (keys keep their order).

use serde_json::{Map, Value};

use super::{Change, InstallError};

/// A JSON config file being edited.
pub(crate) struct JsonDoc<'p> {
    pub path: &'p str,
    pub root: Value,
    pub changes: Vec<Change>,
    pub customised: Vec<String>,
}

pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn dotted(at: &[String]) -> String {
    if at.is_empty() { "the top level".to_owned() } else { format!("`{}`", at.join(".")) }
}

/// The value at `at`, if every step is an object key.
pub(crate) fn lookup<'v>(root: &'v Value, at: &[String]) -> Option<&'v Value> {
    at.iter().try_fold(root, |v, key| v.as_object()?.get(key))
}

pub(crate) fn lookup_mut<'v>(root: &'v mut Value, at: &[String]) -> Option<&'v mut Value> {
    at.iter().try_fold(root, |v, key| v.as_object_mut()?.get_mut(key))
}

pub(crate) fn path(at: &[&str]) -> Vec<String> {
    at.iter().map(|s| (*s).to_owned()).collect()
}

impl<'p> JsonDoc<'p> {
    /// Reads `text` (absent or blank: an empty object). The top level must be an object.
    pub fn parse(path: &'p str, text: Option<&str>) -> Result<Self, InstallError> {
        let root = match text {
            None => Value::Object(Map::new()),
            Some(t) if t.trim().is_empty() => Value::Object(Map::new()),
            Some(t) => serde_json::from_str(t).map_err(|e| {
                let comments = if t.contains("//") || t.contains("/*") {
                    " (if it has comments: agentfw cannot keep them, so it does not edit such files)"
                } else {
                    ""
                };
                InstallError::Parse { path: path.to_owned(), problem: format!("not valid JSON{comments}: {e}") }
            })?,
        };
        if !root.is_object() {
            return Err(InstallError::Shape {
                path: path.to_owned(),
                at: "the top level".to_owned(),
                want: "an object",
                found: kind(&root),
            });
        }
        Ok(Self { path, root, changes: Vec::new(), customised: Vec::new() })
    }

    fn shape(&self, at: &[String], want: &'static str, found: &Value) -> InstallError {
        InstallError::Shape { path: self.path.to_owned(), at: dotted(at), want, found: kind(found) }
    }

    /// Makes sure an object (or, with `array`, a list as the last step) exists at `at`,
    /// creating what is missing.
    pub fn ensure(&mut self, at: &[String], array: bool) -> Result<(), InstallError> {
        for depth in 1..=at.len() {
            let prefix = at.get(..depth).unwrap_or_default();
            let last = depth == at.len();
            let want_array = last && array;
            match lookup(&self.root, prefix) {
                Some(v) if want_array && v.is_array() => {}
                Some(v) if !want_array && v.is_object() => {}
                Some(v) => return Err(self.shape(prefix, if want_array { "a list" } else { "an object" }, v)),
                None => {
                    let (parent, key) = prefix.split_at(depth - 1);
                    let fresh = if want_array { Value::Array(Vec::new()) } else { Value::Object(Map::new()) };
                    let key = key.first().cloned().unwrap_or_default();
                    if let Some(Value::Object(map)) = lookup_mut(&mut self.root, parent) {
                        map.insert(key, fresh);
                    }
                    self.changes.push(Change::Created { at: prefix.to_vec() });
                }
            }
        }
        Ok(())
    }

    /// Sets `key` of the object at `at` to `value`. A different value already there is a
    /// customisation: it is replaced, and uninstall puts it back.
    pub fn set(&mut self, at: &[String], key: &str, value: Value) -> Result<(), InstallError> {
        self.ensure(at, false)?;
        let Some(Value::Object(map)) = lookup_mut(&mut self.root, at) else { return Ok(()) };
        let previous = map.get(key).cloned();
        if previous.as_ref() == Some(&value) {
            return Ok(());
        }
        map.insert(key.to_owned(), value.clone());
        let mut full = at.to_vec();
        full.push(key.to_owned());
        if previous.is_some() {
            self.customised.push(format!(
                "{} in `{}` is already set, to something else; it will be replaced (uninstall puts it back)",
                dotted(&full),
                self.path
            ));
        }
        self.changes.push(Change::Set { at: at.to_vec(), key: key.to_owned(), value, previous });
        Ok(())
    }

    /// The list at `at`, if there is one.
    pub fn list(&self, at: &[String]) -> Result<&[Value], InstallError> {
        match lookup(&self.root, at) {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(self.shape(at, "a list", other)),
        }
    }

    /// Appends `value` to the list at `at`.
    pub fn push(&mut self, at: &[String], value: Value) -> Result<(), InstallError> {
        self.ensure(at, true)?;
        if let Some(Value::Array(items)) = lookup_mut(&mut self.root, at) {
            items.push(value.clone());
        }
        self.changes.push(Change::Push { at: at.to_vec(), value });
        Ok(())
    }

    /// Removes the first item equal to `value` from the list at `at` (a customisation the
    /// person agreed to replace; uninstall puts it back).
    pub fn pull(&mut self, at: &[String], value: &Value, why: String) {
        if let Some(Value::Array(items)) = lookup_mut(&mut self.root, at)
            && let Some(i) = items.iter().position(|v| v == value)
        {
            items.remove(i);
            self.customised.push(why);
            self.changes.push(Change::Pull { at: at.to_vec(), value: value.clone(), index: i });
        }
    }
}

/// Undoes `changes` (in reverse) on `root`. What was changed again since install is left
/// as it is and reported in the returned notes.
pub(crate) fn undo(path: &str, root: &mut Value, changes: &[Change]) -> Vec<String> {
    let mut notes = Vec::new();
    for change in changes.iter().rev() {
        match change {
            Change::Push { at, value } => match lookup_mut(root, at) {
                Some(Value::Array(items)) => match items.iter().position(|v| v == value) {
                    Some(i) => {
                        items.remove(i);
                    }
                    None => notes.push(format!("{} in `{path}` no longer holds what agentfw added", dotted(at))),
                },
                _ => notes.push(format!("{} in `{path}` is gone already", dotted(at))),
            },
            Change::Pull { at, value, index } => {
                if let Some(Value::Array(items)) = lookup_mut(root, at)
                    && !items.contains(value)
                {
                    items.insert((*index).min(items.len()), value.clone());
                }
            }
            Change::Set { at, key, value, previous } => {
                let Some(Value::Object(map)) = lookup_mut(root, at) else { continue };
                if map.get(key) != Some(value) {
                    let mut full = at.clone();
                    full.push(key.clone());
                    notes.push(format!("left {} in `{path}` as it is: it was changed after install", dotted(&full)));
                    continue;
                }
                match previous {
                    Some(p) => {
                        map.insert(key.clone(), p.clone());
                    }
                    None => {
                        map.shift_remove(key);
                    }
                }
            }
            Change::Created { at } => {
                let empty = match lookup(root, at) {
                    Some(Value::Array(a)) => a.is_empty(),
                    Some(Value::Object(o)) => o.is_empty(),
                    _ => false,
                };
                let (parent, key) = at.split_at(at.len().saturating_sub(1));
                if let (true, Some(key), Some(Value::Object(map))) = (empty, key.first(), lookup_mut(root, parent)) {
                    map.shift_remove(key);
                }
            }
            Change::CodexServer { .. } | Change::CodexSetting { .. } | Change::Owned { .. } => {}
        }
    }
    notes
}

/// `value` as the file's text: indented like `original` (two spaces if there is none), with
/// a final line break.
pub(crate) fn render(value: &Value, original: Option<&str>) -> String {
    let indent = original.and_then(detect_indent).unwrap_or_else(|| "  ".to_owned());
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    if serde::Serialize::serialize(value, &mut ser).is_err() {
        return value.to_string();
    }
    let mut text = String::from_utf8(out).unwrap_or_default();
    text.push('\n');
    text
}

fn detect_indent(text: &str) -> Option<String> {
    text.lines()
        .skip(1)
        .map(|l| l.chars().take_while(|c| *c == ' ' || *c == '\t').collect::<String>())
        .find(|i| !i.is_empty())
}
