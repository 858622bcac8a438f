//! Texts that are hard for a content engine, each beside prose of the same size (PR9).
//!
//! Every kind is generated from a seed, so a benchmark can judge many different texts of
//! one kind in turn: an engine that caches what it learned about one text (a lazy DFA
//! does) must show its cost on text it has not seen, as a daemon does.

/// A small deterministic generator (splitmix64): the same seed gives the same text.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }

    /// `n` characters drawn from `alphabet`.
    pub fn chars(&mut self, alphabet: &str, n: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        (0..n).map(|_| chars.get(self.below(chars.len())).copied().unwrap_or('x')).collect()
    }
}

pub const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &str = "0123456789abcdef";

/// The kinds, by name: each a function from a seed to about `bytes` of text.
/// Makes a text of one kind, of about the given size.
pub type Kind = fn(&mut Rng, usize) -> String;

pub const KINDS: &[(&str, Kind)] = &[
    ("prose", prose),
    ("base64_line", base64_line),
    ("base64_wrapped", base64_wrapped),
    ("hex", hex),
    ("certificates", certificates),
    ("json_ids", json_ids),
    ("token_soup", token_soup),
    ("combining_marks", combining_marks),
    ("one_char", one_char),
    ("nested_brackets", nested_brackets),
    ("unclosed_markup", unclosed_markup),
    ("string_pieces", string_pieces),
    ("escapes", escapes),
];

/// Cuts `text` to at most `bytes`, on a character boundary.
pub fn cut(mut text: String, bytes: usize) -> String {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}

/// English prose about software work: sentences drawn at random, so no two texts repeat.
pub fn prose(rng: &mut Rng, bytes: usize) -> String {
    const SENTENCES: &[&str] = &[
        "The release went out on Tuesday after the last review was done.",
        "We moved the retry logic into the client so that every caller gets the same behaviour.",
        "Nobody could explain why the nightly build took twice as long as it did a month ago.",
        "After some digging it turned out that the cache was cleared on every run.",
        "The fix is small, but the test that proves it needed a new fixture.",
        "Please read the design note before you change how sessions are stored.",
        "She suggested that we keep the old endpoint for one more release and log who still calls it.",
        "Most of the time goes into parsing, which surprised everyone on the team.",
        "I would rather remove the feature than keep a version of it that nobody trusts.",
        "The documentation says the limit is per user, but the code applies it per project.",
        "We agreed to write the migration so that it can run twice without harm.",
        "His benchmark measured the warm path only, so the numbers looked better than they are.",
        "If the queue grows faster than the workers drain it, the service sheds the oldest jobs first.",
        "The logs from last night show three restarts, each after the disk filled up.",
        "Let us talk about the naming tomorrow; for now the behaviour matters more.",
        "The customer asked whether their data ever leaves the region, and the answer is no.",
    ];
    let mut out = String::with_capacity(bytes + 128);
    while out.len() < bytes {
        for _ in 0..1 + rng.below(5) {
            out.push_str(SENTENCES.get(rng.below(SENTENCES.len())).copied().unwrap_or_default());
            out.push(' ');
        }
        out.push_str("\n\n");
    }
    cut(out, bytes)
}

fn base64(data: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len() / 3 * 4 + 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.extend(TABLE.get(((n >> (18 - 6 * i)) & 63) as usize).map(|&b| char::from(b)));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / width + 1);
    for (i, c) in text.chars().enumerate() {
        if i > 0 && i % width == 0 {
            out.push('\n');
        }
        out.push(c);
    }
    out
}

/// Random bytes in base64 on one line, as a pasted attachment.
pub fn base64_line(rng: &mut Rng, bytes: usize) -> String {
    cut(base64(&rng.bytes(bytes / 4 * 3 + 3)), bytes)
}

/// Random bytes in base64 wrapped at 76 columns, as `base64` prints them.
pub fn base64_wrapped(rng: &mut Rng, bytes: usize) -> String {
    cut(wrap(&base64(&rng.bytes(bytes / 4 * 3 + 3)), 76), bytes)
}

/// Lines of 64 hex digits, as a dump of digests.
pub fn hex(rng: &mut Rng, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 65);
    while out.len() < bytes {
        out.push_str(&rng.chars(HEX, 64));
        out.push('\n');
    }
    cut(out, bytes)
}

/// PEM certificates (a bundle), their bodies random but shaped like DER in base64.
pub fn certificates(rng: &mut Rng, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 2048);
    while out.len() < bytes {
        let size = 700 + rng.below(900);
        let mut der = vec![0x30, 0x82, (size >> 8) as u8, size as u8];
        der.extend(rng.bytes(size));
        out.push_str("# Issuer: CN=Example Root CA O=Example Trust\n-----BEGIN CERTIFICATE-----\n");
        out.push_str(&wrap(&base64(&der), 64));
        out.push_str("\n-----END CERTIFICATE-----\n\n");
    }
    cut(out, bytes)
}

