//! Device keys, the public bundle a device shares, key rotation, and the keyring of known
//! senders (TX2, TX5).
//!
//! Three text formats, each versioned by its first word so that a later version is refused
//! with a clear error rather than misread:
//!
//! - the key file (secret; the CLI keeps it in the device's home):
//!   ```text
//!   agentfw-keys-v1
//!   # comment lines and blank lines are ignored
//!   device: <32 hex digits>
//!   created: <ms since the Unix epoch>
//!   supersedes: <device id>          (only after a rotation)
//!   ed25519-secret: <base64url>
//!   xwing-secret: <base64url>
//!   ```
//! - the public bundle (one line, safe to share):
//!   `agentfw-pub-v1 <device id> <ed25519 public, base64url> <x-wing public, base64url>`
//! - the rotation notice (one line, safe to share), signed by both the old and the new
//!   Ed25519 key: `agentfw-rotate-v1 <old id> <ms> <new id> <ed25519> <x-wing> <old sig> <new sig>`
//!
//! base64url is without padding and must be canonical. A device id is the first 16 bytes
//! of a BLAKE3 key derivation over both public keys, so a bundle whose id does not match
//! its keys is refused.

use core::fmt;
use core::str::FromStr;
use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use hpke::kem::XWing;
use hpke::{Deserializable, Kem as _, Serializable};
use rand_core::CryptoRng;
use serde::{Deserialize, Serialize};
use zeroize::{Zeroize, Zeroizing};

use super::{hex, unhex};
use crate::time::Timestamp;

pub(crate) type KemPublicKey = <XWing as hpke::Kem>::PublicKey;
pub(crate) type KemPrivateKey = <XWing as hpke::Kem>::PrivateKey;

const BUNDLE_TAG: &str = "agentfw-pub-v1";
const KEY_FILE_TAG: &str = "agentfw-keys-v1";
const ROTATION_TAG: &str = "agentfw-rotate-v1";
const DEVICE_ID_CONTEXT: &str = "agentfw 2025 device id v1";
/// What every signed statement starts with, so that no statement reads as an envelope
/// (`AFWE…`), a rotation notice (`agentfw-rotate-v1…`) or another protocol's statement.
const STATEMENT_TAG: &[u8] = b"agentfw-statement-v1\0";
/// Longest piece of user input an error message repeats.
const ECHO_MAX: usize = 40;

/// The name of a device: 16 bytes derived from its public keys, shown as 32 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct DeviceId([u8; 16]);

impl DeviceId {
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    pub const fn to_bytes(self) -> [u8; 16] {
        self.0
    }

    fn derive(signing: &VerifyingKey, kem: &KemPublicKey) -> Self {
        let mut hasher = blake3::Hasher::new_derive_key(DEVICE_ID_CONTEXT);
        hasher.update(signing.as_bytes());
        hasher.update(&kem.to_bytes());
        let mut id = [0u8; 16];
        hasher.finalize_xof().fill(&mut id);
        Self(id)
    }
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex(&self.0))
    }
}

impl fmt::Debug for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceId({self})")
    }
}

impl FromStr for DeviceId {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Self, KeyError> {
        unhex::<16>(s).map(Self).ok_or_else(|| KeyError::BadDeviceId(echo(s)))
    }
}

impl From<DeviceId> for String {
    fn from(id: DeviceId) -> String {
        id.to_string()
    }
}

impl TryFrom<String> for DeviceId {
    type Error = KeyError;

    fn try_from(s: String) -> Result<Self, KeyError> {
        s.parse()
    }
}

/// The public half of a device's keys: what peers need to seal to it and to check its
/// signatures. Shared as one line of text ([`PublicBundle::to_line`]).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct PublicBundle {
    device: DeviceId,
    signing: VerifyingKey,
    kem: KemPublicKey,
}

impl PublicBundle {
    fn new(signing: VerifyingKey, kem: KemPublicKey) -> Self {
        Self { device: DeviceId::derive(&signing, &kem), signing, kem }
    }

