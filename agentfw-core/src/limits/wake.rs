//! When to wake a session that has messages waiting (WK2): wake-ups respect limits and never
//! loop a session forever. A message schedules a wake-up a short delay later (a burst
//! becomes one wake-up); a session woken and not yet read is not woken again; wake-ups to
//! one session are at least a cooldown apart and at most so many an hour.
//!
//! Sans-IO like the firewall: the daemon tells a [`WakeLimiter`] what happened and when,
//! asks it when it next needs attention ([`WakeLimiter::poll_timeout`]), and carries out the
//! wake-ups it decides on.

use core::time::Duration;
use std::collections::VecDeque;

use crate::time::Timestamp;

/// The window `per_hour` counts in.
const HOUR: Duration = Duration::from_secs(3600);

/// How often one session may be woken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeLimits {
    /// Wait this long after a message before waking, to gather a burst.
    pub delay: Duration,
    /// At least this long between two wake-ups of one session.
    pub cooldown: Duration,
    /// At most this many wake-ups of one session in any hour.
    pub per_hour: usize,
}

/// What to do about a wake-up that fell due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum WakeDecision {
    /// Wake the session now.
    Wake,
    /// Nothing: none was due, nothing waits any more, or the session cannot be woken.
    Nothing,
    /// Too soon after the last wake-up: it is due again at the end of the cooldown.
    Cooldown { until: Timestamp },
    /// `per_hour` wake-ups already happened in the last hour: not woken. The next message
    /// schedules a wake-up again.
    OverLimit { per_hour: usize },
}

/// One session's wake-ups.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeLimiter {
    /// Woken and not read since: do not wake again.
    outstanding: bool,
    scheduled: Option<Timestamp>,
    /// Wake-ups in the last hour, oldest first.
    recent: VecDeque<Timestamp>,
}

impl WakeLimiter {
    /// A message arrived for the session: a wake-up falls due after `limits.delay`, unless
    /// one is already scheduled or the session was woken and has not read since.
    pub fn message_arrived(&mut self, now: Timestamp, limits: &WakeLimits) {
        if !self.outstanding && self.scheduled.is_none() {
            self.scheduled = Some(now + limits.delay);
        }
    }

    /// The session read its inbox: a later message may wake it again.
    pub fn read(&mut self) {
        self.outstanding = false;
    }

