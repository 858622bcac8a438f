//! `agentfw rules import`: a user's existing secret-scanner rules (gitleaks TOML, Kingfisher
//! YAML) turned into an agentfw pattern file, with a finding for everything that could not
//! be carried over exactly.
//!
//! What converts: the regex (rewritten for the Rust regex crate, see [`regex`]), the
//! capture group that holds the secret, the minimum entropy, the description and the
//! documentation link. What cannot: look-around and back-references (the rule is skipped),
//! file-path conditions and allow-lists (messages have no path, and the pattern format has
//! no per-pattern allow-list, so the pattern may match more than the rule did), and
//! Kingfisher's live HTTP validation and multi-part dependencies (agentfw never calls out).
//! Every one of them is reported, with the rule and its line.

pub mod regex;

use core::fmt;

use super::diagnostic::SourceFile;
use super::patterns::PatternLibrary;
use super::yaml::{self, Node, NodeKind};

/// The formats `agentfw rules import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// gitleaks' TOML configuration (`[[rules]]` with `id`, `regex`, `secretGroup`,
    /// `entropy`, `keywords`, `path`, `allowlists`).
    Gitleaks,
    /// Kingfisher's YAML rules (`rules:` with `name`, `id`, `pattern`, `min_entropy`,
    /// `examples`, `references`, `validation`).
    Kingfisher,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Gitleaks => "gitleaks",
            Format::Kingfisher => "kingfisher",
        }
    }
}

/// The pattern file made from a rule file, and what did not carry over.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversion {
    /// The pattern file's text, ready to save under `patterns/NAME.yaml`.
    pub yaml: String,
    /// Rules in the input, and how many became patterns.
    pub rules: usize,
    pub converted: usize,
    pub findings: Vec<Finding>,
}

/// Something about one rule that did not convert exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Whether the rule was left out, or converted with a difference.
    pub skipped: bool,
    /// The rule's id in the input, and the line it starts on.
    pub rule: String,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (level, what) = if self.skipped { ("error", "not converted") } else { ("warning", "converted") };
        write!(f, "{level}: rule `{}` (line {}) {what}: {}", self.rule, self.line, self.message)
    }
}

/// Why a rule file could not be read at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error("`{file}` is not valid TOML: {message}")]
    Toml { file: String, message: String },
    #[error("`{file}` is not valid YAML: {message}")]
    Yaml { file: String, message: String },
    #[error("`{file}` has no {format} rules: expected {expected}")]
    NoRules { file: String, format: &'static str, expected: &'static str },
}

/// One rule read from the input, in the fields both formats share.
struct Rule {
    id: String,
    line: usize,
    description: Option<String>,
    regex: Option<String>,
    group: Option<usize>,
    min_entropy: Option<f64>,
    source: Option<String>,
    examples: Vec<String>,
    counter_examples: Vec<String>,
    /// Fields present in the input that the pattern cannot express.
    dropped: Vec<String>,
    /// Why the rule cannot become a pattern at all, when that is known before its regex.
    refused: Option<String>,
}

impl Rule {
    fn new(id: String, line: usize) -> Self {
        Self {
            id,
            line,
            description: None,
            regex: None,
            group: None,
            min_entropy: None,
            source: None,
            examples: Vec::new(),
            counter_examples: Vec::new(),
            dropped: Vec::new(),
            refused: None,
        }
    }
}

