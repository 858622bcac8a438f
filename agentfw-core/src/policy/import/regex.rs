//! Regexes written for Go's `regexp` (gitleaks) or for Hyperscan/PCRE (Kingfisher),
//! rewritten for the Rust regex crate, or refused with the reason.
//!
//! The dialects differ in three ways that matter here:
//! - Go's `\b`, `\w`, `\d` and `\s` are ASCII; Rust's are Unicode. They become their ASCII
//!   forms (`(?-u:\b)`, `[0-9A-Za-z_]`…), so a converted pattern finds what it found before.
//! - Go and PCRE quote with `\Q…\E`, and PCRE has `\h`, `\Z`, `(?'name'…)`, possessive
//!   quantifiers and atomic groups; Rust has none of them. Quotes are escaped, `\h` spelled
//!   out, and the rest replaced by their nearest Rust form, with a note saying what changed.
//! - Look-around and back-references have no linear-time equivalent and are refused.
//!
//! Extended mode (`(?x)`, common in Kingfisher rules) is flattened: comments and free
//! spacing are removed, so the pattern fits on one line of a pattern file.

/// A regex rewritten for Rust, with what had to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Translated {
    pub regex: String,
    pub notes: Vec<String>,
}

/// Why a regex cannot be converted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    #[error("it uses look-around (`{0}`), which the linear-time regex engine does not support")]
    LookAround(String),
    #[error("it uses a back-reference (`{0}`), which the linear-time regex engine does not support")]
    BackReference(String),
    #[error("it uses `{0}`, which has no equivalent in Rust regex syntax")]
    Unsupported(String),
    #[error("the rewritten regex does not compile: {0}")]
    Compile(String),
}

/// Rewrites `source` for the Rust regex crate.
pub fn translate(source: &str) -> Result<Translated, TranslateError> {
    let mut t = Translator { chars: source.chars().collect(), pos: 0, out: String::new(), notes: Vec::new() };
    t.run(false)?;
    let regex = t.out;
    if let Err(e) = regex::RegexBuilder::new(&regex).size_limit(4 << 20).build() {
        let detail = e.to_string();
        let last = detail.lines().rev().find_map(|l| l.trim().strip_prefix("error: ")).unwrap_or(&detail);
        return Err(TranslateError::Compile(last.to_owned()));
    }
    let mut notes = t.notes;
    notes.dedup();
    Ok(Translated { regex, notes })
}

struct Translator {
    chars: Vec<char>,
    pos: usize,
    out: String,
    notes: Vec<String>,
}

impl Translator {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn starts_with(&self, s: &str) -> bool {
        s.chars().enumerate().all(|(i, c)| self.peek(i) == Some(c))
    }

    fn note(&mut self, note: &str) {
        if !self.notes.iter().any(|n| n == note) {
            self.notes.push(note.to_owned());
        }
    }

