//! Known-answer tests for the crypto under `seal`, and the shared envelope vectors.
//!
//! - `vectors/xwing/xwing-kem.json`: the X-Wing KEM test vectors of the X-Wing
//!   Internet-Draft (draft-connolly-cfrg-xwing-kem), as shipped by the RustCrypto `x-wing`
//!   crate: seed → keys, encapsulation randomness → ciphertext and shared secret.
//! - `vectors/xwing/hpke-xwing-chacha.json`: the HPKE test vector for exactly our suite
//!   (mode Base, KEM 0x647a X-Wing, KDF 0x0001 HKDF-SHA256, AEAD 0x0003
//!   ChaCha20-Poly1305) from the hpke-pq draft's vectors as used by rust-hpke.
//! - `vectors/xwing/derive.json`: keys derived with hpke's `derive_keypair` from fixed
//!   seeds, recorded once, so a dependency bump that changes derivation is caught.
//! - `vectors/seal/envelopes.json`: envelopes sealed from a seeded RNG, with the expected
//!   outcome of opening each; the Python and Node bindings check the same file.
//!
//! To rewrite the recorded files after an intended format change, run this test with
//! `AGENTFW_BLESS=1` and review the diff.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use core::convert::Infallible;
use core::time::Duration;

use agentfw_core::message::MessageId;
use agentfw_core::seal::{
    DeviceKeys, Draft, Keyring, Limits, OpenError, PublicBundle, ReplayCache, ReplayConfig, open, seal,
};
use agentfw_core::time::Timestamp;
use ed25519_dalek::Signer as _;
use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::XWing;
use hpke::{Deserializable, Kem as _, OpModeR, OpModeS, Serializable};
use rand_chacha::ChaCha20Rng;
use rand_core::{SeedableRng, TryCryptoRng, TryRng};
use serde_json::{Value, json};

type Sk = <XWing as hpke::Kem>::PrivateKey;
type Enc = <XWing as hpke::Kem>::EncappedKey;

const XWING_KEM: &str = include_str!("../vectors/xwing/xwing-kem.json");
const HPKE_XWING: &str = include_str!("../vectors/xwing/hpke-xwing-chacha.json");
const DERIVE: &str = include_str!("../vectors/xwing/derive.json");
const ENVELOPES: &str = include_str!("../vectors/seal/envelopes.json");

/// An "RNG" that hands out fixed bytes, to replay recorded randomness.
struct Fixed(Vec<u8>);

impl TryRng for Fixed {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        rand_core::utils::next_word_via_fill(self)
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        rand_core::utils::next_word_via_fill(self)
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Infallible> {
        assert!(dest.len() <= self.0.len(), "the vector has too little randomness");
        dest.copy_from_slice(&self.0[..dest.len()]);
        self.0.drain(..dest.len());
        Ok(())
    }
}

impl TryCryptoRng for Fixed {}

#[test]
fn xwing_kem_draft_vectors() {
    let vectors: Vec<Value> = serde_json::from_str(XWING_KEM).unwrap();
    assert_eq!(vectors.len(), 3);
    for v in &vectors {
        // X-Wing's private key is its 32-byte seed.
        assert_eq!(field(v, "seed"), field(v, "sk"));
        let sk = Sk::from_bytes(&field(v, "sk")).unwrap();
        let pk = XWing::sk_to_pk(&sk);
        assert_eq!(pk.to_bytes().as_slice(), field(v, "pk"));

        let (ss, enc) = XWing::encap_with_rng(&pk, None, &mut Fixed(field(v, "eseed"))).unwrap();
        assert_eq!(enc.to_bytes().as_slice(), field(v, "ct"));
        assert_eq!(ss.0.as_slice(), field(v, "ss"));

        let enc = Enc::from_bytes(&field(v, "ct")).unwrap();
        let ss = XWing::decap(&sk, None, &enc).unwrap();
        assert_eq!(ss.0.as_slice(), field(v, "ss"));
    }
}

