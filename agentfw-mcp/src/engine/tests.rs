//! The journal across versions: a database written by an earlier build opens and replays to
//! the same firewall state; one this build cannot read stops the daemon with a clear error.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agentfw_core::admission::Mode;
use agentfw_core::firewall::{AdminAction, Input, Outgoing, Output};
use agentfw_core::message::Agent;
use rusqlite::params;

use super::*;
use crate::config::StorageConfig;

/// Journal rows exactly as earlier builds wrote them (`{"input": …, "data": …}`).
const OLD_JOURNAL: [&str; 4] = [
    r#"{"input":"send","data":{"from":{"id":"a1","kind":"claude","project":"web","machine":""},"to":{"id":"a2","kind":"codex","project":"api","machine":""},"body":"the schema is ready","reply_to":null}}"#,
    r#"{"input":"human_turn","data":"a2"}"#,
    r#"{"input":"admin","data":{"action":"set_admission_mode","mode":"report"}}"#,
    r#"{"input":"timeout"}"#,
];

fn at(i: usize) -> Timestamp {
    Timestamp::from_millis(1_700_000_000_000 + 1000 * u64::try_from(i).unwrap())
}

fn seed(i: usize) -> [u8; 32] {
    [u8::try_from(i).unwrap() + 1; 32]
}

/// A home whose database holds `rows` as its journal (and no snapshot).
fn home_with_journal(rows: &[&str]) -> (tempfile::TempDir, Home) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path()).unwrap();
    drop(store::open(&home.db(), &StorageConfig::default()).unwrap());
    // Written the way an earlier build wrote them, not through this build's store.
    let db = rusqlite::Connection::open(home.db()).unwrap();
    for (i, input) in rows.iter().enumerate() {
        db.execute(
            "INSERT INTO journal (at, seed, input) VALUES (?1, ?2, ?3)",
            params![store::ms(at(i)), &seed(i)[..], input],
        )
        .unwrap();
    }
    (dir, home)
}

fn open(home: Home) -> Result<Engine, StoreError> {
    Engine::open(home, DaemonConfig::default(), None, at(100))
}

#[test]
fn a_journal_written_by_an_earlier_build_replays_to_the_same_state() {
    let (_dir, home) = home_with_journal(&OLD_JOURNAL);
    let mut engine = open(home).unwrap();
    // The four old inputs, then this machine's name, new to that state (issue 17).
    assert_eq!(engine.journal_rows, 5);
    assert_eq!(engine.fw.config().machine, DaemonConfig::default().relay.machine());
    assert_eq!(engine.fw.admission().mode(), Mode::Report);

    // The same inputs fed to a fresh firewall, with the same times and seeds.
    let web = Agent::new("a1", "claude", "web");
    let api = Agent::new("a2", "codex", "api");
    let mut direct = Firewall::new(DaemonConfig::default().firewall);
    direct.set_rules(Arc::clone(&engine.rules) as Arc<dyn agentfw_core::policy::Rules>);
    let inputs = [
        Input::Send(Outgoing {
            from: web.clone(),
            to: api.clone(),
            body: "the schema is ready".into(),
            reply_to: None,
        }),
        Input::HumanTurn(api.id.clone()),
        Input::Admin(AdminAction::SetAdmissionMode { mode: Mode::Report }),
        Input::Timeout,
        Input::Machine(DaemonConfig::default().relay.machine()),
    ];
    let mut first = None;
    for (i, input) in inputs.into_iter().enumerate() {
        if let Output::Accepted { message, .. } = direct.handle(at(i), &mut ChaCha20Rng::from_seed(seed(i)), input) {
            first = Some(message);
        }
        while direct.poll_event().is_some() {}
    }
    let first = first.expect("the send was accepted");

    // A reply to the replayed message: accepted into its thread only if the replay recorded it.
    let reply = Input::Send(Outgoing { from: api, to: web, body: "thanks".into(), reply_to: Some(first.id) });
    let from_replay = engine.fw.handle(at(10), &mut ChaCha20Rng::from_seed(seed(10)), reply.clone());
    let from_direct = direct.handle(at(10), &mut ChaCha20Rng::from_seed(seed(10)), reply);
    assert_eq!(from_replay, from_direct);
    match from_replay {
        Output::Accepted { message, .. } => assert_eq!(message.thread, first.thread),
        other => panic!("the reply was not accepted: {other:?}"),
    }
}

