//! Durable state, on SQLite (one relay) or PostgreSQL (several relays sharing it).
//!
//! Both backends run the same SQL: `$n` placeholders, `ON CONFLICT`, `RETURNING` and
//! `CAST(… AS …)` mean the same on both; only the migrations differ (types). The
//! `with_pool!` macro writes each query once and compiles it for both.
//!
//! Writes on the hot path (stored envelopes, deliveries, audit records) go through
//! [`Writer`]: one task that commits whatever is waiting in one transaction (group commit),
//! so throughput grows with load while every acknowledgement still waits for its commit.
//! On PostgreSQL the same transaction sends `NOTIFY` (see [`Note`]), so other relay
//! instances learn about a stored envelope exactly when it becomes visible.

use std::str::FromStr;
use std::time::Duration;

use agentfw_core::seal::DeviceId;
use agentfw_core::time::Timestamp;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

/// The notification channel relays listen on (PostgreSQL only).
pub const CHANNEL: &str = "agentfw_relay";

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database URL `{0}` is not supported: use sqlite://PATH or postgres://…")]
    Url(String),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("database migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored data is not valid: {0}")]
    Corrupt(String),
    #[error("the store is shutting down")]
    Closed,
}

#[derive(Clone, Debug)]
enum Backend {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// The same code for both pools: `with_pool!(self, pool => expr)`.
macro_rules! with_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match &$store.backend {
            Backend::Sqlite($pool) => $body,
            Backend::Postgres($pool) => $body,
        }
    };
}

/// Sends a note inside a transaction, delivered when it commits (PostgreSQL only).
macro_rules! notify {
    ($store:expr, $executor:expr, $note:expr, $instance:expr) => {
        if $store.is_postgres() {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CHANNEL)
                .bind($note.encode($instance))
                .execute($executor)
                .await?;
        }
    };
}

/// Starts a write transaction. On SQLite it takes the write lock at once
/// (`BEGIN IMMEDIATE`), so a transaction that reads before it writes waits for the lock
/// (busy timeout) instead of failing when another writer got there first.
macro_rules! begin {
    ($store:expr, $pool:expr) => {
        if $store.is_postgres() { $pool.begin().await? } else { $pool.begin_with("BEGIN IMMEDIATE").await? }
    };
}

// After the macros, which they use.
mod audit;
mod devices;
mod messages;
mod policy_log;
mod retention;
mod writer;

pub use audit::ConversationRow;
pub use devices::{AgentRow, DeviceRow, Enrolled};
pub use messages::{NewMessage, Stored};
pub use retention::Pruned;
pub use writer::{AfterCommit, Writer};

/// Something for other relay instances to act on, sent with `NOTIFY` on PostgreSQL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// Envelopes are waiting for this device.
    Deliver(DeviceId),
    /// The policy log grew.
    Policy,
    /// This device's status or agents changed.
    Device(DeviceId),
    /// The dashboard's data changed.
    Dashboard,
}

impl Note {
    fn encode(&self, instance: &str) -> String {
        match self {
            Note::Deliver(d) => format!("d {instance} {d}"),
            Note::Policy => format!("p {instance}"),
            Note::Device(d) => format!("v {instance} {d}"),
            Note::Dashboard => format!("b {instance}"),
        }
    }

    /// The note and the instance that sent it.
    pub fn decode(payload: &str) -> Option<(String, Note)> {
        let mut words = payload.split(' ');
        let (kind, instance) = (words.next()?, words.next()?.to_owned());
        let note = match kind {
            "d" => Note::Deliver(words.next()?.parse().ok()?),
            "p" => Note::Policy,
            "v" => Note::Device(words.next()?.parse().ok()?),
            "b" => Note::Dashboard,
            _ => return None,
        };
        Some((instance, note))
    }
}

/// The database.
#[derive(Clone, Debug)]
pub struct Store {
    backend: Backend,
    url: String,
}

fn ms(t: Timestamp) -> i64 {
    i64::try_from(t.as_millis()).unwrap_or(i64::MAX)
}

fn ts(v: i64) -> Timestamp {
    Timestamp::from_millis(u64::try_from(v).unwrap_or(0))
}

