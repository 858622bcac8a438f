//! Pieces of a token spread by syntax, put back together for the joined view.
//!
//! A writer who wants a token past a scanner cuts it into pieces and lets the syntax of
//! the text join them again for the reader: string literals concatenated (`"ab" + "cd"`,
//! `"ab" "cd"`, `'ab' . 'cd'`), a list of chunks (`["ab", "cd"].join("")`, `ab, cd`),
//! table cells (`| ab | cd |`), code spans (`` `ab``cd` ``), lines numbered or labelled
//! (`part 1: ab` / `part 2: cd`), a blank line or a `\` line continuation between two
//! halves, a separator every few characters (`ab12-cd34-ef56`), or a prefix set apart
//! from its body (`ghp_ 1a2b…`). Each function here marks the bytes such syntax adds
//! (quotes, commas, pipes, labels, separators) to be dropped; the joined view is the text
//! without them.
//!
//! All of it is generic, not one rule per trick: a piece is a run of token characters, the
//! glue between two pieces is made of quotes, commas, pipes, backslashes, lone `+` or `.`,
//! labels and whitespace, and a chain of glued pieces is joined only when its pieces look
//! like parts of a token (digits or inner capitals, upper case and digits, or short) and
//! together make one of at least [`MIN_JOINED`] characters. Prose, lists of words and
//! ordinary code keep their words apart. Every function makes one pass over the text (and
//! one over each piece), and only drops ASCII bytes: the view is never longer than the
//! text and stays valid UTF-8.

use super::{MIN_JOINED, is_token};
use crate::decode::looks_random;

/// Longest piece joined to others: longer runs are whole values already.
const MAX_PIECE: usize = 128;
/// Longest glue between two pieces (a line break and a label such as `key part 2: `).
const MAX_GLUE: usize = 40;
/// Groups between separators are this long at most (`ab12-cd34-…`).
const MAX_SEPARATED_GROUP: usize = 12;

/// Bytes that may glue two pieces: whitespace, quotes, backquotes, commas, pipes and
/// backslashes.
fn is_glue(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'`' | b',' | b'|' | b'\\')
}

/// Could be part of a token: looks random, holds a token's separator (`sk_live_`,
/// `sk-ant-a`), or is upper case and digits (`AKIAODZD`, `MX`). A word in small letters
/// (`see`, `and`) is not, so the words around a token are not glued to it.
fn token_like(piece: &[u8]) -> bool {
    looks_random(piece)
        || piece.iter().any(|&b| b == b'_' || b == b'-')
        || piece.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// The label a line starts with at `at`, if any: a few words or none, a number of one or
/// two digits and `:`, `=`, `)` or `.`, then a space (`part 1: `, `key part 2 = `,
/// `chunk2: `, `3) `). Returns its length.
fn label(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = bytes.get(at..)?;
    let words = rest.iter().take(24).take_while(|b| b.is_ascii_alphabetic() || matches!(b, b' ' | b'_' | b'-')).count();
    if words > 0 && !rest.first().is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    let digits = rest.iter().skip(words).take_while(|b| b.is_ascii_digit()).count();
    if !(1..=2).contains(&digits) {
        return None;
    }
    let mark = words + digits + rest.iter().skip(words + digits).take_while(|&&b| b == b' ').count();
    if !matches!(rest.get(mark), Some(b':' | b'=' | b')' | b'.')) || !matches!(rest.get(mark + 1), Some(b' ' | b'\t')) {
        return None;
    }
    Some(mark + 2)
}

/// Marks the glue of chains of pieces in `drop`; whether it marked any.
pub(super) fn glued(bytes: &[u8], drop: &mut [bool]) -> bool {
    // Glue that is not made of glue bytes: labels at the start of lines, and a lone `+` or
    // `.` between literals (string concatenation).
    let mut extra = vec![false; bytes.len()];
    let mut line = 0;
    while line < bytes.len() {
        let at = line + bytes.iter().skip(line).take_while(|&&b| b == b' ' || b == b'\t').count();
        if let Some(len) = label(bytes, at) {
            extra.get_mut(at..at + len).into_iter().flatten().for_each(|e| *e = true);
        }
        line = bytes.iter().skip(line).position(|&b| b == b'\n').map_or(bytes.len(), |p| line + p + 1);
    }
    for (i, w) in bytes.windows(3).enumerate() {
        if let [a, b'+' | b'.', c] = w
            && is_glue(*a)
            && is_glue(*c)
            && let Some(e) = extra.get_mut(i + 1)
        {
            *e = true;
        }
    }
    let glue = |i: usize| extra.get(i).copied().unwrap_or(false) || bytes.get(i).copied().is_some_and(is_glue);
    let mut pieces: Vec<core::ops::Range<usize>> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes.get(i).copied().is_some_and(is_token) && !glue(i) {
            let start = i;
            while i < bytes.len() && bytes.get(i).copied().is_some_and(is_token) && !glue(i) {
                i += 1;
            }
            pieces.push(start..i);
        } else {
            i += 1;
        }
    }
    let joinable = |a: &core::ops::Range<usize>, b: &core::ops::Range<usize>| {
        let gap = bytes.get(a.end..b.start).unwrap_or_default();
        let breaks = gap.iter().filter(|&&c| c == b'\n').count();
        let syntax = gap.iter().any(|c| !c.is_ascii_whitespace())
            || breaks == 2
            || (a.end..b.start).any(|k| extra.get(k) == Some(&true));
        // Quotes close one literal and open the next: a lone quote opens or closes a
        // string around a token, and is not glue.
        let quotes = gap.iter().filter(|&&c| matches!(c, b'"' | b'\'' | b'`')).count();
        !gap.is_empty()
            && gap.len() <= MAX_GLUE
            && breaks <= 2
            && syntax
            && quotes % 2 == 0
            && (a.end..b.start).all(glue)
    };
    let piece = |r: &core::ops::Range<usize>| bytes.get(r.clone()).unwrap_or_default();
    let mut any = false;
    let mut k = 0;
    while k < pieces.len() {
        let mut end = k + 1;
        while let (Some(a), Some(b)) = (pieces.get(end - 1), pieces.get(end)) {
            if a.len() > MAX_PIECE || b.len() > MAX_PIECE || !joinable(a, b) {
                break;
            }
            end += 1;
        }
        // A chain starts and ends with pieces that look like parts of a token; pieces in
        // its middle may be words (`Bgkqhk` in a base64 body cut every six).
        let whole = pieces.get(k..end).unwrap_or_default();
        let first = whole.iter().position(|r| token_like(piece(r))).unwrap_or(whole.len());
        let last = whole.iter().rposition(|r| token_like(piece(r))).map_or(0, |p| p + 1);
        let chain = whole.get(first..last).unwrap_or_default();
        let total: usize = chain.iter().map(core::ops::Range::len).sum();
        if chain.len() >= 2 && total >= MIN_JOINED && chain.iter().any(|r| looks_random(piece(r))) {
            for pair in chain.windows(2) {
                if let [a, b] = pair {
                    drop.get_mut(a.end..b.start).into_iter().flatten().for_each(|d| *d = true);
                }
            }
            any = true;
        }
        k = end;
    }
    any
}

