//! Retention: what is past keeping is deleted.

use std::time::Duration;

use agentfw_core::time::Timestamp;

use super::{Backend, Store, StoreError, ms, u};

/// What [`Store::prune`] removed.
#[derive(Debug, Default)]
pub struct Pruned {
    pub audit: u64,
    pub delivered: u64,
    /// Undelivered envelopes dropped: sender, recipient, message id, size.
    pub expired: Vec<(String, String, String, u64)>,
}

impl Store {
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
