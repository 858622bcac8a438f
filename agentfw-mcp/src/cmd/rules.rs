//! `agentfw rules check|test|list`: rule tooling (PR6).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agentfw_core::policy::{PolicyError, Scanner, cases};

use super::load::{self, Files, LoadError};
use super::{EXIT_ERROR, fail, now};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Compile rule and pattern files and report every error with its line and column.
    Check {
        /// Rule or pattern files, or directories of them.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// Run files of expected-verdict cases (`cases: [{note, input, want}]`).
    Test {
        /// Case files, or directories of them.
        #[arg(required = true, value_name = "CASES")]
        cases: Vec<PathBuf>,
        /// Rules to test (default: the built-in pack).
        #[arg(long, value_name = "PATH")]
        rules: Option<PathBuf>,
    },
    /// List the active rules.
    List {
        /// Rules to list (default: the built-in pack).
        #[arg(long, value_name = "PATH")]
        rules: Option<PathBuf>,
        /// One JSON object per rule.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: &Command) -> ExitCode {
    match command {
        Command::Check { paths } => check(paths),
        Command::Test { cases, rules } => test(cases, rules.as_deref()),
        Command::List { rules, json } => list(rules.as_deref(), *json),
    }
}

fn check(paths: &[PathBuf]) -> ExitCode {
    let files = match Files::read(paths) {
        Ok(files) => files,
        Err(e) => return fail(e),
    };
    let (rule_files, pattern_files) = (files.rules.len(), files.patterns.len());
    // Case files found along the way are checked too.
    let mut case_errors = 0;
    for file in &files.cases {
        if let Err(PolicyError::Invalid(d)) = cases::read(file) {
            eprintln!("{d}\n");
            case_errors += d.len();
        }
    }
    match files.compile() {
        Ok(_) if case_errors > 0 => {
            eprintln!("error: {case_errors} error{} found", if case_errors == 1 { "" } else { "s" });
            ExitCode::FAILURE
        }
        Ok(set) => {
            println!(
                "ok: {} rules in {rule_files} rule files, {} pattern sets ({pattern_files} from these paths)",
                set.rules().count(),
                set.patterns().names().count()
            );
            ExitCode::SUCCESS
        }
        Err(LoadError::Policy(e)) => {
            eprintln!("{}\n", e.diagnostics());
            let n = e.diagnostics().len();
            eprintln!("error: {n} error{} found", if n == 1 { "" } else { "s" });
            ExitCode::FAILURE
        }
        Err(e) => fail(e),
    }
}

fn test(paths: &[PathBuf], rules: Option<&std::path::Path>) -> ExitCode {
    let set = match load::rules(rules) {
        Ok(set) => set,
        Err(e) => return fail(e),
    };
    let scanner = Scanner::new(Arc::new(set));
    let files = match Files::read(paths) {
        Ok(files) => files,
        Err(e) => return fail(e),
    };
    let (mut passed, mut failed) = (0usize, 0usize);
    let now = now();
    // Every file given is read as cases, so a mistake shows as a diagnostic.
    for file in files.cases.iter().chain(&files.rules).chain(&files.patterns).chain(&files.placeholders) {
        let list = match cases::read(file) {
            Ok(list) => list,
            Err(PolicyError::Invalid(d)) => {
                eprintln!("{d}");
                return ExitCode::from(EXIT_ERROR);
            }
        };
        for result in cases::run(&scanner, &list, now) {
            if result.passed() {
                passed += 1;
                continue;
            }
            failed += 1;
            let want = match &result.case.rule {
                Some(rule) => format!("{} by `{rule}`", result.case.want.as_str()),
                None => result.case.want.as_str().to_owned(),
            };
            let got = match result.got.rule() {
                Some(rule) => format!("deny by `{rule}`"),
                None => "allow".to_owned(),
            };
            println!("FAIL {}:{} {}: want {want}, got {got}", result.case.file, result.case.line, result.case.note);
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn list(rules: Option<&std::path::Path>, json: bool) -> ExitCode {
    let set = match load::rules(rules) {
        Ok(set) => set,
        Err(e) => return fail(e),
    };
    for rule in set.rules() {
        if json {
            match serde_json::to_string(rule) {
                Ok(line) => println!("{line}"),
                Err(e) => return fail(e),
            }
            continue;
        }
        let on: Vec<&str> = rule.on.iter().map(|s| s.event()).collect();
        println!("{}  {}  on {}  ({}:{})", rule.id, rule.verdict.as_str(), on.join(", "), rule.file, rule.line);
        println!("    when: {}", rule.when.trim().replace('\n', "\n          "));
        println!("    reason: {}", rule.reason);
    }
    ExitCode::SUCCESS
}
