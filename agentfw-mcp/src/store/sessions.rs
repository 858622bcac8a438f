//! `sessions`: the agent sessions seen, with their identity and harness session ids, so a
//! restarted daemon still knows who is who.

use agentfw_core::identity::Identity;
use agentfw_core::message::AgentId;
use agentfw_core::time::Timestamp;
use rusqlite::params;

use super::{Cached, Store, StoreError, at, ms};

/// A session as the database keeps it.
#[derive(Debug)]
pub struct StoredSession {
    pub identity: Identity,
    /// The Codex thread a SessionStart hook reported.
    pub thread_id: Option<String>,
    pub last_seen: Timestamp,
}

impl Store {
    /// Every session kept; rows this build cannot read are left out.
    pub fn sessions(&self) -> Result<Vec<StoredSession>, StoreError> {
        let mut stmt = self.conn.prepare_cached("SELECT identity, thread_id, last_seen FROM sessions")?;
        let rows =
            stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, i64>(2)?)))?;
        let mut sessions = Vec::new();
        for row in rows {
            let (identity, thread_id, last_seen) = row?;
            let Ok(identity) = serde_json::from_str::<Identity>(&identity) else { continue };
            sessions.push(StoredSession { identity, thread_id, last_seen: at(last_seen) });
        }
        Ok(sessions)
    }

    /// A session seen for the first time since the daemon started.
    pub fn register_session(&self, now: Timestamp, id: &AgentId, identity: &Identity) -> Result<(), StoreError> {
        self.conn.exec(
            "INSERT INTO sessions (agent_id, identity, session_id, first_seen, last_seen) VALUES (?1, ?2, ?3, ?4, ?4)
             ON CONFLICT (agent_id) DO UPDATE SET identity = ?2, last_seen = ?4",
            params![
                id.as_str(),
                serde_json::to_string(identity)?,
                identity.session.as_ref().map(|s| s.id.as_str()),
                ms(now)
            ],
        )?;
        Ok(())
    }

    /// The harness's own id for a session (a SessionStart hook), its Codex thread, and the
    /// identity the id refined.
    pub fn record_harness_session(
        &self,
        now: Timestamp,
        id: &AgentId,
        session_id: &str,
        thread_id: Option<&str>,
        identity: &Identity,
    ) -> Result<(), StoreError> {
        self.conn.exec(
            "UPDATE sessions SET session_id = ?2, thread_id = ?3, identity = ?4, last_seen = ?5 WHERE agent_id = ?1",
            params![id.as_str(), session_id, thread_id, serde_json::to_string(identity)?, ms(now)],
        )?;
        Ok(())
    }

    pub fn touch_session(&self, id: &AgentId, last_seen: Timestamp) -> Result<(), StoreError> {
        self.conn
            .exec("UPDATE sessions SET last_seen = ?2 WHERE agent_id = ?1", params![id.as_str(), ms(last_seen)])?;
        Ok(())
    }

    /// A session gone for good: it and what still waits for it.
    pub fn forget_session(&self, id: &AgentId) -> Result<(), StoreError> {
        self.conn.exec("DELETE FROM inbox WHERE recipient = ?1", [id.as_str()])?;
        self.conn.exec("DELETE FROM sessions WHERE agent_id = ?1", [id.as_str()])?;
        Ok(())
    }
}
