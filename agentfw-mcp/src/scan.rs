//! `agentfw scan --jsonl`: a verdict for each text of a stream, one JSON object per line in
//! and out, in input order (PR8).
//!
//! Judging is nearly all of the work and every line is independent, so lines are read in
//! batches and each batch is judged on all cores, then written in order. A bad line stops
//! the stream after the verdicts of every line before it, as a line-by-line loop would.

use std::io::{BufRead, Write};
use std::num::NonZeroUsize;

use agentfw_core::policy::{RuleVerdict, Scanner, Stage};
use agentfw_core::time::Timestamp;
use serde::{Deserialize, Serialize};

/// Lines judged together: enough work per batch that starting its threads costs nothing
/// measurable, few enough that a slow reader still sees verdicts as it goes.
const BATCH: usize = 1024;

/// Why a stream stopped. Every verdict before the line named was written.
#[derive(Debug, thiserror::Error)]
pub enum JsonlError {
    #[error("cannot read line {line}: {source}")]
    Read { line: usize, source: std::io::Error },
    #[error("line {line} is not a JSON object with a `text` string: {source}")]
    NotText { line: usize, source: serde_json::Error },
    #[error("cannot write the verdicts: {0}")]
    Write(#[from] std::io::Error),
}

#[derive(Deserialize)]
struct Line {
    text: String,
}

#[derive(Serialize)]
struct Verdict<'a> {
    verdict: &'static str,
    rule: Option<&'a str>,
    reason: Option<&'a str>,
}

impl<'a> From<&'a RuleVerdict> for Verdict<'a> {
    fn from(v: &'a RuleVerdict) -> Self {
        Verdict { verdict: if v.is_deny() { "deny" } else { "allow" }, rule: v.rule(), reason: v.reason() }
    }
}

/// Judges every line of `input` as text sent (or delivered) at `hops`, writing one verdict
/// per line to `output`, on every core. Blank lines are skipped. Returns whether any line
/// was denied.
pub fn jsonl(
    scanner: &Scanner,
    stage: Stage,
    hops: u32,
    now: Timestamp,
    input: impl BufRead,
    output: impl Write,
) -> Result<bool, JsonlError> {
    let workers = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    lines(&|text: &str| scanner.judge(text, stage, hops, now), workers, input, output)
}

/// The loop of [`jsonl`] with any judge and number of threads: how the benchmarks run a
/// floor program through exactly the same reading, batching and writing.
pub fn lines(
    judge: &(impl Fn(&str) -> RuleVerdict + Sync),
    workers: usize,
    input: impl BufRead,
    mut output: impl Write,
) -> Result<bool, JsonlError> {
    let judged = judge_all(judge, workers.max(1), input, &mut output);
    output.flush()?;
    judged
}

fn judge_all(
    judge: &(impl Fn(&str) -> RuleVerdict + Sync),
    workers: usize,
    input: impl BufRead,
    output: &mut impl Write,
) -> Result<bool, JsonlError> {
    let judge_line = |(line, text): &(usize, String)| -> Result<RuleVerdict, JsonlError> {
        let input: Line = serde_json::from_str(text).map_err(|source| JsonlError::NotText { line: *line, source })?;
        Ok(judge(&input.text))
    };
    let mut denied = false;
    let mut lines = input.lines().enumerate().map(|(n, l)| (n + 1, l));
    loop {
        let mut batch = Vec::with_capacity(BATCH);
        let mut stop = None;
        for (line, text) in lines.by_ref() {
            match text {
                Ok(text) if text.trim().is_empty() => {}
                Ok(text) => batch.push((line, text)),
                Err(source) => {
                    stop = Some(JsonlError::Read { line, source });
                    break;
                }
            }
            if batch.len() == BATCH {
                break;
            }
        }
        if batch.is_empty() && stop.is_none() {
            break;
        }
        let share = batch.len().div_ceil(workers).max(1);
        let verdicts: Vec<Result<RuleVerdict, JsonlError>> = if workers == 1 {
            batch.iter().map(judge_line).collect()
        } else {
            std::thread::scope(|s| {
                let parts: Vec<_> = batch
                    .chunks(share)
                    .map(|part| s.spawn(move || part.iter().map(judge_line).collect::<Vec<_>>()))
                    .collect();
                parts
                    .into_iter()
                    .flat_map(|p| p.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                    .collect()
            })
        };
        for verdict in verdicts {
            let verdict = verdict?;
            denied |= verdict.is_deny();
            serde_json::to_writer(&mut *output, &Verdict::from(&verdict)).map_err(std::io::Error::from)?;
            output.write_all(b"\n")?;
        }
        if let Some(stop) = stop {
            return Err(stop);
        }
    }
    Ok(denied)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use std::sync::Arc;

    use agentfw_core::policy::RuleSet;

    use super::*;

    const SECRET: &str = "AKIAZ7Q3VJXK2PLM4WRT";

    fn scan(input: &str) -> (Result<bool, JsonlError>, Vec<String>) {
        let scanner = Scanner::new(Arc::new(RuleSet::default_pack().unwrap()));
        let mut out = Vec::new();
        let result = jsonl(&scanner, Stage::Sending, 1, Timestamp::from_millis(0), input.as_bytes(), &mut out);
        (result, String::from_utf8(out).unwrap().lines().map(str::to_owned).collect())
    }

    /// Line `n` (from 1) holds a secret when `n` is a multiple of 7.
    fn lines(count: usize) -> String {
        (1..=count)
            .map(|n| {
                let text = if n % 7 == 0 { format!("key {SECRET}") } else { format!("note number {n}") };
                format!("{}\n", serde_json::json!({ "text": text }))
            })
            .collect()
    }

    #[test]
    fn verdicts_keep_the_input_order_across_batches_and_threads() {
        let count = BATCH * 3 + 17;
        let (result, out) = scan(&lines(count));
        assert!(result.unwrap());
        assert_eq!(out.len(), count);
        for (i, line) in out.iter().enumerate() {
            let denied = line.contains("\"deny\"");
            assert_eq!(denied, (i + 1) % 7 == 0, "line {}: {line}", i + 1);
        }
    }

    #[test]
    fn a_bad_line_stops_after_the_verdicts_of_every_line_before_it() {
        let mut input = lines(BATCH + 10);
        input.push_str("\n{\"txt\": 1}\n");
        input.push_str(&lines(5));
        let (result, out) = scan(&input);
        let err = result.unwrap_err();
        assert_eq!(
            err.to_string().split(':').next(),
            Some(format!("line {} is not a JSON object with a `text` string", BATCH + 12).as_str())
        );
        assert_eq!(out.len(), BATCH + 10);
    }

    #[test]
    fn unreadable_input_names_its_line() {
        let mut input = lines(3).into_bytes();
        input.extend_from_slice(b"{\"text\": \"\xff\"}\n");
        let scanner = Scanner::new(Arc::new(RuleSet::default_pack().unwrap()));
        let mut out = Vec::new();
        let result = jsonl(&scanner, Stage::Sending, 1, Timestamp::from_millis(0), input.as_slice(), &mut out);
        assert!(matches!(result, Err(JsonlError::Read { line: 4, .. })), "{result:?}");
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 3);
    }
}
