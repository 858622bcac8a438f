//! The trust file (TR1) as the daemon reads it: the firewall applies it on every send and
//! every delivery, and each delivery carries the sender's overlay (DL4); this module only
//! turns the file on disk into the [`agentfw_core::trust::Trust`] the firewall is given.
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

use agentfw_core::policy::SourceFile;
use agentfw_core::trust::{FILE_NAME, TrustFile};

use agentfw_core::trust::Trust as Applied;

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

    /// The trust file as it is now, for the firewall to apply: unset when there is no
    /// file, the last good version when an edit broke it, unreadable when none was good.
    pub fn current(&mut self) -> Applied {
        if stamp(&self.path) != self.stamp {
            self.load();
        }
        match &self.loaded {
            Loaded::Missing => Applied::Unset,
            Loaded::Good(file) | Loaded::Broken { last_good: Some(file), .. } => Applied::File(file.clone()),
            Loaded::Broken { error, last_good: None } => Applied::Unreadable(error.clone()),
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

    use agentfw_core::message::Agent;
    use agentfw_core::trust::TrustVerdict;

    use super::*;

    fn web() -> Agent {
        Agent::new("claude:1:2", "claude", "web")
    }

    /// The code the file as it is now refuses `web (claude)` with, if any.
    fn refusal(trust: &mut Trust) -> Option<&'static str> {
        let Applied::File(file) = trust.current() else { panic!("no file in force") };
        match file.overlay_for(&web()) {
            TrustVerdict::Admit(_) => None,
            TrustVerdict::Refuse(why) => Some(why.code().as_str()),
        }
    }

    #[test]
    fn missing_file_is_unset() {
        let dir = tempfile::tempdir().unwrap();
        let mut trust = Trust::new(dir.path());
        assert_eq!(trust.current(), Applied::Unset);
    }

    #[test]
    fn edits_apply_at_once_and_a_broken_edit_keeps_the_last_good_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut trust = Trust::new(dir.path());
        std::fs::write(&path, "version: 1\nteammates:\n  web (claude):\n    auto_read: true\n").unwrap();
        assert_eq!(refusal(&mut trust), None);

        std::fs::write(&path, "version: 1\nblocked: [web (claude)]\n").unwrap();
        assert_eq!(refusal(&mut trust), Some("trust.blocked"));

        std::fs::write(&path, "version: 1\nblockd: []\n").unwrap();
        assert_eq!(refusal(&mut trust), Some("trust.blocked"), "the block was lifted");
    }

    #[test]
    fn a_broken_file_with_no_good_version_is_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "version: 2\n").unwrap();
        let mut trust = Trust::new(dir.path());
        let Applied::Unreadable(why) = trust.current() else { panic!("not unreadable") };
        assert!(why.contains("trust.yaml"), "{why}");
    }
}
