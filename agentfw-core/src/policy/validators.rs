//! Checksums and structure that a provider builds into its tokens, checked on a matched
//! value before it counts (`validator: github-checksum` in a pattern file).
//!
//! A regex says a value has a token's shape; a validator says it could have been issued.
//! Where a provider defines a checksum, every real token passes it and a random string of
//! the same shape fails it (GitHub's 32-bit CRC leaves one random look-alike in four
//! billion), so a validated pattern can afford a short prefix without refusing hashes,
//! ids or base64 that happen to contain it. Where the provider defines no checksum but the
//! token carries decodable structure (a macaroon, a JWT header, a Discord user id), the
//! validator checks that structure instead. Each check is written from the provider's own
//! description, named in the pattern's `source`.

use sha2::{Digest, Sha256};

/// A check a pattern names in its `validator` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Validator {
    /// GitHub and npm tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `npm_`): 30 random
    /// base62 characters, then their CRC-32 in 6 base62 digits (0-9, A-Z, a-z).
    GithubChecksum,
    /// Grafana service account tokens (`glsa_<32>_<8 hex>`): the CRC-32 of everything
    /// before the last `_`, as 4 little-endian bytes in hex.
    GrafanaChecksum,
    /// PyPI API tokens (`pypi-…`): a version-2 binary macaroon in unpadded base64url, with
    /// the PyPI location, an identifier, and a 32-byte signature.
    PypiMacaroon,
    /// Bech32 strings with their 6-character checksum (age identities `AGE-SECRET-KEY-1…`,
    /// `AGE-SECRET-KEY-PQ-1…`, `AGE-PLUGIN-…-1…`).
    Bech32,
    /// Base58Check strings: the last 4 bytes are the start of the double SHA-256 of the
    /// rest (BIP32 extended private keys, `xprv…`).
    Base58Check,
    /// JSON Web Tokens: the first segment is base64url of a JSON object that names `alg`.
    Jwt,
    /// Discord bot tokens: the first segment is the bot's numeric user id in base64.
    DiscordBotToken,
    /// The label of PEM-like armour (`RSA PRIVATE KEY`, `ACME SIGNING KEY`): it names a key
    /// and says neither PUBLIC nor CERTIFICATE, whatever its case or spacing.
    PrivateKeyLabel,
}

/// Every validator with the name a pattern file uses for it.
pub const VALIDATORS: &[(&str, Validator)] = &[
    ("github-checksum", Validator::GithubChecksum),
    ("grafana-checksum", Validator::GrafanaChecksum),
    ("pypi-macaroon", Validator::PypiMacaroon),
    ("bech32", Validator::Bech32),
    ("base58check", Validator::Base58Check),
    ("jwt", Validator::Jwt),
    ("discord-bot-token", Validator::DiscordBotToken),
    ("private-key-label", Validator::PrivateKeyLabel),
];

impl Validator {
    /// The validator a pattern file calls `name`.
    pub fn named(name: &str) -> Option<Self> {
        VALIDATORS.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// The name a pattern file uses.
    pub fn name(self) -> &'static str {
        VALIDATORS.iter().find(|(_, v)| *v == self).map_or("", |(n, _)| n)
    }

    /// Whether `value` (a pattern's matched value; a delimiter the regex consumed around
    /// the token is ignored) passes the check.
    pub fn check(self, value: &str) -> bool {
        match self {
            Self::GithubChecksum => github_checksum(token(value, |c| c.is_ascii_alphanumeric() || c == '_')),
            Self::GrafanaChecksum => grafana_checksum(token(value, |c| c.is_ascii_alphanumeric() || c == '_')),
            Self::PypiMacaroon => pypi_macaroon(token(value, is_base64url)),
            Self::Bech32 => bech32(token(value, |c| c.is_ascii_alphanumeric() || c == '-')),
            Self::Base58Check => base58check(token(value, |c| c.is_ascii_alphanumeric())),
            Self::Jwt => jwt(token(value, |c| is_base64url(c) || c == '.')),
            Self::DiscordBotToken => discord_bot_token(token(value, |c| is_base64url(c) || c == '.')),
            Self::PrivateKeyLabel => private_key_label(value),
        }
    }
}

