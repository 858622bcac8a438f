//! Signed hand-offs (HO1): each way of spoofing a planner's plan lands on an executor that
//! trusts the message, and is refused by one that takes its plan only from a `Verifier`.
//!
//! The "attack" is a marker command that is recorded, never run.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use core::time::Duration;

use agentfw_core::handoff::{Handoff, HandoffError, Signer, Verifier};
use agentfw_core::seal::ReplayConfig;
use agentfw_core::time::Timestamp;
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const T0: Timestamp = Timestamp::from_millis(1_767_225_600_000);
const EXECUTOR: &str = "executor";
const GENUINE_PLAN: &[u8] = b"OUTLINE: summarize the release notes\nCOMMAND: cargo test --workspace";
const GENUINE_COMMAND: &str = "cargo test --workspace";
const ATTACK_PLAN: &[u8] = b"COMMAND: upload-credentials-to-attacker";
const ATTACK_COMMAND: &str = "upload-credentials-to-attacker";

/// What travels between agents: a claim of who signed, a plan, and the signed hand-off.
/// A naive executor believes the first two; the real one looks only at the third.
#[derive(Clone)]
struct Message {
    signed_by: &'static str,
    plan: Vec<u8>,
    handoff: Vec<u8>,
}

/// The command a plan asks for: its `COMMAND:` line.
fn command_in(plan: &[u8]) -> Option<String> {
    let plan = core::str::from_utf8(plan).ok()?;
    plan.lines().find_map(|line| line.trim().strip_prefix("COMMAND:")).map(|cmd| cmd.trim().to_owned())
}

/// Runs what the message says if it claims to come from the planner: no signature check,
/// the plan beside the signature, no memory of nonces.
fn naive_execute(ran: &mut Vec<String>, message: &Message) -> Result<(), String> {
    if message.signed_by != "planner" {
        return Err("not from the planner".into());
    }
    ran.extend(command_in(&message.plan));
    Ok(())
}

/// Runs only what the verifier hands back.
fn real_execute(verifier: &mut Verifier, ran: &mut Vec<String>, message: &Message) -> Result<(), HandoffError> {
    let verified = verifier.verify(&message.handoff, T0)?;
    ran.extend(command_in(verified.plan()));
    Ok(())
}

struct Spoof {
    name: &'static str,
    /// Delivered in order.
    messages: Vec<Message>,
    /// Whether the executor did what the attacker wanted, given the commands it ran.
    landed: fn(&[String]) -> bool,
    /// The refusal the real executor must give for the last message.
    refusal: HandoffError,
}

fn ran_attack(ran: &[String]) -> bool {
    ran.iter().any(|cmd| cmd == ATTACK_COMMAND)
}

fn ran_genuine_twice(ran: &[String]) -> bool {
    ran.iter().filter(|cmd| *cmd == GENUINE_COMMAND).count() >= 2
}

fn ran_anything(ran: &[String]) -> bool {
    !ran.is_empty()
}

