//! Golden rule tests as data: every `cases:` file in `agentfw-core/rules/tests/` runs
//! against the default pack, one runner for all (the same one `agentfw rules test` uses).

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;

use agentfw_core::policy::{RuleSet, Scanner, SourceFile, cases};
use agentfw_core::time::Timestamp;

#[test]
fn golden_cases_pass_on_the_default_pack() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/rules/tests");
    let mut files: Vec<_> =
        std::fs::read_dir(dir).expect("the cases directory").filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    let scanner = Scanner::new(Arc::new(RuleSet::default_pack().expect("the default pack compiles")));
    let mut failures = Vec::new();
    let mut total = 0;
    for path in files.iter().filter(|p| p.extension().is_some_and(|x| x == "yaml")) {
        let text = std::fs::read_to_string(path).expect("a readable cases file");
        let file = SourceFile::new(path.display().to_string(), text);
        let list = cases::read(&file).unwrap_or_else(|e| panic!("{e}"));
        for result in cases::run(&scanner, &list, Timestamp::from_millis(1_700_000_000_000)) {
            total += 1;
            if !result.passed() {
                failures.push(format!(
                    "{}:{} {}: want {:?} {:?}, got {:?}",
                    result.case.file,
                    result.case.line,
                    result.case.note,
                    result.case.want,
                    result.case.rule,
                    result.got
                ));
            }
        }
    }
    assert!(total > 0, "no cases found in {dir}");
    assert!(failures.is_empty(), "{} of {total} cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// Every rule of the default pack has at least one case that it must refuse, and the
/// cases as a whole include text that must pass.
#[test]
fn every_default_rule_has_a_positive_case() {
    let text = include_str!("../rules/tests/default-pack.yaml");
    let list = cases::read(&SourceFile::new("default-pack.yaml", text)).expect("the cases parse");
    let set = RuleSet::default_pack().expect("the default pack compiles");
    for rule in set.rules() {
        assert!(
            list.iter().any(|c| c.rule.as_deref() == Some(rule.id.as_str())),
            "no case names rule `{}` as the one that must refuse",
            rule.id
        );
    }
    assert!(list.iter().filter(|c| c.want == agentfw_core::policy::Verdict::Allow).count() >= 5);
}
