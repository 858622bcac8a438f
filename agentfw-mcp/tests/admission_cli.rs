//! `agentfw admission evaluate|preview` on inventory files (issue 4, AD2–AD7).

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{World, stderr, stdout, write};
use serde_json::Value;

const INVENTORY: &str = r#"{"agents": [
  {"agent": "web (claude)", "components": [
    {"id": "mcp:github", "score": 7.5},
    {"id": "skill:deploy", "score": 2.0}]},
  {"agent": "api (codex)", "components": [{"id": "mcp:db", "score": 5.0}]}]}"#;

fn inventory(w: &World) -> String {
    let path = w.dir.path().join("inventory.json");
    write(&path, INVENTORY);
    path.display().to_string()
}

#[test]
fn evaluate_names_the_worst_component_and_exits_1_when_enforcing() {
    let w = World::new();
    let inv = inventory(&w);
    let out = w.agentfw(&["admission", "evaluate", "--inventory", &inv]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), "api (codex): admitted\nweb (claude): refused: mcp:github is HIGH (7.5)\n");

    let out = w.agentfw(&["admission", "evaluate", "--inventory", &inv, "--mode", "report"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("web (claude): would refuse: mcp:github is HIGH (7.5)"), "{}", stdout(&out));

    let out = w.agentfw(&["admission", "evaluate", "--inventory", &inv, "--threshold", "critical", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["threshold"], 9.0);
    assert!(v["agents"].as_array().unwrap().iter().all(|a| a["admitted"] == true), "{v}");
}

#[test]
fn preview_counts_who_a_threshold_keeps_out() {
    let w = World::new();
    let inv = inventory(&w);
    let out = w.agentfw(&["admission", "preview", "--inventory", &inv, "--threshold", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("threshold 5.0 (MEDIUM) keeps out 2 of 2 agents (1 more than the current 7.0)"), "{text}");
    assert!(text.contains("  api (codex): mcp:db is MEDIUM (5.0)"), "{text}");
}

#[test]
fn a_malformed_inventory_is_an_error_naming_the_file_and_admits_nobody() {
    let w = World::new();
    let path = w.dir.path().join("bad.json");
    write(&path, r#"{"agents": [{"agent": "web (claude)", "components": [{"id": "mcp:x", "score": 12}]}]}"#);
    let out = w.agentfw(&["admission", "evaluate", "--inventory", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("bad.json") && err.contains("`12` is not a risk score"), "{err}");
    assert!(stdout(&out).is_empty());
    let out = w.agentfw(&["admission", "preview", "--inventory", "/nonexistent.json", "--threshold", "5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read `/nonexistent.json`"), "{}", stderr(&out));
}
