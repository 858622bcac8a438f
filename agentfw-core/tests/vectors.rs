//! The shared test vectors under `vectors/`, owned by the core and run by every binding.
//!
//! Expected values that the implementation computes (fingerprints, fence markers,
//! provenance) are recorded once by running with `AGENTFW_BLESS=1` and reviewed in the diff;
//! hand-written ones (normalization) are never rewritten.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::PathBuf;

use agentfw_core::fence::fence;
use agentfw_core::fingerprint::Fingerprints;
use agentfw_core::firewall::{Config, Firewall, Output};
use agentfw_core::message::{Agent, MessageId};
use agentfw_core::normalize::fold;
use agentfw_core::sim::Sim;
use agentfw_core::time::Timestamp;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{Value, json};

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors").join(name)
}

fn load(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path(name)).unwrap()).unwrap()
}

#[allow(clippy::disallowed_methods)]
fn blessing() -> bool {
    std::env::var("AGENTFW_BLESS").is_ok_and(|v| v == "1")
}

/// Compare computed fields with the file, or record them when blessing.
fn check(name: &str, mut file: Value, compute: impl Fn(&Value) -> Value) {
    let mut mismatches = Vec::new();
    for case in file["cases"].as_array_mut().unwrap() {
        let got = compute(case);
        for (key, value) in got.as_object().unwrap() {
            if blessing() {
                case[key] = value.clone();
            } else if &case[key] != value {
                mismatches.push(format!("{name}: {}: `{key}` is {value}, vector says {}", case["note"], case[key]));
            }
        }
    }
    if blessing() {
        std::fs::write(path(name), serde_json::to_string_pretty(&file).unwrap() + "\n").unwrap();
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

fn hex(h: u64) -> Value {
    json!(format!("{h:016x}"))
}

#[test]
fn normalize() {
    let file = load("normalize.json");
    for case in file["cases"].as_array().unwrap() {
        assert_eq!(fold(case["input"].as_str().unwrap()), case["folded"], "{}", case["note"]);
    }
}

#[test]
fn fingerprint() {
    check("fingerprint.json", load("fingerprint.json"), |case| {
        let p = Fingerprints::of(&fold(case["input"].as_str().unwrap()));
        json!({
            "whole": hex(p.whole),
            "lines": p.lines.iter().map(|&h| hex(h)).collect::<Vec<_>>(),
            "sketch": p.sketch.iter().map(|&h| hex(h)).collect::<Vec<_>>(),
        })
    });
}

#[test]
fn fence_rendering() {
    check("fence.json", load("fence.json"), |case| {
        let id: MessageId = case["id"].as_str().unwrap().parse().unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(case["seed"].as_u64().unwrap());
        let f = fence(case["from"].as_str().unwrap(), id, case["body"].as_str().unwrap(), &mut rng);
        json!({"marker": f.marker, "text": f.text})
    });
}

#[test]
fn provenance() {
    let file = load("provenance.json");
    let agents = file["agents"].clone();
    let agent = |name: &Value| {
        let a = &agents[name.as_str().unwrap()];
        Agent::new(a["id"].as_str().unwrap(), a["kind"].as_str().unwrap(), a["project"].as_str().unwrap())
    };
    check("provenance.json", file.clone(), |case| {
        let firewall = Firewall::new(Config::default());
        let mut sim = Sim::new(firewall, Timestamp::from_millis(1_796_047_500_000), ChaCha20Rng::seed_from_u64(0));
        let mut results = Vec::new();
        for step in case["steps"].as_array().unwrap() {
            sim.advance(std::time::Duration::from_secs(1));
            if let Some(send) = step.get("send") {
                let text = send["text"].as_str().unwrap();
                results.push(match sim.send(&agent(&send["from"]), &agent(&send["to"]), text) {
                    Output::Accepted { message, .. } => json!({
                        "verdict": "accepted",
                        "hops": message.provenance.hops,
                        "origin": message.provenance.origin.label,
                        "path": message.provenance.display_path(),
                    }),
                    Output::Refused(r) => json!({"verdict": "refused", "code": r.reason.code}),
                    other => panic!("unexpected {other:?}"),
                });
            } else {
                sim.read(&agent(&step["read"]));
            }
        }
        json!({ "want": results })
    });
}

/// The injection model's blocks, features and scores, as the trainer
/// (`rules/model/features.py`) computed them: the Rust extraction must match the Python one
/// exactly, or the shipped weights mean something else here than they did in training.
#[test]
fn injection_model() {
    use agentfw_core::signals::injection::blocks;

    let file = load("injection.json");
    let model = agentfw_core::signals::injection_model().unwrap();
    let cases = file["cases"].as_array().unwrap();
    assert!(cases.len() >= 5, "too few injection vectors");
    for case in cases {
        let note = &case["note"];
        let text = case["text"].as_str().unwrap();
        let want = case["blocks"].as_array().unwrap();
        let got = blocks(text);
        assert_eq!(got.len(), want.len(), "{note}: blocks {got:?}");
        for (block, want) in got.iter().zip(want) {
            assert_eq!(*block, want["text"], "{note}: block");
            let folded = fold(block);
            assert_eq!(folded, want["folded"], "{note}: folded block");
            assert_eq!(json!(model.features(&folded)), want["features"], "{note}: features");
        }
        let (best, score) = model.explain(text);
        assert_eq!(json!(best), case["best_window"], "{note}: best window");
        let want = case["score"].as_f64().unwrap();
        assert!((score - want).abs() < 1e-9, "{note}: score {score}, vector says {want}");
    }
}
