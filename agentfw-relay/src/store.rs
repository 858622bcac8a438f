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

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use agentfw_core::firewall::AdminAction;
use agentfw_core::message::Agent;
use agentfw_core::seal::DeviceId;
use agentfw_core::time::Timestamp;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{QueryBuilder, Row};
use tokio::sync::{mpsc, oneshot};

use crate::audit::{AuditQuery, AuditRecord};

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

/// A device row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceRow {
    pub device: DeviceId,
    pub bundle: String,
    pub name: String,
    pub enrolled_at: Timestamp,
    /// `active`, `revoked` or `superseded`.
    pub status: String,
    pub superseded_by: Option<DeviceId>,
    pub rotation: Option<String>,
}

/// An agent row: which device it runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentRow {
    pub agent: Agent,
    pub device: DeviceId,
    pub live: bool,
    pub last_seen: Timestamp,
}

/// A pair of agents, for the dashboard.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ConversationRow {
    pub a: String,
    pub b: String,
    pub a_label: String,
    pub b_label: String,
    pub last_at: u64,
    pub decisions: u64,
    pub refusals: u64,
    pub last_verdict: String,
    pub last_refusal_at: Option<u64>,
    pub last_refusal_code: Option<String>,
    pub last_refusal: Option<String>,
}

/// An envelope to store.
#[derive(Debug)]
pub struct NewMessage {
    pub sender: DeviceId,
    pub recipient: DeviceId,
    pub message_id: String,
    pub digest: String,
    /// The frame body (routing, signature, envelope) to deliver.
    pub body: Arc<Vec<u8>>,
    pub sent_at: Timestamp,
    /// The sending agent, claimed for the sending device if no device has it yet.
    pub claim: Agent,
}

