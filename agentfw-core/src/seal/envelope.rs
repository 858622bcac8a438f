//! The envelope: sealing a body to one device and opening it again (TX3, TX4).
//!
//! The layout and the order of checks are in the [module docs](super).

use core::fmt;

use ed25519_dalek::Signature;
use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::XWing;
use hpke::{Deserializable, OpModeR, OpModeS, Serializable};
use rand_core::CryptoRng;
use serde::{Deserialize, Serialize};

use super::keys::{DeviceId, DeviceKeys, Keyring, PublicBundle, Unusable};
use super::replay::{ReplayCache, ReplayError, ReplayKey};
use super::{Reader, message_id_bytes, message_id_from_bytes};
use crate::message::MessageId;
use crate::time::Timestamp;

/// The one HPKE suite of format version 1. The mode is always Base: X-Wing has no
/// authenticated modes (the sender is authenticated by its Ed25519 signature instead).
type Kem = XWing;
type Kdf = HkdfSha256;
type Aead = ChaCha20Poly1305;
type EncappedKey = <Kem as hpke::Kem>::EncappedKey;

const MAGIC: [u8; 4] = *b"AFWE";
const VERSION: u8 = 1;
/// HPKE `info`: names the protocol and version, so keys derived here are used nowhere else.
const INFO: &[u8] = b"agentfw seal v1";
const ENC_LEN: usize = 1120;
const TAG_LEN: usize = 16;
const SIGNATURE_LEN: usize = 64;
/// Magic, version, sender, recipient, message id, timestamp, content type length.
const FIXED_HEADER_LEN: usize = 4 + 1 + 16 + 16 + 16 + 8 + 1;

/// The longest content type, in bytes.
pub const CONTENT_TYPE_MAX: usize = 127;

/// Size limits, checked when sealing and before anything else when opening.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// The largest body, in bytes. Default: 64 KiB.
    pub max_plaintext: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_plaintext: 64 * 1024 }
    }
}

impl Limits {
    /// The largest envelope these limits allow: a body of `max_plaintext` bytes with the
    /// longest content type.
    pub fn max_envelope(&self) -> usize {
        self.max_plaintext.saturating_add(FIXED_HEADER_LEN + CONTENT_TYPE_MAX + ENC_LEN + 4 + TAG_LEN + SIGNATURE_LEN)
    }
}

/// What an envelope says about itself in the clear: enough to route it and to judge it by
/// metadata (who, to whom, when, what kind); never the body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub sender: DeviceId,
    pub recipient: DeviceId,
    pub id: MessageId,
    /// When the sender sealed it, by the sender's clock.
    pub timestamp: Timestamp,
    /// A media type such as `text/plain`: 1 to 127 printable ASCII characters.
    pub content_type: String,
}

impl Header {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.sender.to_bytes());
        out.extend_from_slice(&self.recipient.to_bytes());
        out.extend_from_slice(&message_id_bytes(self.id));
        out.extend_from_slice(&self.timestamp.as_millis().to_be_bytes());
        // Validated to be 1..=127 bytes before a header is ever encoded.
        out.push(u8::try_from(self.content_type.len()).unwrap_or(u8::MAX));
        out.extend_from_slice(self.content_type.as_bytes());
    }
}

fn valid_content_type(content_type: &[u8]) -> bool {
    (1..=CONTENT_TYPE_MAX).contains(&content_type.len()) && content_type.iter().all(|b| (0x20..=0x7e).contains(b))
}

/// What to seal.
#[derive(Clone, Copy, Debug)]
pub struct Draft<'a> {
    pub id: MessageId,
    pub content_type: &'a str,
    pub body: &'a [u8],
}

/// A sealed, signed envelope: its bytes and its parsed header.
#[derive(Clone, PartialEq, Eq)]
pub struct Envelope {
    header: Header,
    bytes: Vec<u8>,
}

