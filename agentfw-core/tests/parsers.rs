//! Every parser of outside input, fed random and half-valid input with a fixed seed (the
//! fuzz targets under `fuzz/` explore the same invariants for longer): nothing panics,
//! errors say where, whatever parses writes back unchanged, and rules that fail at run time
//! refuse.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;

use agentfw_core::admission::{HarnessFile, Inventory, Score, configured_servers, import_cisco_mcp_scanner};
use agentfw_core::policy::{RuleSet, RuleVerdict, Scanner, SourceFile, Sources, Stage};
use agentfw_core::seal::{DeviceKeys, PublicBundle, Rotation};
use agentfw_core::time::Timestamp;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, rng_seed: RngSeed::Fixed(0x0061_6765_6e74_6677), ..ProptestConfig::default() }
}

fn rules_from(name: &str, text: &str) -> Sources {
    Sources { rules: vec![SourceFile::new(name, text)], patterns: vec![], placeholders: vec![] }
}

/// Pieces of rule files, valid and not, so random sequences reach deep into the loader.
fn rule_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("id: r1".to_owned()),
        Just("on: message.sending".to_owned()),
        Just("on: [message.sending, message.delivering]".to_owned()),
        Just("verdict: deny".to_owned()),
        Just("verdict: allow".to_owned()),
        Just("reason: because".to_owned()),
        Just("when: message.hops >= 2".to_owned()),
        Just("when: message.folded.matches('a+b')".to_owned()),
        Just("when: message.body.matches_set('nope')".to_owned()),
        Just("when: |-".to_owned()),
        Just("  message.size > 3".to_owned()),
        Just("- id: listed".to_owned()),
        Just("priority: 3".to_owned()),
        "[a-z: \\[\\]{}'\"#|>-]{0,30}",
        "(?s).{0,20}",
    ]
}

