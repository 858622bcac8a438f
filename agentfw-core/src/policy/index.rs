//! The shape of a pattern's regex, and the index of the default pack's shapes.
//!
//! Loading a pattern parses its regex only to learn its [`Shape`]: the literals the
//! prefilter finds it by, its longest match, its capture groups and the branches it is
//! searched as. For the default pack's ~700 regexes that parsing was four fifths of every
//! `agentfw scan` start, though the answer never changes between runs. So the shapes of
//! the embedded pattern files are recorded in `rules/patterns/shapes.index`, and loading
//! looks a regex up there by its exact text before parsing it. A shape is a function of
//! the regex text alone, and the index holds only regexes that passed every check of
//! loading (they parse, match no empty string, compile within the size limit), so a
//! regex found there needs neither; any other regex, in the user's files or an edited
//! copy of the pack, is parsed and checked in full.
//!
//! The index is text, one record per regex, so that a change to a pattern file shows in
//! review as a change to its shape. The `pattern_index` test fails when it is stale and
//! says how to write it again.

use std::collections::{BTreeMap, HashMap};
use std::iter::Peekable;

use regex_syntax::hir::{Hir, HirKind};

use super::literals::Literals;
use super::patterns::PatternLibrary;

/// The index of the embedded pattern files, as checked in.
pub const EMBEDDED: &str = include_str!("../../rules/patterns/shapes.index");

/// What loading learns from a regex, and nothing else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub literals: Literals,
    /// The longest match in bytes, if the regex bounds it.
    pub max_len: Option<usize>,
    /// How many explicit capture groups it has.
    pub captures: usize,
    /// The units an alternation is searched as when its pattern checks no value (see
    /// [`Shape::of`]); empty to search it whole.
    pub split: Vec<Unit>,
}

/// One branch (or the branches without literals, as one alternation) of a split regex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    pub expression: String,
    pub literals: Literals,
    pub max_len: Option<usize>,
}

impl Unit {
    /// The unit `hir`, written back as a regex with every control character as an escape
    /// (`\x{0}`), which means the same: the index holds it on one line.
    fn of(hir: &Hir) -> Self {
        let mut expression = String::new();
        for c in hir.to_string().chars() {
            if c.is_control() {
                expression.push_str(&format!("\\x{{{:x}}}", u32::from(c)));
            } else {
                expression.push(c);
            }
        }
        Self { expression, literals: Literals::of(hir), max_len: hir.properties().maximum_len() }
    }
}

impl Shape {
    /// The shape of the parsed regex `hir`.
    ///
    /// The split: a pattern whose matches start with no common literal is searched over
    /// the whole text whenever one of its literals occurs anywhere; for a large
    /// alternation such as "any of twenty injection phrasings", whose literals are common
    /// words, that is every message. But when no value is checked, the pattern finds
    /// something exactly when one of its branches does, so each branch can be searched
    /// on its own, the way its own literals allow: most start with one, and are searched
    /// only where it occurs. The branches without a literal are kept together as one
    /// alternation, so that splitting never adds a search of the whole text. Patterns
    /// that check values are searched whole whatever the split: which of their matches a
    /// search meets depends on all branches at once.
    pub(crate) fn of(hir: &Hir) -> Self {
        let literals = Literals::of(hir);
        let split = match hir.kind() {
            HirKind::Alternation(alternatives) if !matches!(literals, Literals::Prefixes { .. }) => {
                let (mut found, mut rest) = (Vec::new(), Vec::new());
                for alternative in alternatives {
                    let unit = Unit::of(alternative);
                    if matches!(unit.literals, Literals::None) {
                        rest.push(alternative.clone())
                    } else {
                        found.push(unit)
                    }
                }
                if !found.is_empty() && !rest.is_empty() {
                    found.push(Unit::of(&Hir::alternation(rest)));
                }
                found
            }
            _ => Vec::new(),
        };
        let properties = hir.properties();
        Self { literals, max_len: properties.maximum_len(), captures: properties.explicit_captures_len(), split }
    }
}

/// Shapes looked up by the exact text of their regex.
#[derive(Debug, Default)]
pub(crate) struct Index {
    shapes: HashMap<String, Shape>,
}

impl Index {
    /// The index of the embedded pattern files. A record that does not read (which the
    /// `pattern_index` test rules out) is left out, and its regex is parsed instead.
    pub(crate) fn embedded() -> Self {
        Self::read(EMBEDDED)
    }

    pub(crate) fn get(&self, expression: &str) -> Option<&Shape> {
        self.shapes.get(expression)
    }

    /// Reads an index written by [`render`]: per regex a `p` line (groups, longest match,
    /// regex as written) and an `l` line (its literals), then per unit of its split a `u` line
    /// (longest match, regex) and an `l` line.
    fn read(text: &str) -> Self {
        let mut shapes = HashMap::new();
        let mut lines = text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).peekable();
        while let Some(line) = lines.next() {
            if let Some((expression, shape)) = record(line, &mut lines) {
                shapes.insert(expression, shape);
            }
        }
        Self { shapes }
    }
}

/// The regex and shape of the record whose `p` line is `line`, reading its other lines.
fn record<'t>(line: &str, lines: &mut Peekable<impl Iterator<Item = &'t str>>) -> Option<(String, Shape)> {
    let mut fields = line.strip_prefix("p\t")?.splitn(3, '\t');
    let captures = fields.next()?.parse().ok()?;
    let max_len = read_len(fields.next()?)?;
    let expression = fields.next()?.to_owned();
    let literals = read_literals(lines.next()?)?;
    let mut split = Vec::new();
    while let Some(unit) = lines.next_if(|l| l.starts_with("u\t")) {
        let (max_len, expression) = unit.get(2..)?.split_once('\t')?;
        let (max_len, expression) = (read_len(max_len)?, expression.to_owned());
        split.push(Unit { expression, literals: read_literals(lines.next()?)?, max_len });
    }
    Some((expression, Shape { literals, max_len, captures, split }))
}

