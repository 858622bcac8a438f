//! The wire protocol between a device's daemon and the relay, version 1.
//!
//! One WebSocket per device, at [`CONNECT_PATH`]. Control frames are JSON text frames
//! tagged by `type` ([`ToRelay`], [`ToDevice`]); envelopes travel in binary frames
//! ([`SubmitFrame`], [`DeliverFrame`]). `docs/relay.md` walks through a session; this module
//! is the reference.
//!
//! ## Handshake
//!
//! 1. The relay sends [`ToDevice::Challenge`] with 32 random bytes.
//! 2. The device answers [`ToRelay::Hello`]: its device id and an Ed25519 signature, made
//!    with [`agentfw_core::seal::DeviceKeys::sign_statement`] under [`AUTH_CONTEXT`], over
//!    [`auth_message`] (the nonce and the device id). It must do so within the handshake
//!    timeout.
//! 3. The relay checks that the device is enrolled and active and that the signature
//!    verifies, then sends [`ToDevice::Welcome`], the current policy
//!    ([`ToDevice::Policy`] with `reset: true`) and the directory, and starts delivering.
//!
//! Anything else during the handshake ends the connection with [`ToDevice::Error`].
//!
//! ## Binary frames (all integers big-endian)
//!
//! | bytes | field |
//! |---|---|
//! | 4 | magic `AFWR` |
//! | 1 | protocol version, `1` |
//! | 1 | kind: `1` submit (device to relay), `2` deliver (relay to device) |
//! | 8 | delivery sequence number (`0` in a submit) |
//! | 2 | routing length n, 1 ≤ n ≤ [`MAX_ROUTING`] |
//! | n | routing: a JSON object, [`Routing`] |
//! | rest | the sealed envelope, exactly as `agentfw_core::seal` made it |
//!
//! ## The routing binding
//!
//! The envelope header names devices, not agents. The routing says which agent sends to
//! which, so the relay can apply admission and blocks to agents. It is bound into the
//! envelope rather than signed on its own: the envelope's content type ends with the
//! parameter `agentfw-routing=<BLAKE3 of the routing bytes, base64url>`, and the content
//! type is part of the header, which the sender's Ed25519 signature covers (and which is
//! the HPKE associated data). So one signature check authenticates both the envelope and
//! the routing ([`Routed::verify`]), a routing cannot be moved to another envelope or
//! changed on the way, and the core envelope format is unchanged. The relay forwards
//! routing and envelope byte for byte, so the recipient can check them too.

/// Central policy (AD8, AM2, CT2): one entry of the relay's policy log, or the whole of it
/// (`reset`), in [`ToDevice::Policy`]. The core owns it, with the relay's policy and the
/// daemon's mirror that make and read it.
pub use agentfw_core::central::PolicyFrame;
use agentfw_core::firewall::Event;
use agentfw_core::message::{Agent, AgentId, MessageId};
use agentfw_core::seal::{
    CONTENT_TYPE_MAX, DeviceId, DeviceKeys, Draft, Envelope, Limits, OpenError, PublicBundle, SealError,
};
use agentfw_core::time::Timestamp;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use rand_core::CryptoRng;
use serde::{Deserialize, Serialize};

/// The protocol version this crate speaks.
pub const VERSION: u32 = 1;
/// Where devices hold their WebSocket.
pub const CONNECT_PATH: &str = "/v1/connect";
/// Where devices enroll with an invite (HTTP POST, JSON [`EnrollRequest`]).
pub const ENROLL_PATH: &str = "/v1/enroll";
/// Statement context of the handshake signature.
pub const AUTH_CONTEXT: &str = "agentfw relay auth v1";
/// Statement context of the enrollment signature.
pub const ENROLL_CONTEXT: &str = "agentfw relay enroll v1";
/// The content type parameter that binds the routing into the envelope.
pub const ROUTING_PARAM: &str = "agentfw-routing";
/// The longest routing field, in bytes.
pub const MAX_ROUTING: usize = 4096;

