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
//! Sets are searched as [`search`](super::search) describes: a literal prefilter, then each
//! candidate pattern alone from where its literals were found, so that no text costs much
//! more than prose. A pattern whose matches cannot be told apart from any text (it matches
//! the empty string) is refused when the pack loads.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use regex::{RegexBuilder, RegexSet, RegexSetBuilder};
use regex_automata::meta::Regex;
use regex_automata::util::captures::Captures;
use regex_automata::{Anchored, Input};
use regex_syntax::hir::{Class, Hir, HirKind};

use super::diagnostic::{Diagnostic, SourceFile, Span};
use super::index::{Index, Shape, Unit};
use super::literals::Literals;
use super::matcher::{Alphabet, Matcher, REGEX_SIZE_LIMIT, Search as Reading, compile_many};
use super::search::{Candidates, Search, Verdict};
use super::validators::{VALIDATORS, Validator};
use super::views::{VIEWS, View};
use super::yaml::{self, Fields, Node, NodeKind};

/// One pattern of a set.
#[derive(Clone, Debug)]
pub struct Pattern {
    pub id: String,
    pub description: String,
    /// The regex as written.
    expression: String,
    /// Compiled the first time the pattern is a candidate, in the forms its searches need:
    /// loading a pack only parses its patterns, so that `agentfw scan` starts at once and
    /// holds only what it uses.
    matcher: Matcher,
    /// The literals the prefilter finds the pattern by.
    literals: Literals,
    /// The longest match in bytes, if the regex bounds it.
    max_len: Option<usize>,
    group: usize,
    min_entropy: Option<f64>,
    placeholders: PlaceholderCheck,
    /// A checksum or structure the value must have (`validator:`), see [`Validator`].
    validator: Option<Validator>,
    /// A regex that must not match the text matched before the value (`exclude:`): the
    /// linear-time stand-in for a negative look-behind, e.g. a name such as `PUBLIC_KEY`.
    exclude: Option<regex::Regex>,
    /// Where the format is documented (`source:`), for people auditing the pattern.
    pub source: Option<String>,
    /// The branches of a pattern that is an alternation without value checks and without
    /// prefixes, searched one by one in its place (see [`Shape::of`]); empty for the rest.
    branches: Vec<Pattern>,
}

/// Which placeholder checks a pattern applies to its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PlaceholderCheck {
    /// None: every value counts (`placeholders: false`, the default).
    Off,
    /// Every rule of the list (`placeholders: true`).
    All,
    /// Every rule except keyboard and counting runs and the shape regexes
    /// (`placeholders: markers`), for fixed-format tokens whose random part may contain
    /// `qwerty`, or be all letters, by chance.
    Markers,
}

impl Pattern {
    /// The regex as written in the pattern file.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    pub(crate) fn literals(&self) -> &Literals {
        &self.literals
    }

    pub(crate) fn max_len(&self) -> Option<usize> {
        self.max_len
    }

    /// The patterns searched in this one's place: its branches, or itself.
    pub(crate) fn units(&self) -> &[Pattern] {
        if self.branches.is_empty() { core::slice::from_ref(self) } else { &self.branches }
    }

    /// The regex compiled for `reading` a text in `alphabet`; `None` only if it compiled to
    /// more than the size limit, which loading rules out (see [`parse`]).
    fn regex(&self, reading: Reading, alphabet: Alphabet) -> Option<&Regex> {
        self.matcher.get(&[self.expression.as_str()], reading, alphabet, self.group != 0)
    }

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

    /// Whether this pattern finds a value that counts in `text`, looking at the matches
    /// that start at `start` or later, leftmost first and not overlapping, with the text
    /// before `start` seen by `\b` and `^`. From 0 this is the pattern's verdict on `text`.
    ///
    /// A pattern whose regex cannot be compiled fires wherever it is a candidate: the
    /// verdict fails closed.
    pub(crate) fn fires_from(&self, text: &str, alphabet: Alphabet, start: usize, placeholders: &Placeholders) -> bool {
        let Some(regex) = self.regex(Reading::Whole, alphabet) else {
            return true;
        };
        let input = Input::new(text).range(start..);
        if !self.checks_value() {
            return regex.is_match(input);
        }
        regex.captures_iter(input).any(|caps| self.counts(&caps, text, placeholders))
    }

    /// What the match that starts exactly at `at` (if any) is worth: one anchored search,
    /// which stops as soon as the text can no longer match, and reads no further than the
    /// longest match could reach (`\b` and `$` still see the text past it).
    pub(crate) fn fires_at(&self, text: &str, alphabet: Alphabet, at: usize, placeholders: &Placeholders) -> Verdict {
        let Some(regex) = self.regex(Reading::Near, alphabet) else {
            return Verdict::Counts;
        };
        let end = self.max_len.map_or(text.len(), |n| text.len().min(at.saturating_add(n)));
        let input = Input::new(text).range(at..end).anchored(Anchored::Yes);
        // Most places a literal is found start no match: learning that needs neither
        // captures nor the memory they are kept in.
        if !regex.is_match(input.clone()) {
            return Verdict::NoMatch;
        }
        if !self.checks_value() {
            return Verdict::Counts;
        }
        let mut caps = regex.create_captures();
        regex.search_captures(&input, &mut caps);
        match caps.get_match() {
            None => Verdict::NoMatch,
            Some(_) if self.counts(&caps, text, placeholders) => Verdict::Counts,
            Some(m) => Verdict::Skip(m.end()),
        }
    }

    /// Whether the value of a match (its capture group, or all of it) took part, is not
    /// excluded by the text before it, and counts.
    fn counts(&self, caps: &Captures, text: &str, placeholders: &Placeholders) -> bool {
        let (Some(all), Some(value)) = (caps.get_match(), caps.get_group(self.group)) else {
            return false;
        };
        let before = text.get(all.start()..value.start).unwrap_or_default();
        !self.exclude.as_ref().is_some_and(|ex| ex.is_match(before))
            && text.get(value.range()).is_some_and(|v| self.accepts(v, placeholders))
    }
}