/// What happened to an envelope handed to [`Writer::store`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stored {
    /// Stored now, as delivery `seq`.
    New { seq: u64 },
    /// Stored before with the same bytes: a resend.
    Duplicate,
    /// The sender used this message id before for different bytes.
    Conflict,
}

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

    // ---- settings -------------------------------------------------------------------

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

    // ---- invites and devices --------------------------------------------------------

    pub async fn create_invite(
        &self,
        hash: &[u8],
        now: Timestamp,
        expires: Timestamp,
        note: &str,
    ) -> Result<(), StoreError> {
        with_pool!(self, pool => {
            sqlx::query("INSERT INTO invites (hash, created_at, expires_at, note) VALUES ($1, $2, $3, $4)")
                .bind(hash.to_vec())
                .bind(ms(now))
                .bind(ms(expires))
                .bind(note)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Uses the invite with this hash to enroll `row`, in one transaction: the invite must
    /// be unused and unexpired, and the device new. Nothing changes when it fails.
    pub async fn enroll(
        &self,
        invite_hash: &[u8],
        row: &DeviceRow,
        now: Timestamp,
        instance: &str,
    ) -> Result<Enrolled, StoreError> {
        let id = row.device.to_string();
        with_pool!(self, pool => {
            let mut tx = begin!(self, pool);
            let known: Option<(String,)> = sqlx::query_as("SELECT status FROM devices WHERE device = $1")
                .bind(&id)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some((status,)) = known {
                tx.rollback().await?;
                return Ok(if status == "active" { Enrolled::AlreadyEnrolled } else { Enrolled::Retired });
            }
            let used = sqlx::query(
                "UPDATE invites SET used_at = $1, device = $2 WHERE hash = $3 AND used_at IS NULL AND expires_at > $1",
            )
            .bind(ms(now))
            .bind(&id)
            .bind(invite_hash.to_vec())
            .execute(&mut *tx)
            .await?;
            if used.rows_affected() != 1 {
                tx.rollback().await?;
                return Ok(Enrolled::BadInvite);
            }
            sqlx::query(
                "INSERT INTO devices (device, bundle, name, enrolled_at, status, status_at) VALUES ($1, $2, $3, $4, 'active', $4)",
            )
            .bind(&id)
            .bind(&row.bundle)
            .bind(&row.name)
            .bind(ms(now))
            .execute(&mut *tx)
            .await?;
            notify!(self, &mut *tx, &Note::Device(row.device), instance);
            tx.commit().await?;
        });
        Ok(Enrolled::Done)
    }

    pub async fn devices(&self) -> Result<Vec<DeviceRow>, StoreError> {
        let rows: Vec<DeviceTuple> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT device, bundle, name, enrolled_at, status, superseded_by, rotation FROM devices ORDER BY enrolled_at, device",
            )
            .fetch_all(pool)
            .await?
        });
        rows.into_iter().map(device_row).collect()
    }

    pub async fn device(&self, id: DeviceId) -> Result<Option<DeviceRow>, StoreError> {
        let row: Option<DeviceTuple> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT device, bundle, name, enrolled_at, status, superseded_by, rotation FROM devices WHERE device = $1",
            )
            .bind(id.to_string())
            .fetch_optional(pool)
            .await?
        });
        row.map(device_row).transpose()
    }

    /// Revokes a device. False if it was not active.
    pub async fn revoke(&self, id: DeviceId, now: Timestamp, instance: &str) -> Result<bool, StoreError> {
        let done = with_pool!(self, pool => {
            let mut tx = begin!(self, pool);
            let done = sqlx::query("UPDATE devices SET status = 'revoked', status_at = $1 WHERE device = $2 AND status = 'active'")
                .bind(ms(now))
                .bind(id.to_string())
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            notify!(self, &mut *tx, &Note::Device(id), instance);
            tx.commit().await?;
            done
        });
        Ok(done)
    }

    /// Retires `old` for `new` (a verified rotation), moving its agents, in one step.
    /// False if `old` was not active or `new` is already known.
    pub async fn rotate(
        &self,
        old: DeviceId,
        new: &DeviceRow,
        rotation: &str,
        now: Timestamp,
        instance: &str,
    ) -> Result<bool, StoreError> {
        let (old_s, new_s) = (old.to_string(), new.device.to_string());
        let done = with_pool!(self, pool => {
            let mut tx = begin!(self, pool);
            let retired = sqlx::query(
                "UPDATE devices SET status = 'superseded', status_at = $1, superseded_by = $2, rotation = $3 WHERE device = $4 AND status = 'active'",
            )
            .bind(ms(now))
            .bind(&new_s)
            .bind(rotation)
            .bind(&old_s)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            let inserted = sqlx::query(
                "INSERT INTO devices (device, bundle, name, enrolled_at, status, status_at) VALUES ($1, $2, $3, $4, 'active', $4) ON CONFLICT (device) DO NOTHING",
            )
            .bind(&new_s)
            .bind(&new.bundle)
            .bind(&new.name)
            .bind(ms(now))
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if retired != 1 || inserted != 1 {
                tx.rollback().await?;
                false
            } else {
                sqlx::query("UPDATE agents SET device = $1 WHERE device = $2").bind(&new_s).bind(&old_s).execute(&mut *tx).await?;
                notify!(self, &mut *tx, &Note::Device(old), instance);
                notify!(self, &mut *tx, &Note::Device(new.device), instance);
                tx.commit().await?;
                true
            }
        });
        Ok(done)
    }

    // ---- agents ---------------------------------------------------------------------

    /// The agents live on `device` now; agents it listed before and not now are marked
    /// gone. An agent another device already has is left alone and returned. `None`:
    /// nothing changed.
    pub async fn set_agents(
        &self,
        device: DeviceId,
        agents: &[Agent],
        now: Timestamp,
        instance: &str,
    ) -> Result<Option<Vec<Agent>>, StoreError> {
        // The same list as now (a reconnect): nothing to write or tell anyone.
        let mut now_live: Vec<(String, String, String, String)> = self
            .agents_of(device)
            .await?
            .into_iter()
            .filter(|r| r.live)
            .map(|r| (r.agent.id.to_string(), r.agent.kind, r.agent.project, r.agent.machine))
            .collect();
        let mut wanted: Vec<(String, String, String, String)> =
            agents.iter().map(|a| (a.id.to_string(), a.kind.clone(), a.project.clone(), a.machine.clone())).collect();
        now_live.sort();
        wanted.sort();
        wanted.dedup();
        if now_live == wanted {
            return Ok(None);
        }
        let id = device.to_string();
        let mut refused = Vec::new();
        with_pool!(self, pool => {
            let mut tx = begin!(self, pool);
            sqlx::query("UPDATE agents SET live = 0, last_seen = $2 WHERE device = $1 AND live = 1")
                .bind(&id)
                .bind(ms(now))
                .execute(&mut *tx)
                .await?;
            for agent in agents {
                let done = sqlx::query(
                    "INSERT INTO agents (agent, device, kind, project, machine, live, last_seen) VALUES ($1, $2, $3, $4, $5, 1, $6)
                     ON CONFLICT (agent) DO UPDATE SET kind = excluded.kind, project = excluded.project,
                       machine = excluded.machine, live = 1, last_seen = excluded.last_seen
                     WHERE agents.device = excluded.device",
                )
                .bind(agent.id.as_str())
                .bind(&id)
                .bind(&agent.kind)
                .bind(&agent.project)
                .bind(&agent.machine)
                .bind(ms(now))
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if done == 0 {
                    refused.push(agent.clone());
                }
            }
            notify!(self, &mut *tx, &Note::Device(device), instance);
            tx.commit().await?;
        });
        Ok(Some(refused))
    }

    pub async fn agents(&self) -> Result<Vec<AgentRow>, StoreError> {
        self.agents_where(None).await
    }

    pub async fn agents_of(&self, device: DeviceId) -> Result<Vec<AgentRow>, StoreError> {
        self.agents_where(Some(device)).await
    }

    async fn agents_where(&self, device: Option<DeviceId>) -> Result<Vec<AgentRow>, StoreError> {
        let rows: Vec<(String, String, String, String, String, i64, i64)> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT agent, device, kind, project, machine, live, last_seen FROM agents
                 WHERE CAST($1 AS TEXT) IS NULL OR device = $1 ORDER BY agent",
            )
            .bind(device.map(|d| d.to_string()))
            .fetch_all(pool)
            .await?
        });
        rows.into_iter()
            .map(|(agent, dev, kind, project, machine, live, last_seen)| {
                let mut a = Agent::new(agent, kind, project);
                a.machine = machine;
                Ok(AgentRow { agent: a, device: self::device(&dev)?, live: live != 0, last_seen: ts(last_seen) })
            })
            .collect()
    }

    // ---- messages -------------------------------------------------------------------

    /// Envelopes waiting for `recipient`, oldest first.
    pub async fn pending(&self, recipient: DeviceId, limit: usize) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let rows: Vec<(i64, Option<Vec<u8>>)> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT seq, frame FROM messages WHERE recipient = $1 AND delivered_at IS NULL ORDER BY seq LIMIT $2",
            )
            .bind(recipient.to_string())
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().filter_map(|(seq, frame)| Some((u(seq), frame?))).collect())
    }

    /// How many envelopes wait for delivery, in all.
    pub async fn pending_count(&self) -> Result<u64, StoreError> {
        let (n,): (i64,) = with_pool!(self, pool => {
            sqlx::query_as("SELECT COUNT(*) FROM messages WHERE delivered_at IS NULL").fetch_one(pool).await?
        });
        Ok(u(n))
    }

    /// One group commit: store envelopes, mark deliveries, write audit records and the
    /// conversations they touch, and send notes, all in one transaction.
    async fn commit(&self, batch: &mut Batch, instance: &str) -> Result<(), StoreError> {
        let now = batch.now;
        with_pool!(self, pool => {
            let mut tx = begin!(self, pool);
            // Envelopes: a resend in the same batch is answered like one in an earlier batch.
            let mut first: HashMap<(DeviceId, String), usize> = HashMap::new();
            let mut fresh: Vec<usize> = Vec::new();
            for (i, m) in batch.messages.iter().enumerate() {
                if first.insert((m.0.sender, m.0.message_id.clone()), i).is_none() {
                    fresh.push(i);
                }
            }
            let mut stored: HashMap<(String, String), i64> = HashMap::new();
            for chunk in fresh.chunks(500) {
                let mut q: QueryBuilder<_> = QueryBuilder::new(
                    "INSERT INTO messages (sender, recipient, message_id, digest, frame, size, sent_at, stored_at) ",
                );
                q.push_values(chunk.iter().filter_map(|&i| batch.messages.get(i)), |mut b, (m, _)| {
                    b.push_bind(m.sender.to_string())
                        .push_bind(m.recipient.to_string())
                        .push_bind(m.message_id.clone())
                        .push_bind(m.digest.clone())
                        .push_bind(m.body.as_ref().clone())
                        .push_bind(i64::try_from(m.body.len()).unwrap_or(i64::MAX))
                        .push_bind(ms(m.sent_at))
                        .push_bind(ms(now));
                });
                q.push(" ON CONFLICT (sender, message_id) DO NOTHING RETURNING seq, sender, message_id");
                for row in q.build().fetch_all(&mut *tx).await? {
                    stored.insert((row.try_get(1)?, row.try_get(2)?), row.try_get(0)?);
                }
            }
            let mut outcomes = Vec::with_capacity(batch.messages.len());
            let mut claims: BTreeMap<String, (&Agent, DeviceId)> = BTreeMap::new();
            for (i, (m, _)) in batch.messages.iter().enumerate() {
                let key = (m.sender.to_string(), m.message_id.clone());
                let is_first = first.get(&(m.sender, m.message_id.clone())) == Some(&i);
                let outcome = match stored.get(&key) {
                    Some(&seq) if is_first => {
                        claims.entry(m.claim.id.as_str().to_owned()).or_insert((&m.claim, m.sender));
                        Stored::New { seq: u(seq) }
                    }
                    Some(_) => {
                        let same = first.get(&(m.sender, m.message_id.clone())).and_then(|&j| batch.messages.get(j)).is_some_and(|(f, _)| f.digest == m.digest);
                        if same { Stored::Duplicate } else { Stored::Conflict }
                    }
                    None => {
                        let digest: Option<(String,)> = sqlx::query_as("SELECT digest FROM messages WHERE sender = $1 AND message_id = $2")
                            .bind(&key.0)
                            .bind(&key.1)
                            .fetch_optional(&mut *tx)
                            .await?;
                        match digest {
                            Some((d,)) if d == m.digest => Stored::Duplicate,
                            _ => Stored::Conflict,
                        }
                    }
                };
                outcomes.push(outcome);
            }
            for (agent, device) in claims.values() {
                sqlx::query(
                    "INSERT INTO agents (agent, device, kind, project, machine, live, last_seen) VALUES ($1, $2, $3, $4, $5, 1, $6)
                     ON CONFLICT (agent) DO UPDATE SET last_seen = excluded.last_seen WHERE agents.device = excluded.device",
                )
                .bind(agent.id.as_str())
                .bind(device.to_string())
                .bind(&agent.kind)
                .bind(&agent.project)
                .bind(&agent.machine)
                .bind(ms(now))
                .execute(&mut *tx)
                .await?;
            }
            // Deliveries.
            for (recipient, seqs, _) in &batch.delivered {
                for chunk in seqs.chunks(500) {
                    let mut q: QueryBuilder<_> = QueryBuilder::new("UPDATE messages SET delivered_at = ");
                    q.push_bind(ms(now));
                    q.push(", frame = NULL WHERE recipient = ");
                    q.push_bind(recipient.to_string());
                    q.push(" AND delivered_at IS NULL AND seq IN (");
                    let mut list = q.separated(", ");
                    for &seq in chunk {
                        list.push_bind(i64::try_from(seq).unwrap_or(i64::MAX));
                    }
                    q.push(")");
                    q.build().execute(&mut *tx).await?;
                }
            }
            // Audit records, only for envelopes stored now (a resend is not a new decision).
            let audit: Vec<&AuditRecord> = batch
                .messages
                .iter()
                .zip(&outcomes)
                .filter(|(_, o)| matches!(o, Stored::New { .. }))
                .map(|((_, a), _)| a)
                .chain(batch.audit.iter())
                .collect();
            for chunk in audit.chunks(500) {
                let mut q: QueryBuilder<_> = QueryBuilder::new(
                    "INSERT INTO audit (at, source, message_id, stage, from_agent, from_label, to_agent, to_label, size, hops, verdict, code, rule, reason) ",
                );
                q.push_values(chunk.iter(), |mut b, r| {
                    b.push_bind(ms(r.at))
                        .push_bind(r.source.clone())
                        .push_bind(r.message.clone())
                        .push_bind(r.stage.clone())
                        .push_bind(r.from.clone())
                        .push_bind(r.from_label.clone())
                        .push_bind(r.to.clone())
                        .push_bind(r.to_label.clone())
                        .push_bind(i64::try_from(r.size).unwrap_or(i64::MAX))
                        .push_bind(r.hops.map(i64::from))
                        .push_bind(r.verdict.clone())
                        .push_bind(r.code.clone())
                        .push_bind(r.rule.clone())
                        .push_bind(r.reason.clone());
                });
                q.build().execute(&mut *tx).await?;
            }
            for c in conversation_updates(&audit) {
                sqlx::query(
                    "INSERT INTO conversations (a, b, a_label, b_label, last_at, decisions, refusals, last_verdict, last_refusal_at, last_refusal_code, last_refusal)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                     ON CONFLICT (a, b) DO UPDATE SET a_label = excluded.a_label, b_label = excluded.b_label,
                       last_at = CASE WHEN excluded.last_at > conversations.last_at THEN excluded.last_at ELSE conversations.last_at END,
                       decisions = conversations.decisions + excluded.decisions,
                       refusals = conversations.refusals + excluded.refusals,
                       last_verdict = excluded.last_verdict,
                       last_refusal_at = COALESCE(excluded.last_refusal_at, conversations.last_refusal_at),
                       last_refusal_code = COALESCE(excluded.last_refusal_code, conversations.last_refusal_code),
                       last_refusal = COALESCE(excluded.last_refusal, conversations.last_refusal)",
                )
                .bind(c.a)
                .bind(c.b)
                .bind(c.a_label)
                .bind(c.b_label)
                .bind(ms(c.last_at))
                .bind(c.decisions)
                .bind(c.refusals)
                .bind(c.last_verdict)
                .bind(c.last_refusal_at.map(ms))
                .bind(c.last_refusal_code)
                .bind(c.last_refusal)
                .execute(&mut *tx)
                .await?;
            }
            // Notes for other instances: who has mail, and that the dashboard changed.
            if self.is_postgres() {
                let mut recipients: Vec<DeviceId> = batch
                    .messages
                    .iter()
                    .zip(&outcomes)
                    .filter(|(_, o)| matches!(o, Stored::New { .. }))
                    .map(|((m, _), _)| m.recipient)
                    .collect();
                recipients.sort_unstable();
                recipients.dedup();
                for r in recipients {
                    notify!(self, &mut *tx, &Note::Deliver(r), instance);
                }
            }
            tx.commit().await?;
            batch.outcomes = outcomes;
        });
        Ok(())
    }

    /// Sends a note now (PostgreSQL only).
    pub async fn notify(&self, note: &Note, instance: &str) -> Result<(), StoreError> {
        if let Backend::Postgres(pool) = &self.backend {
            sqlx::query("SELECT pg_notify($1, $2)").bind(CHANNEL).bind(note.encode(instance)).execute(pool).await?;
        }
        Ok(())
    }

    // ---- policy log -----------------------------------------------------------------

    /// Appends a policy log entry and returns its sequence number. Entries commit in
    /// sequence order (the log is locked for the append on PostgreSQL), so a reader that
    /// has seen entry n has seen every entry before it.
    pub async fn append_policy(
        &self,
        origin: &str,
        at: Timestamp,
        actions: &[AdminAction],
        instance: &str,
    ) -> Result<u64, StoreError> {
        let json = serde_json::to_string(actions).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let seq = with_pool!(self, pool => {
            let mut tx = begin!(self, pool);
            if self.is_postgres() {
                sqlx::query("LOCK TABLE policy_log IN EXCLUSIVE MODE").execute(&mut *tx).await?;
            }
            let (seq,): (i64,) = sqlx::query_as("INSERT INTO policy_log (at, origin, actions) VALUES ($1, $2, $3) RETURNING seq")
                .bind(ms(at))
                .bind(origin)
                .bind(&json)
                .fetch_one(&mut *tx)
                .await?;
            notify!(self, &mut *tx, &Note::Policy, instance);
            tx.commit().await?;
            seq
        });
        Ok(u(seq))
    }

    /// Policy log entries after `seq`, in order.
    pub async fn policy_since(&self, seq: u64) -> Result<Vec<(u64, Timestamp, Vec<AdminAction>)>, StoreError> {
        let rows: Vec<(i64, i64, String)> = with_pool!(self, pool => {
            sqlx::query_as("SELECT seq, at, actions FROM policy_log WHERE seq > $1 ORDER BY seq")
                .bind(i64::try_from(seq).unwrap_or(i64::MAX))
                .fetch_all(pool)
                .await?
        });
        rows.into_iter()
            .map(|(seq, at, json)| {
                let actions =
                    serde_json::from_str(&json).map_err(|e| StoreError::Corrupt(format!("policy entry {seq}: {e}")))?;
                Ok((u(seq), ts(at), actions))
            })
            .collect()
    }

    /// Drops log entries up to `seq` once a snapshot covers them.
    pub async fn compact_policy(&self, seq: u64, snapshot: &str) -> Result<(), StoreError> {
        with_pool!(self, pool => {
            let mut tx = begin!(self, pool);
            if self.is_postgres() {
                sqlx::query("LOCK TABLE policy_log IN EXCLUSIVE MODE").execute(&mut *tx).await?;
            }
            sqlx::query("INSERT INTO settings (key, value) VALUES ('policy_snapshot', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
                .bind(snapshot)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM policy_log WHERE seq <= $1").bind(i64::try_from(seq).unwrap_or(i64::MAX)).execute(&mut *tx).await?;
            tx.commit().await?;
        });
        Ok(())
    }

    pub async fn policy_log_len(&self) -> Result<u64, StoreError> {
        let (n,): (i64,) = with_pool!(self, pool => {
            sqlx::query_as("SELECT COUNT(*) FROM policy_log").fetch_one(pool).await?
        });
        Ok(u(n))
    }

    // ---- audit and conversations ----------------------------------------------------

    pub async fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
        #[allow(clippy::type_complexity)]
        let rows: Vec<(
            i64,
            String,
            Option<String>,
            String,
            String,
            String,
            String,
            String,
            i64,
            Option<i64>,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
        )> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT at, source, message_id, stage, from_agent, from_label, to_agent, to_label, size, hops, verdict, code, rule, reason
                 FROM audit
                 WHERE (CAST($1 AS TEXT) IS NULL OR from_agent = $1 OR from_label = $1)
                   AND (CAST($2 AS TEXT) IS NULL OR to_agent = $2 OR to_label = $2)
                   AND (CAST($3 AS BIGINT) IS NULL OR at >= $3)
                   AND (CAST($4 AS BIGINT) IS NULL OR at < $4)
                   AND (CAST($5 AS TEXT) IS NULL OR verdict = $5)
                 ORDER BY at, id LIMIT $6",
            )
            .bind(query.from.clone())
            .bind(query.to.clone())
            .bind(query.since.map(ms))
            .bind(query.until.map(ms))
            .bind(query.verdict.clone())
            .bind(i64::try_from(query.limit).unwrap_or(i64::MAX))
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(
                |(
                    at,
                    source,
                    message,
                    stage,
                    from,
                    from_label,
                    to,
                    to_label,
                    size,
                    hops,
                    verdict,
                    code,
                    rule,
                    reason,
                )| AuditRecord {
                    at: ts(at),
                    source,
                    message,
                    stage,
                    from,
                    from_label,
                    to,
                    to_label,
                    size: u(size),
                    hops: hops.and_then(|h| u32::try_from(h).ok()),
                    verdict,
                    code,
                    rule,
                    reason,
                },
            )
            .collect())
    }

    pub async fn conversations(&self) -> Result<Vec<ConversationRow>, StoreError> {
        #[allow(clippy::type_complexity)]
        let rows: Vec<(
            String,
            String,
            String,
            String,
            i64,
            i64,
            i64,
            String,
            Option<i64>,
            Option<String>,
            Option<String>,
        )> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT a, b, a_label, b_label, last_at, decisions, refusals, last_verdict, last_refusal_at, last_refusal_code, last_refusal
                 FROM conversations ORDER BY last_at DESC LIMIT 1000",
            )
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(a, b, a_label, b_label, last_at, decisions, refusals, last_verdict, rat, rcode, r)| {
                ConversationRow {
                    a,
                    b,
                    a_label,
                    b_label,
                    last_at: u(last_at),
                    decisions: u(decisions),
                    refusals: u(refusals),
                    last_verdict,
                    last_refusal_at: rat.map(u),
                    last_refusal_code: rcode,
                    last_refusal: r,
                }
            })
            .collect())
    }

    // ---- admin sessions -------------------------------------------------------------

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

    // ---- retention ------------------------------------------------------------------

    /// Deletes what is past keeping: audit records older than `retention`; delivered
    /// envelopes' rows once a resend could no longer pass the time window (`window`);
    /// undelivered envelopes older than `pending_ttl`, which no recipient would open any
    /// more (returned, for the audit log); expired sessions and invites.
    pub async fn prune(
        &self,
        now: Timestamp,
        retention: Duration,
        window: Duration,
        pending_ttl: Duration,
    ) -> Result<Pruned, StoreError> {
        let before = |d: Duration| ms(now).saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let pruned = with_pool!(self, pool => {
            let audit = sqlx::query("DELETE FROM audit WHERE at < $1").bind(before(retention)).execute(pool).await?.rows_affected();
            let expired: Vec<(String, String, String, i64)> = sqlx::query_as(
                "DELETE FROM messages WHERE delivered_at IS NULL AND stored_at < $1 RETURNING sender, recipient, message_id, size",
            )
            .bind(before(pending_ttl))
            .fetch_all(pool)
            .await?;
            let delivered = sqlx::query("DELETE FROM messages WHERE delivered_at IS NOT NULL AND sent_at < $1")
                .bind(before(window))
                .execute(pool)
                .await?
                .rows_affected();
            sqlx::query("DELETE FROM sessions WHERE expires_at < $1").bind(ms(now)).execute(pool).await?;
            sqlx::query("DELETE FROM invites WHERE used_at IS NULL AND expires_at < $1").bind(ms(now)).execute(pool).await?;
            Pruned { audit, delivered, expired: expired.into_iter().map(|(s, r, id, size)| (s, r, id, u(size))).collect() }
        });
        Ok(pruned)
    }
}