impl Envelope {
    /// Checks the format (not the signature or anything that needs keys) and reads the
    /// header. This is the first step of [`open`], for callers such as a relay that only
    /// route envelopes.
    pub fn from_bytes(bytes: &[u8], limits: &Limits) -> Result<Self, OpenError> {
        let parsed = parse(bytes, limits)?;
        Ok(Self { header: parsed.header, bytes: bytes.to_vec() })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    /// Checks the sender's signature over the header and ciphertext against the sender's
    /// entry in `keyring`: steps 2 and 3 of [`open`], for a relay that must know the
    /// metadata is authentic without being able to read the body.
    pub fn verify(&self, keyring: &Keyring) -> Result<(), OpenError> {
        let sender = keyring.sender(self.header.sender).map_err(|why| match why {
            Unusable::Unknown => OpenError::UnknownSender,
            Unusable::Retired => OpenError::RetiredSender,
        })?;
        self.verify_signed_by(sender)
    }

    /// Checks the signature against `sender`, which must be the device the header names.
    pub fn verify_signed_by(&self, sender: &PublicBundle) -> Result<(), OpenError> {
        if sender.device() != self.header.sender {
            return Err(OpenError::BadSignature);
        }
        let split = self.bytes.len().checked_sub(SIGNATURE_LEN).ok_or(OpenError::Truncated)?;
        let (signed, signature) = self.bytes.split_at_checked(split).ok_or(OpenError::Truncated)?;
        let signature: [u8; SIGNATURE_LEN] = signature.try_into().map_err(|_| OpenError::Truncated)?;
        sender
            .verifying_key()
            .verify_strict(signed, &Signature::from_bytes(&signature))
            .map_err(|_| OpenError::BadSignature)
    }
}

impl fmt::Debug for Envelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Envelope").field("header", &self.header).field("size", &self.bytes.len()).finish()
    }
}

/// An opened envelope: the checked header and the body.
#[derive(Clone, PartialEq, Eq)]
pub struct Opened {
    pub header: Header,
    pub body: Vec<u8>,
}

impl fmt::Debug for Opened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opened").field("header", &self.header).field("body_len", &self.body.len()).finish()
    }
}

/// Seals `draft` to `recipient`, signed by `sender`, stamped `now`. All randomness (the
/// HPKE encapsulation) comes from `rng`.
pub fn seal(
    sender: &DeviceKeys,
    recipient: &PublicBundle,
    draft: &Draft<'_>,
    limits: &Limits,
    now: Timestamp,
    rng: &mut impl CryptoRng,
) -> Result<Envelope, SealError> {
    if draft.body.len() > limits.max_plaintext {
        return Err(SealError::TooLarge { size: draft.body.len(), max: limits.max_plaintext });
    }
    if !valid_content_type(draft.content_type.as_bytes()) {
        return Err(SealError::BadContentType);
    }
    let header = Header {
        sender: sender.device(),
        recipient: recipient.device(),
        id: draft.id,
        timestamp: now,
        content_type: draft.content_type.to_owned(),
    };
    let ciphertext_len = draft.body.len() + TAG_LEN;
    let wire_ciphertext_len = u32::try_from(ciphertext_len)
        .map_err(|_| SealError::TooLarge { size: draft.body.len(), max: limits.max_plaintext })?;

    let mut bytes =
        Vec::with_capacity(FIXED_HEADER_LEN + draft.content_type.len() + ENC_LEN + 4 + ciphertext_len + SIGNATURE_LEN);
    header.encode(&mut bytes);
    let (enc, ciphertext) = hpke::single_shot_seal_with_rng::<Aead, Kdf, Kem>(
        &OpModeS::Base,
        recipient.kem_key(),
        INFO,
        draft.body,
        &bytes,
        rng,
    )
    .map_err(|_| SealError::Encryption)?;
    if ciphertext.len() != ciphertext_len {
        return Err(SealError::Encryption);
    }
    bytes.extend_from_slice(&enc.to_bytes());
    bytes.extend_from_slice(&wire_ciphertext_len.to_be_bytes());
    bytes.extend_from_slice(&ciphertext);
    let signature = sender.sign(&bytes);
    bytes.extend_from_slice(&signature.to_bytes());
    Ok(Envelope { header, bytes })
}

