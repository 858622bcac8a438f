//! `sends`: the outcome of each keyed send, so that a client retrying with the same key
//! gets it again instead of sending twice.

use agentfw_core::message::AgentId;
use agentfw_core::time::Timestamp;
use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Cached, Store, StoreError, ms};

impl Store {
    /// The outcome `sender`'s send with `key` had, if it was sent.
    pub fn send_outcome<T: DeserializeOwned>(&self, sender: &AgentId, key: &str) -> Result<Option<T>, StoreError> {
        let stored: Option<String> = self
            .conn
            .row("SELECT outcome FROM sends WHERE sender = ?1 AND key = ?2", params![sender.as_str(), key], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(stored.map(|s| serde_json::from_str(&s)).transpose()?)
    }

    pub fn record_send<T: Serialize>(
        &self,
        now: Timestamp,
        sender: &AgentId,
        key: &str,
        outcome: &T,
    ) -> Result<(), StoreError> {
        self.conn.exec(
            "INSERT INTO sends (sender, key, at, outcome) VALUES (?1, ?2, ?3, ?4)",
            params![sender.as_str(), key, ms(now), serde_json::to_string(outcome)?],
        )?;
        Ok(())
    }
}
