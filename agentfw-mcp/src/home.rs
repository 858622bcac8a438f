//! Where agentfw keeps its state and where the daemon listens.
//!
//! - The **home** (state directory) holds the database, the optional `config.toml`, user
//!   rule files under `rules/`, the daemon's pid file and log. It is `--home`, else
//!   `AGENTFW_HOME`, else `$HOME/.local/share/agentfw`. Only `HOME` is consulted for the
//!   default, not `XDG_DATA_HOME`: Codex passes its MCP servers only `HOME`, `LANG`, `PATH`,
//!   `SHELL` and `TERM`, and every session of one user must find the same daemon.
//! - The **socket** lives in a per-user runtime directory, `/run/user/<uid>/agentfw` when the
//!   system provides `/run/user/<uid>`, else `/tmp/agentfw-<uid>`, again independent of the
//!   environment. Its name carries a hash of the home, so one daemon serves one home (and
//!   tests with temporary homes never meet the user's daemon). Unix socket paths are short
//!   (108 bytes), which is why the socket is not inside the home.
//!
//! Every directory is created owner-only (0700) and checked: one that belongs to someone
//! else, or that others can enter, is refused rather than used.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why the home or runtime directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    #[error("no state directory: set `AGENTFW_HOME` or `HOME`, or pass `--home`")]
    NoHome,
    #[error("cannot create or open `{}`: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error(
        "refusing to use `{}`: it belongs to uid {owner}, not to you (uid {me}); remove it or set `AGENTFW_HOME`",
        path.display()
    )]
    NotOwner { path: PathBuf, owner: u32, me: u32 },
    #[error("refusing to use `{}`: it is not a directory", path.display())]
    NotDirectory { path: PathBuf },
}

/// This user's agentfw paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Home {
    /// The state directory.
    pub dir: PathBuf,
    /// The runtime directory holding the socket.
    pub runtime: PathBuf,
    /// The daemon's socket.
    pub socket: PathBuf,
    /// In the home, held (flock) by the running daemon.
    pub lock: PathBuf,
}

impl Home {
    /// The home from `explicit` (`--home`), else `AGENTFW_HOME`, else `$HOME/.local/share/agentfw`.
    /// The directory is created owner-only if missing.
    #[allow(clippy::disallowed_methods)] // the adapter reads its environment here, once
    pub fn resolve(explicit: Option<&Path>) -> Result<Self, HomeError> {
        let dir = match explicit {
            Some(dir) => dir.to_owned(),
            None => match std::env::var_os("AGENTFW_HOME").filter(|v| !v.is_empty()) {
                Some(dir) => PathBuf::from(dir),
                None => Self::default_dir().ok_or(HomeError::NoHome)?,
            },
        };
        Self::at(&dir)
    }

    /// `$HOME/.local/share/agentfw`: the home without `--home` or `AGENTFW_HOME`; `None`
    /// without `HOME`.
    #[allow(clippy::disallowed_methods)] // the adapter reads its environment here
    pub fn default_dir() -> Option<PathBuf> {
        let home = std::env::var_os("HOME").filter(|v| !v.is_empty())?;
        Some(PathBuf::from(home).join(".local/share/agentfw"))
    }

    /// The home at `dir`, created owner-only if missing.
    pub fn at(dir: &Path) -> Result<Self, HomeError> {
        let me = uid();
        private_dir(dir, me, true)?;
        let dir = fs::canonicalize(dir).map_err(|source| HomeError::Io { path: dir.to_owned(), source })?;
        let runtime = runtime_dir(me)?;
        let hash = blake3::hash(dir.as_os_str().as_encoded_bytes()).to_hex();
        let tag = hash.get(..12).unwrap_or("home").to_owned();
        Ok(Self { socket: runtime.join(format!("daemon-{tag}.sock")), lock: dir.join("daemon.lock"), runtime, dir })
    }

    pub fn db(&self) -> PathBuf {
        self.dir.join("agentfw.db")
    }

    pub fn config(&self) -> PathBuf {
        self.dir.join("config.toml")
    }

    pub fn rules(&self) -> PathBuf {
        self.dir.join("rules")
    }

    pub fn pid_file(&self) -> PathBuf {
        self.dir.join("daemon.pid")
    }

    pub fn log(&self) -> PathBuf {
        self.dir.join("daemon.log")
    }

    /// The running daemon's pid, from its pid file.
    pub fn daemon_pid(&self) -> Option<u32> {
        fs::read_to_string(self.pid_file()).ok()?.trim().parse().ok()
    }
}

/// This process's real uid.
pub fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// `/run/user/<uid>/agentfw` where the system provides a private `/run/user/<uid>`, else
/// `/tmp/agentfw-<uid>`.
fn runtime_dir(me: u32) -> Result<PathBuf, HomeError> {
    let system = PathBuf::from(format!("/run/user/{me}"));
    let usable = fs::symlink_metadata(&system).is_ok_and(|m| m.is_dir() && m.uid() == me && m.mode() & 0o077 == 0);
    let dir = if usable { system.join("agentfw") } else { PathBuf::from(format!("/tmp/agentfw-{me}")) };
    private_dir(&dir, me, false)?;
    Ok(dir)
}

/// Create `dir` owner-only if missing and check that it is ours and private. With `fix`, a
/// directory of ours that others may enter is made private; without, it is refused.
fn private_dir(dir: &Path, me: u32, fix: bool) -> Result<(), HomeError> {
    let io = |source| HomeError::Io { path: dir.to_owned(), source };
    match fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    let meta = fs::symlink_metadata(dir).map_err(io)?;
    if !meta.is_dir() {
        return Err(HomeError::NotDirectory { path: dir.to_owned() });
    }
    if meta.uid() != me {
        return Err(HomeError::NotOwner { path: dir.to_owned(), owner: meta.uid(), me });
    }
    if meta.mode() & 0o077 != 0 {
        if !fix {
            return Err(io(io::Error::new(io::ErrorKind::PermissionDenied, "others can enter it; make it mode 0700")));
        }
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_homes_get_two_sockets_and_the_same_home_the_same_one() {
        let tmp = tempfile::tempdir().unwrap();
        let a = Home::at(&tmp.path().join("a")).unwrap();
        let b = Home::at(&tmp.path().join("b")).unwrap();
        let a2 = Home::at(&tmp.path().join("b/../a")).unwrap();
        assert_ne!(a.socket, b.socket);
        assert_eq!(a.socket, a2.socket);
        assert!(a.socket.as_os_str().len() < 100);
        let mode = fs::metadata(&a.dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}
