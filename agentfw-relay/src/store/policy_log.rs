//! The policy log: every admin action in order, compacted behind a snapshot.

use agentfw_core::firewall::AdminAction;
use agentfw_core::time::Timestamp;

use super::{Backend, CHANNEL, Note, Store, StoreError, ms, ts, u};

impl Store {
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
}
