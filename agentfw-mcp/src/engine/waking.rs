//! Waking a session when a message arrives for it (WK1), as often as the core's
//! [`WakeLimiter`] allows (WK2): the engine tells each session's limiter what happened and
//! its tick runs the wake-ups that fall due; [`crate::wake`] carries them out, off the engine
//! thread.

use std::collections::VecDeque;
use std::path::PathBuf;

use agentfw_core::limits::wake::{WakeDecision, WakeLimiter};
use agentfw_core::message::AgentId;
use agentfw_core::time::Timestamp;

use super::Engine;
use super::sessions::Session;
use crate::{clock, wake};

/// Nonces of the last wake-ups kept per session.
const NONCES: usize = 16;

/// A session's wake-ups (WK2), and the nonces their texts carried: the prompt a wake-up
/// causes is recognised by its nonce, so it is not taken for a person.
#[derive(Debug, Default)]
pub(super) struct WakeState {
    pub(super) limiter: WakeLimiter,
    pub(super) nonces: VecDeque<String>,
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
    /// A message arrived for `agent`: its limiter schedules a wake-up, if the session can be
    /// woken at all.
    pub(super) fn schedule_wake(&mut self, now: Timestamp, agent: &AgentId) {
        if !self.config.wake.enabled {
            return;
        }
        let limits = self.config.wake.limits();
        let Some(s) = self.sessions.get_mut(agent) else { return };
        if s.channel().is_some() {
            s.wake.limiter.message_arrived(now, &limits);
        }
    }

    /// Wake the sessions whose wake-up fell due, if messages still wait for them.
    pub(super) fn run_wakes(&mut self, now: Timestamp) {
        let limits = self.config.wake.limits();
        let due: Vec<AgentId> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.wake.limiter.poll_timeout().is_some_and(|t| t <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            let waiting = self.waiting(&id).unwrap_or(0);
            let alive = self.sessions.get(&id).is_some_and(|s| self.alive(s));
            let Some(s) = self.sessions.get_mut(&id) else { continue };
            let channel = s.channel().filter(|_| waiting > 0 && alive);
            match s.wake.limiter.handle_timeout(now, &limits, channel.is_some()) {
                WakeDecision::Wake => {}
                WakeDecision::OverLimit { per_hour } => {
                    eprintln!("agentfw daemon: not waking {}: {per_hour} wake-ups in the last hour (WK2)", s.label());
                    continue;
                }
                WakeDecision::Nothing | WakeDecision::Cooldown { .. } => continue,
            }
            let Some(channel) = channel else { continue };
            let nonce = clock::token().chars().take(12).collect::<String>();
            s.wake.nonces.push_back(nonce.clone());
            while s.wake.nonces.len() > NONCES {
                s.wake.nonces.pop_front();
            }
            let job = wake::Job { label: s.label().to_owned(), channel, text: wake::text(u64::from(waiting), &nonce) };
            match &self.wake_tx {
                Some(tx) => {
                    let _ = tx.send(job);
                }
                None => wake::run(&job),
            }
        }
    }
}
