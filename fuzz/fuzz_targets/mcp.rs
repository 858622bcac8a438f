//! JSON-RPC from an MCP client into `agentfw mcp`, after a normal handshake, with a daemon
//! on the other side that refuses everything. Invariants: nothing panics, and the session
//! survives whatever the client sent: a `ping` sent after the fuzzed lines is answered.
//!
//! `scripts/fuzz 60 mcp`

#![no_main]

use std::sync::OnceLock;

use agentfw_mcp::home::Home;
use libfuzzer_sys::fuzz_target;

#[path = "../../agentfw-mcp/tests/support/refusing_daemon.rs"]
mod refusing_daemon;

fn home() -> &'static Home {
    static HOME: OnceLock<Home> = OnceLock::new();
    HOME.get_or_init(|| refusing_daemon::start(&std::env::temp_dir().join(format!("agentfw-fuzz-mcp-{}", std::process::id()))))
}

fuzz_target!(|bytes: &[u8]| {
    let (answered, output) = refusing_daemon::session_survives(home(), bytes);
    assert!(answered, "the session did not answer a ping after the fuzzed input; it wrote:\n{output}");
});
