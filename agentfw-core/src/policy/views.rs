//! Views of a text that a pattern set may be judged on besides the text as sent (PR4).
//!
//! A token is still a token when it is split over two lines, spaced every four characters,
//! written in fullwidth letters or Cyrillic look-alikes, or wrapped in base64: a reader (or
//! the next agent) puts it back together at no cost. A pattern file lists the views its set
//! is judged on (`views: [folded, joined, decoded]`); the set finds a pattern if it finds one
//! in the text as sent or in any of those views.
//!
//! - [`View::Folded`]: NFKC, look-alikes, invisibles, with case kept
//!   ([`fold_keeping_case`]); built only for text that is not all ASCII.
//! - [`View::Joined`]: whitespace removed inside candidate runs, and the syntax that
//!   spreads a token's pieces (concatenated literals, lists of chunks, table cells, code
//!   spans, labelled lines, separators every few characters, a prefix set apart) dropped
//!   ([`joined`], [`pieces`]); built only when the text has one.
//! - [`View::Decoded`]: base64, base32, hex, URL escapes, HTML references, `\u` escapes
//!   and quoted-printable soft breaks decoded, base64 of base64 twice ([`decode`]); built
//!   only when a stretch decodes to text.
//! - [`View::Plain`]: markup and shell quoting looked past ([`plain`]); built only when the
//!   text has some.
//!
//! Each view is at most about the size of the text (NFKC may expand a few characters, as
//! the folded text rules read already does), built once per message and only for a set
//! that asks, and scanned with the same literal prefilter as the text: the worst a text
//! can cost is one more scan of the sets per view.

mod pieces;

use std::borrow::Cow;

use super::plain::plain;
use crate::decode::{decode, decoded_view, is_token_byte as is_token, looks_random};
use crate::normalize::fold_keeping_case;

/// A view of a text besides the text as sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    Folded,
    Joined,
    Decoded,
    Plain,
}

/// Every view, in the order they are tried, with their names in pattern files.
pub(crate) const VIEWS: [(View, &str); 4] =
    [(View::Folded, "folded"), (View::Joined, "joined"), (View::Decoded, "decoded"), (View::Plain, "plain")];

impl View {
    pub(crate) fn named(name: &str) -> Option<Self> {
        VIEWS.iter().find(|(_, n)| *n == name).map(|(v, _)| *v)
    }

    /// Where this view's text is kept among a message's views.
    pub(crate) fn index(self) -> usize {
        match self {
            Self::Folded => 0,
            Self::Joined => 1,
            Self::Decoded => 2,
            Self::Plain => 3,
        }
    }

    /// This view of `text`, or `None` when it would be `text` itself (nothing to fold,
    /// join or decode).
    pub(crate) fn of(self, text: &str) -> Option<String> {
        let view = match self {
            Self::Folded if text.is_ascii() => return None,
            Self::Folded => fold_keeping_case(text),
            Self::Joined => joined(&blanks_as_spaces(text))?,
            Self::Decoded => decoded_view(text, &decode(text))?,
            Self::Plain => {
                let spaced = blanks_as_spaces(text);
                match (plain(&spaced), spaced) {
                    (Some(view), _) | (None, Cow::Owned(view)) => view,
                    (None, Cow::Borrowed(_)) => return None,
                }
            }
        };
        (view != text).then_some(view)
    }
}

/// Whether `c` shows as a gap between words without being an ASCII space: Unicode's other
/// white space (no-break, ideographic, thin and figure spaces, line and paragraph
/// separators) and the braille blank, which is no white space to Unicode but renders as
/// one. The fold keeps the braille blank as a letter, so words or a token's pieces around
/// it would read as one run. (Blanks that render as nothing, such as the Hangul fillers, are
/// removed from every message before the rules see it: see `normalize::is_invisible`.)
fn is_blank(c: char) -> bool {
    (c.is_whitespace() && !c.is_ascii()) || c == '\u{2800}'
}