#[test]
fn hpke_xwing_chacha_base_mode_vector() {
    let vectors: Vec<Value> = serde_json::from_str(HPKE_XWING).unwrap();
    let v = &vectors[0];
    assert_eq!((v["mode"].as_u64(), v["kem_id"].as_u64()), (Some(0), Some(0x647a)));
    assert_eq!((v["kdf_id"].as_u64(), v["aead_id"].as_u64()), (Some(1), Some(3)));
    let info = field(v, "info");

    let (sk, pk) = XWing::derive_keypair(&field(v, "ikmR"));
    assert_eq!(sk.to_bytes().as_slice(), field(v, "skRm"));
    assert_eq!(pk.to_bytes().as_slice(), field(v, "pkRm"));

    let (enc, mut sender) = hpke::setup_sender_with_rng::<ChaCha20Poly1305, HkdfSha256, XWing>(
        &OpModeS::Base,
        &pk,
        &info,
        &mut Fixed(field(v, "ikmE")),
    )
    .unwrap();
    assert_eq!(enc.to_bytes().as_slice(), field(v, "enc"));
    let mut receiver =
        hpke::setup_receiver::<ChaCha20Poly1305, HkdfSha256, XWing>(&OpModeR::Base, &sk, &enc, &info).unwrap();

    let encryptions = v["encryptions"].as_array().unwrap();
    assert_eq!(encryptions.len(), 10);
    for e in encryptions {
        let (aad, pt, ct) = (field(e, "aad"), field(e, "pt"), field(e, "ct"));
        assert_eq!(sender.seal(&pt, &aad).unwrap(), ct);
        assert_eq!(receiver.open(&ct, &aad).unwrap(), pt);
    }
    for x in v["exports"].as_array().unwrap() {
        let mut out = vec![0u8; usize::try_from(x["L"].as_u64().unwrap()).unwrap()];
        receiver.export(&field(x, "exporter_context"), &mut out).unwrap();
        assert_eq!(out, field(x, "exported_value"));
    }

    // The one-shot API our envelopes use agrees with the vector's first encryption.
    let first = &encryptions[0];
    let (enc, ct) = hpke::single_shot_seal_with_rng::<ChaCha20Poly1305, HkdfSha256, XWing>(
        &OpModeS::Base,
        &pk,
        &info,
        &field(first, "pt"),
        &field(first, "aad"),
        &mut Fixed(field(v, "ikmE")),
    )
    .unwrap();
    assert_eq!(enc.to_bytes().as_slice(), field(v, "enc"));
    assert_eq!(ct, field(first, "ct"));
}

#[test]
fn xwing_derive_keypair_is_stable() {
    if bless("xwing/derive.json", derive_vectors()) {
        return;
    }
    let recorded: Value = serde_json::from_str(DERIVE).unwrap();
    assert_eq!(recorded, derive_vectors(), "hpke's X-Wing derive_keypair changed");
}

#[test]
fn envelope_vectors_are_reproduced_from_their_seed() {
    if bless("seal/envelopes.json", envelope_vectors()) {
        return;
    }
    let recorded: Value = serde_json::from_str(ENVELOPES).unwrap();
    assert_eq!(recorded, envelope_vectors(), "sealing no longer reproduces vectors/seal/envelopes.json");
}

/// Runs the envelope vectors from the file alone, the way a binding does.
#[test]
fn envelope_vectors_open_as_recorded() {
    let file: Value = serde_json::from_str(ENVELOPES).unwrap();
    let devices = file["devices"].as_object().unwrap();
    let keys = |name: &str| DeviceKeys::from_key_file(devices[name]["key_file"].as_str().unwrap().as_bytes()).unwrap();
    for (name, device) in devices {
        let bundle = PublicBundle::parse(device["bundle"].as_str().unwrap()).unwrap();
        assert_eq!(keys(name).public(), &bundle);
        assert_eq!(bundle.device().to_string(), device["device"].as_str().unwrap());
    }

    let cases = file["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let recipient = keys(case["recipient"].as_str().unwrap());
        let mut keyring = Keyring::new();
        for trusted in case["trusted"].as_array().unwrap() {
            keyring.trust(keys(trusted.as_str().unwrap()).public().clone()).unwrap();
        }
        let mut replay = ReplayCache::new(ReplayConfig::default());
        let now = Timestamp::from_millis(case["now_ms"].as_u64().unwrap());
        let envelope = field(case, "envelope");
        let mut result = Err(OpenError::Truncated);
        for _ in 0..case["opens"].as_u64().unwrap() {
            result = open(&recipient, &keyring, &mut replay, &envelope, &Limits::default(), now);
        }
        match (&case["expect"]["body"], &case["expect"]["error"]) {
            (Value::String(body), Value::Null) => {
                let opened = result.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(opened.body, unhex(body), "{name}");
                let header = &case["expect"]["header"];
                assert_eq!(opened.header.sender.to_string(), header["sender"].as_str().unwrap(), "{name}");
                assert_eq!(opened.header.recipient.to_string(), header["recipient"].as_str().unwrap(), "{name}");
                assert_eq!(opened.header.id.to_string(), header["id"].as_str().unwrap(), "{name}");
                assert_eq!(Some(opened.header.timestamp.as_millis()), header["timestamp_ms"].as_u64(), "{name}");
                assert_eq!(opened.header.content_type, header["content_type"].as_str().unwrap(), "{name}");
            }
            (Value::Null, Value::String(code)) => {
                let err = result.err().unwrap_or_else(|| panic!("{name}: opened, expected {code}"));
                assert_eq!(err.code(), code, "{name}: {err}");
            }
            other => panic!("{name}: bad expectation {other:?}"),
        }
    }
}