/// Converts `file` from `format` into an agentfw pattern file.
pub fn convert(format: Format, file: &SourceFile) -> Result<Conversion, ImportError> {
    let (rules, mut findings) = match format {
        Format::Gitleaks => gitleaks(file)?,
        Format::Kingfisher => kingfisher(file)?,
    };
    let mut out = format!(
        "# Converted by `agentfw rules import {}` from {}.\n# Each pattern names the rule it came from; see the import's findings for what changed.\npatterns:\n",
        format.name(),
        file.name.rsplit(['/', '\\']).next().unwrap_or(&file.name)
    );
    let mut ids: Vec<String> = Vec::new();
    let mut converted = 0;
    for rule in &rules {
        let finding =
            |skipped: bool, message: String| Finding { skipped, rule: rule.id.clone(), line: rule.line, message };
        if let Some(why) = &rule.refused {
            findings.push(finding(true, why.clone()));
            continue;
        }
        let Some(source) = &rule.regex else {
            findings.push(finding(true, "it has no regex".to_owned()));
            continue;
        };
        let translated = match regex::translate(source) {
            Ok(t) => t,
            Err(e) => {
                findings.push(finding(true, e.to_string()));
                continue;
            }
        };
        for note in &translated.notes {
            findings.push(finding(false, note.clone()));
        }
        for field in &rule.dropped {
            findings.push(finding(false, field.clone()));
        }
        let compiled = ::regex::Regex::new(&translated.regex).ok();
        let groups = compiled.as_ref().map_or(0, |re| re.captures_len().saturating_sub(1));
        let group = match rule.group {
            Some(g) if g > groups => {
                findings.push(finding(
                    false,
                    format!("its secret group {g} does not exist; the whole match is the secret"),
                ));
                None
            }
            Some(0) => None,
            Some(g) => Some(g),
            // Both scanners take the first group as the secret when a rule names none.
            None if groups > 0 => Some(1),
            None => None,
        };
        if let Some(re) = &compiled {
            for example in &rule.examples {
                if !re.is_match(example) {
                    findings.push(finding(
                        false,
                        format!("its example `{}` does not match the converted regex", clip(example)),
                    ));
                }
            }
            for example in &rule.counter_examples {
                if re.is_match(example) {
                    findings.push(finding(
                        false,
                        format!("its counter-example `{}` matches the converted regex", clip(example)),
                    ));
                }
            }
        }
        let id = unique(kebab(format.name(), &rule.id), &ids);
        out.push_str(&format!("  - id: {id}\n"));
        let description = rule.description.clone().unwrap_or_else(|| rule.id.clone());
        out.push_str(&format!("    description: {}\n", quote(&description)));
        out.push_str(&format!("    regex: {}\n", quote(&translated.regex)));
        if let Some(g) = group {
            out.push_str(&format!("    group: {g}\n"));
        }
        if let Some(e) = rule.min_entropy.filter(|e| (0.0..=8.0).contains(e) && *e > 0.0) {
            out.push_str(&format!("    min_entropy: {e}\n"));
        }
        if let Some(s) = &rule.source {
            out.push_str(&format!("    source: {}\n", quote(s)));
        }
        out.push_str(&format!("    # {} rule `{}`, line {}\n", format.name(), rule.id, rule.line));
        ids.push(id);
        converted += 1;
    }
    if converted == 0 {
        out.push_str("  []\n");
    }
    // The file must load as it is: anything else is a bug here, reported as such.
    let mut diags = Vec::new();
    let name = format!("{}.yaml", format.name());
    let library = PatternLibrary::compile(&[SourceFile::new(name, out.as_str())], Default::default(), &mut diags);
    if let Some(d) = diags.first() {
        findings.push(Finding {
            skipped: true,
            rule: "(all)".to_owned(),
            line: 0,
            message: format!("the converted file does not load, which is a bug in the importer: {d}"),
        });
    }
    drop(library);
    findings.sort_by_key(|f| f.line);
    Ok(Conversion { yaml: out, rules: rules.len(), converted, findings })
}

fn clip(text: &str) -> String {
    let mut clipped: String = text.chars().take(60).collect();
    if clipped.len() < text.len() {
        clipped.push('…');
    }
    clipped
}

/// A kebab-case pattern id from a rule id, prefixed with the scanner's name.
fn kebab(prefix: &str, id: &str) -> String {
    let mut out = String::new();
    for c in id.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    let out = out.strip_prefix(prefix).map_or(out, |rest| rest.trim_start_matches('-'));
    if out.is_empty() { prefix.to_owned() } else { format!("{prefix}-{out}") }
}

fn unique(id: String, taken: &[String]) -> String {
    if !taken.contains(&id) {
        return id;
    }
    (2..).map(|n| format!("{id}-{n}")).find(|c| !taken.contains(c)).unwrap_or(id)
}