/// The runs of token characters in `bytes`.
fn token_runs(bytes: &[u8]) -> impl Iterator<Item = core::ops::Range<usize>> + '_ {
    let mut i = 0;
    core::iter::from_fn(move || {
        i += bytes.iter().skip(i).take_while(|&&b| !is_token(b)).count();
        let len = bytes.iter().skip(i).take_while(|&&b| is_token(b)).count();
        let run = i..i + len;
        i += len;
        (len > 0).then_some(run)
    })
}

/// Marks in `drop` the separators put into a run of token characters every few
/// characters (`ghp_-u8jz-Pde0-…`, `AKIA.ODZD.OCIS.…`, `sk-p-roj--FkM_-…`): one of `-`, `.`
/// or `_` after every group of the same length, 2 to [`MAX_SEPARATED_GROUP`], at least
/// twice, the last group no longer than the others, looking random together. The
/// separator may also be a character of the token itself: only the periodic positions are
/// dropped. UUIDs, dates, versions and names of unequal parts keep theirs.
pub(super) fn separated(bytes: &[u8], drop: &mut [bool]) -> bool {
    let mut any = false;
    for run in token_runs(bytes) {
        let (i, len) = (run.start, run.len());
        let run = bytes.get(run).unwrap_or_default();
        for size in 2..=MAX_SEPARATED_GROUP.min(len / 3) {
            let Some(&sep) = run.get(size).filter(|b| matches!(b, b'-' | b'.' | b'_')) else { continue };
            let marks = (size..len).step_by(size + 1);
            let count = marks.clone().count();
            // The run does not end on a mark: its last group is 1 to `size` characters long.
            let ends_on_mark = (len - size) % (size + 1) == 1;
            if count < 2 || ends_on_mark || !marks.clone().all(|m| run.get(m) == Some(&sep)) {
                continue;
            }
            let kept: Vec<u8> = run
                .iter()
                .enumerate()
                .filter(|(k, _)| *k < size || (k - size) % (size + 1) != 0)
                .map(|(_, b)| *b)
                .collect();
            if kept.len() >= MIN_JOINED && looks_random(&kept) {
                for m in marks {
                    if let Some(d) = drop.get_mut(i + m) {
                        *d = true;
                    }
                }
                any = true;
                break;
            }
        }
    }
    any
}