const MAGIC: [u8; 4] = *b"AFWR";
const KIND_SUBMIT: u8 = 1;
const KIND_DELIVER: u8 = 2;
/// Magic, version, kind, sequence number.
const HEAD_LEN: usize = 4 + 1 + 1 + 8;

/// The largest binary frame a relay with these envelope limits accepts.
pub fn max_frame(limits: &Limits) -> usize {
    limits.max_envelope().saturating_add(HEAD_LEN + 2 + MAX_ROUTING)
}

/// What the device signs to log in: the relay's nonce, then its own device id.
pub fn auth_message(nonce: &[u8], device: DeviceId) -> Vec<u8> {
    let mut out = Vec::with_capacity(nonce.len() + 16);
    out.extend_from_slice(nonce);
    out.extend_from_slice(&device.to_bytes());
    out
}

/// What the device signs to enroll: the invite, a NUL, then its public bundle line.
pub fn enroll_message(invite: &str, bundle_line: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(invite.len() + 1 + bundle_line.len());
    out.extend_from_slice(invite.as_bytes());
    out.push(0);
    out.extend_from_slice(bundle_line.as_bytes());
    out
}

/// Which agent sends to which.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Routing {
    pub from: Agent,
    pub to: Agent,
}

/// `media_type; agentfw-routing=<digest>`: the content type that binds `routing_bytes`.
fn bound_content_type(media_type: &str, routing_bytes: &[u8]) -> String {
    format!("{media_type}; {ROUTING_PARAM}={}", B64.encode(blake3::hash(routing_bytes).as_bytes()))
}

/// A routed envelope: what a device submits and the relay delivers.
#[derive(Clone, Debug)]
pub struct Routed {
    pub routing: Routing,
    routing_bytes: Vec<u8>,
    pub envelope: Envelope,
}

impl Routed {
    /// Seals `body` (of type `media_type`) for the device `recipient`, from agent `from` on
    /// this device to agent `to` there, with the routing bound into the envelope's content
    /// type. `media_type` must leave room for the binding: at most
    /// [`Routed::MAX_MEDIA_TYPE`] printable ASCII characters.
    #[allow(clippy::too_many_arguments)]
    pub fn seal(
        keys: &DeviceKeys,
        recipient: &PublicBundle,
        from: Agent,
        to: Agent,
        id: MessageId,
        media_type: &str,
        body: &[u8],
        limits: &Limits,
        now: Timestamp,
        rng: &mut impl CryptoRng,
    ) -> Result<Self, SealError> {
        let routing = Routing { from, to };
        // A struct of strings always serializes.
        let routing_bytes = serde_json::to_vec(&routing).unwrap_or_default();
        if media_type.len() > Self::MAX_MEDIA_TYPE || media_type.contains(';') {
            return Err(SealError::BadContentType);
        }
        let content_type = bound_content_type(media_type, &routing_bytes);
        let draft = Draft { id, content_type: &content_type, body };
        let envelope = agentfw_core::seal::seal(keys, recipient, &draft, limits, now, rng)?;
        Ok(Self { routing, routing_bytes, envelope })
    }

    /// The longest media type [`Routed::seal`] takes.
    pub const MAX_MEDIA_TYPE: usize = CONTENT_TYPE_MAX - 2 - ROUTING_PARAM.len() - 1 - 43;

    /// BLAKE3 of the envelope's bytes, hex: how the relay tells a resend from a replay.
    pub fn digest(&self) -> String {
        blake3::hash(self.envelope.as_bytes()).to_hex().to_string()
    }

    /// The media type of the body, without the routing binding.
    pub fn media_type(&self) -> &str {
        let ct = &self.envelope.header().content_type;
        ct.rsplit_once("; ").map_or(ct.as_str(), |(m, _)| m)
    }

