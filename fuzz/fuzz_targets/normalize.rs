//! Folding arbitrary text: nothing panics, folding is idempotent, and folded text has no
//! invisible characters, controls other than line feeds, or runs of whitespace.
//!
//! `scripts/fuzz 60 normalize`

#![no_main]

use agentfw_core::normalize::{fold, is_invisible};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let once = fold(text);
    assert_eq!(fold(&once), once, "fold is not idempotent on {text:?}");
    assert!(!once.chars().any(|c| is_invisible(c) || (c.is_control() && c != '\n')));
    assert!(!once.contains("  ") && !once.contains("\n\n") && !once.contains(" \n"));
});