/// The index of every regex of `library`, each parsed again (not looked up), sorted by
/// regex: what `rules/patterns/shapes.index` must hold for the embedded pattern files. A
/// regex with a tab or a line break written into it is left out (and parsed at load): the
/// index holds one regex per line, as written.
pub fn render(library: &PatternLibrary) -> String {
    let mut shapes = BTreeMap::new();
    for name in library.names() {
        for pattern in library.get(name).map(|set| set.patterns()).unwrap_or_default() {
            let expression = pattern.expression();
            if let Ok(hir) = regex_syntax::parse(expression) {
                let shape = Shape::of(&hir);
                if !expression.contains(char::is_control) {
                    shapes.insert(expression, shape);
                }
            }
        }
    }
    let mut out = String::from(
        "# The shapes of the default pack's regexes (agentfw-core/src/policy/index.rs), read when\n\
         # the pack loads instead of parsing them. Generated: do not edit. After changing a\n\
         # pattern file, write it again with\n\
         #   AGENTFW_BLESS=1 cargo test -p agentfw-core --test pattern_index\n",
    );
    for (expression, shape) in shapes {
        let max = |m: Option<usize>| m.map_or_else(|| "-".to_owned(), |m| m.to_string());
        out.push_str(&format!("p\t{}\t{}\t{expression}\n", shape.captures, max(shape.max_len)));
        write_literals(&mut out, &shape.literals);
        for unit in &shape.split {
            out.push_str(&format!("u\t{}\t{}\n", max(unit.max_len), unit.expression));
            write_literals(&mut out, &unit.literals);
        }
    }
    out
}

/// An `l` line: `l\tP<back>` then the prefixes, `l\tI` then the literals held inside, or
/// `l\t-`; tab-separated, each literal [escaped](escape) (a literal may end inside a
/// character, or hold a tab).
fn write_literals(out: &mut String, literals: &Literals) {
    let kind = match literals {
        Literals::Prefixes { back, .. } => format!("P{back}"),
        Literals::Inside(_) => "I".to_owned(),
        Literals::None => "-".to_owned(),
    };
    out.push_str("l\t");
    out.push_str(&kind);
    for literal in literals.all() {
        out.push('\t');
        out.push_str(&escape(literal));
    }
    out.push('\n');
}

fn read_literals(line: &str) -> Option<Literals> {
    let mut fields = line.strip_prefix("l\t")?.split('\t');
    let kind = fields.next()?;
    let list = || fields.map(unescape).collect::<Option<Vec<_>>>();
    match kind {
        "-" => Some(Literals::None),
        "I" => Some(Literals::Inside(list()?)),
        _ => Some(Literals::Prefixes { back: kind.strip_prefix('P')?.parse().ok()?, literals: list()? }),
    }
}

fn read_len(field: &str) -> Option<Option<usize>> {
    if field == "-" { Some(None) } else { field.parse().ok().map(Some) }
}

/// Printable ASCII as is, `\` doubled, every other byte as `\xNN`.
fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            0x20..0x7f => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

fn unescape(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next()? {
            b'\\' => out.push(b'\\'),
            b'x' => {
                let hex = [bytes.next()?, bytes.next()?];
                out.push(u8::from_str_radix(core::str::from_utf8(&hex).ok()?, 16).ok()?);
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(unescape(&escape(&all)).unwrap(), all);
        assert_eq!(escape(b"a\\b\tc"), "a\\\\b\\x09c");
        assert!(unescape("\\x4").is_none());
        assert!(unescape("\\y41").is_none());
    }

    /// Every regex of the default pack is in the index, and reads back from it with the
    /// shape parsing it gives: the index is read as it is written.
    #[test]
    fn the_embedded_index_reads_back_the_shapes_of_the_default_pack() {
        let mut diags = Vec::new();
        let library = PatternLibrary::compile(&super::super::pack::pattern_files(), Default::default(), &mut diags);
        assert!(diags.is_empty(), "{diags:?}");
        let index = Index::embedded();
        for name in library.names() {
            for pattern in library.get(name).unwrap().patterns() {
                let hir = regex_syntax::parse(pattern.expression()).unwrap();
                let shape = index.get(pattern.expression());
                assert_eq!(
                    shape,
                    Some(&Shape::of(&hir)),
                    "`{}` is not in the index as parsed: write it again with \
                     AGENTFW_BLESS=1 cargo test -p agentfw-core --test pattern_index",
                    pattern.id
                );
            }
        }
    }

    #[test]
    fn a_split_alternation_keeps_its_branches_without_literals_together() {
        let shape =
            Shape::of(&regex_syntax::parse("ignore previous|forget (?:all|the) rules|[0-9]+x|[a-z]+y").unwrap());
        let units: Vec<&str> = shape.split.iter().map(|u| u.expression.as_str()).collect();
        assert_eq!(units.len(), 3, "{units:?}");
        assert!(matches!(shape.split.last().unwrap().literals, Literals::Inside(_) | Literals::None));
        let whole = Shape::of(&regex_syntax::parse("(?:ghp|gho)_[a-z]{4}").unwrap());
        assert!(whole.split.is_empty());
    }
}