    pub fn device(&self) -> DeviceId {
        self.device
    }

    /// The Ed25519 key this device signs with.
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.signing
    }

    /// The X-Wing key envelopes to this device are sealed to.
    pub fn kem_key(&self) -> &KemPublicKey {
        &self.kem
    }

    /// `agentfw-pub-v1 <device id> <ed25519> <x-wing>`, without a line break.
    pub fn to_line(&self) -> String {
        let mut line = String::with_capacity(1_720);
        line.push_str(BUNDLE_TAG);
        line.push(' ');
        line.push_str(&self.device.to_string());
        line.push(' ');
        B64.encode_string(self.signing.as_bytes(), &mut line);
        line.push(' ');
        B64.encode_string(self.kem.to_bytes(), &mut line);
        line
    }

    /// Parses a bundle line; surrounding whitespace (a trailing newline) is ignored.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let mut fields = text.split_ascii_whitespace();
        check_tag(fields.next(), BUNDLE_TAG, KeyError::NotABundle)?;
        let (Some(device), Some(signing), Some(kem), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(KeyError::NotABundle);
        };
        Self::from_fields(device, signing, kem)
    }

    /// [`PublicBundle::parse`] for bytes read from a file or a socket.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, KeyError> {
        Self::parse(core::str::from_utf8(bytes).map_err(|_| KeyError::NotABundle)?)
    }

    fn from_fields(device: &str, signing: &str, kem: &str) -> Result<Self, KeyError> {
        let stated: DeviceId = device.parse()?;
        let signing = decode_verifying_key(signing)?;
        let kem = B64
            .decode(kem)
            .ok()
            .and_then(|bytes| KemPublicKey::from_bytes(&bytes).ok())
            .ok_or(KeyError::BadKey("x-wing public key"))?;
        let bundle = Self::new(signing, kem);
        if bundle.device != stated {
            return Err(KeyError::DeviceMismatch { stated, derived: bundle.device });
        }
        Ok(bundle)
    }

    /// Checks a statement signed with [`DeviceKeys::sign_statement`] by this device, under
    /// the same `context`. Strict Ed25519.
    pub fn verify_statement(&self, context: &str, message: &[u8], signature: &[u8; 64]) -> Result<(), KeyError> {
        self.signing
            .verify_strict(&statement(context, message), &Signature::from_bytes(signature))
            .map_err(|_| KeyError::BadStatementSignature)
    }

    fn write_canonical(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.device.0);
        out.extend_from_slice(self.signing.as_bytes());
        out.extend_from_slice(&self.kem.to_bytes());
    }
}

impl fmt::Display for PublicBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_line())
    }
}

impl fmt::Debug for PublicBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicBundle").field("device", &self.device).finish_non_exhaustive()
    }
}

impl FromStr for PublicBundle {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Self, KeyError> {
        Self::parse(s)
    }
}

impl From<PublicBundle> for String {
    fn from(bundle: PublicBundle) -> String {
        bundle.to_line()
    }
}

impl TryFrom<String> for PublicBundle {
    type Error = KeyError;

    fn try_from(s: String) -> Result<Self, KeyError> {
        Self::parse(&s)
    }
}

/// One device's secret keys. Debug prints only the device id; both secrets are wiped from
/// memory when the value is dropped. Deliberately not `Clone`.
pub struct DeviceKeys {
    signing: SigningKey,
    kem: KemPrivateKey,
    public: PublicBundle,
    created: Timestamp,
    supersedes: Option<DeviceId>,
}

impl DeviceKeys {
    /// Fresh keys, with all randomness from `rng`.
    pub fn generate(now: Timestamp, rng: &mut impl CryptoRng) -> Self {
        let mut seed = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(seed.as_mut());
        let signing = SigningKey::from_bytes(&seed);
        let (kem, _) = XWing::gen_keypair_with_rng(rng);
        Self::assemble(signing, kem, now, None)
    }