    /// Checks everything a relay or a recipient can check without opening the envelope:
    /// the envelope's sender is `sender`, the envelope was sealed with this routing, and
    /// the sender's signature verifies (which authenticates both).
    pub fn verify(&self, sender: &PublicBundle) -> Result<(), FrameError> {
        if self.envelope.header().sender != sender.device() {
            return Err(FrameError::SenderMismatch);
        }
        let ct = &self.envelope.header().content_type;
        let media_type = ct.rsplit_once("; ").map_or("", |(m, _)| m);
        if media_type.is_empty() || *ct != bound_content_type(media_type, &self.routing_bytes) {
            return Err(FrameError::RoutingMismatch);
        }
        self.envelope.verify_signed_by(sender).map_err(FrameError::Envelope)
    }

    /// The submit frame.
    pub fn to_submit_frame(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEAD_LEN + self.body_len());
        write_head(&mut out, KIND_SUBMIT, 0);
        self.write_body(&mut out);
        out
    }

    /// Everything after the frame head: stored by the relay as is and sent on in
    /// [`DeliverFrame::encode`].
    pub fn body_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.body_len());
        self.write_body(&mut out);
        out
    }

    fn body_len(&self) -> usize {
        2 + self.routing_bytes.len() + self.envelope.size()
    }

    fn write_body(&self, out: &mut Vec<u8>) {
        // The routing is at most MAX_ROUTING bytes when parsed; a longer one made here is
        // refused by the relay as bad routing.
        out.extend_from_slice(&u16::try_from(self.routing_bytes.len()).unwrap_or(u16::MAX).to_be_bytes());
        out.extend_from_slice(&self.routing_bytes);
        out.extend_from_slice(self.envelope.as_bytes());
    }

    /// Parses a frame body (routing, envelope).
    fn parse_body(body: &[u8], limits: &Limits) -> Result<Self, FrameError> {
        let (len, rest) = body.split_at_checked(2).ok_or(FrameError::Truncated)?;
        let len = usize::from(u16::from_be_bytes(len.try_into().map_err(|_| FrameError::Truncated)?));
        if len == 0 || len > MAX_ROUTING {
            return Err(FrameError::BadRouting(format!("routing is {len} bytes; it must be 1 to {MAX_ROUTING}")));
        }
        let (routing_bytes, envelope) = rest.split_at_checked(len).ok_or(FrameError::Truncated)?;
        let routing: Routing =
            serde_json::from_slice(routing_bytes).map_err(|e| FrameError::BadRouting(short(&e.to_string())))?;
        let envelope = Envelope::from_bytes(envelope, limits).map_err(FrameError::Envelope)?;
        Ok(Self { routing, routing_bytes: routing_bytes.to_vec(), envelope })
    }
}

fn write_head(out: &mut Vec<u8>, kind: u8, seq: u64) {
    out.extend_from_slice(&MAGIC);
    out.push(1);
    out.push(kind);
    out.extend_from_slice(&seq.to_be_bytes());
}

/// Reads a frame head: the kind and sequence number, and the body after them.
fn parse_head(frame: &[u8]) -> Result<(u8, u64, &[u8]), FrameError> {
    let (head, body) = frame.split_at_checked(HEAD_LEN).ok_or(FrameError::Truncated)?;
    let [m0, m1, m2, m3, version, kind, seq @ ..] = head else {
        return Err(FrameError::Truncated);
    };
    if [*m0, *m1, *m2, *m3] != MAGIC {
        return Err(FrameError::NotAFrame);
    }
    if u32::from(*version) != VERSION {
        return Err(FrameError::UnsupportedVersion(*version));
    }
    let seq: [u8; 8] = seq.try_into().map_err(|_| FrameError::Truncated)?;
    Ok((*kind, u64::from_be_bytes(seq), body))
}

/// A binary frame from a device: one envelope to store and forward.
#[derive(Debug)]
pub struct SubmitFrame;

impl SubmitFrame {
    /// The frame head only: whether these bytes claim to be a submit frame at all. A relay
    /// closes the connection when this fails, and refuses the one envelope when
    /// [`SubmitFrame::parse_body`] does.
    pub fn check_head(frame: &[u8]) -> Result<&[u8], FrameError> {
        let (kind, _, body) = parse_head(frame)?;
        if kind != KIND_SUBMIT {
            return Err(FrameError::WrongKind(kind));
        }
        Ok(body)
    }