/// A YAML single-quoted scalar: nothing is an escape inside it but `''`.
fn quote(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = if text.contains(['\n', '\r']) { one_line.as_str() } else { text };
    format!("'{}'", text.replace('\'', "''"))
}

/// 1-based line of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text.get(..at).map_or(1, |before| before.matches('\n').count() + 1)
}

fn gitleaks(file: &SourceFile) -> Result<(Vec<Rule>, Vec<Finding>), ImportError> {
    #[derive(serde::Deserialize)]
    struct Rules {
        #[serde(default)]
        rules: Vec<toml::Spanned<toml::Table>>,
    }
    let toml_error = |e: toml::de::Error| {
        let at = e.span().map(|s| format!(" (line {})", line_of(&file.text, s.start))).unwrap_or_default();
        ImportError::Toml { file: file.name.clone(), message: format!("{}{at}", e.message().trim_end()) }
    };
    let top: toml::Table = toml::from_str(&file.text).map_err(toml_error)?;
    let list: Rules = toml::from_str(&file.text).map_err(toml_error)?;
    if list.rules.is_empty() {
        return Err(ImportError::NoRules {
            file: file.name.clone(),
            format: "gitleaks",
            expected: "`[[rules]]` tables",
        });
    }
    let mut findings = Vec::new();
    for key in top.keys() {
        let message = match key.as_str() {
            "rules" | "title" | "description" | "minVersion" => continue,
            "extend" => "the file extends another configuration (`[extend]`); only its own rules are converted",
            "allowlist" | "allowlists" => "the global allow-list is not converted: add its values to placeholders.yaml",
            _ => "this top-level key is not understood and was ignored",
        };
        findings.push(Finding { skipped: false, rule: format!("[{key}]"), line: 1, message: message.to_owned() });
    }
    let mut rules = Vec::new();
    for spanned in &list.rules {
        let line = line_of(&file.text, spanned.span().start);
        let table = spanned.get_ref();
        let text = |k: &str| table.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let id = text("id").unwrap_or_else(|| format!("rule-at-line-{line}"));
        let mut rule = Rule::new(id, line);
        rule.description = text("description");
        rule.regex = text("regex");
        rule.group = table.get("secretGroup").and_then(|v| v.as_integer()).and_then(|g| usize::try_from(g).ok());
        rule.min_entropy = table.get("entropy").and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)));
        for (key, value) in table {
            let dropped = match key.as_str() {
                "id" | "description" | "regex" | "secretGroup" | "entropy" | "tags" => continue,
                "keywords" => continue,
                "path" if rule.regex.is_none() => {
                    rule.refused = Some("it only matches file paths, and messages have none".to_owned());
                    continue;
                }
                "path" => "its file-path condition is dropped: the pattern applies to every message".to_owned(),
                "allowlist" | "allowlists" => {
                    "its allow-list is not converted: the pattern may match values gitleaks allowed".to_owned()
                }
                "required" => {
                    rule.refused =
                        Some("it is a composite rule (`required`), which pattern files cannot express".to_owned());
                    continue;
                }
                "skipReport" if value.as_bool() == Some(true) => {
                    rule.refused = Some("it is only a component of other rules (`skipReport`)".to_owned());
                    continue;
                }
                other => format!("its `{other}` field is not understood and was ignored"),
            };
            rule.dropped.push(dropped);
        }
        rules.push(rule);
    }
    Ok((rules, findings))
}