/// What [`Store::prune`] removed.
#[derive(Debug, Default)]
pub struct Pruned {
    pub audit: u64,
    pub delivered: u64,
    /// Undelivered envelopes dropped: sender, recipient, message id, size.
    pub expired: Vec<(String, String, String, u64)>,
}

/// The result of [`Store::enroll`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enrolled {
    Done,
    BadInvite,
    AlreadyEnrolled,
    Retired,
}

/// A device row as selected.
type DeviceTuple = (String, String, String, i64, String, Option<String>, Option<String>);

/// Deliveries to mark: the recipient, the sequence numbers, who waits for the commit.
type DeliveredOp = (DeviceId, Vec<u64>, oneshot::Sender<Result<(), ()>>);

fn device_row(
    (dev, bundle, name, enrolled_at, status, superseded_by, rotation): DeviceTuple,
) -> Result<DeviceRow, StoreError> {
    Ok(DeviceRow {
        device: device(&dev)?,
        bundle,
        name,
        enrolled_at: ts(enrolled_at),
        status,
        superseded_by: superseded_by.as_deref().map(device).transpose()?,
        rotation,
    })
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

struct ConversationUpdate {
    a: String,
    b: String,
    a_label: String,
    b_label: String,
    last_at: Timestamp,
    decisions: i64,
    refusals: i64,
    last_verdict: String,
    last_refusal_at: Option<Timestamp>,
    last_refusal_code: Option<String>,
    last_refusal: Option<String>,
}

/// One update per pair of agents for a batch of audit records, in record order.
fn conversation_updates(records: &[&AuditRecord]) -> Vec<ConversationUpdate> {
    let mut by_pair: BTreeMap<(String, String), ConversationUpdate> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.from.is_empty() && !r.to.is_empty()) {
        let (a, a_label, b, b_label) = if r.from <= r.to {
            (&r.from, &r.from_label, &r.to, &r.to_label)
        } else {
            (&r.to, &r.to_label, &r.from, &r.from_label)
        };
        let refused = r.verdict == "deny";
        let entry = by_pair.entry((a.clone(), b.clone())).or_insert_with(|| ConversationUpdate {
            a: a.clone(),
            b: b.clone(),
            a_label: a_label.clone(),
            b_label: b_label.clone(),
            last_at: r.at,
            decisions: 0,
            refusals: 0,
            last_verdict: r.verdict.clone(),
            last_refusal_at: None,
            last_refusal_code: None,
            last_refusal: None,
        });
        entry.decisions += 1;
        entry.last_at = entry.last_at.max(r.at);
        entry.last_verdict = r.verdict.clone();
        if refused {
            entry.refusals += 1;
            entry.last_refusal_at = Some(r.at);
            entry.last_refusal_code = r.code.clone();
            entry.last_refusal = r.reason.clone();
        }
    }
    by_pair.into_values().collect()
}

