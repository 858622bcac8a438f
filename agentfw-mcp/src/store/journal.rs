//! `journal` and `snapshot`: the firewall's state is the snapshot plus the journal's inputs
//! replayed in order. An entry is the input as the core serializes it (`{"input": …}`),
//! with its time and the seed of its randomness.

use agentfw_core::firewall::{Input, State};
use agentfw_core::time::Timestamp;
use rusqlite::{OptionalExtension, params};

use super::{Cached, Store, StoreError, at, ms};

/// One journalled input.
#[derive(Debug)]
pub struct Entry {
    pub seq: i64,
    pub at: Timestamp,
    pub seed: [u8; 32],
    pub input: Input,
}

/// The snapshot, if any, and the journal after it.
pub type Loaded = (Option<State>, Vec<Entry>);

impl Store {
    /// Reads the snapshot and the journal after it. An entry this build cannot read (a newer
    /// agentfw wrote it, or it is damaged) is an error naming it: nothing is skipped.
    pub fn load_state(&self) -> Result<Loaded, StoreError> {
        let snapshot: Option<(i64, String)> = self
            .conn
            .row("SELECT seq, state FROM snapshot WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let after = snapshot.as_ref().map_or(0, |(seq, _)| *seq);
        let state = snapshot.map(|(_, state)| serde_json::from_str::<State>(&state)).transpose()?;
        let mut stmt =
            self.conn.prepare_cached("SELECT seq, at, seed, input FROM journal WHERE seq > ?1 ORDER BY seq")?;
        let rows = stmt.query_map([after], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, Vec<u8>>(2)?, r.get::<_, String>(3)?))
        })?;
        let mut journal = Vec::new();
        for row in rows {
            let (seq, stamp, seed, input) = row?;
            let seed: [u8; 32] =
                seed.try_into().map_err(|_| StoreError::Corrupt(format!("journal entry {seq} has a bad seed")))?;
            let input = serde_json::from_str(&input).map_err(|e| StoreError::Journal { seq, why: e.to_string() })?;
            journal.push(Entry { seq, at: at(stamp), seed, input });
        }
        Ok((state, journal))
    }

    /// Journals `input`, fed to the firewall at `now` with an RNG from `seed`.
    pub fn append_journal(&self, now: Timestamp, seed: &[u8; 32], input: &Input) -> Result<(), StoreError> {
        self.conn.exec(
            "INSERT INTO journal (at, seed, input) VALUES (?1, ?2, ?3)",
            params![ms(now), &seed[..], serde_json::to_string(input)?],
        )?;
        Ok(())
    }

    /// Stores the firewall's state as of the whole journal, and drops the journal. True if
    /// journal entries went: their text must leave the write-ahead log too ([`Store::purge`]).
    pub fn write_snapshot(&self, now: Timestamp, state: &State) -> Result<bool, StoreError> {
        let state = serde_json::to_string(state)?;
        let seq: i64 = self.conn.row("SELECT COALESCE(MAX(seq), 0) FROM journal", [], |r| r.get(0))?;
        self.conn.exec(
            "INSERT INTO snapshot (id, seq, at, state) VALUES (1, ?1, ?2, ?3)
             ON CONFLICT (id) DO UPDATE SET seq = ?1, at = ?2, state = ?3",
            params![seq, ms(now), state],
        )?;
        Ok(self.conn.exec("DELETE FROM journal WHERE seq <= ?1", [seq])? > 0)
    }
}
