//! The rules in force: the default pack plus the user's rule files, reloaded when they
//! change; a file that does not compile keeps the last good rules (PR7).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agentfw_core::policy::RuleSet;

use super::Engine;
use crate::load::{Files, LoadError};
use crate::proto::RulesInfo;

impl Engine {
    /// Compile the default pack plus the user's rule files. A failure keeps the rules in
    /// force (PR7) and is reported by `status`.
    pub(super) fn reload_rules(&mut self) {
        let dir = self.home.rules();
        self.rules_stamp = stamp(&dir);
        match compile_rules(&dir) {
            Ok((set, files)) => {
                let count = set.rules().count();
                self.rules.replace(set);
                self.rules_info = RulesInfo { rules: count, user_files: files, error: None };
                eprintln!("agentfw daemon: rules reloaded ({count} rules, {files} user files)");
            }
            Err(e) => {
                let kept = self.rules.current().rules().count();
                eprintln!(
                    "agentfw daemon: rule files in `{}` do not compile; keeping the last good rules:\n{e}",
                    dir.display()
                );
                self.rules_info.rules = kept;
                self.rules_info.error = Some(e.to_string());
            }
        }
    }
}

/// The default pack followed by the user's rule files in `dir` (if any), and how many
/// user files there were.
pub(super) fn compile_rules(dir: &Path) -> Result<(RuleSet, usize), LoadError> {
    if stamp(dir).is_empty() {
        return RuleSet::default_pack().map(|set| (set, 0)).map_err(LoadError::Policy);
    }
    let files = Files::read(&[dir.to_owned()])?;
    let n = files.rules.len() + files.patterns.len() + files.placeholders.len();
    files.compile_with_default_pack().map(|set| (set, n))
}

/// The rule files' names, times and sizes, to notice edits.
pub(super) fn stamp(dir: &Path) -> Vec<(PathBuf, Option<SystemTime>, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                out.push((path, meta.modified().ok(), meta.len()));
            }
        }
    }
    out.sort();
    out
}