/// `text` with every [`is_blank`] character an ASCII space, so that the joined and plain
/// views treat it as the gap it shows as: a token cut every four characters by no-break
/// spaces is joined like one cut by spaces, and words joined by braille blanks are words.
fn blanks_as_spaces(text: &str) -> Cow<'_, str> {
    if text.is_ascii() || !text.chars().any(is_blank) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| if is_blank(c) { ' ' } else { c }).collect())
}

/// Shortest piece of a token before a line break that the break is removed after.
const MIN_LINE_PIECE: usize = 4;
/// Groups of a spaced token are 1 to this many characters long.
const MAX_GROUP: usize = 12;
/// Fewest groups of the same length that make a spaced token.
const MIN_GROUPS: usize = 3;
/// Shortest joined token: what is shorter is no secret worth the work.
const MIN_JOINED: usize = 16;

/// `text` with the whitespace removed inside its candidate runs, or `None` when it has none:
///
/// - a token split over two lines: a line that ends with at least [`MIN_LINE_PIECE`] token
///   characters that look random, followed by one line break (and indentation) and more
///   token characters that look random or end their line;
/// - a token spaced every few characters: at least [`MIN_GROUPS`] groups (or two long
///   ones that both look random) of 1 to [`MAX_GROUP`] token characters, all of the same length but the last (which may be
///   shorter), separated by spaces or tabs, looking random together. The first group may
///   follow a name or a quote (`KEY=ghp_ AbC1 …`, `"sk-p roj- …`), the last may be followed
///   by a quote or a comma.
///
/// - pieces spread by syntax, and separators or spaces put into a token ([`pieces`]).
///
/// Everything else, prose included, is left as it is, so a run of words is not made one.
/// Linear: each chunk between whitespace is looked at a bounded number of times, and the
/// view is the text less the bytes marked to drop, so never longer than it.
pub(crate) fn joined(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let chunks = chunks(bytes);
    // `join[i]`: remove the whitespace before chunk `i`.
    let mut join = vec![false; chunks.len()];
    let mut any = false;
    let chunk = |i: usize| chunks.get(i).and_then(|r| bytes.get(r.clone())).unwrap_or_default();
    let gap = |i: usize| match (chunks.get(i.wrapping_sub(1)), chunks.get(i)) {
        (Some(a), Some(b)) => bytes.get(a.end..b.start).unwrap_or_default(),
        _ => &[][..],
    };
    let breaks = |g: &[u8]| g.iter().filter(|&&b| b == b'\n').count();
    // Each condition is tested only when the cheaper ones before it hold: most chunks
    // follow a single space, and are done with after one look at their gap.
    for (i, flag) in join.iter_mut().enumerate().skip(1) {
        if breaks(gap(i)) != 1 {
            continue;
        }
        let (tail, head) = (token_tail(chunk(i - 1)), token_head(chunk(i)));
        // The piece after the break looks random too, or is alone on its line but for
        // punctuation (`Ik"`, `Ik",`): not the first word of a line that follows a token.
        let alone = || {
            (i + 1 == chunks.len() || breaks(gap(i + 1)) > 0)
                && chunk(i).get(head.len()..).is_some_and(|rest| !rest.iter().any(u8::is_ascii_alphanumeric))
        };
        if tail.len() >= MIN_LINE_PIECE
            && !head.is_empty()
            && tail.len() + head.len() >= MIN_JOINED
            && looks_random(tail)
            && (looks_random(head) || alone())
        {
            *flag = true;
            any = true;
        }
    }
    let mut i = 0;
    while i < chunks.len() {
        // A spaced run starts at chunk `i` with a group of length `len`: all of the chunk,
        // or its end after something that is not a token character.
        let len = token_tail(chunk(i)).len();
        if !(1..=MAX_GROUP).contains(&len) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < chunks.len() && chunk(j).len() == len && breaks(gap(j)) == 0 && chunk(j).iter().all(|&b| is_token(b))
        {
            j += 1;
        }
        // The last group may be shorter, and be followed by a quote or a comma.
        let last = (j < chunks.len() && breaks(gap(j)) == 0)
            .then(|| token_head(chunk(j)).len())
            .filter(|&l| (1..=len).contains(&l) && (j > i + 1 || l == len));
        let groups = j - i + usize::from(last.is_some());
        let total = (j - i) * len + last.unwrap_or(0);
        // Two long groups are enough when both look random (`AKIAZ7Q3X9 M2K4W8R6T1`).
        let second = if j > i + 1 { chunk(i + 1) } else { token_head(chunk(j)) };
        let pair = groups == 2 && len >= 8 && looks_random(token_tail(chunk(i))) && looks_random(second);
        if (groups >= MIN_GROUPS || pair) && total >= MIN_JOINED && (i..j).any(|k| looks_random(chunk(k))) {
            for flag in join.get_mut(i + 1..j).into_iter().flatten() {
                *flag = true;
            }
            if last.is_some()
                && let Some(flag) = join.get_mut(j)
            {
                *flag = true;
            }
            any = true;
        }
        i = j.max(i + 1);
    }
    let mut drop = vec![false; bytes.len()];
    for (i, _) in join.iter().enumerate().filter(|(_, j)| **j) {
        if let (Some(a), Some(b)) = (chunks.get(i.wrapping_sub(1)), chunks.get(i)) {
            drop.get_mut(a.end..b.start).into_iter().flatten().for_each(|d| *d = true);
        }
    }
    let any = pieces::glued(bytes, &mut drop)
        | pieces::separated(bytes, &mut drop)
        | pieces::prefixed(bytes, &mut drop)
        | any;
    if !any {
        return None;
    }
    // Only ASCII bytes are dropped, so what is kept is still UTF-8.
    let kept: Vec<u8> = bytes.iter().zip(&drop).filter(|(_, d)| !**d).map(|(b, _)| *b).collect();
    String::from_utf8(kept).ok()
}

