//! Searching a text for many patterns at a cost per byte that no text can blow up (PR9).
//!
//! One regex automaton for hundreds of patterns is linear in theory, but its lazily built
//! states thrash on text unlike what it saw before: a certificate or a base64 blob cost a
//! hundred times prose. So the patterns are searched the way the fastest secret scanners
//! do (gitleaks' keywords, Hyperscan's prefilters):
//!
//! 1. One Aho-Corasick pass over the text finds every literal that some pattern cannot
//!    match without ([`Literals`]), ignoring ASCII case: these are the candidates, and where.
//! 2. A candidate whose matches start with its literals is verified by one anchored search
//!    from each place its literal was found, which stops as soon as the text cannot match
//!    (a few bytes past a token), in the order a search over the whole text would meet them.
//!    When that could read more than one search over the rest of the text (many places,
//!    each reading up to the pattern's longest match, or [`UNBOUNDED_READ`] bytes for a
//!    pattern without one), one search from the first place reads the rest once instead.
//! 3. A candidate found only by a literal its matches end with or hold inside, and each of the few
//!    patterns without literals, is searched alone over the whole text. Alone, not as one
//!    set: a set of a dozen large patterns is what thrashes, while each alone keeps a small
//!    automaton, and the cost of a text is bounded by their number. The patterns without
//!    literals are first searched together, once, only to learn whether any of them matches
//!    at all: in most texts none does, and that one pass over a few small patterns saves a
//!    pass per pattern (and their captures).
//!
//! Every way gives the answer a search of the whole text would: see [`fires`].

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::literals::Literals;
use super::matcher::{Alphabet, Matcher, Search as Reading};
use super::patterns::{Pattern, Placeholders};

/// What starting one anchored search costs beside the bytes it reads, in bytes.
const SEARCH_OVERHEAD: usize = 64;
/// What an anchored search of a pattern without a bounded match length is expected to
/// read, in bytes: it stops where the text stops matching, a few bytes past a token or an
/// assignment. A text built so that every search reads far (`curl curl curl …` with no
/// pipe) costs more; see [`fires`].
const UNBOUNDED_READ: usize = 64;

/// Many patterns compiled to be searched together. The patterns are numbered in the order
/// given, and searched as their [`Pattern::units`] (a pattern, or its branches): the
/// units are numbered in order too, and [`Search::scan`] says which may match and where.
#[derive(Debug)]
pub(crate) struct Search {
    /// Where each pattern's units start among the units, and, last, how many there are.
    first_unit: Vec<usize>,
    /// Finds every literal, overlapping, ASCII case ignored. `None` if no pattern has one.
    /// A contiguous NFA: a DFA of the default pack's literals held about 12 MiB more, and
    /// the prefilter is a small part of a scan's time.
    prefilter: Option<AhoCorasick>,
    /// For each literal of the prefilter, the units it is a literal of, and whether it is
    /// their prefix.
    owners: Vec<Vec<(u32, bool)>>,
    /// The units without literals, searched whole in every text where [`Search::free`]
    /// matches, ascending.
    always: Vec<u32>,
    /// Their regexes, to be compiled as one (see [`Search::free`]).
    free_expressions: Vec<String>,
    /// Their regexes as one, compiled the first time a text is scanned; if that fails,
    /// each is searched.
    free: Matcher,
}

/// Where one unit may match in a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Where<'c> {
    /// Nowhere: none of its literals occurs.
    Nowhere,
    /// Only where a match starts at one of these offsets, ascending.
    From(&'c [usize]),
    /// Only where a match starts at this offset or later: its literals occur in so many
    /// places that one search over the rest of the text reads less than a search from each.
    After(usize),
    /// Anywhere: it may match, and where its matches start is not known.
    Anywhere,
}

/// Where each pattern of a [`Search`] may match in one text.
#[derive(Clone, Debug, Default)]
pub(crate) struct Candidates {
    /// Every prefix found, by pattern then offset: the pattern of each, and its offset.
    patterns: Vec<u32>,
    offsets: Vec<usize>,
    /// Patterns whose prefixes were found in more places than anchored searches pay for,
    /// sorted, each with the first place (see [`Where::After`]).
    after: Vec<(u32, usize)>,
    /// Patterns that may match anywhere, sorted.
    anywhere: Vec<u32>,
    /// Every unit that may match at all, ascending: most texts hold the literals of a few
    /// dozen of hundreds, and only those are looked at.
    found: Vec<u32>,
    /// The alphabet the text is searched in.
    alphabet: Alphabet,
}

