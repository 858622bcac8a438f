//! The MCP servers each harness is configured to load, from the contents of its config
//! files (AD1). Reading the files is the adapter's job; this module only parses.
//!
//! | file | where the servers are |
//! |---|---|
//! | Claude Code `~/.claude.json` | top-level `mcpServers` (user scope) and `projects["<abs dir>"].mcpServers` (local scope) |
//! | Claude Code `.mcp.json` | `mcpServers` (project scope) |
//! | Codex `config.toml` | `[mcp_servers.NAME]` tables, except those with `enabled = false` |
//! | Cursor `mcp.json` | `mcpServers` |
//! | Gemini `settings.json` | `mcpServers` |
//!
//! Each server becomes the component `mcp:<name>`. A server that is configured but turned
//! off some other way (Claude Code's per-project approvals, Gemini's exclusions) is still
//! listed: listing too much refuses more, never less.

use core::fmt;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AdmissionError, ComponentId, json_error};

/// A harness config file, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HarnessFile {
    /// Claude Code's `~/.claude.json`.
    ClaudeUser,
    /// Claude Code's project `.mcp.json`.
    ClaudeProject,
    /// Codex's `~/.codex/config.toml`.
    CodexConfig,
    /// Cursor's `~/.cursor/mcp.json` or `.cursor/mcp.json`.
    CursorMcp,
    /// Gemini CLI's `~/.gemini/settings.json` or `.gemini/settings.json`.
    GeminiSettings,
}

impl fmt::Display for HarnessFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HarnessFile::ClaudeUser => "Claude Code `~/.claude.json`",
            HarnessFile::ClaudeProject => "Claude Code `.mcp.json`",
            HarnessFile::CodexConfig => "Codex `config.toml`",
            HarnessFile::CursorMcp => "Cursor `mcp.json`",
            HarnessFile::GeminiSettings => "Gemini `settings.json`",
        })
    }
}

/// The components (`mcp:<name>`) that the config file `contents` of kind `file` loads,
/// sorted. `project` is the agent's project directory as an absolute path: Claude Code's
/// `~/.claude.json` keeps per-project servers under it.
pub fn configured_servers(
    file: HarnessFile,
    contents: &str,
    project: Option<&str>,
) -> Result<Vec<ComponentId>, AdmissionError> {
    let bad = |problem: String| AdmissionError::HarnessConfig { file, problem };
    let mut names = BTreeSet::new();
    match file {
        HarnessFile::CodexConfig => codex(contents, &mut names).map_err(bad)?,
        HarnessFile::ClaudeUser | HarnessFile::ClaudeProject | HarnessFile::CursorMcp | HarnessFile::GeminiSettings => {
            // Cursor and Gemini accept comments in their JSON files.
            let text = match file {
                HarnessFile::CursorMcp | HarnessFile::GeminiSettings => strip_comments(contents),
                _ => contents.to_owned(),
            };
            let root: Value = serde_json::from_str(&text).map_err(|e| bad(json_error(&e)))?;
            let Value::Object(root) = root else {
                return Err(bad(format!("expected a JSON object at the top, found {}", kind(&root))));
            };
            servers(root.get("mcpServers"), "`mcpServers`", &mut names).map_err(bad)?;
            if let (HarnessFile::ClaudeUser, Some(dir)) = (file, project) {
                match root.get("projects") {
                    None => {}
                    Some(Value::Object(projects)) => {
                        if let Some(p) = projects.get(dir) {
                            let Value::Object(p) = p else {
                                return Err(bad(format!("project `{dir}` must be an object, found {}", kind(p))));
                            };
                            servers(p.get("mcpServers"), &format!("`mcpServers` of project `{dir}`"), &mut names)
                                .map_err(bad)?;
                        }
                    }
                    Some(other) => return Err(bad(format!("`projects` must be an object, found {}", kind(other)))),
                }
            }
        }
    }
    names.into_iter().map(|n| ComponentId::mcp(&n).map_err(|e| bad(format!("server `{n}`: {e}")))).collect()
}

fn servers(value: Option<&Value>, at: &str, names: &mut BTreeSet<String>) -> Result<(), String> {
    match value {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(map)) => {
            for (name, server) in map {
                if !server.is_object() {
                    return Err(format!("server `{name}` in {at} must be an object, found {}", kind(server)));
                }
                names.insert(name.clone());
            }
            Ok(())
        }
        Some(other) => Err(format!("{at} must be an object of servers, found {}", kind(other))),
    }
}

fn codex(contents: &str, names: &mut BTreeSet<String>) -> Result<(), String> {
    let table: toml::Table = toml::from_str(contents).map_err(|e| {
        let message = e.message().trim_end().to_owned();
        match e.span() {
            Some(span) => {
                let (line, column) = line_column(contents, span.start);
                format!("line {line}, column {column}: {message}")
            }
            None => message,
        }
    })?;
    let servers = match table.get("mcp_servers") {
        None => return Ok(()),
        Some(toml::Value::Table(t)) => t,
        Some(other) => return Err(format!("`mcp_servers` must be a table, found {}", other.type_str())),
    };
    for (name, server) in servers {
        let toml::Value::Table(server) = server else {
            return Err(format!("`mcp_servers.{name}` must be a table, found {}", server.type_str()));
        };
        match server.get("enabled") {
            None | Some(toml::Value::Boolean(true)) => {
                names.insert(name.clone());
            }
            Some(toml::Value::Boolean(false)) => {}
            Some(other) => {
                return Err(format!("`mcp_servers.{name}.enabled` must be true or false, found {}", other.type_str()));
            }
        }
    }
    Ok(())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// JSON with `//` and `/* */` comments, comments replaced by spaces so that error positions
/// stay where they were.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_string, mut escaped) = (false, false);
    while let Some(ch) = chars.next() {
        if in_string {
            out.push(ch);
            match (escaped, ch) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match (ch, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(ch);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                    out.push(' ');
                }
            }
            ('/', Some('*')) => {
                chars.next();
                out.push_str("  ");
                let mut last = ' ';
                for c in chars.by_ref() {
                    out.push(if c == '\n' { '\n' } else { ' ' });
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_go_but_strings_keep_their_slashes() {
        let text = "{\"a\": \"http://x/*y*/\", // note\n /* block\n */ \"b\": 1}";
        let v: Value = serde_json::from_str(&strip_comments(text)).unwrap();
        assert_eq!(v["a"], "http://x/*y*/");
        assert_eq!(v["b"], 1);
    }

    #[test]
    fn line_and_column_count_characters() {
        assert_eq!(line_column("ab\ncdé\nf", 8), (3, 1));
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
    }
}