/// The patterns of one file, compiled together.
#[derive(Debug)]
pub struct PatternSet {
    pub name: String,
    patterns: Vec<Pattern>,
    /// The views of a text the set is judged on besides the text as sent (`views:`).
    views: Vec<View>,
    /// Built the first time [`PatternSet::find`] is called: rules reach sets through a
    /// [`Union`] instead.
    search: OnceLock<Search>,
    placeholders: Arc<Placeholders>,
}

impl PatternSet {
    /// The first pattern (in file order) that finds a value that counts in `text`, or else
    /// in the first of the set's views of it where one does.
    pub fn find(&self, text: &str) -> Option<&Pattern> {
        let search = self.search.get_or_init(|| Search::new(&self.patterns.iter().collect::<Vec<_>>()));
        let first = |text: &str| self.first_in(text, search, &search.scan(text), 0);
        first(text)
            .or_else(|| self.views.iter().find_map(|view| first(&view.of(text)?)))
            .and_then(|i| self.patterns.get(i))
    }

    /// The first pattern of the set that finds a value that counts in `text`, given what
    /// `search` found there, in which the set's patterns start at `offset`.
    fn first_in(&self, text: &str, search: &Search, candidates: &Candidates, offset: usize) -> Option<usize> {
        search.first_firing(offset, &self.patterns, text, candidates, &self.placeholders)
    }

    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }
}

/// Several pattern sets tested on the same text, searched together so that the text is
/// scanned once however many rules test it. Answers exactly as each set's own
/// [`PatternSet::find`] would.
#[derive(Debug)]
pub(crate) struct Union {
    names: Vec<String>,
    search: Search,
    /// Where each set's patterns start among the union's: set `slot`'s pattern `i` is the
    /// union's `first[slot] + i`.
    first: Vec<usize>,
}

/// What one scan of a union found: where each pattern may match, and, worked out only
/// when a rule asks about a set, the first of its patterns that finds a value that counts.
#[derive(Clone, Debug)]
pub(crate) struct Hits {
    candidates: Candidates,
    found: Vec<OnceLock<Option<usize>>>,
    /// Each view of the text (by [`View::index`]) and where the union's patterns may match
    /// in it, built the first time a set asks; `None` when the view is the text itself.
    views: [OnceLock<Option<(String, Candidates)>>; VIEWS.len()],
}

impl Hits {
    fn view(&self, view: View, text: &str, search: &Search) -> Option<&(String, Candidates)> {
        self.views
            .get(view.index())?
            .get_or_init(|| {
                let seen = view.of(text)?;
                let candidates = search.scan(&seen);
                Some((seen, candidates))
            })
            .as_ref()
    }
}

