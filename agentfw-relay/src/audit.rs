//! The metadata log (AM4): who messaged whom, when, how big, the verdict, the rule and the
//! reason. Never the text: records are built from envelope headers, routing fields and the
//! firewalls' `Decision` events, none of which carry it.

use core::time::Duration;

use agentfw_core::firewall::{Decision, Verdict};
use agentfw_core::policy::Stage;
use agentfw_core::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The `source` of the relay's own records; a daemon's records carry its device id.
pub const RELAY: &str = "relay";

/// One decision, as metadata.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    #[serde(with = "rfc3339")]
    pub at: Timestamp,
    /// `relay`, or the device whose firewall decided.
    pub source: String,
    pub message: Option<String>,
    /// `sending`, `relaying` or `delivering`.
    pub stage: String,
    pub from: String,
    pub from_label: String,
    pub to: String,
    pub to_label: String,
    /// Bytes: of the body for a daemon's decision, of the envelope for the relay's.
    pub size: u64,
    pub hops: Option<u32>,
    /// `allow`, `deny` or `hold`.
    pub verdict: String,
    pub code: Option<String>,
    pub rule: Option<String>,
    pub reason: Option<String>,
}

impl AuditRecord {
    /// A daemon's decision, reported by `device`.
    pub fn from_decision(device: &str, d: &Decision) -> Self {
        Self {
            at: d.at,
            source: device.to_owned(),
            message: Some(d.id.to_string()),
            stage: match d.stage {
                Stage::Sending => "sending",
                Stage::Delivering => "delivering",
            }
            .to_owned(),
            from: d.from.to_string(),
            from_label: d.from_label.clone(),
            to: d.to.to_string(),
            to_label: d.to_label.clone(),
            size: u64::try_from(d.size).unwrap_or(u64::MAX),
            hops: Some(d.hops),
            verdict: match d.verdict {
                Verdict::Allow => "allow",
                Verdict::Deny => "deny",
                Verdict::Hold => "hold",
            }
            .to_owned(),
            code: d.reason.as_ref().map(|r| r.code.to_string()),
            rule: d.reason.as_ref().and_then(|r| r.rule.clone()),
            reason: d.reason.as_ref().map(|r| r.text.clone()),
        }
    }
}

/// A query over the log. `from`/`to` match an agent id or label.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AuditQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub verdict: Option<String>,
    pub limit: usize,
}

/// Records as JSON lines.
pub fn to_jsonl(records: &[AuditRecord]) -> String {
    let mut out = String::new();
    for r in records {
        if let Ok(line) = serde_json::to_string(r) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// A point in time as people write it: `2026-04-01`, `2026-04-01T10:00:00Z` (or without
/// seconds or zone, read as UTC), milliseconds since the epoch, or a span back from `now`:
/// `90m`, `24h`, `7d`.
pub fn parse_time(text: &str, now: Timestamp) -> Result<Timestamp, String> {
    let t = text.trim();
    let bad = || {
        format!("`{t}` is not a time: use 2026-04-01, 2026-04-01T10:00:00Z, or a span back from now such as 24h or 7d")
    };
    if let Some((n, unit)) = t.len().checked_sub(1).and_then(|i| Some((t.get(..i)?, t.get(i..)?))) {
        let secs = match unit {
            "s" => Some(1),
            "m" => Some(60),
            "h" => Some(3600),
            "d" => Some(86_400),
            _ => None,
        };
        if let (Some(secs), Ok(n)) = (secs, n.parse::<u64>()) {
            let span = Duration::from_secs(n.saturating_mul(secs));
            return Ok(Timestamp::from_millis(
                now.as_millis().saturating_sub(u64::try_from(span.as_millis()).unwrap_or(u64::MAX)),
            ));
        }
    }
    if t.len() > 10 && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map(Timestamp::from_millis).map_err(|_| bad());
    }
    let (date, time) = t.split_once(['T', ' ']).unwrap_or((t, ""));
    let mut d = date.split('-').map(str::parse::<u64>);
    let (Some(Ok(y)), Some(Ok(m)), Some(Ok(day)), None) = (d.next(), d.next(), d.next(), d.next()) else {
        return Err(bad());
    };
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return Err(bad());
    }
    let time = time.trim_end_matches('Z');
    let (time, millis) = match time.split_once('.') {
        Some((t, frac)) if !frac.is_empty() && frac.len() <= 3 && frac.bytes().all(|b| b.is_ascii_digit()) => {
            (t, format!("{frac:0<3}").parse::<u64>().map_err(|_| bad())?)
        }
        Some(_) => return Err(bad()),
        None => (time, 0),
    };
    let mut parts = time.split(':').filter(|p| !p.is_empty()).map(str::parse::<u64>);
    let hh = parts.next().transpose().map_err(|_| bad())?.unwrap_or(0);
    let mm = parts.next().transpose().map_err(|_| bad())?.unwrap_or(0);
    let ss = parts.next().transpose().map_err(|_| bad())?.unwrap_or(0);
    if parts.next().is_some() || hh > 23 || mm > 59 || ss > 60 {
        return Err(bad());
    }
    let days = days_from_civil(y, m, day);
    Ok(Timestamp::from_millis((((days * 24 + hh) * 60 + mm) * 60 + ss) * 1000 + millis))
}

/// Days from 1970-01-01 to the given date (proleptic Gregorian, years ≥ 1970).
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).saturating_sub(719_468)
}

mod rfc3339 {
    use agentfw_core::time::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(t)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_time(&text, Timestamp::from_millis(0)).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn times_parse_as_people_write_them() {
        let now = Timestamp::from_millis(1_796_047_500_000);
        assert_eq!(parse_time("2026-11-30T14:05:00Z", now).unwrap(), now);
        assert_eq!(parse_time("2026-11-30T14:05", now).unwrap(), now);
        assert_eq!(parse_time("2026-11-30", now).unwrap().to_string(), "2026-11-30T00:00:00.000Z");
        assert_eq!(parse_time("2000-02-29", now).unwrap().to_string(), "2000-02-29T00:00:00.000Z");
        assert_eq!(parse_time("24h", now).unwrap().as_millis(), now.as_millis() - 86_400_000);
        assert_eq!(parse_time("7d", now).unwrap().as_millis(), now.as_millis() - 7 * 86_400_000);
        assert_eq!(parse_time("1796047500000", now).unwrap(), now);
        for bad in ["yesterday", "2026-13-01", "2026-11-30T25:00", "7w", ""] {
            assert!(parse_time(bad, now).is_err(), "{bad}");
        }
        // The export's own format reads back.
        assert_eq!(parse_time(&now.to_string(), now).unwrap(), now);
    }
}