/// A JSON array of records full of identifiers: UUIDs, numeric ids, prefixed ids, hashes.
pub fn json_ids(rng: &mut Rng, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 512);
    out.push('[');
    while out.len() < bytes {
        let uuid = format!(
            "{}-{}-{}-{}-{}",
            rng.chars(HEX, 8),
            rng.chars(HEX, 4),
            rng.chars(HEX, 4),
            rng.chars(HEX, 4),
            rng.chars(HEX, 12)
        );
        out.push_str(&format!(
            "{{\"id\":\"{uuid}\",\"user_id\":{},\"org_id\":\"org_{}\",\"request_id\":\"req_{}\",\"etag\":\"{}\",\"key\":\"{}\"}},\n",
            rng.next_u64() % 10_000_000,
            rng.chars(ALNUM, 24),
            rng.chars(HEX, 32),
            rng.chars(HEX, 40),
            rng.chars(ALNUM, 16),
        ));
    }
    out.push(']');
    cut(out, bytes)
}

/// Token prefixes of many providers, each with a short random tail: every prefix is a
/// candidate, none is a whole token.
pub fn token_soup(rng: &mut Rng, bytes: usize) -> String {
    const PREFIXES: &[&str] = &[
        "ghp_",
        "gho_",
        "ghs_",
        "github_pat_",
        "AKIA",
        "ASIA",
        "xoxb-",
        "xoxp-",
        "xapp-",
        "sk-",
        "sk-proj-",
        "sk-ant-api03-",
        "sk_live_",
        "rk_live_",
        "glpat-",
        "AIza",
        "hf_",
        "npm_",
        "pypi-",
        "eyJ",
        "SG.",
        "dop_v1_",
        "AGE-SECRET-KEY-1",
        "-----BEGIN ",
        "shpat_",
        "xai-",
        "gsk_",
        "r8_",
        "whsec_",
        "sq0atp-",
    ];
    let mut out = String::with_capacity(bytes + 64);
    while out.len() < bytes {
        out.push_str(PREFIXES.get(rng.below(PREFIXES.len())).copied().unwrap_or_default());
        let tail = 2 + rng.below(10);
        out.push_str(&rng.chars(ALNUM, tail));
        out.push(if rng.below(8) == 0 { '\n' } else { ' ' });
    }
    cut(out, bytes)
}

/// Letters each under a pile of combining marks ("zalgo" text).
pub fn combining_marks(rng: &mut Rng, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 128);
    while out.len() < bytes {
        out.push(char::from(b'a' + rng.below(26) as u8));
        for _ in 0..rng.below(30) {
            out.push(char::from_u32(0x300 + rng.below(0x70) as u32).unwrap_or('\u{301}'));
        }
        if rng.below(6) == 0 {
            out.push(' ');
        }
    }
    cut(out, bytes)
}

/// One character repeated.
pub fn one_char(_rng: &mut Rng, bytes: usize) -> String {
    "a".repeat(bytes)
}

/// Brackets nested as deep as the text allows.
pub fn nested_brackets(_rng: &mut Rng, bytes: usize) -> String {
    let depth = bytes / 11;
    cut(format!("{}{}", "{\"a\": [(".repeat(depth), ")]}".repeat(depth)), bytes)
}

/// Link targets and quotes opened and never closed (`[](a'b"c\`d`…), each of which makes the
/// plain view look ahead for its end.
pub fn unclosed_markup(_rng: &mut Rng, bytes: usize) -> String {
    cut("[](a'b\"c`d".repeat(bytes / 10 + 1), bytes)
}

/// Tiny string literals glued every way the joined view puts back together (`"a1" + "b2"`,
/// `["c3", "d4"]`, `e5, f6`, `| g7 | h8 |`, `part 1: i9`, `j0-k1-l2`), one long chain.
pub fn string_pieces(rng: &mut Rng, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 64);
    let glue = ["\" + \"", "\", \"", ", ", " | ", "\npart 1: ", "``", "-", "\\\n", "\n\n"];
    while out.len() < bytes {
        out.push_str(&rng.chars(ALNUM, 2));
        out.push_str(glue.get(rng.below(glue.len())).copied().unwrap_or_default());
    }
    cut(out, bytes)
}

/// Escapes of every kind the decoder reads, mixed and mostly broken (`&#1`, `\u{`, `0x6`,
/// `67 68`, `=\n`), so every decoding starts and few finish.
pub fn escapes(rng: &mut Rng, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 64);
    let parts =
        ["&#103;", "&#x6", "&amp", "\\u0067", "\\u{6", "\\x6", "0x67,", "67 ", "6G ", "=\n", "Ab1x=\n", "&lowbar;"];
    while out.len() < bytes {
        out.push_str(parts.get(rng.below(parts.len())).copied().unwrap_or_default());
    }
    cut(out, bytes)
}
