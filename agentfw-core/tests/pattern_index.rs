//! The index of the default pack's regex shapes (`rules/patterns/shapes.index`) must be
//! what parsing the embedded pattern files gives: loading trusts it instead of parsing.
//! After changing a pattern file, write it again with
//! `AGENTFW_BLESS=1 cargo test -p agentfw-core --test pattern_index` and review the diff.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use agentfw_core::policy::{RuleSet, index};

#[allow(clippy::disallowed_methods)]
fn blessing() -> bool {
    std::env::var("AGENTFW_BLESS").is_ok_and(|v| v == "1")
}

#[test]
fn the_checked_in_index_is_what_the_pattern_files_give() {
    let rules = RuleSet::default_pack().expect("the default pack compiles");
    let rendered = index::render(rules.patterns());
    if blessing() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rules/patterns/shapes.index");
        std::fs::write(path, &rendered).unwrap();
        return;
    }
    if rendered != index::EMBEDDED {
        let first = rendered.lines().zip(index::EMBEDDED.lines()).position(|(a, b)| a != b);
        panic!(
            "rules/patterns/shapes.index is stale (first difference at line {}): write it again with \
             `AGENTFW_BLESS=1 cargo test -p agentfw-core --test pattern_index` and review the diff",
            first.map_or_else(|| "the end".to_owned(), |n| (n + 1).to_string())
        );
    }
}
