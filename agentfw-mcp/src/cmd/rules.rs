//! `agentfw rules check|test|list|import`: rule tooling (PR6).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agentfw_core::policy::import::{self, Format};
use agentfw_core::policy::{PolicyError, Scanner, SourceFile, cases};

use super::load::{self, Files, LoadError};
use super::{EXIT_ERROR, EXIT_REFUSED, fail, now};

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
    /// Convert another scanner's rules into an agentfw pattern file, and say what could
    /// not be carried over (look-around, back-references, path conditions, allow-lists).
    Import {
        /// The scanner the rules were written for.
        #[arg(value_enum)]
        format: ImportFormat,
        /// The rule file: a gitleaks TOML configuration or a Kingfisher YAML rule file.
        file: PathBuf,
        /// Write the pattern file here instead of to stdout; the set is named after the
        /// file (`imported.yaml` is the set `imported`).
        #[arg(long, short, value_name = "PATH")]
        output: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ImportFormat {
    Gitleaks,
    Kingfisher,
}

impl From<ImportFormat> for Format {
    fn from(f: ImportFormat) -> Format {
        match f {
            ImportFormat::Gitleaks => Format::Gitleaks,
            ImportFormat::Kingfisher => Format::Kingfisher,
        }
    }
}

pub fn run(command: &Command) -> ExitCode {
    match command {
        Command::Check { paths } => check(paths),
        Command::Test { cases, rules } => test(cases, rules.as_deref()),
        Command::List { rules, json } => list(rules.as_deref(), *json),
        Command::Import { format, file, output } => import(*format, file, output.as_deref()),
    }
}

/// Writes the converted file, prints every finding to stderr, and exits 1 if any rule
/// could not be converted (the file still holds the others).
fn import(format: ImportFormat, path: &std::path::Path, output: Option<&std::path::Path>) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => return fail(format!("cannot read `{}`: {e}", path.display())),
    };
    let conversion = match import::convert(format.into(), &SourceFile::new(path.display().to_string(), text)) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    for finding in &conversion.findings {
        eprintln!("{finding}");
    }
    let written = match output {
        Some(out) => match std::fs::write(out, &conversion.yaml) {
            Ok(()) => out.display().to_string(),
            Err(e) => return fail(format!("cannot write `{}`: {e}", out.display())),
        },
        None => {
            out!("{}", conversion.yaml);
            "stdout".to_owned()
        }
    };
    let skipped = conversion.rules - conversion.converted;
    eprintln!(
        "converted {} of {} rules to {written}{}",
        conversion.converted,
        conversion.rules,
        if skipped > 0 { format!("; {skipped} could not be converted (see above)") } else { String::new() }
    );
    if skipped > 0 { ExitCode::from(EXIT_REFUSED) } else { ExitCode::SUCCESS }
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
            outln!(
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
            outln!("FAIL {}:{} {}: want {want}, got {got}", result.case.file, result.case.line, result.case.note);
        }
    }
    outln!("{passed} passed, {failed} failed");
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
                Ok(line) => outln!("{line}"),
                Err(e) => return fail(e),
            }
            continue;
        }
        let on: Vec<&str> = rule.on.iter().map(|s| s.event()).collect();
        outln!("{}  {}  on {}  ({}:{})", rule.id, rule.verdict.as_str(), on.join(", "), rule.file, rule.line);
        outln!("    when: {}", rule.when.trim().replace('\n', "\n          "));
        outln!("    reason: {}", rule.reason);
    }
    ExitCode::SUCCESS
}