    /// The routed envelope in a submit frame's body.
    pub fn parse_body(body: &[u8], limits: &Limits) -> Result<Routed, FrameError> {
        Routed::parse_body(body, limits)
    }
}

/// A binary frame from the relay: one stored envelope, with the sequence number the
/// device acknowledges it by.
#[derive(Debug)]
pub struct DeliverFrame {
    pub seq: u64,
    pub routed: Routed,
}

impl DeliverFrame {
    /// The frame for a stored body (from [`Routed::body_bytes`]).
    pub fn encode(seq: u64, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEAD_LEN + body.len());
        write_head(&mut out, KIND_DELIVER, seq);
        out.extend_from_slice(body);
        out
    }

    pub fn parse(frame: &[u8], limits: &Limits) -> Result<Self, FrameError> {
        let (kind, seq, body) = parse_head(frame)?;
        if kind != KIND_DELIVER {
            return Err(FrameError::WrongKind(kind));
        }
        Ok(Self { seq, routed: Routed::parse_body(body, limits)? })
    }
}

/// Why a binary frame was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("not an agentfw relay frame")]
    NotAFrame,
    #[error("frame is truncated")]
    Truncated,
    #[error("relay frame version {0} is not supported")]
    UnsupportedVersion(u8),
    #[error("frame kind {0} is not expected here")]
    WrongKind(u8),
    #[error("bad routing: {0}")]
    BadRouting(String),
    #[error("the envelope was not sealed with this routing")]
    RoutingMismatch,
    #[error("the envelope's sender is not the device that sent it")]
    SenderMismatch,
    #[error("{0}")]
    Envelope(OpenError),
}

impl FrameError {
    /// The stable code the relay answers with.
    pub fn code(&self) -> &'static str {
        match self {
            FrameError::NotAFrame | FrameError::Truncated | FrameError::WrongKind(_) => codes::BAD_FRAME,
            FrameError::UnsupportedVersion(_) => codes::UNSUPPORTED_VERSION,
            FrameError::BadRouting(_) | FrameError::RoutingMismatch => codes::BAD_ROUTING,
            FrameError::SenderMismatch => codes::SENDER_MISMATCH,
            FrameError::Envelope(e) => match e {
                OpenError::TooLarge { .. } => codes::TOO_LARGE,
                OpenError::BadSignature => codes::BAD_SIGNATURE,
                OpenError::UnknownSender | OpenError::RetiredSender => codes::UNKNOWN_DEVICE,
                OpenError::Expired => codes::EXPIRED,
                OpenError::NotYetValid => codes::NOT_YET_VALID,
                OpenError::Replayed => codes::REPLAYED,
                _ => codes::BAD_ENVELOPE,
            },
        }
    }
}

fn short(s: &str) -> String {
    s.chars().take(160).collect()
}

