//! Decided centrally, enforced at both ends (AD8, AM2, CT2): the relay keeps the network's
//! [`Policy`] (admission, admin blocks, quarantines, remembered texts) as a log of admin
//! actions, and each daemon keeps a [`PolicyMirror`] of it that turns the log's entries
//! into admin actions for its own firewall.
//!
//! Both are sans-IO like the rest of the core: the relay and the daemon carry
//! [`PolicyFrame`]s between them, and the simulation ([`crate::sim::Network`]) runs the
//! same two types between several firewalls on one fake clock.

mod mirror;
mod policy;

use serde::{Deserialize, Serialize};

use crate::firewall::{Accepted, AdminAction};

pub use mirror::PolicyMirror;
pub use policy::{Policy, PolicySnapshot};

/// One entry of the relay's policy log as sent to a device: admin actions to apply to the
/// local firewall in order. `reset`: these actions are the whole of the relay's policy,
/// replacing what earlier frames said ([`PolicyMirror`] works out what to undo).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFrame {
    pub seq: u64,
    pub reset: bool,
    pub actions: Vec<AdminAction>,
}

impl Accepted {
    /// This message, accepted on the machine `from`, as the recipient's machine takes it from
    /// the relay: the sender on `from` (named as every machine names it), the recipient local.
    /// The recipient's firewall then keys both as the sender's firewall did.
    #[must_use]
    pub fn arrived_from(mut self, from: &str) -> Self {
        from.clone_into(&mut self.from.machine);
        self.to.machine.clear();
        self
    }
}
