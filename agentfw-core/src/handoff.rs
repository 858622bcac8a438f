//! Signed hand-offs from a planner to an executor (HO1).
//!
//! A planner decides what should be done; an executor does it. Between them travels a
//! plan, and whoever can forge that message takes over the executor. Here the planner
//! signs each plan with a [`Signer`], and the executor gets the plan only through a
//! [`Verifier`], which returns a [`VerifiedPlan`] when, and only when:
//!
//! 1. the hand-off is well formed and within the size limit;
//! 2. its signer is one the executor trusts;
//! 3. the Ed25519 signature (strict) covers everything: signer, executor name, nonce,
//!    time and the plan bytes themselves;
//! 4. it is addressed to this executor (a plan for another executor cannot be replayed
//!    here);
//! 5. it is inside the time window;
//! 6. its nonce was never accepted before.
//!
//! The plan an executor runs is the plan that was signed: [`VerifiedPlan`] carries the
//! bytes that the signature covers, it has no public constructor, and nothing in this
//! module takes a plan from anywhere else. An executor that accepts only a
//! `VerifiedPlan` cannot be handed an unverified one.
//!
//! Wire layout (integers big-endian): magic `AFWH`, version `1`, signer id (16), executor
//! name length (1) and name (1–127 printable ASCII), nonce (16), issued-at ms (8), plan
//! length (4) and plan, Ed25519 signature (64) over all bytes before it.

use core::fmt;
use core::str::FromStr;
use std::collections::BTreeMap;

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use rand_core::CryptoRng;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::seal::{Reader, ReplayCache, ReplayConfig, ReplayError, ReplayKey, hex, unhex};
use crate::time::Timestamp;

const MAGIC: [u8; 4] = *b"AFWH";
const VERSION: u8 = 1;
const SIGNER_ID_CONTEXT: &str = "agentfw 2025 hand-off signer id v1";
const EXECUTOR_MAX: usize = 127;
const SIGNATURE_LEN: usize = 64;

/// The default largest plan: 1 MiB.
pub const DEFAULT_MAX_PLAN: usize = 1024 * 1024;

/// The name of a signer: 16 bytes derived from its Ed25519 public key, shown as hex.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct SignerId([u8; 16]);

impl SignerId {
    /// The id of the signer holding the secret half of `key`.
    pub fn of(key: &VerifyingKey) -> Self {
        let mut id = [0u8; 16];
        blake3::Hasher::new_derive_key(SIGNER_ID_CONTEXT).update(key.as_bytes()).finalize_xof().fill(&mut id);
        Self(id)
    }

    pub const fn to_bytes(self) -> [u8; 16] {
        self.0
    }
}

impl fmt::Display for SignerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex(&self.0))
    }
}

impl fmt::Debug for SignerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SignerId({self})")
    }
}

impl FromStr for SignerId {
    type Err = HandoffError;

    fn from_str(s: &str) -> Result<Self, HandoffError> {
        unhex::<16>(s).map(Self).ok_or(HandoffError::BadSignerId)
    }
}

impl From<SignerId> for String {
    fn from(id: SignerId) -> String {
        id.to_string()
    }
}

impl TryFrom<String> for SignerId {
    type Error = HandoffError;

    fn try_from(s: String) -> Result<Self, HandoffError> {
        s.parse()
    }
}

/// A planner's signing key. Debug prints only the id; the secret is wiped on drop.
pub struct Signer {
    key: SigningKey,
    id: SignerId,
}

impl Signer {
    pub fn generate(rng: &mut impl CryptoRng) -> Self {
        let mut secret = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(secret.as_mut());
        Self::from_secret(&secret)
    }

    /// A signer from a 32-byte Ed25519 secret key kept by the caller.
    pub fn from_secret(secret: &[u8; 32]) -> Self {
        let key = SigningKey::from_bytes(secret);
        let id = SignerId::of(&key.verifying_key());
        Self { key, id }
    }

    pub fn id(&self) -> SignerId {
        self.id
    }

    /// What an executor passes to [`Verifier::trust`].
    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// Signs `plan` for the executor named `executor`, stamped `now`, with a fresh nonce
    /// from `rng`.
    pub fn sign(
        &self,
        plan: &[u8],
        executor: &str,
        now: Timestamp,
        rng: &mut impl CryptoRng,
    ) -> Result<Handoff, HandoffError> {
        if !valid_executor(executor.as_bytes()) {
            return Err(HandoffError::BadExecutorName);
        }
        if u32::try_from(plan.len()).is_err() {
            return Err(HandoffError::TooLarge { size: plan.len(), max: u32::MAX as usize });
        }
        let mut nonce = [0u8; 16];
        rng.fill_bytes(&mut nonce);
        let mut handoff = Handoff {
            signer: self.id,
            executor: executor.to_owned(),
            nonce,
            issued_at: now,
            plan: plan.to_vec(),
            signature: [0u8; SIGNATURE_LEN],
        };
        handoff.signature = self.key.sign(&handoff.signed_bytes()).to_bytes();
        Ok(handoff)
    }
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer").field("id", &self.id).field("secret", &"<redacted>").finish()
    }
}

