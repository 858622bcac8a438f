//! Random data shaped like secrets is never refused: base64 (wrapped, on one line, URL-safe,
//! 48 KB), hex, UUIDs, hashes in manifests, public keys and certificates. A token pattern
//! whose prefix has no boundary fires on such data sooner or later (`cio` followed by 32
//! letters turns up in any large base64 blob); these tests generate enough of each kind,
//! from a fixed seed, that such a pattern is caught here rather than by a user.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;

use agentfw_core::policy::{RuleSet, RuleVerdict, Scanner, Stage};
use agentfw_core::time::Timestamp;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

struct Data(ChaCha20Rng);

impl Data {
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        self.0.fill_bytes(&mut b);
        b
    }
    fn b64(&mut self, n: usize) -> String {
        STANDARD.encode(self.bytes(n))
    }
    fn hex(&mut self, n: usize) -> String {
        self.bytes(n).iter().map(|b| format!("{b:02x}")).collect()
    }
    fn uuid(&mut self) -> String {
        let h = self.hex(16);
        format!("{}-{}-4{}-a{}-{}", &h[..8], &h[8..12], &h[13..16], &h[17..20], &h[20..32])
    }
}

fn wrap(text: &str, width: usize) -> String {
    text.as_bytes().chunks(width).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join("\n")
}

fn pem(label: &str, body: &str) -> String {
    format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", wrap(body, 64))
}

/// Every kind of look-alike, `rounds` of each.
fn lookalikes(seed: u64, rounds: usize) -> Vec<(&'static str, String)> {
    let mut d = Data(ChaCha20Rng::seed_from_u64(seed));
    let mut out = Vec::new();
    for _ in 0..rounds {
        let n = 300 + usize::from(d.bytes(1)[0]) * 8;
        out.push(("base64 wrapped at 76", wrap(&d.b64(n), 76)));
        out.push(("base64 on one line", d.b64(n)));
        out.push(("base64url", URL_SAFE_NO_PAD.encode(d.bytes(n))));
        out.push(("base64 in JSON", format!("{{\"attachment\": \"{}\", \"name\": \"report.pdf\"}}", d.b64(n))));
        let len = 16 + usize::from(d.bytes(1)[0]);
        out.push(("hex", d.hex(len)));
        out.push(("hex manifest", (0..8).map(|i| format!("{}  dist/pkg-{i}.tar.gz\n", d.hex(32))).collect()));
        out.push(("sha1 log", (0..4).map(|i| format!("commit {}\n\n    change {i}\n", d.hex(20))).collect()));
        out.push(("uuids", (0..12).map(|_| d.uuid()).collect::<Vec<_>>().join("\n")));
        out.push(("subresource integrity", format!("\"integrity\": \"sha512-{}\"", d.b64(64))));
        let mut ed = b"\0\0\0\x0bssh-ed25519\0\0\0\x20".to_vec();
        ed.extend(d.bytes(32));
        out.push(("ssh-ed25519 public key", format!("ssh-ed25519 {} deploy@ci", STANDARD.encode(ed))));
        let mut rsa = b"\0\0\0\x07ssh-rsa\0\0\0\x03\x01\0\x01\0\0\x01\x01\0".to_vec();
        rsa.extend(d.bytes(256));
        out.push(("ssh-rsa public key", format!("ssh-rsa {} dev@laptop", STANDARD.encode(rsa))));
        let spki = format!("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{}IDAQAB", d.b64(255));
        out.push(("SPKI public key", pem("PUBLIC KEY", &spki)));
        let ec = format!("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE{}", d.b64(63));
        out.push(("EC public key", pem("PUBLIC KEY", &ec)));
        let cert = format!("MIIDdzCCAl+gAwIBAgIUB{}", d.b64(850));
        out.push(("certificate", pem("CERTIFICATE", &cert)));
        out.push(("certificate request", pem("CERTIFICATE REQUEST", &format!("MIICijCCAXICAQAw{}", d.b64(600)))));
    }
    out
}

fn judge(scanner: &Scanner, text: &str, hops: u32) -> RuleVerdict {
    scanner.judge(text, Stage::Sending, hops, Timestamp::from_millis(1_700_000_000_000))
}

#[test]
fn random_data_shaped_like_secrets_is_never_refused() {
    let scanner = Scanner::new(Arc::new(RuleSet::default_pack().expect("the default pack compiles")));
    let mut refused = Vec::new();
    for (kind, text) in lookalikes(18, 40) {
        for hops in [1, 2] {
            if let RuleVerdict::Deny { rule, reason } = judge(&scanner, &text, hops) {
                refused.push(format!("{kind} at hops {hops}: {rule}: {reason}\n  {}", &text[..text.len().min(200)]));
            }
        }
    }
    assert!(refused.is_empty(), "{} refused:\n{}", refused.len(), refused.join("\n"));
}

/// The blob of the original report: 48 KB of base64 refused as a crates.io token. In
/// base64, `+` and `/` are word boundaries, so `cio` and 32 letters or digits between two
/// of them (about one blob in a few hundred has such a run; here one is placed in each)
/// satisfied the old pattern `\bcio[A-Za-z0-9]{32}\b`. Its boundary is now "not a base64
/// character", and the blob passes, wrapped or on one line; a real token still does not.
#[test]
fn a_48_kb_base64_blob_is_not_a_crates_io_token() {
    let scanner = Scanner::new(Arc::new(RuleSet::default_pack().expect("the default pack compiles")));
    let mut d = Data(ChaCha20Rng::seed_from_u64(48));
    let old = regex::Regex::new(r"(?-u:\b)cio[A-Za-z0-9]{32}(?-u:\b)").unwrap();
    for _ in 0..3 {
        let blob = d.b64(36 * 1024);
        let at = 4 * (usize::from(d.bytes(1)[0]) * 40);
        let run = format!("/cio{}+", &d.hex(16));
        let blob = format!("{}{run}{}", &blob[..at], &blob[at + run.len()..]);
        assert!(old.is_match(&blob), "the blob exercises the old pattern");
        for text in [blob.clone(), wrap(&blob, 76)] {
            assert_eq!(judge(&scanner, &text, 1), RuleVerdict::Allow, "{}", &text[at.saturating_sub(20)..at + 60]);
        }
    }
    let token = format!("CARGO_REGISTRY_TOKEN=cio{}", "k3J9x2M7q8W1e5R4t6Y0u2I9aZ7bX4cV");
    assert!(judge(&scanner, &token, 1).is_deny(), "{token}");
}