impl Candidates {
    /// Where unit `i` may match.
    pub(crate) fn place(&self, i: usize) -> Where<'_> {
        let Ok(i) = u32::try_from(i) else { return Where::Nowhere };
        if self.anywhere.binary_search(&i).is_ok() {
            return Where::Anywhere;
        }
        if let Ok(k) = self.after.binary_search_by_key(&i, |&(p, _)| p) {
            return self.after.get(k).map_or(Where::Nowhere, |&(_, first)| Where::After(first));
        }
        let from = self.patterns.partition_point(|&p| p < i);
        let to = self.patterns.partition_point(|&p| p <= i);
        match self.offsets.get(from..to) {
            Some(found) if !found.is_empty() => Where::From(found),
            _ => Where::Nowhere,
        }
    }
}

impl Search {
    /// Compiles the search for `patterns`; a pattern with no literals is searched always.
    pub(crate) fn new(patterns: &[&Pattern]) -> Self {
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut owners: Vec<Vec<(u32, bool)>> = Vec::new();
        let mut index: std::collections::HashMap<Vec<u8>, usize> = std::collections::HashMap::new();
        let mut always = Vec::new();
        let mut free_expressions = Vec::new();
        let mut first_unit = vec![0];
        let units = patterns.iter().flat_map(|p| {
            first_unit.push(first_unit.last().copied().unwrap_or(0) + p.units().len());
            p.units()
        });
        for (i, p) in units.enumerate() {
            let n = u32::try_from(i).unwrap_or(u32::MAX);
            let prefix = matches!(p.literals(), Literals::Prefixes { .. });
            if matches!(p.literals(), Literals::None) {
                always.push(n);
                free_expressions.push(p.expression().to_owned());
                continue;
            }
            for lit in p.literals().all() {
                let slot = *index.entry(lit.clone()).or_insert_with(|| {
                    literals.push(lit.clone());
                    owners.push(Vec::new());
                    owners.len() - 1
                });
                if let Some(list) = owners.get_mut(slot) {
                    list.push((n, prefix));
                }
            }
        }
        let prefilter = (!literals.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::Standard)
                    .kind(Some(AhoCorasickKind::ContiguousNFA))
                    .build(&literals)
                    .ok()
            })
            .flatten();
        Self { first_unit, prefilter, owners, always, free_expressions, free: Matcher::default() }
    }

    /// Whether any unit without literals may match in `text`: one search of them all
    /// together, which answers exactly as searching each would whether one matches.
    pub(crate) fn free(&self, text: &str, alphabet: Alphabet) -> bool {
        if self.always.is_empty() {
            return false;
        }
        let srcs: Vec<&str> = self.free_expressions.iter().map(String::as_str).collect();
        self.free.get(&srcs, Reading::Whole, alphabet, false).is_none_or(|all| all.is_match(text))
    }

    /// The first of `patterns` (in order), which are the search's patterns from the
    /// `first`th on, that finds a value that counts in `text`, given what [`Search::scan`]
    /// found there: by its position among `patterns`.
    ///
    /// A pattern finds one when one of its units does, and units are numbered in pattern
    /// order, so the first unit that fires, among those that may match at all, is of
    /// the first pattern that does.
    pub(crate) fn first_firing(
        &self,
        first: usize,
        patterns: &[Pattern],
        text: &str,
        candidates: &Candidates,
        placeholders: &Placeholders,
    ) -> Option<usize> {
        let (&lo, &hi) = (self.first_unit.get(first)?, self.first_unit.get(first + patterns.len())?);
        let from = candidates.found.partition_point(|&u| (u as usize) < lo);
        let mut units = candidates.found.get(from..)?.iter().map(|&u| u as usize).take_while(|&u| u < hi);
        units.find_map(|u| {
            // The pattern `u` is a unit of, and which of its units.
            let p = self.first_unit.partition_point(|&f| f <= u).checked_sub(1)?;
            let unit = patterns.get(p.checked_sub(first)?)?.units().get(u - self.first_unit.get(p)?)?;
            fires(unit, text, candidates.alphabet, candidates.place(u), placeholders).then(|| p - first)
        })
    }

    /// Where each pattern may match in `text`.
    ///
    /// Bounded by the text, whatever it holds: each literal found costs a constant amount
    /// of work (a flag for a pattern found anywhere, a count and at most one place kept for
    /// a prefix), and a pattern keeps at most `text.len() / SEARCH_OVERHEAD` places: found
    /// in more, [`fires`] would search once from the first anyway. Text of one repeated
    /// letter finds a literal like `aa` at every byte: sorting a list of every place found
    /// cost more than judging prose.
    pub(crate) fn scan(&self, text: &str) -> Candidates {
        let units = self.first_unit.last().copied().unwrap_or(0);
        // More places than this and every anchored search together would read more than
        // one search over the whole text (see [`fires`]).
        let most = text.len() / SEARCH_OVERHEAD;
        let mut starts: Vec<(u32, usize)> = Vec::new();
        // Per unit: whether it may match anywhere, how many places were found, the first.
        let mut anywhere = vec![false; units];
        let mut kept = vec![0usize; units];
        let mut first = vec![usize::MAX; units];
        let alphabet = Alphabet::of(text);
        if self.free(text, alphabet) {
            for &p in &self.always {
                if let Some(flag) = anywhere.get_mut(p as usize) {
                    *flag = true;
                }
            }
        }
        if let Some(ac) = &self.prefilter {
            for m in ac.find_overlapping_iter(text) {
                let at = m.start();
                for &(p, prefix) in self.owners.get(m.pattern().as_usize()).map_or(&[][..], Vec::as_slice) {
                    let u = p as usize;
                    if !prefix {
                        if let Some(flag) = anywhere.get_mut(u) {
                            *flag = true;
                        }
                        continue;
                    }
                    if let (Some(n), Some(f)) = (kept.get_mut(u), first.get_mut(u)) {
                        *f = (*f).min(at);
                        *n += 1;
                        if *n <= most {
                            starts.push((p, at));
                        }
                    }
                }
            }
        }
        // A unit found in more than `most` places is searched once from its first.
        let saturated = |p: u32| kept.get(p as usize).is_some_and(|&n| n > most);
        let mut after: Vec<(u32, usize)> = Vec::new();
        for (u, (&n, &f)) in kept.iter().zip(&first).enumerate() {
            if n > most
                && let Ok(p) = u32::try_from(u)
            {
                after.push((p, f));
            }
        }
        starts.retain(|&(p, _)| !saturated(p));
        starts.sort_unstable();
        starts.dedup();
        let anywhere = anywhere.iter().enumerate().filter(|(_, a)| **a).filter_map(|(u, _)| u32::try_from(u).ok());
        let anywhere: Vec<u32> = anywhere.collect();
        let (patterns, offsets): (Vec<u32>, Vec<usize>) = starts.into_iter().unzip();
        let mut found: Vec<u32> =
            patterns.iter().chain(&anywhere).copied().chain(after.iter().map(|&(p, _)| p)).collect();
        found.sort_unstable();
        found.dedup();
        Candidates { patterns, offsets, after, anywhere, found, alphabet }
    }
}

