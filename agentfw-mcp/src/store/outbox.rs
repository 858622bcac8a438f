//! `outbox`: messages accepted here for agents on other devices, until the relay has
//! stored them.

use agentfw_core::firewall::Accepted;
use agentfw_core::message::MessageId;
use agentfw_core::seal::DeviceId;
use agentfw_core::time::Timestamp;
use rusqlite::{OptionalExtension, params};

use super::{Cached, Store, StoreError, ms};

impl Store {
    /// Everything still to submit, oldest first, and how many rows could not be read.
    pub fn outbox(&self) -> Result<(Vec<(DeviceId, Accepted)>, usize), StoreError> {
        let mut stmt = self.conn.prepare_cached("SELECT device, message FROM outbox ORDER BY seq")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        let (mut waiting, mut unreadable) = (Vec::new(), 0);
        for row in rows {
            let (device, message) = row?;
            match (device.parse::<DeviceId>(), serde_json::from_str::<Accepted>(&message)) {
                (Ok(device), Ok(message)) => waiting.push((device, message)),
                _ => unreadable += 1,
            }
        }
        Ok((waiting, unreadable))
    }

    /// `m` to be submitted for `device`.
    pub fn add_to_outbox(&self, now: Timestamp, m: &Accepted, device: DeviceId) -> Result<(), StoreError> {
        self.conn.exec(
            "INSERT INTO outbox (id, device, message, at) VALUES (?1, ?2, ?3, ?4)",
            params![m.id.to_string(), device.to_string(), serde_json::to_string(m)?, ms(now)],
        )?;
        Ok(())
    }

    /// Removes a message from the outbox; returns it if it was there.
    pub fn take_from_outbox(&self, id: MessageId) -> Result<Option<Accepted>, StoreError> {
        let key = id.to_string();
        let row: Option<String> =
            self.conn.row("SELECT message FROM outbox WHERE id = ?1", [&key], |r| r.get(0)).optional()?;
        self.conn.exec("DELETE FROM outbox WHERE id = ?1", [&key])?;
        Ok(row.map(|m| serde_json::from_str(&m)).transpose()?)
    }

    pub fn outbox_len(&self) -> Result<u64, StoreError> {
        let n: i64 = self.conn.row("SELECT COUNT(*) FROM outbox", [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
