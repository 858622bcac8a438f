//! `journal` and `snapshot`: the firewall's state is the snapshot plus the journal's inputs
//! replayed in order. An entry is the input as the core serializes it (`{"input": …}`),
//! with its time and the seed of its randomness.

use std::io::{self, Read, Seek, Write};

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

/// The seq of the last input journalled: the journal's highest, else the one the snapshot
/// covers (the snapshot drops the journal). An entry is numbered above it, so its seq is
/// above the snapshot's, which is what [`Store::load_state`] reads, without the
/// `AUTOINCREMENT` bookkeeping written at every insert (see [`super::schema`]).
macro_rules! last_seq {
    () => {
        "max(IFNULL((SELECT MAX(seq) FROM journal), 0), IFNULL((SELECT seq FROM snapshot WHERE id = 1), 0))"
    };
}

impl Store {
    /// Reads the snapshot and the journal after it. An entry this build cannot read (a newer
    /// agentfw wrote it, or it is damaged) is an error naming it: nothing is skipped.
    pub fn load_state(&self) -> Result<Loaded, StoreError> {
        // Read where SQLite holds it: a blob since snapshots are streamed, text before.
        let snapshot = self
            .conn
            .row("SELECT seq, state FROM snapshot JOIN snapshot_state USING (id)", [], |r| {
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
            concat!("INSERT INTO journal (seq, at, seed, input) VALUES (", last_seq!(), " + 1, ?1, ?2, ?3)"),
            params![ms(now), &seed[..], serde_json::to_string(input)?],
        )?;
        Ok(())
    }

    /// Stores the firewall's state as of the whole journal, and drops the journal. True if
    /// journal entries went: their text must leave the write-ahead log too ([`Store::purge`]).
    ///
    /// The state of a busy firewall is megabytes of JSON. It is streamed into its row
    /// (measured, then written through SQLite's incremental blob I/O) rather than built as
    /// one string that SQLite then copies twice more (the bound value, the record): those
    /// three copies were the daemon's largest allocations, and the heap kept their space
    /// after each snapshot.
    ///
    /// It is written over the last one, in place, when it fits the room that one has (and
    /// fills at least three quarters of it), the rest of the room filled with spaces (JSON
    /// allows them after the value): a new row would be new pages, and freeing the old
    /// ones would write them once more, as zeros (secure deletion), so that each snapshot
    /// wrote twice its size. A state that outgrew its room (or shrank well below it) gets
    /// a new row with an eighth more room than it needs.
    pub fn write_snapshot(&self, now: Timestamp, state: &State) -> Result<bool, StoreError> {
        let mut length = Counted(0);
        serde_json::to_writer(&mut length, state)?;
        let length = length.0;
        let seq: i64 = self.conn.row(concat!("SELECT ", last_seq!()), [], |r| r.get(0))?;
        // `length` and `typeof` read the row's header, not the snapshot.
        let room: Option<u64> = self
            .conn
            .row("SELECT CASE typeof(state) WHEN 'blob' THEN length(state) END FROM snapshot_state", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .optional()?
            .flatten()
            .and_then(|n| u64::try_from(n).ok());
        // What the state covers has a row of its own: changing it rewrites a few bytes, not
        // the state (see [`super::schema`]).
        self.conn.exec(
            "INSERT INTO snapshot (id, seq, at) VALUES (1, ?1, ?2) ON CONFLICT (id) DO UPDATE SET seq = ?1, at = ?2",
            params![seq, ms(now)],
        )?;
        let room = match room.filter(|&room| length <= room && length >= room - room / 4) {
            Some(room) => room,
            None => {
                let room = length + length / 8;
                let size = i32::try_from(room).map_err(|_| {
                    StoreError::Corrupt(format!(
                        "the firewall's state is {length} bytes, more than a snapshot row holds (2 GiB)"
                    ))
                })?;
                self.conn.exec(
                    "INSERT INTO snapshot_state (id, state) VALUES (1, ?1) ON CONFLICT (id) DO UPDATE SET state = ?1",
                    [ZeroBlob(size)],
                )?;
                room
            }
        };
        let blob = self.conn.blob_open(MAIN_DB, c"snapshot_state", c"state", 1, false)?;
        let mut out = io::BufWriter::with_capacity(SNAPSHOT_CHUNK, blob);
        serde_json::to_writer(&mut out, state).map_err(|e| blob_error(e.into()))?;
        let written = out.stream_position().map_err(blob_error)?;
        if written != length {
            return Err(StoreError::Corrupt(format!(
                "the firewall's state serialized to {length} bytes, then to {written}: the snapshot is not written"
            )));
        }
        // Over whatever a longer snapshot left after this one.
        io::copy(&mut io::repeat(b' ').take(room - length), &mut out).map_err(blob_error)?;
        let blob = out.into_inner().map_err(|e| blob_error(e.into_error()))?;
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