/// Opens an envelope addressed to `recipient` from a sender in `keyring`, at `now`. The
/// checks run in the order listed in the [module docs](super); the message is recorded in
/// `replay` only once it has decrypted.
pub fn open(
    recipient: &DeviceKeys,
    keyring: &Keyring,
    replay: &mut ReplayCache,
    envelope: &[u8],
    limits: &Limits,
    now: Timestamp,
) -> Result<Opened, OpenError> {
    let parsed = parse(envelope, limits)?;
    let header = &parsed.header;

    let sender = keyring.sender(header.sender).map_err(|why| match why {
        Unusable::Unknown => OpenError::UnknownSender,
        Unusable::Retired => OpenError::RetiredSender,
    })?;
    sender
        .verifying_key()
        .verify_strict(parsed.signed, &Signature::from_bytes(&parsed.signature))
        .map_err(|_| OpenError::BadSignature)?;
    if header.recipient != recipient.device() {
        return Err(OpenError::WrongRecipient);
    }
    let key = ReplayKey::new(header.sender.to_bytes(), parsed.id);
    replay.check(&key, header.timestamp, now)?;

    let enc = EncappedKey::from_bytes(parsed.enc).map_err(|_| OpenError::DecryptionFailed)?;
    let body = hpke::single_shot_open::<Aead, Kdf, Kem>(
        &OpModeR::Base,
        recipient.kem_secret(),
        &enc,
        INFO,
        parsed.ciphertext,
        parsed.header_bytes,
    )
    .map_err(|_| OpenError::DecryptionFailed)?;

    replay.record(key, header.timestamp, now)?;
    Ok(Opened { header: parsed.header, body })
}

/// An envelope's parts, borrowed from its bytes.
struct Parsed<'a> {
    header: Header,
    id: [u8; 16],
    header_bytes: &'a [u8],
    enc: &'a [u8],
    ciphertext: &'a [u8],
    /// Everything before the signature.
    signed: &'a [u8],
    signature: [u8; SIGNATURE_LEN],
}

fn parse<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Parsed<'a>, OpenError> {
    use OpenError::{Malformed, Truncated};

    if bytes.len() > limits.max_envelope() {
        return Err(OpenError::TooLarge { size: bytes.len(), max: limits.max_envelope() });
    }
    let mut reader = Reader::new(bytes);
    let magic: [u8; 4] = reader.array().ok_or(Truncated)?;
    if magic != MAGIC {
        return Err(Malformed("not an agentfw envelope"));
    }
    let version = reader.u8().ok_or(Truncated)?;
    if version != VERSION {
        return Err(OpenError::UnsupportedVersion(version));
    }
    let sender = DeviceId::from_bytes(reader.array().ok_or(Truncated)?);
    let recipient = DeviceId::from_bytes(reader.array().ok_or(Truncated)?);
    let id: [u8; 16] = reader.array().ok_or(Truncated)?;
    let timestamp = Timestamp::from_millis(reader.u64().ok_or(Truncated)?);
    let content_type_len = usize::from(reader.u8().ok_or(Truncated)?);
    if !(1..=CONTENT_TYPE_MAX).contains(&content_type_len) {
        return Err(Malformed("bad content type"));
    }
    let content_type = reader.take(content_type_len).ok_or(Truncated)?;
    if !valid_content_type(content_type) {
        return Err(Malformed("bad content type"));
    }
    let header_len = bytes.len() - reader.remaining();
    let enc = reader.take(ENC_LEN).ok_or(Truncated)?;
    let ciphertext_len = usize::try_from(reader.u32().ok_or(Truncated)?).unwrap_or(usize::MAX);
    let Some(body_len) = ciphertext_len.checked_sub(TAG_LEN) else {
        return Err(Malformed("bad ciphertext length"));
    };
    if body_len > limits.max_plaintext {
        return Err(OpenError::TooLarge { size: body_len, max: limits.max_plaintext });
    }
    let ciphertext = reader.take(ciphertext_len).ok_or(Truncated)?;
    let signed_len = bytes.len() - reader.remaining();
    let signature: [u8; SIGNATURE_LEN] = reader.array().ok_or(Truncated)?;
    if reader.remaining() != 0 {
        return Err(Malformed("trailing bytes after the signature"));
    }

    let header = Header {
        sender,
        recipient,
        id: message_id_from_bytes(id).ok_or(Malformed("bad message id"))?,
        timestamp,
        content_type: String::from_utf8(content_type.to_vec()).map_err(|_| Malformed("bad content type"))?,
    };
    Ok(Parsed {
        header,
        id,
        header_bytes: bytes.get(..header_len).ok_or(Truncated)?,
        enc,
        ciphertext,
        signed: bytes.get(..signed_len).ok_or(Truncated)?,
        signature,
    })
}

