//! Sealed, signed envelopes between devices (TX2–TX5).
//!
//! Every device has two key pairs ([`DeviceKeys`]): Ed25519 to sign and X-Wing
//! (ML-KEM-768 + X25519) to receive HPKE-sealed text. Its public half travels as one line of
//! text ([`PublicBundle`]), and a device is named by a hash of that half ([`DeviceId`]).
//!
//! [`seal`] encrypts a body to one recipient with HPKE (Base mode, X-Wing, HKDF-SHA256,
//! ChaCha20-Poly1305; fixed by the format version, never read from input), binds the
//! header into the AEAD's associated data, and signs header, encapsulated key and
//! ciphertext with the sender's Ed25519 key. [`open`] checks, in this order, and stops at
//! the first failure, each with its own [`OpenError`]:
//!
//! 1. format: size limits, version, lengths, no trailing bytes;
//! 2. sender: a device the [`Keyring`] knows and has neither revoked nor seen rotated away;
//! 3. signature (strict Ed25519) over everything before it;
//! 4. recipient: the envelope names this device;
//! 5. time window: not older than the window, not too far in the future;
//! 6. replay: the (sender, message id) pair was not opened before ([`ReplayCache`]);
//! 7. decryption.
//!
//! Nothing here reads a clock or a global RNG: `now` and the random number generator come
//! from the caller, so a seeded test gets the same bytes every run.
//!
//! The binary layout of an envelope (all integers big-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 4 | magic `AFWE` |
//! | 1 | format version, `1` |
//! | 16 | sender device id |
//! | 16 | recipient device id |
//! | 16 | message id (a ULID) |
//! | 8 | timestamp, milliseconds since the Unix epoch |
//! | 1 + n | content type: length, then n printable ASCII bytes (1 ≤ n ≤ 127) |
//! | 1120 | X-Wing encapsulated key |
//! | 4 + m | ciphertext: length, then m bytes (16 ≤ m ≤ max plaintext + 16) |
//! | 64 | Ed25519 signature over all bytes before it |
//!
//! Everything up to and including the content type is the header; it is the HPKE
//! associated data. The header is readable without keys ([`Envelope::from_bytes`]), so a
//! relay can route on it; the body is not.
//! [`Envelope::verify`] checks the sender's signature without the
//! recipient's keys, so the relay knows the metadata it routes and logs is authentic.
//!
//! Devices also sign short statements for other protocols (a relay's login challenge, the
//! routing fields next to an envelope) with [`DeviceKeys::sign_statement`]; each names its
//! protocol in a context string that the signature covers, so no statement can be passed
//! off as an envelope, a rotation notice or a statement of another protocol.
//!
//! What a command line does with it (`keys new`, `keys show`, `seal`, `open`): every
//! input and output is bytes or text, and the adapter owns the files and the clock.
//!
//! ```
//! use agentfw_core::message::MessageId;
//! use agentfw_core::seal::{self, DeviceKeys, Draft, Keyring, Limits, PublicBundle, ReplayCache};
//! use agentfw_core::time::Timestamp;
//! # use rand_core::SeedableRng;
//! # let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
//! let now = Timestamp::from_millis(1_767_225_600_000);
//!
//! // `keys new` writes the key file; `keys show` prints the bundle line.
//! let alice_file = DeviceKeys::generate(now, &mut rng).to_key_file();
//! let bob = DeviceKeys::generate(now, &mut rng);
//! let bob_line = bob.public().to_line();
//!
//! // `seal --to PUBFILE`: Alice seals stdin for Bob.
//! let alice = DeviceKeys::from_key_file(alice_file.as_bytes())?;
//! let to = PublicBundle::parse(&bob_line)?;
//! let draft = Draft { id: MessageId::generate(now, &mut rng), content_type: "text/plain", body: b"hi" };
//! let envelope = seal::seal(&alice, &to, &draft, &Limits::default(), now, &mut rng)?.into_bytes();
//!
//! // `open --from PUBFILE`: Bob opens it, trusting Alice's bundle line.
//! let mut keyring = Keyring::new();
//! keyring.trust(PublicBundle::parse(&alice.public().to_line())?)?;
//! let mut replay = ReplayCache::default();
//! let opened = seal::open(&bob, &keyring, &mut replay, &envelope, &Limits::default(), now)?;
//! assert_eq!(opened.body, b"hi");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod envelope;
mod keys;
mod replay;

pub use envelope::{CONTENT_TYPE_MAX, Draft, Envelope, Header, Limits, OpenError, Opened, SealError, open, seal};
pub use keys::{DeviceId, DeviceKeys, KeyError, KeyStatus, Keyring, Peer, PublicBundle, Rotation};
pub use replay::{ReplayCache, ReplayConfig, ReplayError, ReplayKey};

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        for nibble in [b >> 4, b & 0x0f] {
            out.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
        }
    }
    out
}

/// Exactly `N` bytes from lowercase (or uppercase) hex, or `None`.
pub(crate) fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    if s.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (slot, pair) in out.iter_mut().zip(s.as_bytes().chunks_exact(2)) {
        let [hi, lo] = pair else { return None };
        *slot = (nibble(*hi)? << 4) | nibble(*lo)?;
    }
    Some(out)
}

/// A cursor over untrusted bytes that never panics: every read is bounds-checked and a
/// short read is `None`.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.rest.split_at_checked(n)?;
        self.rest = tail;
        Some(head)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|[b]| b)
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_be_bytes)
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_be_bytes)
    }

    pub(crate) fn remaining(&self) -> usize {
        self.rest.len()
    }
}

/// A message id as the 16 bytes of its ULID.
pub(crate) fn message_id_bytes(id: crate::message::MessageId) -> [u8; 16] {
    // The Display form of a message id is always a valid ULID string, so this never falls
    // back; the fallback only keeps the core free of panics.
    ulid::Ulid::from_string(&id.to_string()).map_or(0, u128::from).to_be_bytes()
}

/// The message id whose ULID is these 16 bytes. Every 128-bit value is a ULID.
pub(crate) fn message_id_from_bytes(bytes: [u8; 16]) -> Option<crate::message::MessageId> {
    ulid::Ulid::from(u128::from_be_bytes(bytes)).to_string().parse().ok()
}
