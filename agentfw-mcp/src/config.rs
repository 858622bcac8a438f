//! The daemon's optional `config.toml` in the home. Every section is optional and every
//! value in it overrides one default, leaving the rest as they are:
//!
//! ```toml
//! [identity]            # agentfw_core::identity::IdentityConfig
//! require_verified = true
//!
//! [firewall.limits]     # agentfw_core::firewall::Config; read when the state is created
//! rate = 120
//!
//! [storage]
//! synchronous = "full"  # or "normal": fsync at checkpoints only (survives a crash of
//!                       # the daemon, not of the machine)
//! max_pages = 0         # cap the database at this many 4 KiB pages (0: no cap)
//!
//! [wake]
//! enabled = true
//! delay_ms = 1000       # wait this long after a message before waking, to batch a burst
//! cooldown_secs = 10    # at most one wake-up per session in this time
//! max_per_hour = 20     # and at most this many an hour (WK2)
//!
//! [audit]
//! retention_days = 90
//!
//! [admin]
//! from_agents = false   # admin commands (allow, quarantine lift, unblock, admission …)
//!                       # run only for a process placed outside every agent session
//!                       # (AM6); `true` lets anyone run them, agents included
//!
//! [relay]               # written by `agentfw join URL INVITE`
//! url = "https://relay.example:8470"
//! device = "…"          # this device's id, as enrolled
//! name = "laptop"       # this machine's name on the relay
//! ca = "/etc/agentfw/relay-ca.pem"  # `agentfw join --ca FILE`: trust this CA alone for
//!                       # an https:// relay (relative: to this directory); default: the
//!                       # system's roots
//! ```
//!
//! `[firewall]` is part of the firewall's saved state: it applies when the state is first
//! created (a fresh home); later edits are reported by `agentfw status` but do not change
//! a running state.

use std::path::Path;
use std::time::Duration;

use agentfw_bind::config::merged;
use agentfw_core::admission::{ComponentId, Mode};
use agentfw_core::firewall::Config as FirewallConfig;
use agentfw_core::identity::IdentityConfig;
use agentfw_core::limits::wake::WakeLimits;
use serde::{Deserialize, Serialize};

