//! A small YAML reader that keeps where every value was written, so diagnostics can point
//! at the exact key or value in a rule, pattern or case file.

use saphyr_parser::{Event, Parser, ScalarStyle};

use super::diagnostic::{Diagnostic, SourceFile, Span};

/// A YAML value and the characters it was written on.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub kind: NodeKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(crate) enum NodeKind {
    Scalar { value: String, quoted: bool },
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// The text of a scalar.
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Scalar { value, .. } => Some(value),
            _ => None,
        }
    }

    /// A plain (unquoted) `null`, `~` or empty scalar.
    pub fn is_null(&self) -> bool {
        matches!(&self.kind, NodeKind::Scalar { value, quoted: false } if matches!(value.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }

    pub fn what(&self) -> &'static str {
        match self.kind {
            NodeKind::Scalar { .. } => "a scalar",
            NodeKind::Seq(_) => "a list",
            NodeKind::Map(_) => "a mapping",
        }
    }
}

/// Which file format a diagnostic is about: its codes start with `policy.` or `trust.`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Domain {
    Policy,
    Trust,
}

impl Domain {
    pub fn yaml(self) -> &'static str {
        match self {
            Domain::Policy => "policy.yaml",
            Domain::Trust => "trust.yaml",
        }
    }

    pub fn invalid_value(self) -> &'static str {
        match self {
            Domain::Policy => "policy.invalid_value",
            Domain::Trust => "trust.invalid_value",
        }
    }

    pub fn unknown_field(self) -> &'static str {
        match self {
            Domain::Policy => "policy.unknown_field",
            Domain::Trust => "trust.unknown_field",
        }
    }

    pub fn missing_field(self) -> &'static str {
        match self {
            Domain::Policy => "policy.missing_field",
            Domain::Trust => "trust.missing_field",
        }
    }
}

/// Every document in `file`, each as one node tree.
pub(crate) fn documents(file: &SourceFile) -> Result<Vec<Node>, Box<Diagnostic>> {
    documents_in(Domain::Policy, file)
}

/// [`documents`], with diagnostic codes of `domain`.
pub(crate) fn documents_in(domain: Domain, file: &SourceFile) -> Result<Vec<Node>, Box<Diagnostic>> {
    let mut builder = Builder { domain, ..Builder::default() };
    for item in Parser::new_from_str(&file.text) {
        let (event, span) = item.map_err(|e| {
            let at = e.marker().index();
            Box::new(
                Diagnostic::at(
                    domain.yaml(),
                    format!("this is not valid YAML: {}", e.info()),
                    file,
                    Span::new(at, at + 1),
                )
                .with_hint("check the indentation and the quoting around this point"),
            )
        })?;
        let span = Span::new(span.start.index(), span.end.index());
        builder.event(event, span, file)?;
    }
    Ok(builder.documents)
}

enum Open {
    Seq(Span, Vec<Node>),
    Map(Span, Vec<(Node, Node)>, Option<Node>),
}

struct Builder {
    domain: Domain,
    stack: Vec<Open>,
    documents: Vec<Node>,
}

impl Default for Builder {
    fn default() -> Self {
        Self { domain: Domain::Policy, stack: Vec::new(), documents: Vec::new() }
    }
}

impl Builder {
    fn event(&mut self, event: Event<'_>, span: Span, file: &SourceFile) -> Result<(), Box<Diagnostic>> {
        match event {
            Event::Scalar(value, style, _, _) => {
                let quoted = !matches!(style, ScalarStyle::Plain);
                self.add(Node { kind: NodeKind::Scalar { value: value.into_owned(), quoted }, span });
            }
            Event::SequenceStart(_, _) => self.stack.push(Open::Seq(span, Vec::new())),
            Event::MappingStart(_, _) => self.stack.push(Open::Map(span, Vec::new(), None)),
            Event::SequenceEnd | Event::MappingEnd => {
                let node = match self.stack.pop() {
                    Some(Open::Seq(start, items)) => {
                        Node { kind: NodeKind::Seq(items), span: Span::new(start.start, span.end) }
                    }
                    Some(Open::Map(start, entries, _)) => {
                        Node { kind: NodeKind::Map(entries), span: Span::new(start.start, span.end) }
                    }
                    None => return Ok(()),
                };
                self.add(node);
            }
            Event::Alias(_) => {
                return Err(Box::new(
                    Diagnostic::at(self.domain.yaml(), "YAML aliases are not supported here", file, span)
                        .with_hint("write the value out in full"),
                ));
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentStart(_) | Event::DocumentEnd => {}
        }
        Ok(())
    }

    fn add(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => self.documents.push(node),
            Some(Open::Seq(_, items)) => items.push(node),
            Some(Open::Map(_, entries, pending)) => match pending.take() {
                None => *pending = Some(node),
                Some(key) => entries.push((key, node)),
            },
        }
    }
}