    fn assemble(signing: SigningKey, kem: KemPrivateKey, created: Timestamp, supersedes: Option<DeviceId>) -> Self {
        let public = PublicBundle::new(signing.verifying_key(), XWing::sk_to_pk(&kem));
        Self { signing, kem, public, created, supersedes }
    }

    pub fn device(&self) -> DeviceId {
        self.public.device
    }

    /// The half to share with peers.
    pub fn public(&self) -> &PublicBundle {
        &self.public
    }

    pub fn created(&self) -> Timestamp {
        self.created
    }

    /// The device these keys replaced, if they came from [`DeviceKeys::rotate`].
    pub fn supersedes(&self) -> Option<DeviceId> {
        self.supersedes
    }

    pub(crate) fn sign(&self, message: &[u8]) -> Signature {
        self.signing.sign(message)
    }

    /// Signs `message` as a statement of one protocol, named by `context` (such as
    /// `agentfw relay auth v1`). The signature covers the context too, so a statement made
    /// for one protocol never verifies for another, and no statement verifies as an
    /// envelope or a rotation notice. Check it with [`PublicBundle::verify_statement`].
    pub fn sign_statement(&self, context: &str, message: &[u8]) -> [u8; 64] {
        self.sign(&statement(context, message)).to_bytes()
    }

    pub(crate) fn kem_secret(&self) -> &KemPrivateKey {
        &self.kem
    }

    /// New keys for this device and the signed notice that tells peers about them. Peers
    /// that apply the notice ([`Keyring::apply_rotation`]) stop accepting the old keys.
    pub fn rotate(&self, now: Timestamp, rng: &mut impl CryptoRng) -> (DeviceKeys, Rotation) {
        let mut next = Self::generate(now, rng);
        next.supersedes = Some(self.device());
        let statement = rotation_statement(self.device(), now, &next.public);
        let rotation = Rotation {
            old: self.device(),
            at: now,
            new: next.public.clone(),
            old_signature: self.sign(&statement),
            new_signature: next.sign(&statement),
        };
        (next, rotation)
    }

    /// The key file: text holding both secrets. The buffer is wiped when dropped.
    pub fn to_key_file(&self) -> Zeroizing<String> {
        // Sized up front so the buffer never reallocates and leaves a copy behind.
        let mut out = Zeroizing::new(String::with_capacity(512));
        out.push_str(KEY_FILE_TAG);
        out.push_str(
            "\n# The secret keys of one agentfw device. Whoever holds this file can read its\n\
             # messages and sign as it: keep it private.\n",
        );
        out.push_str("device: ");
        out.push_str(&self.device().to_string());
        out.push_str("\ncreated: ");
        out.push_str(&self.created.as_millis().to_string());
        if let Some(old) = self.supersedes {
            out.push_str("\nsupersedes: ");
            out.push_str(&old.to_string());
        }
        out.push_str("\ned25519-secret: ");
        B64.encode_string(Zeroizing::new(self.signing.to_bytes()).as_ref(), &mut out);
        out.push_str("\nxwing-secret: ");
        let mut kem = self.kem.to_bytes();
        B64.encode_string(kem.as_slice(), &mut out);
        kem.as_mut_slice().zeroize();
        out.push('\n');
        out
    }

    /// Parses a key file. Errors name the line or field at fault, never a secret.
    pub fn from_key_file(bytes: &[u8]) -> Result<Self, KeyError> {
        let text = core::str::from_utf8(bytes).map_err(|_| KeyError::NotUtf8)?;
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, line)| (i + 1, line.trim()))
            .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'));
        check_tag(lines.next().map(|(_, line)| line), KEY_FILE_TAG, KeyError::NotAKeyFile)?;

        let mut fields = KeyFileFields::default();
        for (number, line) in lines {
            let (name, value) = line.split_once(':').ok_or(KeyError::BadLine(number))?;
            fields.set(name.trim(), value.trim())?;
        }

        let device: DeviceId = fields.device.ok_or(KeyError::MissingField("device"))?.parse()?;
        let created = fields
            .created
            .ok_or(KeyError::MissingField("created"))?
            .parse::<u64>()
            .map_err(|_| KeyError::BadField("created"))?;
        let supersedes = fields
            .supersedes
            .map(|id| id.parse::<DeviceId>().map_err(|_| KeyError::BadField("supersedes")))
            .transpose()?;
        let signing = decode_secret(fields.ed25519, "ed25519-secret")?;
        let signing = SigningKey::from_bytes(&signing);
        let kem = decode_secret(fields.xwing, "xwing-secret")?;
        let kem = KemPrivateKey::from_bytes(kem.as_ref()).map_err(|_| KeyError::BadField("xwing-secret"))?;

        let keys = Self::assemble(signing, kem, Timestamp::from_millis(created), supersedes);
        if keys.device() != device {
            return Err(KeyError::DeviceMismatch { stated: device, derived: keys.device() });
        }
        Ok(keys)
    }
}

