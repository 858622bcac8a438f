//! Waking a session when a message arrives for it (WK1), at most as often as WK2 allows;
//! [`crate::wake`] carries the wake-up out, off the engine thread.

use std::collections::VecDeque;
use std::path::PathBuf;

use agentfw_core::message::AgentId;
use agentfw_core::time::Timestamp;

use super::Engine;
use super::sessions::Session;
use crate::{clock, wake};

/// WK2: when a session was woken, and whether it has read since.
#[derive(Debug, Default)]
pub(super) struct WakeState {
    /// Woken and not read since: do not wake again.
    pub(super) outstanding: bool,
    pub(super) scheduled: Option<Timestamp>,
    pub(super) recent: VecDeque<Timestamp>,
    pub(super) nonces: VecDeque<(String, Timestamp)>,
}

impl Session {
    pub(super) fn channel(&self) -> Option<wake::Channel> {
        if let Some((socket, token)) = &self.claude_wake {
            return Some(wake::Channel::Claude { socket: socket.clone(), token: token.clone() });
        }
        match (&self.thread_id, &self.identity.exe) {
            (Some(thread), Some(exe)) if self.identity.agent == "codex" => Some(wake::Channel::Codex {
                exe: PathBuf::from(exe.strip_suffix(" (deleted)").unwrap_or(exe)),
                thread: thread.clone(),
                cwd: self.identity.cwd.as_ref().map(PathBuf::from),
            }),
            _ => None,
        }
    }
}

impl Engine {
    /// A message arrived for `agent`: wake it after `wake.delay_ms`, unless it was woken
    /// and has not read since, or cannot be woken.
    pub(super) fn schedule_wake(&mut self, now: Timestamp, agent: &AgentId) {
        if !self.config.wake.enabled {
            return;
        }
        let delay = std::time::Duration::from_millis(self.config.wake.delay_ms);
        let Some(s) = self.sessions.get_mut(agent) else { return };
        if s.wake.outstanding || s.wake.scheduled.is_some() || s.channel().is_none() {
            return;
        }
        s.wake.scheduled = Some(now + delay);
    }

    pub(super) fn run_wakes(&mut self, now: Timestamp) {
        let due: Vec<AgentId> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.wake.scheduled.is_some_and(|t| t <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            let waiting = self.waiting(&id).unwrap_or(0);
            let alive = self.sessions.get(&id).is_some_and(|s| self.alive(s));
            let cooldown = std::time::Duration::from_secs(self.config.wake.cooldown_secs);
            let max = usize::try_from(self.config.wake.max_per_hour).unwrap_or(usize::MAX);
            let Some(s) = self.sessions.get_mut(&id) else { continue };
            s.wake.scheduled = None;
            if waiting == 0 || !alive {
                continue;
            }
            while s.wake.recent.front().is_some_and(|t| now.since(*t) >= std::time::Duration::from_secs(3600)) {
                s.wake.recent.pop_front();
            }
            if let Some(last) = s.wake.recent.back()
                && now.since(*last) < cooldown
            {
                s.wake.scheduled = Some(*last + cooldown);
                continue;
            }
            if s.wake.recent.len() >= max {
                eprintln!("agentfw daemon: not waking {}: {max} wake-ups in the last hour (WK2)", s.agent.label());
                continue;
            }
            let Some(channel) = s.channel() else { continue };
            let nonce = clock::token().chars().take(12).collect::<String>();
            s.wake.nonces.push_back((nonce.clone(), now));
            while s.wake.nonces.len() > 16 {
                s.wake.nonces.pop_front();
            }
            s.wake.recent.push_back(now);
            s.wake.outstanding = true;
            let job = wake::Job { label: s.agent.label(), channel, text: wake::text(u64::from(waiting), &nonce) };
            match &self.wake_tx {
                Some(tx) => {
                    let _ = tx.send(job);
                }
                None => wake::run(&job),
            }
        }
    }
}