impl Union {
    pub(crate) fn build(library: &PatternLibrary, names: &[String]) -> Option<Self> {
        let mut patterns = Vec::new();
        let mut first = Vec::new();
        for name in names {
            first.push(patterns.len());
            patterns.extend(library.get(name)?.patterns.iter());
        }
        Some(Self { names: names.to_vec(), search: Search::new(&patterns), first })
    }

    pub(crate) fn slot(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// One pass over `text` for every set of the union.
    pub(crate) fn scan(&self, text: &str) -> Hits {
        let candidates = self.search.scan(text);
        let found = self.names.iter().map(|_| OnceLock::new()).collect();
        Hits { candidates, found, views: Default::default() }
    }

    /// The first pattern of set `slot` that finds a value that counts in `text`, as
    /// [`PatternSet::find`] would answer.
    pub(crate) fn found(&self, hits: &Hits, slot: usize, library: &PatternLibrary, text: &str) -> Option<usize> {
        let cell = hits.found.get(slot)?;
        *cell.get_or_init(|| {
            let set = library.get(self.names.get(slot)?)?;
            let first = *self.first.get(slot)?;
            set.first_in(text, &self.search, &hits.candidates, first).or_else(|| {
                set.views.iter().find_map(|&view| {
                    let (seen, candidates) = hits.view(view, text, &self.search)?;
                    set.first_in(seen, &self.search, candidates, first)
                })
            })
        })
    }
}

/// Every pattern set a rule set can name, by set name.
#[derive(Debug, Default)]
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
        let index = Index::embedded();
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
            let mut views = Vec::new();
            for doc in &docs {
                let Some(top) =
                    Fields::of(doc, "a pattern file", &["patterns", "description", "scope", "views"], file, diags)
                else {
                    continue;
                };
                views.extend(file_views(&top, file, diags));
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
                    if let Some(p) = compile_pattern(item, file, &index, diags) {
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
            views.dedup();
            let set = PatternSet {
                name: name.clone(),
                patterns,
                views,
                search: OnceLock::new(),
                placeholders: Arc::clone(&placeholders),
            };
            library.sets.insert(name, set);
        }
        library
    }
}