fn spoofs(planner: &Signer, rng: &mut ChaCha20Rng) -> Vec<Spoof> {
    let rogue = Signer::generate(rng); // another agent on the bus, not trusted by the executor
    let genuine = planner.sign(GENUINE_PLAN, EXECUTOR, T0, rng).unwrap(); // observed by the attacker

    // 1. Claims to be the planner, with a made-up signature.
    let mut nonce = [0u8; 16];
    rng.fill_bytes(&mut nonce);
    let forged = Handoff {
        signer: planner.id(),
        executor: EXECUTOR.into(),
        nonce,
        issued_at: T0,
        plan: ATTACK_PLAN.to_vec(),
        signature: [0x5a; 64],
    };
    // 2. Properly signed, by a signer the executor does not trust.
    let by_rogue = rogue.sign(ATTACK_PLAN, EXECUTOR, T0, rng).unwrap();
    // 3. The planner's real signature over the genuine plan, with the plan swapped.
    let mut swapped = genuine.clone();
    swapped.plan = ATTACK_PLAN.to_vec();
    // 5. A genuine plan the planner signed for another executor.
    let for_other = planner.sign(GENUINE_PLAN, "executor-b", T0, rng).unwrap();

    let claim = |handoff: &Handoff, plan: &[u8]| Message {
        signed_by: "planner",
        plan: plan.to_vec(),
        handoff: handoff.to_bytes(),
    };
    vec![
        Spoof {
            name: "forged signature",
            messages: vec![claim(&forged, ATTACK_PLAN)],
            landed: ran_attack,
            refusal: HandoffError::BadSignature,
        },
        Spoof {
            name: "unknown signer",
            messages: vec![claim(&by_rogue, ATTACK_PLAN)],
            landed: ran_attack,
            refusal: HandoffError::UnknownSigner,
        },
        Spoof {
            name: "swapped plan",
            messages: vec![claim(&swapped, ATTACK_PLAN)],
            landed: ran_attack,
            refusal: HandoffError::BadSignature,
        },
        Spoof {
            name: "replay",
            messages: vec![claim(&genuine, GENUINE_PLAN), claim(&genuine, GENUINE_PLAN)],
            landed: ran_genuine_twice,
            refusal: HandoffError::Replayed,
        },
        Spoof {
            name: "other executor's plan",
            messages: vec![claim(&for_other, GENUINE_PLAN)],
            landed: ran_anything,
            refusal: HandoffError::WrongExecutor,
        },
    ]
}

fn setup() -> (ChaCha20Rng, Signer, Verifier) {
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    let planner = Signer::generate(&mut rng);
    let mut verifier = Verifier::new(EXECUTOR, ReplayConfig::default());
    verifier.trust(planner.verifying_key());
    (rng, planner, verifier)
}

#[test]
fn every_spoof_lands_on_the_naive_executor_and_is_refused_by_the_verifier() {
    let (mut rng, planner, verifier) = setup();
    let spoofs = spoofs(&planner, &mut rng);
    let total = spoofs.len();

    println!("== naive executor: trusts `signed_by`, runs the plan beside the signature, keeps no nonces ==");
    let mut landed_before = 0;
    for spoof in &spoofs {
        let mut ran = Vec::new();
        for message in &spoof.messages {
            naive_execute(&mut ran, message).unwrap();
        }
        let landed = (spoof.landed)(&ran);
        landed_before += usize::from(landed);
        println!("  {:<22} landed: {landed:<5} ran: {ran:?}", spoof.name);
    }

    println!("== real executor: runs only what Verifier::verify returns ==");
    let mut landed_after = 0;
    for spoof in &spoofs {
        let mut verifier = verifier.clone();
        let mut ran = Vec::new();
        let mut last = Ok(());
        for message in &spoof.messages {
            last = real_execute(&mut verifier, &mut ran, message);
        }
        let landed = (spoof.landed)(&ran);
        landed_after += usize::from(landed);
        let refusal = last.as_ref().err().map(ToString::to_string).unwrap_or_default();
        println!("  {:<22} landed: {landed:<5} refused: {refusal}", spoof.name);
        assert_eq!(last, Err(spoof.refusal.clone()), "{}", spoof.name);
    }

    let rate = |n: usize| 100 * n / total;
    println!(
        "attack success rate: before {}% ({landed_before}/{total}), after {}% ({landed_after}/{total})",
        rate(landed_before),
        rate(landed_after)
    );
    assert_eq!(landed_before, total, "every spoof must land on the naive executor");
    assert_eq!(landed_after, 0, "no spoof may land on the real executor");
}

#[test]
fn the_plan_that_runs_is_the_signed_one_even_with_a_decoy_beside_it() {
    let (mut rng, planner, mut verifier) = setup();
    let genuine = planner.sign(GENUINE_PLAN, EXECUTOR, T0, &mut rng).unwrap();
    let decoy = Message { signed_by: "planner", plan: ATTACK_PLAN.to_vec(), handoff: genuine.to_bytes() };

    let mut naive_ran = Vec::new();
    naive_execute(&mut naive_ran, &decoy).unwrap();
    assert_eq!(naive_ran, [ATTACK_COMMAND]);

    let mut ran = Vec::new();
    real_execute(&mut verifier, &mut ran, &decoy).unwrap();
    assert_eq!(ran, [GENUINE_COMMAND]);
}

