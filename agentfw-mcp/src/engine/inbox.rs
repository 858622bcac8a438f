//! `inbox`: the caller's waiting messages through the firewall's delivery checks, fenced,
//! in batches a retrying client gets again (see the parent module's docs).

use agentfw_core::code::ReasonCode;
use agentfw_core::firewall::{Accepted, Input, Output, Reason};
use agentfw_core::message::AgentId;
use agentfw_core::time::Timestamp;
use serde_json::Value;

use super::trust::overlay_text;
use super::{Caller, Engine, EngineError, check_token};
use crate::clock;
use crate::proto::{DeliveryView, InboxResult, RefusedView};
use crate::store::{BatchRow, Pending};

impl Engine {
    /// An accepted message into its recipient's inbox.
    pub(super) fn enqueue(&mut self, now: Timestamp, m: &Accepted, warnings: &[Reason]) -> Result<(), EngineError> {
        let warnings: Vec<&str> = warnings.iter().map(|w| w.text.as_str()).collect();
        Ok(self.db.enqueue(now, m, &warnings)?)
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
        if !self.db.any_due(now, &me)? && previous.is_none() && cleared {
            let result = InboxResult { batch, held: self.waiting(&me)?, ..InboxResult::default() };
            return Ok(serde_json::to_value(result)?);
        }
        let result = self.tx(now, |e| {
            // The client asks for a new batch, so it has the previous one: erase its text.
            let erased = match (&previous, cleared) {
                (Some(prev), _) => e.db.erase_batch(&me, prev)?,
                (None, false) => e.db.erase_batches_but(&me, &batch)?,
                (None, true) => false,
            };
            // Its text leaves the write-ahead log with the next snapshot, as the journal
            // entry that delivered it does (see the parent module's docs).
            e.unpurged |= erased;
            e.sync_trust(now)?;
            let mut result = InboxResult { batch: batch.clone(), ..InboxResult::default() };
            for pending in e.db.due(now, &me)? {
                let (seq, accepted) = match pending {
                    Pending::Note { seq, text } => {
                        e.db.mark_note_read(now, seq, &batch)?;
                        result.notes.push(text);
                        continue;
                    }
                    Pending::Message { seq, message } => (seq, *message),
                };
                let mut out = e.apply(now, Input::Deliver(accepted.clone()))?;
                if matches!(&out, Output::Held { reason, .. } if reason.code.is_admission()) && e.run_refreshes(now)? {
                    out = e.apply(now, Input::Deliver(accepted))?;
                }
                match out {
                    Output::Delivered { delivery, warnings } => {
                        let warnings: Vec<String> = warnings.into_iter().map(|w| w.text).collect();
                        let fenced = format!("{}\n{}", delivery.fenced.text, overlay_text(&delivery));
                        e.db.mark_delivered(now, seq, &batch, &fenced, &warnings)?;
                        result.deliveries.push(delivery_view(&delivery.message, fenced, warnings));
                    }
                    Output::Refused(r) => {
                        let reason = r.message();
                        e.db.mark_refused(now, seq, &batch, &reason)?;
                        e.security_dirty = true;
                        e.erased = true;
                        result.refused.push(RefusedView {
                            id: r.id.to_string(),
                            from: e.db.sender_label(seq)?,
                            reason,
                        });
                    }
                    Output::Held { until, reason, .. } => {
                        // An unreadable trust file holds every message: say why, once.
                        if reason.code == ReasonCode::TrustInvalid && !result.notes.contains(&reason.text) {
                            result.notes.push(reason.text);
                        }
                        e.db.hold(seq, until)?;
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

    pub(super) fn waiting(&self, me: &AgentId) -> Result<u32, EngineError> {
        Ok(self.db.waiting(me)?)
    }

    /// A batch already delivered, for a client retrying after a lost answer.
    fn stored_batch(&self, me: &AgentId, batch: &str) -> Result<Option<InboxResult>, EngineError> {
        let Some(rows) = self.db.batch(me, batch)? else { return Ok(None) };
        let mut result = InboxResult { batch: batch.to_owned(), ..InboxResult::default() };
        for row in rows {
            match row {
                BatchRow::Note(text) => result.notes.push(text),
                BatchRow::Refused { id, from, reason } => result.refused.push(RefusedView { id, from, reason }),
                BatchRow::Delivered { message, fenced, warnings } => {
                    result.deliveries.push(delivery_view(&message, fenced, warnings));
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