    /// Copies a group's contents (or the whole pattern) until its `)`. `extended` is
    /// whether free spacing is on where the group starts.
    fn run(&mut self, mut extended: bool) -> Result<(), TranslateError> {
        while let Some(c) = self.peek(0) {
            match c {
                ')' => return Ok(()),
                '(' => self.group(&mut extended)?,
                '[' => self.class()?,
                '\\' => self.escape(false)?,
                '#' if extended => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                c if extended && c.is_whitespace() => self.pos += 1,
                '*' | '+' | '?' | '}' => {
                    self.out.push(c);
                    self.pos += 1;
                    if self.peek(0) == Some('+') {
                        // PCRE's possessive `a*+` never gives back; a linear-time engine has
                        // no backtracking to give back from, so the greedy form matches the
                        // same or more.
                        self.pos += 1;
                        self.note("possessive quantifiers became greedy ones");
                    }
                }
                _ => {
                    self.out.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(())
    }

    fn group(&mut self, extended: &mut bool) -> Result<(), TranslateError> {
        for look in ["(?=", "(?!", "(?<=", "(?<!", "(*"] {
            if self.starts_with(look) {
                return Err(TranslateError::LookAround(look.to_owned()));
            }
        }
        if self.starts_with("(?>") {
            self.pos += 3;
            self.out.push_str("(?:");
            self.note("atomic groups `(?>…)` became plain groups");
            return self.close_group(*extended);
        }
        if self.starts_with("(?'") {
            self.pos += 3;
            let name: String =
                self.chars.get(self.pos..).unwrap_or_default().iter().take_while(|&&c| c != '\'').collect();
            self.pos += name.chars().count() + 1;
            self.out.push_str(&format!("(?P<{name}>"));
            return self.close_group(*extended);
        }
        if self.starts_with("(?#") {
            while self.peek(0).is_some_and(|c| c != ')') {
                self.pos += 1;
            }
            self.pos += 1;
            return Ok(());
        }
        if self.starts_with("(?") && !self.starts_with("(?P") && !self.starts_with("(?<") {
            // Flags: `(?flags)` for the rest of the enclosing group, `(?flags:…)` for a group.
            let mut end = self.pos + 2;
            while self.chars.get(end).is_some_and(|c| c.is_ascii_alphabetic() || *c == '-') {
                end += 1;
            }
            let flags: String = self.chars.get(self.pos + 2..end).unwrap_or_default().iter().collect();
            let (on, off) = flags.split_once('-').unwrap_or((&flags, ""));
            let kept: String = flags.chars().filter(|&c| c != 'x').collect();
            let inner_extended = if off.contains('x') { false } else { *extended || on.contains('x') };
            match self.chars.get(end) {
                Some(')') => {
                    self.pos = end + 1;
                    *extended = inner_extended;
                    if !kept.is_empty() && kept != "-" {
                        self.out.push_str(&format!("(?{})", kept.trim_end_matches('-')));
                    }
                    return Ok(());
                }
                Some(':') => {
                    self.pos = end + 1;
                    let kept = kept.trim_end_matches('-');
                    self.out.push_str(&format!("(?{kept}:"));
                    return self.close_group(inner_extended);
                }
                _ => return Err(TranslateError::Unsupported(format!("(?{flags}"))),
            }
        }
        // A plain or named group: copy its opening as is.
        self.out.push('(');
        self.pos += 1;
        if self.peek(0) == Some('?') {
            while let Some(c) = self.peek(0) {
                self.out.push(c);
                self.pos += 1;
                if c == '>' {
                    break;
                }
            }
        }
        self.close_group(*extended)
    }

    fn close_group(&mut self, extended: bool) -> Result<(), TranslateError> {
        self.run(extended)?;
        if self.peek(0) == Some(')') {
            self.pos += 1;
        }
        self.out.push(')');
        Ok(())
    }

    fn class(&mut self) -> Result<(), TranslateError> {
        self.out.push('[');
        self.pos += 1;
        if self.peek(0) == Some('^') {
            self.out.push('^');
            self.pos += 1;
        }
        // A `]` first in a class is a literal.
        if self.peek(0) == Some(']') {
            self.out.push_str("\\]");
            self.pos += 1;
        }
        while let Some(c) = self.peek(0) {
            match c {
                ']' => {
                    self.out.push(']');
                    self.pos += 1;
                    return Ok(());
                }
                '\\' => self.escape(true)?,
                '[' if self.peek(1) == Some(':') => {
                    while let Some(c) = self.peek(0) {
                        self.out.push(c);
                        self.pos += 1;
                        if c == ']' {
                            break;
                        }
                    }
                }
                // Rust reads `[` inside a class as a nested class, `&&`, `--` and `~~` as set
                // operations; Go and PCRE read them as literals.
                '[' | '&' | '~' => {
                    self.out.push('\\');
                    self.out.push(c);
                    self.pos += 1;
                }
                '-' if self.peek(1) == Some('-') => {
                    self.out.push_str("\\-");
                    self.pos += 1;
                }
                _ => {
                    self.out.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(())
    }

    fn escape(&mut self, in_class: bool) -> Result<(), TranslateError> {
        let Some(c) = self.peek(1) else {
            self.out.push_str("\\\\");
            self.pos += 1;
            return Ok(());
        };
        self.pos += 2;
        let ascii = |class: &str, name: &str| if in_class { class.to_owned() } else { format!("[{name}]") };
        let text = match c {
            'b' if !in_class => "(?-u:\\b)".to_owned(),
            'B' if !in_class => "(?-u:\\B)".to_owned(),
            'w' => ascii("0-9A-Za-z_", "0-9A-Za-z_"),
            'd' => ascii("0-9", "0-9"),
            's' => ascii("\\t\\n\\x0C\\r ", "\\t\\n\\x0C\\r "),
            'h' => ascii("\\t ", "\\t "),
            'W' => ascii("[:^word:]", "[:^word:]"),
            'D' => ascii("[:^digit:]", "[:^digit:]"),
            'S' => ascii("[:^space:]", "[:^space:]"),
            'Z' => {
                self.note("`\\Z` became `\\z`: a final line break is no longer skipped");
                "\\z".to_owned()
            }
            'Q' => {
                let mut literal = String::new();
                while self.pos < self.chars.len() && !self.starts_with("\\E") {
                    literal.extend(self.peek(0));
                    self.pos += 1;
                }
                self.pos += 2;
                regex::escape(&literal)
            }
            'E' => String::new(),
            'C' => return Err(TranslateError::Unsupported("\\C".to_owned())),
            'R' | 'X' | 'K' | 'G' => return Err(TranslateError::Unsupported(format!("\\{c}"))),
            'k' | 'g' => return Err(TranslateError::BackReference(format!("\\{c}"))),
            '1'..='9' => return Err(TranslateError::BackReference(format!("\\{c}"))),
            '0' => {
                let digits: String = self
                    .chars
                    .get(self.pos..)
                    .unwrap_or_default()
                    .iter()
                    .take(2)
                    .take_while(|c| c.is_digit(8))
                    .collect();
                self.pos += digits.chars().count();
                let value = u32::from_str_radix(&format!("0{digits}"), 8).unwrap_or(0);
                format!("\\x{{{value:X}}}")
            }
            '/' | '"' | '\'' | '<' | '>' | '@' | '%' | '=' | ',' | ';' | ':' | '!' | '`' => c.to_string(),
            _ => format!("\\{c}"),
        };
        self.out.push_str(&text);
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ok(go: &str) -> String {
        translate(go).unwrap().regex
    }

    #[test]
    fn ascii_classes_stay_ascii() {
        assert_eq!(ok(r"\bghp_\w{36}\b"), r"(?-u:\b)ghp_[0-9A-Za-z_]{36}(?-u:\b)");
        assert_eq!(ok(r"[\w.-]+@\d"), r"[0-9A-Za-z_.-]+@[0-9]");
        let re = regex::Regex::new(&ok(r"\bkey\s*=\s*\S+")).unwrap();
        assert!(re.is_match("key = abc"));
        // Go's \w does not match a non-ASCII letter; neither does the translation.
        assert!(!regex::Regex::new(&format!("^{}$", ok(r"\w+"))).unwrap().is_match("héllo"));
    }

    #[test]
    fn extended_mode_is_flattened() {
        let kingfisher = "(?xi)\n  \\b\n  (\n    abc_[a-z0-9]{8}   # the token\n  )\n  \\b\n";
        assert_eq!(ok(kingfisher), "(?i)(?-u:\\b)(abc_[a-z0-9]{8})(?-u:\\b)");
        // A `#` in a class is not a comment, nor is an escaped space dropped.
        assert_eq!(ok("(?x) [#] \\  a"), "[#]\\ a");
    }

    #[test]
    fn pcre_only_syntax_is_rewritten_with_notes() {
        let t = translate(r"(?>ab)c++\Z").unwrap();
        assert_eq!(t.regex, r"(?:ab)c+\z");
        assert_eq!(t.notes.len(), 3, "{:?}", t.notes);
        assert_eq!(ok(r"\Qa.b*\E+"), r"a\.b\*+");
        assert_eq!(ok(r"(?'tok'x)"), r"(?P<tok>x)");
        assert_eq!(ok(r"[[a&&b]"), r"[\[a\&\&b]");
    }

    #[test]
    fn look_around_and_back_references_are_refused() {
        assert_eq!(translate("foo(?=bar)"), Err(TranslateError::LookAround("(?=".into())));
        assert_eq!(translate("(?<!x)y"), Err(TranslateError::LookAround("(?<!".into())));
        assert_eq!(translate(r"(a)\1"), Err(TranslateError::BackReference(r"\1".into())));
        assert!(matches!(translate("a{2,1}"), Err(TranslateError::Compile(_))));
    }
}