/// The stretches of `bytes` between ASCII whitespace.
fn chunks(bytes: &[u8]) -> Vec<core::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, b) in bytes.iter().enumerate() {
        match (b.is_ascii_whitespace(), start) {
            (true, Some(s)) => {
                out.push(s..i);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(s..bytes.len());
    }
    out
}

/// The token characters `chunk` ends with.
fn token_tail(chunk: &[u8]) -> &[u8] {
    let n = chunk.iter().rev().take_while(|&&b| is_token(b)).count();
    chunk.get(chunk.len() - n..).unwrap_or_default()
}

/// The token characters `chunk` starts with.
fn token_head(chunk: &[u8]) -> &[u8] {
    let n = chunk.iter().take_while(|&&b| is_token(b)).count();
    chunk.get(..n).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const TOKEN: &str = "ghp_R8x2LmQ9vKp3TzW7nYb4HcJ6fDs1Ae0Gu5Ik";

    fn spaced(value: &str, every: usize) -> String {
        value.as_bytes().chunks(every).map(|c| core::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn a_token_split_over_two_lines_is_joined() {
        let (a, b) = TOKEN.split_at(20);
        assert_eq!(
            joined(&format!("GITHUB_TOKEN={a}\n{b}\nnext line")).unwrap(),
            format!("GITHUB_TOKEN={TOKEN}\nnext line")
        );
        assert_eq!(joined(&format!("token: \"{a}\r\n    {b}\"")).unwrap(), format!("token: \"{TOKEN}\""));
        let (a, b) = TOKEN.split_at(31);
        assert_eq!(joined(&format!("{a}\n{b}")).unwrap(), TOKEN);
        // The line after the token's second half is not joined to it.
        let text = format!("K={a}\n{b}\nFEATURE_FLAGS=search,billing");
        assert_eq!(joined(&text).unwrap(), format!("K={TOKEN}\nFEATURE_FLAGS=search,billing"));
        // Pieces without digits, mixed case after the start.
        assert_eq!(joined("t: glrt-aucr-Uz\nAJTyRbViYbhmQ").unwrap(), "t: glrt-aucr-UzAJTyRbViYbhmQ");
    }

    #[test]
    fn a_token_spaced_every_few_characters_is_joined() {
        for every in [2, 3, 4, 5, 8] {
            let text = format!("export GITHUB_TOKEN={} # rotated", spaced(TOKEN, every));
            assert_eq!(joined(&text).unwrap(), format!("export GITHUB_TOKEN={TOKEN} # rotated"), "{every}");
            let quoted = format!("{{\"token\": \"{}\", \"ok\": true}}", spaced(TOKEN, every));
            assert_eq!(joined(&quoted).unwrap(), format!("{{\"token\": \"{TOKEN}\", \"ok\": true}}"), "{every}");
        }
        // Groups holding dots (`SG.r BfKG …`, `Nw.F x-F_ 3.I3`).
        let dotted = "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";
        assert_eq!(joined(&format!("KEY=\"{}\"", spaced(dotted, 4))).unwrap(), format!("KEY=\"{dotted}\""));
        let tabbed =
            TOKEN.as_bytes().chunks(4).map(|c| core::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join("\t");
        assert_eq!(joined(&tabbed).unwrap(), TOKEN);
    }

    #[test]
    fn prose_code_and_wrapped_words_are_left_alone() {
        for text in [
            "Please review the configuration\nfile before you merge it into main.",
            "the key is in the vault; ask them what they need from us",
            "fn main() {\n    let value = compute(input, options);\n    println!(\"{value}\");\n}",
            "Ideas: this that they them were when what",
            "ok\nok",
            "the deploy finished.\nNext we look at the logs.",
        ] {
            assert_eq!(joined(text), None, "{text}");
        }
    }

    #[test]
    fn fullwidth_and_look_alike_tokens_fold_to_the_token() {
        let fullwidth: String = TOKEN
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { char::from_u32(c as u32 + 0xFEE0).unwrap() } else { c })
            .collect();
        assert_eq!(View::Folded.of(&format!("TOKEN={fullwidth}")).unwrap(), format!("TOKEN={TOKEN}"));
        let look_alike = TOKEN.replace('p', "\u{440}").replace('T', "\u{422}").replace('H', "\u{41D}");
        assert_eq!(View::Folded.of(&look_alike).unwrap(), TOKEN);
        let hidden = TOKEN.replace('x', "x\u{200B}");
        assert_eq!(View::Folded.of(&hidden).unwrap(), TOKEN);
        assert_eq!(View::Folded.of(TOKEN), None, "ASCII folds to itself");
    }

    #[test]
    fn encoded_tokens_decode_to_the_token() {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(TOKEN);
        assert_eq!(View::Decoded.of(&format!("TOKEN=\"{b64}\"")).unwrap(), format!("TOKEN=\"{TOKEN}\""));
        let url: String = TOKEN.bytes().map(|b| format!("%{b:02X}")).collect();
        assert_eq!(View::Decoded.of(&format!("token={url}")).unwrap(), format!("token={TOKEN}"));
        assert_eq!(View::Decoded.of("nothing encoded here"), None);
    }

    #[test]
    fn views_are_named_in_pattern_files() {
        for (view, name) in VIEWS {
            assert_eq!(View::named(name), Some(view));
            assert_eq!(VIEWS.get(view.index()).map(|(v, _)| *v), Some(view));
        }
        assert_eq!(View::named("rot13"), None);
    }

    /// Hostile shapes stay linear and give nothing or a text no longer than the input.
    #[test]
    fn joining_is_bounded_by_the_input() {
        for hostile in
            ["a1 ".repeat(30_000), "Ab1x\n".repeat(20_000), " \n".repeat(30_000), "abcdefgh1\n".repeat(9_000)]
        {
            if let Some(view) = joined(&hostile) {
                assert!(view.len() <= hostile.len());
            }
        }
    }
}
