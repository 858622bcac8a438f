//! Signed plans from a planner to an executor (HO1).

use agentfw_bind::json;
use agentfw_core::handoff::{self as core, DEFAULT_MAX_PLAN};
use agentfw_core::seal::KeyError;
use ed25519_dalek::VerifyingKey;
use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;

use crate::convert::{at, bytes, ms, rng};
use crate::errors::{Failure, Result, guard};
use crate::seal::{RandomOptions, ReplayOptions, replay_config};

/// A planner's signing key.
#[napi]
pub struct Signer {
    inner: core::Signer,
}

#[napi]
impl Signer {
    /// From a 32-byte Ed25519 secret kept by the caller.
    #[napi(factory)]
    pub fn from_secret(secret: Buffer) -> Result<Self> {
        guard(|| {
            let secret: &[u8; 32] =
                (&*secret).try_into().map_err(|_| Failure::Input("a signer's secret is 32 bytes".to_owned()))?;
            Ok(Signer { inner: core::Signer::from_secret(secret) })
        })
    }

    /// A fresh signer, randomness from the OS.
    #[napi(factory)]
    pub fn generate() -> Result<Self> {
        guard(|| Ok(Signer { inner: core::Signer::generate(&mut rng(None)?) }))
    }

    /// A signer drawn from `seed`: anyone who knows the seed can sign as it, so this is for
    /// tests and test vectors only.
    #[napi(factory)]
    pub fn generate_for_tests(seed: i64) -> Result<Self> {
        guard(|| Ok(Signer { inner: core::Signer::generate(&mut rng(Some(seed))?) }))
    }

    #[napi(getter)]
    pub fn id(&self) -> String {
        self.inner.id().to_string()
    }

    /// The 32-byte public key an executor trusts.
    #[napi(getter)]
    pub fn verifying_key(&self) -> Buffer {
        self.inner.verifying_key().as_bytes().to_vec().into()
    }

    /// Signs `plan` for the executor named `executor`: the hand-off's bytes.
    #[napi]
    pub fn sign(
        &self,
        plan: Either<String, Buffer>,
        executor: String,
        options: Option<RandomOptions>,
    ) -> Result<Buffer> {
        let (now, seed) = options.map_or((None, None), |o| (o.now, o.seed));
        guard(|| Ok(self.inner.sign(&bytes(plan), &executor, at(now)?, &mut rng(seed)?)?.to_bytes().into()))
    }
}

/// A plan that passed every check: the bytes its signer signed.
#[napi(object)]
pub struct VerifiedPlan {
    pub signer: String,
    pub issued_at: i64,
    pub plan: Buffer,
}

/// A verifier's window, nonce memory and largest plan.
#[napi(object)]
pub struct VerifierOptions {
    pub capacity: Option<u32>,
    pub max_age_ms: Option<i64>,
    pub max_skew_ms: Option<i64>,
    pub max_plan: Option<u32>,
}

/// An executor's gate: trusted signers and the nonces already accepted.
#[napi]
pub struct Verifier {
    inner: core::Verifier,
}

#[napi]
impl Verifier {
    #[napi(constructor)]
    pub fn new(executor: String, options: Option<VerifierOptions>) -> Result<Self> {
        let (replay, max_plan) = match options {
            None => (None, None),
            Some(o) => (
                Some(ReplayOptions { capacity: o.capacity, max_age_ms: o.max_age_ms, max_skew_ms: o.max_skew_ms }),
                o.max_plan,
            ),
        };
        let replay = guard(|| replay_config(replay))?;
        let inner =
            core::Verifier::new(executor, replay).with_max_plan(max_plan.map_or(DEFAULT_MAX_PLAN, |m| m as usize));
        Ok(Verifier { inner })
    }

    /// Trust plans signed by this 32-byte public key; returns the signer's id.
    #[napi]
    pub fn trust(&mut self, key: Buffer) -> Result<String> {
        guard(|| {
            let bad = || Failure::from(KeyError::BadKey("ed25519 public key"));
            let bytes: &[u8; 32] = (&*key).try_into().map_err(|_| bad())?;
            let key = VerifyingKey::from_bytes(bytes).map_err(|_| bad())?;
            Ok(self.inner.trust(key).to_string())
        })
    }

    /// Stop trusting a signer; returns whether it was trusted.
    #[napi]
    pub fn distrust(&mut self, signer: String) -> Result<bool> {
        guard(|| Ok(self.inner.distrust(signer.parse()?)))
    }

    #[napi]
    pub fn is_trusted(&self, signer: String) -> Result<bool> {
        guard(|| Ok(self.inner.is_trusted(signer.parse()?)))
    }

    /// Checks a hand-off and returns the signed plan; each hand-off is accepted once.
    #[napi]
    pub fn verify(&mut self, handoff: Buffer, now: Option<i64>) -> Result<VerifiedPlan> {
        guard(|| {
            let v = self.inner.verify(&handoff, at(now)?)?;
            Ok(VerifiedPlan {
                signer: v.signer().to_string(),
                issued_at: ms(v.issued_at()),
                plan: v.into_plan().into(),
            })
        })
    }

    /// The accepted nonces as JSON, to persist.
    #[napi]
    pub fn nonces_json(&self) -> Result<String> {
        guard(|| json::text("the accepted nonces", self.inner.nonces()))
    }

    #[napi]
    pub fn restore_nonces(&mut self, data: Either<String, Buffer>) -> Result<()> {
        guard(|| {
            self.inner.restore_nonces(json::restore("saved nonces", &bytes(data))?);
            Ok(())
        })
    }
}
