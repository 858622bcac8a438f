//! Sequences of firewall inputs decoded from arbitrary bytes. Invariants: nothing panics,
//! every refusal and every denied decision carries a reason, a quarantined agent never gets
//! a message accepted, and once everything has had time to expire no state is left.
//!
//! `scripts/fuzz 60 firewall`

#![no_main]

use std::sync::Arc;

use agentfw_core::firewall::{AdminAction, Config, Event, Firewall, Input, Outgoing, Output, Verdict};
use agentfw_core::message::Agent;
use agentfw_core::policy::{MessageView, RuleVerdict, Rules, Stage};
use agentfw_core::time::Timestamp;
use libfuzzer_sys::fuzz_target;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// Refuses "evil" once forwarded, so containment is exercised.
struct Forwarded;

impl Rules for Forwarded {
    fn judge(&self, _stage: Stage, m: &MessageView<'_>) -> RuleVerdict {
        if m.provenance.hops >= 2 && m.folded.contains("evil") {
            RuleVerdict::Deny { rule: "fuzz".into(), reason: "forwarded evil".into() }
        } else {
            RuleVerdict::Allow
        }
    }
}

const TEXTS: [&str; 6] = [
    "what JSON should /health return?",
    "an evil plan that travels from agent to agent until someone runs it",
    "ok thanks",
    "",
    "deploy is frozen until the incident review on thursday is over",
    "\u{202e}\0\u{200b}",
];

fuzz_target!(|bytes: &[u8]| {
    let agents: Vec<Agent> = (0..4).map(|i| Agent::new(format!("a{i}"), "claude", format!("p{i}"))).collect();
    let mut fw = Firewall::new(Config::default());
    fw.set_rules(Arc::new(Forwarded));
    let mut rng = ChaCha20Rng::seed_from_u64(0);
    let mut now = 1_796_047_500_000u64;
    let mut inboxes: Vec<Vec<agentfw_core::firewall::Accepted>> = vec![Vec::new(); 4];
    for chunk in bytes.chunks(3) {
        let [op, a, b] = [chunk.first(), chunk.get(1), chunk.get(2)].map(|x| usize::from(x.copied().unwrap_or(0)));
        let (from, to) = (a % 4, b % 4);
        let input = match op % 6 {
            0 | 1 => Input::Send(Outgoing {
                from: agents[from].clone(),
                to: agents[to].clone(),
                body: format!("{}{}", TEXTS[b % TEXTS.len()], " ".repeat(a % 3)),
                reply_to: None,
            }),
            2 => match inboxes[from].pop() {
                Some(m) => Input::Deliver(m),
                None => continue,
            },
            3 => Input::HumanTurn(agents[from].id.clone()),
            4 => Input::Admin(AdminAction::LiftQuarantine { agent: agents[from].id.clone() }),
            _ => {
                now += (a * 256 + b) as u64 * 1000;
                Input::Timeout
            }
        };
        let t = Timestamp::from_millis(now);
        let quarantined = matches!(&input, Input::Send(o) if fw.quarantine_of(t, &o.from.id).is_some());
        match fw.handle(t, &mut rng, input) {
            Output::Accepted { message, .. } => {
                assert!(!quarantined, "a quarantined agent sent");
                let to = agents.iter().position(|x| x.id == message.to.id).unwrap();
                inboxes[to].push(message);
            }
            Output::Held { message, .. } => {
                let to = agents.iter().position(|x| x.id == message.to.id).unwrap();
                inboxes[to].push(message);
            }
            Output::Refused(r) => assert!(!r.reason.text.is_empty()),
            Output::Delivered { .. } | Output::Done => {}
        }
        while let Some(event) = fw.poll_event() {
            if let Event::Decision(d) = event {
                assert_eq!(d.reason.is_some(), d.verdict != Verdict::Allow);
            }
        }
    }
    fw.handle(Timestamp::from_millis(now + 8 * 24 * 3_600_000), &mut rng, Input::Timeout);
    assert_eq!(fw.poll_timeout(), None, "state left behind after every window expired");
});