/// Char offsets in the file of each character of a scalar's value, found by walking the
/// value and the source side by side. Quotes, escapes, indentation and folded line breaks
/// exist only in the source, so a value character maps to the next source character equal
/// to it (any whitespace matches any whitespace). Good enough to put a caret under the
/// right word of a CEL expression written in any YAML scalar style.
pub(crate) fn char_positions(file: &SourceFile, node: &Node, value: &str) -> Vec<usize> {
    let source: Vec<char> = file
        .text
        .chars()
        .skip(node.span.start)
        .take(node.span.end.saturating_sub(node.span.start).max(1) + 4096)
        .collect();
    let mut positions = Vec::with_capacity(value.len() + 1);
    let mut at = 0usize;
    for c in value.chars() {
        let mut probe = at;
        let found = loop {
            match source.get(probe) {
                None => break None,
                Some(&s) if s == c || (s.is_whitespace() && c.is_whitespace()) => break Some(probe),
                Some(_) => probe += 1,
            }
        };
        match found {
            Some(p) => {
                positions.push(node.span.start + p);
                at = p + 1;
            }
            None => positions.push(node.span.start + at),
        }
    }
    positions.push(node.span.start + at);
    positions
}

/// The keys of one mapping, checked against the keys a file format allows.
pub(crate) struct Fields<'n> {
    entries: &'n [(Node, Node)],
    span: Span,
    domain: Domain,
}

impl<'n> Fields<'n> {
    /// Reads `node` as a mapping whose keys must be among `known`; anything else is reported
    /// into `diags` (and `None` returned if `node` is not a mapping at all).
    pub fn of(
        node: &'n Node,
        what: &str,
        known: &[&str],
        file: &SourceFile,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<Self> {
        Self::of_in(Domain::Policy, node, what, known, file, diags)
    }

    /// [`Fields::of`], with diagnostic codes of `domain`.
    pub fn of_in(
        domain: Domain,
        node: &'n Node,
        what: &str,
        known: &[&str],
        file: &SourceFile,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<Self> {
        let NodeKind::Map(entries) = &node.kind else {
            diags.push(
                Diagnostic::at(
                    domain.invalid_value(),
                    format!("expected {what} as a mapping of keys to values, found {}", node.what()),
                    file,
                    node.span,
                )
                .with_hint(format!("{what} has the keys {}", list(known))),
            );
            return None;
        };
        for (key, _) in entries {
            let name = key.as_str().unwrap_or_default();
            if !known.contains(&name) {
                let mut d =
                    Diagnostic::at(domain.unknown_field(), format!("{what} has no field `{name}`"), file, key.span);
                d = match closest(name, known) {
                    Some(near) => d.with_hint(format!("did you mean `{near}`?")),
                    None => d.with_hint(format!("{what} has the keys {}", list(known))),
                };
                diags.push(d);
            }
        }
        Some(Self { entries, span: node.span, domain })
    }

    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
    }

    /// The value of `key`, or a `policy.missing_field` diagnostic.
    pub fn require(&self, key: &str, what: &str, file: &SourceFile, diags: &mut Vec<Diagnostic>) -> Option<&'n Node> {
        let found = self.get(key);
        if found.is_none() {
            let at = self.entries.first().map_or(self.span, |(k, _)| k.span);
            diags.push(
                Diagnostic::at(self.domain.missing_field(), format!("{what} has no `{key}`"), file, at)
                    .with_hint(format!("add `{key}:` to {what}")),
            );
        }
        found
    }

    /// The value of `key` as a string, with a diagnostic if it is something else.
    pub fn string(
        &self,
        key: &str,
        what: &str,
        file: &SourceFile,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<(&'n str, &'n Node)> {
        let node = self.require(key, what, file, diags)?;
        match node.as_str() {
            Some(s) if !s.trim().is_empty() => Some((s, node)),
            _ => {
                diags.push(
                    Diagnostic::at(
                        self.domain.invalid_value(),
                        format!("`{key}` of {what} must be a non-empty string"),
                        file,
                        node.span,
                    )
                    .with_hint(format!("write `{key}:` followed by text")),
                );
                None
            }
        }
    }
}

/// `a`, `b` and `c`
pub(crate) fn list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("`{i}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The candidate nearest to `word` by edit distance, if it is plausibly a typo of it.
pub(crate) fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4) && *d < c.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row.first().copied().unwrap_or(0);
        if let Some(first) = row.first_mut() {
            *first = i + 1;
        }
        for (j, cb) in b.iter().enumerate() {
            let above = row.get(j + 1).copied().unwrap_or(usize::MAX);
            let left = row.get(j).copied().unwrap_or(usize::MAX);
            let value = if ca == *cb { prev } else { 1 + prev.min(above).min(left) };
            prev = above;
            if let Some(cell) = row.get_mut(j + 1) {
                *cell = value;
            }
        }
    }
    row.last().copied().unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("bdy", "body"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("verdict", "verdict"), 0);
        assert_eq!(closest("verdit", &["id", "verdict", "reason"]), Some("verdict"));
        assert_eq!(closest("zzz", &["id", "verdict", "reason"]), None);
    }

    #[test]
    fn maps_value_chars_back_to_a_folded_scalar() {
        let file = SourceFile::new("f", "when: >\n  a &&\n  b\n");
        let docs = documents(&file).unwrap();
        let NodeKind::Map(entries) = &docs[0].kind else { unreachable!("a mapping") };
        let when = &entries[0].1;
        let value = when.as_str().unwrap();
        assert_eq!(value, "a && b\n");
        let pos = char_positions(&file, when, value);
        let text: Vec<char> = file.text.chars().collect();
        assert_eq!(text[pos[0]], 'a');
        assert_eq!(text[pos[5]], 'b');
    }
}
