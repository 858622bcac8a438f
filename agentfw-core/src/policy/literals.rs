//! The literals a pattern cannot match without, read from its regex by regex-syntax's
//! extractor: what the prefilter looks for to know which patterns may match, and where.
//!
//! gitleaks calls them a rule's `keywords`, Hyperscan derives them for its prefilters. For
//! `(?-u:\b)gh[pousr]_[A-Za-z0-9]{36,}` the prefixes are `ghp_`, `gho_`, `ghu_`, `ghs_`,
//! `ghr_`: every match starts with one of them, so a match can only start where one of them
//! occurs, and an anchored search from each occurrence finds it. A pattern whose matches
//! start with no usable literal (`[0-9]{8,10}:AA…`) may still contain one, at its end or
//! inside (`:aa`, `-us`, `.atlasv1.`): then the text must hold one of them for it to match
//! at all.
//!
//! Literals are kept with ASCII letters in lower case and found ignoring ASCII case, which
//! keeps `(?i)secret` a handful of literals instead of 64; the search that verifies a
//! candidate decides what actually matches.

use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{Capture, Class, Hir, HirKind, Repetition};

/// Classes of more characters than this end a literal rather than multiply it: `[pousr]`
/// gives five spellings, `[0-9]` would give ten times as many literals for one more byte.
const MAX_CLASS: usize = 5;
/// At most this many literals per pattern (a list of hundreds of provider names is kept as
/// their first bytes beyond it).
const MAX_TOTAL: usize = 500;
/// How many bytes a match may start before its literals: room for a leading `(?:^|[^…])`
/// or a character class before a literal (`[MNO]…`, `.?`).
const MAX_BACK: usize = 4;
/// Literals are cut to this many bytes (their first for prefixes, their last for suffixes):
/// eight bytes are as rare in text as longer ones, and a list of names crossed with key
/// words (`hygraph`, `graphcms` × `api`, `secret`, … × `key`, `token`) collapses from
/// thousands of literals to their distinct starts, which keeps the prefilter's automaton a
/// fraction of the size and quick to build (the default pack: 11,650 literals, 2,589 cut).
const MAX_LITERAL: usize = 8;
/// Literals shorter than this occur too often in ordinary text to be worth finding: a
/// pattern that starts with `a` or `=` is searched another way.
const MIN_LITERAL: usize = 2;

/// What the prefilter can learn of where a pattern matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Literals {
    /// Every match starts with one of these (lower case, none shorter than [`MIN_LITERAL`]),
    /// or at most `back` bytes before one.
    Prefixes { literals: Vec<Vec<u8>>, back: usize },
    /// Every match holds one of these (at its end, or inside): the pattern can match only
    /// in a text that holds one of them, but where its matches start is not known.
    Inside(Vec<Vec<u8>>),
    /// No literal worth looking for.
    None,
}

impl Literals {
    /// The literals of the pattern `hir`: prefixes when they are usable, else suffixes,
    /// else literals every match holds somewhere inside.
    pub(crate) fn of(hir: &Hir) -> Self {
        let folded = fold_case(hir);
        let hir = folded.as_ref().unwrap_or(hir);
        if let Some((literals, back)) = prefixes(hir) {
            return Self::Prefixes { literals, back };
        }
        match extract(hir, ExtractKind::Suffix).or_else(|| inside(hir)) {
            Some(literals) => Self::Inside(literals),
            None => Self::None,
        }
    }

    /// The literals to look for, whatever they tell.
    pub(crate) fn all(&self) -> &[Vec<u8>] {
        match self {
            Self::Prefixes { literals: l, .. } | Self::Inside(l) => l,
            Self::None => &[],
        }
    }
}

/// The prefixes every match of `hir` starts with, or starts at most the second number of
/// bytes before: a concatenation may skip its first few short items (`(?:^|[^0-9])` before
/// `1//0`), an alternation needs prefixes in every branch.
fn prefixes(hir: &Hir) -> Option<(Vec<Vec<u8>>, usize)> {
    if let Some(literals) = extract(hir, ExtractKind::Prefix) {
        return Some((literals, 0));
    }
    match hir.kind() {
        HirKind::Capture(c) => prefixes(&c.sub),
        HirKind::Alternation(branches) => {
            let mut all = Vec::new();
            let mut back = 0;
            for branch in branches {
                let (literals, b) = prefixes(branch)?;
                all.extend(literals);
                back = back.max(b);
            }
            all.sort_unstable();
            all.dedup();
            Some((all, back))
        }
        HirKind::Concat(items) => {
            let mut skipped = 0;
            for (k, item) in items.iter().enumerate().take(items.len().saturating_sub(1)) {
                skipped += item.properties().maximum_len()?;
                if skipped > MAX_BACK {
                    return None;
                }
                let rest = Hir::concat(items.get(k + 1..)?.to_vec());
                if let Some(literals) = extract(&rest, ExtractKind::Prefix) {
                    return Some((literals, skipped));
                }
            }
            None
        }
        _ => None,
    }
}