fn kingfisher(file: &SourceFile) -> Result<(Vec<Rule>, Vec<Finding>), ImportError> {
    let docs = yaml::documents(file).map_err(|d| ImportError::Yaml {
        file: file.name.clone(),
        message: format!("{} (line {})", d.message, d.line),
    })?;
    let no_rules =
        || ImportError::NoRules { file: file.name.clone(), format: "Kingfisher", expected: "a `rules:` list" };
    let mut rules = Vec::new();
    for doc in &docs {
        let Some(NodeKind::Seq(items)) = field(doc, "rules").map(|n| &n.kind) else { continue };
        for item in items {
            let line = line_of_char(&file.text, item.span.start);
            let text = |k: &str| field(item, k).and_then(Node::as_str).map(str::to_owned);
            let id = text("id").or_else(|| text("name")).unwrap_or_else(|| format!("rule-at-line-{line}"));
            let mut rule = Rule::new(id, line);
            rule.description = text("name");
            rule.regex = text("pattern");
            rule.min_entropy = text("min_entropy").and_then(|e| e.parse().ok());
            rule.source = strings(field(item, "references")).into_iter().next();
            rule.examples = strings(field(item, "examples"));
            rule.counter_examples = strings(field(item, "negative_examples"));
            rule.counter_examples.extend(strings(field(item, "non_examples")));
            if let NodeKind::Map(entries) = &item.kind {
                for (key, value) in entries {
                    let dropped = match key.as_str().unwrap_or_default() {
                        "name" | "id" | "pattern" | "min_entropy" | "references" | "examples" | "negative_examples"
                        | "non_examples" | "confidence" | "visible" | "categories" => continue,
                        "validation" => {
                            "its live validation is not converted: agentfw judges text without calling out".to_owned()
                        }
                        "depends_on_rule" if !value.is_null() => {
                            rule.refused = Some(
                                "it depends on other rules' matches (`depends_on_rule`), which pattern files cannot express"
                                    .to_owned(),
                            );
                            continue;
                        }
                        "depends_on_rule" => continue,
                        "pattern_requirements" => {
                            "its `pattern_requirements` are not converted: set `min_entropy` instead".to_owned()
                        }
                        other => format!("its `{other}` field is not understood and was ignored"),
                    };
                    rule.dropped.push(dropped);
                }
            }
            rules.push(rule);
        }
    }
    if rules.is_empty() {
        return Err(no_rules());
    }
    Ok((rules, Vec::new()))
}

fn field<'n>(node: &'n Node, key: &str) -> Option<&'n Node> {
    match &node.kind {
        NodeKind::Map(entries) => entries.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v),
        _ => None,
    }
}

fn strings(node: Option<&Node>) -> Vec<String> {
    match node.map(|n| &n.kind) {
        Some(NodeKind::Seq(items)) => items.iter().filter_map(Node::as_str).map(str::to_owned).collect(),
        Some(NodeKind::Scalar { value, .. }) => vec![value.clone()],
        _ => Vec::new(),
    }
}