impl fmt::Debug for DeviceKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceKeys")
            .field("device", &self.device())
            .field("created", &self.created)
            .field("supersedes", &self.supersedes)
            .field("secrets", &"<redacted>")
            .finish()
    }
}

#[derive(Default)]
struct KeyFileFields<'a> {
    device: Option<&'a str>,
    created: Option<&'a str>,
    supersedes: Option<&'a str>,
    ed25519: Option<&'a str>,
    xwing: Option<&'a str>,
}

impl<'a> KeyFileFields<'a> {
    fn set(&mut self, name: &str, value: &'a str) -> Result<(), KeyError> {
        let (slot, name) = match name {
            "device" => (&mut self.device, "device"),
            "created" => (&mut self.created, "created"),
            "supersedes" => (&mut self.supersedes, "supersedes"),
            "ed25519-secret" => (&mut self.ed25519, "ed25519-secret"),
            "xwing-secret" => (&mut self.xwing, "xwing-secret"),
            other => return Err(KeyError::UnknownField(echo(other))),
        };
        if slot.replace(value).is_some() {
            return Err(KeyError::DuplicateField(name));
        }
        Ok(())
    }
}

fn decode_secret(value: Option<&str>, field: &'static str) -> Result<Zeroizing<[u8; 32]>, KeyError> {
    let value = value.ok_or(KeyError::MissingField(field))?;
    let bytes = Zeroizing::new(B64.decode(value).map_err(|_| KeyError::BadField(field))?);
    let mut out = Zeroizing::new([0u8; 32]);
    if bytes.len() != out.len() {
        return Err(KeyError::BadField(field));
    }
    out.copy_from_slice(&bytes);
    Ok(out)
}

fn decode_verifying_key(b64: &str) -> Result<VerifyingKey, KeyError> {
    let bytes: [u8; 32] =
        B64.decode(b64).ok().and_then(|bytes| bytes.try_into().ok()).ok_or(KeyError::BadKey("ed25519 public key"))?;
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| KeyError::BadKey("ed25519 public key"))?;
    if key.is_weak() {
        return Err(KeyError::BadKey("ed25519 public key"));
    }
    Ok(key)
}

fn decode_signature(b64: &str) -> Result<Signature, KeyError> {
    let bytes: [u8; 64] =
        B64.decode(b64).ok().and_then(|bytes| bytes.try_into().ok()).ok_or(KeyError::BadKey("signature"))?;
    Ok(Signature::from_bytes(&bytes))
}

/// Checks the first word of a text format: the expected tag, a later version of the same
/// format (refused as unsupported), or something else entirely (`otherwise`).
fn check_tag(found: Option<&str>, expected: &str, otherwise: KeyError) -> Result<(), KeyError> {
    let found = found.unwrap_or_default();
    if found == expected {
        return Ok(());
    }
    let family = expected.trim_end_matches(|c: char| c.is_ascii_digit());
    match found.strip_prefix(family) {
        Some(version) if !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit()) => {
            Err(KeyError::UnsupportedVersion(echo(found)))
        }
        _ => Err(otherwise),
    }
}

fn echo(s: &str) -> String {
    s.chars().take(ECHO_MAX).collect()
}