fn valid_executor(name: &[u8]) -> bool {
    (1..=EXECUTOR_MAX).contains(&name.len()) && name.iter().all(|b| (0x20..=0x7e).contains(b))
}

/// A signed hand-off as it travels. The fields are public because anyone can write
/// anything here; only [`Verifier::verify`] turns it into something to act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handoff {
    pub signer: SignerId,
    /// The executor this plan is for.
    pub executor: String,
    pub nonce: [u8; 16],
    pub issued_at: Timestamp,
    pub plan: Vec<u8>,
    pub signature: [u8; SIGNATURE_LEN],
}

impl Handoff {
    /// The wire form.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.signed_bytes();
        out.extend_from_slice(&self.signature);
        out
    }

    /// Everything the signature covers. An executor name that is not 1–127 printable ASCII
    /// bytes or a plan over 4 GiB cannot be signed; such fields are encoded with clamped
    /// lengths, which makes a hand-off that never verifies.
    fn signed_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + 1 + 16 + 1 + self.executor.len() + 16 + 8 + 4 + self.plan.len() + 64);
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.signer.0);
        out.push(u8::try_from(self.executor.len()).unwrap_or(u8::MAX));
        out.extend_from_slice(self.executor.as_bytes());
        out.extend_from_slice(&self.nonce);
        out.extend_from_slice(&self.issued_at.as_millis().to_be_bytes());
        out.extend_from_slice(&u32::try_from(self.plan.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(&self.plan);
        out
    }

    /// Parses the wire form, refusing plans over `max_plan` bytes. Checks the format only;
    /// nothing parsed here is trustworthy until [`Verifier::verify`] says so.
    pub fn from_bytes(bytes: &[u8], max_plan: usize) -> Result<Self, HandoffError> {
        use HandoffError::{Malformed, Truncated};

        let mut reader = Reader::new(bytes);
        let magic: [u8; 4] = reader.array().ok_or(Truncated)?;
        if magic != MAGIC {
            return Err(Malformed("not an agentfw hand-off"));
        }
        let version = reader.u8().ok_or(Truncated)?;
        if version != VERSION {
            return Err(HandoffError::UnsupportedVersion(version));
        }
        let signer = SignerId(reader.array().ok_or(Truncated)?);
        let executor_len = usize::from(reader.u8().ok_or(Truncated)?);
        let executor = reader.take(executor_len).ok_or(Truncated)?;
        if !valid_executor(executor) {
            return Err(Malformed("bad executor name"));
        }
        let nonce = reader.array().ok_or(Truncated)?;
        let issued_at = Timestamp::from_millis(reader.u64().ok_or(Truncated)?);
        let plan_len = usize::try_from(reader.u32().ok_or(Truncated)?).unwrap_or(usize::MAX);
        if plan_len > max_plan {
            return Err(HandoffError::TooLarge { size: plan_len, max: max_plan });
        }
        let plan = reader.take(plan_len).ok_or(Truncated)?.to_vec();
        let signature = reader.array().ok_or(Truncated)?;
        if reader.remaining() != 0 {
            return Err(Malformed("trailing bytes after the signature"));
        }
        Ok(Self {
            signer,
            executor: String::from_utf8(executor.to_vec()).map_err(|_| Malformed("bad executor name"))?,
            nonce,
            issued_at,
            plan,
            signature,
        })
    }
}

/// A plan that passed every check of [`Verifier::verify`]: the bytes its signer signed.
/// Only a verifier makes one.
#[derive(Debug, PartialEq, Eq)]
pub struct VerifiedPlan {
    signer: SignerId,
    issued_at: Timestamp,
    plan: Vec<u8>,
}

impl VerifiedPlan {
    pub fn signer(&self) -> SignerId {
        self.signer
    }

    pub fn issued_at(&self) -> Timestamp {
        self.issued_at
    }

    /// The signed plan, to run.
    pub fn plan(&self) -> &[u8] {
        &self.plan
    }

    pub fn into_plan(self) -> Vec<u8> {
        self.plan
    }
}

/// An executor's gate: the signers it trusts and the nonces it has accepted.
#[derive(Clone, Debug)]
pub struct Verifier {
    executor: String,
    trusted: BTreeMap<SignerId, VerifyingKey>,
    nonces: ReplayCache,
    max_plan: usize,
}

