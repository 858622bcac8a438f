//! `audit`: every decision, metadata only (AM4): who, whom, when, size, hops, verdict, rule
//! and reason, never the text.

use agentfw_core::firewall::Decision;
use agentfw_core::policy::Stage;
use agentfw_core::time::Timestamp;
use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::{Cached, Store, StoreError, ms};
use crate::proto::{AuditQuery, AuditRecord, AuditResult};

/// The `meta` key of the highest seq pruned: records are numbered above it, so a seq is never
/// handed out twice, even once every record before it is gone (see [`super::schema`]).
pub(super) const FLOOR: &str = "audit_floor";

impl Store {
    /// Records `d` with `verdict` (`allow`, `deny`, `hold` or `would_refuse`), and, when the
    /// sender's identity is not verified, why; returns the record's `seq`.
    pub fn audit(&self, d: &Decision, verdict: &str, unverified: Option<&str>) -> Result<i64, StoreError> {
        let (code, rule, reason) = reason_parts(d);
        self.conn.exec(
            "INSERT INTO audit (seq, at, message, stage, from_id, from_label, to_id, to_label, size, hops, verdict, code, rule, reason, unverified)
             VALUES (max(IFNULL((SELECT MAX(seq) FROM audit), 0), ?15) + 1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                ms(d.at),
                d.id.to_string(),
                stage_name(d.stage),
                d.from.as_str(),
                d.from_label,
                d.to.as_str(),
                d.to_label,
                i64::try_from(d.size).unwrap_or(i64::MAX),
                d.hops,
                verdict,
                code,
                rule,
                reason,
                unverified,
                self.audit_floor.get()
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Retention (AM4): the records from the oldest up to the first one at or after
    /// `before`. Records are written in time order, so these are the ones older than
    /// `before`, found by reading just them (no index on the time to keep up at every
    /// decision); one written while the clock stood behind goes with the records around it.
    /// Returns how many went.
    pub(super) fn prune_audit(&self, before: Timestamp) -> Result<usize, StoreError> {
        let first_kept: Option<i64> = self
            .conn
            .row("SELECT seq FROM audit WHERE at >= ?1 ORDER BY seq LIMIT 1", [ms(before)], |r| r.get(0))
            .optional()?;
        let last = match first_kept {
            Some(seq) => seq - 1,
            None => self.last_audit_seq()?,
        };
        if last > self.audit_floor.get() {
            // The floor first: a crash between the two leaves records above it, never a
            // gap below it that a new record could take.
            self.set_meta(FLOOR, &last.to_string())?;
            self.audit_floor.set(last);
        }
        Ok(self.conn.exec("DELETE FROM audit WHERE seq <= ?1", [last])?)
    }

    /// The latest record's `seq`, 0 when there is none.
    pub fn last_audit_seq(&self) -> Result<i64, StoreError> {
        Ok(self.conn.row("SELECT COALESCE(MAX(seq), 0) FROM audit", [], |r| r.get(0))?)
    }

    /// The records `q` asks for, oldest first: after a seq, since a time, from or to an agent
    /// (by id or label), at most `limit` (1 to 10,000; 1,000 if not given), and where the
    /// next page starts if there may be more.
    pub fn audit_records(&self, q: &AuditQuery) -> Result<AuditResult, StoreError> {
        let limit = i64::from(q.limit.unwrap_or(1000).clamp(1, 10_000));
        let mut sql = String::from(
            "SELECT seq, at, message, stage, from_id, from_label, to_id, to_label, size, hops, verdict, code, rule, reason, unverified
             FROM audit WHERE seq > ?1 AND at >= ?2",
        );
        let mut args: Vec<Value> = vec![
            Value::from(q.after.unwrap_or(0)),
            Value::from(i64::try_from(q.since.unwrap_or(0)).unwrap_or(i64::MAX)),
        ];
        for (field, value) in [("from", &q.from), ("to", &q.to)] {
            if let Some(v) = value {
                let n = args.len();
                sql.push_str(&format!(
                    " AND ({field}_id = ?{a} OR {field}_label = ?{a} COLLATE NOCASE OR {field}_label LIKE ?{b} ESCAPE '\\')",
                    a = n + 1,
                    b = n + 2
                ));
                let escaped = v.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
                args.push(Value::from(v.clone()));
                args.push(Value::from(format!("{escaped} (%")));
            }
        }
        sql.push_str(&format!(" ORDER BY seq LIMIT {limit}"));
        // Not cached: the query's shape varies, and it is not on a hot path.
        let mut stmt = self.conn.prepare(&sql)?;
        let params: Vec<Box<dyn rusqlite::ToSql>> = args
            .into_iter()
            .map(|v| -> Box<dyn rusqlite::ToSql> {
                match v {
                    Value::Number(n) => Box::new(n.as_i64().unwrap_or(0)),
                    Value::String(s) => Box::new(s),
                    _ => Box::new(rusqlite::types::Null),
                }
            })
            .collect();
        let records: Vec<AuditRecord> = stmt
            .query_map(rusqlite::params_from_iter(params.iter()), |r| {
                Ok(AuditRecord {
                    seq: r.get(0)?,
                    at: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                    id: r.get(2)?,
                    stage: r.get(3)?,
                    from: shown(r.get(4)?),
                    from_label: shown(r.get(5)?),
                    to: shown(r.get(6)?),
                    to_label: shown(r.get(7)?),
                    size: u64::try_from(r.get::<_, i64>(8)?).unwrap_or(0),
                    hops: r.get(9)?,
                    verdict: r.get(10)?,
                    code: r.get(11)?,
                    rule: r.get(12)?,
                    reason: r.get(13)?,
                    unverified: r.get(14)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        let next = (i64::try_from(records.len()).unwrap_or(0) == limit).then(|| records.last().map_or(0, |r| r.seq));
        Ok(AuditResult { records, next })
    }
}

/// An id or label read back from the audit log, cleaned for showing (ID7): rows written
/// before labels were cleaned, or naming agents of other devices, may hold anything.
fn shown(text: String) -> String {
    agentfw_core::label::bounded(&text, agentfw_core::label::MAX_LABEL_CHARS)
}

/// The record [`Store::audit`] wrote as `seq`, as `audit` queries return it (the dashboard
/// publishes it without reading it back).
pub fn record(seq: i64, d: &Decision, verdict: &str, unverified: Option<String>) -> AuditRecord {
    let (code, rule, reason) = reason_parts(d);
    AuditRecord {
        seq,
        at: d.at.as_millis(),
        id: d.id.to_string(),
        stage: stage_name(d.stage).to_owned(),
        from: d.from.to_string(),
        from_label: d.from_label.clone(),
        to: d.to.to_string(),
        to_label: d.to_label.clone(),
        size: u64::try_from(d.size).unwrap_or(u64::MAX),
        hops: d.hops,
        verdict: verdict.to_owned(),
        code: code.map(str::to_owned),
        rule: rule.map(str::to_owned),
        reason: reason.map(str::to_owned),
        unverified,
    }
}

fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Sending => "sending",
        Stage::Delivering => "delivering",
    }
}

/// The refusal's code, rule and reason, if `d` refused.
fn reason_parts(d: &Decision) -> (Option<&str>, Option<&str>, Option<&str>) {
    match &d.reason {
        Some(r) => (Some(r.code.as_str()), r.rule.as_deref(), Some(r.text.as_str())),
        None => (None, None, None),
    }
}
