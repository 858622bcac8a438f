//! Databases earlier builds wrote: opened, migrated with every row they hold, and numbered
//! on from where they were, so no seq read as a cursor is handed out twice.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use agentfw_core::firewall::{Decision, Firewall, Input, Verdict};
use agentfw_core::message::{Agent, AgentId};
use agentfw_core::policy::Stage;
use rand_core::SeedableRng;
use rusqlite::types::Value;

use super::*;
use crate::config::{DaemonConfig, StorageConfig};

/// Schema 1, exactly as earlier builds created it.
const SCHEMA_1: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    seed BLOB NOT NULL,
    input TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    state TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS inbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    recipient TEXT NOT NULL,
    sender TEXT NOT NULL,
    sender_label TEXT NOT NULL,
    message TEXT,
    note TEXT,
    state TEXT NOT NULL,
    not_before INTEGER NOT NULL,
    accepted_at INTEGER NOT NULL,
    done_at INTEGER,
    batch TEXT,
    fenced TEXT,
    warnings TEXT,
    reason TEXT
);
CREATE INDEX IF NOT EXISTS inbox_waiting ON inbox (recipient, state, seq);
CREATE INDEX IF NOT EXISTS inbox_batch ON inbox (recipient, batch);
CREATE TABLE IF NOT EXISTS sends (
    sender TEXT NOT NULL,
    key TEXT NOT NULL,
    at INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    PRIMARY KEY (sender, key)
);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    message TEXT NOT NULL,
    stage TEXT NOT NULL,
    from_id TEXT NOT NULL,
    from_label TEXT NOT NULL,
    to_id TEXT NOT NULL,
    to_label TEXT NOT NULL,
    size INTEGER NOT NULL,
    hops INTEGER NOT NULL,
    verdict TEXT NOT NULL,
    code TEXT,
    rule TEXT,
    reason TEXT,
    unverified TEXT
);
CREATE INDEX IF NOT EXISTS audit_at ON audit (at);
CREATE TABLE IF NOT EXISTS sessions (
    agent_id TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    session_id TEXT,
    thread_id TEXT,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    device TEXT NOT NULL,
    message TEXT NOT NULL,
    at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ratings (
    component TEXT PRIMARY KEY,
    score REAL,
    source TEXT NOT NULL,
    at INTEGER NOT NULL
);
";

/// The tables whose rows a migration must keep, with the column they are ordered by.
const TABLES: [(&str, &str); 9] = [
    ("meta", "key"),
    ("journal", "seq"),
    ("snapshot", "id"),
    ("inbox", "seq"),
    ("sends", "key"),
    ("audit", "seq"),
    ("sessions", "agent_id"),
    ("outbox", "seq"),
    ("ratings", "component"),
];

fn rows(db: &Connection, table: &str, order: &str) -> Vec<Vec<Value>> {
    let mut stmt = db.prepare(&format!("SELECT * FROM {table} ORDER BY {order}")).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect()).unwrap().map(Result::unwrap).collect()
}

