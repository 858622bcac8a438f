//! Time passing: the firewall's timeouts, wake-ups, snapshots, rule reloads and retention,
//! run by the daemon's loop between requests, and the final snapshot.

use agentfw_core::firewall::Input;
use agentfw_core::message::AgentId;
use agentfw_core::time::Timestamp;

use super::Engine;
use super::journal::{SNAPSHOT_AFTER_MS, SNAPSHOT_EVERY};
use super::rules::stamp;
use crate::store::StoreError;

impl Engine {
    /// Run what is due: firewall timeouts, wake-ups, snapshots, rule reloads, retention.
    /// Returns how long the caller may sleep.
    pub fn tick(&mut self, now: Timestamp) -> std::time::Duration {
        // At most one timeout input per 100 ms, so that a deadline the firewall cannot clear
        // (a clock stepped backwards) never spins the journal.
        // The deadline is asked for once per tick (it walks the firewall's state), again only
        // after a timeout input changed it: nothing else below feeds the firewall.
        let mut deadline = self.fw.poll_timeout();
        if deadline.is_some_and(|t| t <= now) && now >= self.next_timeout {
            self.next_timeout = now + std::time::Duration::from_millis(100);
            if let Err(e) = self.tx(now, |e| e.apply(now, Input::Timeout).map(|_| ())) {
                eprintln!("agentfw daemon: timeout processing failed: {}", e.body());
            }
            deadline = self.fw.poll_timeout();
        }
        self.run_wakes(now);
        self.relay_announce(now);
        let snapshot_due = self.journal_rows >= SNAPSHOT_EVERY
            || ((self.journal_rows > 0 || self.unpurged)
                && now.as_millis().saturating_sub(self.last_snapshot.as_millis()) >= SNAPSHOT_AFTER_MS);
        if snapshot_due && let Err(e) = self.tx(now, |e| e.snapshot_in_tx(now)) {
            eprintln!("agentfw daemon: cannot write a snapshot: {}", e.body());
        }
        if now >= self.next_rules_check {
            self.next_rules_check = now + std::time::Duration::from_secs(2);
            if stamp(&self.home.rules()) != self.rules_stamp {
                self.reload_rules();
            }
            if !self.home.dir.exists() {
                eprintln!("agentfw daemon: the home `{}` is gone; stopping", self.home.dir.display());
                self.stop = true;
            }
        }
        if now >= self.next_housekeeping {
            self.next_housekeeping = now + std::time::Duration::from_secs(3600);
            if let Err(e) = self.housekeeping(now) {
                eprintln!("agentfw daemon: housekeeping failed: {e}");
            }
        }
        let mut next = now + std::time::Duration::from_secs(1);
        if let Some(t) = deadline {
            next = next.min(t.max(self.next_timeout));
        }
        for s in self.sessions.values() {
            if let Some(t) = s.wake.limiter.poll_timeout() {
                next = next.min(t);
            }
        }
        next.since(now).max(std::time::Duration::from_millis(1))
    }

    /// Retention: audit older than `audit.retention_days` (AM4), send outcomes and finished
    /// inbox rows older than a day, waiting rows for sessions gone for a week.
    fn housekeeping(&mut self, now: Timestamp) -> Result<(), StoreError> {
        const DAY_MS: u64 = 24 * 3600 * 1000;
        let ago = |ms: u64| Timestamp::from_millis(now.as_millis().saturating_sub(ms));
        let pruned = self.db.prune(ago(self.config.audit.retention_days.saturating_mul(DAY_MS)), ago(DAY_MS))?;
        let gone: Vec<AgentId> = self
            .sessions
            .iter()
            .filter(|(_, s)| !self.alive(s) && now.as_millis().saturating_sub(s.last_seen.as_millis()) > 7 * DAY_MS)
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            self.db.forget_session(&id)?;
            self.sessions.remove(&id);
        }
        self.db.purge()?;
        if pruned > 0 {
            eprintln!(
                "agentfw daemon: pruned {pruned} audit records older than {} days",
                self.config.audit.retention_days
            );
        }
        Ok(())
    }

    /// Final snapshot before stopping.
    pub fn shutdown(&mut self, now: Timestamp) {
        if (self.journal_rows > 0 || self.unpurged)
            && let Err(e) = self.tx(now, |e| e.snapshot_in_tx(now))
        {
            eprintln!("agentfw daemon: cannot write the final snapshot: {}", e.body());
        }
        for (id, s) in &self.sessions {
            let _ = self.db.touch_session(id, s.last_seen);
        }
        let _ = self.sync();
    }
}