/// With `AGENTFW_BLESS=1`, record `value` as the vector file at `path` (after an intended
/// change of format; review the diff) and say so.
#[allow(clippy::disallowed_methods)]
fn bless(path: &str, value: Value) -> bool {
    if !std::env::var("AGENTFW_BLESS").is_ok_and(|v| v == "1") {
        return false;
    }
    let text = serde_json::to_string_pretty(&value).unwrap() + "\n";
    std::fs::write(format!("{}/vectors/{path}", env!("CARGO_MANIFEST_DIR")), text).unwrap();
    true
}

fn derive_vectors() -> Value {
    let seeds: [Vec<u8>; 3] = [(0u8..32).collect(), vec![0u8; 32], b"agentfw x-wing derive_keypair kat".to_vec()];
    let cases: Vec<Value> = seeds
        .iter()
        .map(|ikm| {
            let (sk, pk) = XWing::derive_keypair(ikm);
            json!({"ikm": hex(ikm), "sk": hex(&sk.to_bytes()), "pk": hex(&pk.to_bytes())})
        })
        .collect();
    json!({
        "description": "X-Wing key pairs from hpke 0.15 Kem::derive_keypair (SHAKE256 LabeledDerive), recorded once",
        "kem_id": 0x647a,
        "cases": cases,
    })
}

const T0_MS: u64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