/// CEL conditions from a small grammar over the rule variables: well typed, ill typed,
/// and ones that fail only at run time (division by zero, overflow, bad regexes).
fn cel_expr() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(vec![
        "message.hops",
        "message.size",
        "message.thread.turns",
        "message.body",
        "message.folded",
        "message.from.agent",
        "message.thread.id",
        "message.to.project",
        "message.path",
        "message.origin",
        "0",
        "1",
        "-1",
        "9223372036854775807",
        "2.5",
        "'curl'",
        "''",
        "true",
        "false",
        "null",
        "[1, 2]",
        "{'a': 1}",
        "nope",
    ])
    .prop_map(str::to_owned);
    leaf.prop_recursive(4, 24, 3, |inner| {
        let op = prop::sample::select(vec!["&&", "||", "==", "!=", ">=", "<", "+", "-", "*", "/", "%", "in"]);
        let method = prop::sample::select(vec!["contains", "startsWith", "endsWith", "matches"]);
        let pattern = prop::sample::select(vec!["'a+'", "'('", "'(?i)curl.*sh'", "'\\\\'", "''", "'[z-a]'"]);
        prop_oneof![
            (inner.clone(), op, inner.clone()).prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("!{a}")),
            inner.clone().prop_map(|a| format!("size({a})")),
            (inner.clone(), method, pattern).prop_map(|(a, m, p)| format!("{a}.{m}({p})")),
            (inner.clone(), inner.clone(), inner).prop_map(|(c, a, b)| format!("{c} ? {a} : {b}")),
        ]
    })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn rule_files_compile_or_say_where(edits in prop::collection::vec((any::<usize>(), 0..3u8, rule_line()), 0..4)) {
        // A valid rule with a few lines deleted, replaced or added: near misses reach the
        // checks a user's typo meets.
        let mut lines: Vec<String> =
            ["id: r1", "on: message.sending", "verdict: deny", "reason: because", "when: message.folded.matches('a+b')"]
                .map(str::to_owned)
                .to_vec();
        for (at, kind, line) in edits {
            let i = at % (lines.len() + 1);
            match kind {
                0 if i < lines.len() => drop(lines.remove(i)),
                1 if i < lines.len() => lines[i] = line,
                _ => lines.insert(i, line),
            }
        }
        let text = lines.join("\n");
        match RuleSet::compile(&rules_from("user.yaml", &text)) {
            Ok(rules) => {
                let scanner = Scanner::new(Arc::new(rules));
                for hops in [1, 3] {
                    if let RuleVerdict::Deny { rule, reason } =
                        scanner.judge("aab curl x | sh", Stage::Sending, hops, Timestamp::from_millis(0))
                    {
                        prop_assert!(!rule.is_empty() && !reason.is_empty());
                    }
                }
            }
            Err(e) => {
                let shown = e.to_string();
                prop_assert!(shown.contains("user.yaml"), "no file named in: {}", shown);
                prop_assert!(!e.diagnostics().is_empty());
            }
        }
    }

    #[test]
    fn cel_conditions_compile_or_fail_closed(expr in cel_expr()) {
        let text = format!(
            "id: c1\non: message.sending\nverdict: deny\nreason: refused\nwhen: |-\n  {}\n",
            expr.replace('\n', " ")
        );
        let Ok(rules) = RuleSet::compile(&rules_from("cel.yaml", &text)) else { return Ok(()) };
        let explained = Scanner::new(Arc::new(rules)).explain("hello", Stage::Sending, 2, Timestamp::from_millis(0));
        // A condition that could not be evaluated refuses, naming the rule (PR7).
        if explained.failed {
            prop_assert_eq!(explained.verdict.rule(), Some("c1"));
        }
    }

    #[test]
    fn key_files_read_back_what_they_wrote(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        if let Ok(keys) = DeviceKeys::from_key_file(&bytes) {
            prop_assert!(DeviceKeys::from_key_file(keys.to_key_file().as_bytes()).unwrap().public() == keys.public());
        }
        if let Ok(bundle) = PublicBundle::from_bytes(&bytes) {
            prop_assert!(PublicBundle::parse(&bundle.to_line()).unwrap() == bundle);
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(bundle) = PublicBundle::parse(&text) {
            prop_assert!(PublicBundle::parse(&bundle.to_line()).unwrap() == bundle);
        }
        if let Ok(rotation) = Rotation::parse(&text) {
            prop_assert!(Rotation::parse(&rotation.to_line()).unwrap() == rotation);
        }
    }

    #[test]
    fn mutated_key_files_never_panic(seed in any::<u64>(), edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let keys = DeviceKeys::generate(Timestamp::from_millis(1_796_047_500_000), &mut ChaCha20Rng::seed_from_u64(seed));
        let mut file = keys.to_key_file().as_bytes().to_vec();
        for (at, byte) in edits {
            let i = at % file.len();
            file[i] = byte;
        }
        if let Ok(read) = DeviceKeys::from_key_file(&file) {
            let again = DeviceKeys::from_key_file(read.to_key_file().as_bytes()).unwrap();
            prop_assert!(again.public() == read.public());
        }
        let line = keys.public().to_line();
        prop_assert!(PublicBundle::parse(&line).unwrap() == *keys.public());
    }

    #[test]
    fn admission_inputs_never_panic(text in "(?s).{0,300}", json in json_like()) {
        for input in [&text, &json] {
            if let Err(e) = Inventory::from_json(input) {
                prop_assert!(e.to_string().contains("inventory"));
            }
            let _ = import_cisco_mcp_scanner(input, Some("server"));
            let _ = Score::parse_threshold(input);
            for file in [HarnessFile::ClaudeUser, HarnessFile::ClaudeProject, HarnessFile::CodexConfig, HarnessFile::CursorMcp, HarnessFile::GeminiSettings] {
                match configured_servers(file, input, Some("/p")) {
                    Ok(servers) => prop_assert!(servers.windows(2).all(|w| w[0] < w[1])),
                    Err(e) => prop_assert!(!e.to_string().is_empty()),
                }
            }
        }
    }
}

/// JSON-ish text: objects and arrays with the keys the parsers look for.
fn json_like() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("7".to_owned()),
        Just("-1e400".to_owned()),
        Just("\"mcp:x\"".to_owned()),
        Just("\"\"".to_owned()),
        "\"[a-z:/ ]{0,10}\"",
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        let key = prop::sample::select(vec![
            "mcpServers",
            "projects",
            "/p",
            "agents",
            "components",
            "score",
            "id",
            "command",
            "enabled",
            "scan_results",
            "findings",
            "severity",
            "server_name",
            "mcp_servers",
            "x",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((key, inner), 0..4).prop_map(|kv| {
                let body: Vec<String> = kv.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                format!("{{{}}}", body.join(","))
            }),
        ]
    })
}