/// Stable codes in [`ToDevice::Refused`] and [`ToDevice::Error`]. Refusals by policy use
/// the firewall's own codes (`admin.disconnected`, `containment.quarantined`,
/// `admission.refused`, …).
pub mod codes {
    pub const BAD_FRAME: &str = "relay.bad_frame";
    pub const UNSUPPORTED_VERSION: &str = "relay.unsupported_version";
    pub const HANDSHAKE: &str = "relay.handshake";
    pub const HANDSHAKE_TIMEOUT: &str = "relay.handshake_timeout";
    pub const UNKNOWN_DEVICE: &str = "relay.unknown_device";
    pub const REVOKED: &str = "relay.revoked";
    pub const BAD_SIGNATURE: &str = "relay.bad_signature";
    pub const BAD_ROUTING: &str = "relay.bad_routing";
    pub const BAD_ENVELOPE: &str = "relay.bad_envelope";
    pub const SENDER_MISMATCH: &str = "relay.sender_mismatch";
    pub const TOO_LARGE: &str = "relay.too_large";
    pub const RATE_LIMITED: &str = "relay.rate_limited";
    pub const EXPIRED: &str = "relay.expired";
    pub const NOT_YET_VALID: &str = "relay.not_yet_valid";
    pub const REPLAYED: &str = "relay.replayed";
    pub const UNKNOWN_RECIPIENT: &str = "relay.unknown_recipient";
    pub const AGENT_NOT_YOURS: &str = "relay.agent_not_yours";
    pub const WRONG_DEVICE: &str = "relay.wrong_device";
    pub const SLOW_CLIENT: &str = "relay.slow_client";
    pub const IDLE: &str = "relay.idle";
    pub const UNAVAILABLE: &str = "relay.unavailable";
    pub const SHUTDOWN: &str = "relay.shutdown";
    pub const REPLACED: &str = "relay.replaced";
    pub const ROTATED: &str = "relay.rotated";
    /// Plain HTTP to a relay that serves TLS.
    pub const TLS_REQUIRED: &str = "relay.tls_required";
}

/// Bytes as base64url without padding, for JSON.
pub mod b64 {
    use super::B64;
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&B64.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        B64.decode(text.as_bytes()).map_err(|_| serde::de::Error::custom("not base64url without padding"))
    }
}

/// `bytes` as base64url without padding.
pub fn encode_b64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// Text frames from a device.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToRelay {
    /// The answer to the challenge.
    Hello {
        version: u32,
        device: DeviceId,
        #[serde(with = "b64")]
        signature: Vec<u8>,
    },
    /// Delivered envelopes this device has stored durably, by sequence number.
    Ack { seqs: Vec<u64> },
    /// What the device's firewall decided (metadata only): `decision` events go to the
    /// audit log; `quarantined` (with a message) and `remembered` events are contained on
    /// every device; `would_refuse` goes to the audit log as a warning. Others are ignored.
    Report { events: Vec<Event> },
    /// The agents live on this device now (replaces the previous list).
    Agents { agents: Vec<Agent> },
    /// An agent's loaded components, for the one admission refresh (AD5). The relay rates
    /// them from its inventory and answers with a policy update for everyone.
    Components { agent: AgentId, label: String, components: Vec<String> },
    /// Public bundles of these devices, answered by [`ToDevice::Bundles`].
    Lookup { devices: Vec<DeviceId> },
    /// This device's key rotation notice (`agentfw-rotate-v1 …`); the relay retires the
    /// old key at once and closes this connection, and the device logs in with the new one.
    Rotate { rotation: String },
}

/// Who is where. `full`: a new directory, replacing earlier frames (a large one continues
/// in frames without `full`); otherwise these entries changed. A frame that lists a device
/// lists all of that device's live agents.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectoryFrame {
    pub full: bool,
    pub devices: Vec<DeviceEntry>,
    pub agents: Vec<AgentEntry>,
}

/// Text frames from the relay.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToDevice {
    Challenge {
        version: u32,
        #[serde(with = "b64")]
        nonce: Vec<u8>,
    },
    Welcome {
        device: DeviceId,
        limits: WireLimits,
    },
    /// The envelope with this id is stored durably: the device may forget it.
    /// `duplicate`: it was already stored before (a resend after a lost acknowledgement).
    Stored {
        id: MessageId,
        duplicate: bool,
    },
    /// The envelope with this id (when it could be read) is refused; it will not be
    /// delivered. Resending it unchanged is refused again.
    Refused {
        id: Option<MessageId>,
        code: String,
        reason: String,
        /// For `relay.rate_limited`: when to try again.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
    Policy(PolicyFrame),
    Directory(DirectoryFrame),
    /// Public bundles asked for with [`ToRelay::Lookup`]; unknown devices are left out.
    Bundles {
        bundles: Vec<BundleEntry>,
    },
    /// A protocol error; the relay closes the connection after it.
    Error {
        code: String,
        reason: String,
    },
}

