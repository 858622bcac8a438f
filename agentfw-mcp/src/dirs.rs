//! Where things live: agentfw's state directory and the person's home.

use std::path::PathBuf;

/// The person's home directory, where user-scope harness files live (`HOME`).
#[allow(clippy::disallowed_methods)]
pub fn home() -> Result<PathBuf, String> {
    match std::env::var_os("HOME") {
        Some(h) if !h.is_empty() => Ok(PathBuf::from(h)),
        _ => Err("`HOME` is not set, so the harness config files cannot be found".to_owned()),
    }
}

/// `AGENTFW_HOME` if it is set (made absolute), for passing on to the processes a harness
/// starts.
#[allow(clippy::disallowed_methods)]
pub fn agentfw_home_override() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("AGENTFW_HOME").filter(|h| !h.is_empty())?);
    if dir.is_absolute() { Some(dir) } else { std::env::current_dir().ok().map(|cwd| cwd.join(dir)) }
}

/// agentfw's state directory: `AGENTFW_HOME`, else the platform's per-user data directory
/// (`$XDG_DATA_HOME/agentfw` or `~/.local/share/agentfw`; on macOS
/// `~/Library/Application Support/agentfw`).
#[allow(clippy::disallowed_methods)]
pub fn agentfw_home() -> Result<PathBuf, String> {
    if let Some(dir) = agentfw_home_override() {
        return Ok(dir);
    }
    if cfg!(target_os = "macos") {
        return Ok(home()?.join("Library/Application Support/agentfw"));
    }
    match std::env::var_os("XDG_DATA_HOME").map(PathBuf::from) {
        Some(data) if data.is_absolute() => Ok(data.join("agentfw")),
        _ => Ok(home()?.join(".local/share/agentfw")),
    }
}