/// Why a body could not be sealed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("message is {size} bytes, over the limit of {max}")]
    TooLarge { size: usize, max: usize },
    #[error("content type must be 1 to 127 printable ascii characters")]
    BadContentType,
    #[error("encryption failed")]
    Encryption,
}

impl SealError {
    /// A stable code for bindings and logs, e.g. `seal.too_large`.
    pub fn code(&self) -> &'static str {
        match self {
            SealError::TooLarge { .. } => "seal.too_large",
            SealError::BadContentType => "seal.bad_content_type",
            SealError::Encryption => "seal.encryption",
        }
    }
}

/// Why an envelope was refused. Each variant is one step of [`open`], in order; the crypto
/// ones say only that the step failed, never where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The envelope, or the body it declares, is over the size limit: `size` and `max` are
    /// of the envelope when it is too long as a whole, of the body otherwise.
    #[error("envelope is over the size limit ({size} bytes, at most {max})")]
    TooLarge { size: usize, max: usize },
    #[error("envelope is truncated")]
    Truncated,
    #[error("not a valid envelope: {0}")]
    Malformed(&'static str),
    #[error("envelope format version {0} is not supported")]
    UnsupportedVersion(u8),
    #[error("sender is not a known device")]
    UnknownSender,
    #[error("sender's key was revoked or rotated away")]
    RetiredSender,
    #[error("signature does not verify")]
    BadSignature,
    #[error("envelope is addressed to another device")]
    WrongRecipient,
    #[error("envelope is older than the time window")]
    Expired,
    #[error("envelope is dated too far in the future")]
    NotYetValid,
    #[error("envelope was already opened once (replay)")]
    Replayed,
    #[error("decryption failed")]
    DecryptionFailed,
}

impl OpenError {
    /// A stable code for bindings and logs, e.g. `open.replayed`.
    pub fn code(&self) -> &'static str {
        match self {
            OpenError::TooLarge { .. } => "open.too_large",
            OpenError::Truncated => "open.truncated",
            OpenError::Malformed(_) => "open.malformed",
            OpenError::UnsupportedVersion(_) => "open.unsupported_version",
            OpenError::UnknownSender => "open.unknown_sender",
            OpenError::RetiredSender => "open.retired_sender",
            OpenError::BadSignature => "open.bad_signature",
            OpenError::WrongRecipient => "open.wrong_recipient",
            OpenError::Expired => "open.expired",
            OpenError::NotYetValid => "open.not_yet_valid",
            OpenError::Replayed => "open.replayed",
            OpenError::DecryptionFailed => "open.decryption_failed",
        }
    }
}

impl From<ReplayError> for OpenError {
    fn from(e: ReplayError) -> Self {
        match e {
            ReplayError::Expired => OpenError::Expired,
            ReplayError::NotYetValid => OpenError::NotYetValid,
            ReplayError::Replayed => OpenError::Replayed,
        }
    }
}
