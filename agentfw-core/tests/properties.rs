//! Properties that must hold for any input: folding is idempotent, and the firewall never
//! panics, never refuses without a reason, never lets a quarantined agent send, and keeps
//! its state bounded.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;

use agentfw_core::firewall::{AdminAction, Config, Event, Firewall, Input, Outgoing, Output};
use agentfw_core::message::Agent;
use agentfw_core::normalize::fold;
use agentfw_core::policy::{MessageView, RuleVerdict, Rules, Stage};
use agentfw_core::time::Timestamp;
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

proptest! {
    #[test]
    fn fold_is_idempotent(text in "(?s).{0,200}") {
        let once = fold(&text);
        prop_assert_eq!(fold(&once), once);
    }

    #[test]
    fn fold_ignores_case_spacing_and_invisibles(words in prop::collection::vec("[a-z]{1,8}", 1..8)) {
        let plain = words.join(" ");
        let dressed = words.iter().map(|w| w.to_uppercase()).collect::<Vec<_>>().join(" \u{200B}\t ");
        prop_assert_eq!(fold(&dressed), fold(&plain));
    }
}

/// Refuses bodies containing "evil" at two hops or more, and "boom" everywhere.
struct TestRules;

impl Rules for TestRules {
    fn judge(&self, _stage: Stage, m: &MessageView<'_>) -> RuleVerdict {
        if (m.provenance.hops >= 2 && m.folded.contains("evil")) || m.folded.contains("boom") {
            RuleVerdict::Deny { rule: "test".into(), reason: "test rule".into() }
        } else {
            RuleVerdict::Allow
        }
    }
}

#[derive(Clone, Debug)]
enum Step {
    Send { from: usize, to: usize, body: usize, reply: bool },
    Read(usize),
    Human(usize),
    Lift(usize),
    Wait(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..5usize, 0..5usize, 0..BODIES.len(), any::<bool>()).prop_map(|(from, to, body, reply)| Step::Send { from, to, body, reply }),
        4 => (0..5usize).prop_map(Step::Read),
        1 => (0..5usize).prop_map(Step::Human),
        1 => (0..5usize).prop_map(Step::Lift),
        2 => (0..4_000_000u64).prop_map(Step::Wait),
    ]
}

const BODIES: &[&str] = &[
    "What JSON should the /health endpoint return?",
    "an evil plan that travels from agent to agent until someone runs it",
    "boom",
    "ok thanks",
    "",
    "Please rerun the integration suite against staging and report the p99 latency.",
    "\u{202E}\0\u{200B}",
    "Deploy is frozen until the incident review on Thursday afternoon is over.",
];

