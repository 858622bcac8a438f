//! A stand-in daemon for driving `agentfw mcp` in memory: it listens on a home's socket
//! and answers every request with a refusal, so the MCP server's own handling of what a
//! client sends is exercised without a real daemon. Shared by the property tests and the
//! `mcp` fuzz target.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;

use agentfw_mcp::home::Home;
use agentfw_mcp::proto::{ErrorBody, Response, parse_request};

/// A home at `dir` whose socket is served by a daemon that refuses everything.
pub fn start(dir: &Path) -> Home {
    let home = Home::at(dir).expect("a home");
    let _ = std::fs::remove_file(&home.socket);
    let listener = UnixListener::bind(&home.socket).expect("the stand-in daemon's socket");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let Ok(mut writer) = stream.try_clone() else { return };
                for line in BufReader::new(stream).split(b'\n').map_while(Result::ok) {
                    let (Ok((id, _)) | Err((id, _))) = parse_request(&line);
                    let answer = Response::err(id, ErrorBody::new("refused", "refused by the stand-in daemon"));
                    let Ok(mut out) = serde_json::to_vec(&answer) else { return };
                    out.push(b'\n');
                    if writer.write_all(&out).is_err() {
                        return;
                    }
                }
            });
        }
    });
    home
}

/// The MCP handshake a client sends first.
pub const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
);

/// Feed `input` to a fresh MCP session on `home` after the handshake, then a ping: whether
/// the ping was answered (within 20 s), and everything the server wrote until then.
pub fn session_survives(home: &Home, input: &[u8]) -> (bool, String) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    const PROBE: &str = r#"{"jsonrpc":"2.0","id":"probe-7d1f","method":"ping"}"#;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let home = home.clone();
    runtime.block_on(async move {
        let (mut client, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, from_server) = tokio::io::duplex(1 << 16);
        let session = tokio::spawn(agentfw_mcp::mcp::serve_on(home, server_in, server_out));
        let mut lines = tokio::io::BufReader::new(from_server).lines();
        let writing = async {
            client.write_all(HANDSHAKE.as_bytes()).await?;
            client.write_all(input).await?;
            client.write_all(b"\n").await?;
            client.write_all(PROBE.as_bytes()).await?;
            client.write_all(b"\n").await
        };
        let mut seen = String::new();
        let reading = async {
            while let Ok(Some(line)) = lines.next_line().await {
                let answered = line.contains("\"probe-7d1f\"") && line.contains("\"result\"");
                seen.push_str(&line);
                seen.push('\n');
                if answered {
                    return true;
                }
            }
            false
        };
        // Written and read together, so the server's answers never back up while it is fed.
        let (written, answered) =
            tokio::join!(writing, tokio::time::timeout(std::time::Duration::from_secs(20), reading));
        let _ = client.shutdown().await;
        let _ = session.await;
        (written.is_ok() && answered.unwrap_or(false), seen)
    })
}
