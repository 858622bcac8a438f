//! The daemon's SQLite database: everything it accepted, so that a crash or restart loses
//! nothing acknowledged and delivers nothing twice.
//!
//! | table | holds |
//! |---|---|
//! | `journal` | every input fed to the firewall since the last snapshot: time, RNG seed, input |
//! | `snapshot` | the firewall's state (one row) and the last journal seq it covers |
//! | `inbox` | accepted messages and agentfw's notes, per recipient: pending, then delivered or refused |
//! | `sends` | the outcome of each send by (sender, key), so a retried send is not sent twice |
//! | `audit` | every decision, metadata only (AM4) |
//! | `sessions` | agent sessions seen, with their identity and harness session ids |
//! | `ratings` | imported component ratings (AD1) |
//! | `outbox` | messages accepted for agents on other devices, until the relay stored them |
//! | `meta` | schema version, boot id and boot time |
//!
//! The firewall is deterministic given its inputs, time and randomness (the core is
//! sans-IO), so its state is the last snapshot plus the journal replayed in order. See
//! [`crate::engine`] for the order of writes in each transaction and why it is safe.
//!
//! All of the daemon's SQL is here, behind [`Store`]'s methods, one submodule per table:
//! the engine decides, and calls them to persist what it decided.

use std::cell::Cell;
use std::path::{Path, PathBuf};

use agentfw_core::time::Timestamp;
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use crate::config::{StorageConfig, Synchronous};

mod audit;
mod inbox;
mod journal;
mod outbox;
mod ratings;
mod schema;
mod sends;
mod sessions;
#[cfg(test)]
mod tests;

pub use audit::record as audit_record;
pub use inbox::{BatchRow, Pending};
pub use journal::{Entry, Loaded};
pub use schema::VERSION as SCHEMA_VERSION;
pub use sessions::StoredSession;

/// Why the database failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "the disk is full (or the database reached its size cap, `storage.max_pages`): nothing was stored; free some space and retry"
    )]
    Full,
    #[error("database error: {0}")]
    Sqlite(String),
    #[error(
        "the database at `{path}` was written by a newer agentfw (schema {found}, this build knows {SCHEMA_VERSION})"
    )]
    Newer { path: String, found: i64 },
    #[error(
        "the write-ahead log `{path}` could not be made durable ({why}): the requests since the last durable commit were not acknowledged; the daemon stops, and the next one recovers what reached the disk"
    )]
    Sync { path: String, why: String },
    #[error("stored data is damaged: {0}")]
    Corrupt(String),
    #[error(
        "journal entry {seq} cannot be read ({why}): a newer agentfw wrote it, or the database is damaged; run the agentfw that wrote it, which replays and snapshots its journal, or restore a backup"
    )]
    Journal { seq: i64, why: String },
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::DiskFull) => StoreError::Full,
            _ => StoreError::Sqlite(e.to_string()),
        }
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

/// The daemon's database. One engine thread owns it.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    /// With `synchronous = "full"`: the write-ahead log, which [`Store::sync`] makes
    /// durable for every commit since the last sync at once (group commit).
    wal: Option<PathBuf>,
    /// `total_changes` at the last sync: a sync with no change since is free.
    synced_changes: Cell<u64>,
    /// The highest audit seq of the records pruned (see [`schema`]).
    audit_floor: Cell<i64>,
}

/// The most SQLite keeps of the database in the daemon's memory, in KiB.
const PAGE_CACHE_KIB: u32 = 512;

/// Statements are compiled once and kept in the connection's statement cache: compiling
/// them again for every request cost more than running them.
trait Cached {
    fn exec(&self, sql: &str, params: impl rusqlite::Params) -> rusqlite::Result<usize>;
    fn row<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T>;
}

impl Cached for Connection {
    fn exec(&self, sql: &str, params: impl rusqlite::Params) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn row<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}

