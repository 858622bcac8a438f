//! Envelope parsing and opening on arbitrary bytes: nothing may panic, and nothing but a
//! genuine envelope may open.
//!
//! The first input byte picks the mode. Mode 0 hands the rest to `open` as it is, which
//! mostly exercises the parser (a random signature never verifies). Mode 1 signs the rest
//! with a sender the recipient trusts before opening it, so the checks after the signature
//! (recipient, time window, replay, HPKE decapsulation and decryption) see arbitrary input.
//!
//! The keys are the ones of `agentfw-core/vectors/seal/envelopes.json` (same seeded RNG),
//! so the envelopes there, in `corpus/envelope`, are valid starting points.
//!
//! `scripts/fuzz 60 envelope`

#![no_main]

use std::sync::OnceLock;

use agentfw_core::seal::{DeviceKeys, Envelope, Keyring, Limits, ReplayCache, open};
use agentfw_core::time::Timestamp;
use ed25519_dalek::Signer as _;
use libfuzzer_sys::fuzz_target;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);

struct Fixture {
    bob: DeviceKeys,
    keyring: Keyring,
    alice_signing: ed25519_dalek::SigningKey,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let mut rng = ChaCha20Rng::from_seed(*b"agentfw envelope vectors, v1 :-)");
        let alice = DeviceKeys::generate(NOW, &mut rng);
        let bob = DeviceKeys::generate(NOW, &mut rng);
        let mut keyring = Keyring::new();
        keyring.trust(alice.public().clone()).unwrap();
        Fixture { alice_signing: signing_key(&alice), bob, keyring }
    })
}

fn signing_key(keys: &DeviceKeys) -> ed25519_dalek::SigningKey {
    use base64::Engine as _;
    let file = keys.to_key_file();
    let b64 = file.lines().find_map(|l| l.strip_prefix("ed25519-secret: ")).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(b64).unwrap();
    ed25519_dalek::SigningKey::from_bytes(&bytes.try_into().unwrap())
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let f = fixture();
    let limits = Limits::default();
    let mut bytes = rest.to_vec();
    if mode % 2 == 1 && bytes.len() >= 64 {
        let signed_len = bytes.len() - 64;
        let signature = f.alice_signing.sign(&bytes[..signed_len]);
        bytes[signed_len..].copy_from_slice(&signature.to_bytes());
    }
    let parsed = Envelope::from_bytes(&bytes, &limits);
    let mut replay = ReplayCache::default();
    let opened = open(&f.bob, &f.keyring, &mut replay, &bytes, &limits, NOW);
    // Opening never succeeds where parsing failed, and an opened envelope is never opened twice.
    if let Ok(opened) = opened {
        assert_eq!(parsed.map(|e| e.header().clone()).ok(), Some(opened.header));
        assert!(open(&f.bob, &f.keyring, &mut replay, &bytes, &limits, NOW).is_err());
    }
});
