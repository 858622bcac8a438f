//! The full default rule pack, one decision per iteration, normalization included: the text
//! is sanitized and folded as the firewall does, then judged at hops 2 so every rule runs
//! (the injection and command rules only look at forwarded text).
//!
//! - `default_pack/*`: developer chat and a few shapes of 1 and 64 KiB.
//! - `adversarial/*`: 64 KiB of each hard kind beside prose of the same size (PR9), many
//!   different texts of each kind judged in turn, so no cache learns one text; bytes per
//!   second, so kinds compare per byte.
//! - `compile/default_pack`: loading the pack, as every `agentfw scan` and daemon start does;
//!   the heap it holds (and holds after judging every kind) is printed before the timings.
//! - `scan_jsonl/*`: `agentfw scan --jsonl` in lines per second on the labelled corpus (every
//!   category, about a quarter of it secrets and attacks) and on its benign texts alone; and
//!   on the mixed corpus that `scripts/mixed-corpus` assembles from public packages, beside a
//!   floor program (parse JSON, sanitize and fold, blake3, one set of 22 patterns) through the
//!   same loop, on one thread and on every core. Without that corpus, those are skipped.
//!
//! `cargo bench -p agentfw-benches --bench policy`

#![allow(unsafe_code)] // the counting allocator below

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentfw_benches::adversarial::{self, Rng};
use agentfw_core::policy::{RuleSet, RuleVerdict, Scanner, Stage};
use agentfw_core::time::Timestamp;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// The system allocator, counting the bytes currently allocated, so the benchmark can say
/// how much heap the compiled pack holds.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only a counter is kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

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
    adversarial::cut(out, bytes)
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

/// Different texts of each kind judged in turn.
const VARIANTS: usize = 16;
const LONGEST: usize = 64 * 1024;

fn texts(kind: fn(&mut Rng, usize) -> String, bytes: usize) -> Vec<String> {
    (0..VARIANTS as u64).map(|seed| kind(&mut Rng::new(seed + 1), bytes)).collect()
}

fn adversarial(c: &mut Criterion) {
    let Some(rules) = default_pack() else { return };
    let scanner = Scanner::new(Arc::new(rules));
    let mut group = c.benchmark_group("adversarial");
    group.throughput(Throughput::Bytes(LONGEST as u64)).sample_size(20);
    for (name, kind) in adversarial::KINDS {
        let texts = texts(*kind, LONGEST);
        let mut next = texts.iter().cycle();
        group.bench_function(*name, |b| {
            b.iter(|| next.next().map(|text| scanner.judge(black_box(text), Stage::Sending, 2, NOW)));
        });
    }
    group.finish();
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

/// Loading the pack; and, printed once, the heap it holds when loaded and after it has
/// judged every kind of text (its caches grown).
fn compile(c: &mut Criterion) {
    let before = LIVE.load(Ordering::Relaxed);
    let Some(rules) = default_pack() else { return };
    let loaded = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    let scanner = Scanner::new(Arc::new(rules));
    for (_, kind) in adversarial::KINDS {
        for text in texts(*kind, LONGEST).iter().take(4) {
            let _ = scanner.judge(text, Stage::Sending, 2, NOW);
        }
    }
    let warm = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    eprintln!(
        "heap held by the default pack: {:.2} MiB loaded, {:.2} MiB after judging every kind",
        mib(loaded),
        mib(warm)
    );
    drop(scanner);
    let mut group = c.benchmark_group("compile");
    group.sample_size(10);
    group.bench_function("default_pack", |b| b.iter(|| RuleSet::default_pack().is_ok()));
    group.finish();
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
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

/// The floor's one set: common secret formats, a password and a token assignment, a
/// download piped to a shell and an instruction override.
const FLOOR_PATTERNS: &[&str] = &[
    r"(?-u:\b)(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b)",
    r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{36,}(?-u:\b)",
    r"(?-u:\b)github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}",
    r"(?-u:\b)glpat-[0-9A-Za-z_-]{20,}",
    r"(?-u:\b)xox[abposre]-[0-9A-Za-z-]{10,}",
    r"(?-u:\b)sk-[A-Za-z0-9_-]{20,}",
    r"(?-u:\b)sk_live_[0-9A-Za-z]{20,}",
    r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
    r"(?-u:\b)hf_[A-Za-z0-9]{30,40}",
    r"(?-u:\b)npm_[A-Za-z0-9]{36}",
    r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
    r"(?-u:\b)eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
    r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
    r"-----BEGIN[ A-Z]{0,32} PRIVATE KEY-----",
    r"hooks\.slack\.com/services/[A-Za-z0-9/]{20,}",
    r"(?i-u:password|passwd|pwd)\s*[:=]\s*\S{6,}",
    r"(?i-u:secret|api[_-]?key|token)\s*[:=]\s*[A-Za-z0-9_+/=-]{16,}",
    r"(?i-u:authorization):\s*(?i-u:bearer)\s+[A-Za-z0-9._~+/=-]{16,}",
    r"(?-u:\b)AGE-SECRET-KEY-1[0-9A-Z]{58}",
    r"(?-u:\b)dop_v1_[a-f0-9]{64}",
    r"curl[^|]*\|\s*(?:ba)?sh",
    r"ignore (?:all )?previous instructions",
];

/// The mixed corpus `scripts/mixed-corpus` writes, if it has been assembled.
fn mixed_corpus() -> Option<String> {
    let path = std::env::var_os("AGENTFW_MIXED_CORPUS").map_or_else(
        || std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/mixed-corpus/mixed.jsonl")),
        std::path::PathBuf::from,
    );
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) => {
            eprintln!("scan_jsonl/mixed skipped: {} ({e}); run scripts/mixed-corpus first", path.display());
            None
        }
    }
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

    let Some(mixed) = mixed_corpus() else { return };
    let Ok(floor_set) = regex::RegexSet::new(FLOOR_PATTERNS) else { return };
    let floor = |text: &str| {
        let body = agentfw_core::fence::sanitize(text);
        let folded = agentfw_core::normalize::fold(&body);
        black_box(blake3::hash(folded.as_bytes()));
        if floor_set.is_match(&body) {
            RuleVerdict::Deny { rule: "floor".to_owned(), reason: "floor".to_owned() }
        } else {
            RuleVerdict::Allow
        }
    };
    let engine = |text: &str| scanner.judge(text, Stage::Sending, 1, NOW);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut group = c.benchmark_group("scan_jsonl/mixed");
    group.throughput(Throughput::Bytes(mixed.len() as u64)).sample_size(10);
    for workers in [1, cores] {
        let threads = if workers == 1 { "1_thread".to_owned() } else { format!("{workers}_threads") };
        group.bench_function(format!("engine/{threads}"), |b| {
            b.iter(|| agentfw_mcp::scan::lines(&engine, workers, black_box(mixed.as_bytes()), std::io::sink()))
        });
        group.bench_function(format!("floor/{threads}"), |b| {
            b.iter(|| agentfw_mcp::scan::lines(&floor, workers, black_box(mixed.as_bytes()), std::io::sink()))
        });
    }
    group.finish();
}

criterion_group!(benches, compile, policy, adversarial, stages, scan_jsonl);
criterion_main!(benches);