#[allow(clippy::disallowed_types)] // the adapter owns files: the log's directory is synced
/// Open (creating if needed) the database at `path`: owner-only, WAL, secure deletion, the
/// schema in place.
pub fn open(path: &Path, config: &StorageConfig) -> Result<Store, StoreError> {
    let conn = Connection::open(path)?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // Every statement the store runs stays compiled (see `Cached`).
    conn.set_prepared_statement_cache_capacity(128);
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Sqlite(format!("cannot switch the database to WAL mode (got `{mode}`)")));
    }
    // SQLite itself never waits for the disk at a commit (NORMAL): with `full`, the engine
    // calls [`Store::sync`] before anything a commit decided leaves the process, once for
    // all the commits since the last one (group commit; see [`crate::engine`]). In WAL
    // mode, NORMAL still syncs the log before each checkpoint copies it into the database,
    // so the log is never reused before its frames are durable.
    let sync = "NORMAL";
    // Erased text (delivered batches, refused messages, the journal) is overwritten with
    // zeros, not left in free space; the engine truncates the WAL after erasing (`purge`).
    conn.execute_batch(&format!("PRAGMA synchronous = {sync}; PRAGMA foreign_keys = OFF; PRAGMA secure_delete = ON;"))?;
    // SQLite's page cache (2 MiB by default) filled up under load, mostly with the pages
    // each snapshot streams through it. A request touches a few dozen pages (the ends of
    // the journal and the audit, an inbox leaf and its indexes), which stay cached; any
    // other page is one read from the operating system's cache.
    conn.execute_batch(&format!("PRAGMA cache_size = -{PAGE_CACHE_KIB};"))?;
    if config.max_pages > 0 {
        let _: i64 = conn.query_row(&format!("PRAGMA max_page_count = {}", config.max_pages), [], |r| r.get(0))?;
    }
    schema::ensure(&conn, &path.display().to_string())?;
    let wal = (config.synchronous == Synchronous::Full).then(|| {
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        PathBuf::from(wal)
    });
    let store = Store { conn, wal, synced_changes: Cell::new(u64::MAX), audit_floor: Cell::new(0) };
    store.audit_floor.set(store.meta(audit::FLOOR)?.and_then(|v| v.parse().ok()).unwrap_or(0));
    store.sync()?;
    // The log's directory entry too, once: SQLite would on its first sync of a new log.
    if store.wal.is_some()
        && let Some(dir) = path.parent()
    {
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| sync_error(dir, &e))?;
    }
    Ok(store)
}

impl Store {
    pub fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self.conn.row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0)).optional()?)
    }

    pub fn set_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.conn.exec(
            "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2",
            params![key, value],
        )?;
        Ok(())
    }

    /// Starts the transaction of one request (see [`crate::engine`]).
    pub fn begin(&self) -> Result<(), StoreError> {
        self.conn.exec("BEGIN IMMEDIATE", [])?;
        Ok(())
    }

    pub fn commit(&self) -> Result<(), StoreError> {
        self.conn.exec("COMMIT", [])?;
        Ok(())
    }

    /// Makes every commit so far durable (with `synchronous = "full"`): one `fdatasync` of
    /// the write-ahead log, shared by all the commits since the last sync. Free when
    /// nothing changed since. Called outside transactions only.
    #[allow(clippy::disallowed_types)] // the adapter owns files
    pub fn sync(&self) -> Result<(), StoreError> {
        let Some(wal) = &self.wal else { return Ok(()) };
        let changes = self.conn.total_changes();
        if changes == self.synced_changes.get() {
            return Ok(());
        }
        match std::fs::File::open(wal) {
            Ok(file) => file.sync_data().map_err(|e| sync_error(wal, &e))?,
            // No log: everything was checkpointed into the database, which is synced then.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(sync_error(wal, &e)),
        }
        self.synced_changes.set(changes);
        Ok(())
    }

    /// Undoes the open transaction, if there is one.
    pub fn rollback(&self) {
        let _ = self.conn.execute_batch("ROLLBACK");
    }

    /// After text was erased: copy the WAL into the database and truncate it, so that the
    /// pages that held the text before it was erased no longer exist in the WAL either.
    pub fn purge(&self) -> Result<(), StoreError> {
        let busy: i64 = self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
        if busy != 0 {
            return Err(StoreError::Sqlite(
                "the write-ahead log could not be truncated: the database is busy".to_owned(),
            ));
        }
        Ok(())
    }

    /// Retention: audit records before `audit_before` (AM4, see [`Store::prune_audit`]);
    /// send outcomes and finished inbox rows before `done_before`. Returns how many audit
    /// records went.
    pub fn prune(&self, audit_before: Timestamp, done_before: Timestamp) -> Result<usize, StoreError> {
        let pruned = self.prune_audit(audit_before)?;
        self.conn.exec("DELETE FROM sends WHERE at < ?1", [ms(done_before)])?;
        self.conn.exec("DELETE FROM inbox WHERE state != 'pending' AND done_at < ?1", [ms(done_before)])?;
        Ok(pruned)
    }
}

fn sync_error(path: &Path, e: &std::io::Error) -> StoreError {
    if e.kind() == std::io::ErrorKind::StorageFull {
        return StoreError::Full;
    }
    StoreError::Sync { path: path.display().to_string(), why: e.to_string() }
}

/// Milliseconds as SQLite stores them.
pub fn ms(t: Timestamp) -> i64 {
    i64::try_from(t.as_millis()).unwrap_or(i64::MAX)
}

/// A time SQLite stored.
fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(u64::try_from(ms).unwrap_or(0))
}
