//! `agentfw.seal`: device keys, public bundles, rotations, the keyring, the replay cache,
//! and sealing and opening envelopes (TX2–TX5).

use agentfw_bind::host::{at, rng};
use agentfw_bind::json;
use agentfw_bind::names::key_status;
use agentfw_core::message::MessageId;
use agentfw_core::seal::{self as core, DeviceId, DeviceKeys, Draft, Envelope, Limits, ReplayConfig};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::Data;
use crate::errors::{Failure, guard};

fn device(text: &str) -> Result<DeviceId, Failure> {
    text.parse::<DeviceId>().map_err(Failure::from)
}

/// A device's public keys: one line of text, safe to share.
#[pyclass(frozen, eq, module = "agentfw._agentfw")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicBundle {
    inner: core::PublicBundle,
}

#[pymethods]
impl PublicBundle {
    /// Parses an `agentfw-pub-v1 …` line.
    #[staticmethod]
    fn parse(py: Python<'_>, line: &str) -> PyResult<Self> {
        guard(py, || Ok(PublicBundle { inner: core::PublicBundle::parse(line)? }))
    }

    #[getter]
    fn device(&self) -> String {
        self.inner.device().to_string()
    }

    fn to_line(&self) -> String {
        self.inner.to_line()
    }

    fn __str__(&self) -> String {
        self.inner.to_line()
    }

    fn __repr__(&self) -> String {
        format!("PublicBundle(device={:?})", self.device())
    }
}

/// A device's signed notice that its keys were replaced.
#[pyclass(frozen, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Rotation {
    inner: core::Rotation,
}

#[pymethods]
impl Rotation {
    #[staticmethod]
    fn parse(py: Python<'_>, line: &str) -> PyResult<Self> {
        guard(py, || Ok(Rotation { inner: core::Rotation::parse(line)? }))
    }

    /// The device that is retired.
    #[getter]
    fn old(&self) -> String {
        self.inner.old().to_string()
    }

    #[getter]
    fn new_bundle(&self) -> PublicBundle {
        PublicBundle { inner: self.inner.new_bundle().clone() }
    }

    #[getter]
    fn at(&self) -> u64 {
        self.inner.at().as_millis()
    }

    /// Checks both signatures, given the old device's bundle.
    fn verify(&self, py: Python<'_>, old: &PublicBundle) -> PyResult<()> {
        guard(py, || Ok(self.inner.verify(&old.inner)?))
    }

    fn to_line(&self) -> String {
        self.inner.to_line()
    }

    fn __str__(&self) -> String {
        self.inner.to_line()
    }
}

/// One device's secret keys (Ed25519 to sign, X-Wing to receive). `repr` shows the device
/// id only.
#[pyclass(frozen, module = "agentfw._agentfw")]
#[derive(Debug)]
pub struct Keys {
    pub inner: DeviceKeys,
}

#[pymethods]
impl Keys {
    /// Fresh keys, randomness from the OS.
    #[staticmethod]
    #[pyo3(signature = (*, now = None))]
    fn generate(py: Python<'_>, now: Option<u64>) -> PyResult<Self> {
        Keys::new(py, now, None)
    }

    /// Keys drawn from `seed`: anyone who knows the seed has the secrets, so these are for
    /// tests and test vectors only, never for a device.
    #[staticmethod]
    #[pyo3(signature = (seed, *, now = None))]
    fn generate_for_tests(py: Python<'_>, seed: u64, now: Option<u64>) -> PyResult<Self> {
        Keys::new(py, now, Some(seed))
    }

    /// Reads a key file (`agentfw-keys-v1`).
    #[staticmethod]
    fn from_key_file(py: Python<'_>, data: Data) -> PyResult<Self> {
        guard(py, || Ok(Keys { inner: DeviceKeys::from_key_file(&data.into_bytes())? }))
    }

