//! Secrets are judged on several views of the text (PR4): a token split over two lines,
//! spaced every few characters, in fullwidth letters or look-alikes, with invisible
//! characters inside, or encoded (base64 once or twice, base32, hex as digits or byte by
//! byte, URL escapes, HTML references, `\u` escapes, quoted-printable soft breaks) is
//! still refused. Each
//! rewrite is shown passing the same patterns judged on the text as sent only, and data
//! that only looks like secrets (spaced fingerprints, hex dumps, wrapped ids, encoded
//! prose) is still let through.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;

use agentfw_core::policy::diagnostic::SourceFile;
use agentfw_core::policy::{RuleSet, RuleVerdict, Scanner, Sources, Stage};
use agentfw_core::time::Timestamp;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

/// Tokens of several shapes, each refused as sent: an npm token (its CRC-32 checksum
/// valid), an AWS access key id, a Stripe live key, an Anthropic key and an OpenSSH
/// private key line.
const TOKENS: &[(&str, &str)] = &[
    ("NPM_TOKEN=", "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"),
    ("aws_access_key_id = ", "AKIAZ7Q3X9M2K4W8R6T1"),
    ("STRIPE_KEY=", "sk_live_51Hq8ZkL3mN9pR2tV5xB7cD4fG6hJ8kLq"),
    (
        "ANTHROPIC_API_KEY=",
        "sk-ant-api03-q8Zk3LmN9pR2tV5xB7cD4fG6hJ8kLqW1eR5tY7uI9oP2aS4dF6gH8jK0lZ3xC5vB7nM9qW2eR4tY6uI8oP0aS2dF4gH6jK8lZ0xC2vB4nM6qW8eR0tY2uI4oP6aA",
    ),
];

fn at() -> Timestamp {
    Timestamp::from_millis(1_700_000_000_000)
}

fn scanner(sources: &Sources) -> Scanner {
    Scanner::new(Arc::new(RuleSet::compile(sources).expect("the pack compiles")))
}

/// The default pack, and the same pack with its pattern sets judged on the text as sent
/// only: the naive path.
fn packs() -> (Scanner, Scanner) {
    let mut naive = Sources::default_pack();
    for file in &mut naive.patterns {
        let text: String = file.text.lines().filter(|l| !l.starts_with("views:")).map(|l| format!("{l}\n")).collect();
        *file = SourceFile::new(file.name.clone(), text);
    }
    (scanner(&Sources::default_pack()), scanner(&naive))
}

fn spaced(value: &str, every: usize, by: &str) -> String {
    value.as_bytes().chunks(every).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join(by)
}

fn fullwidth(value: &str) -> String {
    value.chars().map(|c| if c.is_ascii_graphic() { char::from_u32(c as u32 + 0xFEE0).unwrap() } else { c }).collect()
}

/// Cyrillic letters that look like Latin ones, in both cases.
fn look_alikes(value: &str) -> String {
    let table = [('a', 'а'), ('e', 'е'), ('o', 'о'), ('p', 'р'), ('c', 'с'), ('x', 'х'), ('A', 'А'), ('B', 'В')];
    let table2 = [('E', 'Е'), ('K', 'К'), ('M', 'М'), ('H', 'Н'), ('O', 'О'), ('P', 'Р'), ('C', 'С'), ('T', 'Т')];
    value.chars().map(|c| table.iter().chain(&table2).find(|(l, _)| *l == c).map_or(c, |(_, r)| *r)).collect()
}

/// `value` cut into pieces of `size` characters.
fn pieces(value: &str, size: usize) -> Vec<&str> {
    value.as_bytes().chunks(size).map(|c| std::str::from_utf8(c).unwrap()).collect()
}

/// RFC 4648 base32, padded.
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    for chunk in bytes.chunks(5) {
        let mut block = [0u8; 5];
        block[..chunk.len()].copy_from_slice(chunk);
        let bits = block.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
        let digits = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            out.push(if i < digits { char::from(ALPHABET[(bits >> (35 - 5 * i) & 31) as usize]) } else { '=' });
        }
    }
    out
}

