//! Transactions, the journal and snapshots: how every change is made durable (the order
//! is in the parent module's docs). Firewall events become audit rows and notes here.

use std::sync::Arc;

use agentfw_core::firewall::{Decision, Event, Firewall, Input, Output, State, Verdict};
use agentfw_core::message::AgentId;
use agentfw_core::policy::{Rules, Stage};
use agentfw_core::time::Timestamp;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use rusqlite::params;

use super::{Cached, Engine, EngineError};
use crate::clock;
use crate::store::{self, StoreError, ms};

/// Snapshot after this many journalled inputs…
pub(super) const SNAPSHOT_EVERY: u64 = 500;
/// …or this long after the last one, if anything was journalled.
pub(super) const SNAPSHOT_AFTER_MS: u64 = 30_000;

impl Engine {
    /// Restore the firewall from the snapshot and replay the journal.
    pub(super) fn rebuild(&mut self) -> Result<(), StoreError> {
        let (snapshot, journal) = store::load_state(&self.db)?;
        let mut fw = match snapshot {
            Some((_, state)) => Firewall::restore(serde_json::from_str::<State>(&state)?),
            None => Firewall::new(self.config.firewall.clone()),
        };
        fw.set_rules(Arc::clone(&self.rules) as Arc<dyn Rules>);
        let count = journal.len();
        for row in journal {
            let input: Input = serde_json::from_str(&row.input)
                .map_err(|e| StoreError::Journal { seq: row.seq, why: e.to_string() })?;
            let mut rng = ChaCha20Rng::from_seed(row.seed);
            let _ = fw.handle(Timestamp::from_millis(row.at), &mut rng, input);
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
        self.db.exec("BEGIN IMMEDIATE", [])?;
        self.touched = false;
        self.security_dirty = false;
        self.accepted_for.clear();
        let mut result = f(self);
        if result.is_ok()
            && self.security_dirty
            && let Err(e) = self.snapshot_in_tx(now)
        {
            result = Err(e);
        }
        let result = result.and_then(|v| self.db.exec("COMMIT", []).map(|_| v).map_err(EngineError::from));
        if result.is_err() {
            let _ = self.db.execute_batch("ROLLBACK");
            self.relay_rolled_back();
            self.refreshes.clear();
            self.accepted_for.clear();
            if self.touched
                && let Err(e) = self.rebuild()
            {
                eprintln!("agentfw daemon: cannot rebuild the firewall state from the database: {e}");
            }
        } else {
            self.relay_committed();
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
        let json = serde_json::to_string(&input)?;
        self.db
            .execute("INSERT INTO journal (at, seed, input) VALUES (?1, ?2, ?3)", params![ms(now), &seed[..], json])?;
        self.journal_rows += 1;
        self.touched = true;
        let mut rng = ChaCha20Rng::from_seed(seed);
        let out = self.fw.handle(now, &mut rng, input);
        self.drain(now)?;
        Ok(out)
    }

    fn drain(&mut self, now: Timestamp) -> Result<(), EngineError> {
        while let Some(event) = self.fw.poll_event() {
            self.relay_event(&event);
            match event {
                Event::Decision(d) => self.audit(&d)?,
                Event::WouldRefuse { id, stage, agent, reason } => {
                    let label = self.sessions.get(&agent).map_or_else(|| agent.to_string(), |s| s.agent.label());
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

    pub(super) fn audit(&self, d: &Decision) -> Result<(), EngineError> {
        let verdict = match d.verdict {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
            Verdict::Hold => "hold",
        };
        self.audit_as(d, verdict)
    }

    fn audit_as(&self, d: &Decision, verdict: &str) -> Result<(), EngineError> {
        let stage = match d.stage {
            Stage::Sending => "sending",
            Stage::Delivering => "delivering",
        };
        let unverified = self.sessions.get(&d.from).and_then(|s| s.identity.unverified.as_ref()).map(|u| u.to_string());
        let (code, rule, reason) = match &d.reason {
            Some(r) => (Some(r.code.as_str()), r.rule.as_deref(), Some(r.text.as_str())),
            None => (None, None, None),
        };
        self.db.exec(
            "INSERT INTO audit (at, message, stage, from_id, from_label, to_id, to_label, size, hops, verdict, code, rule, reason, unverified)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                ms(d.at),
                d.id.to_string(),
                stage,
                d.from.as_str(),
                d.from_label,
                d.to.as_str(),
                d.to_label,
                i64::try_from(d.size).unwrap_or(i64::MAX),
                d.hops,
                verdict,
                code,
                rule,
                reason,
                unverified
            ],
        )?;
        Ok(())
    }

    /// A note from agentfw itself into `agent`'s inbox (a thread that closed, LM4).
    pub(super) fn note(&mut self, now: Timestamp, agent: &AgentId, text: &str) -> Result<(), EngineError> {
        let id = format!("note-{}", clock::token());
        self.db.exec(
            "INSERT INTO inbox (id, kind, recipient, sender, sender_label, note, state, not_before, accepted_at)
             VALUES (?1, 'note', ?2, 'agentfw', 'agentfw', ?3, 'pending', 0, ?4)",
            params![id, agent.as_str(), text, ms(now)],
        )?;
        Ok(())
    }

    pub(super) fn snapshot_in_tx(&mut self, now: Timestamp) -> Result<(), EngineError> {
        let state = serde_json::to_string(&self.fw.snapshot())?;
        let seq: i64 = self.db.row("SELECT COALESCE(MAX(seq), 0) FROM journal", [], |r| r.get(0))?;
        self.db.exec(
            "INSERT INTO snapshot (id, seq, at, state) VALUES (1, ?1, ?2, ?3)
             ON CONFLICT (id) DO UPDATE SET seq = ?1, at = ?2, state = ?3",
            params![seq, ms(now), state],
        )?;
        self.db.exec("DELETE FROM journal WHERE seq <= ?1", [seq])?;
        self.journal_rows = 0;
        self.last_snapshot = now;
        Ok(())
    }
}
