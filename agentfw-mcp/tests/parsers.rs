//! What reaches the daemon and `agentfw mcp` from outside, fed random and half-valid input
//! with a fixed seed (the `config` and `mcp` fuzz targets explore the same for longer):
//! request lines and `config.toml` never panic and bad ones get a clear error; an MCP
//! session survives any lines a client sends and still answers.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "support/refusing_daemon.rs"]
mod refusing_daemon;

use agentfw_mcp::config::DaemonConfig;
use agentfw_mcp::proto::parse_request;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, rng_seed: RngSeed::Fixed(0x0061_6765_6e74_6677), ..ProptestConfig::default() }
}

/// JSON-RPC and daemon-protocol lines: valid, nearly valid, and noise.
fn line() -> impl Strategy<Value = String> {
    let method = prop::sample::select(vec![
        "tools/call",
        "tools/list",
        "ping",
        "initialize",
        "resources/list",
        "prompts/get",
        "nope",
        "",
    ]);
    let tool = prop::sample::select(vec!["send_message", "check_inbox", "list_team", "rm -rf", ""]);
    let args = prop::sample::select(vec![
        r#"{"to":"api (codex)","text":"hello"}"#,
        r#"{"to":"x","text":"hi","from":"admin (user)"}"#,
        r#"{"text":7}"#,
        r#"{}"#,
        r#"null"#,
        r#"[1]"#,
        r#"{"to":"","text":"","reply_to":"01J"}"#,
    ]);
    let id = prop::sample::select(vec!["1", "\"a\"", "null", "-1", "1e99", "{}", "18446744073709551616"]);
    prop_oneof![
        (id.clone(), method.clone(), tool, args).prop_map(|(id, m, t, a)| format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{m}","params":{{"name":"{t}","arguments":{a}}}}}"#
        )),
        (id.clone(), method).prop_map(|(id, m)| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{m}"}}"#)),
        id.prop_map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)),
        "[ -~]{0,40}",
        "(?s).{0,40}",
    ]
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn daemon_requests_parse_or_say_why(text in line(), v in 0..3u32, op in "[a-z_]{0,12}") {
        for candidate in [text.clone(), format!(r#"{{"v":{v},"id":5,"op":"{op}","args":{text}}}"#)] {
            if let Err((_, body)) = parse_request(candidate.as_bytes()) {
                prop_assert!(!body.code.is_empty() && !body.message.is_empty());
            }
        }
    }

    #[test]
    fn config_files_parse_or_say_why(
        sections in prop::collection::vec(
            (prop::sample::select(vec!["identity", "firewall", "firewall.limits", "wake", "storage", "audit", "admin", "x"]),
             "[a-z_]{1,10}", prop::sample::select(vec!["1", "-1", "\"off\"", "true", "[]", "{}", "1.5", "\"\""])),
            0..6)
    ) {
        let text: String = sections.iter().map(|(s, k, v)| format!("[{s}]\n{k} = {v}\n")).collect();
        if let Err(problem) = DaemonConfig::parse(&text) {
            prop_assert!(!problem.is_empty());
        }
    }
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn an_mcp_session_survives_any_client_lines(lines in prop::collection::vec(line(), 1..6)) {
        let dir = tempfile::tempdir().unwrap();
        let home = refusing_daemon::start(dir.path());
        let (answered, output) = refusing_daemon::session_survives(&home, lines.join("\n").as_bytes());
        prop_assert!(answered, "no answer to a ping after {:?}; the server wrote:\n{}", lines, output);
    }
}

/// A session ends as soon as the client closes its input, its answers all written: nothing
/// waits out the one-second grace the writer is given (it did, after every session).
/// Tokio's clock is paused, so any wait shows as virtual time, however loaded the machine.
#[tokio::test(start_paused = true)]
async fn an_mcp_session_ends_when_the_client_closes_its_input() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let home = refusing_daemon::start(dir.path());
    let (mut client, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, mut from_server) = tokio::io::duplex(1 << 16);
    let session = tokio::spawn(agentfw_mcp::mcp::serve_on(home, server_in, server_out));
    client.write_all(refusing_daemon::HANDSHAKE.as_bytes()).await.unwrap();
    client.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n").await.unwrap();
    let mut written = Vec::new();
    while !String::from_utf8_lossy(&written).contains("\"id\":9") {
        let mut chunk = [0; 4096];
        let n = from_server.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the session closed before answering: {}", String::from_utf8_lossy(&written));
        written.extend_from_slice(&chunk[..n]);
    }
    drop(client);
    let closed = tokio::time::Instant::now();
    session.await.unwrap();
    let took = closed.elapsed();
    assert!(took < std::time::Duration::from_millis(100), "the session took {took:?} to end after its input closed");
    from_server.read_to_end(&mut written).await.unwrap();
}
