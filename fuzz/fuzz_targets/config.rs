//! The daemon's inputs from files and clients: `config.toml` and request lines on its
//! socket. Invariants: nothing panics; a bad request gets an error body with a stable code
//! and a message, and the id it carried when it had one.
//!
//! `scripts/fuzz 60 config`

#![no_main]

use agentfw_mcp::config::DaemonConfig;
use agentfw_mcp::proto::parse_request;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    match parse_request(bytes) {
        Ok(_) => {}
        Err((_, body)) => assert!(!body.code.is_empty() && !body.message.is_empty(), "an error without code or message"),
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        if let Err(problem) = DaemonConfig::parse(text) {
            assert!(!problem.is_empty());
        }
    }
});
