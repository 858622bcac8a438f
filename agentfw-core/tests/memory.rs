//! Memory per remembered message is bounded, and stated: this test counts the bytes the
//! provenance ledger allocates for 10,000 remembered messages.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// A counting allocator needs `unsafe impl GlobalAlloc`; it only forwards to the system one.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use agentfw_core::fingerprint::{Fingerprints, MAX_LINES, SKETCH};
use agentfw_core::message::Agent;
use agentfw_core::normalize::fold;
use agentfw_core::provenance::{Ledger, LedgerConfig, Provenance};
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
    let prints: Vec<Fingerprints> = (0..N).map(|i| Fingerprints::of(&fold(&text(i)))).collect();
    let provenance = Provenance::first_hop(web.hop(), api.hop());
    let mut ledger = Ledger::new(LedgerConfig { window: Duration::from_secs(3600), per_session: N });
    let before = LIVE.load(Ordering::Relaxed);
    for p in prints {
        ledger.record(Timestamp::from_millis(0), &api.id, p, provenance.clone());
    }
    let after = LIVE.load(Ordering::Relaxed);
    assert_eq!(ledger.len(), N);
    (after - before) / N as isize
}

#[test]
fn a_remembered_message_costs_at_most_two_kibibytes() {
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
    // The worst case: as many distinct long lines as are ever kept, and a full sketch.
    let worst = bytes_per_message(|i| {
        (0..MAX_LINES + 8)
            .map(|l| format!("line {l} of message {i} is long enough to be fingerprinted on its own\n"))
            .collect()
    });
    println!("bytes per remembered message: typical {typical}, worst {worst} (lines ≤ {MAX_LINES}, sketch {SKETCH})");
    assert!(typical <= 1024, "typical message costs {typical} bytes");
    assert!(worst <= 2048, "worst-case message costs {worst} bytes");
}
