//! The default rule pack (PR4), embedded in the binary and shipped as readable files that
//! users can copy and edit: rules in `agentfw-core/rules/default/`, the pattern sets they
//! use in `agentfw-core/rules/patterns/`, and the placeholder values those patterns ignore in
//! `agentfw-core/rules/placeholders.yaml`.

use super::SourceFile;

macro_rules! embedded {
    ($($path:literal),* $(,)?) => {
        [$((concat!("agentfw-core/", $path), include_str!(concat!("../../", $path)))),*]
    };
}

const RULES: &[(&str, &str)] = &embedded![
    "rules/default/private-keys.yaml",
    "rules/default/provider-tokens.yaml",
    "rules/default/generic-credentials.yaml",
    "rules/default/forwarded-commands.yaml",
    "rules/default/injections.yaml",
    "rules/default/injection-score.yaml",
];

const PATTERNS: &[(&str, &str)] = &embedded![
    "rules/patterns/private-keys.yaml",
    "rules/patterns/provider-tokens.yaml",
    "rules/patterns/generic-credentials.yaml",
    "rules/patterns/forwarded-commands.yaml",
    "rules/patterns/injections.yaml",
];

const PLACEHOLDERS: &[(&str, &str)] = &embedded!["rules/placeholders.yaml"];

/// The default rule files.
pub fn rule_files() -> Vec<SourceFile> {
    RULES.iter().map(|(name, text)| SourceFile::new(*name, *text)).collect()
}

/// The default pattern files: one set per file, named after it.
pub fn pattern_files() -> Vec<SourceFile> {
    PATTERNS.iter().map(|(name, text)| SourceFile::new(*name, *text)).collect()
}

/// The shared placeholder deny-list.
pub fn placeholder_files() -> Vec<SourceFile> {
    PLACEHOLDERS.iter().map(|(name, text)| SourceFile::new(*name, *text)).collect()
}