/// The bytes a statement's signature covers: the tag, the context with its length, then
/// the message. The length makes the split between context and message unambiguous.
fn statement(context: &str, message: &[u8]) -> Vec<u8> {
    let context = context.as_bytes();
    let context = context.get(..context.len().min(usize::from(u8::MAX))).unwrap_or_default();
    let mut out = Vec::with_capacity(STATEMENT_TAG.len() + 1 + context.len() + message.len());
    out.extend_from_slice(STATEMENT_TAG);
    out.push(u8::try_from(context.len()).unwrap_or(u8::MAX));
    out.extend_from_slice(context);
    out.extend_from_slice(message);
    out
}

fn rotation_statement(old: DeviceId, at: Timestamp, new: &PublicBundle) -> Vec<u8> {
    let mut out = Vec::with_capacity(ROTATION_TAG.len() + 1 + 16 + 8 + 16 + 32 + 1216);
    out.extend_from_slice(ROTATION_TAG.as_bytes());
    out.push(0);
    out.extend_from_slice(&old.0);
    out.extend_from_slice(&at.as_millis().to_be_bytes());
    new.write_canonical(&mut out);
    out
}

/// A device's signed statement that its keys were replaced: signed by the old key (so only
/// the device can retire itself this way) and by the new one (so the device holds it).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Rotation {
    old: DeviceId,
    at: Timestamp,
    new: PublicBundle,
    old_signature: Signature,
    new_signature: Signature,
}

impl Rotation {
    /// The device that is retired.
    pub fn old(&self) -> DeviceId {
        self.old
    }

    /// The keys that replace it.
    pub fn new_bundle(&self) -> &PublicBundle {
        &self.new
    }

    /// When the rotation happened, by the device's clock.
    pub fn at(&self) -> Timestamp {
        self.at
    }

    /// Checks both signatures, given the old device's public bundle.
    pub fn verify(&self, old: &PublicBundle) -> Result<(), KeyError> {
        if old.device != self.old {
            return Err(KeyError::BadRotationSignature);
        }
        let statement = rotation_statement(self.old, self.at, &self.new);
        old.signing
            .verify_strict(&statement, &self.old_signature)
            .and_then(|()| self.new.signing.verify_strict(&statement, &self.new_signature))
            .map_err(|_| KeyError::BadRotationSignature)
    }

    /// The notice as one line of text.
    pub fn to_line(&self) -> String {
        let new = self.new.to_line();
        let new_fields = new.strip_prefix(BUNDLE_TAG).unwrap_or(&new).trim_start();
        let mut line = format!("{ROTATION_TAG} {} {} {new_fields} ", self.old, self.at.as_millis());
        B64.encode_string(self.old_signature.to_bytes(), &mut line);
        line.push(' ');
        B64.encode_string(self.new_signature.to_bytes(), &mut line);
        line
    }

    /// Parses a notice line; surrounding whitespace is ignored. The signatures are checked
    /// by [`Rotation::verify`] (or [`Keyring::apply_rotation`]), not here.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let mut fields = text.split_ascii_whitespace();
        check_tag(fields.next(), ROTATION_TAG, KeyError::NotARotation)?;
        let fields: Vec<&str> = fields.collect();
        let [old, at, device, signing, kem, old_sig, new_sig] = fields.as_slice() else {
            return Err(KeyError::NotARotation);
        };
        Ok(Self {
            old: old.parse()?,
            at: Timestamp::from_millis(at.parse().map_err(|_| KeyError::NotARotation)?),
            new: PublicBundle::from_fields(device, signing, kem)?,
            old_signature: decode_signature(old_sig)?,
            new_signature: decode_signature(new_sig)?,
        })
    }
}

impl fmt::Debug for Rotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rotation")
            .field("old", &self.old)
            .field("new", &self.new.device)
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl From<Rotation> for String {
    fn from(rotation: Rotation) -> String {
        rotation.to_line()
    }
}

impl TryFrom<String> for Rotation {
    type Error = KeyError;

