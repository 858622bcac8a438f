//! Pattern sets: named groups of secret and injection patterns that rules test in one pass.
//!
//! A pattern file is one set, named after the file (`provider-tokens.yaml` is the set
//! `provider-tokens`):
//!
//! ```yaml
//! patterns:
//!   - id: aws-access-key-id          # unique kebab-case across all files
//!     description: AWS access key id  # shown in refusal reasons
//!     regex: '(?-u:\b)(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b)'
//!     group: 1            # optional: capture group holding the secret value
//!     min_entropy: 3.0    # optional: Shannon bits per character the value must reach
//!     placeholders: true  # optional: values like `xxxx`, `changeme`, `<your-key>` do not count
//! ```
//!
//! Each set is compiled once into a [`regex::RegexSet`] that answers "does anything match"
//! in one linear pass; only on a hit are the individual patterns run, to apply the value
//! checks and to name the pattern that matched.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

use super::diagnostic::{Diagnostic, SourceFile, Span};
use super::validators::{VALIDATORS, Validator};
use super::yaml::{self, Fields, Node, NodeKind};

/// Compiled regexes are capped so a hostile or careless pattern cannot eat memory.
const REGEX_SIZE_LIMIT: usize = 4 << 20;
/// How pattern sets are split for speed. A lazy DFA builds its states as text needs them,
/// and a state of a big set is expensive to build, so short texts unlike those before them
/// pay a lot on one big set; small chunks keep that cost and the memory low. A long text
/// amortizes its own state building and is dominated by passes over it instead, so it gets
/// one pass over all the patterns. Both answer exactly alike.
const GATE_CHUNK: usize = 64;
/// Texts of at least this many bytes take the one-pass set.
const LONG_TEXT: usize = 1024;
/// Lazy-DFA cache of each chunk, and of the one-pass set: large enough to stay on the fast
/// engine over varied text instead of clearing the cache over and over.
const CHUNK_DFA_LIMIT: usize = 32 << 20;
const WHOLE_DFA_LIMIT: usize = 128 << 20;

/// Many regexes compiled to answer "does any match" in one linear pass, and which.
///
/// ASCII text, the common case, is tested with a byte-oriented copy of the set compiled
/// without Unicode classes, which the regex engine runs about a third faster. On ASCII text
/// both copies agree exactly: Unicode `\s`, `\w`, `\b` and case folding differ from their
/// ASCII forms only on non-ASCII text, and a pattern that is not itself ASCII (which could
/// fold a KELVIN SIGN to `k`) keeps Unicode mode in the copy. Any other text goes to the
/// Unicode set.
#[derive(Clone, Debug)]
struct Gate {
    /// For short texts: the patterns in chunks of at most [`GATE_CHUNK`], each its own set.
    short: Vec<Chunk>,
    /// For long texts: all the patterns in one set, when there is more than one chunk.
    long: Option<Chunk>,
}

/// Some patterns compiled as one set, built the first time a text needs it: the Unicode
/// set only once non-ASCII text arrives, the one-pass set only once a long text does.
#[derive(Clone, Debug)]
struct Chunk {
    /// Index of the chunk's first pattern among all of the gate's.
    first: usize,
    patterns: Vec<String>,
    dfa_limit: usize,
    unicode: OnceLock<Option<RegexSet>>,
    ascii: OnceLock<Option<regex::bytes::RegexSet>>,
}

impl Chunk {
    fn new(first: usize, patterns: &[&str], dfa_limit: usize) -> Self {
        let patterns = patterns.iter().map(|p| (*p).to_owned()).collect();
        Self { first, patterns, dfa_limit, unicode: OnceLock::new(), ascii: OnceLock::new() }
    }

    fn size_limit(&self) -> usize {
        REGEX_SIZE_LIMIT.saturating_mul(self.patterns.len().max(1))
    }

    fn unicode(&self) -> Option<&RegexSet> {
        self.unicode
            .get_or_init(|| {
                RegexSetBuilder::new(&self.patterns)
                    .size_limit(self.size_limit())
                    .dfa_size_limit(self.dfa_limit)
                    .build()
                    .ok()
            })
            .as_ref()
    }

