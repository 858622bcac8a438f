//! Reading rule and pattern files from disk for the core, which reads none itself.

use std::fmt;
use std::path::{Path, PathBuf};

use agentfw_core::policy::{FileKind, PolicyError, RuleSet, SourceFile, Sources, pack};

/// Why rules could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    Read(PathBuf, std::io::Error),
    NoFiles(PathBuf),
    Policy(PolicyError),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Read(path, e) => write!(f, "cannot read `{}`: {e}", path.display()),
            LoadError::NoFiles(path) => write!(f, "`{}` holds no `.yaml` or `.yml` files", path.display()),
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
    /// recursively in name order). A file with a top-level `cases:` key is a cases file,
    /// one with `patterns:` a pattern file, one with `exact:`, `contains:`, `sequences:`,
    /// `prefixes:`, `suffixes:` or `regexes:` a placeholder list, and anything else a rule
    /// file.
    pub fn read(paths: &[PathBuf]) -> Result<Self, LoadError> {
        let mut files = Files::default();
        for path in paths {
            let mut found = Vec::new();
            collect(path, &mut found)?;
            if found.is_empty() {
                return Err(LoadError::NoFiles(path.clone()));
            }
            for file in found {
                let text = std::fs::read_to_string(&file).map_err(|e| LoadError::Read(file.clone(), e))?;
                let source = SourceFile::new(file.display().to_string(), text);
                match FileKind::of(&source.text) {
                    FileKind::Cases => files.cases.push(source),
                    FileKind::Patterns => files.patterns.push(source),
                    FileKind::Placeholders => files.placeholders.push(source),
                    FileKind::Rules => files.rules.push(source),
                }
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

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let meta = std::fs::metadata(path).map_err(|e| LoadError::Read(path.to_owned(), e))?;
    if !meta.is_dir() {
        out.push(path.to_owned());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| LoadError::Read(path.to_owned(), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect(&entry, out)?;
        } else if entry.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(entry);
        }
    }
    Ok(())
}

/// The rules in force: those at `path`, or the default pack.
pub fn rules(path: Option<&Path>) -> Result<RuleSet, LoadError> {
    match path {
        Some(path) => Files::read(&[path.to_owned()])?.compile(),
        None => RuleSet::default_pack().map_err(LoadError::Policy),
    }
}