    fn try_from(s: String) -> Result<Self, KeyError> {
        Self::parse(&s)
    }
}

/// Whether a known device's keys may still be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum KeyStatus {
    Active,
    /// Replaced by the device's own signed [`Rotation`].
    Superseded {
        by: DeviceId,
        at: Timestamp,
    },
    /// Withdrawn by the admin of this keyring.
    Revoked {
        at: Timestamp,
    },
}

/// One device a keyring knows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    pub bundle: PublicBundle,
    pub status: KeyStatus,
}

/// Why a sender's key cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unusable {
    Unknown,
    Retired,
}

/// The devices whose envelopes this device accepts.
///
/// Every change is all-or-nothing: a method either applies fully or returns an error and
/// leaves the keyring as it was. Once [`Keyring::revoke`] or [`Keyring::apply_rotation`]
/// returns, the old key verifies nothing more, and a retired device can never be trusted
/// again under the same id (it must rotate to new keys). Serialize the keyring to persist
/// it; it holds public keys only.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Vec<Peer>", try_from = "Vec<Peer>")]
pub struct Keyring {
    peers: BTreeMap<DeviceId, Peer>,
}

impl Keyring {
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts envelopes from this device from now on. Trusting an active device again is
    /// a no-op; a revoked or rotated-away device is refused.
    pub fn trust(&mut self, bundle: PublicBundle) -> Result<(), KeyError> {
        match self.peers.get(&bundle.device) {
            Some(peer) if peer.status != KeyStatus::Active => Err(KeyError::Retired(bundle.device)),
            Some(_) => Ok(()),
            None => {
                self.peers.insert(bundle.device, Peer { bundle, status: KeyStatus::Active });
                Ok(())
            }
        }
    }

    /// Stops accepting anything signed by this device. Revoking twice keeps the first time.
    pub fn revoke(&mut self, device: DeviceId, now: Timestamp) -> Result<(), KeyError> {
        let peer = self.peers.get_mut(&device).ok_or(KeyError::UnknownDevice(device))?;
        if !matches!(peer.status, KeyStatus::Revoked { .. }) {
            peer.status = KeyStatus::Revoked { at: now };
        }
        Ok(())
    }

    /// Applies a device's rotation: the old keys stop verifying and the new ones are
    /// trusted, in one step. The old device must be known and active here, and both
    /// signatures must verify. Applying the same rotation again is a no-op.
    pub fn apply_rotation(&mut self, rotation: &Rotation) -> Result<(), KeyError> {
        let old = self.peers.get(&rotation.old).ok_or(KeyError::UnknownDevice(rotation.old))?;
        let new_id = rotation.new.device;
        match old.status {
            KeyStatus::Active => {}
            KeyStatus::Superseded { by, .. } if by == new_id => {
                rotation.verify(&old.bundle)?;
                return Ok(());
            }
            KeyStatus::Superseded { .. } | KeyStatus::Revoked { .. } => {
                return Err(KeyError::Retired(rotation.old));
            }
        }
        rotation.verify(&old.bundle)?;
        if self.peers.contains_key(&new_id) {
            return Err(KeyError::AlreadyKnown(new_id));
        }
        // Everything is checked; from here on nothing can fail.
        if let Some(old) = self.peers.get_mut(&rotation.old) {
            old.status = KeyStatus::Superseded { by: new_id, at: rotation.at };
        }
        self.peers.insert(new_id, Peer { bundle: rotation.new.clone(), status: KeyStatus::Active });
        Ok(())
    }

    pub fn get(&self, device: DeviceId) -> Option<&Peer> {
        self.peers.get(&device)
    }

