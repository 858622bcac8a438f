//! `inbox`: the caller's waiting messages through the firewall's delivery checks, fenced,
//! in batches a retrying client gets again (see the parent module's docs).

use agentfw_core::firewall::{Accepted, Input, Output, Reason};
use agentfw_core::message::AgentId;
use agentfw_core::time::Timestamp;
use rusqlite::params;
use serde_json::Value;

use super::{Cached, Caller, Engine, EngineError, check_token};
use crate::clock;
use crate::proto::{DeliveryView, InboxResult, RefusedView};
use crate::store::ms;

/// Most deliveries in one inbox batch.
const BATCH: i64 = 200;

impl Engine {
    /// An accepted message into its recipient's inbox.
    pub(super) fn enqueue(&mut self, now: Timestamp, m: &Accepted, warnings: &[Reason]) -> Result<(), EngineError> {
        let warnings: Vec<&str> = warnings.iter().map(|w| w.text.as_str()).collect();
        self.db.exec(
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

    pub(super) fn op_inbox(
        &mut self,
        now: Timestamp,
        caller: &Caller,
        batch: Option<String>,
    ) -> Result<Value, EngineError> {
        let me = self.session_for(now, caller)?;
        let batch = batch.unwrap_or_else(clock::token);
        check_token(&batch, "batch")?;
        let (previous, cleared) = match self.sessions.get_mut(&me) {
            Some(s) => {
                s.wake.limiter.read();
                (s.last_batch.clone().filter(|b| *b != batch), s.cleared)
            }
            None => (None, true),
        };
        if let Some(stored) = self.stored_batch(&me, &batch)? {
            return Ok(serde_json::to_value(stored)?);
        }
        let due: bool = self.db.row(
            "SELECT EXISTS (SELECT 1 FROM inbox WHERE recipient = ?1 AND state = 'pending' AND not_before <= ?2)",
            params![me.as_str(), ms(now)],
            |r| r.get(0),
        )?;
        if !due && previous.is_none() && cleared {
            let result = InboxResult { batch, held: self.waiting(&me)?, ..InboxResult::default() };
            return Ok(serde_json::to_value(result)?);
        }
        let result = self.tx(now, |e| {
            // The client asks for a new batch, so it has the previous one: erase its text.
            match (&previous, cleared) {
                (Some(prev), _) => e.db.exec(
                    "UPDATE inbox SET message = NULL, fenced = NULL, note = NULL WHERE recipient = ?1 AND batch = ?2",
                    params![me.as_str(), prev],
                )?,
                (None, false) => e.db.exec(
                    "UPDATE inbox SET message = NULL, fenced = NULL, note = NULL
                     WHERE recipient = ?1 AND state != 'pending' AND batch IS NOT NULL AND batch != ?2
                       AND (message IS NOT NULL OR note IS NOT NULL OR fenced IS NOT NULL)",
                    params![me.as_str(), batch],
                )?,
                (None, true) => 0,
            };
            let rows: Vec<(i64, String, Option<String>, Option<String>)> = {
                let mut stmt = e.db.prepare_cached(
                    "SELECT seq, kind, message, note FROM inbox
                     WHERE recipient = ?1 AND state = 'pending' AND not_before <= ?2 ORDER BY seq LIMIT ?3",
                )?;
                let rows = stmt.query_map(params![me.as_str(), ms(now), BATCH], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?;
                rows.collect::<Result<_, _>>()?
            };
            let mut result = InboxResult { batch: batch.clone(), ..InboxResult::default() };
            for (seq, kind, message, note) in rows {
                if kind == "note" {
                    e.db.exec(
                        "UPDATE inbox SET state = 'delivered', batch = ?2, done_at = ?3 WHERE seq = ?1",
                        params![seq, batch, ms(now)],
                    )?;
                    result.notes.push(note.unwrap_or_default());
                    continue;
                }
                let Some(message) = message else { continue };
                let accepted: Accepted = serde_json::from_str(&message)?;
                // The trust file first (TR1): a refused sender's message never reaches the
                // firewall's ledger; an admitted one's overlay goes under the fence (DL4).
                let Some(overlay) = e.trust_on_delivery(now, seq, &batch, &accepted, &mut result)? else { continue };
                let mut out = e.apply(now, Input::Deliver(accepted.clone()))?;
                if matches!(&out, Output::Held { reason, .. } if reason.code.starts_with("admission")) && e.run_refreshes(now)? {
                    out = e.apply(now, Input::Deliver(accepted))?;
                }
                match out {
                    Output::Delivered { delivery, warnings } => {
                        let warnings: Vec<String> = warnings.into_iter().map(|w| w.text).collect();
                        let fenced = format!("{}\n{overlay}", delivery.fenced.text);
                        e.db.exec(
                            "UPDATE inbox SET state = 'delivered', batch = ?2, fenced = ?3, warnings = ?4, done_at = ?5 WHERE seq = ?1",
                            params![seq, batch, fenced, serde_json::to_string(&warnings)?, ms(now)],
                        )?;
                        result.deliveries.push(delivery_view(&delivery.message, fenced, warnings));
                    }
                    Output::Refused(r) => {
                        let reason = r.message();
                        e.db.exec(
                            "UPDATE inbox SET state = 'refused', batch = ?2, reason = ?3, message = NULL, done_at = ?4 WHERE seq = ?1",
                            params![seq, batch, reason, ms(now)],
                        )?;
                        e.security_dirty = true;
                        let m = &r;
                        result.refused.push(RefusedView {
                            id: m.id.to_string(),
                            from: e.label_of_sender(seq)?,
                            reason,
                        });
                    }
                    Output::Held { until, .. } => {
                        e.db.exec("UPDATE inbox SET not_before = ?2 WHERE seq = ?1", params![seq, ms(until)])?;
                    }
                    Output::Accepted { .. } | Output::Done => {}
                }
            }
            e.run_refreshes(now)?;
            result.held = e.waiting(&me)?;
            Ok(result)
        })?;
        if let Some(s) = self.sessions.get_mut(&me) {
            let delivered = !(result.deliveries.is_empty() && result.refused.is_empty() && result.notes.is_empty());
            s.last_batch = delivered.then(|| batch.clone());
            s.cleared = true;
        }
        Ok(serde_json::to_value(result)?)
    }

    fn label_of_sender(&self, seq: i64) -> Result<String, EngineError> {
        Ok(self.db.row("SELECT sender_label FROM inbox WHERE seq = ?1", [seq], |r| r.get(0))?)
    }

    pub(super) fn waiting(&self, me: &AgentId) -> Result<u32, EngineError> {
        let n: i64 = self.db.row(
            "SELECT COUNT(*) FROM inbox WHERE recipient = ?1 AND state = 'pending'",
            [me.as_str()],
            |r| r.get(0),
        )?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// A batch already delivered, for a client retrying after a lost answer.
    fn stored_batch(&self, me: &AgentId, batch: &str) -> Result<Option<InboxResult>, EngineError> {
        let mut stmt = self.db.prepare_cached(
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
            .query_map(params![me.as_str(), batch], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?))
            })?
            .collect::<Result<_, _>>()?;
        if rows.is_empty() {
            return Ok(None);
        }
        let mut result = InboxResult { batch: batch.to_owned(), ..InboxResult::default() };
        for (kind, state, message, note, fenced, warnings, reason, id, from) in rows {
            match (kind.as_str(), state.as_str()) {
                ("note", _) => result.notes.push(note.unwrap_or_default()),
                (_, "refused") => result.refused.push(RefusedView { id, from, reason: reason.unwrap_or_default() }),
                _ => {
                    let (Some(message), Some(fenced)) = (message, fenced) else { continue };
                    let accepted: Accepted = serde_json::from_str(&message)?;
                    let warnings: Vec<String> =
                        warnings.map(|w| serde_json::from_str(&w)).transpose()?.unwrap_or_default();
                    result.deliveries.push(delivery_view(&accepted, fenced, warnings));
                }
            }
        }
        result.held = self.waiting(me)?;
        Ok(Some(result))
    }
}

fn delivery_view(m: &Accepted, fenced: String, warnings: Vec<String>) -> DeliveryView {
    DeliveryView {
        id: m.id.to_string(),
        from: m.from.label(),
        from_id: m.from.id.to_string(),
        thread: m.thread.to_string(),
        reply_to: m.reply_to.map(|r| r.to_string()),
        hops: m.provenance.hops,
        path: m.provenance.display_path(),
        fenced,
        warnings,
    }
}
