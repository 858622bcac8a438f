//! Provenance: where a message's text came from (PV1–PV3).

use serde::{Deserialize, Serialize};

use crate::message::Hop;

/// Where a message's text came from: the agent that first wrote it and every agent it passed
/// through, ending with the current recipient.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub origin: Hop,
    pub path: Vec<Hop>,
    /// Path length − 1: 1 for text its sender wrote, 2 once a recipient passes it on.
    pub hops: u32,
}
