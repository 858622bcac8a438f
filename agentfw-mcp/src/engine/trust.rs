//! The trust file (TR1, DL4) handed to the firewall, which applies it on every send and
//! delivery (the core's route check): the engine only keeps the firewall's copy in step
//! with the file and puts each delivery's overlay under its fence.

use agentfw_core::firewall::{AdminAction, Delivery, Input};
use agentfw_core::time::Timestamp;

use super::{Engine, EngineError};

impl Engine {
    /// Give the firewall the trust file as it is now, if it changed (journalled like any
    /// input, so a rebuild applies each message with the file it was judged by).
    pub(super) fn sync_trust(&mut self, now: Timestamp) -> Result<(), EngineError> {
        let trust = self.trust.current();
        if &trust != self.fw.trust() {
            self.apply(now, Input::Admin(AdminAction::SetTrust { trust }))?;
        }
        Ok(())
    }
}

/// The text under a delivery's fence: the sender's overlay (DL4); with no trust file, the
/// overlay of a teammate nobody listed.
pub(super) fn overlay_text(delivery: &Delivery) -> String {
    delivery.overlay.clone().unwrap_or_default().render()
}
