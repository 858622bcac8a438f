//! Device keys, bundles, rotations, the keyring, the replay cache, and envelopes (TX2–TX5).

use agentfw_bind::json;
use agentfw_bind::names::key_status;
use agentfw_core::message::MessageId;
use agentfw_core::seal::{self as core, DeviceId, DeviceKeys, Draft, Envelope, Limits, ReplayConfig};
use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;

use crate::convert::{at, bytes, count, ms, rng};
use crate::errors::{Failure, Result, guard};

fn device(text: &str) -> std::result::Result<DeviceId, Failure> {
    Ok(text.parse::<DeviceId>()?)
}

/// A device's public keys: one line of text, safe to share.
#[napi]
#[derive(Clone)]
pub struct PublicBundle {
    pub(crate) inner: core::PublicBundle,
}

#[napi]
impl PublicBundle {
    /// Parses an `agentfw-pub-v1 …` line.
    #[napi(factory)]
    pub fn parse(line: String) -> Result<Self> {
        guard(|| Ok(PublicBundle { inner: core::PublicBundle::parse(&line)? }))
    }

    #[napi(getter)]
    pub fn device(&self) -> String {
        self.inner.device().to_string()
    }

    #[napi]
    pub fn to_line(&self) -> String {
        self.inner.to_line()
    }

    #[napi]
    pub fn equals(&self, other: &PublicBundle) -> bool {
        self.inner == other.inner
    }
}

/// A device's signed notice that its keys were replaced.
#[napi]
pub struct Rotation {
    inner: core::Rotation,
}

#[napi]
impl Rotation {
    #[napi(factory)]
    pub fn parse(line: String) -> Result<Self> {
        guard(|| Ok(Rotation { inner: core::Rotation::parse(&line)? }))
    }

    /// The device that is retired.
    #[napi(getter)]
    pub fn old(&self) -> String {
        self.inner.old().to_string()
    }

    #[napi(getter)]
    pub fn new_bundle(&self) -> PublicBundle {
        PublicBundle { inner: self.inner.new_bundle().clone() }
    }

    #[napi(getter)]
    pub fn at(&self) -> i64 {
        ms(self.inner.at())
    }

    /// Checks both signatures, given the old device's bundle.
    #[napi]
    pub fn verify(&self, old: &PublicBundle) -> Result<()> {
        guard(|| Ok(self.inner.verify(&old.inner)?))
    }

    #[napi]
    pub fn to_line(&self) -> String {
        self.inner.to_line()
    }
}

/// A pair of fresh keys and the rotation notice for peers.
#[napi(object, object_from_js = false)]
pub struct Rotated {
    pub keys: Keys,
    pub rotation: Rotation,
}

/// Options for calls that draw randomness.
#[napi(object)]
pub struct RandomOptions {
    pub now: Option<i64>,
    /// For tests only: a fixed seed instead of randomness from the OS.
    pub seed: Option<i64>,
}

/// Options of calls that make keys.
#[napi(object)]
pub struct KeyOptions {
    pub now: Option<i64>,
}

/// One device's secret keys (Ed25519 to sign, X-Wing to receive).
#[napi]
pub struct Keys {
    pub(crate) inner: DeviceKeys,
}

#[napi]
impl Keys {
    /// Fresh keys, randomness from the OS.
    #[napi(factory)]
    pub fn generate(options: Option<KeyOptions>) -> Result<Self> {
        guard(|| Ok(Keys { inner: DeviceKeys::generate(at(options.and_then(|o| o.now))?, &mut rng(None)?) }))
    }

    /// Keys drawn from `seed`: anyone who knows the seed has the secrets, so these are for
    /// tests and test vectors only, never for a device.
    #[napi(factory)]
    pub fn generate_for_tests(seed: i64, options: Option<KeyOptions>) -> Result<Self> {
        guard(|| Ok(Keys { inner: DeviceKeys::generate(at(options.and_then(|o| o.now))?, &mut rng(Some(seed))?) }))
    }

    /// Reads a key file (`agentfw-keys-v1`).
    #[napi(factory)]
    pub fn from_key_file(data: Either<String, Buffer>) -> Result<Self> {
        guard(|| Ok(Keys { inner: DeviceKeys::from_key_file(&bytes(data))? }))
    }

