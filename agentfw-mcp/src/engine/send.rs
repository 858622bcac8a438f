//! `send`: a message through the firewall's sending checks into its recipient's inbox, or
//! the outbox for another device; each outcome kept by the client's key for a retry.

use agentfw_core::code::ReasonCode;
use agentfw_core::firewall::{Input, Outgoing, Output, Refusal};
use agentfw_core::message::MessageId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Caller, Engine, EngineError, check_token, reply};
use crate::proto::{ErrorBody, RefusalInfo, SendResult, code};
use agentfw_core::time::Timestamp;

/// A stored send outcome, for keyed retries.
#[derive(Serialize, Deserialize)]
pub(super) enum Outcome {
    Sent(SendResult),
    Failed(ErrorBody),
}

impl Engine {
    pub(super) fn op_send(
        &mut self,
        now: Timestamp,
        caller: &Caller,
        to: &str,
        text: String,
        reply_to: Option<&str>,
        key: Option<String>,
    ) -> Result<Value, EngineError> {
        let me = self.session_for(now, caller)?;
        if let Some(key) = &key {
            check_token(key, "key")?;
            if let Some(stored) = self.db.send_outcome::<Outcome>(&me, key)? {
                return match stored {
                    Outcome::Sent(r) => Ok(serde_json::to_value(r)?),
                    Outcome::Failed(e) => Err(EngineError::Reply(e)),
                };
            }
        }
        let recipient = self.find(to, true)?;
        let reply_to = match reply_to.map(str::trim).filter(|r| !r.is_empty()) {
            None => None,
            Some(r) => Some(r.parse::<MessageId>().map_err(|e| reply(code::BAD_REQUEST, format!("`reply_to`: {e}")))?),
        };
        let to_agent =
            self.sessions.get(&recipient).map(|s| s.agent().clone()).or_else(|| self.remote_agent(&recipient));
        let (Some(from), Some(to_agent)) = (self.sessions.get(&me), to_agent) else {
            return Err(reply(code::INTERNAL, "session vanished"));
        };
        let outgoing = Outgoing { from: from.agent().clone(), to: to_agent, body: text, reply_to };
        let outcome = self.tx(now, |e| {
            e.sync_trust(now)?;
            let mut out = e.apply(now, Input::Send(outgoing.clone()))?;
            if matches!(&out, Output::Refused(r) if r.reason.code == ReasonCode::AdmissionRefresh)
                && e.run_refreshes(now)?
            {
                out = e.apply(now, Input::Send(outgoing.clone()))?;
            }
            e.run_refreshes(now)?;
            let outcome = match out {
                Output::Accepted { message, warnings } => {
                    if !e.outbox(now, &message)? {
                        e.enqueue(now, &message, &warnings)?;
                        e.accepted_for.push(message.to.id.clone());
                    }
                    Outcome::Sent(SendResult {
                        id: message.id.to_string(),
                        thread: message.thread.to_string(),
                        from: message.from.label(),
                        to: message.to.label(),
                        to_id: message.to.id.to_string(),
                        hops: message.provenance.hops,
                        warnings: warnings.iter().map(|w| w.text.clone()).collect(),
                    })
                }
                Output::Refused(r) => {
                    e.security_dirty = true;
                    Outcome::Failed(refused(&r))
                }
                other => {
                    Outcome::Failed(ErrorBody::new(code::INTERNAL, format!("unexpected firewall output: {other:?}")))
                }
            };
            if let Some(key) = &key {
                e.db.record_send(now, &me, key, &outcome)?;
            }
            Ok(outcome)
        })?;
        match outcome {
            Outcome::Sent(r) => Ok(serde_json::to_value(r)?),
            Outcome::Failed(e) => Err(EngineError::Reply(e)),
        }
    }
}

fn refused(r: &Refusal) -> ErrorBody {
    ErrorBody {
        code: code::REFUSED.to_owned(),
        message: r.message(),
        refusal: Some(RefusalInfo {
            code: r.reason.code.to_string(),
            rule: r.reason.rule.clone(),
            id: Some(r.id.to_string()),
        }),
    }
}