    /// The device's bundle if its keys may be used.
    pub fn active(&self, device: DeviceId) -> Option<&PublicBundle> {
        self.sender(device).ok()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Peer> {
        self.peers.values()
    }

    pub fn len(&self) -> usize {
        self.peers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    pub(crate) fn sender(&self, device: DeviceId) -> Result<&PublicBundle, Unusable> {
        match self.peers.get(&device) {
            None => Err(Unusable::Unknown),
            Some(peer) if peer.status == KeyStatus::Active => Ok(&peer.bundle),
            Some(_) => Err(Unusable::Retired),
        }
    }
}

impl From<Keyring> for Vec<Peer> {
    fn from(keyring: Keyring) -> Vec<Peer> {
        keyring.peers.into_values().collect()
    }
}

impl TryFrom<Vec<Peer>> for Keyring {
    type Error = KeyError;

    fn try_from(peers: Vec<Peer>) -> Result<Self, KeyError> {
        let mut keyring = Keyring::new();
        for peer in peers {
            let device = peer.bundle.device;
            if keyring.peers.insert(device, peer).is_some() {
                return Err(KeyError::AlreadyKnown(device));
            }
        }
        Ok(keyring)
    }
}

/// Why keys, a key file, a bundle or a rotation were refused, or a keyring change failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("key file is not utf-8 text")]
    NotUtf8,
    #[error("not an agentfw key file: the first line should be `agentfw-keys-v1`")]
    NotAKeyFile,
    #[error("unsupported format `{0}`: this version reads `agentfw-keys-v1`, `agentfw-pub-v1` and `agentfw-rotate-v1`")]
    UnsupportedVersion(String),
    #[error("line {0} of the key file is not `name: value`")]
    BadLine(usize),
    #[error("the key file has an unknown field `{0}`")]
    UnknownField(String),
    #[error("the key file has `{0}` twice")]
    DuplicateField(&'static str),
    #[error("the key file has no `{0}`")]
    MissingField(&'static str),
    #[error("the key file's `{0}` is not valid")]
    BadField(&'static str),
    #[error("not a public key bundle: expected one line `agentfw-pub-v1 <device> <ed25519> <x-wing>`")]
    NotABundle,
    #[error("not a key rotation: expected one line starting `agentfw-rotate-v1`")]
    NotARotation,
    #[error("the {0} is not valid")]
    BadKey(&'static str),
    #[error("`{0}` is not a device id: expected 32 hex digits")]
    BadDeviceId(String),
    #[error("device id `{stated}` does not match its keys, which give `{derived}`")]
    DeviceMismatch { stated: DeviceId, derived: DeviceId },
    #[error("the rotation's signatures do not verify")]
    BadRotationSignature,
    #[error("the statement's signature does not verify")]
    BadStatementSignature,
    #[error("device `{0}` is not in the keyring")]
    UnknownDevice(DeviceId),
    #[error("device `{0}` was revoked or rotated away and cannot be trusted again")]
    Retired(DeviceId),
    #[error("device `{0}` is already in the keyring")]
    AlreadyKnown(DeviceId),
}

impl KeyError {
    /// A stable code for bindings and logs, e.g. `keys.not_a_bundle`.
    pub fn code(&self) -> &'static str {
        match self {
            KeyError::NotUtf8 => "keys.not_utf8",
            KeyError::NotAKeyFile => "keys.not_a_key_file",
            KeyError::UnsupportedVersion(_) => "keys.unsupported_version",
            KeyError::BadLine(_) => "keys.bad_line",
            KeyError::UnknownField(_) => "keys.unknown_field",
            KeyError::DuplicateField(_) => "keys.duplicate_field",
            KeyError::MissingField(_) => "keys.missing_field",
            KeyError::BadField(_) => "keys.bad_field",
            KeyError::NotABundle => "keys.not_a_bundle",
            KeyError::NotARotation => "keys.not_a_rotation",
            KeyError::BadKey(_) => "keys.bad_key",
            KeyError::BadDeviceId(_) => "keys.bad_device_id",
            KeyError::DeviceMismatch { .. } => "keys.device_mismatch",
            KeyError::BadRotationSignature => "keys.bad_rotation_signature",
            KeyError::BadStatementSignature => "keys.bad_statement_signature",
            KeyError::UnknownDevice(_) => "keys.unknown_device",
            KeyError::Retired(_) => "keys.retired",
            KeyError::AlreadyKnown(_) => "keys.already_known",
        }
    }
}