    /// When the next wake-up falls due, if one is scheduled.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.scheduled
    }

    /// Time passed. `wakeable` says whether messages still wait and the session can still
    /// be woken (it is alive and has a way to be woken).
    pub fn handle_timeout(&mut self, now: Timestamp, limits: &WakeLimits, wakeable: bool) -> WakeDecision {
        if self.scheduled.is_none_or(|at| at > now) {
            return WakeDecision::Nothing;
        }
        self.scheduled = None;
        if !wakeable {
            return WakeDecision::Nothing;
        }
        while self.recent.front().is_some_and(|t| now.since(*t) >= HOUR) {
            self.recent.pop_front();
        }
        if let Some(last) = self.recent.back()
            && now.since(*last) < limits.cooldown
        {
            let until = *last + limits.cooldown;
            self.scheduled = Some(until);
            return WakeDecision::Cooldown { until };
        }
        if self.recent.len() >= limits.per_hour {
            return WakeDecision::OverLimit { per_hour: limits.per_hour };
        }
        self.recent.push_back(now);
        self.outstanding = true;
        WakeDecision::Wake
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: WakeLimits =
        WakeLimits { delay: Duration::from_secs(1), cooldown: Duration::from_secs(10), per_hour: 3 };

    fn at(secs: u64) -> Timestamp {
        Timestamp::from_millis(1_000_000 + secs * 1000)
    }

    #[test]
    fn a_burst_of_messages_is_one_wake_up_after_the_delay() {
        let mut w = WakeLimiter::default();
        w.message_arrived(at(0), &LIMITS);
        w.message_arrived(at(0), &LIMITS);
        assert_eq!(w.poll_timeout(), Some(at(1)));
        assert_eq!(w.handle_timeout(at(0), &LIMITS, true), WakeDecision::Nothing, "not due yet");
        assert_eq!(w.poll_timeout(), Some(at(1)), "still scheduled");
        assert_eq!(w.handle_timeout(at(1), &LIMITS, true), WakeDecision::Wake);
        assert_eq!(w.poll_timeout(), None);
        assert_eq!(w.handle_timeout(at(2), &LIMITS, true), WakeDecision::Nothing, "one wake-up per burst");
    }

    #[test]
    fn a_session_woken_and_not_read_is_not_woken_again() {
        let mut w = WakeLimiter::default();
        w.message_arrived(at(0), &LIMITS);
        assert_eq!(w.handle_timeout(at(1), &LIMITS, true), WakeDecision::Wake);
        w.message_arrived(at(100), &LIMITS);
        assert_eq!(w.poll_timeout(), None, "the last wake-up is unanswered");
        w.read();
        w.message_arrived(at(200), &LIMITS);
        assert_eq!(w.handle_timeout(at(201), &LIMITS, true), WakeDecision::Wake);
    }

    #[test]
    fn wake_ups_are_a_cooldown_apart() {
        let mut w = WakeLimiter::default();
        w.message_arrived(at(0), &LIMITS);
        assert_eq!(w.handle_timeout(at(1), &LIMITS, true), WakeDecision::Wake);
        w.read();
        w.message_arrived(at(2), &LIMITS);
        assert_eq!(w.handle_timeout(at(3), &LIMITS, true), WakeDecision::Cooldown { until: at(11) });
        assert_eq!(w.poll_timeout(), Some(at(11)), "deferred, not dropped");
        assert_eq!(w.handle_timeout(at(11), &LIMITS, true), WakeDecision::Wake);
    }

    #[test]
    fn nothing_waiting_or_no_way_to_wake_cancels_the_wake_up() {
        let mut w = WakeLimiter::default();
        w.message_arrived(at(0), &LIMITS);
        assert_eq!(w.handle_timeout(at(1), &LIMITS, false), WakeDecision::Nothing);
        assert_eq!(w.poll_timeout(), None);
        // Not counted as a wake-up: the next message wakes at once after its delay.
        w.message_arrived(at(2), &LIMITS);
        assert_eq!(w.handle_timeout(at(3), &LIMITS, true), WakeDecision::Wake);
    }

    /// WK2: a session that reads every wake-up and gets a new message each time (two agents
    /// answering each other, say) is woken at most `per_hour` times an hour, not forever.
    #[test]
    fn a_session_is_never_woken_more_than_per_hour_in_any_hour() {
        let mut w = WakeLimiter::default();
        let mut woken = Vec::new();
        let mut refused = 0;
        for minute in 0..180 {
            let now = at(minute * 60);
            w.message_arrived(now, &LIMITS);
            let due = now + LIMITS.delay;
            match w.handle_timeout(due, &LIMITS, true) {
                WakeDecision::Wake => woken.push(due),
                WakeDecision::OverLimit { per_hour } => {
                    assert_eq!(per_hour, 3);
                    refused += 1;
                }
                other => panic!("unexpected {other:?} at minute {minute}"),
            }
            w.read();
        }
        assert!(refused > 0);
        for (i, t) in woken.iter().enumerate() {
            let in_hour = woken.iter().skip(i).take_while(|u| u.since(*t) < HOUR).count();
            assert!(in_hour <= 3, "{in_hour} wake-ups in the hour from {t:?}");
        }
        // After an hour the oldest wake-ups no longer count: it is woken again.
        assert_eq!(woken.len(), 9, "three per hour over three hours: {woken:?}");
    }

    #[test]
    fn over_the_limit_nothing_stays_scheduled() {
        let mut w = WakeLimiter::default();
        for i in 0..3 {
            w.message_arrived(at(i * 20), &LIMITS);
            assert_eq!(w.handle_timeout(at(i * 20 + 1), &LIMITS, true), WakeDecision::Wake);
            w.read();
        }
        w.message_arrived(at(100), &LIMITS);
        assert_eq!(w.handle_timeout(at(101), &LIMITS, true), WakeDecision::OverLimit { per_hour: 3 });
        assert_eq!(w.poll_timeout(), None, "no timer left spinning");
        // An hour after the first, the next message wakes it.
        w.message_arrived(at(3601), &LIMITS);
        assert_eq!(w.handle_timeout(at(3602), &LIMITS, true), WakeDecision::Wake);
    }
}
