//! Transactions, the journal and snapshots: how every change is made durable (the order
//! is in the parent module's docs). Firewall events become audit rows and notes here.

use std::sync::Arc;

use agentfw_core::firewall::{Decision, Event, Firewall, Input, Output, Verdict};
use agentfw_core::message::AgentId;
use agentfw_core::policy::Rules;
use agentfw_core::time::Timestamp;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

use super::{Engine, EngineError};
use crate::clock;
use crate::dashboard::feed::DecisionView;
use crate::proto::ErrorBody;
use crate::relay_link::ToLink;
use crate::store::StoreError;

/// Snapshot after this many journalled inputs…
pub(super) const SNAPSHOT_EVERY: u64 = 500;
/// …or this long after the last one, if anything was journalled.
pub(super) const SNAPSHOT_AFTER_MS: u64 = 30_000;

/// What committed transactions let out of the process (to the relay, to the dashboard),
/// held until [`Engine::sync`] made them durable: a relay told "stored" drops its copy, and
/// a relay handed an outbox row delivers it, so neither may see a commit a crash could undo.
#[derive(Debug, Default)]
pub(super) struct Held {
    pub(super) link: Vec<ToLink>,
    pub(super) feed: Vec<DecisionView>,
}

impl Engine {
    /// Makes every commit so far durable, then lets out what they decided (group commit:
    /// the daemon's loop calls it once for all the requests that were waiting, and answers
    /// them after it). If the disk refuses, nothing held is let out, the daemon stops (what
    /// reached the disk is all the next one can trust) and the error is every answer.
    pub fn sync(&mut self) -> Result<(), ErrorBody> {
        if let Err(e) = self.db.sync() {
            eprintln!("agentfw daemon: {e}");
            self.held = Held::default();
            self.stop = true;
            return Err(EngineError::from(e).body());
        }
        let held = std::mem::take(&mut self.held);
        self.relay_release(held.link);
        self.feed_release(held.feed);
        Ok(())
    }

    /// Restore the firewall from the snapshot and replay the journal.
    pub(super) fn rebuild(&mut self) -> Result<(), StoreError> {
        let (snapshot, journal) = self.db.load_state()?;
        let mut fw = match snapshot {
            Some(state) => Firewall::restore(state),
            None => Firewall::new(self.config.firewall.clone()),
        };
        fw.set_rules(Arc::clone(&self.rules) as Arc<dyn Rules>);
        let count = journal.len();
        for entry in journal {
            let mut rng = ChaCha20Rng::from_seed(entry.seed);
            let _ = fw.handle(entry.at, &mut rng, entry.input);
            while fw.poll_event().is_some() {}
        }
        self.journal_rows = u64::try_from(count).unwrap_or(u64::MAX);
        self.fw = fw;
        Ok(())
    }

    /// Run `f` in one transaction; see the module docs. On any error the transaction is
    /// rolled back and, if the firewall was fed inputs, rebuilt from the database.
    pub(super) fn tx<T>(
        &mut self,
        now: Timestamp,
        f: impl FnOnce(&mut Self) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        self.db.begin()?;
        self.touched = false;
        self.security_dirty = false;
        self.erased = false;
        self.accepted_for.clear();
        let mut result = f(self);
        if result.is_ok()
            && self.security_dirty
            && let Err(e) = self.snapshot_in_tx(now)
        {
            result = Err(e);
        }
        let result = result.and_then(|v| self.db.commit().map(|()| v).map_err(EngineError::from));
        if result.is_err() {
            self.db.rollback();
            self.relay_rolled_back();
            self.feed_rolled_back();
            self.refreshes.clear();
            self.accepted_for.clear();
            if self.touched
                && let Err(e) = self.rebuild()
            {
                eprintln!("agentfw daemon: cannot rebuild the firewall state from the database: {e}");
            }
        } else {
            if std::mem::take(&mut self.erased) {
                // The truncation covers every erasure so far; one that fails is tried again
                // with the next snapshot.
                self.unpurged = self.db.purge().is_err_and(|e| {
                    eprintln!(
                        "agentfw daemon: erased text may linger in the write-ahead log until the next snapshot: {e}"
                    );
                    true
                });
            }
            self.relay_committed();
            self.feed_committed();
            for agent in std::mem::take(&mut self.accepted_for) {
                self.schedule_wake(now, &agent);
            }
        }
        self.touched = false;
        result
    }

