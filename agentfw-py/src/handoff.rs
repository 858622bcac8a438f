//! `agentfw.handoff`: signed plans from a planner to an executor (HO1).

use agentfw_bind::host::{at, rng};
use agentfw_bind::json;
use agentfw_core::handoff::{self as core, DEFAULT_MAX_PLAN};
use agentfw_core::seal::KeyError;
use ed25519_dalek::VerifyingKey;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::Data;
use crate::errors::{Failure, guard};
use crate::seal::replay_config;

/// A planner's signing key. `repr` shows its id only.
#[pyclass(frozen, module = "agentfw._agentfw")]
#[derive(Debug)]
pub struct Signer {
    inner: core::Signer,
}

#[pymethods]
impl Signer {
    /// From a 32-byte Ed25519 secret kept by the caller, else fresh from the OS.
    #[new]
    #[pyo3(signature = (secret = None))]
    fn new(py: Python<'_>, secret: Option<&[u8]>) -> PyResult<Self> {
        guard(py, || match secret {
            Some(secret) => {
                let secret: &[u8; 32] =
                    secret.try_into().map_err(|_| Failure::Input("a signer's secret is 32 bytes".to_owned()))?;
                Ok(Signer { inner: core::Signer::from_secret(secret) })
            }
            None => Ok(Signer { inner: core::Signer::generate(&mut rng(None)?) }),
        })
    }

    /// A signer drawn from `seed`: anyone who knows the seed can sign as it, so this is for
    /// tests and test vectors only.
    #[staticmethod]
    fn generate_for_tests(py: Python<'_>, seed: u64) -> PyResult<Self> {
        guard(py, || Ok(Signer { inner: core::Signer::generate(&mut rng(Some(seed))?) }))
    }

    #[getter]
    fn id(&self) -> String {
        self.inner.id().to_string()
    }

    /// The 32-byte public key an executor trusts.
    #[getter]
    fn verifying_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.inner.verifying_key().as_bytes())
    }

    /// Signs `plan` for the executor named `executor`: the hand-off's bytes.
    #[pyo3(signature = (plan, executor, *, now = None, seed = None))]
    fn sign<'py>(
        &self,
        py: Python<'py>,
        plan: Data,
        executor: &str,
        now: Option<u64>,
        seed: Option<u64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = guard(py, || {
            let mut rng = rng(seed)?;
            let plan = plan.into_bytes();
            Ok(py.detach(|| self.inner.sign(&plan, executor, at(now), &mut rng))?.to_bytes())
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    fn __repr__(&self) -> String {
        format!("Signer(id={:?})", self.id())
    }
}

/// A plan that passed every check: the bytes its signer signed.
#[pyclass(frozen, module = "agentfw._agentfw")]
#[derive(Debug)]
pub struct VerifiedPlan {
    #[pyo3(get)]
    signer: String,
    #[pyo3(get)]
    issued_at: u64,
    plan: Vec<u8>,
}

#[pymethods]
impl VerifiedPlan {
    #[getter]
    fn plan<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.plan)
    }
}

/// An executor's gate: trusted signers and the nonces already accepted.
#[pyclass(module = "agentfw._agentfw")]
#[derive(Debug)]
pub struct Verifier {
    inner: core::Verifier,
}

#[pymethods]
impl Verifier {
    #[new]
    #[pyo3(signature = (executor, *, capacity = 100_000, max_age_ms = 3_600_000, max_skew_ms = 300_000, max_plan = DEFAULT_MAX_PLAN))]
    fn new(executor: String, capacity: usize, max_age_ms: u64, max_skew_ms: u64, max_plan: usize) -> Self {
        let inner =
            core::Verifier::new(executor, replay_config(capacity, max_age_ms, max_skew_ms)).with_max_plan(max_plan);
        Verifier { inner }
    }

    /// Trust plans signed by this 32-byte public key; returns the signer's id.
    fn trust(&mut self, py: Python<'_>, key: &[u8]) -> PyResult<String> {
        guard(py, || {
            let bad = || Failure::from(KeyError::BadKey("ed25519 public key"));
            let bytes: &[u8; 32] = key.try_into().map_err(|_| bad())?;
            let key = VerifyingKey::from_bytes(bytes).map_err(|_| bad())?;
            Ok(self.inner.trust(key).to_string())
        })
    }

    /// Stop trusting a signer; returns whether it was trusted.
    fn distrust(&mut self, py: Python<'_>, signer: &str) -> PyResult<bool> {
        guard(py, || Ok(self.inner.distrust(signer.parse()?)))
    }

    fn is_trusted(&self, py: Python<'_>, signer: &str) -> PyResult<bool> {
        guard(py, || Ok(self.inner.is_trusted(signer.parse()?)))
    }

    /// Checks a hand-off and returns the signed plan; each hand-off is accepted once.
    #[pyo3(signature = (handoff, *, now = None))]
    fn verify(&mut self, py: Python<'_>, handoff: &[u8], now: Option<u64>) -> PyResult<VerifiedPlan> {
        guard(py, || {
            let v = py.detach(|| self.inner.verify(handoff, at(now)))?;
            Ok(VerifiedPlan {
                signer: v.signer().to_string(),
                issued_at: v.issued_at().as_millis(),
                plan: v.into_plan(),
            })
        })
    }

    /// The accepted nonces as JSON, to persist.
    fn nonces_json(&self, py: Python<'_>) -> PyResult<String> {
        guard(py, || json::text("the accepted nonces", self.inner.nonces()))
    }

    fn restore_nonces(&mut self, py: Python<'_>, data: Data) -> PyResult<()> {
        guard(py, || {
            self.inner.restore_nonces(json::restore("saved nonces", &data.into_bytes())?);
            Ok(())
        })
    }
}
