//! Reading rule and pattern files from disk for the core, which reads none itself.

use std::fmt;
use std::path::{Path, PathBuf};

use agentfw_bind::load::{self, ReadError};
use agentfw_core::policy::{FileKind, PolicyError, RuleSet, SourceFile, Sources, pack};

/// Why rules could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    Read(ReadError),
    Policy(PolicyError),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Read(e) => write!(f, "{e}"),
            LoadError::Policy(e) => write!(f, "{e}"),
        }
    }
}

/// The rule and pattern files found at some paths.
#[derive(Debug, Default)]
pub struct Files {
    pub rules: Vec<SourceFile>,
    pub patterns: Vec<SourceFile>,
    pub placeholders: Vec<SourceFile>,
    /// Files of golden cases (`cases:`), which `agentfw rules test` runs.
    pub cases: Vec<SourceFile>,
}

impl Files {
    /// Reads every `.yaml`/`.yml` file at `paths` (files, or directories searched
    /// recursively in name order, as the bindings read them). A file with a top-level `cases:` key is a cases file,
    /// one with `patterns:` a pattern file, one with `exact:`, `contains:`, `sequences:`,
    /// `prefixes:`, `suffixes:` or `regexes:` a placeholder list, and anything else a rule
    /// file.
    pub fn read(paths: &[PathBuf]) -> Result<Self, LoadError> {
        let mut files = Files::default();
        for source in load::read(paths).map_err(LoadError::Read)? {
            match FileKind::of(&source.text) {
                FileKind::Cases => files.cases.push(source),
                FileKind::Patterns => files.patterns.push(source),
                FileKind::Placeholders => files.placeholders.push(source),
                FileKind::Rules => files.rules.push(source),
            }
        }
        Ok(files)
    }

    /// Compiles these rules against the built-in pattern sets plus these pattern files (a
    /// pattern file named like a built-in set replaces it), and these placeholder lists or
    /// else the built-in one.
    pub fn compile(self) -> Result<RuleSet, LoadError> {
        let sources = Sources::over_default_pack(self.rules.into_iter().chain(self.patterns).chain(self.placeholders));
        RuleSet::compile(&sources).map_err(LoadError::Policy)
    }

    /// Compiles the default pack's rules followed by these rules, with the built-in pattern
    /// sets plus these pattern files, and these placeholder lists or else the built-in one:
    /// what the daemon runs when the user has rule files in its home.
    pub fn compile_with_default_pack(mut self) -> Result<RuleSet, LoadError> {
        let mut rules = pack::rule_files();
        rules.append(&mut self.rules);
        self.rules = rules;
        self.compile()
    }
}

/// The rules in force: those at `path`, or the default pack.
pub fn rules(path: Option<&Path>) -> Result<RuleSet, LoadError> {
    match path {
        Some(path) => Files::read(&[path.to_owned()])?.compile(),
        None => RuleSet::default_pack().map_err(LoadError::Policy),
    }
}
