//! Sealed envelopes, device keys, rotation and revocation (TX2–TX5).

// Test helpers outside `#[test]` functions assert bluntly too.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use core::time::Duration;

use agentfw_core::message::MessageId;
use agentfw_core::seal::{
    DeviceKeys, Draft, Envelope, KeyError, KeyStatus, Keyring, Limits, OpenError, PublicBundle, ReplayCache,
    ReplayConfig, ReplayError, ReplayKey, Rotation, SealError, open, seal,
};
use agentfw_core::time::Timestamp;
use ed25519_dalek::Signer as _;
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const T0: Timestamp = Timestamp::from_millis(1_767_225_600_000); // 2026-01-01T00:00:00Z
const BODY: &[u8] = b"What JSON should the /health endpoint return? secret-marker-7f3a";

struct World {
    rng: ChaCha20Rng,
    alice: DeviceKeys,
    bob: DeviceKeys,
    /// Bob's view of who may write to him.
    bob_keyring: Keyring,
    bob_replay: ReplayCache,
}

impl World {
    fn new() -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let alice = DeviceKeys::generate(T0, &mut rng);
        let bob = DeviceKeys::generate(T0, &mut rng);
        let mut bob_keyring = Keyring::new();
        bob_keyring.trust(alice.public().clone()).unwrap();
        Self { rng, alice, bob, bob_keyring, bob_replay: ReplayCache::default() }
    }

    fn seal_from(&mut self, sender: &DeviceKeys, to: &PublicBundle, body: &[u8], now: Timestamp) -> Envelope {
        let id = MessageId::generate(now, &mut self.rng);
        let draft = Draft { id, content_type: "text/plain", body };
        seal(sender, to, &draft, &Limits::default(), now, &mut self.rng).unwrap()
    }

    fn alice_to_bob(&mut self, body: &[u8], now: Timestamp) -> Envelope {
        let id = MessageId::generate(now, &mut self.rng);
        let draft = Draft { id, content_type: "text/plain", body };
        seal(&self.alice, self.bob.public(), &draft, &Limits::default(), now, &mut self.rng).unwrap()
    }

    fn bob_opens(&mut self, bytes: &[u8], now: Timestamp) -> Result<Vec<u8>, OpenError> {
        open(&self.bob, &self.bob_keyring, &mut self.bob_replay, bytes, &Limits::default(), now).map(|o| o.body)
    }
}

