//! Bounded everything (issue 15, attack 6, and what was found on the way): `agentfw mcp`
//! answers every bad line and keeps serving, and disconnects a client that stops reading;
//! the daemon caps its connections and what it buffers for each; erased text does not
//! linger in the database files; the pid file is owner-only whatever the umask.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::time::Duration;

use agentfw_mcp::home::Home;
use common::{BASE_CONFIG, World, agentfw_bin};
use serde_json::{Value, json};

#[test]
fn every_bad_line_gets_a_json_rpc_error_and_the_session_goes_on() {
    let w = World::new();
    let mut web = w.agent("claude", "web");
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_object = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{}}}"#,
        "{\"a\":".repeat(200) + "1" + &"}".repeat(200)
    );
    let cases: Vec<(Vec<u8>, i64)> = vec![
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}".to_vec(), -32700),
        (b"\xc3\x28 not even json".to_vec(), -32700),
        (deep.into_bytes(), -32600),
        (deep_object.into_bytes(), -32600),
        (b"[]".to_vec(), -32600),
        (b"42".to_vec(), -32600),
        (b"\"ping\"".to_vec(), -32600),
        (br#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#.to_vec(), -32600),
        (br#"{"id":3}"#.to_vec(), -32600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"".to_vec(), -32700),
    ];
    for (line, code) in cases {
        web.write_bytes(&line);
        let answer = web.read_line();
        assert_eq!(
            answer["error"]["code"],
            code,
            "for {:?}: {answer}",
            String::from_utf8_lossy(&line[..line.len().min(80)])
        );
        assert_eq!(answer["id"], Value::Null);
        let pong = web.request("ping", json!({}));
        assert!(pong.get("result").is_some(), "the session stopped answering: {pong}");
    }
}

/// A client that stops reading its output is disconnected once what waits for it passes
/// the bound, instead of being buffered for without limit.
#[test]
fn a_client_that_does_not_read_is_disconnected() {
    let w = World::new();
    let mut mcp = w
        .command(agentfw_bin())
        .arg("mcp")
        .current_dir(w.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = mcp.id();
    let mut stdin = mcp.stdin.take().unwrap();
    let _unread = mcp.stdout.take().unwrap();
    let mut err = mcp.stderr.take().unwrap();
    let writer = std::thread::spawn(move || {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let _ = writeln!(stdin, "{init}");
        let _ = writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#);
        for id in 1..60_000 {
            if writeln!(stdin, r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#).is_err() {
                return id;
            }
        }
        60_000
    });
    let mut peak_kib = 0u64;
    let status = loop {
        if let Some(status) = mcp.try_wait().unwrap() {
            break status;
        }
        let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("VmRSS:").map(|v| v.trim().trim_end_matches(" kB").parse::<u64>().unwrap_or(0))
                })
            })
            .unwrap_or(0);
        peak_kib = peak_kib.max(rss);
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = writer.join();
    let mut log = String::new();
    err.read_to_string(&mut log).unwrap();
    assert!(!status.success());
    assert!(log.contains("the client stopped reading"), "{log}");
    assert!(peak_kib < 120 * 1024, "agentfw mcp grew to {peak_kib} KiB");
}

fn socket(w: &World) -> std::path::PathBuf {
    Home::at(&w.home).unwrap().socket
}

/// A line from the daemon, if one comes within a moment.
fn line_from(stream: &mut UnixStream) -> Option<Value> {
    stream.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while stream.read(&mut byte).ok()? == 1 {
        if byte[0] == b'\n' {
            return serde_json::from_slice(&buf).ok();
        }
        buf.push(byte[0]);
    }
    None
}