/// Literals every match of `hir` holds somewhere: the prefixes of what follows some item of
/// a concatenation (`[0-9]{8,10}` then `:AA…` gives `:aa`), found in every branch of an
/// alternation (its prefixes or what it holds inside), or inside a repeated part that must
/// occur. Of several choices the one whose shortest literal is longest is kept: the rarer
/// the literal, the fewer texts pay for a whole search.
fn inside(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    let better = |a: Option<Vec<Vec<u8>>>, b: Option<Vec<Vec<u8>>>| match (a, b) {
        (Some(a), Some(b)) => Some(if shortest(&b) > shortest(&a) { b } else { a }),
        (a, b) => a.or(b),
    };
    match hir.kind() {
        HirKind::Capture(c) => inside(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => better(extract(&r.sub, ExtractKind::Prefix), inside(&r.sub)),
        HirKind::Alternation(branches) => {
            let mut all = Vec::new();
            for branch in branches {
                all.extend(better(extract(branch, ExtractKind::Prefix), inside(branch))?);
            }
            all.sort_unstable();
            all.dedup();
            Some(all)
        }
        HirKind::Concat(items) => {
            let mut best = None;
            for k in 0..items.len() {
                let rest = Hir::concat(items.get(k..)?.to_vec());
                let here = if k == 0 { None } else { extract(&rest, ExtractKind::Prefix) };
                best = better(best, here);
                best = better(best, items.get(k).and_then(inside));
            }
            best
        }
        _ => None,
    }
}

/// The length of the shortest of `literals`.
fn shortest(literals: &[Vec<u8>]) -> usize {
    literals.iter().map(Vec::len).min().unwrap_or(0)
}

/// `hir` with every class of one ASCII letter in both cases (`(?i-u:a)` is `[Aa]`) made the
/// lower-case letter, or `None` when it has no such class (most patterns: nothing is
/// copied): literals are found ignoring ASCII case anyway, and `(?i)secret` is then one
/// literal instead of 64, so long lists of words stay within the extractor's limits.
fn fold_case(hir: &Hir) -> Option<Hir> {
    let all = |items: &[Hir]| {
        let folded: Vec<Option<Hir>> = items.iter().map(fold_case).collect();
        folded.iter().any(Option::is_some).then(|| {
            folded.into_iter().zip(items).map(|(f, item)| f.unwrap_or_else(|| item.clone())).collect::<Vec<_>>()
        })
    };
    match hir.kind() {
        HirKind::Class(class) => ascii_letter(class).map(|b| Hir::literal([b])),
        HirKind::Repetition(r) => fold_case(&r.sub)
            .map(|sub| Hir::repetition(Repetition { min: r.min, max: r.max, greedy: r.greedy, sub: Box::new(sub) })),
        HirKind::Capture(c) => fold_case(&c.sub)
            .map(|sub| Hir::capture(Capture { index: c.index, name: c.name.clone(), sub: Box::new(sub) })),
        HirKind::Concat(items) => all(items).map(Hir::concat),
        HirKind::Alternation(items) => all(items).map(Hir::alternation),
        HirKind::Empty | HirKind::Literal(_) | HirKind::Look(_) => None,
    }
}

/// The lower-case letter of a class that is exactly one ASCII letter in both cases.
fn ascii_letter(class: &Class) -> Option<u8> {
    let pair: Vec<(u32, u32)> = match class {
        Class::Unicode(c) => c.ranges().iter().map(|r| (u32::from(r.start()), u32::from(r.end()))).collect(),
        Class::Bytes(c) => c.ranges().iter().map(|r| (u32::from(r.start()), u32::from(r.end()))).collect(),
    };
    match pair.as_slice() {
        [(a, a2), (b, b2)] if a == a2 && b == b2 => {
            let (upper, lower) = (u8::try_from(*a).ok()?, u8::try_from(*b).ok()?);
            (upper.is_ascii_uppercase() && upper.to_ascii_lowercase() == lower).then_some(lower)
        }
        _ => None,
    }
}

/// The literals of `kind` that every match of `hir` has, if there are finitely many and
/// none is too short; cut to [`MAX_LITERAL`], ASCII lower-cased, deduplicated, and without any literal that holds
/// another of the list where the other would be found anyway (at its start for prefixes, at
/// its end for suffixes).
fn extract(hir: &Hir, kind: ExtractKind) -> Option<Vec<Vec<u8>>> {
    let prefix = matches!(kind, ExtractKind::Prefix);
    let seq = Extractor::new().kind(kind).limit_class(MAX_CLASS).limit_total(MAX_TOTAL).extract(hir);
    let cut = |l: &[u8]| {
        let keep = l.len().min(MAX_LITERAL);
        let kept = if prefix { l.get(..keep) } else { l.get(l.len() - keep..) };
        kept.unwrap_or(l).to_ascii_lowercase()
    };
    let mut literals: Vec<Vec<u8>> = seq.literals()?.iter().map(|l| cut(l.as_bytes())).collect();
    if literals.is_empty() || literals.iter().any(|l| l.len() < MIN_LITERAL) {
        return None;
    }
    literals.sort_unstable_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    let mut kept: Vec<Vec<u8>> = Vec::with_capacity(literals.len());
    for l in literals {
        let covered = kept.iter().any(|k| if prefix { l.starts_with(k) } else { l.ends_with(k) });
        if !covered {
            kept.push(l);
        }
    }
    kept.sort_unstable();
    Some(kept)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn literals(re: &str) -> Literals {
        Literals::of(&regex_syntax::parse(re).unwrap())
    }

    fn strings(l: &[Vec<u8>]) -> Vec<String> {
        l.iter().map(|l| String::from_utf8_lossy(l).into_owned()).collect()
    }

    fn starts(l: &Literals) -> (String, usize) {
        match l {
            Literals::Prefixes { literals, back } => (strings(literals).join("|"), *back),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_prefix_and_its_variants() {
        let l = literals(r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{36,}(?-u:\b)");
        assert_eq!(starts(&l), ("gho_|ghp_|ghr_|ghs_|ghu_".to_owned(), 0));
        let l = literals(r"(?-u:\b)(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b)");
        assert_eq!(starts(&l), ("akia|asia".to_owned(), 0));
    }

    #[test]
    fn case_insensitive_words_are_a_few_literals() {
        // `(?i)s` also matches ſ (U+017F) and `k` the Kelvin sign: those spellings stay.
        assert_eq!(starts(&literals(r"(?i)secret\s*=\s*(\S+)")).0, "secret|\u{17f}ecret");
        assert_eq!(starts(&literals(r"(?i-u:password|passwd|pwd)\s*=")).0, "passwd|password|pwd");
    }

    #[test]
    fn a_short_start_is_skipped() {
        let l = literals(r"(?:^|[^0-9A-Za-z_/-])1//0[0-9A-Za-z_-]{40,}");
        assert_eq!(starts(&l), ("1//0".to_owned(), 4), "one character of up to four bytes");
        let l = literals(r"(?-u:\b)[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}");
        assert_eq!(l, Literals::None);
    }

    #[test]
    fn a_literal_after_a_class_is_a_suffix() {
        let Literals::Inside(l) = literals(r"[0-9]{8,10}:bot") else { panic!() };
        assert_eq!(strings(&l), [":bot"]);
    }

    #[test]
    fn a_literal_inside_is_found() {
        let inside = |re: &str| match literals(re) {
            Literals::Inside(l) => strings(&l).join("|"),
            other => panic!("{re}: {other:?}"),
        };
        assert_eq!(inside(r"(?:^|[^0-9A-Za-z_:])[0-9]{8,10}:AA[0-9A-Za-z_-]{33}"), ":aa");
        assert_eq!(inside(r"(?-u:\b)[0-9a-f]{32}-us[0-9]{1,2}(?-u:\b)"), "-us");
        assert_eq!(inside(r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}"), ".atlasv1");
        // The longest of several: `AZDO` beats nothing, `JQQJ9` beats `AZDO`.
        assert_eq!(inside(r"([A-Za-z0-9]{52}JQQJ9[0-9A-Za-z]{4}AZDO[A-Za-z0-9]{19})"), "jqqj9");
        // Every branch must hold one.
        assert_eq!(inside(r"sl\.[a-z]{9}|[a-z0-9]{11}AAAAAAAAAA[a-z]{4}"), "aaaaaaaa|sl.");
        assert_eq!(literals(r"sl\.[a-z]{9}|[a-z0-9]{11}[a-z]{4}"), Literals::None);
        // A branch's prefixes only when they are rarer than what it holds inside: a list of
        // short names before `token=` is found by `token=`.
        assert_eq!(inside(r"(?:do|gh|api)[0-9]*token=[0-9]+|[0-9]+token=[0-9]+"), "token=");
        // A part that may be absent holds nothing every match has.
        assert_eq!(literals(r"[0-9]{4}(?:-us)?[0-9]{2}"), Literals::None);
        assert_eq!(literals(r"[0-9]{4}(?:x-us)*[0-9]{2}"), Literals::None);
    }

    #[test]
    fn optional_or_short_starts_give_no_prefix() {
        assert_eq!(literals(r"(?:abc)?[0-9]+"), Literals::None);
        assert_eq!(literals(r"a*"), Literals::None);
        assert_eq!(literals(r"=[0-9]+"), Literals::None);
        let l = literals(r"xoxb-[0-9]+|hooks\.slack\.com/x");
        assert_eq!(starts(&l), ("hooks.sl|xoxb-".to_owned(), 0));
    }

    /// Long literals are cut to their first bytes (prefixes) or last bytes (suffixes), and
    /// those that then hold another at the same end are dropped.
    #[test]
    fn long_literals_are_cut() {
        let l = literals(r"(?i-u:hygraph|graphcms)_(?:api_key|apikey|secret)=[a-z0-9]{20}");
        assert_eq!(starts(&l), ("graphcms|hygraph_".to_owned(), 0));
        let Literals::Inside(l) = literals(r"[0-9]{8}_long_suffix_word") else { panic!() };
        assert_eq!(strings(&l), ["fix_word"]);
    }
}
