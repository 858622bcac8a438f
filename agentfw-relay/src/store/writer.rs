//! The group-commit writer.

use std::sync::Arc;

use agentfw_core::seal::DeviceId;
use agentfw_core::time::Timestamp;
use tokio::sync::{mpsc, oneshot};

use super::{NewMessage, Store, StoreError, Stored};
use crate::audit::AuditRecord;

/// Deliveries to mark: the recipient, the sequence numbers, who waits for the commit.
type DeliveredOp = (DeviceId, Vec<u64>, oneshot::Sender<Result<(), ()>>);

/// One item of a group commit.
enum Op {
    Store(Box<NewMessage>, Box<AuditRecord>, oneshot::Sender<Result<Stored, ()>>),
    Delivered(DeviceId, Vec<u64>, oneshot::Sender<Result<(), ()>>),
    Audit(Vec<AuditRecord>),
}

/// What one transaction of the writer commits ([`Store::commit`]), and its outcomes.
#[derive(Default)]
pub(super) struct Batch {
    pub now: Timestamp,
    pub messages: Vec<(NewMessage, AuditRecord)>,
    message_replies: Vec<oneshot::Sender<Result<Stored, ()>>>,
    pub delivered: Vec<DeliveredOp>,
    pub audit: Vec<AuditRecord>,
    /// One per message, in order, once committed.
    pub outcomes: Vec<Stored>,
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