/// The relay's limits, told to each device at login.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireLimits {
    pub max_plaintext: usize,
    pub max_frame: usize,
    /// Envelopes a second, sustained, and the burst above it.
    pub rate_per_second: u32,
    pub burst: u32,
    /// Deliveries sent before the device acknowledges.
    pub window: usize,
}

/// A device as the directory shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceEntry {
    pub device: DeviceId,
    pub name: String,
    /// `active`, `revoked` or `superseded`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<DeviceId>,
}

/// An agent as the directory shows it: its device, and whether it is live there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentEntry {
    pub agent: Agent,
    pub device: DeviceId,
    pub live: bool,
}

/// The machine every daemon and the relay name a device's agents by
/// ([`agentfw_core::message::Agent::machine`]), and so the machine part of their keys: the
/// name the device enrolled with, else the one its agents announce, else the device id.
/// A daemon names its own machine the same ([`agentfw_core::firewall::Config::machine`]),
/// so one agent has one key everywhere and containment reported by any machine holds it.
pub fn machine_name(enrolled: &str, device: DeviceId, announced: &str) -> String {
    [enrolled, announced].into_iter().find(|n| !n.is_empty()).map_or_else(|| device.to_string(), str::to_owned)
}

/// A device's public bundle and, if it rotated away, its signed rotation notice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleEntry {
    pub bundle: PublicBundle,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation: Option<String>,
}

/// The enrollment request (HTTP POST to [`ENROLL_PATH`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnrollRequest {
    pub invite: String,
    /// The device's `agentfw-pub-v1` line.
    pub bundle: String,
    /// A name for people (host name); may be empty.
    #[serde(default)]
    pub name: String,
    /// Signature under [`ENROLL_CONTEXT`] over [`enroll_message`].
    #[serde(with = "b64")]
    pub signature: Vec<u8>,
}

/// The answer to a successful enrollment.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EnrollResponse {
    pub device: DeviceId,
    pub connect: String,
}

