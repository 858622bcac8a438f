//! `journal` and `snapshot`: the firewall's state is the snapshot plus the journal's inputs
//! replayed in order. An entry is the input as the core serializes it (`{"input": …}`),
//! with its time and the seed of its randomness.

use std::io::{self, Seek, Write};

use agentfw_core::firewall::{Input, State};
use agentfw_core::time::Timestamp;
use rusqlite::blob::ZeroBlob;
use rusqlite::{ErrorCode, MAIN_DB, OptionalExtension, params};

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
        // Read where SQLite holds it: a blob since snapshots are streamed, text before.
        let snapshot = self
            .conn
            .row("SELECT seq, state FROM snapshot WHERE id = 1", [], |r| {
                Ok((r.get::<_, i64>(0)?, serde_json::from_slice::<State>(r.get_ref(1)?.as_bytes()?)))
            })
            .optional()?;
        let after = snapshot.as_ref().map_or(0, |(seq, _)| *seq);
        let state = snapshot.map(|(_, state)| state).transpose()?;
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
    ///
    /// The state of a busy firewall is megabytes of JSON. It is streamed into its row
    /// (measured, a zero blob of that length, then written through SQLite's incremental
    /// blob I/O) rather than built as one string that SQLite then copies twice more (the
    /// bound value, the record): those three copies were the daemon's largest allocations,
    /// and the heap kept their space after each snapshot.
    pub fn write_snapshot(&self, now: Timestamp, state: &State) -> Result<bool, StoreError> {
        let mut length = Counted(0);
        serde_json::to_writer(&mut length, state)?;
        let length = i32::try_from(length.0).map_err(|_| {
            StoreError::Corrupt(format!(
                "the firewall's state is {} bytes, more than a snapshot row holds (2 GiB)",
                length.0
            ))
        })?;
        let seq: i64 = self.conn.row("SELECT COALESCE(MAX(seq), 0) FROM journal", [], |r| r.get(0))?;
        self.conn.exec(
            "INSERT INTO snapshot (id, seq, at, state) VALUES (1, ?1, ?2, ?3)
             ON CONFLICT (id) DO UPDATE SET seq = ?1, at = ?2, state = ?3",
            params![seq, ms(now), ZeroBlob(length)],
        )?;
        let blob = self.conn.blob_open(MAIN_DB, c"snapshot", c"state", 1, false)?;
        let mut out = io::BufWriter::with_capacity(SNAPSHOT_CHUNK, blob);
        serde_json::to_writer(&mut out, state).map_err(|e| blob_error(e.into()))?;
        let mut blob = out.into_inner().map_err(|e| blob_error(e.into_error()))?;
        let written = blob.stream_position().map_err(blob_error)?;
        if written != u64::from(length.unsigned_abs()) {
            return Err(StoreError::Corrupt(format!(
                "the firewall's state serialized to {length} bytes, then to {written}: the snapshot is not written"
            )));
        }
        blob.close()?;
        Ok(self.conn.exec("DELETE FROM journal WHERE seq <= ?1", [seq])? > 0)
    }
}

/// How much of a snapshot is handed to SQLite at once.
const SNAPSHOT_CHUNK: usize = 64 * 1024;

/// Counts what a serializer writes: a snapshot's length before its row is made.
struct Counted(u64);

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A failed write into the snapshot's blob: a full disk is [`StoreError::Full`] as for any
/// other write; a blob that ends early means the state changed length (see above).
fn blob_error(e: io::Error) -> StoreError {
    match e.get_ref().and_then(|inner| inner.downcast_ref::<rusqlite::Error>()) {
        Some(sqlite) if sqlite.sqlite_error_code() == Some(ErrorCode::DiskFull) => StoreError::Full,
        _ if e.kind() == io::ErrorKind::WriteZero => StoreError::Corrupt(
            "the firewall's state serialized longer the second time: the snapshot is not written".into(),
        ),
        _ => StoreError::Sqlite(format!("cannot write the snapshot: {e}")),
    }
}
