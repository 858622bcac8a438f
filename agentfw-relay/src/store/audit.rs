//! The audit log and the conversations it sums up for the dashboard.

use std::collections::BTreeMap;

use agentfw_core::time::Timestamp;

use super::{Backend, Store, StoreError, ms, ts, u};
use crate::audit::{AuditQuery, AuditRecord};

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

impl Store {
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
}

/// A batch's change to one pair of agents' conversation row.
pub(super) struct ConversationUpdate {
    pub a: String,
    pub b: String,
    pub a_label: String,
    pub b_label: String,
    pub last_at: Timestamp,
    pub decisions: i64,
    pub refusals: i64,
    pub last_verdict: String,
    pub last_refusal_at: Option<Timestamp>,
    pub last_refusal_code: Option<String>,
    pub last_refusal: Option<String>,
}

/// One update per pair of agents for a batch of audit records, in record order.
pub(super) fn conversation_updates(records: &[&AuditRecord]) -> Vec<ConversationUpdate> {
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