/// An error body of the HTTP API: `{"code": …, "error": …}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApiError {
    pub code: String,
    pub error: String,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    const T0: Timestamp = Timestamp::from_millis(1_767_225_600_000);

    fn routed() -> (DeviceKeys, DeviceKeys, Routed) {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let alice = DeviceKeys::generate(T0, &mut rng);
        let bob = DeviceKeys::generate(T0, &mut rng);
        let id = MessageId::generate(T0, &mut rng);
        let from = Agent::new("claude:web:1:1", "claude", "web");
        let to = Agent::new("codex:api:2:2", "codex", "api");
        let routed =
            Routed::seal(&alice, bob.public(), from, to, id, "text/plain", b"hello", &Limits::default(), T0, &mut rng)
                .unwrap();
        (alice, bob, routed)
    }

    #[test]
    fn frames_round_trip_and_verify() {
        let (alice, _bob, routed) = routed();
        assert_eq!(routed.media_type(), "text/plain");
        assert!(routed.envelope.header().content_type.starts_with("text/plain; agentfw-routing="));
        let frame = routed.to_submit_frame();
        let body = SubmitFrame::check_head(&frame).unwrap();
        let parsed = SubmitFrame::parse_body(body, &Limits::default()).unwrap();
        assert_eq!(parsed.routing, routed.routing);
        parsed.verify(alice.public()).unwrap();
        let deliver = DeliverFrame::encode(42, &parsed.body_bytes());
        let delivered = DeliverFrame::parse(&deliver, &Limits::default()).unwrap();
        assert_eq!(delivered.seq, 42);
        delivered.routed.verify(alice.public()).unwrap();
        assert_eq!(delivered.routed.envelope.as_bytes(), routed.envelope.as_bytes());
    }

    #[test]
    fn tampering_is_caught() {
        let (alice, bob, routed) = routed();
        let frame = routed.to_submit_frame();
        // Another device's key, a changed routing, a changed envelope.
        let parsed = SubmitFrame::parse_body(SubmitFrame::check_head(&frame).unwrap(), &Limits::default()).unwrap();
        assert_eq!(parsed.verify(bob.public()).unwrap_err(), FrameError::SenderMismatch);
        let mut bad = frame.clone();
        let at = frame.windows(3).position(|w| w == b"web").unwrap();
        bad[at + 2] = b'x';
        let parsed = SubmitFrame::parse_body(SubmitFrame::check_head(&bad).unwrap(), &Limits::default()).unwrap();
        assert_eq!(parsed.verify(alice.public()).unwrap_err(), FrameError::RoutingMismatch);
        let mut bad = frame.clone();
        let n = bad.len();
        bad[n - 70] ^= 1;
        let parsed = SubmitFrame::parse_body(SubmitFrame::check_head(&bad).unwrap(), &Limits::default()).unwrap();
        assert_eq!(parsed.verify(alice.public()).unwrap_err(), FrameError::Envelope(OpenError::BadSignature));
        assert_eq!(SubmitFrame::check_head(b"GET / HTTP/1.1").unwrap_err(), FrameError::NotAFrame);
        assert_eq!(SubmitFrame::check_head(b"AFWR").unwrap_err(), FrameError::Truncated);
        let mut v2 = frame.clone();
        v2[4] = 2;
        assert_eq!(SubmitFrame::check_head(&v2).unwrap_err(), FrameError::UnsupportedVersion(2));
        let deliver = DeliverFrame::encode(1, &routed.body_bytes());
        assert_eq!(SubmitFrame::check_head(&deliver).unwrap_err(), FrameError::WrongKind(2));
        // A media type that leaves no room for the binding is refused when sealing.
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let long = "x".repeat(Routed::MAX_MEDIA_TYPE + 1);
        let r = Routed::seal(
            &alice,
            bob.public(),
            routed.routing.from.clone(),
            routed.routing.to.clone(),
            MessageId::generate(T0, &mut rng),
            &long,
            b"",
            &Limits::default(),
            T0,
            &mut rng,
        );
        assert_eq!(r.unwrap_err(), SealError::BadContentType);
    }

    #[test]
    fn text_frames_are_tagged_json() {
        let frame = ToDevice::Stored { id: "01JB0000000000000000000000".parse().unwrap(), duplicate: false };
        assert_eq!(
            serde_json::to_string(&frame).unwrap(),
            r#"{"type":"stored","id":"01JB0000000000000000000000","duplicate":false}"#
        );
        let ack: ToRelay = serde_json::from_str(r#"{"type":"ack","seqs":[1,2]}"#).unwrap();
        assert!(matches!(ack, ToRelay::Ack { seqs } if seqs == [1, 2]));
        assert!(serde_json::from_str::<ToRelay>(r#"{"type":"ack","seqs":[1],"x":1}"#).is_err());
        assert!(serde_json::from_str::<ToRelay>(r#"{"type":"shutdown"}"#).is_err());
        // Policy and directory frames keep their fields beside the tag, and refuse others.
        let policy = ToDevice::Policy(PolicyFrame { seq: 3, reset: true, actions: Vec::new() });
        let text = serde_json::to_string(&policy).unwrap();
        assert_eq!(text, r#"{"type":"policy","seq":3,"reset":true,"actions":[]}"#);
        assert!(matches!(
            serde_json::from_str(&text).unwrap(),
            ToDevice::Policy(PolicyFrame { seq: 3, reset: true, .. })
        ));
        let directory = r#"{"type":"directory","full":true,"devices":[],"agents":[]}"#;
        assert!(matches!(
            serde_json::from_str(directory).unwrap(),
            ToDevice::Directory(DirectoryFrame { full: true, .. })
        ));
        assert!(
            serde_json::from_str::<ToDevice>(r#"{"type":"policy","seq":3,"reset":true,"actions":[],"x":1}"#).is_err()
        );
        assert!(
            serde_json::from_str::<ToDevice>(r#"{"type":"directory","full":true,"devices":[],"agents":[],"x":1}"#)
                .is_err()
        );
    }
}
