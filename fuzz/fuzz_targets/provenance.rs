//! Decoding and winnowing arbitrary text (PV4): nothing panics; decoded stretches are in
//! order, inside the text, never overlapping, and shorter than what they decode; every mark
//! lies inside the folded text on character boundaries; and a text copied whole into another
//! is found in it and read back from where it was kept.
//!
//! `scripts/fuzz 60 provenance`

#![no_main]

use agentfw_core::decode::{decode, decoded_view};
use agentfw_core::normalize::fold;
use agentfw_core::spans::{MIN_SPAN, SpanIndex, stretches, winnow};
use agentfw_core::time::Timestamp;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let decoded = decode(text);
    let mut end = 0;
    for d in &decoded {
        assert!(d.range.start >= end && d.range.end <= text.len() && d.range.start < d.range.end);
        assert!(d.text.len() <= d.range.len(), "decoding grew: {d:?}");
        end = d.range.end;
    }
    if let Some(view) = decoded_view(text, &decoded) {
        assert!(view.len() <= text.len());
    }

    let folded = fold(text);
    let marks = winnow(&folded);
    for m in &marks {
        assert!(folded.get(m.start as usize..m.end as usize).is_some(), "{m:?} in {folded:?}");
    }
    let long = folded.chars().filter(|c| !c.is_whitespace()).count() >= MIN_SPAN;
    let mut index = SpanIndex::new(core::time::Duration::from_secs(60), 10_000, 1 << 20);
    let now = Timestamp::from_millis(0);
    index.insert(now, &marks, Some(&folded), ());
    let outgoing = format!("note: {folded} end");
    let copies = index.copies(now, &winnow(&outgoing));
    if long {
        let copy = copies.first().expect("a copy of a long text is found");
        let ranges: Vec<_> = copy.hits.iter().filter_map(|(_, src)| src.clone()).collect();
        let read = stretches(copy.kept.unwrap_or(""), &ranges);
        assert!(!read.is_empty() && read.lines().all(|l| folded.contains(l)), "{read:?}");
    }
});