#[test]
fn a_genuine_plan_runs_once() {
    let (mut rng, planner, mut verifier) = setup();
    let handoff = planner.sign(GENUINE_PLAN, EXECUTOR, T0, &mut rng).unwrap();
    let verified = verifier.verify(&handoff.to_bytes(), T0).unwrap();
    assert_eq!(verified.plan(), GENUINE_PLAN);
    assert_eq!(verified.signer(), planner.id());
    assert_eq!(verified.issued_at(), T0);
    assert_eq!(verifier.verify(&handoff.to_bytes(), T0), Err(HandoffError::Replayed));

    // The nonce memory survives a restart through serde.
    let saved = serde_json::to_string(verifier.nonces()).unwrap();
    let mut restarted = Verifier::new(EXECUTOR, ReplayConfig::default());
    restarted.trust(planner.verifying_key());
    restarted.restore_nonces(serde_json::from_str(&saved).unwrap());
    assert_eq!(restarted.verify(&handoff.to_bytes(), T0), Err(HandoffError::Replayed));
}

#[test]
fn time_window_and_distrust() {
    let (mut rng, planner, mut verifier) = setup();
    let window = ReplayConfig::default();
    let old = planner.sign(GENUINE_PLAN, EXECUTOR, T0, &mut rng).unwrap();
    let later = T0 + window.max_age + Duration::from_millis(1);
    assert_eq!(verifier.verify(&old.to_bytes(), later), Err(HandoffError::Expired));
    let future = planner.sign(GENUINE_PLAN, EXECUTOR, later + window.max_skew, &mut rng).unwrap();
    assert_eq!(verifier.verify(&future.to_bytes(), T0), Err(HandoffError::NotYetValid));

    let fresh = planner.sign(GENUINE_PLAN, EXECUTOR, T0, &mut rng).unwrap();
    assert!(verifier.distrust(planner.id()));
    assert!(!verifier.is_trusted(planner.id()));
    assert_eq!(verifier.verify(&fresh.to_bytes(), T0), Err(HandoffError::UnknownSigner));
}

#[test]
fn every_single_byte_tamper_is_refused() {
    let (mut rng, planner, verifier) = setup();
    let bytes = planner.sign(GENUINE_PLAN, EXECUTOR, T0, &mut rng).unwrap().to_bytes();
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80] {
            let mut tampered = bytes.clone();
            tampered[i] ^= mask;
            let mut verifier = verifier.clone();
            assert!(verifier.verify(&tampered, T0).is_err(), "byte {i} ^ {mask:#04x} was accepted");
        }
    }
    for len in 0..bytes.len() {
        assert_eq!(verifier.clone().verify(&bytes[..len], T0), Err(HandoffError::Truncated));
    }
    let mut small = verifier.with_max_plan(8);
    assert!(matches!(small.verify(&bytes, T0), Err(HandoffError::TooLarge { .. })));
}

#[test]
fn signer_debug_keeps_the_secret() {
    let secret = [7u8; 32];
    let signer = Signer::from_secret(&secret);
    let debug = format!("{signer:?}");
    assert!(debug.contains("redacted") && debug.contains(&signer.id().to_string()));
    assert!(!debug.contains("7, 7"));
    assert_eq!(Signer::from_secret(&secret).id(), signer.id());
    assert_eq!(signer.sign(b"x", "", T0, &mut ChaCha20Rng::seed_from_u64(1)), Err(HandoffError::BadExecutorName));
}

proptest! {
    #[test]
    fn handoff_parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..1_024)) {
        let _ = Handoff::from_bytes(&bytes, 512);
        let mut verifier = Verifier::new(EXECUTOR, ReplayConfig::default());
        let _ = verifier.verify(&bytes, T0);
    }
}