#[test]
fn round_trip() {
    let mut w = World::new();
    let envelope = w.alice_to_bob(BODY, T0);
    let header = envelope.header().clone();
    assert_eq!(header.sender, w.alice.device());
    assert_eq!(header.recipient, w.bob.device());
    assert_eq!(header.timestamp, T0);
    assert_eq!(header.content_type, "text/plain");

    let opened = open(&w.bob, &w.bob_keyring, &mut w.bob_replay, envelope.as_bytes(), &Limits::default(), T0).unwrap();
    assert_eq!(opened.body, BODY);
    assert_eq!(opened.header, header);

    // The relay's view: the header parses without keys, and the body is nowhere in the bytes.
    let seen_by_relay = Envelope::from_bytes(envelope.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(seen_by_relay.header(), &header);
    assert!(!contains(envelope.as_bytes(), b"secret-marker-7f3a"));
    assert!(!contains(envelope.as_bytes(), b"health"));
}

#[test]
fn empty_and_largest_bodies_round_trip() {
    let mut w = World::new();
    let largest = vec![0x5a; Limits::default().max_plaintext];
    for body in [&b""[..], &largest[..]] {
        let envelope = w.alice_to_bob(body, T0);
        assert!(envelope.size() <= Limits::default().max_envelope());
        assert_eq!(w.bob_opens(envelope.as_bytes(), T0).unwrap(), body);
    }
}

#[test]
fn every_single_byte_tamper_is_refused() {
    let mut w = World::new();
    let envelope = w.alice_to_bob(b"run the tests, then report", T0);
    let original = envelope.as_bytes().to_vec();
    let mut refusals = std::collections::BTreeMap::<&str, usize>::new();
    for i in 0..original.len() {
        for mask in [0x01u8, 0x80] {
            let mut tampered = original.clone();
            tampered[i] ^= mask;
            let mut fresh = ReplayCache::default();
            match open(&w.bob, &w.bob_keyring, &mut fresh, &tampered, &Limits::default(), T0) {
                Ok(_) => panic!("byte {i} ^ {mask:#04x} was accepted"),
                Err(e) => *refusals.entry(e.code()).or_default() += 1,
            }
        }
    }
    println!("{} tampered envelopes, refusals by reason: {refusals:?}", original.len() * 2);
    // The untouched envelope still opens.
    assert!(w.bob_opens(&original, T0).is_ok());
}

#[test]
fn wrong_recipient_is_refused() {
    let mut w = World::new();
    let carol = DeviceKeys::generate(T0, &mut w.rng);
    let alice = DeviceKeys::from_key_file(w.alice.to_key_file().as_bytes()).unwrap();
    let to_carol = w.seal_from(&alice, carol.public(), BODY, T0);
    assert_eq!(w.bob_opens(to_carol.as_bytes(), T0), Err(OpenError::WrongRecipient));
    // Carol, who knows Alice, opens it.
    let mut carol_keyring = Keyring::new();
    carol_keyring.trust(alice.public().clone()).unwrap();
    let mut cache = ReplayCache::default();
    let opened = open(&carol, &carol_keyring, &mut cache, to_carol.as_bytes(), &Limits::default(), T0).unwrap();
    assert_eq!(opened.body, BODY);
}

#[test]
fn unknown_sender_is_refused() {
    let mut w = World::new();
    let mallory = DeviceKeys::generate(T0, &mut w.rng);
    let bob = w.bob.public().clone();
    let from_mallory = w.seal_from(&mallory, &bob, BODY, T0);
    assert_eq!(w.bob_opens(from_mallory.as_bytes(), T0), Err(OpenError::UnknownSender));
}

#[test]
fn a_known_sender_cannot_re_sign_another_senders_envelope() {
    // Mallory, whom Bob trusts, takes Alice's envelope, writes her own id as the sender
    // and signs it with her own key. Every check up to decryption passes; the header is
    // bound into the ciphertext, so decryption does not.
    let mut w = World::new();
    let mallory = DeviceKeys::generate(T0, &mut w.rng);
    w.bob_keyring.trust(mallory.public().clone()).unwrap();
    let envelope = w.alice_to_bob(BODY, T0);
    let mut bytes = envelope.as_bytes().to_vec();
    bytes[5..21].copy_from_slice(&mallory.device().to_bytes());
    bytes.truncate(bytes.len() - 64);
    let signature = ed25519_signing_key(&mallory).sign(&bytes);
    bytes.extend_from_slice(&signature.to_bytes());
    assert_eq!(w.bob_opens(&bytes, T0), Err(OpenError::DecryptionFailed));
    // Unchanged, Alice's envelope still opens.
    assert!(w.bob_opens(envelope.as_bytes(), T0).is_ok());
}

/// The Ed25519 half of a device's secrets, as an attacker holding them would use it.
fn ed25519_signing_key(keys: &DeviceKeys) -> ed25519_dalek::SigningKey {
    use base64::Engine as _;
    let file = keys.to_key_file();
    let b64 = file.lines().find_map(|l| l.strip_prefix("ed25519-secret: ")).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(b64).unwrap();
    ed25519_dalek::SigningKey::from_bytes(&bytes.try_into().unwrap())
}

#[test]
fn expired_and_future_envelopes_are_refused() {
    let mut w = World::new();
    let window = *w.bob_replay.config();
    let envelope = w.alice_to_bob(BODY, T0);
    let too_late = T0 + window.max_age + Duration::from_millis(1);
    assert_eq!(w.bob_opens(envelope.as_bytes(), too_late), Err(OpenError::Expired));
    // Exactly at the edge it still opens.
    assert!(w.bob_opens(envelope.as_bytes(), T0 + window.max_age).is_ok());

    w.bob_replay = ReplayCache::default();
    let from_the_future = w.alice_to_bob(BODY, T0 + window.max_skew + Duration::from_millis(1));
    assert_eq!(w.bob_opens(from_the_future.as_bytes(), T0), Err(OpenError::NotYetValid));
    let slightly_ahead = w.alice_to_bob(BODY, T0 + window.max_skew);
    assert!(w.bob_opens(slightly_ahead.as_bytes(), T0).is_ok());
}

#[test]
fn replayed_envelope_is_refused() {
    let mut w = World::new();
    let envelope = w.alice_to_bob(BODY, T0);
    assert!(w.bob_opens(envelope.as_bytes(), T0).is_ok());
    assert_eq!(w.bob_opens(envelope.as_bytes(), T0 + Duration::from_secs(1)), Err(OpenError::Replayed));
    // Still refused after the cache went through serde (a daemon restart).
    let json = serde_json::to_string(&w.bob_replay).unwrap();
    w.bob_replay = serde_json::from_str(&json).unwrap();
    assert_eq!(w.bob_opens(envelope.as_bytes(), T0 + Duration::from_secs(2)), Err(OpenError::Replayed));
    // A different message from the same sender is fine.
    let next = w.alice_to_bob(BODY, T0);
    assert!(w.bob_opens(next.as_bytes(), T0 + Duration::from_secs(2)).is_ok());
}

#[test]
fn truncated_envelopes_are_refused() {
    let mut w = World::new();
    let envelope = w.alice_to_bob(BODY, T0);
    let bytes = envelope.as_bytes();
    for len in 0..bytes.len() {
        assert_eq!(w.bob_opens(&bytes[..len], T0), Err(OpenError::Truncated), "prefix of {len} bytes");
    }
}

#[test]
fn oversized_envelopes_and_bodies_are_refused() {
    let mut w = World::new();
    let limits = Limits::default();
    let too_big = vec![0u8; limits.max_plaintext + 1];
    let id = MessageId::generate(T0, &mut w.rng);
    let draft = Draft { id, content_type: "text/plain", body: &too_big };
    let err = seal(&w.alice, w.bob.public(), &draft, &limits, T0, &mut w.rng).unwrap_err();
    assert_eq!(err, SealError::TooLarge { size: limits.max_plaintext + 1, max: limits.max_plaintext });

    let envelope = w.alice_to_bob(BODY, T0);
    let mut padded = envelope.as_bytes().to_vec();
    padded.resize(limits.max_envelope() + 1, 0);
    assert_eq!(
        w.bob_opens(&padded, T0),
        Err(OpenError::TooLarge { size: limits.max_envelope() + 1, max: limits.max_envelope() })
    );
    // One trailing byte is not "too large" but it is not an envelope either.
    let mut trailing = envelope.as_bytes().to_vec();
    trailing.push(0);
    assert!(matches!(w.bob_opens(&trailing, T0), Err(OpenError::Malformed(_))));

    // A smaller limit on the receiving side refuses what a larger one sealed.
    let small = Limits { max_plaintext: 16 };
    let err = open(&w.bob, &w.bob_keyring, &mut w.bob_replay, envelope.as_bytes(), &small, T0).unwrap_err();
    assert!(matches!(err, OpenError::TooLarge { .. }));
}

#[test]
fn bad_content_type_is_refused_when_sealing() {
    let mut w = World::new();
    let long = "x".repeat(128);
    for content_type in ["", "text/plain\n", "tëxt", long.as_str()] {
        let id = MessageId::generate(T0, &mut w.rng);
        let draft = Draft { id, content_type, body: BODY };
        let err = seal(&w.alice, w.bob.public(), &draft, &Limits::default(), T0, &mut w.rng).unwrap_err();
        assert_eq!(err, SealError::BadContentType, "{content_type:?}");
    }
}

#[test]
fn other_versions_and_magic_are_refused_by_format() {
    let mut w = World::new();
    let envelope = w.alice_to_bob(BODY, T0);
    let mut v2 = envelope.as_bytes().to_vec();
    v2[4] = 2;
    assert_eq!(w.bob_opens(&v2, T0), Err(OpenError::UnsupportedVersion(2)));
    let mut other = envelope.as_bytes().to_vec();
    other[0] = b'X';
    assert!(matches!(w.bob_opens(&other, T0), Err(OpenError::Malformed(_))));
}

#[test]
fn revoked_key_no_longer_verifies() {
    let mut w = World::new();
    let before = w.alice_to_bob(BODY, T0);
    let after = w.alice_to_bob(BODY, T0);
    assert!(w.bob_opens(before.as_bytes(), T0).is_ok());

    w.bob_keyring.revoke(w.alice.device(), T0).unwrap();
    assert_eq!(w.bob_opens(after.as_bytes(), T0), Err(OpenError::RetiredSender));
    assert_eq!(w.bob_keyring.get(w.alice.device()).unwrap().status, KeyStatus::Revoked { at: T0 });
    // Trusting the same keys again is refused; they stay revoked.
    assert_eq!(w.bob_keyring.trust(w.alice.public().clone()), Err(KeyError::Retired(w.alice.device())));
    assert_eq!(w.bob_opens(after.as_bytes(), T0), Err(OpenError::RetiredSender));
    // Revoking an unknown device is an error, not a silent no-op.
    let stranger = DeviceKeys::generate(T0, &mut w.rng);
    assert_eq!(w.bob_keyring.revoke(stranger.device(), T0), Err(KeyError::UnknownDevice(stranger.device())));
}

#[test]
fn rotated_away_key_no_longer_verifies() {
    let mut w = World::new();
    let old_envelope = w.alice_to_bob(BODY, T0);
    let later = T0 + Duration::from_secs(60);
    let (new_alice, rotation) = w.alice.rotate(later, &mut w.rng);
    assert_eq!(new_alice.supersedes(), Some(w.alice.device()));
    assert_ne!(new_alice.device(), w.alice.device());

    // Until Bob learns of the rotation, the old keys still work.
    let mut unaware = w.bob_keyring.clone();
    let mut cache = ReplayCache::default();
    assert!(open(&w.bob, &unaware, &mut cache, old_envelope.as_bytes(), &Limits::default(), later).is_ok());

    // The notice travels as one line of text.
    let line = rotation.to_line();
    assert!(!line.contains('\n'));
    let received = Rotation::parse(&format!("{line}\n")).unwrap();
    assert_eq!(received, rotation);

    w.bob_keyring.apply_rotation(&received).unwrap();
    assert_eq!(
        w.bob_keyring.get(w.alice.device()).unwrap().status,
        KeyStatus::Superseded { by: new_alice.device(), at: later }
    );
    assert_eq!(w.bob_opens(old_envelope.as_bytes(), later), Err(OpenError::RetiredSender));
    let bob = w.bob.public().clone();
    let new_envelope = w.seal_from(&new_alice, &bob, BODY, later);
    assert_eq!(w.bob_opens(new_envelope.as_bytes(), later).unwrap(), BODY);
    // Applying it twice is a no-op; old keys cannot come back.
    w.bob_keyring.apply_rotation(&received).unwrap();
    assert_eq!(w.bob_keyring.trust(w.alice.public().clone()), Err(KeyError::Retired(w.alice.device())));

    // A rotation for a device Bob revoked is refused: a stolen key cannot rotate itself back in.
    unaware.revoke(w.alice.device(), later).unwrap();
    assert_eq!(unaware.apply_rotation(&rotation), Err(KeyError::Retired(w.alice.device())));
}

#[test]
fn forged_rotations_are_refused() {
    let mut w = World::new();
    let (_, rotation) = w.alice.rotate(T0, &mut w.rng);
    let line = rotation.to_line();
    // A rotation claiming Alice's id but signed by Mallory's keys.
    let mallory = DeviceKeys::generate(T0, &mut w.rng);
    let (_, mallory_rotation) = mallory.rotate(T0, &mut w.rng);
    let forged = mallory_rotation.to_line().replacen(&mallory.device().to_string(), &w.alice.device().to_string(), 1);
    let forged = Rotation::parse(&forged).unwrap();
    assert_eq!(w.bob_keyring.apply_rotation(&forged), Err(KeyError::BadRotationSignature));
    // A tampered timestamp breaks both signatures.
    let fields: Vec<&str> = line.split(' ').collect();
    let tampered = line.replacen(fields[2], "1", 1);
    let tampered = Rotation::parse(&tampered).unwrap();
    assert_eq!(w.bob_keyring.apply_rotation(&tampered), Err(KeyError::BadRotationSignature));
    // Nothing changed.
    assert_eq!(w.bob_keyring.get(w.alice.device()).unwrap().status, KeyStatus::Active);
    assert_eq!(w.bob_keyring.len(), 1);
    // A rotation of a device Bob never trusted.
    assert_eq!(w.bob_keyring.apply_rotation(&mallory_rotation), Err(KeyError::UnknownDevice(mallory.device())));
}

#[test]
fn key_file_round_trip_and_debug_keeps_secrets() {
    let mut w = World::new();
    let file = w.alice.to_key_file();
    assert!(file.starts_with("agentfw-keys-v1\n"));
    let reread = DeviceKeys::from_key_file(file.as_bytes()).unwrap();
    assert_eq!(reread.device(), w.alice.device());
    assert_eq!(reread.public(), w.alice.public());
    assert_eq!(reread.created(), T0);
    assert_eq!(reread.to_key_file().as_str(), file.as_str());

    // The re-read keys really hold the secrets: they sign for Alice and open for her.
    let bob = w.bob.public().clone();
    let signed = w.seal_from(&reread, &bob, BODY, T0);
    assert!(w.bob_opens(signed.as_bytes(), T0).is_ok());

    let secrets: Vec<&str> = file
        .lines()
        .filter_map(|line| line.split_once(": "))
        .filter(|(name, _)| name.ends_with("-secret"))
        .map(|(_, value)| value)
        .collect();
    assert_eq!(secrets.len(), 2);
    let debug = format!("{reread:?} {:?}", w.alice);
    assert!(debug.contains("redacted"), "{debug}");
    for secret in &secrets {
        assert!(!debug.contains(secret), "Debug printed a secret: {debug}");
        assert!(!debug.contains(&secret[..8]));
    }

    // Rotated keys remember what they replaced.
    let (rotated, _) = w.alice.rotate(T0, &mut w.rng);
    let rotated_file = rotated.to_key_file();
    assert!(rotated_file.contains(&format!("supersedes: {}", w.alice.device())));
    assert_eq!(DeviceKeys::from_key_file(rotated_file.as_bytes()).unwrap().supersedes(), Some(w.alice.device()));
}

#[test]
fn bad_key_files_are_refused_with_clear_errors() {
    let w = World::new();
    let file = w.alice.to_key_file().to_string();
    let secrets: Vec<String> = file
        .lines()
        .filter_map(|line| line.split_once(": "))
        .filter(|(name, _)| name.ends_with("-secret"))
        .map(|(_, value)| value.to_string())
        .collect();
    let cases: Vec<(String, KeyError)> = vec![
        (file.replace("agentfw-keys-v1", "agentfw-keys-v2"), KeyError::UnsupportedVersion("agentfw-keys-v2".into())),
        (file.replace("agentfw-keys-v1", "hello"), KeyError::NotAKeyFile),
        (String::new(), KeyError::NotAKeyFile),
        (remove_line(&file, "created:"), KeyError::MissingField("created")),
        (remove_line(&file, "xwing-secret:"), KeyError::MissingField("xwing-secret")),
        (format!("{file}created: 1\n"), KeyError::DuplicateField("created")),
        (format!("{file}colour: blue\n"), KeyError::UnknownField("colour".into())),
        (format!("{file}just some words\n"), KeyError::BadLine(8)),
        (file.replace(&secrets[0], &secrets[0][1..]), KeyError::BadField("ed25519-secret")),
        (file.replace(&secrets[1], "!!!!"), KeyError::BadField("xwing-secret")),
        (file.replace("created: ", "created: -"), KeyError::BadField("created")),
    ];
    for (text, want) in cases {
        let err = DeviceKeys::from_key_file(text.as_bytes()).unwrap_err();
        assert_eq!(err, want);
        let message = err.to_string();
        for secret in &secrets {
            assert!(!message.contains(&secret[..8]), "{message}");
        }
    }
    assert_eq!(DeviceKeys::from_key_file(&[0xff, 0xfe]).unwrap_err(), KeyError::NotUtf8);

    // Someone else's device line with this device's secrets: the mismatch is caught.
    let other = DeviceKeys::generate(T0, &mut ChaCha20Rng::seed_from_u64(99));
    let swapped = file.replace(&w.alice.device().to_string(), &other.device().to_string());
    assert!(matches!(DeviceKeys::from_key_file(swapped.as_bytes()), Err(KeyError::DeviceMismatch { .. })));
    // CRLF line endings and comments are fine.
    let crlf = format!("# kept by a Windows editor\r\n{}", file.replace('\n', "\r\n"));
    assert_eq!(DeviceKeys::from_key_file(crlf.as_bytes()).unwrap().device(), w.alice.device());
}

#[test]
fn public_bundle_is_one_shareable_line() {
    let w = World::new();
    let line = w.alice.public().to_line();
    assert!(line.starts_with("agentfw-pub-v1 "));
    assert!(!line.contains('\n'));
    assert_eq!(line.split(' ').count(), 4);
    assert_eq!(line.split(' ').nth(1).unwrap(), w.alice.device().to_string());
    let parsed = PublicBundle::parse(&format!("  {line}\n")).unwrap();
    assert_eq!(&parsed, w.alice.public());
    assert_eq!(PublicBundle::from_bytes(line.as_bytes()).unwrap(), parsed);
    // The secrets are nowhere in it.
    let file = w.alice.to_key_file();
    for (name, value) in file.lines().filter_map(|l| l.split_once(": ")) {
        if name.ends_with("-secret") {
            assert!(!line.contains(value));
        }
    }
    // serde carries the same line.
    let json = serde_json::to_string(&parsed).unwrap();
    assert_eq!(json, format!("\"{line}\""));
    assert_eq!(serde_json::from_str::<PublicBundle>(&json).unwrap(), parsed);

    let fields: Vec<&str> = line.split(' ').collect();
    let other = w.bob.public().to_line();
    let other_fields: Vec<&str> = other.split(' ').collect();
    let cases: Vec<(String, KeyError)> = vec![
        (line.replace("agentfw-pub-v1", "agentfw-pub-v9"), KeyError::UnsupportedVersion("agentfw-pub-v9".into())),
        (line.replace("agentfw-pub-v1", "ssh-ed25519"), KeyError::NotABundle),
        (fields[..3].join(" "), KeyError::NotABundle),
        (format!("{line} extra"), KeyError::NotABundle),
        (String::new(), KeyError::NotABundle),
        (line.replace(fields[1], "xyz"), KeyError::BadDeviceId("xyz".into())),
        (line.replace(fields[2], &fields[2][..42]), KeyError::BadKey("ed25519 public key")),
        (line.replace(fields[3], &fields[3][..100]), KeyError::BadKey("x-wing public key")),
        // Bob's signing key under Alice's name.
        (
            line.replace(fields[2], other_fields[2]),
            KeyError::DeviceMismatch {
                stated: w.alice.device(),
                derived: PublicBundle::parse(&format!("{} {} {} {}", fields[0], fields[1], other_fields[2], fields[3]))
                    .err()
                    .and_then(|e| match e {
                        KeyError::DeviceMismatch { derived, .. } => Some(derived),
                        _ => None,
                    })
                    .unwrap(),
            },
        ),
    ];
    for (text, want) in cases {
        assert_eq!(PublicBundle::parse(&text).unwrap_err(), want, "{}", &text[..text.len().min(40)]);
    }
}

#[test]
fn keyring_survives_serde() {
    let mut w = World::new();
    let (new_alice, rotation) = w.alice.rotate(T0, &mut w.rng);
    w.bob_keyring.apply_rotation(&rotation).unwrap();
    let carol = DeviceKeys::generate(T0, &mut w.rng);
    w.bob_keyring.trust(carol.public().clone()).unwrap();
    w.bob_keyring.revoke(carol.device(), T0).unwrap();

    let json = serde_json::to_string_pretty(&w.bob_keyring).unwrap();
    let back: Keyring = serde_json::from_str(&json).unwrap();
    assert_eq!(back, w.bob_keyring);
    assert!(back.active(new_alice.device()).is_some());
    assert!(back.active(w.alice.device()).is_none());
    assert!(back.active(carol.device()).is_none());
    // Rotation notices and device ids also travel through serde as text.
    let json = serde_json::to_string(&rotation).unwrap();
    assert_eq!(serde_json::from_str::<Rotation>(&json).unwrap(), rotation);
}

#[test]
fn replay_cache_is_bounded_and_never_lets_a_replay_through() {
    let config = ReplayConfig { capacity: 3, ..ReplayConfig::default() };
    let mut cache = ReplayCache::new(config);
    let key = |n: u8| ReplayKey::new([1; 16], [n; 16]);
    let at = |s: u64| T0 + Duration::from_secs(s);
    for n in 0..5u8 {
        cache.record(key(n), at(u64::from(n)), at(10)).unwrap();
        assert!(cache.len() <= 3);
    }
    assert_eq!(cache.len(), 3);
    // Everything recorded is refused, including the entries dropped for room ...
    for n in 0..5u8 {
        assert_eq!(cache.check(&key(n), at(u64::from(n)), at(10)), Err(ReplayError::Replayed), "key {n}");
    }
    // ... at the price of refusing a new message stamped before the dropped ones.
    assert_eq!(cache.check(&key(9), at(1), at(10)), Err(ReplayError::Replayed));
    assert_eq!(cache.check(&key(9), at(5), at(10)), Ok(()));

    // Entries expire with the window and free their memory.
    let later = at(2) + config.max_age;
    assert!(cache.poll_timeout().is_some());
    cache.prune(later + Duration::from_secs(10));
    assert!(cache.is_empty());
    assert_eq!(cache.poll_timeout(), None);
    // A clock that steps back does not reopen the window for what expired.
    assert_eq!(cache.check(&key(4), at(4), at(10)), Err(ReplayError::Expired));

    // A state saved with a larger capacity is cut down on load.
    let mut big = ReplayCache::new(ReplayConfig { capacity: 10, ..config });
    for n in 0..10u8 {
        big.record(key(n), at(u64::from(n)), at(10)).unwrap();
    }
    let mut json: serde_json::Value = serde_json::to_value(&big).unwrap();
    json["config"]["capacity"] = 4.into();
    let small: ReplayCache = serde_json::from_value(json).unwrap();
    assert_eq!(small.len(), 4);
    for n in 0..10u8 {
        assert_eq!(small.check(&key(n), at(u64::from(n)), at(10)), Err(ReplayError::Replayed));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn envelope_parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..4_096)) {
        let _ = Envelope::from_bytes(&bytes, &Limits::default());
    }

    #[test]
    fn envelope_parsing_never_panics_on_plausible_prefixes(
        tail in proptest::collection::vec(any::<u8>(), 0..2_048),
        version in any::<u8>(),
        content_type_len in any::<u8>(),
    ) {
        let mut bytes = b"AFWE".to_vec();
        bytes.push(version % 3);
        bytes.extend_from_slice(&[0u8; 56]);
        bytes.push(content_type_len);
        bytes.extend_from_slice(&tail);
        let _ = Envelope::from_bytes(&bytes, &Limits::default());
        let _ = Envelope::from_bytes(&bytes, &Limits { max_plaintext: 0 });
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn remove_line(text: &str, prefix: &str) -> String {
    text.lines().filter(|l| !l.starts_with(prefix)).map(|l| format!("{l}\n")).collect()
}

#[test]
fn a_relay_verifies_the_sender_without_the_recipient_keys() {
    let mut w = World::new();
    let envelope = w.alice_to_bob(BODY, T0);
    let seen = Envelope::from_bytes(envelope.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(seen.verify(&w.bob_keyring), Ok(()));
    assert_eq!(seen.verify_signed_by(w.alice.public()), Ok(()));
    // Someone else's key, an unknown sender, a retired one, a flipped byte.
    assert_eq!(seen.verify_signed_by(w.bob.public()), Err(OpenError::BadSignature));
    assert_eq!(seen.verify(&Keyring::new()), Err(OpenError::UnknownSender));
    let mut tampered = envelope.as_bytes().to_vec();
    let last_ct = tampered.len() - 65;
    tampered[last_ct] ^= 1;
    let tampered = Envelope::from_bytes(&tampered, &Limits::default()).unwrap();
    assert_eq!(tampered.verify(&w.bob_keyring), Err(OpenError::BadSignature));
    w.bob_keyring.revoke(w.alice.device(), T0).unwrap();
    assert_eq!(seen.verify(&w.bob_keyring), Err(OpenError::RetiredSender));
}

#[test]
fn statements_verify_only_under_their_own_context_and_key() {
    let w = World::new();
    let signature = w.alice.sign_statement("agentfw relay auth v1", b"nonce");
    let alice = w.alice.public();
    assert_eq!(alice.verify_statement("agentfw relay auth v1", b"nonce", &signature), Ok(()));
    for (context, message) in [("agentfw relay auth v2", &b"nonce"[..]), ("agentfw relay auth v1", b"nonce!")] {
        assert_eq!(alice.verify_statement(context, message, &signature), Err(KeyError::BadStatementSignature));
    }
    // The context's length is signed, so bytes cannot move between context and message.
    assert_eq!(
        alice.verify_statement("agentfw relay auth v1n", b"once", &signature),
        Err(KeyError::BadStatementSignature)
    );
    assert_eq!(
        w.bob.public().verify_statement("agentfw relay auth v1", b"nonce", &signature),
        Err(KeyError::BadStatementSignature)
    );
}