/// Every rewrite of `value` (a token), named.
fn rewrites(value: &str) -> Vec<(String, String)> {
    let n = value.len();
    let mut out = vec![
        ("split in half".to_owned(), format!("{}\n{}", &value[..n / 2], &value[n / 2..])),
        ("split at a third, CRLF, indented".to_owned(), format!("{}\r\n    {}", &value[..n / 3], &value[n / 3..])),
        ("split near the end".to_owned(), format!("{}\n{}", &value[..n - 3], &value[n - 3..])),
        ("spaced every 4".to_owned(), spaced(value, 4, " ")),
        ("spaced every 5".to_owned(), spaced(value, 5, " ")),
        ("spaced every 2".to_owned(), spaced(value, 2, " ")),
        ("tab every 6".to_owned(), spaced(value, 6, "\t")),
        ("fullwidth".to_owned(), fullwidth(value)),
        ("look-alikes".to_owned(), look_alikes(value)),
        ("zero-width spaces".to_owned(), spaced(value, 3, "\u{200B}")),
        ("soft hyphens and word joiners".to_owned(), spaced(value, 7, "\u{AD}\u{2060}")),
        ("base64".to_owned(), STANDARD.encode(value)),
        ("base64url".to_owned(), URL_SAFE_NO_PAD.encode(value)),
        ("hex".to_owned(), value.bytes().map(|b| format!("{b:02x}")).collect()),
        ("\\x escapes".to_owned(), value.bytes().map(|b| format!("\\x{b:02x}")).collect()),
        ("URL-encoded".to_owned(), value.bytes().map(|b| format!("%{b:02X}")).collect()),
        ("base64 twice".to_owned(), STANDARD.encode(STANDARD.encode(value))),
        ("base32".to_owned(), base32(value.as_bytes())),
        ("base32 lower case, unpadded".to_owned(), base32(value.as_bytes()).trim_end_matches('=').to_lowercase()),
        (
            "hex bytes spaced, upper case".to_owned(),
            value.bytes().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(" "),
        ),
        ("0x bytes in a list".to_owned(), value.bytes().map(|b| format!("0x{b:02x}")).collect::<Vec<_>>().join(", ")),
        ("hex bytes with colons".to_owned(), value.bytes().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")),
        ("HTML decimal references".to_owned(), value.bytes().map(|b| format!("&#{b};")).collect()),
        ("HTML hex references".to_owned(), value.bytes().map(|b| format!("&#x{b:x}")).collect()),
        ("JSON \\u escapes".to_owned(), value.bytes().map(|b| format!("\\u{b:04x}")).collect()),
        ("quoted-printable soft break".to_owned(), format!("{}=\n{}", &value[..n / 2], &value[n / 2..])),
        (
            "string literals concatenated".to_owned(),
            format!("\"{}\"", pieces(value, 8).join("\" + \"")).replace('"', "'"),
        ),
        ("implicit concatenation".to_owned(), format!("(\"{}\")", pieces(value, 9).join("\" \""))),
        ("JSON array of chunks".to_owned(), format!("[\"{}\"]", pieces(value, 8).join("\", \""))),
        ("JavaScript join".to_owned(), format!("[\"{}\"].join(\"\")", pieces(value, 7).join("\",\""))),
        ("comma list".to_owned(), pieces(value, 6).join(", ")),
        (
            "table cells".to_owned(),
            format!("| part | value |\n|---|---|\n| {} |", pieces(value, n / 2 + 1).join(" | ")),
        ),
        (
            "labelled lines".to_owned(),
            pieces(value, n / 3 + 1)
                .iter()
                .enumerate()
                .map(|(i, p)| format!("part {}: {p}", i + 1))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        ("code spans".to_owned(), format!("`{}`", pieces(value, n / 2 + 1).join("``"))),
        ("blank line".to_owned(), format!("{}\n\n{}", &value[..n / 2], &value[n / 2..])),
        ("line continuation".to_owned(), format!("{}\\\n{}", &value[..n / 2], &value[n / 2..])),
        ("dash every 4".to_owned(), spaced(value, 4, "-")),
        ("dot every 5".to_owned(), spaced(value, 5, ".")),
        ("spaced every character".to_owned(), spaced(value, 1, " ")),
        ("spaced every 10".to_owned(), spaced(value, 10, " ")),
        ("no-break space every 4".to_owned(), spaced(value, 4, "\u{A0}")),
        ("ideographic space every 6".to_owned(), spaced(value, 6, "\u{3000}")),
        ("braille blank every 5".to_owned(), spaced(value, 5, "\u{2800}")),
        ("thin space every 8".to_owned(), spaced(value, 8, "\u{2009}")),
        ("prefix set apart".to_owned(), {
            let cut = value.find(['_', '-']).map_or(4, |i| i + 1);
            format!("{} {}", &value[..cut], &value[cut..])
        }),
    ];
    let partly: String = value
        .chars()
        .enumerate()
        .map(|(i, c)| if i % 3 == 0 { format!("%{:02X}", c as u32) } else { c.to_string() })
        .collect();
    out.push(("partly URL-encoded".to_owned(), partly));
    out
}

/// Every rewrite of every token is refused, in an assignment and in a sentence. Judged on
/// the text as sent only, each kind of rewrite passes for some token in a sentence (an
/// assignment's name alone can make a generic credential of what is left, and invisibles
/// are removed from every message before any rule): the class lands on the naive path.
#[test]
fn every_rewrite_of_a_token_is_refused_and_passes_the_naive_path() {
    let (ours, naive) = packs();
    let mut failures = Vec::new();
    let mut naive_misses: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for (name, token) in TOKENS {
        let sent = format!("{name}{token}");
        assert!(ours.judge(&sent, Stage::Sending, 1, at()).is_deny(), "as sent: {sent}");
        for (kind, rewritten) in rewrites(token) {
            let sentence = format!("see \"{rewritten}\" above, it is the one we use");
            for text in [format!("{name}{rewritten}"), sentence.clone()] {
                if !ours.judge(&text, Stage::Sending, 1, at()).is_deny() {
                    failures.push(format!("{kind} passes: {text}"));
                }
            }
            let missed = !naive.judge(&sentence, Stage::Sending, 1, at()).is_deny();
            *naive_misses.entry(kind).or_default() += usize::from(missed);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let caught: Vec<_> = naive_misses.iter().filter(|(_, n)| **n == 0).map(|(k, _)| k.as_str()).collect();
    let invisible = ["soft hyphens and word joiners", "zero-width spaces"];
    assert_eq!(caught, invisible, "rewrites the naive path already refuses for every token");
}

/// A private key whose armour was dropped and whose body was spaced or folded is still
/// refused by its DER prefix.
#[test]
fn a_bare_key_body_rewritten_is_refused() {
    let (ours, _) = packs();
    let body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvuNMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ";
    for (kind, rewritten) in rewrites(body) {
        let text = format!("key material follows\n{rewritten}\n");
        assert!(ours.judge(&text, Stage::Sending, 1, at()).is_deny(), "{kind}: {text}");
    }
}

/// What only looks like a rewritten secret is let through: GPG fingerprints spaced every
/// four characters, hex dumps spaced every two, UUIDs and hashes one per line, ids wrapped
/// over lines, code and prose in fullwidth or Cyrillic, and base64, hex and URL escapes of
/// ordinary text.
#[test]
fn data_that_looks_rewritten_is_not_refused() {
    let (ours, _) = packs();
    let mut texts = vec![
        "pub   rsa4096 2019-05-01 [SC]\n      3B4F 2A9C 8D1E 7F60 5A3B  C2D4 E6F8 0A1B 2C3D 4E5F\nuid   Release Signing".to_owned(),
        "Key fingerprint = 9F3A 7C21 B8D4 E65F 0A19  2C7E 4D8B 1F36 A5C0 E924".to_owned(),
        "00000000  7f 45 4c 46 02 01 01 00  00 00 00 00 00 00 00 00  |.ELF............|\n00000010  03 00 3e 00 01 00 00 00  40 10 00 00 00 00 00 00  |..>.....@.......|".to_owned(),
        "ids:\n550e8400-e29b-41d4-a716-446655440000\n6ba7b810-9dad-11d1-80b4-00c04fd430c8\n6ba7b811-9dad-11d1-80b4-00c04fd430c8".to_owned(),
        "sha256sums:\n3b9c358f36f0d3a5a5d0e6a2c7a1d1f4b3c2e1f0a9b8c7d6e5f4a3b2c1d0e9f8\n9fceb02d0ae598e95dc970b74767f19372d61af89fceb02d0ae598e95dc970b7".to_owned(),
        "request id: Xk3mQ9vR2tL8pW5nB7cD\n4fG6hJ8kLqW1eR5tY7uI9oP2 (retry later)".to_owned(),
        "ｔｈｅ ｄｅｐｌｏｙ ｆａｉｌｅｄ ｏｎ ｓｔｅｐ ３ ｏｆ ５".to_owned(),
        "Привет, посмотри PR 1234 и логи сборки, там ошибка в тесте".to_owned(),
        "variable naming: myVariableName2\nanotherValueHere3 are fine".to_owned(),
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: Dev <dev@example.org>\n\n    Fix tests".to_owned(),
        "hashes: [\"3b9c358f36f0d3a5a5d0e6a2c7a1d1f4\", \"9fceb02d0ae598e95dc970b74767f193\", \"a716446655440000a716446655440000\"]".to_owned(),
        "| id | sha |\n|---|---|\n| 550e8400-e29b-41d4-a716-446655440000 | 9fceb02d0ae598e95dc970b74767f19372d61af8 |".to_owned(),
        "step 1: run the tests\nstep 2: push to main\nstep 3: tag v1.2.3".to_owned(),
        "call(\"Alpha\" + \"Beta\" + \"Gamma\" + \"Delta\", 2024-01-15, 10.20.30.40, ab-cd-ef-12)".to_owned(),
        "versions: 1.2.3, 4.5.6, 7.8.9, 10.11.12, 13.14.15; hosts www.api.dev.example.com".to_owned(),
        "card 4111-1111-1111-1111 was declined; ref ABCD-EFGH-IJKL-MNOP".to_owned(),
    ];
    for prose in [
        "The release notes are attached; please review them before Friday.",
        "token rotation happens every 90 days, see the runbook section 4.2",
        "password policy: at least 12 characters, no reuse of the last 5",
    ] {
        texts.push(format!("attachment: {}", STANDARD.encode(prose)));
        texts.push(format!("payload={}", prose.bytes().map(|b| format!("{b:02x}")).collect::<String>()));
        texts.push(format!(
            "https://chat.example/share?text={}",
            prose.bytes().map(|b| format!("%{b:02X}")).collect::<String>()
        ));
        texts.push(format!("<p>{}</p>", prose.bytes().map(|b| format!("&#{b};")).collect::<String>()));
        texts.push(format!("{{\"msg\": \"{}\"}}", prose.bytes().map(|b| format!("\\u{b:04x}")).collect::<String>()));
        texts.push(format!("bytes: {}", prose.bytes().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(" ")));
        texts.push(format!("attachment (base32): {}", base32(prose.as_bytes())));
        texts.push(format!("b64: {}", STANDARD.encode(STANDARD.encode(prose))));
        texts.push(format!("{}=\n{}", &prose[..30], &prose[30..]));
    }
    for text in &texts {
        for hops in [1, 2] {
            let verdict = ours.judge(text, Stage::Sending, hops, at());
            assert_eq!(verdict, RuleVerdict::Allow, "{text}");
        }
    }
}