#[test]
fn a_journal_entry_this_build_cannot_read_is_a_clear_error_not_a_loss() {
    let (_dir, home) = home_with_journal(&[OLD_JOURNAL[0], r#"{"input":"teleport","data":{}}"#]);
    let e = open(home).unwrap_err().to_string();
    assert!(e.contains("journal entry 2"), "{e}");
    assert!(e.contains("newer agentfw"), "{e}");
    assert!(e.contains("unknown variant `teleport`"), "{e}");
}

/// A quarantine an earlier build saved holds a session id only (it knew no agent keys).
/// Opening the database tells the firewall the agent of each session kept in `sessions`,
/// so a new process of that agent (its harness started again in the same folder) is held.
#[test]
fn a_quarantine_saved_before_agent_keys_holds_a_new_process_of_its_agent() {
    let quarantine = r#"{"input":"admin","data":{"action":"quarantine","agent":"claude:4100:1699999000000","seconds":3600,"reason":"worm"}}"#;
    let (_dir, home) = home_with_journal(&[quarantine]);
    let identity = |pid: u32, started: u64| {
        format!(
            r#"{{"agent":"claude","pid":{pid},"started_at":{started},"exe":null,"cwd":"/srv/web","project":"web","label":"web (claude)","verified":true,"shared_host":false,"chain":[]}}"#
        )
    };
    let db = rusqlite::Connection::open(home.db()).unwrap();
    db.execute(
        "INSERT INTO sessions (agent_id, identity, first_seen, last_seen) VALUES (?1, ?2, ?3, ?3)",
        params!["claude:4100:1699999000000", identity(4100, 1_699_999_000_000), store::ms(at(0))],
    )
    .unwrap();
    drop(db);
    let engine = open(home).unwrap();
    let restarted: Identity = serde_json::from_str(&identity(4200, 1_700_000_050_000)).unwrap();
    let q = engine.fw.quarantine_for(at(101), &restarted.to_agent()).expect("the new process is held");
    assert_eq!(q.reason, "worm");
    let elsewhere = Agent { project: "docs".into(), ..restarted.to_agent() };
    assert!(engine.fw.quarantine_for(at(101), &elsewhere).is_none(), "another folder is another agent");
}

/// The snapshot is streamed into its row as a blob; one an earlier build wrote as text
/// still restores. Both give back exactly the state that was saved.
#[test]
fn a_snapshot_restores_whether_streamed_or_written_as_text_by_an_earlier_build() {
    let (_dir, home) = home_with_journal(&OLD_JOURNAL);
    let engine = open(home.clone()).unwrap();
    let state = engine.fw.snapshot();
    let expected = serde_json::to_value(&state).unwrap();
    assert!(engine.db.write_snapshot(at(200), &state).unwrap(), "the journal went into the snapshot");
    drop(engine);
    let db = rusqlite::Connection::open(home.db()).unwrap();
    let kind: String = db.query_row("SELECT typeof(state) FROM snapshot_state", [], |r| r.get(0)).unwrap();
    assert_eq!(kind, "blob");
    assert_eq!(serde_json::to_value(open(home.clone()).unwrap().fw.snapshot()).unwrap(), expected);

    db.execute("UPDATE snapshot_state SET state = ?1", [serde_json::to_string(&state).unwrap()]).unwrap();
    let kind: String = db.query_row("SELECT typeof(state) FROM snapshot_state", [], |r| r.get(0)).unwrap();
    assert_eq!(kind, "text");
    assert_eq!(serde_json::to_value(open(home).unwrap().fw.snapshot()).unwrap(), expected);
}