/// Marks in `drop` the whitespace between a token prefix set apart and its body: a short
/// piece holding `_` or `-` (`ghp_`, `sk-p`, `xoxb` before `-8750…`), or four capitals
/// (`AKIA`), then one or two spaces and a body of at least [`MIN_JOINED`] - 4 token
/// characters that looks random.
pub(super) fn prefixed(bytes: &[u8], drop: &mut [bool]) -> bool {
    let mut any = false;
    for run in token_runs(bytes) {
        let (i, len) = (run.start, run.len());
        let prefix = bytes.get(run).unwrap_or_default();
        let starts_word = i == 0 || bytes.get(i - 1).is_some_and(|b| !b.is_ascii_alphanumeric());

        let spaces = bytes.iter().skip(i + len).take_while(|&&b| b == b' ' || b == b'\t').count();
        let body_at = i + len + spaces;
        let body = bytes.get(body_at..).unwrap_or_default();
        let body = body.get(..body.iter().take_while(|&&b| is_token(b)).count()).unwrap_or_default();
        let shaped = (2..=8).contains(&len)
            && (prefix.iter().any(|&b| b == b'_' || b == b'-') || matches!(body.first(), Some(b'_' | b'-')))
            || (len == 4 && prefix.iter().all(u8::is_ascii_uppercase));
        if starts_word && shaped && (1..=2).contains(&spaces) && body.len() + 4 >= MIN_JOINED && looks_random(body) {
            drop.get_mut(i + len..body_at).into_iter().flatten().for_each(|d| *d = true);
            any = true;
        }
    }
    any
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::joined;

    const TOKEN: &str = "ghp_R8x2LmQ9vKp3TzW7nYb4HcJ6fDs1Ae0Gu5Ik";

    fn cut(size: usize) -> Vec<&'static str> {
        TOKEN.as_bytes().chunks(size).map(|c| core::str::from_utf8(c).unwrap()).collect()
    }

    /// Each kind of glue, with the text around the token kept as it is.
    #[test]
    fn pieces_glued_by_syntax_are_one_token() {
        let cases = [
            format!("key = \"{}\"", cut(8).join("\" + \"")),
            format!("key = '{}'", cut(5).join("' . '")),
            format!("KEY = (\"{}\")", cut(9).join("\" \"")),
            format!("{{\"parts\": [\"{}\"]}}", cut(8).join("\", \"")),
            format!("const k = [\"{}\"].join(\"\")", cut(6).join("\",\"")),
            format!("k = ''.join(['{}'])", cut(7).join("', '")),
            format!("chunks: {}", cut(6).join(", ")),
            format!("| a | b |\n|---|---|\n| {} |", cut(20).join(" | ")),
            format!("`{}`", cut(20).join("``")),
            cut(14).iter().enumerate().map(|(i, p)| format!("key part {}: {p}", i + 1)).collect::<Vec<_>>().join("\n"),
            cut(20).iter().enumerate().map(|(i, p)| format!("{}) {p}", i + 1)).collect::<Vec<_>>().join("\n"),
            cut(20).join("\n\n"),
            cut(20).join("\\\n"),
            cut(4).join("-"),
            cut(4).join("."),
            cut(6).join("_"),
            TOKEN.replacen('_', "_ ", 1),
        ];
        for text in cases {
            let view = joined(&text).unwrap_or_else(|| panic!("nothing joined: {text}"));
            assert!(view.contains(TOKEN), "{text:?} -> {view:?}");
        }
    }

    #[test]
    fn words_lists_and_data_keep_their_parts() {
        for text in [
            "apples, oranges, pears, and plums are on the list",
            "see \"the docs\" or 'the wiki', then \"run it\" + \"ship it\"",
            "step 1: build it\nstep 2: test it\nstep 3: ship it",
            "| name | value |\n|---|---|\n| timeout | thirty seconds |",
            "id 550e8400-e29b-41d4-a716-446655440000 on 2024-01-15 at 10.20.30.40 with v1.2.3",
            "snake_case_names_are_fine and kebab-case-names-too",
            "see ghp_ for the prefix, and sk- for the other",
        ] {
            assert_eq!(joined(text), None, "{text}");
        }
    }

    /// Long chains of tiny pieces cost one pass and give a view no longer than the text.
    #[test]
    fn joining_pieces_is_bounded_by_the_input() {
        for hostile in
            ["\"a1\" + ".repeat(20_000), "a1, ".repeat(30_000), "ab-".repeat(40_000), "part 1: x\n".repeat(10_000)]
        {
            if let Some(view) = joined(&hostile) {
                assert!(view.len() <= hostile.len());
            }
        }
    }
}