/// The views a pattern file names (`views: [folded, joined, decoded]`).
fn file_views(top: &Fields<'_>, file: &SourceFile, diags: &mut Vec<Diagnostic>) -> Vec<View> {
    let Some(node) = top.get("views") else { return Vec::new() };
    let names: Vec<&str> = VIEWS.iter().map(|(_, n)| *n).collect();
    let hint = format!("the views are {}", names.join(", "));
    let NodeKind::Seq(items) = &node.kind else {
        diags.push(invalid(node, file, "`views` must be a list, like `[folded, joined, decoded]`").with_hint(hint));
        return Vec::new();
    };
    let mut views = Vec::new();
    for item in items {
        match item.as_str().and_then(View::named) {
            Some(view) if !views.contains(&view) => views.push(view),
            Some(_) => {}
            None => diags.push(invalid(item, file, "this is not a view of the text").with_hint(hint.clone())),
        }
    }
    views
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

/// Compiles one pattern; its regex's [`Shape`] is read from `index` if there, else parsed.
fn compile_pattern(item: &Node, file: &SourceFile, index: &Index, diags: &mut Vec<Diagnostic>) -> Option<Pattern> {
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
    let expression = fields.string("regex", what, file, diags);
    let parsed = expression.and_then(|(src, node)| match index.get(src) {
        Some(shape) => Some(shape.clone()),
        None => shape(src, node, file, diags),
    });
    let group = match fields.get("group") {
        None => 0,
        Some(node) => match node.as_str().and_then(|s| s.parse::<usize>().ok()) {
            Some(g) => match &parsed {
                Some(shape) if g > shape.captures => {
                    diags.push(
                        Diagnostic::at(
                            "policy.invalid_value",
                            format!("the regex has no capture group {g}"),
                            file,
                            node.span,
                        )
                        .with_hint(format!("this regex has groups 1 to {}", shape.captures)),
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
    let shape = parsed?;
    let mut pattern = Pattern {
        id: id?.0.to_owned(),
        description: description?.0.trim().to_owned(),
        expression: expression?.0.to_owned(),
        matcher: Matcher::default(),
        literals: shape.literals,
        max_len: shape.max_len,
        group,
        min_entropy,
        placeholders,
        validator,
        exclude,
        source,
        branches: Vec::new(),
    };
    if !pattern.checks_value() {
        pattern.branches = shape.split.into_iter().map(|unit| pattern.unit(unit)).collect();
    }
    Some(pattern)
}

/// The shape of the regex `src` of a pattern, parsed and checked: it must parse, compile
/// within the size limit and not match the empty string.
fn shape(src: &str, node: &Node, file: &SourceFile, diags: &mut Vec<Diagnostic>) -> Option<Shape> {
    match parse(src) {
        Ok(parsed) if parsed.properties().minimum_len() == Some(0) => {
            diags.push(
                Diagnostic::at(
                    "policy.matches_everything",
                    "this regex matches the empty string, so it matches every text",
                    file,
                    node.span,
                )
                .with_hint("require at least one character, e.g. `+` instead of `*`"),
            );
            None
        }
        Ok(parsed) => Some(Shape::of(&parsed)),
        Err(e) => {
            diags.push(regex_diagnostic(&e, src, node, file));
            None
        }
    }
}

impl Pattern {
    /// The pattern searched in place of this one for `unit` of its regex's split.
    fn unit(&self, unit: Unit) -> Pattern {
        Pattern {
            id: self.id.clone(),
            description: String::new(),
            expression: unit.expression,
            matcher: Matcher::default(),
            literals: unit.literals,
            max_len: unit.max_len,
            group: 0,
            min_entropy: None,
            placeholders: PlaceholderCheck::Off,
            validator: None,
            exclude: None,
            source: None,
            branches: Vec::new(),
        }
    }
}

/// Parses a pattern's regex with the regex crate's syntax, and checks that it will compile
/// within the size limit: by an estimate from its parsed form, and, should the estimate be
/// near the limit, by compiling it.
fn parse(src: &str) -> Result<Hir, regex::Error> {
    let hir = regex_syntax::ParserBuilder::new().build().parse(src).map_err(|e| regex::Error::Syntax(e.to_string()))?;
    if compiled_size_estimate(&hir) > REGEX_SIZE_LIMIT / 4 {
        compile_many(&[src], Reading::Whole, Alphabet::Unicode, true)?;
    }
    Ok(hir)
}

/// An upper estimate of the bytes a regex compiles to: a few words per state, each
/// literal byte and class range a state, repetitions as many copies as they allow.
fn compiled_size_estimate(hir: &Hir) -> usize {
    const STATE: usize = 32;
    let sub = |h: &Hir| compiled_size_estimate(h);
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => STATE,
        HirKind::Literal(lit) => STATE * lit.0.len(),
        // A Unicode range becomes up to a few states per byte of its UTF-8 forms.
        HirKind::Class(Class::Unicode(c)) => STATE * 8 * c.ranges().len(),
        HirKind::Class(Class::Bytes(c)) => STATE * c.ranges().len(),
        HirKind::Repetition(r) => {
            let copies = r.max.unwrap_or(r.min).max(r.min).max(1) as usize;
            sub(&r.sub).saturating_mul(copies).saturating_add(STATE)
        }
        HirKind::Capture(c) => sub(&c.sub).saturating_add(2 * STATE),
        HirKind::Concat(items) | HirKind::Alternation(items) => {
            items.iter().map(sub).fold(STATE * items.len(), usize::saturating_add)
        }
    }
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
/// regexes: ['^[a-z]{1,15}$', ...]       # on the lowercased value, except for `markers`
/// prefixes: ["$", "process.env", ...]
/// suffixes: [_here, .pem, ...]
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

    /// Whether `value` is a placeholder by its markers alone: every rule but keyboard and
    /// counting runs and the regexes, which describe identifiers and code (`^[a-z]{1,24}$`)
    /// that the random part of a fixed-format token can resemble by chance.
    pub fn marks(&self, value: &str) -> bool {
        self.check(value, false)
    }

    fn check(&self, value: &str, shapes: bool) -> bool {
        let v = value.trim().trim_matches(|c: char| matches!(c, '"' | '\'' | '`')).trim();
        let distinct: BTreeSet<char> = v.chars().take(64).collect();
        if distinct.len() < 3 {
            return true;
        }
        let lower = v.to_lowercase();
        self.exact.contains(&lower)
            || self.contains.iter().any(|w| lower.contains(w.as_str()))
            || (shapes && self.sequences.iter().any(|w| lower.contains(w.as_str())))
            || self.prefixes.iter().any(|w| lower.starts_with(w.as_str()))
            || self.suffixes.iter().any(|w| lower.ends_with(w.as_str()))
            || (shapes && self.regexes.as_ref().is_some_and(|r| r.is_match(&lower)))
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

    /// A regex that matches the empty string matches every text: refused, with the reason.
    #[test]
    fn a_regex_that_matches_everything_is_refused() {
        for regex in ["a*", "(?:x|)", "\\b", "[0-9]{0,4}"] {
            let (lib, diags) = library(&format!("patterns:\n  - id: x\n    description: x\n    regex: '{regex}'\n"));
            let codes: Vec<_> = diags.iter().map(|d| d.code).collect();
            assert_eq!(codes, ["policy.matches_everything"], "{regex}");
            assert_eq!(lib.get("tokens").map(|s| s.patterns().len()), Some(0), "{regex}");
        }
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

    /// The default pack's pattern files, compiled with its placeholder list.
    fn default_library() -> PatternLibrary {
        let mut diags = Vec::new();
        let placeholders = Placeholders::compile(&super::super::pack::placeholder_files(), &mut diags);
        let lib = PatternLibrary::compile(&super::super::pack::pattern_files(), Arc::new(placeholders), &mut diags);
        assert!(diags.is_empty(), "{diags:?}");
        lib
    }

    /// What a set answers when every pattern runs over the whole text: the definition the
    /// search must agree with.
    fn every_pattern_alone<'s>(set: &'s PatternSet, text: &str) -> Option<&'s str> {
        let alone =
            |text: &str| set.patterns.iter().find(|p| p.fires_from(text, Alphabet::Unicode, 0, &set.placeholders));
        alone(text).or_else(|| set.views.iter().find_map(|v| alone(&v.of(text)?))).map(|p| p.id.as_str())
    }

    /// The corpus texts as sent and folded.
    fn corpus_texts() -> Vec<String> {
        [
            include_str!("../../corpus/benign.jsonl"),
            include_str!("../../corpus/provider-tokens.jsonl"),
            include_str!("../../corpus/private-keys.jsonl"),
            include_str!("../../corpus/generic-credentials.jsonl"),
            include_str!("../../corpus/injections.jsonl"),
            include_str!("../../corpus/forwarded-commands.jsonl"),
        ]
        .iter()
        .flat_map(|c| c.lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_owned))
        .flat_map(|t| [crate::normalize::fold(&t), t])
        .collect()
    }

    /// Every literal the prefilter looks for, each followed by a short random tail: the text
    /// that makes every pattern a candidate many times over.
    fn literal_soup(lib: &PatternLibrary, seed: u64) -> String {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        let literals: Vec<String> = lib
            .sets
            .values()
            .flat_map(|s| &s.patterns)
            .flat_map(|p| p.literals().all().iter().map(|l| String::from_utf8_lossy(l).into_owned()))
            .collect();
        let alnum = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-.:\"' \n";
        let mut out = String::new();
        while out.len() < 16 * 1024 {
            out.push_str(&literals[next() % literals.len()]);
            for _ in 0..next() % 48 {
                out.push(char::from(alnum[next() % alnum.len()]));
            }
        }
        out
    }

    /// The search answers exactly as every pattern run alone over the whole text: on the
    /// corpus as sent and folded, and on texts where every pattern is a candidate many
    /// times, through each set's own search and through the union of all sets.
    #[test]
    fn the_search_finds_what_every_pattern_alone_finds() {
        let lib = default_library();
        let names: Vec<String> = lib.names().map(str::to_owned).collect();
        let union = Union::build(&lib, &names).unwrap();
        let mut texts = corpus_texts();
        texts.extend((0..8).map(|seed| literal_soup(&lib, seed)));
        let mut found = 0;
        for text in &texts {
            let hits = union.scan(text);
            for (slot, name) in names.iter().enumerate() {
                let set = lib.get(name).unwrap();
                let want = every_pattern_alone(set, text);
                assert_eq!(set.find(text).map(|p| p.id.as_str()), want, "{name}: {text:?}");
                let through_union = union.found(&hits, slot, &lib, text).map(|i| set.patterns[i].id.as_str());
                assert_eq!(through_union, want, "{name} in the union: {text:?}");
                found += usize::from(want.is_some());
            }
        }
        assert!(found > 1000, "{found}");
    }

    /// A small set with a pattern of every kind the search tells apart: found by prefixes,
    /// by a prefix a few bytes into its matches, by a suffix, and none; with and
    /// without value checks, bounded and unbounded; one whose matches that do not count
    /// swallow places where a match would (`pp=aapp=abcd;`); and an alternation searched by
    /// its branches (two with prefixes, one without a literal).
    const KINDS: &str = "patterns:\n  - id: prefix-token\n    description: d\n    regex: '(?-u:\\b)tok_[A-Za-z0-9]{8,}'\n    min_entropy: 2.5\n  - id: prefix-bounded\n    description: d\n    regex: 'key=([a-z0-9]{4,12});'\n    group: 1\n    placeholders: true\n  - id: back\n    description: d\n    regex: '(?:^|[^a-z])zz9[a-z]{3}'\n  - id: suffix\n    description: d\n    regex: '[0-9]{2,6}:end'\n  - id: literal-free\n    description: d\n    regex: '[A-F]{3}[0-9]{3}'\n  - id: excluded\n    description: d\n    regex: '([A-Z_]*KEY)=([a-z]{6,})'\n    group: 2\n    exclude: 'PUBLIC'\n  - id: overlap\n    description: d\n    regex: 'pp=([a-z]*)[a-z=]*;'\n    group: 1\n    min_entropy: 1.5\n  - id: branches\n    description: d\n    regex: '(?:^|[^a-z])zz9z|_-[0-9]{2}|[A-F]{2}-[0-9]'\n";

    /// What [`KINDS`] texts are made of: its literals, values and near misses.
    const KIND_PIECES: &[&str] = &[
        "tok_", "TOK_", "key=", "KEY=", "PUBLIC_", "zz9", "ZZ9", ":end", "pp=", "ABC", "FFF", "123", "9", "a", "aa",
        "abc", "abcdef", "q8Zk3LmN", "xxxx", ";", "=", " ", "-", "_", "\n", "ſ", "é", "\u{212a}", "z", "_-",
    ];

    /// Texts of these few pieces make matches of the `overlap` pattern that do not count
    /// swallow places where one would, often.
    const OVERLAP_PIECES: &[&str] = &["pp=", "a", "abc", ";", "="];

    /// Pieces that random texts for the default pack are made of: every literal of the pack
    /// in both cases, fragments of values, separators, and characters that fold or combine.
    fn pieces(lib: &PatternLibrary) -> Vec<String> {
        let mut out: Vec<String> = lib
            .sets
            .values()
            .flat_map(|s| &s.patterns)
            .flat_map(|p| p.literals().all().iter().map(|l| String::from_utf8_lossy(l).into_owned()))
            .flat_map(|l| [l.to_ascii_uppercase(), l])
            .collect();
        out.sort();
        out.dedup();
        out.extend(KIND_PIECES.iter().map(|p| (*p).to_owned()));
        out.extend(
            ["0", "Z", "DEAD", "/", "+", "'", "\"", "  ", "\t", "|", "(", "$(", "{{", "}}", "\u{301}"]
                .map(String::from),
        );
        out
    }

    /// The search answers as every pattern alone on `text`, through each set of `lib` and
    /// through the union of all of them.
    fn agrees(lib: &PatternLibrary, text: &str) -> Result<(), proptest::test_runner::TestCaseError> {
        let names: Vec<String> = lib.names().map(str::to_owned).collect();
        let union = Union::build(lib, &names).unwrap();
        let hits = union.scan(text);
        for (slot, name) in names.iter().enumerate() {
            let set = lib.get(name).unwrap();
            let want = every_pattern_alone(set, text);
            proptest::prop_assert_eq!(set.find(text).map(|p| p.id.as_str()), want, "{}: {:?}", name, text);
            let through_union = union.found(&hits, slot, lib, text).map(|i| set.patterns[i].id.as_str());
            proptest::prop_assert_eq!(through_union, want, "{} in the union: {:?}", name, text);
        }
        Ok(())
    }

    static DEFAULT: std::sync::LazyLock<PatternLibrary> = std::sync::LazyLock::new(default_library);
    static KINDS_LIBRARY: std::sync::LazyLock<PatternLibrary> = std::sync::LazyLock::new(|| {
        let (lib, diags) = library(KINDS);
        assert!(diags.is_empty(), "{diags:?}");
        lib
    });

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// On random texts of literals, values and near misses, a set of every kind of
        /// pattern answers exactly as its patterns run alone over the whole text.
        #[test]
        fn every_kind_of_pattern_agrees_with_running_alone(picks in proptest::collection::vec(0..KIND_PIECES.len(), 0..40)) {
            let text: String = picks.iter().filter_map(|&i| KIND_PIECES.get(i).copied()).collect();
            agrees(&KINDS_LIBRARY, &text)?;
        }

        /// The same on texts of few pieces, where matches that do not count overlap places
        /// where one would.
        #[test]
        fn overlapping_matches_agree_with_running_alone(picks in proptest::collection::vec(0..OVERLAP_PIECES.len(), 0..24)) {
            let text: String = picks.iter().filter_map(|&i| OVERLAP_PIECES.get(i).copied()).collect();
            agrees(&KINDS_LIBRARY, &text)?;
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

        /// The same for the default pack, on random texts of its literals.
        #[test]
        fn the_default_pack_agrees_with_running_alone(picks in proptest::collection::vec(0usize..100_000, 0..120)) {
            let pieces = pieces(&DEFAULT);
            let text: String = picks.iter().map(|&i| pieces[i % pieces.len()].as_str()).collect();
            agrees(&DEFAULT, &text)?;
        }
    }

    /// An alternation without prefixes and without value checks is searched as its
    /// branches, those without a literal kept together as one; a pattern that checks values
    /// or starts with a literal is searched whole.
    #[test]
    fn alternations_without_prefixes_are_searched_by_branch() {
        let set = KINDS_LIBRARY.get("tokens").unwrap();
        let units = |id: &str| set.patterns.iter().find(|p| p.id == id).unwrap().units();
        let branches = units("branches");
        assert_eq!(branches.len(), 3, "{branches:?}");
        assert!(matches!(branches[0].literals(), Literals::Prefixes { .. }), "{:?}", branches[0].literals());
        assert!(matches!(branches[1].literals(), Literals::Prefixes { back: 0, .. }), "{:?}", branches[1].literals());
        assert_eq!(branches[2].literals(), &Literals::None);
        for whole in ["prefix-token", "back", "suffix", "literal-free", "overlap"] {
            assert_eq!(units(whole).len(), 1, "{whole}");
        }
        let (lib, diags) = library(
            "patterns:\n  - id: checked\n    description: d\n    regex: 'a[0-9]{4}:x|b[0-9]{4}|[0-9]{6}'\n    min_entropy: 1.0\n",
        );
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(lib.get("tokens").unwrap().patterns[0].units().len(), 1);
    }

    /// A literal found at every byte (one letter repeated) keeps only as many places as
    /// anchored searches pay for; past that the pattern is searched once from the first
    /// place, and finds the same matches: the value at the end, a match that does not
    /// count before it, or nothing.
    #[test]
    fn a_literal_found_everywhere_is_searched_once_from_its_first_place() {
        use crate::policy::search::Where;
        let (lib, diags) = library(
            "patterns:\n  - id: run\n    description: d\n    regex: 'aa([0-9]{6})'\n    group: 1\n    min_entropy: 2.0\n",
        );
        assert!(diags.is_empty(), "{diags:?}");
        let set = lib.get("tokens").unwrap();
        let search = Search::new(&set.patterns.iter().collect::<Vec<_>>());
        let run = "a".repeat(20_000);
        let found = |text: &str| set.first_in(text, &search, &search.scan(text), 0);
        assert!(matches!(search.scan(&run).place(0), Where::After(0)));
        assert_eq!(found(&format!("{run}xaa314159 ")), Some(0));
        assert_eq!(found(&format!("{run}111111 aa314159")), Some(0), "a value that counts after one that does not");
        assert_eq!(found(&format!("{run}111111")), None, "a value that does not count");
        assert_eq!(found(&run), None);
        // A few places are searched one by one, as before.
        let few = format!("{}aa1 aa314159", " ".repeat(1000));
        assert!(matches!(search.scan(&few).place(0), Where::From(_)));
        assert_eq!(found(&few), Some(0));
    }

    /// The library's patterns (branches of those searched by branches) without a literal.
    fn without_literals(lib: &PatternLibrary) -> Vec<&Pattern> {
        lib.sets
            .values()
            .flat_map(|s| &s.patterns)
            .flat_map(Pattern::units)
            .filter(|p| matches!(p.literals(), Literals::None))
            .collect()
    }

    /// Patterns without a literal are searched whole in every text, so each costs every
    /// message a pass: the default pack keeps them few (the ones left have only one-byte
    /// separators between classes, like Discord's `[MNO]…\.…\.…`). A pattern searched by
    /// branches counts by the branches it keeps without a literal.
    #[test]
    fn few_patterns_of_the_default_pack_are_searched_whole() {
        let lib = default_library();
        let whole: Vec<&str> = without_literals(&lib).iter().map(|p| p.id.as_str()).collect();
        let total: usize = lib.sets.values().map(|s| s.patterns.len()).sum();
        assert!(total > 600, "{total}");
        assert!(whole.len() <= 6, "{} of {total} patterns have no literal: {whole:?}", whole.len());
    }

    /// A random text that `hir` matches (but for look-arounds, which it ignores): each
    /// class a random member, each repetition a few more copies than it needs, each
    /// alternation a random branch.
    fn sample(hir: &Hir, next: &mut impl FnMut() -> usize, out: &mut String) {
        match hir.kind() {
            HirKind::Empty | HirKind::Look(_) => {}
            HirKind::Literal(lit) => out.push_str(&String::from_utf8_lossy(&lit.0)),
            HirKind::Class(Class::Unicode(c)) => {
                let r = c.ranges()[next() % c.ranges().len()];
                let span = u32::from(r.end()) - u32::from(r.start()) + 1;
                let at = u32::from(r.start()) + (next() as u32) % span;
                out.push(char::from_u32(at).unwrap_or(r.start()));
            }
            HirKind::Class(Class::Bytes(c)) => {
                let r = c.ranges()[next() % c.ranges().len()];
                let at = r.start() + (next() % (usize::from(r.end() - r.start()) + 1)) as u8;
                out.push(if at.is_ascii() { char::from(at) } else { 'é' });
            }
            HirKind::Repetition(r) => {
                let extra = r.max.map_or(3, |max| (max - r.min).min(3)) as usize;
                for _ in 0..r.min as usize + next() % (extra + 1) {
                    sample(&r.sub, next, out);
                }
            }
            HirKind::Capture(c) => sample(&c.sub, next, out),
            HirKind::Concat(items) => items.iter().for_each(|h| sample(h, next, out)),
            HirKind::Alternation(branches) => sample(&branches[next() % branches.len()], next, out),
        }
    }

    /// The patterns without literals are first searched together, to learn whether any of
    /// them can match: that search says no exactly when none of them matches alone. Tried
    /// on texts holding random matches of each of the default pack's patterns without a
    /// literal, whole or with a character changed or cut, between separators and noise.
    #[test]
    fn the_search_of_every_pattern_without_literals_says_whether_one_matches() {
        let lib = default_library();
        let free = without_literals(&lib);
        assert!(!free.is_empty());
        let search = Search::new(&free);
        let hirs: Vec<Hir> = free.iter().map(|p| parse(p.expression()).unwrap()).collect();
        let mut state = 11u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        let noise = ["", " ", "\n", "x", "_", "-", ".", ":", "/", "=", "\"", "token=", "Ab9", "é"];
        let (mut matched, mut missed) = (0, 0);
        for round in 0..3000 {
            let mut text = String::new();
            for _ in 0..1 + next() % 3 {
                text.push_str(noise[next() % noise.len()]);
                sample(&hirs[next() % hirs.len()], &mut next, &mut text);
                text.push_str(noise[next() % noise.len()]);
            }
            // A near miss: one character changed, or the text cut short.
            if round % 3 == 1 && !text.is_empty() {
                let at = next() % text.len();
                let at = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
                let end = at + text[at..].chars().next().map_or(0, char::len_utf8);
                if next() % 2 == 0 { text.truncate(at) } else { text.replace_range(at..end, "#") }
            }
            let alone = free.iter().any(|p| p.regex(Reading::Whole, Alphabet::Unicode).unwrap().is_match(&text));
            assert_eq!(search.free(&text, Alphabet::of(&text)), alone, "{text:?}");
            if alone { matched += 1 } else { missed += 1 }
        }
        assert!(matched > 500 && missed > 500, "{matched} matched, {missed} did not");
    }

    #[test]
    fn entropy() {
        assert_eq!(shannon_entropy(""), 0.0);
        assert_eq!(shannon_entropy("aaaa"), 0.0);
        assert!((shannon_entropy("abcd") - 2.0).abs() < 1e-9);
    }
}