    fn ascii(&self) -> Option<&regex::bytes::RegexSet> {
        self.ascii
            .get_or_init(|| {
                // A pattern that is not ASCII keeps its Unicode meaning inside `(?u:…)`.
                let bytes = self.patterns.iter().map(|p| if p.is_ascii() { p.clone() } else { format!("(?u:{p})") });
                regex::bytes::RegexSetBuilder::new(bytes)
                    .unicode(false)
                    .size_limit(self.size_limit())
                    .dfa_size_limit(self.dfa_limit)
                    .build()
                    .ok()
            })
            .as_ref()
    }

    /// Whether any pattern may match. Every pattern compiled alone when it was loaded, so
    /// the sets build; were one not to, the answer is "maybe" and the patterns are then
    /// tried one by one.
    fn is_match(&self, text: &str) -> bool {
        if text.is_ascii()
            && let Some(ascii) = self.ascii()
        {
            return ascii.is_match(text.as_bytes());
        }
        self.unicode().is_none_or(|set| set.is_match(text))
    }

    /// The patterns that match, as indices among the gate's (all of them if no set built).
    fn matches(&self, text: &str) -> Vec<usize> {
        let found: Vec<usize> = if text.is_ascii()
            && let Some(ascii) = self.ascii()
        {
            ascii.matches(text.as_bytes()).into_iter().collect()
        } else if let Some(unicode) = self.unicode() {
            unicode.matches(text).into_iter().collect()
        } else {
            (0..self.patterns.len()).collect()
        };
        found.into_iter().map(|i| i + self.first).collect()
    }
}

impl Gate {
    fn new(patterns: &[&str]) -> Self {
        // As few chunks as the limit allows, of even size.
        let size = patterns.len().div_ceil(patterns.len().div_ceil(GATE_CHUNK).max(1)).max(1);
        let short: Vec<Chunk> =
            patterns.chunks(size).enumerate().map(|(n, part)| Chunk::new(n * size, part, CHUNK_DFA_LIMIT)).collect();
        let long = (short.len() > 1).then(|| Chunk::new(0, patterns, WHOLE_DFA_LIMIT));
        Self { short, long }
    }

    /// The sets to run on `text`: one pass over a long text; small sets over a short one.
    fn sets(&self, text: &str) -> &[Chunk] {
        match &self.long {
            Some(long) if text.len() >= LONG_TEXT => core::slice::from_ref(long),
            _ => &self.short,
        }
    }

    /// The indices of every pattern that matches somewhere in `text`, ascending.
    fn matches(&self, text: &str) -> Vec<usize> {
        self.sets(text).iter().filter(|c| c.is_match(text)).flat_map(|c| c.matches(text)).collect()
    }
}

/// One pattern of a set.
#[derive(Clone, Debug)]
pub struct Pattern {
    pub id: String,
    pub description: String,
    regex: Regex,
    group: usize,
    min_entropy: Option<f64>,
    placeholders: PlaceholderCheck,
    /// A checksum or structure the value must have (`validator:`), see [`Validator`].
    validator: Option<Validator>,
    /// A regex that must not match the text matched before the value (`exclude:`): the
    /// linear-time stand-in for a negative look-behind, e.g. a name such as `PUBLIC_KEY`.
    exclude: Option<Regex>,
    /// Where the format is documented (`source:`), for people auditing the pattern.
    pub source: Option<String>,
}

/// Which placeholder checks a pattern applies to its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PlaceholderCheck {
    /// None: every value counts (`placeholders: false`, the default).
    Off,
    /// Every rule of the list (`placeholders: true`).
    All,
    /// Every rule except keyboard and counting runs (`placeholders: markers`), for
    /// fixed-format tokens whose random part may contain `qwerty` by chance.
    Markers,
}

impl Pattern {
    fn checks_value(&self) -> bool {
        self.group != 0
            || self.min_entropy.is_some()
            || self.placeholders != PlaceholderCheck::Off
            || self.validator.is_some()
            || self.exclude.is_some()
    }

    /// Whether a matched value counts: entropy high enough, a valid checksum where the
    /// pattern names one, and not a placeholder.
    fn accepts(&self, value: &str, placeholders: &Placeholders) -> bool {
        if value.is_empty() {
            return false;
        }
        if let Some(validator) = self.validator
            && !validator.check(value)
        {
            return false;
        }
        if let Some(min) = self.min_entropy
            && shannon_entropy(value) < min
        {
            return false;
        }
        match self.placeholders {
            PlaceholderCheck::Off => true,
            PlaceholderCheck::All => !placeholders.contains(value),
            PlaceholderCheck::Markers => !placeholders.marks(value),
        }
    }