    /// The key file text, holding both secrets: keep it private.
    fn to_key_file(&self) -> String {
        self.inner.to_key_file().to_string()
    }

    #[getter]
    fn device(&self) -> String {
        self.inner.device().to_string()
    }

    #[getter]
    fn public(&self) -> PublicBundle {
        PublicBundle { inner: self.inner.public().clone() }
    }

    #[getter]
    fn created(&self) -> u64 {
        self.inner.created().as_millis()
    }

    #[getter]
    fn supersedes(&self) -> Option<String> {
        self.inner.supersedes().map(|d| d.to_string())
    }

    /// New keys for this device (randomness from the OS) and the rotation notice for peers.
    #[pyo3(signature = (*, now = None))]
    fn rotate(&self, py: Python<'_>, now: Option<u64>) -> PyResult<(Keys, Rotation)> {
        guard(py, || {
            let mut rng = rng(None)?;
            let (next, rotation) = py.detach(|| self.inner.rotate(at(now), &mut rng));
            Ok((Keys { inner: next }, Rotation { inner: rotation }))
        })
    }

    fn __repr__(&self) -> String {
        format!("Keys(device={:?})", self.device())
    }
}

impl Keys {
    fn new(py: Python<'_>, now: Option<u64>, seed: Option<u64>) -> PyResult<Self> {
        guard(py, || {
            let mut rng = rng(seed)?;
            Ok(Keys { inner: py.detach(|| DeviceKeys::generate(at(now), &mut rng)) })
        })
    }
}

/// The devices whose envelopes this device accepts.
#[pyclass(module = "agentfw._agentfw")]
#[derive(Clone, Debug, Default)]
pub struct Keyring {
    inner: core::Keyring,
}

#[pymethods]
impl Keyring {
    #[new]
    fn new() -> Self {
        Keyring::default()
    }

    /// Accept envelopes from this device from now on.
    fn trust(&mut self, py: Python<'_>, bundle: &PublicBundle) -> PyResult<()> {
        guard(py, || Ok(self.inner.trust(bundle.inner.clone())?))
    }

    /// Stop accepting anything signed by this device.
    #[pyo3(signature = (device, *, now = None))]
    fn revoke(&mut self, py: Python<'_>, device: &str, now: Option<u64>) -> PyResult<()> {
        guard(py, || Ok(self.inner.revoke(self::device(device)?, at(now))?))
    }

    /// Apply a device's rotation: its old keys stop verifying, the new ones are trusted.
    fn apply_rotation(&mut self, py: Python<'_>, rotation: &Rotation) -> PyResult<()> {
        guard(py, || Ok(self.inner.apply_rotation(&rotation.inner)?))
    }

    /// The device's bundle if its keys may be used.
    fn active(&self, py: Python<'_>, device: &str) -> PyResult<Option<PublicBundle>> {
        guard(py, || Ok(self.inner.active(self::device(device)?).map(|b| PublicBundle { inner: b.clone() })))
    }

    /// `active`, `superseded`, `revoked`, or None for an unknown device.
    fn status(&self, py: Python<'_>, device: &str) -> PyResult<Option<&'static str>> {
        guard(py, || Ok(self.inner.get(self::device(device)?).map(|p| key_status(&p.status))))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        guard(py, || json::text("the keyring", &self.inner))
    }

    #[staticmethod]
    fn from_json(py: Python<'_>, data: Data) -> PyResult<Self> {
        guard(py, || Ok(Keyring { inner: json::restore("a saved keyring", &data.into_bytes())? }))
    }
}

/// Which messages were already accepted (TX4), as explicit state to persist.
#[pyclass(module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct ReplayCache {
    pub inner: core::ReplayCache,
}

pub fn replay_config(capacity: usize, max_age_ms: u64, max_skew_ms: u64) -> ReplayConfig {
    ReplayConfig {
        capacity,
        max_age: std::time::Duration::from_millis(max_age_ms),
        max_skew: std::time::Duration::from_millis(max_skew_ms),
    }
}

