//! Folds texts as the firewall does, for tools outside Rust that must match it exactly
//! (the injection model's trainer): one JSON string per input line, the folded string
//! per output line.
//!
//! `cargo run -q -p agentfw-core --example fold < texts.jsonl > folded.jsonl`

#![allow(clippy::print_stderr)]

use std::io::{BufRead, BufWriter, Write};
use std::process::ExitCode;

use agentfw_core::normalize::fold;

fn main() -> ExitCode {
    let mut out = BufWriter::new(std::io::stdout().lock());
    for (n, line) in std::io::stdin().lock().lines().enumerate() {
        let folded = line
            .map_err(|e| e.to_string())
            .and_then(|l| serde_json::from_str::<String>(&l).map_err(|e| format!("not a JSON string: {e}")))
            .and_then(|text| serde_json::to_string(&fold(&text)).map_err(|e| e.to_string()))
            .and_then(|json| writeln!(out, "{json}").map_err(|e| e.to_string()));
        if let Err(e) = folded {
            eprintln!("fold: line {}: {e}", n + 1);
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = out.flush() {
        eprintln!("fold: cannot write: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
