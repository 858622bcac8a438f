//! Memory per remembered message, and per session at the ledger's caps, is bounded and
//! stated: these tests count the bytes the provenance ledger allocates
//! (`cargo test -p agentfw-core --test memory -- --nocapture` prints the figures).

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// A counting allocator needs `unsafe impl GlobalAlloc`; it only forwards to the system one.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use agentfw_core::fingerprint::{MAX_LINES, SKETCH};
use agentfw_core::message::Agent;
use agentfw_core::normalize::fold;
use agentfw_core::provenance::{Ledger, LedgerConfig, Provenance, Text};
use agentfw_core::spans::{SpanIndex, winnow};
use agentfw_core::time::Timestamp;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes held per remembered message, for messages shaped by `text(i)`.
fn bytes_per_message(text: impl Fn(usize) -> String) -> isize {
    const N: usize = 10_000;
    let (web, api) = (Agent::new("claude:web:1:1", "claude", "web"), Agent::new("codex:api:2:2", "codex", "api"));
    let provenance = Provenance::first_hop(web.hop(), api.hop());
    let config = LedgerConfig { window: Duration::from_secs(3600), per_session: N, ..LedgerConfig::default() };
    let mut ledger = Ledger::new(config);
    let before = LIVE.load(Ordering::Relaxed);
    for i in 0..N {
        let t = Text::new(&fold(&text(i)), &[]);
        ledger.record(Timestamp::from_millis(0), &api.key(""), t, provenance.clone(), Vec::new());
    }
    let after = LIVE.load(Ordering::Relaxed);
    assert_eq!(ledger.len(), N);
    (after - before) / N as isize
}

/// One test, so that nothing else allocates while the counter is read.
#[test]
fn ledger_memory_is_bounded() {
    a_remembered_message_costs_a_few_kibibytes_at_most();
    a_session_at_the_ledgers_caps_holds_a_bounded_amount();
}

fn a_remembered_message_costs_a_few_kibibytes_at_most() {
    // A typical message: a few long lines.
    let typical = bytes_per_message(|i| {
        format!(
            "Message {i}: the deploy of shard {} finished, p99 latency is {} ms after the change.\nPlease review PR #{} before {} o'clock and rerun the integration suite on staging.",
            i * 7,
            i % 500,
            i * 3,
            i % 24
        )
    });
    // The worst case for the whole-text memory: as many distinct long lines as are ever
    // kept, and a full sketch.
    let worst = bytes_per_message(|i| {
        (0..MAX_LINES + 8)
            .map(|l| format!("line {l} of message {i} is long enough to be fingerprinted on its own\n"))
            .collect()
    });
    println!("bytes per remembered message: typical {typical}, worst {worst} (lines ≤ {MAX_LINES}, sketch {SKETCH})");
    assert!(typical <= 2048, "typical message costs {typical} bytes");
    assert!(worst <= 4096, "worst-case message costs {worst} bytes");
}

/// Bytes of `n` deliveries of about 7 KiB, every tenth kept whole, in a span index with
/// the ledger's default caps: the marks part of a session at its cap.
fn span_index_at_its_cap() -> isize {
    let config = LedgerConfig::default();
    let before = LIVE.load(Ordering::Relaxed);
    let mut index = SpanIndex::new(config.window, config.span_marks, config.kept_bytes);
    for i in 0..300 {
        let text = fold(&big_delivery(i));
        index.insert(Timestamp::from_millis(0), &winnow(&text), (i % 10 == 0).then_some(text.as_str()), i);
    }
    assert!(index.marks() <= config.span_marks + config.span_marks / 2);
    LIVE.load(Ordering::Relaxed) - before
}

fn big_delivery(i: usize) -> String {
    (0..100)
        .map(|l| format!("delivery {i} line {l}: the shard {} migrated in {} ms on tenant {}\n", i * l, i + l, i ^ l))
        .collect()
}

/// One receiving session at every cap of the ledger: big deliveries until its marks and
/// kept bytes are full, then small ones until its whole-text memory is full too.
fn a_session_at_the_ledgers_caps_holds_a_bounded_amount() {
    let index = span_index_at_its_cap();
    let (web, api) = (Agent::new("claude:web:1:1", "claude", "web"), Agent::new("codex:api:2:2", "codex", "api"));
    let config = LedgerConfig::default();
    let provenance = Provenance::first_hop(web.hop(), api.hop());
    let before = LIVE.load(Ordering::Relaxed);
    let mut ledger = Ledger::new(config.clone());
    let now = Timestamp::from_millis(0);
    for i in 0..300 {
        let refused = if i % 10 == 0 { vec!["deny-forwarded-commands".to_owned()] } else { Vec::new() };
        ledger.record(now, &api.key(""), Text::new(&fold(&big_delivery(i)), &[]), provenance.clone(), refused);
    }
    for i in 0..config.per_session {
        let text = format!("short delivery {i} with a line of its own");
        ledger.record(now, &api.key(""), Text::new(&fold(&text), &[]), provenance.clone(), Vec::new());
    }
    let total = LIVE.load(Ordering::Relaxed) - before;
    println!(
        "span index at its cap ({} marks, {} KiB kept): {} KiB; one session at every cap (and {} deliveries): {} KiB",
        config.span_marks,
        config.kept_bytes / 1024,
        index / 1024,
        config.per_session,
        total / 1024
    );
    assert!(index <= 2 * 1024 * 1024, "{index} bytes");
    assert!(total <= 12 * 1024 * 1024, "{total} bytes");
}
