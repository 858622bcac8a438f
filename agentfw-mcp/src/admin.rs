//! Admin commands fail closed (AM6).
//!
//! Every command that lowers protection — `allow`, `quarantine lift`, `block`/`unblock`,
//! admission changes, the daemon's rule reload, `daemon --stop`, `daemon --relay`,
//! `identity pin`, `install`, `uninstall`, `join`, `keys rotate`, and `dashboard` (its page
//! shows every agent's metadata, and with `--show-text` their messages) — runs only for a caller
//! the core places positively outside every agent session ([`Placement::Person`], see
//! [`agentfw_core::identity::placement`]). An agent (`admin.from_agent`) and anything that
//! cannot be placed (`admin.unknown_caller`) are refused with what was seen. The daemon
//! checks the commands it carries out, for the peer of the connection; the command line
//! checks the ones it carries out itself (editing the trust file, pinning digests,
//! installing) with [`check_here`]. `[admin] from_agents = true` turns the check off.

use agentfw_core::identity::{Placement, Resolver};

use crate::config::DaemonConfig;
use crate::procfs::{self, ProcClock};
use crate::proto::ErrorBody;

/// The refusal of admin command `what` for a caller placed as `placement`, or `None` for a
/// person.
pub fn refusal(what: &str, placement: &Placement) -> Option<ErrorBody> {
    let code = placement.refusal_code()?;
    let why = placement.why().unwrap_or("it could not be placed");
    Some(ErrorBody::new(
        code,
        format!(
            "`agentfw {what}` lowers agentfw's protection, so it runs only for a person, in a terminal outside every agent session; refused ({code}) because {why}. A person must run it in a terminal where no agent runs"
        ),
    ))
}

/// Why a command this process carries out itself does not run.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Not a person's (the message says why, with its code).
    #[error("{0}")]
    Refused(String),
    /// The configuration that says who may run it cannot be read.
    #[error("{0}")]
    Config(String),
}

/// The admin check for command `what`, which this process carries out itself, under the
/// configuration of the home `dir`: refused unless this process is a person's (or
/// `[admin] from_agents` allows everyone).
pub fn check_here(dir: &std::path::Path, what: &str) -> Result<(), AdminError> {
    let config = DaemonConfig::of_home(dir).map_err(|e| AdminError::Config(e.to_string()))?;
    if config.admin.from_agents {
        return Ok(());
    }
    let resolver = Resolver::new(config.identity).map_err(|e| AdminError::Config(e.to_string()))?;
    let placement = match ProcClock::read() {
        Ok(clock) => procfs::placement(&resolver, std::process::id(), &clock),
        Err(e) => Placement::Unknown { why: e.to_string() },
    };
    match refusal(what, &placement) {
        None => Ok(()),
        Some(body) => Err(AdminError::Refused(body.message)),
    }
}