    /// The key file text, holding both secrets: keep it private.
    #[napi]
    pub fn to_key_file(&self) -> String {
        self.inner.to_key_file().to_string()
    }

    #[napi(getter)]
    pub fn device(&self) -> String {
        self.inner.device().to_string()
    }

    #[napi(getter)]
    pub fn public(&self) -> PublicBundle {
        PublicBundle { inner: self.inner.public().clone() }
    }

    #[napi(getter)]
    pub fn created(&self) -> i64 {
        ms(self.inner.created())
    }

    #[napi(getter)]
    pub fn supersedes(&self) -> Option<String> {
        self.inner.supersedes().map(|d| d.to_string())
    }

    /// New keys for this device (randomness from the OS) and the rotation notice for peers.
    #[napi]
    pub fn rotate(&self, options: Option<KeyOptions>) -> Result<Rotated> {
        guard(|| {
            let (next, rotation) = self.inner.rotate(at(options.and_then(|o| o.now))?, &mut rng(None)?);
            Ok(Rotated { keys: Keys { inner: next }, rotation: Rotation { inner: rotation } })
        })
    }
}

/// The devices whose envelopes this device accepts.
#[napi]
#[derive(Default)]
pub struct Keyring {
    inner: core::Keyring,
}

#[napi]
impl Keyring {
    #[napi(constructor)]
    pub fn new() -> Self {
        Keyring::default()
    }

    /// Accept envelopes from this device from now on.
    #[napi]
    pub fn trust(&mut self, bundle: &PublicBundle) -> Result<()> {
        guard(|| Ok(self.inner.trust(bundle.inner.clone())?))
    }

    /// Stop accepting anything signed by this device.
    #[napi]
    pub fn revoke(&mut self, device: String, now: Option<i64>) -> Result<()> {
        guard(|| Ok(self.inner.revoke(self::device(&device)?, at(now)?)?))
    }

    /// Apply a device's rotation: its old keys stop verifying, the new ones are trusted.
    #[napi]
    pub fn apply_rotation(&mut self, rotation: &Rotation) -> Result<()> {
        guard(|| Ok(self.inner.apply_rotation(&rotation.inner)?))
    }

    /// The device's bundle if its keys may be used.
    #[napi]
    pub fn active(&self, device: String) -> Result<Option<PublicBundle>> {
        guard(|| Ok(self.inner.active(self::device(&device)?).map(|b| PublicBundle { inner: b.clone() })))
    }

    /// `active`, `superseded`, `revoked`, or null for an unknown device.
    #[napi(ts_return_type = "'active' | 'superseded' | 'revoked' | null")]
    pub fn status(&self, device: String) -> Result<Option<String>> {
        guard(|| Ok(self.inner.get(self::device(&device)?).map(|p| key_status(&p.status).to_owned())))
    }

    #[napi(getter)]
    pub fn size(&self) -> u32 {
        count(self.inner.len())
    }

    #[napi]
    pub fn to_json(&self) -> Result<String> {
        guard(|| json::text("the keyring", &self.inner))
    }

    #[napi(factory)]
    pub fn from_json(data: Either<String, Buffer>) -> Result<Self> {
        guard(|| Ok(Keyring { inner: json::restore("a saved keyring", &bytes(data))? }))
    }
}

/// The replay window and memory bound.
#[napi(object)]
pub struct ReplayOptions {
    pub capacity: Option<u32>,
    pub max_age_ms: Option<i64>,
    pub max_skew_ms: Option<i64>,
}

/// The options over the core's defaults; a negative duration is refused.
pub fn replay_config(options: Option<ReplayOptions>) -> std::result::Result<ReplayConfig, Failure> {
    let d = ReplayConfig::default();
    let Some(o) = options else { return Ok(d) };
    let dur = |name: &str, v: Option<i64>, default| match v {
        None => Ok(default),
        Some(ms) => u64::try_from(ms)
            .map(std::time::Duration::from_millis)
            .map_err(|_| Failure::Input(format!("`{name}` must not be negative, not {ms}"))),
    };
    Ok(ReplayConfig {
        capacity: o.capacity.map_or(d.capacity, |c| c as usize),
        max_age: dur("maxAgeMs", o.max_age_ms, d.max_age)?,
        max_skew: dur("maxSkewMs", o.max_skew_ms, d.max_skew)?,
    })
}