/// A schema 1 database with rows in every table, written as an earlier build wrote them:
/// a snapshot covering the journal up to 500, audit records up to 45 of which 43 to 45
/// remain (`audit_keep`) or none, inbox and outbox rows numbered from where they were.
fn old_home(audit_kept: bool) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agentfw.db");
    let db = Connection::open(&path).unwrap();
    db.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
    db.execute_batch(SCHEMA_1).unwrap();
    let state = serde_json::to_string(&Firewall::new(DaemonConfig::default().firewall).snapshot()).unwrap();
    db.execute_batch(&format!(
        "INSERT INTO meta VALUES ('schema', '1'), ('boot_id', 'b0');
         INSERT INTO snapshot VALUES (1, 500, 1700000000000, '{}');
         INSERT INTO journal VALUES (501, 1700000001000, zeroblob(32), '{{\"input\":\"timeout\"}}'),
                                    (502, 1700000002000, zeroblob(32), '{{\"input\":\"timeout\"}}');
         INSERT INTO inbox (seq, id, kind, recipient, sender, sender_label, message, state, not_before, accepted_at, batch, fenced)
             VALUES (6, 'm6', 'message', 'a2', 'a1', 'web (claude)', NULL, 'delivered', 0, 1700000000000, 'b1', NULL),
                    (7, 'm7', 'message', 'a2', 'a1', 'web (claude)', '{{}}', 'pending', 0, 1700000000000, NULL, NULL);
         INSERT INTO sends VALUES ('a1', 'k1', 1700000000000, '{{\"Sent\":{{}}}}');
         INSERT INTO audit (seq, at, message, stage, from_id, from_label, to_id, to_label, size, hops, verdict)
             VALUES (43, 1700000000000, 'm5', 'sending', 'a1', 'web', 'a2', 'api', 10, 0, 'allow'),
                    (44, 1700000000001, 'm6', 'sending', 'a1', 'web', 'a2', 'api', 10, 0, 'allow'),
                    (45, 1700000000002, 'm7', 'sending', 'a1', 'web', 'a2', 'api', 10, 0, 'allow');
         INSERT INTO sessions VALUES ('a1', '{{}}', NULL, NULL, 1700000000000, 1700000000000);
         INSERT INTO outbox VALUES (3, 'm3', 'd1', '{{}}', 1700000000000);
         INSERT INTO ratings VALUES ('mcp:x', 0.5, 'test', 1700000000000);",
        state.replace('\'', "''")
    ))
    .unwrap();
    if !audit_kept {
        db.execute_batch("DELETE FROM audit;").unwrap();
    }
    let sequence: i64 = db.query_row("SELECT seq FROM sqlite_sequence WHERE name = 'audit'", [], |r| r.get(0)).unwrap();
    assert_eq!(sequence, 45, "the fixture is what schema 1 leaves");
    (dir, path)
}

fn decision(at_ms: u64) -> Decision {
    Decision {
        at: Timestamp::from_millis(at_ms),
        id: "01ARZ3NDEKTSV4RRFFQ69G5FAV".parse().unwrap(),
        stage: Stage::Sending,
        from: AgentId::new("a1"),
        from_label: "web (claude)".into(),
        to: AgentId::new("a2"),
        to_label: "api (codex)".into(),
        size: 10,
        hops: 0,
        verdict: Verdict::Allow,
        reason: None,
    }
}

