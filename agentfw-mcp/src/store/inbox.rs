//! `inbox`: accepted messages and agentfw's notes per recipient, `pending` until a batch
//! delivers or refuses them; a delivered row keeps its batch and fenced text until the
//! recipient asks for its next batch, so a retried batch is answered the same.

use agentfw_core::firewall::Accepted;
use agentfw_core::message::{AgentId, MessageId};
use agentfw_core::time::Timestamp;
use rusqlite::{OptionalExtension, params};

use super::{Cached, Store, StoreError, ms};

/// The rows [`Store::due`] reads: at most 200, the most one inbox batch delivers. The limit
/// is written into the statement, not bound: SQLite plans a bound `LIMIT` with the value it
/// had, so binding it again at every read expired the statement, which SQLite then compiled
/// anew at its next step (a tenth of a `check_inbox`).
pub(super) const DUE: &str = "SELECT seq, kind, message, note FROM inbox
     WHERE recipient = ?1 AND state = 'pending' AND not_before <= ?2 ORDER BY seq LIMIT 200";

/// A pending row due for delivery.
#[derive(Debug)]
pub enum Pending {
    Note { seq: i64, text: String },
    Message { seq: i64, message: Box<Accepted> },
}

/// A row of a batch already answered, as the retry gets it again.
#[derive(Debug)]
pub enum BatchRow {
    Note(String),
    Refused { id: String, from: String, reason: String },
    Delivered { message: Box<Accepted>, fenced: String, warnings: Vec<String> },
}

impl Store {
    /// An accepted message into its recipient's inbox, with the firewall's warnings.
    pub fn enqueue(&self, now: Timestamp, m: &Accepted, warnings: &[&str]) -> Result<(), StoreError> {
        self.conn.exec(
            "INSERT INTO inbox (id, kind, recipient, sender, sender_label, message, state, not_before, accepted_at, warnings)
             VALUES (?1, 'message', ?2, ?3, ?4, ?5, 'pending', 0, ?6, ?7)",
            params![
                m.id.to_string(),
                m.to.id.as_str(),
                m.from.id.as_str(),
                m.from.label(),
                serde_json::to_string(m)?,
                ms(now),
                serde_json::to_string(&warnings)?
            ],
        )?;
        Ok(())
    }

    /// A note from agentfw itself, with its own unique `id`.
    pub fn enqueue_note(&self, now: Timestamp, id: &str, recipient: &AgentId, text: &str) -> Result<(), StoreError> {
        self.conn.exec(
            "INSERT INTO inbox (id, kind, recipient, sender, sender_label, note, state, not_before, accepted_at)
             VALUES (?1, 'note', ?2, 'agentfw', 'agentfw', ?3, 'pending', 0, ?4)",
            params![id, recipient.as_str(), text, ms(now)],
        )?;
        Ok(())
    }

    /// Whether a message with this id was ever put in an inbox here (and not yet pruned).
    pub fn in_inbox(&self, id: MessageId) -> Result<bool, StoreError> {
        let seen: Option<i64> =
            self.conn.row("SELECT seq FROM inbox WHERE id = ?1", [id.to_string()], |r| r.get(0)).optional()?;
        Ok(seen.is_some())
    }

    /// Whether anything pending for `recipient` may be delivered at `now`.
    pub fn any_due(&self, now: Timestamp, recipient: &AgentId) -> Result<bool, StoreError> {
        Ok(self.conn.row(
            "SELECT EXISTS (SELECT 1 FROM inbox WHERE recipient = ?1 AND state = 'pending' AND not_before <= ?2)",
            params![recipient.as_str(), ms(now)],
            |r| r.get(0),
        )?)
    }

