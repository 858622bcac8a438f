//! Harness hooks: a session start names the harness's session (ID4), a person's prompt
//! resets the turn fuse (LM2) unless it is agentfw's own wake-up.

use serde_json::Value;

use super::{Caller, Engine, EngineError, check_token, done, reply};
use crate::proto::{HookEvent, code};
use agentfw_core::firewall::Input;
use agentfw_core::time::Timestamp;

impl Engine {
    pub(super) fn op_hook(
        &mut self,
        now: Timestamp,
        caller: &Caller,
        harness: &str,
        event: HookEvent,
        session_id: Option<&str>,
        prompt: Option<&str>,
    ) -> Result<Value, EngineError> {
        let me = self.session_for(now, caller)?;
        match event {
            HookEvent::SessionStart => {
                let Some(session_id) = session_id.map(str::trim).filter(|s| !s.is_empty()) else {
                    return done("no session id given".to_owned());
                };
                check_token(session_id, "session_id")?;
                let Some(s) = self.sessions.get_mut(&me) else { return Err(reply(code::INTERNAL, "session vanished")) };
                // The hook's own ancestry resolved to this session's process (ID4): the id
                // refines it. For Codex it is the thread id that `codex queue` wakes.
                let mut refined = s.identity.clone();
                if let Err(e) = refined.refine(session_id, "hook") {
                    return Err(reply(code::BAD_REQUEST, e.to_string()));
                }
                if s.identity.agent == "codex" || harness == "codex" {
                    s.thread_id = Some(session_id.to_owned());
                }
                if !s.identity.shared_host {
                    s.identity.session = refined.session;
                }
                let label = s.label().to_owned();
                self.db.record_harness_session(now, &me, session_id, s.thread_id.as_deref(), &s.identity)?;
                if self.waiting(&me)? > 0 {
                    self.schedule_wake(now, &me);
                }
                done(format!("{label}: {harness} session {session_id} recorded"))
            }
            HookEvent::UserPromptSubmit => {
                let Some(s) = self.sessions.get_mut(&me) else { return Err(reply(code::INTERNAL, "session vanished")) };
                if let Some(prompt) = prompt
                    && s.wake.nonces.iter().any(|nonce| prompt.contains(nonce.as_str()))
                {
                    return done("a wake-up from agentfw, not a person: the turn fuse is not reset".to_owned());
                }
                let label = s.label().to_owned();
                let id = me.clone();
                self.tx(now, |e| e.apply(now, Input::HumanTurn(id)).map(|_| ()))?;
                done(format!("a person spoke in {label}: its turn fuse is reset"))
            }
        }
    }
}
