//! The trust file's say (TR1, DL4), applied by the engine around the firewall: a refused
//! sender's send is refused before the firewall sees it, and its messages are refused at
//! delivery; an admitted sender's overlay goes under the fence. All of the engine's trust
//! handling is in this module.

use agentfw_core::firewall::{Accepted, Decision, Outgoing, Reason, Verdict};
use agentfw_core::message::{AgentId, MessageId};
use agentfw_core::policy::Stage;
use agentfw_core::time::Timestamp;

use super::send::Outcome;
use super::{Engine, EngineError};
use crate::proto::{ErrorBody, InboxResult, RefusalInfo, RefusedView, code};
use crate::trust::{self, Standing};

impl Engine {
    /// The trust file's say on a send (TR1): a blocked sender, or an unlisted one when
    /// unknown teammates are rejected, is refused before the firewall sees the message. The
    /// refusal is recorded (AM4) and kept for a retry with the same `key`.
    pub(super) fn trust_refuses_send(
        &mut self,
        now: Timestamp,
        me: &AgentId,
        m: &Outgoing,
        key: Option<&str>,
    ) -> Result<Option<ErrorBody>, EngineError> {
        let (trust_code, message) = match self.trust.standing(&m.from) {
            Standing::Deliver(_) => return Ok(None),
            Standing::Refuse { code, message } => (code, message),
            Standing::Unreadable(why) => {
                (trust::UNREADABLE, format!("refused: {why}\nNothing is sent until your user fixes the trust file."))
            }
        };
        let id = MessageId::generate(now, &mut self.seeds);
        let body = ErrorBody {
            code: code::REFUSED.to_owned(),
            message: message.clone(),
            refusal: Some(RefusalInfo { code: trust_code.to_owned(), rule: None, id: Some(id.to_string()) }),
        };
        let d = Decision {
            at: now,
            id,
            stage: Stage::Sending,
            from: m.from.id.clone(),
            from_label: m.from.label(),
            to: m.to.id.clone(),
            to_label: m.to.label(),
            size: m.body.len(),
            hops: 0,
            verdict: Verdict::Deny,
            reason: Some(Reason { code: trust_code.to_owned(), rule: None, text: message }),
        };
        let outcome = Outcome::Failed(body.clone());
        self.tx(now, |e| {
            e.audit(&d)?;
            if let Some(key) = key {
                e.db.record_send(now, me, key, &outcome)?;
            }
            Ok(())
        })?;
        Ok(Some(body))
    }

    /// The trust file's say on a delivery (TR1, DL4): the sender's overlay to put under the
    /// fence, or `None` when the message does not go through. A refused sender's message is
    /// marked refused and recorded; while the trust file is unreadable, messages wait (and
    /// the batch says why, once).
    pub(super) fn trust_on_delivery(
        &mut self,
        now: Timestamp,
        seq: i64,
        batch: &str,
        m: &Accepted,
        result: &mut InboxResult,
    ) -> Result<Option<String>, EngineError> {
        match self.trust.standing(&m.from) {
            Standing::Deliver(overlay) => Ok(Some(overlay)),
            Standing::Refuse { code: trust_code, message: reason } => {
                self.refuse_untrusted(now, seq, batch, m, trust_code, &reason)?;
                result.refused.push(RefusedView { id: m.id.to_string(), from: m.from.label(), reason });
                Ok(None)
            }
            Standing::Unreadable(why) => {
                let note = format!("{why}\nMessages wait here until your user fixes the trust file.");
                if !result.notes.contains(&note) {
                    result.notes.push(note);
                }
                Ok(None)
            }
        }
    }

    /// A delivery the trust file refuses: marked refused without its text, and recorded.
    fn refuse_untrusted(
        &mut self,
        now: Timestamp,
        seq: i64,
        batch: &str,
        m: &Accepted,
        trust_code: &str,
        reason: &str,
    ) -> Result<(), EngineError> {
        self.db.mark_refused(now, seq, batch, reason)?;
        self.erased = true;
        self.audit(&Decision {
            at: now,
            id: m.id,
            stage: Stage::Delivering,
            from: m.from.id.clone(),
            from_label: m.from.label(),
            to: m.to.id.clone(),
            to_label: m.to.label(),
            size: m.body.len(),
            hops: m.provenance.hops,
            verdict: Verdict::Deny,
            reason: Some(Reason { code: trust_code.to_owned(), rule: None, text: reason.to_owned() }),
        })?;
        // Its text is in the journal (the send): snapshot so it does not linger there.
        self.security_dirty = true;
        Ok(())
    }
}