/// Why `config.toml` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read `{path}`: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("`{path}`: {problem}")]
    Invalid { path: String, problem: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    pub synchronous: Synchronous,
    pub max_pages: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self { synchronous: Synchronous::Full, max_pages: 0 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    Full,
    Normal,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WakeConfig {
    pub enabled: bool,
    pub delay_ms: u64,
    pub cooldown_secs: u64,
    pub max_per_hour: u32,
}

impl Default for WakeConfig {
    fn default() -> Self {
        Self { enabled: true, delay_ms: 1000, cooldown_secs: 10, max_per_hour: 20 }
    }
}

impl WakeConfig {
    /// The limits the core's wake limiter applies (WK2).
    pub fn limits(&self) -> WakeLimits {
        WakeLimits {
            delay: Duration::from_millis(self.delay_ms),
            cooldown: Duration::from_secs(self.cooldown_secs),
            per_hour: usize::try_from(self.max_per_hour).unwrap_or(usize::MAX),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    pub retention_days: u64,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self { retention_days: 90 }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    pub from_agents: bool,
}

/// The relay this device joined (`agentfw join`); `url` empty: no relay.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelayConfig {
    pub url: String,
    pub device: String,
    pub name: String,
    /// The CA certificate file (PEM) an `https://` relay's certificate must chain to;
    /// empty: the system's roots.
    pub ca: String,
}

impl RelayConfig {
    /// This machine's name: on the relay, and in the key of each of its agents on every
    /// machine (the firewall's `Config::machine`): the name it joined with, else the host
    /// name (the default name to join with).
    pub fn machine(&self) -> String {
        let name = self.name.trim();
        if name.is_empty() { crate::relay_link::hostname() } else { name.to_owned() }
    }

    /// The CA file, a relative path taken from `dir` (the home, where `config.toml` is).
    pub fn ca_file(&self, dir: &Path) -> Option<std::path::PathBuf> {
        let ca = self.ca.trim();
        (!ca.is_empty()).then(|| dir.join(ca))
    }
}

/// The whole configuration, defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonConfig {
    pub identity: IdentityConfig,
    pub firewall: FirewallConfig,
    pub storage: StorageConfig,
    pub wake: WakeConfig,
    pub audit: AuditConfig,
    pub admin: AdminConfig,
    pub relay: RelayConfig,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        Self {
            identity: IdentityConfig::default(),
            firewall: firewall_defaults(),
            storage: StorageConfig::default(),
            wake: WakeConfig::default(),
            audit: AuditConfig::default(),
            admin: AdminConfig::default(),
            relay: RelayConfig::default(),
        }
    }
}

/// The core's defaults, with admission in report-only mode (a fresh install, AD6) and
/// agentfw's own MCP server excused, visibly (AD4): every session that talks through agentfw
/// loads it, and it is the firewall, not a risk to be rated.
pub fn firewall_defaults() -> FirewallConfig {
    let mut config = FirewallConfig::default();
    config.admission.mode = Mode::Report;
    if let Ok(own) = ComponentId::mcp("agentfw") {
        config.admission.exceptions.insert(own);
    }
    config
}

impl DaemonConfig {
    /// The configuration in `path`, or the defaults when there is no such file. `home` (the
    /// user's home directory) expands `~/` in identity patterns.
    pub fn load(path: &Path, home: Option<&str>) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(ConfigError::Read { path: shown, source }),
        };
        let mut config = Self::parse(&text).map_err(|problem| ConfigError::Invalid { path: shown, problem })?;
        if let Some(home) = home {
            config.identity = config.identity.with_home(home);
        }
        Ok(config)
    }

    /// The configuration of the home `dir` as the daemon and the command line use it: its
    /// `config.toml` with `~/` expanded from `HOME`, and the digests pinned in its
    /// [pins file](crate::pins).
    #[allow(clippy::disallowed_methods)] // the adapter reads HOME, once
    pub fn of_home(dir: &Path) -> Result<Self, ConfigError> {
        let user_home = std::env::var("HOME").ok();
        let mut config = Self::load(&dir.join("config.toml"), user_home.as_deref())?;
        let pins = crate::pins::Pins::load(dir).map_err(|e| ConfigError::Invalid {
            path: dir.join(crate::pins::FILE_NAME).display().to_string(),
            problem: e.to_string(),
        })?;
        config.identity = pins.apply(config.identity);
        Ok(config)
    }

    /// Parse the text of a `config.toml`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut config = Self::default();
        for (key, value) in table {
            let value = serde_json::to_value(&value).map_err(|e| e.to_string())?;
            let section = |e: serde_json::Error| format!("[{key}]: {e}");
            match key.as_str() {
                "identity" => config.identity = merged(&config.identity, value).map_err(section)?,
                "firewall" => config.firewall = merged(&config.firewall, value).map_err(section)?,
                "storage" => config.storage = serde_json::from_value(value).map_err(section)?,
                "wake" => config.wake = serde_json::from_value(value).map_err(section)?,
                "audit" => config.audit = serde_json::from_value(value).map_err(section)?,
                "admin" => config.admin = serde_json::from_value(value).map_err(section)?,
                "relay" => config.relay = serde_json::from_value(value).map_err(section)?,
                other => {
                    return Err(format!(
                        "unknown section `[{other}]`: expected identity, firewall, storage, wake, audit, admin or relay"
                    ));
                }
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_override_single_defaults() {
        let c = DaemonConfig::parse(
            "[firewall.limits]\nrate = 500\n[identity]\nrequire_verified = true\n[wake]\ndelay_ms = 5\n[storage]\nmax_pages = 64\n",
        )
        .unwrap();
        assert_eq!(c.firewall.limits.rate, 500);
        assert_eq!(c.firewall.limits.fan_out, 8);
        assert!(c.identity.require_verified);
        assert!(!c.identity.agents.is_empty());
        assert_eq!(c.wake.delay_ms, 5);
        assert_eq!(c.wake.cooldown_secs, 10);
        assert_eq!(c.storage.max_pages, 64);
    }

    #[test]
    fn mistakes_are_named() {
        let e = DaemonConfig::parse("[wake]\nenable = true\n").unwrap_err();
        assert!(e.contains("[wake]") && e.contains("unknown field `enable`"), "{e}");
        let e = DaemonConfig::parse("[daemon]\n").unwrap_err();
        assert!(e.contains("unknown section `[daemon]`"), "{e}");
    }
}