fn is_base64url(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// The longest run of token characters in `value`: regexes that end a token with "not a
/// token character, or the end" hand over that one extra character.
fn token(value: &str, is_token: impl Fn(char) -> bool) -> &str {
    value.split(|c: char| !is_token(c)).max_by_key(|part| part.len()).unwrap_or("")
}

/// CRC-32 (IEEE 802.3, reflected, as zlib and Go's `crc32.ChecksumIEEE`), a bit at a
/// time: the values checked are a few dozen bytes.
fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |crc, &b| {
        (0..8).fold(crc ^ u32::from(b), |c, _| if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 })
    })
}

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn github_checksum(token: &str) -> bool {
    let Some((_, tail)) = token.rsplit_once('_') else { return false };
    if tail.len() != 36 {
        return false;
    }
    let (entropy, sum) = tail.split_at(30);
    let mut decoded: u64 = 0;
    for b in sum.bytes() {
        let Some(digit) = BASE62.iter().position(|&d| d == b) else { return false };
        decoded = decoded * 62 + digit as u64;
    }
    decoded == u64::from(crc32(entropy.as_bytes()))
}

fn grafana_checksum(token: &str) -> bool {
    let Some((key, sum)) = token.rsplit_once('_') else { return false };
    let crc = crc32(key.as_bytes()).to_le_bytes();
    let hex: String = crc.iter().map(|b| format!("{b:02x}")).collect();
    sum.eq_ignore_ascii_case(&hex)
}

fn decode_base64url(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let text = text.trim_end_matches('=');
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).ok()
}

fn pypi_macaroon(token: &str) -> bool {
    let Some(body) = token.strip_prefix("pypi-") else { return false };
    let Some(bytes) = decode_base64url(body) else { return false };
    // Version 2 binary format: a version byte, then fields of (type varint, length varint,
    // data) in sections closed by a zero byte; the last field is the signature (type 6).
    let Some((&2, mut rest)) = bytes.split_first() else { return false };
    let mut location = None;
    let mut identifier = false;
    let mut signature = None;
    while let Some((&kind, after)) = rest.split_first() {
        if kind == 0 {
            rest = after;
            continue;
        }
        let Some((len, after)) = varint(after) else { return false };
        let Some(data) = after.get(..len) else { return false };
        rest = after.get(len..).unwrap_or_default();
        match kind {
            1 if location.is_none() => location = Some(data),
            2 => identifier = true,
            6 => signature = Some(data.len()),
            _ => {}
        }
    }
    matches!(location, Some(b"pypi.org" | b"test.pypi.org")) && identifier && signature == Some(32)
}

/// An unsigned LEB128 integer and what follows it.
fn varint(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let mut value = 0usize;
    for (i, &b) in bytes.iter().enumerate().take(4) {
        value |= usize::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, bytes.get(i + 1..).unwrap_or_default()));
        }
    }
    None
}

const BECH32: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";

fn bech32(token: &str) -> bool {
    if token.chars().any(|c| c.is_ascii_lowercase()) && token.chars().any(|c| c.is_ascii_uppercase()) {
        return false;
    }
    let lower = token.to_ascii_lowercase();
    let Some((hrp, data)) = lower.rsplit_once('1') else { return false };
    if hrp.is_empty() || data.len() < 6 {
        return false;
    }
    let mut values = Vec::with_capacity(hrp.len() * 2 + 1 + data.len());
    values.extend(hrp.bytes().map(|b| b >> 5));
    values.push(0);
    values.extend(hrp.bytes().map(|b| b & 31));
    for b in data.bytes() {
        let Some(v) = BECH32.iter().position(|&c| c == b) else { return false };
        values.push(v as u8);
    }
    // Bech32 (BIP 173), whose constant is 1; bech32m's would be 0x2bc830a3.
    bech32_polymod(&values) == 1
}

