//! The labelled corpus (`agentfw-core/corpus/*.jsonl`) through the default pack: detection
//! and false-positive rates per category, against the quality bars of PR4.
//!
//! Each line is `{"text", "want": "deny"|"allow", "hops", "category", "note"}`. The text
//! is judged as the firewall would on send (sanitized, folded, with its hop count).
//! `cargo test -p agentfw-core --test corpus -- --nocapture` prints the table.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::sync::Arc;

use agentfw_core::policy::{RuleSet, Scanner, Stage};
use agentfw_core::time::Timestamp;
use serde::Deserialize;

#[derive(Deserialize)]
struct Line {
    text: String,
    want: String,
    hops: u32,
    category: String,
    #[serde(default)]
    note: String,
}

#[derive(Default)]
struct Tally {
    deny_wanted: usize,
    denied: usize,
    allow_wanted: usize,
    wrongly_denied: usize,
}

fn rate(n: usize, d: usize) -> f64 {
    if d == 0 { 1.0 } else { n as f64 / d as f64 }
}

#[test]
fn default_pack_meets_the_quality_bars_on_the_corpus() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the corpus directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus files in {dir}");

    let scanner = Scanner::new(Arc::new(RuleSet::default_pack().expect("the default pack compiles")));
    let now = Timestamp::from_millis(1_700_000_000_000);
    let mut by_category: BTreeMap<String, Tally> = BTreeMap::new();
    let mut forwarded = Tally::default();
    let mut benign = Tally::default();
    let mut misses = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a readable corpus file");
        for (n, raw) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let line: Line = serde_json::from_str(raw)
                .unwrap_or_else(|e| panic!("{}:{}: not a corpus line: {e}", file.display(), n + 1));
            let denied = scanner.judge(&line.text, Stage::Sending, line.hops, now).is_deny();
            let want_deny = match line.want.as_str() {
                "deny" => true,
                "allow" => false,
                other => panic!("{}:{}: want must be deny or allow, not {other}", file.display(), n + 1),
            };
            let forwarded_attack =
                line.hops >= 2 && matches!(line.category.as_str(), "injections" | "forwarded-commands");
            for tally in [
                Some(by_category.entry(line.category.clone()).or_default()),
                forwarded_attack.then_some(&mut forwarded),
                (!want_deny).then_some(&mut benign),
            ]
            .into_iter()
            .flatten()
            {
                if want_deny {
                    tally.deny_wanted += 1;
                    tally.denied += usize::from(denied);
                } else {
                    tally.allow_wanted += 1;
                    tally.wrongly_denied += usize::from(denied);
                }
            }
            if denied != want_deny {
                let short: String = line.text.chars().take(100).collect();
                misses.push(format!(
                    "  {} {}:{} [{}] {} — {short:?}",
                    if want_deny { "MISSED" } else { "FALSE+" },
                    file.file_name().and_then(|f| f.to_str()).unwrap_or("?"),
                    n + 1,
                    line.category,
                    line.note
                ));
            }
        }
    }

    println!("\n{:<28} {:>10} {:>10} {:>12} {:>12}", "category", "deny cases", "detected", "allow cases", "false pos.");
    for (category, t) in &by_category {
        let detected =
            if t.deny_wanted == 0 { "-".to_owned() } else { format!("{:.1}%", 100.0 * rate(t.denied, t.deny_wanted)) };
        let false_pos = if t.allow_wanted == 0 {
            "-".to_owned()
        } else {
            format!("{:.2}%", 100.0 * rate(t.wrongly_denied, t.allow_wanted))
        };
        println!("{category:<28} {:>10} {detected:>10} {:>12} {false_pos:>12}", t.deny_wanted, t.allow_wanted);
    }
    println!(
        "forwarded attacks (hops >= 2): {}/{} detected; benign refused: {}/{}",
        forwarded.denied, forwarded.deny_wanted, benign.wrongly_denied, benign.allow_wanted
    );
    for m in misses.iter().take(60) {
        println!("{m}");
    }

    let mut failures = Vec::new();
    let detection = |name: &str| by_category.get(name).map_or(1.0, |t| rate(t.denied, t.deny_wanted));
    if detection("provider-tokens") < 0.95 {
        failures.push(format!("provider tokens detected {:.1}% < 95%", 100.0 * detection("provider-tokens")));
    }
    if detection("private-keys") < 1.0 {
        failures.push(format!("private keys detected {:.1}% < 100%", 100.0 * detection("private-keys")));
    }
    if rate(forwarded.denied, forwarded.deny_wanted) < 0.90 {
        failures.push(format!(
            "forwarded injections/commands detected {:.1}% < 90%",
            100.0 * rate(forwarded.denied, forwarded.deny_wanted)
        ));
    }
    let false_positives = if benign.allow_wanted == 0 { 0.0 } else { rate(benign.wrongly_denied, benign.allow_wanted) };
    if false_positives > 0.005 {
        failures.push(format!("benign text refused {:.2}% > 0.5%", 100.0 * false_positives));
    }
    assert!(failures.is_empty(), "the default pack misses its quality bars: {}", failures.join("; "));
}