fn envelope_vectors() -> Value {
    let mut rng = ChaCha20Rng::from_seed(*b"agentfw envelope vectors, v1 :-)");
    let t0 = Timestamp::from_millis(T0_MS);
    let names = ["alice", "bob", "carol", "mallory"];
    let devices: Vec<DeviceKeys> = names.iter().map(|_| DeviceKeys::generate(t0, &mut rng)).collect();
    let [alice, bob, carol, mallory] = &devices[..] else { unreachable!() };
    let limits = Limits::default();
    let window = ReplayConfig::default();

    let mut sealed = |from: &DeviceKeys, to: &DeviceKeys, content_type: &str, body: &[u8], now: Timestamp| {
        let id = MessageId::generate(now, &mut rng);
        let draft = Draft { id, content_type, body };
        seal(from, to.public(), &draft, &limits, now, &mut rng).unwrap()
    };
    let hello = sealed(alice, bob, "text/plain; charset=utf-8", b"hello bob, it's alice", t0);
    let empty = sealed(alice, bob, "text/plain", b"", t0);
    let binary = sealed(alice, bob, "application/octet-stream", &(0..=255).collect::<Vec<u8>>(), t0);
    let to_carol = sealed(alice, carol, "text/plain", b"for carol only", t0);
    let from_carol = sealed(carol, bob, "text/plain", b"carol is not in bob's keyring", t0);
    let future = t0 + window.max_skew + Duration::from_secs(1);
    let from_the_future = sealed(alice, bob, "text/plain", b"sealed by a clock running fast", future);

    let bytes = hello.as_bytes().to_vec();
    let mut flipped_ciphertext = bytes.clone();
    let last_ciphertext_byte = bytes.len() - 65;
    flipped_ciphertext[last_ciphertext_byte] ^= 0x01;
    let mut flipped_signature = bytes.clone();
    *flipped_signature.last_mut().unwrap() ^= 0x80;
    let mut version_2 = bytes.clone();
    version_2[4] = 2;
    let mut trailing = bytes.clone();
    trailing.push(0);
    // Mallory, whom Bob trusts, claims Alice's envelope as her own and signs it.
    let mut resigned = bytes.clone();
    resigned[5..21].copy_from_slice(&mallory.device().to_bytes());
    resigned.truncate(resigned.len() - 64);
    let signature = ed25519_signing_key(mallory).sign(&resigned);
    resigned.extend_from_slice(&signature.to_bytes());

    let t0_ms = t0.as_millis();
    let expired_ms = t0_ms + u64::try_from(window.max_age.as_millis()).unwrap() + 1;
    let opened = |name: &str, env: &agentfw_core::seal::Envelope, body: &[u8]| {
        let h = env.header();
        json!({
            "name": name, "recipient": "bob", "trusted": ["alice"], "now_ms": t0_ms, "opens": 1,
            "envelope": hex(env.as_bytes()),
            "expect": {"body": hex(body), "header": {
                "sender": h.sender.to_string(), "recipient": h.recipient.to_string(), "id": h.id.to_string(),
                "timestamp_ms": h.timestamp.as_millis(), "content_type": h.content_type,
            }},
        })
    };
    let refused = |name: &str, envelope: &[u8], recipient: &str, trusted: &[&str], now_ms: u64, opens: u64, code| {
        json!({
            "name": name, "recipient": recipient, "trusted": trusted, "now_ms": now_ms, "opens": opens,
            "envelope": hex(envelope), "expect": {"error": code},
        })
    };
    let cases = vec![
        opened("text", &hello, b"hello bob, it's alice"),
        opened("empty body", &empty, b""),
        opened("binary body", &binary, &(0..=255).collect::<Vec<u8>>()),
        refused("ciphertext byte flipped", &flipped_ciphertext, "bob", &["alice"], t0_ms, 1, "open.bad_signature"),
        refused("signature byte flipped", &flipped_signature, "bob", &["alice"], t0_ms, 1, "open.bad_signature"),
        refused("truncated", &bytes[..bytes.len() - 1], "bob", &["alice"], t0_ms, 1, "open.truncated"),
        refused("trailing byte", &trailing, "bob", &["alice"], t0_ms, 1, "open.malformed"),
        refused("format version 2", &version_2, "bob", &["alice"], t0_ms, 1, "open.unsupported_version"),
        refused("unknown sender", from_carol.as_bytes(), "bob", &["alice"], t0_ms, 1, "open.unknown_sender"),
        refused("wrong recipient", to_carol.as_bytes(), "bob", &["alice"], t0_ms, 1, "open.wrong_recipient"),
        refused("expired", &bytes, "bob", &["alice"], expired_ms, 1, "open.expired"),
        refused("from the future", from_the_future.as_bytes(), "bob", &["alice"], t0_ms, 1, "open.not_yet_valid"),
        refused("replayed", &bytes, "bob", &["alice"], t0_ms, 2, "open.replayed"),
        refused(
            "re-signed by another known sender",
            &resigned,
            "bob",
            &["alice", "mallory"],
            t0_ms,
            1,
            "open.decryption_failed",
        ),
    ];

    let devices: serde_json::Map<String, Value> = names
        .iter()
        .zip(&devices)
        .map(|(name, keys)| {
            let entry = json!({
                "device": keys.device().to_string(),
                "key_file": keys.to_key_file().as_str(),
                "bundle": keys.public().to_line(),
            });
            ((*name).to_owned(), entry)
        })
        .collect();
    json!({
        "description": "agentfw envelope format v1. Open each case's envelope as `recipient`, with a keyring \
            trusting `trusted`, default limits (64 KiB body) and a fresh replay cache with the default window \
            (1 h back, 5 min ahead), at `now_ms`, `opens` times; the last result must match `expect` \
            (`error` is the error's stable code). Produced from a seeded ChaCha20 RNG by \
            agentfw-core/tests/vectors.rs; these secret keys are public test data.",
        "devices": devices,
        "cases": cases,
    })
}

fn ed25519_signing_key(keys: &DeviceKeys) -> ed25519_dalek::SigningKey {
    use base64::Engine as _;
    let file = keys.to_key_file();
    let b64 = file.lines().find_map(|l| l.strip_prefix("ed25519-secret: ")).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(b64).unwrap();
    ed25519_dalek::SigningKey::from_bytes(&bytes.try_into().unwrap())
}

fn field(v: &Value, name: &str) -> Vec<u8> {
    unhex(v[name].as_str().unwrap_or_else(|| panic!("no field {name}")))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}