fn bech32_polymod(values: &[u8]) -> u32 {
    const GENERATOR: [u32; 5] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3];
    values.iter().fold(1u32, |chk, &v| {
        let top = chk >> 25;
        let mut chk = ((chk & 0x01ff_ffff) << 5) ^ u32::from(v);
        for (i, g) in GENERATOR.iter().enumerate() {
            if (top >> i) & 1 == 1 {
                chk ^= g;
            }
        }
        chk
    })
}

const BASE58: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

fn base58check(token: &str) -> bool {
    if token.len() > 128 {
        return false;
    }
    // Big-endian base-256 digits of the number the base58 string writes.
    let mut bytes: Vec<u8> = Vec::with_capacity(token.len());
    for b in token.bytes() {
        let Some(digit) = BASE58.iter().position(|&d| d == b) else { return false };
        let mut carry = digit as u32;
        for byte in bytes.iter_mut().rev() {
            carry += u32::from(*byte) * 58;
            *byte = (carry & 0xff) as u8;
            carry >>= 8;
        }
        while carry > 0 {
            bytes.insert(0, (carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    let zeros = token.bytes().take_while(|&b| b == b'1').count();
    let mut full = vec![0u8; zeros];
    full.extend(bytes);
    if full.len() < 5 {
        return false;
    }
    let (payload, sum) = full.split_at(full.len() - 4);
    let digest = Sha256::digest(Sha256::digest(payload));
    digest.get(..4) == Some(sum)
}

fn jwt(token: &str) -> bool {
    let mut parts = token.split('.');
    let (Some(header), Some(_payload)) = (parts.next(), parts.next()) else { return false };
    let Some(header) = decode_base64url(header) else { return false };
    serde_json::from_slice::<serde_json::Value>(&header).is_ok_and(|h| h.get("alg").is_some_and(|a| a.is_string()))
}

fn discord_bot_token(token: &str) -> bool {
    let Some((id, _)) = token.split_once('.') else { return false };
    let Some(bytes) = decode_base64url(id) else { return false };
    (17..=20).contains(&bytes.len()) && bytes.iter().all(u8::is_ascii_digit)
}

fn private_key_label(label: &str) -> bool {
    let upper = label.to_ascii_uppercase();
    let words: Vec<&str> = upper.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    words.iter().any(|w| matches!(*w, "KEY" | "PRIVATE" | "SECRET"))
        && !words.iter().any(|w| matches!(*w, "PUBLIC" | "CERTIFICATE" | "PUBKEY"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// A GitHub-style token built the way the provider describes, so the test does not
    /// rest on a copied sample.
    fn github_style(prefix: &str, entropy: &str) -> String {
        let mut n = u64::from(crc32(entropy.as_bytes()));
        let mut digits = [b'0'; 6];
        for d in digits.iter_mut().rev() {
            *d = BASE62[(n % 62) as usize];
            n /= 62;
        }
        format!("{prefix}{entropy}{}", std::str::from_utf8(&digits).unwrap())
    }

    #[test]
    fn crc32_matches_the_standard_check_value() {
        // The CRC-32 catalogue's check value for "123456789".
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn github_and_npm_checksums() {
        let v = Validator::named("github-checksum").unwrap();
        for prefix in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "npm_"] {
            let good = github_style(prefix, "zQWBuTSOoRi4A9spHcVY5ncnsDkxkJ");
            assert!(v.check(&good), "{good}");
            // With the delimiter a regex may consume around it.
            assert!(v.check(&format!("{good}\"")), "{good}");
            // One changed character anywhere breaks it.
            let mut bad = good.clone().into_bytes();
            bad[10] = if bad[10] == b'a' { b'b' } else { b'a' };
            assert!(!v.check(std::str::from_utf8(&bad).unwrap()));
        }
        assert!(!v.check("ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"));
        assert!(!v.check("ghp_short"));
    }

    #[test]
    fn grafana_checksum() {
        let v = Validator::GrafanaChecksum;
        let key = "glsa_Xx3vQ2bKp9LmN4rT7wYz1AcDeFgHiJkL";
        let sum: String = crc32(key.as_bytes()).to_le_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert!(v.check(&format!("{key}_{sum}")));
        assert!(!v.check(&format!("{key}_deadbeef")));
    }

    fn macaroon(location: &[u8], sig_len: usize) -> String {
        use base64::Engine as _;
        let mut m = vec![2u8, 1, location.len() as u8];
        m.extend_from_slice(location);
        m.extend_from_slice(&[2, 16]);
        m.extend_from_slice(b"user:0123456789a");
        m.push(0);
        m.extend_from_slice(&[2, 12]);
        m.extend_from_slice(b"{\"version\":1");
        m.push(0);
        m.push(0);
        m.extend_from_slice(&[6, sig_len as u8]);
        m.extend(std::iter::repeat_n(0x5a, sig_len));
        format!("pypi-{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(m))
    }

    #[test]
    fn pypi_macaroons() {
        let v = Validator::PypiMacaroon;
        let good = macaroon(b"pypi.org", 32);
        assert!(good.starts_with("pypi-AgEIcHlwaS5vcmc"), "{good}");
        assert!(v.check(&good));
        assert!(v.check(&macaroon(b"test.pypi.org", 32)));
        assert!(!v.check(&macaroon(b"evil.example", 32)));
        assert!(!v.check(&macaroon(b"pypi.org", 31)));
        // The right prefix followed by random base64 is not a macaroon.
        assert!(!v.check("pypi-AgEIcHlwaS5vcmcQWxk3m9bT2vR8pL4nZ7yH1sK6dF0gJ5cX3aE8uI2oP9wV4tY7rB1nM6qS0"));
    }

    #[test]
    fn bech32_checksums() {
        let v = Validator::Bech32;
        // BIP 173's valid test strings.
        assert!(v.check("A12UEL5L"));
        assert!(v.check("abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw"));
        assert!(v.check("split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w"));
        // Mixed case and a changed character are not.
        assert!(!v.check("A12UEl5L"));
        assert!(!v.check("abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxx"));
        assert!(!v.check("AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ"));
    }

    #[test]
    fn base58check_strings() {
        let v = Validator::Base58Check;
        // BIP 32 test vector 1, chain m: the published extended private key.
        assert!(v.check(
            "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"
        ));
        assert!(!v.check(
            "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHj"
        ));
        assert!(!v.check("0OIl"));
    }

    #[test]
    fn jwt_headers() {
        let v = Validator::Jwt;
        // {"alg":"HS256","typ":"JWT"} . {"sub":"1"} . signature
        assert!(v.check("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLWJ5dGVzLWhlcmU"));
        assert!(!v.check("eyJmb28iOiJiYXIifQ.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"));
        assert!(!v.check("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"));
    }

    #[test]
    fn discord_bot_tokens() {
        let v = Validator::DiscordBotToken;
        // base64("123456789012345678") . timestamp . hmac
        assert!(v.check("MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456789AB"));
        assert!(!v.check("NjQ3aGVsbG8td29ybGQtYWJj.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456789AB"));
    }

    #[test]
    fn private_key_labels() {
        let v = Validator::PrivateKeyLabel;
        for label in [
            "RSA PRIVATE KEY",
            "private key",
            "PGP PRIVATE KEY BLOCK",
            "ACME SIGNING KEY",
            "OPENSSH  PRIVATE KEY",
            "Ec Private Key",
        ] {
            assert!(v.check(label), "{label}");
        }
        for label in
            ["PUBLIC KEY", "RSA PUBLIC KEY", "PGP PUBLIC KEY BLOCK", "SSH2 PUBLIC KEY", "CERTIFICATE", "public key"]
        {
            assert!(!v.check(label), "{label}");
        }
    }

    #[test]
    fn names_round_trip() {
        for (name, v) in VALIDATORS {
            assert_eq!(Validator::named(name), Some(*v));
            assert_eq!(v.name(), *name);
        }
        assert_eq!(Validator::named("luhn"), None);
    }
}
