//! Sealing and opening envelopes (TX3) against the raw primitives they are built from.
//!
//! In each group, `envelope` is the whole library call and `raw` is the same HPKE and
//! Ed25519 work called directly on the same sizes, so the envelope's overhead is the ratio
//! of the two (target: within 1.2×). The two run back to back so that machine noise hits
//! both alike.
//!
//! - `seal`: `seal::seal` (encoding, HPKE seal, Ed25519 sign) vs HPKE `single_shot_seal`
//!   then Ed25519 sign over AAD ‖ encapsulated key ‖ ciphertext.
//! - `open`: `seal::open` (parse, keyring, Ed25519 verify, recipient, window, replay cache,
//!   HPKE open) vs Ed25519 `verify_strict` then HPKE `single_shot_open`.
//! - `primitives`: each primitive alone.
//!
//! `cargo bench -p agentfw-benches --bench seal -- --quick`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use agentfw_core::message::MessageId;
use agentfw_core::seal::{DeviceKeys, Draft, Keyring, Limits, ReplayCache, open, seal};
use agentfw_core::time::Timestamp;
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::XWing;
use hpke::{Kem as _, OpModeR, OpModeS, Serializable};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);
const SIZES: [usize; 2] = [1024, 64 * 1024];
const INFO: &[u8] = b"agentfw seal v1";
/// About the size of an envelope header with a short content type.
const AAD_LEN: usize = 72;

type Sk = <XWing as hpke::Kem>::PrivateKey;
type Pk = <XWing as hpke::Kem>::PublicKey;
type Enc = <XWing as hpke::Kem>::EncappedKey;

struct Raw {
    sk: Sk,
    pk: Pk,
    signing: SigningKey,
    verifying: VerifyingKey,
    aad: Vec<u8>,
}

impl Raw {
    fn new(rng: &mut ChaCha20Rng) -> Self {
        let (sk, pk) = XWing::gen_keypair_with_rng(rng);
        let signing = SigningKey::from_bytes(&[7u8; 32]);
        Self { sk, pk, verifying: signing.verifying_key(), signing, aad: vec![0x68; AAD_LEN] }
    }

    fn hpke_seal(&self, body: &[u8], rng: &mut ChaCha20Rng) -> (Enc, Vec<u8>) {
        hpke::single_shot_seal_with_rng::<ChaCha20Poly1305, HkdfSha256, XWing>(
            &OpModeS::Base,
            &self.pk,
            INFO,
            body,
            &self.aad,
            rng,
        )
        .unwrap()
    }

    fn hpke_open(&self, enc: &Enc, ct: &[u8]) -> Vec<u8> {
        hpke::single_shot_open::<ChaCha20Poly1305, HkdfSha256, XWing>(
            &OpModeR::Base,
            &self.sk,
            enc,
            INFO,
            ct,
            &self.aad,
        )
        .unwrap()
    }

    /// AAD ‖ encapsulated key ‖ ciphertext, as an envelope signs it.
    fn transcript(&self, enc: &Enc, ct: &[u8]) -> Vec<u8> {
        let mut signed = Vec::with_capacity(self.aad.len() + 1120 + 4 + ct.len());
        signed.extend_from_slice(&self.aad);
        signed.extend_from_slice(&enc.to_bytes());
        signed.extend_from_slice(&(ct.len() as u32).to_be_bytes());
        signed.extend_from_slice(ct);
        signed
    }

    fn seal_and_sign(&self, body: &[u8], rng: &mut ChaCha20Rng) -> (Vec<u8>, Signature) {
        let (enc, ct) = self.hpke_seal(body, rng);
        let signed = self.transcript(&enc, &ct);
        let signature = self.signing.sign(&signed);
        (signed, signature)
    }
}

fn bench_seal_open(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let alice = DeviceKeys::generate(NOW, &mut rng);
    let bob = DeviceKeys::generate(NOW, &mut rng);
    let mut keyring = Keyring::new();
    keyring.trust(alice.public().clone()).unwrap();
    let limits = Limits::default();
    let raw = Raw::new(&mut rng);

    let mut group = c.benchmark_group("seal");
    for size in SIZES {
        let body = vec![0x61u8; size];
        let draft = Draft { id: MessageId::generate(NOW, &mut rng), content_type: "text/plain", body: &body };
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::new("envelope", size), |b| {
            b.iter(|| seal(&alice, bob.public(), black_box(&draft), &limits, NOW, &mut rng).unwrap());
        });
        group.bench_function(BenchmarkId::new("raw", size), |b| {
            b.iter(|| raw.seal_and_sign(black_box(&body), &mut rng));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("open");
    for size in SIZES {
        let body = vec![0x61u8; size];
        let draft = Draft { id: MessageId::generate(NOW, &mut rng), content_type: "text/plain", body: &body };
        let envelope = seal(&alice, bob.public(), &draft, &limits, NOW, &mut rng).unwrap();
        let (enc, ct) = raw.hpke_seal(&body, &mut rng);
        let signed = raw.transcript(&enc, &ct);
        let signature = raw.signing.sign(&signed);
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::new("envelope", size), |b| {
            b.iter_batched_ref(
                ReplayCache::default,
                |replay| open(&bob, &keyring, replay, black_box(envelope.as_bytes()), &limits, NOW).unwrap(),
                BatchSize::SmallInput,
            );
        });
        group.bench_function(BenchmarkId::new("raw", size), |b| {
            b.iter(|| {
                raw.verifying.verify_strict(black_box(&signed), &signature).unwrap();
                raw.hpke_open(&enc, black_box(&ct))
            });
        });
    }
    group.finish();
}

fn bench_primitives(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let raw = Raw::new(&mut rng);
    let mut group = c.benchmark_group("primitives");
    for size in SIZES {
        let body = vec![0x61u8; size];
        let (enc, ct) = raw.hpke_seal(&body, &mut rng);
        let signed = raw.transcript(&enc, &ct);
        let signature = raw.signing.sign(&signed);
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::new("hpke seal", size), |b| {
            b.iter(|| raw.hpke_seal(black_box(&body), &mut rng))
        });
        group.bench_function(BenchmarkId::new("hpke open", size), |b| b.iter(|| raw.hpke_open(&enc, black_box(&ct))));
        group.bench_function(BenchmarkId::new("ed25519 sign", size), |b| {
            b.iter(|| raw.signing.sign(black_box(&signed)))
        });
        group.bench_function(BenchmarkId::new("ed25519 verify", size), |b| {
            b.iter(|| raw.verifying.verify_strict(black_box(&signed), &signature).unwrap());
        });
    }
    group.finish();
}

criterion_group!(benches, bench_seal_open, bench_primitives);
criterion_main!(benches);
