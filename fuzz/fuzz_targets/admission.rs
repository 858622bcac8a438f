//! What admission reads from outside: the JSON inventory, scanner reports, each harness's
//! config files (JSON with comments, TOML) and thresholds as people type them. Invariants:
//! nothing panics; every error says which file or field it is about.
//!
//! `scripts/fuzz 60 admission`

#![no_main]

use agentfw_core::admission::{HarnessFile, Inventory, Score, configured_servers, import_cisco_mcp_scanner};
use libfuzzer_sys::fuzz_target;

const FILES: [HarnessFile; 5] = [
    HarnessFile::ClaudeUser,
    HarnessFile::ClaudeProject,
    HarnessFile::CodexConfig,
    HarnessFile::CursorMcp,
    HarnessFile::GeminiSettings,
];

fuzz_target!(|bytes: &[u8]| {
    let Some((&selector, rest)) = bytes.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    match selector % 4 {
        0 => {
            if let Err(e) = Inventory::from_json(text) {
                assert!(e.to_string().contains("inventory"), "an inventory error that does not say so: {e}");
            }
        }
        1 => {
            let _ = import_cisco_mcp_scanner(text, (selector & 0x10 != 0).then_some("server"));
        }
        2 => {
            let file = FILES[usize::from(selector / 4) % FILES.len()];
            match configured_servers(file, text, Some("/project")) {
                Ok(servers) => assert!(servers.windows(2).all(|w| w[0] < w[1]), "servers not sorted and unique"),
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }
        _ => {
            let _ = Score::parse_threshold(text);
        }
    }
});