fn u(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn device(text: &str) -> Result<DeviceId, StoreError> {
    DeviceId::from_str(text).map_err(|e| StoreError::Corrupt(e.to_string()))
}

impl Store {
    /// Opens (creating if needed) and migrates the database at `url`.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let backend = if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(|_| StoreError::Url(url.to_owned()))?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                // Every commit reaches the disk before the relay acknowledges anything.
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(Duration::from_secs(10))
                .pragma("temp_store", "memory");
            let pool = SqlitePoolOptions::new().max_connections(4).connect_with(options).await?;
            sqlx::migrate!("migrations/sqlite").run(&pool).await?;
            Backend::Sqlite(pool)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let options = PgConnectOptions::from_str(url).map_err(|_| StoreError::Url(redact(url)))?;
            let pool = PgPoolOptions::new().max_connections(8).connect_with(options).await?;
            sqlx::migrate!("migrations/postgres").run(&pool).await?;
            Backend::Postgres(pool)
        } else {
            return Err(StoreError::Url(redact(url)));
        };
        Ok(Self { backend, url: url.to_owned() })
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// The PostgreSQL pool, for the notification listener.
    pub fn pg_pool(&self) -> Option<&PgPool> {
        match &self.backend {
            Backend::Postgres(pool) => Some(pool),
            Backend::Sqlite(_) => None,
        }
    }

    /// The URL without its password.
    pub fn display_url(&self) -> String {
        redact(&self.url)
    }

    pub async fn close(&self) {
        with_pool!(self, pool => pool.close().await);
    }

    /// A setting (the admin token's hash, the policy snapshot).
    pub async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        let row: Option<(String,)> = with_pool!(self, pool => {
            sqlx::query_as("SELECT value FROM settings WHERE key = $1").bind(key).fetch_optional(pool).await?
        });
        Ok(row.map(|(v,)| v))
    }

    pub async fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )
            .bind(key)
            .bind(value)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Sets `key` to `value` unless it has a value; returns the value it ends up with.
    pub async fn setting_or_insert(&self, key: &str, value: &str) -> Result<String, StoreError> {
        with_pool!(self, pool => {
            sqlx::query("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING")
                .bind(key)
                .bind(value)
                .execute(pool)
                .await?;
        });
        self.setting(key).await?.ok_or_else(|| StoreError::Corrupt(format!("setting `{key}` vanished")))
    }

    /// Starts an admin (dashboard) session, known by the hash of its cookie.
    pub async fn create_session(&self, hash: &[u8], now: Timestamp, expires: Timestamp) -> Result<(), StoreError> {
        with_pool!(self, pool => {
            sqlx::query("INSERT INTO sessions (hash, created_at, expires_at) VALUES ($1, $2, $3)")
                .bind(hash.to_vec())
                .bind(ms(now))
                .bind(ms(expires))
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    pub async fn session_valid(&self, hash: &[u8], now: Timestamp) -> Result<bool, StoreError> {
        let row: Option<(i64,)> = with_pool!(self, pool => {
            sqlx::query_as("SELECT expires_at FROM sessions WHERE hash = $1").bind(hash.to_vec()).fetch_optional(pool).await?
        });
        Ok(row.is_some_and(|(expires,)| expires > ms(now)))
    }

    pub async fn delete_session(&self, hash: &[u8]) -> Result<(), StoreError> {
        with_pool!(self, pool => {
            sqlx::query("DELETE FROM sessions WHERE hash = $1").bind(hash.to_vec()).execute(pool).await?;
        });
        Ok(())
    }
}

/// A URL with its password replaced, for logs.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = url.get(scheme + 3..at).unwrap_or_default();
            match userinfo.split_once(':') {
                Some((user, _)) => format!(
                    "{}{user}:***{}",
                    url.get(..scheme + 3).unwrap_or_default(),
                    url.get(at..).unwrap_or_default()
                ),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn notes_round_trip_and_passwords_are_redacted() {
        let d: DeviceId = "00112233445566778899aabbccddeeff".parse().unwrap();
        for note in [Note::Deliver(d), Note::Policy, Note::Device(d), Note::Dashboard] {
            assert_eq!(Note::decode(&note.encode("i1")), Some(("i1".to_owned(), note)));
        }
        assert_eq!(Note::decode("x i1"), None);
        assert_eq!(redact("postgres://relay:s3cret@db:5432/agentfw"), "postgres://relay:***@db:5432/agentfw");
        assert_eq!(redact("sqlite://relay.db"), "sqlite://relay.db");
    }
}
