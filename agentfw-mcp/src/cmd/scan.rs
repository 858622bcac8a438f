//! `agentfw scan`: judge text from stdin with the rule engine (PR8).

use std::io::{BufWriter, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agentfw_core::policy::{RuleVerdict, Scanner, Stage};

use super::{fail, load, now};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A rule file, or a directory of rule and pattern files (default: the built-in pack).
    #[arg(long, value_name = "PATH")]
    rules: Option<PathBuf>,
    /// Judge as the message is sent or as it is delivered.
    #[arg(long, value_enum, default_value_t = On::Sending)]
    on: On,
    /// How many hops the text has travelled: 1 is text its sender wrote, 2 text passed on.
    #[arg(long, default_value_t = 1)]
    hops: u32,
    /// Read one JSON object per line (`{"text": ...}`) and write one verdict per line.
    #[arg(long)]
    jsonl: bool,
    /// In plain mode, also show what every rule made of the text.
    #[arg(long, conflicts_with = "jsonl")]
    explain: bool,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum On {
    Sending,
    Delivering,
}

impl From<On> for Stage {
    fn from(on: On) -> Stage {
        match on {
            On::Sending => Stage::Sending,
            On::Delivering => Stage::Delivering,
        }
    }
}

pub fn run(args: &Args) -> ExitCode {
    let rules = match load::rules(args.rules.as_deref()) {
        Ok(rules) => rules,
        Err(e) => return fail(e),
    };
    let scanner = Scanner::new(Arc::new(rules));
    let stage = Stage::from(args.on);
    if args.jsonl { jsonl(&scanner, stage, args.hops) } else { plain(&scanner, stage, args.hops, args.explain) }
}

fn plain(scanner: &Scanner, stage: Stage, hops: u32, explain: bool) -> ExitCode {
    let mut text = Vec::new();
    if let Err(e) = std::io::stdin().lock().read_to_end(&mut text) {
        return fail(format!("cannot read stdin: {e}"));
    }
    let Ok(text) = String::from_utf8(text) else {
        return fail("stdin is not UTF-8 text");
    };
    let explanation = scanner.explain(&text, stage, hops, now());
    match &explanation.verdict {
        RuleVerdict::Allow => outln!("allow"),
        RuleVerdict::Deny { rule, reason } => outln!("deny {rule}: {reason}"),
    }
    if explain {
        for outcome in &explanation.outcomes {
            let result = match &outcome.result {
                agentfw_core::policy::Outcome::Matched => "matched".to_owned(),
                agentfw_core::policy::Outcome::NotMatched => "no match".to_owned(),
                agentfw_core::policy::Outcome::Failed(why) => format!("failed: {why}"),
            };
            outln!("  {} ({}): {result}", outcome.rule, outcome.verdict.as_str());
        }
    }
    ExitCode::from(u8::from(explanation.verdict.is_deny()))
}

fn jsonl(scanner: &Scanner, stage: Stage, hops: u32) -> ExitCode {
    let out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match agentfw_mcp::scan::jsonl(scanner, stage, hops, now(), std::io::stdin().lock(), out) {
        Ok(denied) => ExitCode::from(u8::from(denied)),
        Err(e) => fail(e),
    }
}
