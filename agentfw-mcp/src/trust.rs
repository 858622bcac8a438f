//! The trust file (TR1) as the daemon applies it: each sender's standing on every send and
//! every delivery, and the overlay that goes under each fenced delivery (DL4).
//!
//! The file is `<home>/trust.yaml` (`agentfw block|unblock` edit it). It is re-read when its
//! size, time or inode changes, so an edit applies to the next message without a restart.
//!
//! - **No file**: nobody has set up trust, so nothing is refused on its account; each
//!   delivery carries the overlay of an unlisted teammate ("nothing without asking").
//! - **A file**: as written. A blocked sender is refused; a listed one gets its overlay;
//!   an unlisted one follows `unknown_teammates.policy` (`reject` unless it says `allow`).
//! - **A file with errors**: the last good version stays in force (and the errors go to
//!   the daemon's log), like rule files (PR7). With no good version to fall back on,
//!   sends are refused and deliveries wait until the file is fixed: a typo must neither
//!   lift a block nor lose messages.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agentfw_core::message::Agent;
use agentfw_core::policy::SourceFile;
use agentfw_core::trust::{FILE_NAME, Overlay, TrustFile, TrustVerdict};

/// A sender's standing with the trust file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Deliver, with this overlay text under the fence.
    Deliver(String),
    /// Refuse: a stable code (`trust.blocked`, `trust.unknown`) and what to tell the agent.
    Refuse { code: &'static str, message: String },
    /// The trust file has errors and no earlier version was good: why.
    Unreadable(String),
}

/// Code of a refusal because the trust file cannot be read.
pub const UNREADABLE: &str = "trust.invalid";

/// What identifies one version of the file on disk.
type Stamp = Option<(Option<SystemTime>, u64, u64)>;

#[derive(Debug)]
enum Loaded {
    Missing,
    Good(TrustFile),
    Broken { error: String, last_good: Option<TrustFile> },
}

/// The trust file of one home, re-read when it changes.
#[derive(Debug)]
pub struct Trust {
    path: PathBuf,
    stamp: Stamp,
    loaded: Loaded,
}

impl Trust {
    /// The trust file of the home `dir`, read now.
    pub fn new(dir: &Path) -> Self {
        let mut trust = Self { path: dir.join(FILE_NAME), stamp: None, loaded: Loaded::Missing };
        trust.load();
        trust
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The standing of `sender`, from the file as it is now.
    pub fn standing(&mut self, sender: &Agent) -> Standing {
        if stamp(&self.path) != self.stamp {
            self.load();
        }
        let file = match &self.loaded {
            Loaded::Missing => return Standing::Deliver(Overlay::default().render()),
            Loaded::Good(file) | Loaded::Broken { last_good: Some(file), .. } => file,
            Loaded::Broken { error, last_good: None } => return Standing::Unreadable(error.clone()),
        };
        match file.overlay_for(sender) {
            TrustVerdict::Admit(overlay) => Standing::Deliver(overlay.render()),
            TrustVerdict::Refuse(why) => Standing::Refuse { code: why.code(), message: why.to_string() },
        }
    }

    fn load(&mut self) {
        self.stamp = stamp(&self.path);
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.loaded = Loaded::Missing;
                return;
            }
            Err(e) => {
                let error = format!("cannot read the trust file `{}`: {e}", self.path.display());
                self.broken(error);
                return;
            }
        };
        match TrustFile::parse(&SourceFile::new(self.path.display().to_string(), text)) {
            Ok(file) => self.loaded = Loaded::Good(file),
            Err(e) => self.broken(format!("the trust file `{}` cannot be used: {e}", self.path.display())),
        }
    }

    fn broken(&mut self, error: String) {
        let last_good = match std::mem::replace(&mut self.loaded, Loaded::Missing) {
            Loaded::Good(file) => Some(file),
            Loaded::Broken { last_good, .. } => last_good,
            Loaded::Missing => None,
        };
        let kept = if last_good.is_some() { "; the last good version stays in force" } else { "" };
        eprintln!("agentfw daemon: {error}{kept}");
        self.loaded = Loaded::Broken { error, last_good };
    }
}

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok(), meta.len(), meta.ino()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;

    fn web() -> Agent {
        Agent::new("claude:1:2", "claude", "web")
    }

    #[test]
    fn missing_file_delivers_with_the_unlisted_overlay() {
        let dir = tempfile::tempdir().unwrap();
        let mut trust = Trust::new(dir.path());
        assert_eq!(trust.standing(&web()), Standing::Deliver(Overlay::default().render()));
    }

    #[test]
    fn edits_apply_at_once_and_a_broken_edit_keeps_the_last_good_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut trust = Trust::new(dir.path());
        std::fs::write(&path, "version: 1\nteammates:\n  web (claude):\n    auto_read: true\n").unwrap();
        let Standing::Deliver(text) = trust.standing(&web()) else { panic!("not delivered") };
        assert!(text.contains("read files: yes, without asking"), "{text}");

        std::fs::write(&path, "version: 1\nblocked: [web (claude)]\n").unwrap();
        let Standing::Refuse { code, .. } = trust.standing(&web()) else { panic!("not refused") };
        assert_eq!(code, "trust.blocked");

        std::fs::write(&path, "version: 1\nblockd: []\n").unwrap();
        let Standing::Refuse { code, .. } = trust.standing(&web()) else { panic!("the block was lifted") };
        assert_eq!(code, "trust.blocked");
    }

    #[test]
    fn a_broken_file_with_no_good_version_is_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "version: 2\n").unwrap();
        let mut trust = Trust::new(dir.path());
        let Standing::Unreadable(why) = trust.standing(&web()) else { panic!("not unreadable") };
        assert!(why.contains("trust.yaml"), "{why}");
    }
}