/// One item of a group commit.
enum Op {
    Store(Box<NewMessage>, Box<AuditRecord>, oneshot::Sender<Result<Stored, ()>>),
    Delivered(DeviceId, Vec<u64>, oneshot::Sender<Result<(), ()>>),
    Audit(Vec<AuditRecord>),
}

#[derive(Default)]
struct Batch {
    now: Timestamp,
    messages: Vec<(NewMessage, AuditRecord)>,
    message_replies: Vec<oneshot::Sender<Result<Stored, ()>>>,
    delivered: Vec<DeliveredOp>,
    audit: Vec<AuditRecord>,
    outcomes: Vec<Stored>,
}

/// What the writer tells the relay after each commit.
pub trait AfterCommit: Send + Sync + 'static {
    /// An envelope was stored as `seq` for `recipient`: deliver it if it is connected here.
    fn stored(&self, recipient: DeviceId, seq: u64, body: Arc<Vec<u8>>);
    /// Audit records were written.
    fn audited(&self);
}

/// The group-commit writer. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Writer {
    tx: mpsc::Sender<Op>,
}

/// The most items in one transaction.
const MAX_BATCH: usize = 2048;

impl Writer {
    /// Starts the writer task for `store`. `clock` gives the commit time.
    pub fn start(store: Store, instance: String, clock: fn() -> Timestamp, after: Arc<dyn AfterCommit>) -> Self {
        let (tx, mut rx) = mpsc::channel::<Op>(8192);
        tokio::spawn(async move {
            let mut ops = Vec::with_capacity(MAX_BATCH);
            while rx.recv_many(&mut ops, MAX_BATCH).await > 0 {
                let mut batch = Batch { now: clock(), ..Batch::default() };
                for op in ops.drain(..) {
                    match op {
                        Op::Store(m, a, reply) => {
                            batch.messages.push((*m, *a));
                            batch.message_replies.push(reply);
                        }
                        Op::Delivered(d, seqs, reply) => batch.delivered.push((d, seqs, reply)),
                        Op::Audit(records) => batch.audit.extend(records),
                    }
                }
                let result = store.commit(&mut batch, &instance).await;
                if let Err(e) = &result {
                    tracing::error!(error = %e, "group commit failed; nothing in it was acknowledged");
                }
                let ok = result.is_ok();
                let audited = !batch.audit.is_empty() || batch.outcomes.iter().any(|o| matches!(o, Stored::New { .. }));
                let Batch { messages, message_replies, delivered, outcomes, .. } = batch;
                for (i, ((m, _), reply)) in messages.into_iter().zip(message_replies).enumerate() {
                    let outcome = if ok { outcomes.get(i).cloned().ok_or(()) } else { Err(()) };
                    if let Ok(Stored::New { seq }) = &outcome {
                        after.stored(m.recipient, *seq, m.body.clone());
                    }
                    let _ = reply.send(outcome);
                }
                for (_, _, reply) in delivered {
                    let _ = reply.send(if ok { Ok(()) } else { Err(()) });
                }
                if ok && audited {
                    after.audited();
                }
            }
        });
        Self { tx }
    }

