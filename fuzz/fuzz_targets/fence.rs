//! Fencing arbitrary bodies from arbitrary senders: a reader always finds exactly the
//! sanitized body between the two marker lines and exactly the trailer after them.
//!
//! `scripts/fuzz 60 fence`

#![no_main]

use agentfw_core::fence::{TRAILER, fence, sanitize};
use agentfw_core::message::MessageId;
use agentfw_core::time::Timestamp;
use libfuzzer_sys::fuzz_target;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fuzz_target!(|input: (u64, &str, &str)| {
    let (seed, from, body) = input;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let id = MessageId::generate(Timestamp::from_millis(1_796_047_500_000), &mut rng);
    let fenced = fence(from, id, body, &mut rng);
    let marker = format!("«{}»", fenced.marker);
    let lines: Vec<&str> = fenced.text.split('\n').collect();
    assert_eq!(lines.get(1), Some(&marker.as_str()));
    let close = lines.iter().skip(2).position(|l| *l == marker).map(|p| p + 2).expect("closing marker");
    assert_eq!(lines[2..close].join("\n"), sanitize(body));
    assert_eq!(lines[close + 1..].join("\n"), TRAILER);
});
