//! Pinned harness digests (ID2): `<home>/identity-pins.json`.
//!
//! A harness installed where its own user can write (`~/.npm-global`, `~/.local/share/
//! claude`…) could be replaced by anything that user runs, an injected agent included, so
//! its location proves nothing: it counts as verified only if its digest is pinned. `agentfw
//! install` pins the programs it finds at the harness's install locations, and `agentfw
//! identity pin` does it again after the harness updated itself; both run only for a person
//! (AM6), never for an agent. A harness its user cannot write (a system-wide install owned
//! by root) needs no pin.
//!
//! The file lives in agentfw's home, which the harness's sandbox keeps out of an agent's
//! reach (`docs/threat-model.md`). The daemon reads it again whenever it changes.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use agentfw_core::identity::IdentityConfig;
use serde::{Deserialize, Serialize};

/// The file's name in the home.
pub const FILE_NAME: &str = "identity-pins.json";

/// Why the pins cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PinsError {
    #[error("cannot read `{path}`: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("`{path}` is not a pins file ({problem}); remove it and run `agentfw identity pin` again")]
    Invalid { path: String, problem: String },
}

/// One pinned program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// BLAKE3, hex, as [`crate::procfs::digest_file`] computes it.
    pub digest: String,
    /// Where it was found when pinned (for people reading the file).
    pub path: String,
}

/// The pins by agent kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pins {
    pub version: u32,
    pub agents: BTreeMap<String, Vec<Pin>>,
}

impl Pins {
    /// The pins kept in the home `dir` (none if there is no file).
    pub fn load(dir: &Path) -> Result<Self, PinsError> {
        let path = dir.join(FILE_NAME);
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self { version: 1, ..Self::default() }),
            Err(source) => return Err(PinsError::Read { path: shown, source }),
        };
        serde_json::from_str(&text).map_err(|e| PinsError::Invalid { path: shown, problem: e.to_string() })
    }

    /// The file's text, for the caller to write (owner-only) into the home.
    pub fn text(&self) -> String {
        let json = serde_json::to_string_pretty(self).unwrap_or_default();
        format!("{json}\n")
    }

    /// `config` with these digests added to each agent's pinned ones.
    pub fn apply(&self, mut config: IdentityConfig) -> IdentityConfig {
        for (kind, pins) in &self.agents {
            if let Some(spec) = config.agent_mut(kind) {
                spec.digests.extend(pins.iter().map(|p| p.digest.clone()));
            }
        }
        config
    }
}

/// What identifies one version of the pins file on disk: modification time, inode, size.
pub type Stamp = (i64, i64, u64, u64);

/// The pins file's [`Stamp`], to notice a change; `None` if there is none.
pub fn stamp(dir: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(dir.join(FILE_NAME)).ok()?;
    Some((meta.mtime(), meta.mtime_nsec(), meta.ino(), meta.size()))
}

/// The programs of agent `kind` found under its install locations: files whose name or
/// path matches its executables or scripts. Install locations are globs; each is searched
/// from the directory before its first wildcard.
pub fn find_programs(config: &IdentityConfig, kind: &str) -> Vec<PathBuf> {
    let Some(spec) = config.agents.iter().find(|a| a.kind == kind) else { return Vec::new() };
    let Ok(resolver) = agentfw_core::identity::Resolver::new(config.clone()) else { return Vec::new() };
    let mut found = Vec::new();
    for location in &spec.install_locations {
        let root: PathBuf = Path::new(location)
            .components()
            .take_while(|c| !c.as_os_str().to_string_lossy().contains(['*', '?', '[']))
            .collect();
        let mut stack = vec![root];
        let mut seen = 0usize;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                seen += 1;
                if seen > 200_000 {
                    break;
                }
                let path = entry.path();
                let Ok(kind_of) = entry.file_type() else { continue };
                if kind_of.is_dir() {
                    stack.push(path);
                } else if kind_of.is_file() && resolver.is_program_of(kind, &path.display().to_string()) {
                    found.push(path);
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}