#[test]
fn a_schema_1_database_keeps_every_row_and_loses_autoincrement() {
    let (_dir, path) = old_home(true);
    let before: Vec<_> = {
        let db = Connection::open(&path).unwrap();
        TABLES.iter().map(|(t, o)| rows(&db, t, o)).collect()
    };
    let store = open(&path, &StorageConfig::default()).unwrap();
    for ((table, order), was) in TABLES.iter().zip(&before) {
        // Schema 3 keeps the snapshot's state in a table of its own.
        let joined = "(SELECT id, seq, at, state FROM snapshot JOIN snapshot_state USING (id))";
        let mut now = rows(&store.conn, if *table == "snapshot" { joined } else { table }, order);
        if *table == "meta" {
            now.retain(|r| !matches!(&r[0], Value::Text(k) if k == "schema" || k == audit::FLOOR));
            let mut was = was.clone();
            was.retain(|r| !matches!(&r[0], Value::Text(k) if k == "schema"));
            assert_eq!(now, was, "meta");
        } else {
            assert_eq!(&now, was, "{table} kept every row");
        }
    }
    assert_eq!(store.meta("schema").unwrap().as_deref(), Some("3"));
    let autoincrement: i64 = store
        .conn
        .query_row("SELECT COUNT(*) FROM sqlite_master WHERE sql LIKE '%AUTOINCREMENT%'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(autoincrement, 0);
    let sequences: i64 = store.conn.query_row("SELECT COUNT(*) FROM sqlite_sequence", [], |r| r.get(0)).unwrap();
    assert_eq!(sequences, 0, "nothing is left for SQLite to keep up at each insert");
    // Opened again, it is schema 3 already: nothing more changes.
    drop(store);
    let store = open(&path, &StorageConfig::default()).unwrap();
    assert_eq!(rows(&store.conn, "inbox", "seq"), before[3]);
}

#[test]
fn the_journal_numbers_on_above_the_snapshot_even_once_it_is_dropped() {
    let (_dir, path) = old_home(true);
    let store = open(&path, &StorageConfig::default()).unwrap();
    let (state, journal) = store.load_state().unwrap();
    assert!(state.is_some());
    assert_eq!(journal.iter().map(|e| e.seq).collect::<Vec<_>>(), [501, 502]);
    let input = Input::Timeout;
    store.append_journal(Timestamp::from_millis(1_700_000_003_000), &[7; 32], &input).unwrap();
    let state = Firewall::new(DaemonConfig::default().firewall).snapshot();
    assert!(store.write_snapshot(Timestamp::from_millis(1_700_000_004_000), &state).unwrap());
    let covered: i64 = store.conn.query_row("SELECT seq FROM snapshot", [], |r| r.get(0)).unwrap();
    assert_eq!(covered, 503);
    // The journal is empty now: the next entry still comes after the snapshot, and loads.
    store.append_journal(Timestamp::from_millis(1_700_000_005_000), &[8; 32], &input).unwrap();
    let (_, journal) = store.load_state().unwrap();
    assert_eq!(journal.iter().map(|e| e.seq).collect::<Vec<_>>(), [504]);
    // A snapshot of an empty journal keeps covering what it covered.
    assert!(store.write_snapshot(Timestamp::from_millis(1_700_000_006_000), &state).unwrap());
    assert!(!store.write_snapshot(Timestamp::from_millis(1_700_000_007_000), &state).unwrap());
    store.append_journal(Timestamp::from_millis(1_700_000_008_000), &[9; 32], &input).unwrap();
    assert_eq!(store.load_state().unwrap().1.iter().map(|e| e.seq).collect::<Vec<_>>(), [505]);
}

#[test]
fn audit_seqs_are_never_handed_out_twice_whatever_was_pruned() {
    // Records 43 to 45 kept: the next is 46; pruned to none, the next is still above.
    let (_dir, path) = old_home(true);
    let store = open(&path, &StorageConfig::default()).unwrap();
    assert_eq!(store.audit(&decision(1_700_000_000_003), "allow", None).unwrap(), 46);
    assert_eq!(store.prune_audit(Timestamp::from_millis(1_700_000_000_001)).unwrap(), 1, "only the oldest");
    assert_eq!(store.prune_audit(Timestamp::from_millis(1_800_000_000_000)).unwrap(), 3);
    assert_eq!(store.last_audit_seq().unwrap(), 0);
    assert_eq!(store.audit(&decision(1_800_000_000_001), "allow", None).unwrap(), 47);
    drop(store);
    let store = open(&path, &StorageConfig::default()).unwrap();
    assert_eq!(store.prune_audit(Timestamp::from_millis(1_900_000_000_000)).unwrap(), 1);
    drop(store);
    let store = open(&path, &StorageConfig::default()).unwrap();
    assert_eq!(store.audit(&decision(1_900_000_000_001), "allow", None).unwrap(), 48, "across a restart too");

    // Every record pruned before the migration: the sequence schema 1 kept is the floor.
    let (_dir, path) = old_home(false);
    let store = open(&path, &StorageConfig::default()).unwrap();
    assert_eq!(store.audit(&decision(1_700_000_000_003), "allow", None).unwrap(), 46);
}

#[test]
fn a_newer_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agentfw.db");
    drop(open(&path, &StorageConfig::default()).unwrap());
    Connection::open(&path).unwrap().execute("UPDATE meta SET value = '4' WHERE key = 'schema'", []).unwrap();
    let e = open(&path, &StorageConfig::default()).unwrap_err();
    assert!(matches!(e, StoreError::Newer { found: 4, .. }), "{e}");
}

/// Schema 2 kept the state in the `snapshot` row: it moves to `snapshot_state`, what it
/// covers stays, and the next snapshot is written in place without reading it back.
#[test]
fn a_schema_2_snapshot_moves_into_its_own_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agentfw.db");
    drop(open(&path, &StorageConfig::default()).unwrap());
    let state = state_naming("claude:quokka-marmalade-7731:1", 50);
    let json = serde_json::to_vec(&state).unwrap();
    let db = Connection::open(&path).unwrap();
    db.execute_batch(
        "DROP TABLE snapshot; DROP TABLE snapshot_state;
         CREATE TABLE snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, at INTEGER NOT NULL, state TEXT NOT NULL);
         UPDATE meta SET value = '2' WHERE key = 'schema';",
    )
    .unwrap();
    db.execute("INSERT INTO snapshot VALUES (1, 500, 1700000000000, ?1)", [&json]).unwrap();
    drop(db);
    let store = open(&path, &StorageConfig::default()).unwrap();
    assert_eq!(store.meta("schema").unwrap().as_deref(), Some("3"));
    assert_eq!(
        rows(&store.conn, "snapshot", "id"),
        [[Value::Integer(1), Value::Integer(500), Value::Integer(1_700_000_000_000)]]
    );
    let (restored, journal) = store.load_state().unwrap();
    assert!(journal.is_empty());
    assert_eq!(serde_json::to_value(restored.unwrap()).unwrap(), serde_json::to_value(&state).unwrap());
    store.append_journal(Timestamp::from_millis(1_700_000_001_000), &[7; 32], &Input::Timeout).unwrap();
    assert!(store.write_snapshot(Timestamp::from_millis(1_700_000_002_000), &state).unwrap());
    let covered: i64 = store.conn.query_row("SELECT seq FROM snapshot", [], |r| r.get(0)).unwrap();
    assert_eq!(covered, 501);
}