    /// Whether this pattern finds a value that counts in `text`.
    fn find_in(&self, text: &str, placeholders: &Placeholders) -> bool {
        if !self.checks_value() {
            return self.regex.is_match(text);
        }
        self.regex.captures_iter(text).any(|caps| {
            caps.get(self.group).is_some_and(|value| {
                let before = caps.get(0).and_then(|all| text.get(all.start()..value.start())).unwrap_or_default();
                !self.exclude.as_ref().is_some_and(|ex| ex.is_match(before))
                    && self.accepts(value.as_str(), placeholders)
            })
        })
    }
}

/// The patterns of one file, compiled together.
#[derive(Clone, Debug)]
pub struct PatternSet {
    pub name: String,
    patterns: Vec<Pattern>,
    set: Gate,
    placeholders: Arc<Placeholders>,
}

impl PatternSet {
    /// The first pattern (in file order) that finds a value that counts in `text`.
    pub fn find(&self, text: &str) -> Option<&Pattern> {
        self.set
            .matches(text)
            .into_iter()
            .filter_map(|i| self.patterns.get(i))
            .find(|p| p.find_in(text, &self.placeholders))
    }

    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }
}

/// Several pattern sets tested on the same text, compiled into one regex set so that the
/// text is scanned once however many rules test it. Answers exactly as each set's own
/// [`PatternSet::find`] would.
#[derive(Clone, Debug)]
pub(crate) struct Union {
    names: Vec<String>,
    set: Gate,
    /// For each regex of `set`: the set it belongs to (index into `names`) and its index
    /// within that set.
    owners: Vec<(usize, usize)>,
}

/// What one scan of a union found: for each set, the patterns whose regex matched (in
/// file order), and, worked out only when a rule asks about that set, the first of them
/// whose value counts (entropy, placeholders).
#[derive(Clone, Debug)]
pub(crate) struct Hits {
    candidates: Vec<Vec<usize>>,
    found: Vec<OnceLock<Option<usize>>>,
}

impl Union {
    pub(crate) fn build(library: &PatternLibrary, names: &[String]) -> Option<Self> {
        let mut regexes = Vec::new();
        let mut owners = Vec::new();
        for (slot, name) in names.iter().enumerate() {
            for (i, p) in library.get(name)?.patterns.iter().enumerate() {
                regexes.push(p.regex.as_str());
                owners.push((slot, i));
            }
        }
        let set = Gate::new(&regexes);
        Some(Self { names: names.to_vec(), set, owners })
    }