/// Which messages were already accepted (TX4), as explicit state to persist.
#[napi]
pub struct ReplayCache {
    inner: core::ReplayCache,
}

#[napi]
impl ReplayCache {
    #[napi(constructor)]
    pub fn new(options: Option<ReplayOptions>) -> Result<Self> {
        guard(|| Ok(ReplayCache { inner: core::ReplayCache::new(replay_config(options)?) }))
    }

    #[napi(getter)]
    pub fn size(&self) -> u32 {
        count(self.inner.len())
    }

    /// Drop entries that can no longer pass the window.
    #[napi]
    pub fn prune(&mut self, now: Option<i64>) -> Result<()> {
        guard(|| {
            self.inner.prune(at(now)?);
            Ok(())
        })
    }

    #[napi]
    pub fn poll_timeout(&self) -> Option<i64> {
        self.inner.poll_timeout().map(ms)
    }

    #[napi]
    pub fn to_json(&self) -> Result<String> {
        guard(|| json::text("the replay cache", &self.inner))
    }

    #[napi(factory)]
    pub fn from_json(data: Either<String, Buffer>) -> Result<Self> {
        guard(|| Ok(ReplayCache { inner: json::restore("a saved replay cache", &bytes(data))? }))
    }
}

agentfw_bind::header! { #[napi(object)] [pub] }

/// An opened envelope: its checked header and the body.
#[napi(object)]
pub struct Opened {
    pub header: Header,
    pub body: Buffer,
}

/// Options of `seal`.
#[napi(object)]
pub struct SealOptions {
    /// Default `text/plain`.
    pub content_type: Option<String>,
    /// The message id (default: a fresh one).
    pub id: Option<String>,
    pub now: Option<i64>,
    pub seed: Option<i64>,
    /// Default 64 KiB.
    pub max_plaintext: Option<u32>,
}

/// Options of `open` and `envelopeHeader`.
#[napi(object)]
pub struct OpenOptions {
    pub now: Option<i64>,
    /// Default 64 KiB.
    pub max_plaintext: Option<u32>,
}

fn limits(max_plaintext: Option<u32>) -> Limits {
    max_plaintext.map_or_else(Limits::default, |m| Limits { max_plaintext: m as usize })
}

/// Seals `body` to `recipient`, signed by `sender`: the envelope's bytes.
#[napi]
pub fn seal(
    sender: &Keys,
    recipient: &PublicBundle,
    body: Either<String, Buffer>,
    options: Option<SealOptions>,
) -> Result<Buffer> {
    guard(|| {
        let o =
            options.unwrap_or(SealOptions { content_type: None, id: None, now: None, seed: None, max_plaintext: None });
        let now = at(o.now)?;
        let mut rng = rng(o.seed)?;
        let id = match o.id {
            Some(id) => id.parse::<MessageId>()?,
            None => MessageId::generate(now, &mut rng),
        };
        let body = bytes(body);
        let content_type = o.content_type.unwrap_or_else(|| "text/plain".to_owned());
        let draft = Draft { id, content_type: &content_type, body: &body };
        Ok(core::seal(&sender.inner, &recipient.inner, &draft, &limits(o.max_plaintext), now, &mut rng)?
            .into_bytes()
            .into())
    })
}

/// Opens an envelope addressed to `recipient` from a device in `keyring`; the replay cache
/// records it.
#[napi]
pub fn open(
    recipient: &Keys,
    keyring: &Keyring,
    replay: &mut ReplayCache,
    envelope: Buffer,
    options: Option<OpenOptions>,
) -> Result<Opened> {
    guard(|| {
        let (now, max) = options.map_or((None, None), |o| (o.now, o.max_plaintext));
        let opened =
            core::open(&recipient.inner, &keyring.inner, &mut replay.inner, &envelope, &limits(max), at(now)?)?;
        Ok(Opened { header: Header::from(&opened.header), body: opened.body.into() })
    })
}

/// The header of an envelope, checking its format only (what a relay routes on).
#[napi]
pub fn envelope_header(envelope: Buffer, options: Option<OpenOptions>) -> Result<Header> {
    guard(|| {
        let max = options.and_then(|o| o.max_plaintext);
        Ok(Header::from(Envelope::from_bytes(&envelope, &limits(max))?.header()))
    })
}
