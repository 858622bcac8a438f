//! Diagnostics for rule, pattern and case files: where, what, and how to fix it.
//!
//! A diagnostic names the file, line and column, quotes the line with a caret under the
//! offending text, carries a stable code (`policy.unknown_variable`) that tools and tests
//! can match on, and a hint. They render like compiler errors:
//!
//! ```text
//! error[policy.unknown_variable]: `message.bdy` is not something a rule can read
//!  --> rules/custom.yaml:4:24
//!   |
//! 4 |   message.hops >= 2 && message.bdy.matches('curl')
//!   |                        ^^^^^^^^^^^
//!   = help: did you mean `message.body`?
//! ```

use core::fmt;

/// A file handed to the policy loader: its name (used only in diagnostics) and its text.
/// The core reads no files itself; the caller does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self { name: name.into(), text: text.into() }
    }
}

/// A range of characters in a source file: `start` inclusive, `end` exclusive, both counted
/// in `char`s from the start of the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub(crate) fn new(start: usize, end: usize) -> Self {
        Self { start, end: end.max(start) }
    }
}

/// One problem found while loading a rule set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// A stable identifier such as `policy.unknown_variable`.
    pub code: &'static str,
    pub message: String,
    /// The file's name as the caller gave it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// How many characters the caret underlines (at least one).
    pub width: usize,
    /// The quoted source line, without its line break.
    pub source_line: String,
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A diagnostic for `span` of `file`.
    pub(crate) fn at(code: &'static str, message: impl Into<String>, file: &SourceFile, span: Span) -> Self {
        let (line, column, source_line) = locate(&file.text, span.start);
        let line_chars = source_line.chars().count();
        let room = line_chars.saturating_sub(column.saturating_sub(1)).max(1);
        let width = span.end.saturating_sub(span.start).clamp(1, room);
        Self { code, message: message.into(), file: file.name.clone(), line, column, width, source_line, hint: None }
    }

    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// The 1-based line and column of char offset `at`, and that line's text.
fn locate(text: &str, at: usize) -> (usize, usize, String) {
    let mut line = 1;
    let mut line_start = 0;
    for (i, c) in text.chars().enumerate() {
        if i >= at {
            break;
        }
        if c == '\n' {
            line += 1;
            line_start = i + 1;
        }
    }
    let source_line: String =
        text.chars().skip(line_start).take_while(|&c| c != '\n').collect::<String>().trim_end_matches('\r').to_owned();
    (line, at.saturating_sub(line_start) + 1, source_line)
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let number = self.line.to_string();
        let gutter = " ".repeat(number.len());
        writeln!(f, "error[{}]: {}", self.code, self.message)?;
        writeln!(f, "{gutter}--> {}:{}:{}", self.file, self.line, self.column)?;
        writeln!(f, "{gutter} |")?;
        writeln!(f, "{number} | {}", self.source_line)?;
        // Keep tabs so the caret lines up with the quoted text.
        let pad: String = self
            .source_line
            .chars()
            .take(self.column.saturating_sub(1))
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        write!(f, "{gutter} | {pad}{}", "^".repeat(self.width))?;
        if let Some(hint) = &self.hint {
            write!(f, "\n{gutter} = help: {hint}")?;
        }
        Ok(())
    }
}

/// Every problem found in one load, in file order. Loading reports them all at once rather
/// than stopping at the first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n\n")?;
            }
            fmt::Display::fmt(d, f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_caret_under_the_span() {
        let file = SourceFile::new("r.yaml", "id: x\nwhen: message.bdy == 1\n");
        let d = Diagnostic::at("policy.test", "bad", &file, Span::new(12, 23)).with_hint("try again");
        assert_eq!((d.line, d.column, d.width), (2, 7, 11));
        assert_eq!(
            d.to_string(),
            "error[policy.test]: bad\n --> r.yaml:2:7\n  |\n2 | when: message.bdy == 1\n  |       ^^^^^^^^^^^\n  = help: try again"
        );
    }

    #[test]
    fn a_span_past_the_end_points_at_the_last_line() {
        let file = SourceFile::new("r.yaml", "a\nb");
        let d = Diagnostic::at("policy.test", "bad", &file, Span::new(3, 3));
        assert_eq!((d.line, d.column, d.width), (2, 2, 1));
    }
}