    pub(crate) fn slot(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// One pass over `text` for every set of the union.
    pub(crate) fn scan(&self, text: &str) -> Hits {
        let mut candidates = vec![Vec::new(); self.names.len()];
        // `matches` runs each set's quick yes-or-no pass first, so no text pays for a
        // second pass when nothing matches, nor a third when something does.
        for i in self.set.matches(text) {
            if let Some(&(slot, index)) = self.owners.get(i)
                && let Some(list) = candidates.get_mut(slot)
            {
                list.push(index);
            }
        }
        let found = candidates.iter().map(|_| OnceLock::new()).collect();
        Hits { candidates, found }
    }

    /// The first pattern of set `slot` that finds a value that counts in `text`, as
    /// [`PatternSet::find`] would answer.
    pub(crate) fn found(&self, hits: &Hits, slot: usize, library: &PatternLibrary, text: &str) -> Option<usize> {
        let cell = hits.found.get(slot)?;
        *cell.get_or_init(|| {
            let set = library.get(self.names.get(slot)?)?;
            hits.candidates
                .get(slot)?
                .iter()
                .copied()
                .find(|&i| set.patterns.get(i).is_some_and(|p| p.find_in(text, &set.placeholders)))
        })
    }
}

/// Every pattern set a rule set can name, by set name.
#[derive(Clone, Debug, Default)]
pub struct PatternLibrary {
    sets: BTreeMap<String, PatternSet>,
}

impl PatternLibrary {
    pub fn get(&self, name: &str) -> Option<&PatternSet> {
        self.sets.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.sets.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Compiles pattern files into sets, reporting every problem into `diags`.
    pub(crate) fn compile(files: &[SourceFile], placeholders: Arc<Placeholders>, diags: &mut Vec<Diagnostic>) -> Self {
        let mut library = Self::default();
        let mut ids: BTreeMap<String, ()> = BTreeMap::new();
        for file in files {
            let name = set_name(&file.name);
            let docs = match yaml::documents(file) {
                Ok(docs) => docs,
                Err(d) => {
                    diags.push(*d);
                    continue;
                }
            };
            let mut patterns = Vec::new();
            for doc in &docs {
                let Some(top) = Fields::of(doc, "a pattern file", &["patterns", "description", "scope"], file, diags)
                else {
                    continue;
                };
                let Some(list) = top.require("patterns", "a pattern file", file, diags) else {
                    continue;
                };
                let NodeKind::Seq(items) = &list.kind else {
                    diags.push(
                        Diagnostic::at(
                            "policy.invalid_value",
                            format!("`patterns` must be a list, found {}", list.what()),
                            file,
                            list.span,
                        )
                        .with_hint("write each pattern as a `- id: ...` item"),
                    );
                    continue;
                };
                for item in items {
                    if let Some(p) = compile_pattern(item, file, diags) {
                        if ids.insert(p.id.clone(), ()).is_some() {
                            diags.push(
                                Diagnostic::at(
                                    "policy.duplicate_id",
                                    format!("pattern id `{}` is used twice", p.id),
                                    file,
                                    id_span(item),
                                )
                                .with_hint("pattern ids must be unique across all pattern files"),
                            );
                        }
                        patterns.push(p);
                    }
                }
            }
            let sources: Vec<&str> = patterns.iter().map(|p| p.regex.as_str()).collect();
            let set = Gate::new(&sources);
            library
                .sets
                .insert(name.clone(), PatternSet { name, patterns, set, placeholders: Arc::clone(&placeholders) });
        }
        library
    }
}

fn id_span(item: &Node) -> Span {
    if let NodeKind::Map(entries) = &item.kind
        && let Some((_, v)) = entries.iter().find(|(k, _)| k.as_str() == Some("id"))
    {
        return v.span;
    }
    item.span
}

/// The set a pattern file defines: `rules/patterns/provider-tokens.yaml` → `provider-tokens`.
pub fn set_name(file_name: &str) -> String {
    let base = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
    base.strip_suffix(".yaml").or_else(|| base.strip_suffix(".yml")).unwrap_or(base).to_owned()
}

const PATTERN_KEYS: &[&str] =
    &["id", "description", "regex", "group", "min_entropy", "placeholders", "validator", "exclude", "source"];

fn compile_pattern(item: &Node, file: &SourceFile, diags: &mut Vec<Diagnostic>) -> Option<Pattern> {
    let what = "a pattern";
    let fields = Fields::of(item, what, PATTERN_KEYS, file, diags)?;
    let before = diags.len();
    let id = fields.string("id", what, file, diags);
    if let Some((id, node)) = id
        && !is_kebab(id)
    {
        diags.push(
            Diagnostic::at("policy.invalid_id", format!("pattern id `{id}` is not kebab-case"), file, node.span)
                .with_hint("use lowercase letters, digits and single dashes, e.g. `github-token`"),
        );
    }
    let description = fields.string("description", what, file, diags);
    let regex = fields.string("regex", what, file, diags).and_then(|(src, node)| {
        match RegexBuilder::new(src).size_limit(REGEX_SIZE_LIMIT).build() {
            Ok(re) => Some(re),
            Err(e) => {
                diags.push(regex_diagnostic(&e, src, node, file));
                None
            }
        }
    });
    let group = match fields.get("group") {
        None => 0,
        Some(node) => match node.as_str().and_then(|s| s.parse::<usize>().ok()) {
            Some(g) => match &regex {
                Some(re) if g >= re.captures_len() => {
                    diags.push(
                        Diagnostic::at(
                            "policy.invalid_value",
                            format!("the regex has no capture group {g}"),
                            file,
                            node.span,
                        )
                        .with_hint(format!("this regex has groups 1 to {}", re.captures_len().saturating_sub(1))),
                    );
                    0
                }
                _ => g,
            },
            None => {
                diags.push(invalid(node, file, "`group` must be a capture group number, like `1`"));
                0
            }
        },
    };
    let min_entropy = match fields.get("min_entropy") {
        None => None,
        Some(node) => match node.as_str().and_then(|s| s.parse::<f64>().ok()) {
            Some(e) if (0.0..=8.0).contains(&e) => Some(e),
            _ => {
                diags.push(invalid(node, file, "`min_entropy` must be a number of bits per character between 0 and 8"));
                None
            }
        },
    };
    let placeholders = match fields.get("placeholders") {
        None => PlaceholderCheck::Off,
        Some(node) => match node.as_str() {
            Some("true") => PlaceholderCheck::All,
            Some("markers") => PlaceholderCheck::Markers,
            Some("false") => PlaceholderCheck::Off,
            _ => {
                diags.push(invalid(node, file, "`placeholders` must be `true`, `markers` or `false`"));
                PlaceholderCheck::Off
            }
        },
    };
    let validator = fields.get("validator").and_then(|node| {
        let found = node.as_str().and_then(Validator::named);
        if found.is_none() {
            let names: Vec<&str> = VALIDATORS.iter().map(|(n, _)| *n).collect();
            diags.push(
                invalid(node, file, "`validator` must name a validator")
                    .with_hint(format!("the validators are {}", names.join(", "))),
            );
        }
        found
    });
    let exclude = fields.get("exclude").and_then(|node| match node.as_str() {
        Some(src) => match RegexBuilder::new(src).size_limit(REGEX_SIZE_LIMIT).build() {
            Ok(re) => Some(re),
            Err(e) => {
                diags.push(regex_diagnostic(&e, src, node, file));
                None
            }
        },
        None => {
            diags.push(invalid(node, file, "`exclude` must be a regex"));
            None
        }
    });
    let source = fields.get("source").and_then(|node| match node.as_str() {
        Some(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => {
            diags.push(invalid(node, file, "`source` must say where the format is documented, e.g. a URL"));
            None
        }
    });
    if diags.len() > before {
        return None;
    }
    Some(Pattern {
        id: id?.0.to_owned(),
        description: description?.0.trim().to_owned(),
        regex: regex?,
        group,
        min_entropy,
        placeholders,
        validator,
        exclude,
        source,
    })
}

fn invalid(node: &Node, file: &SourceFile, message: &str) -> Diagnostic {
    Diagnostic::at("policy.invalid_value", message, file, node.span)
}

/// A regex error, with the caret under the part of the pattern the regex crate blames.
pub(crate) fn regex_diagnostic(e: &regex::Error, src: &str, node: &Node, file: &SourceFile) -> Diagnostic {
    let positions = yaml::char_positions(file, node, src);
    let (span, detail) = match e {
        regex::Error::Syntax(text) => (syntax_span(text, src, &positions), last_error_line(text)),
        regex::Error::CompiledTooBig(limit) => (node.span, format!("it compiles to more than {limit} bytes")),
        _ => (node.span, e.to_string()),
    };
    Diagnostic::at("policy.invalid_regex", format!("this regex does not compile: {detail}"), file, span)
        .with_hint("patterns use Rust regex syntax; look-around and backreferences are not supported")
}

/// The regex crate prints a syntax error as the pattern, a line of carets under the
/// problem, and `error: ...`. Recover the caret's position within the pattern.
fn syntax_span(text: &str, src: &str, positions: &[usize]) -> Span {
    let whole = Span::new(positions.first().copied().unwrap_or(0), positions.last().copied().unwrap_or(0));
    if src.contains('\n') {
        return whole;
    }
    // The quoted pattern is on the line after the first, indented like the caret line.
    let mut lines = text.lines().skip(1);
    let indent = lines.next().map_or(0, |l| l.len() - l.trim_start().len());
    let Some(carets) = lines.find(|l| l.trim_start().starts_with('^')) else {
        return whole;
    };
    let start = carets.find('^').unwrap_or(0).saturating_sub(indent);
    let width = carets.trim().chars().count().max(1);
    match (positions.get(start), positions.get(start + width - 1)) {
        (Some(&from), Some(&to)) => Span::new(from, to + 1),
        (Some(&from), None) => Span::new(from, from + 1),
        _ => whole,
    }
}

fn last_error_line(text: &str) -> String {
    text.lines().rev().find_map(|l| l.trim().strip_prefix("error: ")).unwrap_or("invalid syntax").to_owned()
}

fn is_kebab(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('-')
        && !id.ends_with('-')
        && !id.contains("--")
        && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Shannon entropy of `value` in bits per character.
pub fn shannon_entropy(value: &str) -> f64 {
    if value.is_ascii() {
        let mut counts = [0u32; 128];
        for b in value.bytes() {
            if let Some(n) = counts.get_mut(usize::from(b)) {
                *n += 1;
            }
        }
        return entropy_of(counts.iter().copied().filter(|&n| n > 0), value.len());
    }
    let mut counts: BTreeMap<char, u32> = BTreeMap::new();
    let mut total = 0u32;
    for c in value.chars() {
        *counts.entry(c).or_insert(0) += 1;
        total += 1;
    }
    entropy_of(counts.values().copied(), usize::try_from(total).unwrap_or(usize::MAX))
}

fn entropy_of(counts: impl Iterator<Item = u32>, total: usize) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let total = total as f64;
    counts
        .map(|n| {
            let p = f64::from(n) / total;
            -p * p.log2()
        })
        .sum()
}

/// The shared placeholder deny-list: values that are examples, templates or references
/// to a secret kept elsewhere, not secrets. Patterns with `placeholders: true` ignore them.
///
/// ```yaml
/// exact: [changeme, password, ...]      # the whole value, lowercased
/// contains: [example, xxxx, "<", ...]   # anywhere in the value
/// sequences: [abcdefgh, qwerty, ...]    # anywhere, except for `placeholders: markers`
/// prefixes: ["$", "process.env", ...]
/// suffixes: [_here, .pem, ...]
/// regexes: ['^[a-z]{1,15}$', ...]       # on the lowercased value
/// ```
///
/// Values are trimmed of whitespace and quotes and lowercased first. A value of fewer
/// than three distinct characters (`aaaa`, `0000`, `****`) is always a placeholder.
#[derive(Clone, Debug, Default)]
pub struct Placeholders {
    exact: BTreeSet<String>,
    contains: Vec<String>,
    /// Keyboard and counting runs; not applied to fixed-format tokens (`markers`).
    sequences: Vec<String>,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
    regexes: Option<RegexSet>,
}

const PLACEHOLDER_KEYS: &[&str] = &["exact", "contains", "sequences", "prefixes", "suffixes", "regexes"];

impl Placeholders {
    /// Whether `value` is a placeholder rather than a secret.
    pub fn contains(&self, value: &str) -> bool {
        self.check(value, true)
    }

    /// Whether `value` is a placeholder by every rule but keyboard and counting runs.
    pub fn marks(&self, value: &str) -> bool {
        self.check(value, false)
    }

    fn check(&self, value: &str, sequences: bool) -> bool {
        let v = value.trim().trim_matches(|c: char| matches!(c, '"' | '\'' | '`')).trim();
        let distinct: BTreeSet<char> = v.chars().take(64).collect();
        if distinct.len() < 3 {
            return true;
        }
        let lower = v.to_lowercase();
        self.exact.contains(&lower)
            || self.contains.iter().any(|w| lower.contains(w.as_str()))
            || (sequences && self.sequences.iter().any(|w| lower.contains(w.as_str())))
            || self.prefixes.iter().any(|w| lower.starts_with(w.as_str()))
            || self.suffixes.iter().any(|w| lower.ends_with(w.as_str()))
            || self.regexes.as_ref().is_some_and(|r| r.is_match(&lower))
    }

    /// Reads placeholder files, reporting every problem into `diags`.
    pub(crate) fn compile(files: &[SourceFile], diags: &mut Vec<Diagnostic>) -> Self {
        let mut out = Self::default();
        let mut regexes = Vec::new();
        for file in files {
            let docs = match yaml::documents(file) {
                Ok(docs) => docs,
                Err(d) => {
                    diags.push(*d);
                    continue;
                }
            };
            for doc in &docs {
                let Some(fields) = Fields::of(doc, "a placeholder list", PLACEHOLDER_KEYS, file, diags) else {
                    continue;
                };
                for key in PLACEHOLDER_KEYS {
                    let Some(node) = fields.get(key) else { continue };
                    let items: Vec<&Node> = match &node.kind {
                        NodeKind::Seq(items) => items.iter().collect(),
                        _ if node.is_null() => Vec::new(),
                        _ => {
                            diags.push(invalid(node, file, &format!("`{key}` must be a list of strings")));
                            continue;
                        }
                    };
                    for item in items {
                        let Some(text) = item.as_str() else {
                            diags.push(invalid(item, file, &format!("each of `{key}` must be a string")));
                            continue;
                        };
                        let lower = text.to_lowercase();
                        match *key {
                            "exact" => {
                                out.exact.insert(lower);
                            }
                            "contains" => out.contains.push(lower),
                            "sequences" => out.sequences.push(lower),
                            "prefixes" => out.prefixes.push(lower),
                            "suffixes" => out.suffixes.push(lower),
                            _ => match RegexBuilder::new(text).size_limit(REGEX_SIZE_LIMIT).build() {
                                Ok(_) => regexes.push(text.to_owned()),
                                Err(e) => diags.push(regex_diagnostic(&e, text, item, file)),
                            },
                        }
                    }
                }
            }
        }
        if !regexes.is_empty() {
            match RegexSetBuilder::new(&regexes).size_limit(REGEX_SIZE_LIMIT.saturating_mul(regexes.len())).build() {
                Ok(set) => out.regexes = Some(set),
                Err(e) => diags.push(Diagnostic::at(
                    "policy.invalid_regex",
                    format!("the placeholder regexes do not compile together: {e}"),
                    files.first().unwrap_or(&SourceFile::new("", "")),
                    Span::new(0, 1),
                )),
            }
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn library(text: &str) -> (PatternLibrary, Vec<Diagnostic>) {
        let mut diags = Vec::new();
        let placeholders = Placeholders::compile(
            &[SourceFile::new("placeholders.yaml", include_str!("../../rules/placeholders.yaml"))],
            &mut diags,
        );
        let lib =
            PatternLibrary::compile(&[SourceFile::new("dir/tokens.yaml", text)], Arc::new(placeholders), &mut diags);
        (lib, diags)
    }

    #[test]
    fn a_set_finds_the_first_pattern_that_counts() {
        let (lib, diags) = library(
            "patterns:\n  - id: gh\n    description: GitHub token\n    regex: 'ghp_[A-Za-z0-9]{36}'\n  - id: generic\n    description: generic secret\n    regex: '(?i)secret\\s*=\\s*(\\S+)'\n    group: 1\n    min_entropy: 3.0\n    placeholders: true\n",
        );
        assert!(diags.is_empty(), "{diags:?}");
        let set = lib.get("tokens").unwrap();
        assert_eq!(set.find("take ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789").map(|p| p.id.as_str()), Some("gh"));
        assert_eq!(set.find("secret = hQ7vR2xK9pL3mN8w").map(|p| p.id.as_str()), Some("generic"));
        assert!(set.find("secret = changeme").is_none());
        assert!(set.find("secret = aaaaaaaaaaaa").is_none());
        assert!(set.find("nothing here").is_none());
    }

    /// `validator` and `exclude` decide whether a match counts; a bad one is reported.
    #[test]
    fn validators_and_exclusions() {
        let (lib, diags) = library(
            "patterns:\n  - id: npm\n    description: npm token\n    regex: 'npm_[A-Za-z0-9]{36}'\n    validator: github-checksum\n  - id: named-key\n    description: named key\n    regex: '([A-Z_]*KEY)=([A-Za-z0-9]{20,})'\n    group: 2\n    exclude: 'PUBLIC'\n",
        );
        assert!(diags.is_empty(), "{diags:?}");
        let set = lib.get("tokens").unwrap();
        // CRC-32 of the 30 characters, in base62, is the last six.
        assert!(set.find("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").is_some());
        assert!(set.find("npm_zQWBuTSOoRi4A9spHcVY5ncnsDkxkJ0mLq18").is_none());
        assert!(set.find("ACME_KEY=q8Zk3LmN9pR2tV5xB7cD").is_some());
        assert!(set.find("VAPID_PUBLIC_KEY=q8Zk3LmN9pR2tV5xB7cD").is_none());
        let (_, diags) = library(
            "patterns:\n  - id: x\n    description: x\n    regex: 'x'\n    validator: luhn\n    exclude: '('\n",
        );
        let codes: Vec<_> = diags.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["policy.invalid_value", "policy.invalid_regex"]);
        assert!(diags[0].hint.as_deref().unwrap().starts_with("the validators are github-checksum, "), "{diags:?}");
    }

    #[test]
    fn a_broken_regex_points_into_the_pattern() {
        let (_, diags) = library("patterns:\n  - id: bad\n    description: bad\n    regex: 'ab(c'\n");
        assert_eq!(diags.len(), 1);
        let d = &diags[0];
        assert_eq!(d.code, "policy.invalid_regex");
        assert_eq!((d.line, d.column, d.width), (4, 15, 1));
        assert_eq!(d.message, "this regex does not compile: unclosed group");
    }

    #[test]
    fn unknown_keys_and_bad_groups_are_reported() {
        let (_, diags) = library("patterns:\n  - id: x\n    descripton: d\n    regex: 'a(b)'\n    group: 2\n");
        let codes: Vec<_> = diags.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["policy.unknown_field", "policy.missing_field", "policy.invalid_value"]);
        assert_eq!(diags[0].hint.as_deref(), Some("did you mean `description`?"));
    }

    #[test]
    fn placeholders() {
        let mut diags = Vec::new();
        let list = Placeholders::compile(
            &[SourceFile::new("placeholders.yaml", include_str!("../../rules/placeholders.yaml"))],
            &mut diags,
        );
        assert!(diags.is_empty(), "{diags:?}");
        let is_placeholder = |v: &str| list.contains(v);
        for v in [
            "xxxxxxxx",
            "<your-api-key>",
            "changeme",
            "${API_KEY}",
            "$TOKEN",
            "12345678",
            "abcdefgh",
            "your_token_here",
            "{{ secrets.X }}",
        ] {
            assert!(is_placeholder(v), "{v}");
        }
        for v in ["hQ7vR2xK9pL3mN8w", "s3cr3t-Pa55w0rd!", "AKIAIOSFODNN7EXAMPL3"] {
            assert!(!is_placeholder(v), "{v}");
        }
    }

    /// The byte-oriented copy of a set answers exactly as the Unicode set on ASCII text.
    #[test]
    fn the_ascii_gate_agrees_with_the_unicode_set() {
        let files = [
            include_str!("../../rules/patterns/private-keys.yaml"),
            include_str!("../../rules/patterns/provider-tokens.yaml"),
            include_str!("../../rules/patterns/generic-credentials.yaml"),
            include_str!("../../rules/patterns/forwarded-commands.yaml"),
            include_str!("../../rules/patterns/injections.yaml"),
        ];
        let corpus = [
            include_str!("../../corpus/benign.jsonl"),
            include_str!("../../corpus/provider-tokens.jsonl"),
            include_str!("../../corpus/generic-credentials.jsonl"),
            include_str!("../../corpus/injections.jsonl"),
            include_str!("../../corpus/forwarded-commands.jsonl"),
        ];
        let texts: Vec<String> = corpus
            .iter()
            .flat_map(|c| c.lines())
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_owned))
            .flat_map(|t| [crate::normalize::fold(&t), t])
            .filter(|t| t.is_ascii())
            .step_by(4)
            .collect();
        let mut diags = Vec::new();
        let sources: Vec<SourceFile> =
            files.iter().enumerate().map(|(i, f)| SourceFile::new(format!("set{i}.yaml"), *f)).collect();
        let lib = PatternLibrary::compile(&sources, Arc::new(Placeholders::default()), &mut diags);
        assert!(diags.is_empty(), "{diags:?}");
        let mut checked = 0;
        for set in lib.sets.values() {
            for chunk in set.set.short.iter().chain(&set.set.long) {
                let unicode = chunk.unicode().unwrap();
                for text in &texts {
                    assert_eq!(chunk.is_match(text), unicode.is_match(text), "{}: {text:?}", set.name);
                    let unicode: Vec<usize> = unicode.matches(text).into_iter().map(|i| i + chunk.first).collect();
                    assert_eq!(chunk.matches(text), unicode, "{}: {text:?}", set.name);
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000, "{checked}");
        // The chunks for short texts and the one-pass set for long ones find the same.
        for set in lib.sets.values() {
            if let Some(long) = &set.set.long {
                for text in &texts {
                    let short: Vec<usize> =
                        set.set.short.iter().filter(|c| c.is_match(text)).flat_map(|c| c.matches(text)).collect();
                    assert_eq!(short, long.matches(text), "{}: {text:?}", set.name);
                }
            }
        }
        // Every set has the fast copy.
        for name in ["set0", "set1", "set2", "set3", "set4"] {
            assert!(
                lib.get(name).is_some_and(|s| s.set.short.iter().chain(&s.set.long).all(|c| c.ascii().is_some())),
                "{name}"
            );
        }
    }

    #[test]
    fn entropy() {
        assert_eq!(shannon_entropy(""), 0.0);
        assert_eq!(shannon_entropy("aaaa"), 0.0);
        assert!((shannon_entropy("abcd") - 2.0).abs() < 1e-9);
    }
}
