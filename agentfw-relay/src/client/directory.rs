//! Who is where, kept on the device: [`Directory`].

use std::collections::{BTreeSet, HashMap};

use agentfw_core::message::AgentId;
use agentfw_core::seal::DeviceId;

use crate::protocol::{AgentEntry, DeviceEntry, DirectoryFrame};

/// Who is where, kept from [`Incoming::Directory`](super::Incoming::Directory) frames.
#[derive(Clone, Debug, Default)]
pub struct Directory {
    pub devices: HashMap<DeviceId, DeviceEntry>,
    pub agents: HashMap<AgentId, AgentEntry>,
}

impl Directory {
    pub fn apply(&mut self, frame: DirectoryFrame) {
        let DirectoryFrame { full, devices, agents } = frame;
        if full {
            self.devices.clear();
            self.agents.clear();
        }
        let changed: BTreeSet<DeviceId> =
            devices.iter().map(|d| d.device).chain(agents.iter().map(|a| a.device)).collect();
        for d in devices {
            self.devices.insert(d.device, d);
        }
        if !full {
            // A change lists all of a device's agents: those it no longer lists are gone.
            self.agents.retain(|_, a| !changed.contains(&a.device));
        }
        for a in agents {
            self.agents.insert(a.agent.id.clone(), a);
        }
    }

    /// The device an agent runs on, if it is live.
    pub fn device_of(&self, agent: &AgentId) -> Option<DeviceId> {
        self.agents.get(agent).filter(|a| a.live).map(|a| a.device)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use agentfw_core::message::Agent;

    use super::*;

    #[test]
    fn the_directory_replaces_a_devices_agents_on_change() {
        let d1: DeviceId = "00000000000000000000000000000001".parse().unwrap();
        let entry = |id: &str, live| AgentEntry { agent: Agent::new(id, "claude", id), device: d1, live };
        let mut dir = Directory::default();
        dir.apply(DirectoryFrame { full: true, devices: vec![], agents: vec![entry("a", true), entry("b", true)] });
        assert_eq!(dir.device_of(&AgentId::new("a")), Some(d1));
        dir.apply(DirectoryFrame { full: false, devices: vec![], agents: vec![entry("b", true)] });
        assert_eq!(dir.device_of(&AgentId::new("a")), None);
        dir.apply(DirectoryFrame { full: false, devices: vec![], agents: vec![entry("b", false)] });
        assert_eq!(dir.device_of(&AgentId::new("b")), None);
    }
}
