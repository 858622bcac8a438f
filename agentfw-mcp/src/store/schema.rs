//! The tables this build writes, and the migration of databases earlier builds wrote.
//!
//! Schema 2 keeps what schema 1 kept; it differs in what each commit writes (every b-tree
//! a row touches is at least one more page in the write-ahead log and in each flush):
//! - **No `AUTOINCREMENT`.** It made every insert rewrite `sqlite_sequence` as well. Rows
//!   take SQLite's own row ids (one above the highest), and the two sequences read as
//!   cursors stay monotonic without it: a journal entry's seq is above the snapshot's
//!   ([`super::journal`]), an audit record's above every record pruned (`audit_floor` in
//!   `meta`, [`super::audit`]). An inbox or outbox row's seq only orders the rows that
//!   exist, and is never kept once its row is gone, so a reused one means nothing.
//! - **`sends` without a row id**: its key is its primary key, one b-tree instead of two.
//! - **Partial inbox indexes**: waiting rows by recipient (`inbox_pending`, rows leave it
//!   when delivered) and answered batches (`inbox_batches`, rows enter it when delivered),
//!   so an accepted message touches one of them, not two.
//! - **No index on the audit time**: pruning walks the audit from its oldest record (which
//!   it then deletes), and `agentfw audit --since` scans.
//!
//! Schema 3 keeps the firewall's state (`snapshot_state`) apart from what it covers
//! (`snapshot`: the journal seq and the time). SQLite rewrites a whole row to change one
//! column: with both in one row, marking the state written in place as covering a later
//! seq read the megabytes of the state back and built them into a new record, two copies
//! of it on the heap at every snapshot (the daemon's largest allocations under load).

use rusqlite::{Connection, OptionalExtension};

use super::StoreError;

/// The schema this build writes.
pub const VERSION: i64 = 3;

const TABLES: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    seed BLOB NOT NULL,
    input TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshot_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    state BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS inbox (
    seq INTEGER PRIMARY KEY,
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
CREATE INDEX IF NOT EXISTS inbox_pending ON inbox (recipient, seq) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS inbox_batches ON inbox (recipient, batch) WHERE batch IS NOT NULL;
CREATE TABLE IF NOT EXISTS sends (
    sender TEXT NOT NULL,
    key TEXT NOT NULL,
    at INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    PRIMARY KEY (sender, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY,
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
CREATE TABLE IF NOT EXISTS sessions (
    agent_id TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    session_id TEXT,
    thread_id TEXT,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY,
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

/// The tables schema 2 rebuilt, and the indexes of schema 1 that went with them.
const REBUILT: [&str; 5] = ["journal", "inbox", "sends", "audit", "outbox"];
const INDEXES_1: [&str; 3] = ["inbox_waiting", "inbox_batch", "audit_at"];

/// Brings the database to [`VERSION`] in one transaction: creates what is missing, and
/// rebuilds the tables of an earlier schema with every row they hold.
pub(super) fn ensure(conn: &Connection, path: &str) -> Result<(), StoreError> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = migrate(conn, path);
    match result {
        Ok(()) => conn.execute_batch("COMMIT")?,
        Err(_) => {
            let _ = conn.execute_batch("ROLLBACK");
        }
    }
    result
}

fn migrate(conn: &Connection, path: &str) -> Result<(), StoreError> {
    conn.execute_batch("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);")?;
    let found: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| r.get::<_, String>(0))
        .optional()?
        .and_then(|v| v.parse().ok());
    // Builds before `meta` kept a version wrote schema 1.
    let found = match found {
        Some(v) => Some(v),
        None => exists(conn, "journal")?.then_some(1),
    };
    match found {
        Some(v) if v > VERSION => return Err(StoreError::Newer { path: path.to_owned(), found: v }),
        Some(1) => {
            from_1(conn)?;
            from_2(conn)?;
        }
        Some(2) => {
            conn.execute_batch(TABLES)?;
            from_2(conn)?;
        }
        _ => conn.execute_batch(TABLES)?,
    }
    if found != Some(VERSION) {
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?1)", [VERSION.to_string()])?;
    }
    Ok(())
}

/// Schema 1 to 2: each rebuilt table renamed, created anew, its rows copied (every column
/// both have, row ids included) and the old one dropped (secure deletion zeroes its pages).
/// The highest audit seq ever handed out becomes the floor of the new ones.
fn from_1(conn: &Connection) -> Result<(), StoreError> {
    let handed_out: Option<i64> = if exists(conn, "sqlite_sequence")? {
        conn.query_row("SELECT seq FROM sqlite_sequence WHERE name = 'audit'", [], |r| r.get(0)).optional()?
    } else {
        None
    };
    for index in INDEXES_1 {
        conn.execute_batch(&format!("DROP INDEX IF EXISTS {index};"))?;
    }
    let mut old = Vec::new();
    for table in REBUILT {
        if exists(conn, table)? {
            old.push(table);
        }
    }
    for table in &old {
        conn.execute_batch(&format!("ALTER TABLE {table} RENAME TO {table}_1;"))?;
    }
    conn.execute_batch(TABLES)?;
    for table in &old {
        let new = columns(conn, table)?;
        let shared: Vec<String> =
            columns(conn, &format!("{table}_1"))?.into_iter().filter(|c| new.contains(c)).collect();
        let list = shared.join(", ");
        conn.execute_batch(&format!(
            "INSERT INTO {table} ({list}) SELECT {list} FROM {table}_1; DROP TABLE {table}_1;"
        ))?;
    }
    if exists(conn, "sqlite_sequence")? {
        conn.execute_batch("DELETE FROM sqlite_sequence;")?;
    }
    if let Some(seq) = handed_out {
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
            [super::audit::FLOOR, &seq.to_string()],
        )?;
    }
    Ok(())
}

/// Schema 2 to 3: the state moves out of the `snapshot` row into `snapshot_state` (the
/// tables of schema 3 exist already).
fn from_2(conn: &Connection) -> Result<(), StoreError> {
    if columns(conn, "snapshot")?.iter().any(|c| c == "state") {
        conn.execute_batch(
            "INSERT INTO snapshot_state (id, state) SELECT id, state FROM snapshot;
             ALTER TABLE snapshot DROP COLUMN state;",
        )?;
    }
    Ok(())
}

/// Whether `table` exists. A failure to read the schema is an error, not "no": taken for
/// "no", it would mark an old database as migrated without migrating it.
fn exists(conn: &Connection, table: &str) -> Result<bool, StoreError> {
    let found = conn
        .query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |_| Ok(()))
        .optional()?;
    Ok(found.is_some())
}

fn columns(conn: &Connection, table: &str) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?;
    let names = stmt.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    Ok(names)
}