#[pymethods]
impl ReplayCache {
    #[new]
    #[pyo3(signature = (*, capacity = 100_000, max_age_ms = 3_600_000, max_skew_ms = 300_000))]
    fn new(capacity: usize, max_age_ms: u64, max_skew_ms: u64) -> Self {
        ReplayCache { inner: core::ReplayCache::new(replay_config(capacity, max_age_ms, max_skew_ms)) }
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Drop entries that can no longer pass the window.
    #[pyo3(signature = (*, now = None))]
    fn prune(&mut self, now: Option<u64>) {
        self.inner.prune(at(now));
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.inner.poll_timeout().map(|t| t.as_millis())
    }

    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        guard(py, || json::text("the replay cache", &self.inner))
    }

    #[staticmethod]
    fn from_json(py: Python<'_>, data: Data) -> PyResult<Self> {
        guard(py, || Ok(ReplayCache { inner: json::restore("a saved replay cache", &data.into_bytes())? }))
    }
}

agentfw_bind::header! { #[pyclass(frozen, get_all, module = "agentfw._agentfw")] [] }

/// An opened envelope: its checked header and the body.
#[pyclass(frozen, module = "agentfw._agentfw")]
#[derive(Debug)]
pub struct Opened {
    #[pyo3(get)]
    header: Header,
    body: Vec<u8>,
}

#[pymethods]
impl Opened {
    #[getter]
    fn body<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.body)
    }
}

fn limits(max_plaintext: usize) -> Limits {
    Limits { max_plaintext }
}

/// Seals `body` to `recipient`, signed by `sender`: the envelope's bytes.
#[pyfunction]
#[pyo3(signature = (sender, recipient, body, *, content_type = "text/plain", id = None, now = None, seed = None, max_plaintext = 65_536))]
#[allow(clippy::too_many_arguments)]
pub fn seal<'py>(
    py: Python<'py>,
    sender: &Keys,
    recipient: &PublicBundle,
    body: Data,
    content_type: &str,
    id: Option<&str>,
    now: Option<u64>,
    seed: Option<u64>,
    max_plaintext: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = guard(py, || {
        let now = at(now);
        let mut rng = rng(seed)?;
        let id = match id {
            Some(id) => id.parse::<MessageId>()?,
            None => MessageId::generate(now, &mut rng),
        };
        let body = body.into_bytes();
        py.detach(|| {
            let draft = Draft { id, content_type, body: &body };
            Ok(core::seal(&sender.inner, &recipient.inner, &draft, &limits(max_plaintext), now, &mut rng)?.into_bytes())
        })
    })?;
    Ok(PyBytes::new(py, &bytes))
}

/// Opens an envelope addressed to `recipient` from a device in `keyring`; the replay cache
/// records it.
#[pyfunction]
#[pyo3(signature = (recipient, keyring, replay, envelope, *, now = None, max_plaintext = 65_536))]
pub fn open(
    py: Python<'_>,
    recipient: &Keys,
    keyring: &Keyring,
    replay: &mut ReplayCache,
    envelope: &[u8],
    now: Option<u64>,
    max_plaintext: usize,
) -> PyResult<Opened> {
    guard(py, || {
        let now = at(now);
        let opened = py.detach(|| {
            core::open(&recipient.inner, &keyring.inner, &mut replay.inner, envelope, &limits(max_plaintext), now)
        })?;
        Ok(Opened { header: Header::from(&opened.header), body: opened.body })
    })
}

/// The header of an envelope, checking its format only (what a relay routes on).
#[pyfunction]
#[pyo3(signature = (envelope, *, max_plaintext = 65_536))]
pub fn envelope_header(py: Python<'_>, envelope: &[u8], max_plaintext: usize) -> PyResult<Header> {
    guard(py, || Ok(Header::from(Envelope::from_bytes(envelope, &limits(max_plaintext))?.header())))
}