/// 1-based line of char offset `at` (the YAML reader counts in chars).
fn line_of_char(text: &str, at: usize) -> usize {
    text.chars().take(at).filter(|&c| c == '\n').count() + 1
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    const GITLEAKS: &str = r#"
title = "team rules"

[extend]
useDefault = true

[[rules]]
id = "acme_api_key"
description = "Acme API key"
regex = '''\b(acme_[a-z0-9]{32})\b'''
secretGroup = 1
entropy = 3.2
keywords = ["acme_"]

[[rules]]
id = "acme-webhook"
description = "Acme webhook secret next to its name"
regex = '''(?i)acme.{0,20}webhook.{0,5}['"]([A-Za-z0-9]{24})['"]'''
path = '''\.env$'''
[[rules.allowlists]]
stopwords = ["example"]

[[rules]]
id = "lookahead"
regex = '''token=(?=[a-f0-9]{40})[a-f0-9]+'''

[[rules]]
id = "pkcs12-file"
path = '''\.p12$'''
"#;

    fn load(yaml: &str) -> PatternLibrary {
        let mut diags = Vec::new();
        let lib = PatternLibrary::compile(&[SourceFile::new("imported.yaml", yaml)], Default::default(), &mut diags);
        assert!(diags.is_empty(), "{yaml}\n{diags:?}");
        lib
    }

    #[test]
    fn gitleaks_rules_become_patterns() {
        let c = convert(Format::Gitleaks, &SourceFile::new("team.toml", GITLEAKS)).unwrap();
        assert_eq!((c.rules, c.converted), (4, 2), "{c:#?}");
        let lib = load(&c.yaml);
        let set = lib.get("imported").unwrap();
        assert_eq!(
            set.find("key: acme_0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d").map(|p| p.id.as_str()),
            Some("gitleaks-acme-api-key")
        );
        // The entropy the rule asked for still applies.
        assert!(set.find("key: acme_00000000000000000000000000000000").is_none());
        assert!(set.find("ACME_WEBHOOK = 'Zq3xK9vL2mN8bT4wR7yP1sD6'").is_some());
        let text: Vec<String> = c.findings.iter().map(ToString::to_string).collect();
        let all = text.join("\n");
        assert!(all.contains("[extend]"), "{all}");
        assert!(all.contains("rule `acme-webhook` (line 15) converted: its file-path condition is dropped"), "{all}");
        assert!(all.contains("its allow-list is not converted"), "{all}");
        assert!(all.contains("error: rule `lookahead` (line 23) not converted: it uses look-around (`(?=`)"), "{all}");
        assert!(all.contains("rule `pkcs12-file` (line 27) not converted: it only matches file paths"), "{all}");
    }

    const KINGFISHER: &str = r#"rules:
  - name: Acme Personal Token
    id: acme.pat.1
    pattern: |
      (?xi)
      \b
      (
        acmepat_[A-Z0-9]{30}   # body
      )
      \b
    min_entropy: 3.0
    confidence: medium
    references:
      - https://docs.acme.example/tokens
    examples:
      - 'ACME=acmepat_q8Zk3LmN9pR2tV5xB7cD1fG4hJ6kM0'
      - 'acmepat_tooshort'
    validation:
      type: Http
  - name: Acme pair
    id: acme.pair.1
    pattern: '(?<=secret=)[a-z]{20}'
  - name: Acme secret
    id: acme.secret.1
    pattern: '(\d{6}):\1'
"#;

    #[test]
    fn kingfisher_rules_become_patterns() {
        let c = convert(Format::Kingfisher, &SourceFile::new("acme.yml", KINGFISHER)).unwrap();
        assert_eq!((c.rules, c.converted), (3, 1), "{c:#?}");
        assert!(c.yaml.contains("source: 'https://docs.acme.example/tokens'"), "{}", c.yaml);
        let lib = load(&c.yaml);
        let set = lib.get("imported").unwrap();
        assert!(set.find("ACME=acmepat_q8Zk3LmN9pR2tV5xB7cD1fG4hJ6kM0").is_some());
        let all: Vec<String> = c.findings.iter().map(ToString::to_string).collect();
        let all = all.join("\n");
        assert!(all.contains("its example `acmepat_tooshort` does not match"), "{all}");
        assert!(all.contains("its live validation is not converted"), "{all}");
        assert!(all.contains("rule `acme.pair.1` (line 20) not converted: it uses look-around (`(?<=`)"), "{all}");
        assert!(
            all.contains("rule `acme.secret.1` (line 23) not converted: it uses a back-reference (`\\1`)"),
            "{all}"
        );
    }

    #[test]
    fn unreadable_files_say_why() {
        let e = convert(Format::Gitleaks, &SourceFile::new("bad.toml", "[[rules]\nid = 1")).unwrap_err();
        assert!(matches!(e, ImportError::Toml { .. }), "{e}");
        assert!(e.to_string().contains("line 1"), "{e}");
        let e = convert(Format::Gitleaks, &SourceFile::new("empty.toml", "title = 'x'")).unwrap_err();
        assert_eq!(e.to_string(), "`empty.toml` has no gitleaks rules: expected `[[rules]]` tables");
        let e = convert(Format::Kingfisher, &SourceFile::new("k.yaml", "patterns: []")).unwrap_err();
        assert_eq!(e.to_string(), "`k.yaml` has no Kingfisher rules: expected a `rules:` list");
        let e = convert(Format::Kingfisher, &SourceFile::new("k.yaml", "rules: [")).unwrap_err();
        assert!(matches!(e, ImportError::Yaml { .. }), "{e}");
    }

    #[test]
    fn ids_are_kebab_case_and_unique() {
        assert_eq!(kebab("gitleaks", "AWS_Access.Key"), "gitleaks-aws-access-key");
        assert_eq!(kebab("kingfisher", "kingfisher.github.1"), "kingfisher-github-1");
        assert_eq!(unique("a".into(), &["a".into(), "a-2".into()]), "a-3");
        assert_eq!(quote("it's"), "'it''s'");
    }
}