/// A firewall that has seen `n` agents, one of them `marker`: its state holds the names.
fn state_naming(marker: &str, n: usize) -> agentfw_core::firewall::State {
    let mut fw = Firewall::new(DaemonConfig::default().firewall);
    let mut rng = rand_chacha::ChaCha20Rng::from_seed([1; 32]);
    for i in 0..n {
        let id = if i == n / 2 { marker.to_owned() } else { format!("claude:{i}:1700000000000") };
        let _ = fw.handle(
            Timestamp::from_millis(1_700_000_000_000),
            &mut rng,
            Input::Seen(Agent::new(id, "claude", "web")),
        );
    }
    fw.snapshot()
}

#[test]
fn a_snapshot_is_written_over_the_last_one_and_leaves_none_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agentfw.db");
    let store = open(&path, &StorageConfig::default()).unwrap();
    let marker = "claude:quokka-marmalade-7731:1";
    let first = state_naming(marker, 300);
    let second = state_naming("claude:wombat-porridge-4242:1", 300);
    let t = Timestamp::from_millis(1_700_000_000_000);
    store.write_snapshot(t, &first).unwrap();
    store.purge().unwrap();
    let pages = |store: &Store| -> (i64, i64) {
        let count = store.conn.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
        let free = store.conn.query_row("PRAGMA freelist_count", [], |r| r.get(0)).unwrap();
        (count, free)
    };
    let before = pages(&store);
    assert!(before.0 > 10, "the snapshot spans pages: {before:?}");
    store.write_snapshot(t, &second).unwrap();
    store.purge().unwrap();
    assert_eq!(pages(&store), before, "written in place: no page added, none freed");
    let bytes = std::fs::read(&path).unwrap();
    assert!(!bytes.windows(marker.len()).any(|w| w == marker.as_bytes()), "the last snapshot lingers");
    let (restored, _) = store.load_state().unwrap();
    assert_eq!(serde_json::to_value(restored.unwrap()).unwrap(), serde_json::to_value(&second).unwrap());

    // A state that outgrew the room gets a new row; the old one's pages are zeroed.
    let bigger = state_naming(marker, 1200);
    store.write_snapshot(t, &bigger).unwrap();
    let (restored, _) = store.load_state().unwrap();
    assert_eq!(serde_json::to_value(restored.unwrap()).unwrap(), serde_json::to_value(&bigger).unwrap());
}

/// Reading inboxes runs the statement compiled at the first read: a value bound to it that
/// its plan used (a bound `LIMIT`) would make SQLite compile it again whenever it is bound.
#[test]
fn reading_inboxes_compiles_the_statement_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("agentfw.db"), &StorageConfig::default()).unwrap();
    let t = |ms: u64| Timestamp::from_millis(1_700_000_000_000 + ms);
    let readers = [AgentId::new("claude:1:1700000000000"), AgentId::new("codex:2:1700000000000")];
    for round in 0..3u64 {
        for (n, reader) in (0u64..).zip(&readers) {
            store.enqueue_note(t(round), &format!("note-{round}-{n}"), reader, "the schema is ready").unwrap();
            let due = store.due(t(10 * round + n), reader).unwrap();
            let notes: Vec<i64> = due
                .iter()
                .filter_map(|p| match p {
                    Pending::Note { seq, .. } => Some(*seq),
                    Pending::Message { .. } => None,
                })
                .collect();
            assert_eq!(notes.len(), 1, "{due:?}");
            store.mark_note_read(t(10 * round + n), notes[0], &format!("batch-{round}")).unwrap();
        }
    }
    let status = rusqlite::StatementStatus::RePrepare;
    assert_eq!(store.conn.prepare_cached(inbox::DUE).unwrap().get_status(status), 0);
}