    /// Stores an envelope with its audit record; resolves once committed.
    pub async fn store(&self, message: NewMessage, audit: AuditRecord) -> Result<Stored, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Op::Store(Box::new(message), Box::new(audit), reply)).await.map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?.map_err(|()| StoreError::Closed)
    }

    /// The same as [`Writer::store`], returning the receiver at once so a connection can
    /// wait for many commits together.
    pub async fn store_later(
        &self,
        message: NewMessage,
        audit: AuditRecord,
    ) -> Result<oneshot::Receiver<Result<Stored, ()>>, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Op::Store(Box::new(message), Box::new(audit), reply)).await.map_err(|_| StoreError::Closed)?;
        Ok(rx)
    }

    /// Marks deliveries to `recipient` acknowledged; resolves once committed.
    pub async fn delivered_later(
        &self,
        recipient: DeviceId,
        seqs: Vec<u64>,
    ) -> Result<oneshot::Receiver<Result<(), ()>>, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Op::Delivered(recipient, seqs, reply)).await.map_err(|_| StoreError::Closed)?;
        Ok(rx)
    }

    /// Writes audit records with the next commit.
    pub async fn audit(&self, records: Vec<AuditRecord>) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        self.tx.send(Op::Audit(records)).await.map_err(|_| StoreError::Closed)
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