impl Verifier {
    /// A verifier for the executor named `executor` (the name planners sign for), with
    /// the time window and nonce memory of `replay`.
    pub fn new(executor: impl Into<String>, replay: ReplayConfig) -> Self {
        Self {
            executor: executor.into(),
            trusted: BTreeMap::new(),
            nonces: ReplayCache::new(replay),
            max_plan: DEFAULT_MAX_PLAN,
        }
    }

    /// Sets the largest plan accepted, in bytes.
    #[must_use]
    pub fn with_max_plan(mut self, max_plan: usize) -> Self {
        self.max_plan = max_plan;
        self
    }

    /// Trusts plans signed by `key` from now on.
    pub fn trust(&mut self, key: VerifyingKey) -> SignerId {
        let id = SignerId::of(&key);
        self.trusted.insert(id, key);
        id
    }

    /// Stops trusting a signer; returns whether it was trusted.
    pub fn distrust(&mut self, signer: SignerId) -> bool {
        self.trusted.remove(&signer).is_some()
    }

    pub fn is_trusted(&self, signer: SignerId) -> bool {
        self.trusted.contains_key(&signer)
    }

    /// The accepted nonces, to persist across restarts.
    pub fn nonces(&self) -> &ReplayCache {
        &self.nonces
    }

    /// Restores nonces saved from [`Verifier::nonces`].
    pub fn restore_nonces(&mut self, nonces: ReplayCache) {
        self.nonces = nonces;
    }

    /// Checks a hand-off received as bytes, in the order listed in the module docs, and
    /// returns the signed plan. A hand-off is accepted at most once.
    pub fn verify(&mut self, handoff: &[u8], now: Timestamp) -> Result<VerifiedPlan, HandoffError> {
        let handoff = Handoff::from_bytes(handoff, self.max_plan)?;
        let key = self.trusted.get(&handoff.signer).ok_or(HandoffError::UnknownSigner)?;
        key.verify_strict(&handoff.signed_bytes(), &Signature::from_bytes(&handoff.signature))
            .map_err(|_| HandoffError::BadSignature)?;
        if handoff.executor != self.executor {
            return Err(HandoffError::WrongExecutor);
        }
        self.nonces.record(ReplayKey::new(handoff.signer.0, handoff.nonce), handoff.issued_at, now)?;
        Ok(VerifiedPlan { signer: handoff.signer, issued_at: handoff.issued_at, plan: handoff.plan })
    }
}

/// Why a hand-off was refused or could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandoffError {
    #[error("plan is {size} bytes, over the limit of {max}")]
    TooLarge { size: usize, max: usize },
    #[error("hand-off is truncated")]
    Truncated,
    #[error("not a valid hand-off: {0}")]
    Malformed(&'static str),
    #[error("hand-off format version {0} is not supported")]
    UnsupportedVersion(u8),
    #[error("hand-off is not from a trusted signer")]
    UnknownSigner,
    #[error("signature does not verify")]
    BadSignature,
    #[error("hand-off is addressed to another executor")]
    WrongExecutor,
    #[error("hand-off is older than the time window")]
    Expired,
    #[error("hand-off is dated too far in the future")]
    NotYetValid,
    #[error("hand-off was already accepted once (replay)")]
    Replayed,
    #[error("executor name must be 1 to 127 printable ascii characters")]
    BadExecutorName,
    #[error("not a signer id: expected 32 hex digits")]
    BadSignerId,
}

impl HandoffError {
    /// A stable code for bindings and logs, e.g. `handoff.replayed`.
    pub fn code(&self) -> &'static str {
        match self {
            HandoffError::TooLarge { .. } => "handoff.too_large",
            HandoffError::Truncated => "handoff.truncated",
            HandoffError::Malformed(_) => "handoff.malformed",
            HandoffError::UnsupportedVersion(_) => "handoff.unsupported_version",
            HandoffError::UnknownSigner => "handoff.unknown_signer",
            HandoffError::BadSignature => "handoff.bad_signature",
            HandoffError::WrongExecutor => "handoff.wrong_executor",
            HandoffError::Expired => "handoff.expired",
            HandoffError::NotYetValid => "handoff.not_yet_valid",
            HandoffError::Replayed => "handoff.replayed",
            HandoffError::BadExecutorName => "handoff.bad_executor_name",
            HandoffError::BadSignerId => "handoff.bad_signer_id",
        }
    }
}

impl From<ReplayError> for HandoffError {
    fn from(e: ReplayError) -> Self {
        match e {
            ReplayError::Expired => HandoffError::Expired,
            ReplayError::NotYetValid => HandoffError::NotYetValid,
            ReplayError::Replayed => HandoffError::Replayed,
        }
    }
}
