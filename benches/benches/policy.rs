//! The full default rule pack, one decision per iteration, normalization included: the text
//! is sanitized and folded as the firewall does, then judged at hops 2 so every rule runs
//! (the injection and command rules only look at forwarded text).
//!
//! `agentfw scan --jsonl` is measured in lines per second on the labelled corpus (every
//! category, about a quarter of it secrets and attacks) and on its benign texts alone.
//!
//! `cargo bench -p agentfw-benches --bench policy`

use std::hint::black_box;
use std::sync::Arc;

use agentfw_core::policy::{RuleSet, Scanner, Stage};
use agentfw_core::time::Timestamp;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Ordinary developer chat: prose, code, a log line, a shell command, hashes.
const ASCII: &str = "Can you check why the /health endpoint returns 500 after the deploy? The stack trace \
points at src/server.rs:120 in handle_request, right after we parse the JSON body. I ran \
`curl -s http://localhost:8080/health | jq .status` and got null. The commit is \
3f4e2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f and the request id 123e4567-e89b-12d3-a456-426614174000.\n\
fn handle_request(req: Request) -> Result<Response, Error> {\n    let body: Health = serde_json::from_slice(&req.body)?;\n    Ok(Response::json(&body))\n}\n\
2024-05-01T12:00:00Z ERROR request failed: connection refused (os error 111)\n";

/// The same kind of text with accents, CJK, emoji and a Cyrillic look-alike.
const MIXED: &str = "Pouvez-vous vérifier pourquoi l'endpoint /health renvoie 500 après le déploiement ? \
日本語のログ: 接続が拒否されました。 The stack trace points at src/server.rs:120 — naïve café résumé 🚀✅. \
Тhe tеam (with Cyrillic letters) says the fix is in handle_request; straße, ﬁle, ｆｕｌｌｗｉｄｔｈ.\n";

fn repeat_to(text: &str, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + text.len());
    while out.len() < bytes {
        out.push_str(text);
    }
    let mut end = bytes.min(out.len());
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    out
}

/// The clock every decision is judged at.
const NOW: Timestamp = Timestamp::from_millis(1_700_000_000_000);

/// The default pack, or nothing to measure (said on stderr).
fn default_pack() -> Option<RuleSet> {
    RuleSet::default_pack().map_err(|e| eprintln!("the default pack does not compile: {e}")).ok()
}

fn policy(c: &mut Criterion) {
    let Some(rules) = default_pack() else { return };
    let scanner = Scanner::new(Arc::new(rules));
    let inputs = [
        ("default_pack/1KiB_ascii", repeat_to(ASCII, 1024)),
        ("default_pack/1KiB_mixed_unicode", repeat_to(MIXED, 1024)),
        ("default_pack/64KiB_ascii", repeat_to(ASCII, 64 * 1024)),
        ("default_pack/64KiB_one_char", "a".repeat(64 * 1024)),
        ("default_pack/64KiB_nested", format!("{}{}", "{\"a\": [(".repeat(4096), ")]}".repeat(4096))),
    ];
    for (name, text) in &inputs {
        c.bench_function(name, |b| {
            b.iter(|| scanner.judge(black_box(text), Stage::Sending, 2, NOW));
        });
    }
}

/// The stages of one decision on 64 KiB, to see where its time goes: sanitizing, folding,
/// and each pattern set of the pack on the text its rule tests.
fn stages(c: &mut Criterion) {
    let Some(rules) = default_pack() else { return };
    let text = repeat_to(ASCII, 64 * 1024);
    let body = agentfw_core::fence::sanitize(&text).into_owned();
    let folded = agentfw_core::normalize::fold(&body);
    let mut group = c.benchmark_group("stages/64KiB_ascii");
    group.bench_function("sanitize", |b| b.iter(|| agentfw_core::fence::sanitize(black_box(&text)).len()));
    group.bench_function("fold", |b| b.iter(|| agentfw_core::normalize::fold(black_box(&body))));
    for (set, subject) in [
        ("private-keys", &body),
        ("provider-tokens", &body),
        ("generic-credentials", &body),
        ("forwarded-commands", &folded),
        ("injections", &folded),
    ] {
        if let Some(patterns) = rules.patterns().get(set) {
            group.bench_function(set, |b| b.iter(|| patterns.find(black_box(subject)).is_some()));
        }
    }
    group.finish();
}

/// The corpus files, one JSON object with a `text` per line.
const BENIGN: &str = include_str!("../../agentfw-core/corpus/benign.jsonl");
const CORPUS: &[&str] = &[
    BENIGN,
    include_str!("../../agentfw-core/corpus/provider-tokens.jsonl"),
    include_str!("../../agentfw-core/corpus/private-keys.jsonl"),
    include_str!("../../agentfw-core/corpus/generic-credentials.jsonl"),
    include_str!("../../agentfw-core/corpus/forwarded-commands.jsonl"),
    include_str!("../../agentfw-core/corpus/injections.jsonl"),
];

/// `lines` lines taken from `files` in turn, from the start again when they run out.
fn jsonl_input(files: &[&str], lines: usize) -> String {
    let all: Vec<&str> = files.iter().flat_map(|f| f.lines()).filter(|l| !l.trim().is_empty()).collect();
    let mut out = String::new();
    for line in all.iter().cycle().take(lines) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn scan_jsonl(c: &mut Criterion) {
    let Some(rules) = default_pack() else { return };
    let scanner = Scanner::new(Arc::new(rules));
    const LINES: usize = 10_000;
    let mut group = c.benchmark_group("scan_jsonl");
    group.throughput(Throughput::Elements(LINES as u64)).sample_size(20);
    for (name, input) in [("corpus", jsonl_input(CORPUS, LINES)), ("benign", jsonl_input(&[BENIGN], LINES))] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut out = Vec::with_capacity(LINES * 64);
                agentfw_mcp::scan::jsonl(&scanner, Stage::Sending, 1, NOW, black_box(input.as_bytes()), &mut out)
                    .map(|_| out.len())
            });
        });
    }
    group.finish();
}

criterion_group!(benches, policy, stages, scan_jsonl);
criterion_main!(benches);
