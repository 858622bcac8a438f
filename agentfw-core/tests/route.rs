//! The relay and the daemons share one route check (AM2, CT1, TR1, AD8): on every
//! combination of a disconnected pair, a quarantine on either end, the trust file's say and
//! admission (off, report-only, enforced; either end over the threshold), the relay's
//! central `Policy::check` refuses an envelope with exactly the code the firewalls at its two ends
//! refuse or hold it with (the sender's on send, then the recipient's on delivery), and
//! warns about the same agents when it passes.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use agentfw_core::admission::{Inventory, Mode};
use agentfw_core::central::Policy;
use agentfw_core::firewall::{AdminAction, Config, Event, Firewall, Input, Outgoing, Output};
use agentfw_core::message::{Agent, AgentId};
use agentfw_core::policy::SourceFile;
use agentfw_core::route::Verdict;
use agentfw_core::time::Timestamp;
use agentfw_core::trust::{Trust, TrustFile};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const T0: Timestamp = Timestamp::from_millis(1_767_225_600_000);

fn web() -> Agent {
    Agent::new("claude:1:1", "claude", "web")
}

fn api() -> Agent {
    Agent::new("codex:2:2", "codex", "api")
}

fn trust(text: &str) -> Trust {
    Trust::File(TrustFile::parse(&SourceFile::new("trust.yaml", text)).unwrap())
}

/// One combination, as the admin actions that set it up.
fn setup(
    disconnect: bool,
    quarantined: Option<&Agent>,
    trust: &Trust,
    mode: Mode,
    high: [bool; 2],
) -> Vec<AdminAction> {
    let score = |high: bool| if high { 8.0 } else { 2.0 };
    let inventory = format!(
        r#"{{"agents": [{{"agent": "web (claude)", "components": [{{"id": "mcp:one", "score": {}}}]}},
                        {{"agent": "api (codex)", "components": [{{"id": "mcp:two", "score": {}}}]}}]}}"#,
        score(high[0]),
        score(high[1])
    );
    let mut actions = vec![
        AdminAction::SetInventory { inventory: Inventory::from_json(&inventory).unwrap() },
        AdminAction::SetAdmissionMode { mode },
        AdminAction::SetTrust { trust: trust.clone() },
    ];
    if disconnect {
        actions.push(AdminAction::Disconnect { a: api().id, b: web().id, reason: "review".into() });
    }
    if let Some(agent) = quarantined {
        actions.push(AdminAction::Quarantine {
            agent: agent.id.clone(),
            seconds: 600,
            reason: "admin".into(),
            key: None,
        });
    }
    actions
}

/// What the two ends' firewalls make of a message from web to api: the code that refused
/// or held it (on send, else on delivery), and the agents report-only admission warned of.
fn firewalls(actions: &[AdminAction]) -> (Option<String>, BTreeSet<AgentId>) {
    let mut fw = Firewall::new(Config::default());
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for action in actions {
        let _ = fw.handle(T0, &mut rng, Input::Admin(action.clone()));
    }
    let out = Outgoing { from: web(), to: api(), body: "Which port does staging use?".into(), reply_to: None };
    let code = match fw.handle(T0, &mut rng, Input::Send(out)) {
        Output::Refused(r) => Some(r.reason.code),
        Output::Accepted { message, .. } => match fw.handle(T0, &mut rng, Input::Deliver(message)) {
            Output::Refused(r) => Some(r.reason.code),
            Output::Held { reason, .. } => Some(reason.code),
            Output::Delivered { .. } => None,
            other => panic!("unexpected delivery output {other:?}"),
        },
        other => panic!("unexpected send output {other:?}"),
    };
    let warned = core::iter::from_fn(|| fw.poll_event())
        .filter_map(|e| match e {
            Event::WouldRefuse { agent, .. } => Some(agent),
            _ => None,
        })
        .collect();
    (code.map(|c| c.to_string()), warned)
}

#[test]
fn the_relay_and_the_firewalls_agree_on_every_combination() {
    let trusts = [
        ("no trust file", Trust::Unset),
        ("both listed", trust("version: 1\nteammates:\n  web (claude): {}\n  api (codex): {}\n")),
        ("sender blocked", trust("version: 1\nunknown_teammates: {policy: allow}\nblocked: [web (claude)]\n")),
        ("recipient blocked", trust("version: 1\nunknown_teammates: {policy: allow}\nblocked: [api (codex)]\n")),
        ("sender unknown", trust("version: 1\nteammates:\n  api (codex): {}\n")),
        ("unreadable", Trust::Unreadable("the trust file has errors".into())),
    ];
    let (sender, recipient) = (web(), api());
    let mut disagreements = Vec::new();
    let mut codes = BTreeSet::new();
    let mut combinations = 0;
    for disconnect in [false, true] {
        for quarantined in [None, Some(&sender), Some(&recipient)] {
            for (trust_name, trust) in &trusts {
                for mode in [Mode::Off, Mode::Report, Mode::Enforce] {
                    for high in [[false, false], [true, false], [false, true], [true, true]] {
                        combinations += 1;
                        let actions = setup(disconnect, quarantined, trust, mode, high);
                        let mut policy = Policy::new();
                        policy.apply(1, T0, &actions);
                        let relay = policy.check(T0, &sender, &recipient);
                        let (fw_code, warned) = firewalls(&actions);
                        let agree = match (&relay.verdict, &fw_code) {
                            (Verdict::Refuse(r), Some(fw)) => r.code.to_string() == *fw,
                            (Verdict::Pass { .. }, None) => relay.warnings.len() == warned.len(),
                            _ => false,
                        };
                        codes.insert(fw_code.clone().unwrap_or_else(|| "pass".into()));
                        if !agree {
                            let q = quarantined.map(Agent::label);
                            disagreements.push(format!(
                                "disconnected {disconnect}, quarantined {q:?}, trust {trust_name}, admission {mode:?} \
                                 over the threshold {high:?}: relay {relay:?}, firewalls {fw_code:?} warning {warned:?}"
                            ));
                        }
                    }
                }
            }
        }
    }
    assert_eq!(combinations, 432);
    assert!(disagreements.is_empty(), "{} disagreements:\n{}", disagreements.len(), disagreements.join("\n"));
    // Every check decided somewhere, so no combination agreed only by never being reached.
    let want = [
        "admin.disconnected",
        "admission.refused",
        "containment.quarantined",
        "pass",
        "trust.blocked",
        "trust.invalid",
        "trust.unknown",
    ];
    assert_eq!(codes, want.iter().map(|c| (*c).to_owned()).collect::<BTreeSet<_>>());
}
