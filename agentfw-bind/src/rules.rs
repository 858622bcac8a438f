//! Rule sets as the bindings load them: the default pack (compiled once per process),
//! one rule file's text, or files and folders, over the default pack's pattern sets.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use agentfw_core::policy::{Diagnostic, PolicyError, RuleSet, SourceFile, Sources};

use crate::error::Failure;
use crate::load;

/// The rule pack agentfw ships, compiled the first time it is asked for.
pub fn default_pack() -> Result<Arc<RuleSet>, Failure> {
    static PACK: OnceLock<Result<Arc<RuleSet>, PolicyError>> = OnceLock::new();
    PACK.get_or_init(|| RuleSet::default_pack().map(Arc::new)).clone().map_err(Failure::from)
}

/// One rule file's text (named `name`), over the default pack's pattern sets.
pub fn text(name: String, text: String) -> Sources {
    Sources::over_default_pack([SourceFile::new(name, text)])
}

/// Rule, pattern and placeholder files (or folders of them) over the default pack's
/// pattern sets, as `agentfw scan --rules` reads them.
pub fn files(paths: &[PathBuf]) -> Result<Sources, Failure> {
    Ok(Sources::over_default_pack(load::read(paths)?))
}

pub fn compile(sources: &Sources) -> Result<Arc<RuleSet>, Failure> {
    Ok(Arc::new(RuleSet::compile(sources)?))
}

/// What is wrong with rule text (nothing if it compiles).
pub fn check(name: String, text: String) -> Vec<Diagnostic> {
    match RuleSet::compile(&self::text(name, text)) {
        Ok(_) => Vec::new(),
        Err(e) => e.diagnostics().iter().cloned().collect(),
    }
}