    /// Journal `input`, feed it to the firewall, and record what it decided.
    pub(super) fn apply(&mut self, now: Timestamp, input: Input) -> Result<Output, EngineError> {
        let mut seed = [0u8; 32];
        self.seeds.fill_bytes(&mut seed);
        let text = self.feed_wants_text().then(|| input_text(&input)).flatten();
        let mark = self.feed_mark();
        self.db.append_journal(now, &seed, &input)?;
        self.journal_rows += 1;
        self.touched = true;
        let mut rng = ChaCha20Rng::from_seed(seed);
        let out = self.fw.handle(now, &mut rng, input);
        self.drain(now)?;
        self.feed_text(mark, text);
        Ok(out)
    }

    fn drain(&mut self, now: Timestamp) -> Result<(), EngineError> {
        while let Some(event) = self.fw.poll_event() {
            self.relay_event(&event);
            match event {
                Event::Decision(d) => self.audit(&d)?,
                Event::WouldRefuse { id, stage, agent, reason } => {
                    let label = self.label(&agent);
                    let d = Decision {
                        at: now,
                        id,
                        stage,
                        from: agent.clone(),
                        from_label: label.clone(),
                        to: agent,
                        to_label: label,
                        size: 0,
                        hops: 0,
                        verdict: Verdict::Allow,
                        reason: Some(reason),
                    };
                    self.audit_as(&d, "would_refuse")?;
                }
                Event::AdmissionRefresh { agent } => self.refreshes.push(agent),
                Event::Quarantined { agent, quarantine } => {
                    eprintln!("agentfw daemon: quarantined {agent} until {}: {}", quarantine.until, quarantine.reason);
                    self.security_dirty = true;
                }
                Event::Remembered { text, rule, .. } => {
                    eprintln!("agentfw daemon: remembering refused text {text} (rule `{rule}`)");
                    self.security_dirty = true;
                }
                Event::Released { .. } | Event::Forgotten { .. } => self.security_dirty = true,
                Event::TurnReset { .. } => {}
                Event::ThreadNote(note) => {
                    for agent in &note.participants {
                        self.note(now, agent, &note.text)?;
                    }
                }
            }
        }
        Ok(())
    }

    pub(super) fn audit(&mut self, d: &Decision) -> Result<(), EngineError> {
        let verdict = match d.verdict {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
            Verdict::Hold => "hold",
        };
        self.audit_as(d, verdict)
    }

    fn audit_as(&mut self, d: &Decision, verdict: &str) -> Result<(), EngineError> {
        let unverified = self.sessions.get(&d.from).and_then(|s| s.identity.unverified.as_ref()).map(|u| u.to_string());
        let seq = self.db.audit(d, verdict, unverified.as_deref())?;
        self.feed_decision(|| crate::store::audit_record(seq, d, verdict, unverified));
        Ok(())
    }

    /// A note from agentfw itself into `agent`'s inbox (a thread that closed, LM4).
    pub(super) fn note(&mut self, now: Timestamp, agent: &AgentId, text: &str) -> Result<(), EngineError> {
        Ok(self.db.enqueue_note(now, &format!("note-{}", clock::token()), agent, text)?)
    }

    pub(super) fn snapshot_in_tx(&mut self, now: Timestamp) -> Result<(), EngineError> {
        self.erased |= self.db.write_snapshot(now, self.fw.state())? || self.unpurged;
        self.journal_rows = 0;
        self.last_snapshot = now;
        Ok(())
    }
}

/// The message text `input` carries, if any (for pages started with `--show-text`).
fn input_text(input: &Input) -> Option<String> {
    match input {
        Input::Send(o) => Some(o.body.clone()),
        Input::Deliver(a) => Some(a.body.clone()),
        Input::HumanTurn(_) | Input::Admin(_) | Input::Timeout | Input::Seen(_) | Input::Machine(_) => None,
    }
}
