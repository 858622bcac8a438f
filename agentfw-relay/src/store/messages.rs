//! Envelopes: stored until delivered, and the group commit that stores them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use agentfw_core::message::Agent;
use agentfw_core::seal::DeviceId;
use agentfw_core::time::Timestamp;
use sqlx::{QueryBuilder, Row};

use super::audit::conversation_updates;
use super::writer::Batch;
use super::{Backend, CHANNEL, Note, Store, StoreError, ms, u};
use crate::audit::AuditRecord;

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

impl Store {
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
    pub(super) async fn commit(&self, batch: &mut Batch, instance: &str) -> Result<(), StoreError> {
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
}
