//! Bad input at the firewall's edge gets a clear refusal or error, never a panic.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use agentfw_core::fence::sanitize;
use agentfw_core::firewall::{Config, Firewall, Input, MessageError, Outgoing, Output};
use agentfw_core::message::{Agent, MessageId};
use agentfw_core::time::Timestamp;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn agents() -> (Agent, Agent) {
    (Agent::new("claude:web:1:1", "claude", "web"), Agent::new("codex:api:2:2", "codex", "api"))
}

fn send(body: &str) -> Output {
    let (from, to) = agents();
    let mut fw = Firewall::new(Config::default());
    let out = Outgoing { from, to, body: body.to_owned(), reply_to: None };
    fw.handle(Timestamp::from_millis(1), &mut ChaCha20Rng::seed_from_u64(0), Input::Send(out))
}

fn refusal_code(out: &Output) -> &str {
    match out {
        Output::Refused(r) => r.reason.code.as_str(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn empty_and_invisible_only_messages_are_refused() {
    for body in ["", "   \n\t", "\u{200B}\u{202E}\u{FEFF}", "\0\0"] {
        let out = send(body);
        assert_eq!(refusal_code(&out), "message.empty", "{body:?}");
    }
}

#[test]
fn ten_mebibytes_are_refused_with_the_size_and_the_limit() {
    let out = send(&"a".repeat(10 * 1024 * 1024));
    assert_eq!(refusal_code(&out), "message.too_large");
    let Output::Refused(r) = out else { unreachable!() };
    assert_eq!(
        r.message(),
        "refused: the message is 10485760 bytes, over the limit of 65536 bytes; send a shorter summary or share a file path instead"
    );
    assert!(matches!(send(&"a".repeat(64 * 1024)), Output::Accepted { .. }), "the limit itself is allowed");
}

#[test]
fn invalid_utf8_is_refused_at_the_boundary_with_its_offset() {
    let (from, to) = agents();
    let err = Outgoing::from_bytes(from.clone(), to.clone(), b"caf\xc3(", None).unwrap_err();
    assert_eq!(err, MessageError::InvalidUtf8 { offset: 3 });
    assert_eq!(
        err.to_string(),
        "message text is not valid UTF-8 (first bad byte at offset 3); send text, not binary data"
    );
    assert!(Outgoing::from_bytes(from, to, "café".as_bytes(), None).is_ok());
}

#[test]
fn nul_and_bidi_characters_never_reach_the_reader() {
    let (from, to) = agents();
    let mut fw = Firewall::new(Config::default());
    let mut rng = ChaCha20Rng::seed_from_u64(0);
    // "Approve" shown, "reject" hidden by a right-to-left override and an isolate.
    let body = "Approve\0 the PR\u{202E}tcejer\u{2066} now\u{2069}";
    let out = Outgoing { from, to, body: body.to_owned(), reply_to: None };
    let Output::Accepted { message, .. } = fw.handle(Timestamp::from_millis(1), &mut rng, Input::Send(out)) else {
        panic!("accepted")
    };
    assert_eq!(message.body, "Approve the PRtcejer now");
    let Output::Delivered { delivery, .. } = fw.handle(Timestamp::from_millis(2), &mut rng, Input::Deliver(message))
    else {
        panic!("delivered")
    };
    assert!(!delivery.fenced.text.contains(['\0', '\u{202E}', '\u{2066}', '\u{2069}']));
    assert_eq!(sanitize(body), "Approve the PRtcejer now");
}

#[test]
fn malformed_ids_and_snapshots_are_errors_not_panics() {
    let err = "not-a-ulid".parse::<MessageId>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "`not-a-ulid` is not a message id: expected 26 characters of Crockford base32 (a ULID)"
    );
    assert!(serde_json::from_str::<agentfw_core::firewall::State>("{\"config\": 3}").is_err());
}