    /// At most 200 pending rows for `recipient` that may be delivered at `now`, oldest
    /// first.
    pub fn due(&self, now: Timestamp, recipient: &AgentId) -> Result<Vec<Pending>, StoreError> {
        let mut stmt = self.conn.prepare_cached(DUE)?;
        let rows = stmt.query_map(params![recipient.as_str(), ms(now)], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })?;
        let mut due = Vec::new();
        for row in rows {
            match row? {
                (seq, kind, _, note) if kind == "note" => {
                    due.push(Pending::Note { seq, text: note.unwrap_or_default() })
                }
                (seq, _, Some(message), _) => {
                    due.push(Pending::Message { seq, message: serde_json::from_str(&message)? })
                }
                (_, _, None, _) => {}
            }
        }
        Ok(due)
    }

    /// Erases the text of `recipient`'s batch `batch`: it has been received. True if any
    /// text was erased.
    pub fn erase_batch(&self, recipient: &AgentId, batch: &str) -> Result<bool, StoreError> {
        let erased = self.conn.exec(
            "UPDATE inbox SET message = NULL, fenced = NULL, note = NULL WHERE recipient = ?1 AND batch = ?2",
            params![recipient.as_str(), batch],
        )?;
        Ok(erased > 0)
    }

    /// Erases the text of every batch of `recipient`'s but `batch` (after a restart, when
    /// the daemon no longer knows which batch came last).
    pub fn erase_batches_but(&self, recipient: &AgentId, batch: &str) -> Result<bool, StoreError> {
        let erased = self.conn.exec(
            "UPDATE inbox SET message = NULL, fenced = NULL, note = NULL
             WHERE recipient = ?1 AND state != 'pending' AND batch IS NOT NULL AND batch != ?2
               AND (message IS NOT NULL OR note IS NOT NULL OR fenced IS NOT NULL)",
            params![recipient.as_str(), batch],
        )?;
        Ok(erased > 0)
    }

    /// A note read in `batch`.
    pub fn mark_note_read(&self, now: Timestamp, seq: i64, batch: &str) -> Result<(), StoreError> {
        self.conn.exec(
            "UPDATE inbox SET state = 'delivered', batch = ?2, done_at = ?3 WHERE seq = ?1",
            params![seq, batch, ms(now)],
        )?;
        Ok(())
    }

    /// A message delivered in `batch`, with the fenced text and warnings its recipient got.
    pub fn mark_delivered(
        &self,
        now: Timestamp,
        seq: i64,
        batch: &str,
        fenced: &str,
        warnings: &[String],
    ) -> Result<(), StoreError> {
        self.conn.exec(
            "UPDATE inbox SET state = 'delivered', batch = ?2, fenced = ?3, warnings = ?4, done_at = ?5 WHERE seq = ?1",
            params![seq, batch, fenced, serde_json::to_string(warnings)?, ms(now)],
        )?;
        Ok(())
    }

    /// A message refused in `batch`: its text is dropped, the reason kept.
    pub fn mark_refused(&self, now: Timestamp, seq: i64, batch: &str, reason: &str) -> Result<(), StoreError> {
        self.conn.exec(
            "UPDATE inbox SET state = 'refused', batch = ?2, reason = ?3, message = NULL, done_at = ?4 WHERE seq = ?1",
            params![seq, batch, reason, ms(now)],
        )?;
        Ok(())
    }

    /// A message held: offered again from `until`.
    pub fn hold(&self, seq: i64, until: Timestamp) -> Result<(), StoreError> {
        self.conn.exec("UPDATE inbox SET not_before = ?2 WHERE seq = ?1", params![seq, ms(until)])?;
        Ok(())
    }

    pub fn sender_label(&self, seq: i64) -> Result<String, StoreError> {
        Ok(self.conn.row("SELECT sender_label FROM inbox WHERE seq = ?1", [seq], |r| r.get(0))?)
    }

    /// How many rows wait for `recipient`, held ones included.
    pub fn waiting(&self, recipient: &AgentId) -> Result<u32, StoreError> {
        let n: i64 = self.conn.row(
            "SELECT COUNT(*) FROM inbox WHERE recipient = ?1 AND state = 'pending'",
            [recipient.as_str()],
            |r| r.get(0),
        )?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// How many rows wait, for everyone.
    pub fn waiting_total(&self) -> Result<u64, StoreError> {
        let n: i64 = self.conn.row("SELECT COUNT(*) FROM inbox WHERE state = 'pending'", [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The rows `recipient`'s batch `batch` answered, in order (those whose text was
    /// erased left out); `None` if there is no such batch.
    pub fn batch(&self, recipient: &AgentId, batch: &str) -> Result<Option<Vec<BatchRow>>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT kind, state, message, note, fenced, warnings, reason, id, sender_label FROM inbox
             WHERE recipient = ?1 AND batch = ?2 ORDER BY seq",
        )?;
        type Row = (
            String,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            String,
            String,
        );
        let rows: Vec<Row> = stmt
            .query_map(params![recipient.as_str(), batch], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?))
            })?
            .collect::<Result<_, _>>()?;
        if rows.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::new();
        for (kind, state, message, note, fenced, warnings, reason, id, from) in rows {
            match (kind.as_str(), state.as_str()) {
                ("note", _) => out.push(BatchRow::Note(note.unwrap_or_default())),
                (_, "refused") => out.push(BatchRow::Refused { id, from, reason: reason.unwrap_or_default() }),
                _ => {
                    let (Some(message), Some(fenced)) = (message, fenced) else { continue };
                    let warnings = warnings.map(|w| serde_json::from_str(&w)).transpose()?.unwrap_or_default();
                    out.push(BatchRow::Delivered { message: serde_json::from_str(&message)?, fenced, warnings });
                }
            }
        }
        Ok(Some(out))
    }
}