/// The input `step` stands for, given the messages waiting in each inbox; `None` when there
/// is nothing to read.
fn input(
    step: Step,
    agents: &[Agent],
    inboxes: &mut [Vec<agentfw_core::firewall::Accepted>],
    now: &mut Timestamp,
    last_id: Option<agentfw_core::message::MessageId>,
) -> Option<Input> {
    Some(match step {
        Step::Send { from, to, body, reply } => Input::Send(Outgoing {
            from: agents[from].clone(),
            to: agents[to].clone(),
            body: format!("{}{}", BODIES[body], if body % 2 == 0 { "" } else { " " }),
            reply_to: if reply { last_id } else { None },
        }),
        Step::Read(who) => Input::Deliver(inboxes[who].pop()?),
        Step::Human(who) => Input::HumanTurn(agents[who].id.clone()),
        Step::Lift(who) => Input::Admin(AdminAction::LiftQuarantine { agent: agents[who].id.clone() }),
        Step::Wait(ms) => {
            *now = Timestamp::from_millis(now.as_millis() + ms);
            Input::Timeout
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn firewall_invariants_hold_for_any_sequence(steps in prop::collection::vec(step(), 1..120), seed in any::<u64>()) {
        let agents: Vec<Agent> = (0..5).map(|i| Agent::new(format!("a{i}"), "claude", format!("p{i}"))).collect();
        let mut fw = Firewall::new(Config::default());
        fw.set_rules(Arc::new(TestRules));
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut now = Timestamp::from_millis(1_796_047_500_000);
        let mut inboxes: Vec<Vec<agentfw_core::firewall::Accepted>> = vec![Vec::new(); 5];
        let mut last_id = None;
        for step in steps {
            let Some(input) = input(step, &agents, &mut inboxes, &mut now, last_id) else { continue };
            let sender_quarantined = match &input {
                Input::Send(o) => fw.quarantine_of(now, &o.from.id).is_some(),
                _ => false,
            };
            match fw.handle(now, &mut rng, input) {
                Output::Accepted { message, .. } => {
                    prop_assert!(!sender_quarantined, "a quarantined agent sent");
                    last_id = Some(message.id);
                    let to = agents.iter().position(|a| a.id == message.to.id).unwrap();
                    inboxes[to].push(message);
                }
                Output::Refused(r) => prop_assert!(!r.reason.text.is_empty()),
                Output::Held { message, .. } => {
                    let to = agents.iter().position(|a| a.id == message.to.id).unwrap();
                    inboxes[to].push(message);
                }
                Output::Delivered { .. } | Output::Done => {}
            }
            while let Some(event) = fw.poll_event() {
                if let Event::Decision(d) = event {
                    prop_assert_eq!(d.reason.is_some(), d.verdict != agentfw_core::firewall::Verdict::Allow);
                }
            }
        }
        // Bounded: after everything has had time to expire, nothing is left behind.
        let end = Timestamp::from_millis(now.as_millis() + 8 * 24 * 3600 * 1000);
        fw.handle(end, &mut rng, Input::Timeout);
        prop_assert!(fw.ledger().is_empty());
        prop_assert_eq!(fw.containment().quarantined().count(), 0);
        prop_assert_eq!(fw.containment().remembered().count(), 0);
        prop_assert_eq!(fw.poll_timeout(), None, "every limit counter has expired too");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
    /// An adapter journals each input as JSON with its time and a fresh seed; replaying the
    /// journal into a new firewall makes every decision the same (message ids included).
    #[test]
    fn a_journal_of_inputs_replays_to_the_same_decisions(steps in prop::collection::vec(step(), 1..80), seed in any::<u64>()) {
        let agents: Vec<Agent> = (0..5).map(|i| Agent::new(format!("a{i}"), "claude", format!("p{i}"))).collect();
        let mut live = Firewall::new(Config::default());
        live.set_rules(Arc::new(TestRules));
        let mut seeds = ChaCha20Rng::seed_from_u64(seed);
        let mut now = Timestamp::from_millis(1_796_047_500_000);
        let mut inboxes: Vec<Vec<agentfw_core::firewall::Accepted>> = vec![Vec::new(); 5];
        let mut journal = Vec::new();
        let mut last_id = None;
        for step in steps {
            let Some(input) = input(step, &agents, &mut inboxes, &mut now, last_id) else { continue };
            let mut input_seed = [0u8; 32];
            rand_core::Rng::fill_bytes(&mut seeds, &mut input_seed);
            let entry = serde_json::to_string(&input).unwrap();
            let out = live.handle(now, &mut ChaCha20Rng::from_seed(input_seed), input);
            while live.poll_event().is_some() {}
            if let Output::Accepted { message, .. } | Output::Held { message, .. } = &out {
                let to = agents.iter().position(|a| a.id == message.to.id).unwrap();
                inboxes[to].push(message.clone());
                last_id = Some(message.id);
            }
            journal.push((now, input_seed, entry, out));
        }
        let mut replayed = Firewall::new(Config::default());
        replayed.set_rules(Arc::new(TestRules));
        for (at, input_seed, entry, out) in journal {
            let input: Input = serde_json::from_str(&entry).unwrap();
            prop_assert_eq!(replayed.handle(at, &mut ChaCha20Rng::from_seed(input_seed), input), out);
            while replayed.poll_event().is_some() {}
        }
    }
}

/// The journal format adapters keep on disk: changing it would strand their journals.
#[test]
fn inputs_serialize_in_the_stable_journal_format() {
    let web = Agent::new("a1", "claude", "web");
    let api = Agent::new("a2", "codex", "api");
    let cases = [
        (
            Input::Send(Outgoing { from: web, to: api.clone(), body: "the schema is ready".into(), reply_to: None }),
            r#"{"input":"send","data":{"from":{"id":"a1","kind":"claude","project":"web","machine":""},"to":{"id":"a2","kind":"codex","project":"api","machine":""},"body":"the schema is ready","reply_to":null}}"#,
        ),
        (Input::HumanTurn(api.id.clone()), r#"{"input":"human_turn","data":"a2"}"#),
        (
            Input::Seen(api.clone()),
            r#"{"input":"seen","data":{"id":"a2","kind":"codex","project":"api","machine":""}}"#,
        ),
        (
            Input::Admin(AdminAction::LiftQuarantine { agent: api.id }),
            r#"{"input":"admin","data":{"action":"lift_quarantine","agent":"a2"}}"#,
        ),
        (Input::Timeout, r#"{"input":"timeout"}"#),
    ];
    for (input, json) in cases {
        assert_eq!(serde_json::to_string(&input).unwrap(), json);
        assert_eq!(serde_json::from_str::<Input>(json).unwrap(), input);
    }
}