#[test]
fn the_daemon_caps_connections_and_says_so() {
    let w = World::new();
    let _web = w.agent("claude", "web");
    let path = socket(&w);
    let mut held = Vec::new();
    let mut busy = None;
    for _ in 0..agentfw_mcp::daemon::MAX_CONNECTIONS + 8 {
        let mut s = UnixStream::connect(&path).unwrap();
        s.set_nonblocking(true).unwrap();
        let mut byte = [0u8; 1];
        std::thread::sleep(Duration::from_millis(5));
        match s.read(&mut byte) {
            Ok(1) => {
                s.set_nonblocking(false).unwrap();
                let mut rest = String::from(char::from(byte[0]));
                s.read_to_string(&mut rest).unwrap();
                busy = Some(rest);
                break;
            }
            _ => held.push(s),
        }
    }
    let busy = busy.expect("a connection over the cap is refused");
    assert!(busy.contains("daemon.busy") && busy.contains("the most it takes"), "{busy}");
    assert!(held.len() < agentfw_mcp::daemon::MAX_CONNECTIONS, "{} connections held", held.len());
    // Freed slots are taken again.
    held.clear();
    std::thread::sleep(Duration::from_millis(200));
    let out = w.agentfw(&["status", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
}

/// One process holding 70 idle connections (sending nothing) takes only its share of the
/// daemon: the others are refused `daemon.busy`, readably, and other agents still send.
#[test]
fn idle_connections_of_one_process_do_not_stop_the_others() {
    let w = World::new();
    let mut web = w.agent("claude", "web");
    let _api = w.agent("codex", "api");
    let path = socket(&w);
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..70 {
        let mut s = UnixStream::connect(&path).unwrap();
        match line_from(&mut s) {
            Some(answer) => {
                assert_eq!(answer["error"]["code"], "daemon.busy", "{answer}");
                refused += 1;
            }
            None => held.push(s),
        }
    }
    assert_eq!(held.len(), agentfw_mcp::daemon::MAX_PER_PEER, "{refused} refused");
    let sent = web.send("api (codex)", "the build is green");
    assert!(!sent.error, "{}", sent.text);
    let out = w.agentfw_as("codex", "api", &["send", "web (claude)", "thanks"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
}

#[test]
fn a_line_over_the_limit_is_refused_and_the_connection_closed() {
    let w = World::new();
    let _web = w.agent("claude", "web");
    let mut s = UnixStream::connect(socket(&w)).unwrap();
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..(agentfw_mcp::proto::MAX_REQUEST_BYTES / chunk.len() + 2) {
        if s.write_all(&chunk).is_err() {
            break;
        }
    }
    let answer = line_from(&mut s).expect("an answer");
    assert_eq!(answer["error"]["code"], "proto.too_large", "{answer}");
}

/// Delivered and refused text is gone from every database file once it is erased and the
/// next snapshot is taken (a refusal takes one at once; otherwise within 30 seconds, when the
/// journal entries that carried the same text go): from free pages (secure deletion) and
/// from the write-ahead log (truncated).
#[test]
fn erased_text_does_not_linger_in_the_database_files() {
    let w = World::new();
    let mut web = w.agent("claude", "web");
    let mut api = w.agent("codex", "api");
    let delivered = "the rollout codeword is marmalade-quokka-7731";
    let refused = format!("here is the key AKIA{}", "Q7ZP3W4XK2M9LBNV");
    assert!(!web.send("api (codex)", delivered).error);
    assert!(api.inbox().text.contains(delivered));
    // The next read tells the daemon the previous batch arrived: its text is erased.
    assert!(!api.inbox().text.contains(delivered));
    let r = web.send("api (codex)", &refused);
    assert!(r.error, "{}", r.text);
    let _ = web.team();
    let files: Vec<_> = std::fs::read_dir(&w.home)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("agentfw.db"))
        .collect();
    assert!(!files.is_empty(), "no database files in {}", w.home.display());
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        for secret in [delivered.as_bytes(), b"marmalade-quokka", b"Q7ZP3W4XK2M9LBNV"] {
            assert!(
                !bytes.windows(secret.len()).any(|win| win == secret),
                "`{}` lingers in {}",
                String::from_utf8_lossy(secret),
                file.display()
            );
        }
    }
}

#[test]
fn the_pid_file_is_owner_only_whatever_the_umask() {
    let w = World::with_config(BASE_CONFIG);
    // A stale pid file left world-readable by some earlier run.
    let pid_file = w.home.join("daemon.pid");
    std::fs::write(&pid_file, "1\n").unwrap();
    std::fs::set_permissions(&pid_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let line = format!(
        "umask 000; exec {} daemon --home {}",
        common::shell_quote(&agentfw_bin().display().to_string()),
        common::shell_quote(&w.home.display().to_string())
    );
    let mut daemon = w.command("sh").args(["-c", &line]).stderr(Stdio::null()).spawn().unwrap();
    let mut mode = 0;
    for _ in 0..500 {
        if std::fs::read_to_string(&pid_file).is_ok_and(|p| p.trim() == daemon.id().to_string()) {
            mode = std::fs::metadata(&pid_file).unwrap().permissions().mode() & 0o777;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    assert_eq!(mode, 0o600, "daemon.pid is {mode:o}");
}