/// Whether `pattern` finds a value that counts in `text`, given where it may match:
/// exactly what [`Pattern::fires_from`] over the whole text answers.
///
/// A search over the whole text meets matches leftmost first, each starting where the one
/// before ended. When every match starts with a literal, the leftmost match at or after an
/// offset starts at the first place a literal was found there from which an anchored search
/// matches. So anchored searches from the places found, skipping those inside a match
/// already seen, meet the same matches in the same order.
///
/// Cost: a pattern of bounded length reads at most about one pass over the rest of the
/// text, either way. A pattern of unbounded length is searched from each place only when
/// there are few enough places that searches of [`UNBOUNDED_READ`] bytes each would cost
/// less than one pass; a text built so that each of those searches reads to its end costs
/// up to `rest / 128` passes for that pattern. A hard bound there needs the point where an
/// anchored search gave up, which the regex crate does not report.
pub(crate) fn fires(
    pattern: &Pattern,
    text: &str,
    alphabet: Alphabet,
    place: Where<'_>,
    placeholders: &Placeholders,
) -> bool {
    let starts = match place {
        Where::Nowhere => return false,
        Where::Anywhere => return pattern.fires_from(text, alphabet, 0, placeholders),
        Where::After(first) => {
            return pattern.fires_from(text, alphabet, first.saturating_sub(back(pattern)), placeholders);
        }
        Where::From(starts) => starts,
    };
    let Some(&first) = starts.first() else { return false };
    let back = back(pattern);
    let first = first.saturating_sub(back);
    let rest = text.len().saturating_sub(first);
    let searches = starts.len().saturating_mul(back + 1);
    let read = pattern.max_len().unwrap_or(UNBOUNDED_READ);
    let anchored = searches.saturating_mul(read.saturating_add(SEARCH_OVERHEAD)) <= rest;
    if !anchored {
        return pattern.fires_from(text, alphabet, first, placeholders);
    }
    // `seen`: no match the whole-text search meets starts before it (the end of the last
    // match that did not count); `tried`: the places before it have been searched from.
    let (mut seen, mut tried) = (0, 0);
    for &found in starts {
        let mut at = found.saturating_sub(back).max(tried);
        while at <= found {
            if at >= seen && text.is_char_boundary(at) {
                match pattern.fires_at(text, alphabet, at, placeholders) {
                    Verdict::Counts => return true,
                    Verdict::Skip(end) => seen = end,
                    Verdict::NoMatch => {}
                }
            }
            at += 1;
        }
        tried = tried.max(found + 1);
    }
    false
}

/// How many bytes before its literal a match of `pattern` may start.
fn back(pattern: &Pattern) -> usize {
    match pattern.literals() {
        Literals::Prefixes { back, .. } => *back,
        _ => 0,
    }
}

/// What an anchored search from one place found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A match whose value counts.
    Counts,
    /// A match whose value does not count, ending here.
    Skip(usize),
    /// No match starts here.
    NoMatch,
}
