//! Ratings from an existing scanner's report: Cisco AI Defense's `mcp-scanner` (AD1).
//!
//! `mcp-scanner` inspects MCP servers (their tools, prompts and resources) with several
//! analyzers and prints, with `--raw`, a JSON list with one result per scanned item:
//!
//! ```json
//! [{"tool_name": "execute_command", "tool_description": "…", "item_type": "tool",
//!   "status": "completed", "is_safe": false, "server_name": "shell",
//!   "findings": {"yara_analyzer": {"severity": "HIGH", "total_findings": 1,
//!                                  "threat_names": ["…"], "threat_summary": "…"}}}]
//! ```
//!
//! Three wrappings of that list are accepted: the bare list (`--raw`), an object with the
//! list under `scan_results` (`--format raw`, which adds `server_url`), and an object from
//! config path to list (`known-configs --raw`). `server_name` is present when the scan came
//! from an MCP client config; for a single-server scan pass the server's name.
//!
//! The scanner rates severity levels, not scores. A server's rating is its worst item's, and
//! an item's is its worst analyzer's, mapped to the bottom of the matching band so that a
//! HIGH finding meets the default threshold: SAFE/INFO 0.0, LOW 0.1, MEDIUM 4.0, HIGH 7.0,
//! CRITICAL 9.0. An item the scanner could not rate (severity UNKNOWN, or a status other
//! than `completed`) leaves its server unrated, which refuses agents that load it (AD5).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AdmissionError, ComponentId, Ratings, Score, json_error};

/// Ratings from a scanner report, and notes on what could not be rated.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportedReport {
    /// `mcp:<server>` → its worst item's score, `None` when something in it could not be
    /// rated.
    pub ratings: Ratings,
    /// Why a server is unrated, in words, one note per item.
    pub notes: Vec<String>,
}

/// Import a Cisco `mcp-scanner` raw JSON report. `server` names the server for results that
/// do not name one (a scan of a single server by URL or command).
pub fn import_cisco_mcp_scanner(report: &str, server: Option<&str>) -> Result<ImportedReport, AdmissionError> {
    let bad = AdmissionError::ScannerReport;
    let root: Value = serde_json::from_str(report).map_err(|e| bad(json_error(&e)))?;
    let lists: Vec<(String, &Vec<Value>)> = match &root {
        Value::Array(items) => vec![(String::new(), items)],
        Value::Object(map) => match map.get("scan_results") {
            Some(Value::Array(items)) => vec![(String::new(), items)],
            Some(_) => return Err(bad("`scan_results` must be a list of results".into())),
            None if !map.is_empty() && map.values().all(Value::is_array) => {
                map.iter().filter_map(|(path, v)| v.as_array().map(|items| (format!("`{path}`: "), items))).collect()
            }
            None => {
                return Err(bad(
                    "this is not an mcp-scanner raw report: expected a list of results, an object with `scan_results`, or an object of config paths to lists (run `mcp-scanner` with `--raw`)"
                        .into(),
                ));
            }
        },
        _ => return Err(bad("expected a JSON list or object at the top".into())),
    };
    let mut out = ImportedReport::default();
    let mut worst: BTreeMap<ComponentId, Option<Score>> = BTreeMap::new();
    for (prefix, items) in lists {
        for (i, item) in items.iter().enumerate() {
            let at = format!("{prefix}result {}", i + 1);
            let Value::Object(item) = item else {
                return Err(bad(format!("{at} must be an object")));
            };
            let name = item_name(item);
            let at = format!("{at} (`{name}`)");
            let server_name = match (item.get("server_name"), server) {
                (Some(Value::String(s)), _) if !s.trim().is_empty() => s.as_str(),
                (Some(Value::String(_)) | None | Some(Value::Null), Some(s)) => s,
                (Some(Value::String(_)) | None | Some(Value::Null), None) => {
                    return Err(bad(format!(
                        "{at} names no server (`server_name`); the report came from a single-server scan, so give the server's name"
                    )));
                }
                (Some(_), _) => return Err(bad(format!("{at}: `server_name` must be a string"))),
            };
            let id = ComponentId::mcp(server_name).map_err(|e| bad(format!("{at}: {e}")))?;
            let score = item_score(item).map_err(|p| bad(format!("{at}: {p}")))?;
            if score.is_none() {
                out.notes.push(format!("{id}: {name} could not be rated ({})", unrated_why(item)));
            }
            let entry = worst.entry(id).or_insert(Some(Score::ZERO));
            *entry = match (*entry, score) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
        }
    }
    out.ratings = worst;
    Ok(out)
}

fn item_name(item: &serde_json::Map<String, Value>) -> String {
    ["tool_name", "prompt_name", "resource_name", "resource_uri"]
        .iter()
        .find_map(|k| item.get(*k).and_then(Value::as_str))
        .unwrap_or("unnamed item")
        .chars()
        .take(80)
        .collect()
}

fn unrated_why(item: &serde_json::Map<String, Value>) -> String {
    match item.get("status").and_then(Value::as_str) {
        Some("completed") => "severity UNKNOWN".to_owned(),
        Some(status) => format!("status `{status}`"),
        None => "no status".to_owned(),
    }
}

/// The worst analyzer's severity as a score; `None` when the item could not be rated.
fn item_score(item: &serde_json::Map<String, Value>) -> Result<Option<Score>, String> {
    if item.get("status").and_then(Value::as_str) != Some("completed") {
        return Ok(None);
    }
    let findings = match item.get("findings") {
        None | Some(Value::Null) => return Ok(Some(Score::ZERO)),
        Some(Value::Object(f)) => f,
        Some(_) => return Err("`findings` must be an object of analyzers".into()),
    };
    let mut worst = Score::ZERO;
    for (analyzer, result) in findings {
        let severity = result
            .get("severity")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("analyzer `{analyzer}` gives no `severity`"))?;
        match severity_score(severity) {
            Ok(Some(score)) => worst = worst.max(score),
            Ok(None) => return Ok(None),
            Err(()) => {
                return Err(format!(
                    "analyzer `{analyzer}`: `{severity}` is not a severity (expected SAFE, INFO, LOW, MEDIUM, HIGH, CRITICAL or UNKNOWN)"
                ));
            }
        }
    }
    if worst == Score::ZERO && item.get("is_safe") == Some(&Value::Bool(false)) {
        // Marked unsafe without a severity: do not call it safe.
        return Ok(None);
    }
    Ok(Some(worst))
}

fn severity_score(severity: &str) -> Result<Option<Score>, ()> {
    let hundredths = match severity.to_ascii_uppercase().as_str() {
        "SAFE" | "INFO" | "NONE" => 0,
        "LOW" => 10,
        "MEDIUM" => 400,
        "HIGH" => 700,
        "CRITICAL" => 900,
        "UNKNOWN" => return Ok(None),
        _ => return Err(()),
    };
    Ok(Score::from_hundredths(hundredths))
}
