//! `agentfw audit`: the decision log, metadata only (AM4). Records older than the retention
//! (90 days by default) are pruned by the daemon; `--json` exports JSON lines.

use std::process::ExitCode;

use agentfw_mcp::proto::AuditQuery;
use agentfw_mcp::render::time;

use super::{connect, daemon_error, fail, now};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only decisions on messages from this agent (id, label, or project).
    #[arg(long, value_name = "AGENT")]
    from: Option<String>,
    /// Only decisions on messages to this agent (id, label, or project).
    #[arg(long, value_name = "AGENT")]
    to: Option<String>,
    /// Only decisions since this time: RFC 3339 (`2026-11-30T14:00:00Z`), a date, or an age
    /// such as `90m`, `12h`, `7d`.
    #[arg(long, value_name = "TIME")]
    since: Option<String>,
    /// One JSON object per line (JSONL), for export.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> ExitCode {
    let since = match args.since.as_deref().map(|s| parse_since(s, now().as_millis())).transpose() {
        Ok(since) => since,
        Err(e) => return fail(e),
    };
    let mut client = match connect(true) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut query = AuditQuery { from: args.from.clone(), to: args.to.clone(), since, after: None, limit: Some(1000) };
    let mut count = 0usize;
    loop {
        let page = match client.audit(query.clone()) {
            Ok(page) => page,
            Err(e) => return daemon_error(&e),
        };
        for r in &page.records {
            count += 1;
            if args.json {
                match serde_json::to_string(r) {
                    Ok(line) => outln!("{line}"),
                    Err(e) => return fail(e),
                }
                continue;
            }
            let why = match (&r.rule, &r.code, &r.reason) {
                (Some(rule), _, Some(reason)) => format!("  rule {rule}: {reason}"),
                (None, Some(code), Some(reason)) => format!("  {code}: {reason}"),
                _ => String::new(),
            };
            let unverified = if r.unverified.is_some() { "  [sender unverified]" } else { "" };
            outln!(
                "{}  {:<5} {:<10} {} -> {}  {} ({} bytes, {} hop{}){why}{unverified}",
                time(r.at),
                r.verdict,
                r.stage,
                r.from_label,
                r.to_label,
                r.id,
                r.size,
                r.hops,
                if r.hops == 1 { "" } else { "s" }
            );
        }
        match page.next {
            Some(next) => query.after = Some(next),
            None => break,
        }
    }
    if count == 0 && !args.json {
        eprintln!(
            "no decisions recorded{}",
            if args.since.is_some() || args.from.is_some() || args.to.is_some() { " that match" } else { "" }
        );
    }
    ExitCode::SUCCESS
}

/// A point in time as milliseconds since the epoch: an age (`90s`, `30m`, `12h`, `7d`)
/// before `now`, a date (`2026-11-30`), or RFC 3339 in UTC (`2026-11-30T14:05:00Z`).
pub fn parse_since(text: &str, now: u64) -> Result<u64, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{t}` is not a time: use an age such as `90m`, `12h` or `7d`, a date `2026-11-30`, or `2026-11-30T14:05:00Z`"
        )
    };
    let age = t.char_indices().last().and_then(|(i, unit)| {
        let n = t.get(..i)?;
        (unit.is_ascii_alphabetic() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some((n, unit))
    });
    if let Some((n, unit)) = age {
        let n: u64 = n.parse().map_err(|_| bad())?;
        let ms = match unit {
            's' => 1_000,
            'm' => 60_000,
            'h' => 3_600_000,
            'd' => 86_400_000,
            'w' => 7 * 86_400_000,
            _ => return Err(bad()),
        };
        return Ok(now.saturating_sub(n.saturating_mul(ms)));
    }
    let (date, clock) = t.split_once(['T', ' ']).unwrap_or((t, ""));
    let mut parts = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (Some(Some(y)), Some(Some(m)), Some(Some(d))) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    let clock = clock.trim_end_matches('Z');
    let mut hms = clock.split(':').filter(|s| !s.is_empty()).map(|p| p.parse::<f64>().ok());
    let h = hms.next().map_or(Some(0.0), |v| v).ok_or_else(bad)?;
    let min = hms.next().map_or(Some(0.0), |v| v).ok_or_else(bad)?;
    let s = hms.next().map_or(Some(0.0), |v| v).ok_or_else(bad)?;
    let days = days_from_civil(y, m, d);
    let secs = days as f64 * 86_400.0 + h * 3600.0 + min * 60.0 + s;
    if !(0.0..1e13).contains(&secs) {
        return Err(bad());
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked range above
    Ok((secs * 1000.0) as u64)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_ages_dates_and_times() {
        let now = 1_800_000_000_000;
        assert_eq!(parse_since("90m", now).unwrap(), now - 90 * 60_000);
        assert_eq!(parse_since("7d", now).unwrap(), now - 7 * 86_400_000);
        assert_eq!(parse_since("1970-01-02", now).unwrap(), 86_400_000);
        assert_eq!(parse_since("2026-11-30T14:05:00Z", now).unwrap(), 1_796_047_500_000);
        assert!(parse_since("yesterday", now).is_err());
        assert!(parse_since("2026-13-01", now).is_err());
    }
}
