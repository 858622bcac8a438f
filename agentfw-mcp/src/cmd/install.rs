//! `agentfw install HARNESS` and `agentfw uninstall HARNESS` (TR2). The plans are made by
//! [`crate::install`]; this module reads and writes the files, shows the diff, asks, and
//! keeps backups and receipts.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::dirs;
use crate::harness::Harness;
use crate::install::{self, Context, FilePlan, Plan, Receipt, Scope};

use super::fail;
use super::files::{self, Backups};

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The harness to register agentfw with.
    #[arg(value_enum)]
    harness: Harness,
    /// `user`: the harness's settings in your home directory; `project`: this directory's.
    #[arg(long, value_enum, default_value_t = Scope::User)]
    scope: Scope,
    /// Show the changes as a diff and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Apply without asking, even where it replaces something you customised.
    #[arg(long)]
    yes: bool,
}

#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    /// The harness to remove agentfw from.
    #[arg(value_enum)]
    harness: Harness,
    /// The scope it was installed at.
    #[arg(long, value_enum, default_value_t = Scope::User)]
    scope: Scope,
    /// Show the changes as a diff and change nothing.
    #[arg(long)]
    dry_run: bool,
}

/// Exit status when the person declined, or a customisation needs `--yes`.
const DECLINED: u8 = 1;

fn context() -> Result<Context, String> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("cannot find the path of this agentfw binary: {e}"))?;
    let project = std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    Ok(Context {
        exe: exe.display().to_string(),
        home: dirs::home()?,
        project,
        agentfw_home: dirs::agentfw_home_override().map(|p| p.display().to_string()),
    })
}

fn receipt_path(agentfw_home: &Path, harness: Harness, scope: Scope, project: &Path) -> PathBuf {
    let name = match scope {
        Scope::User => format!("{harness}-user.json"),
        Scope::Project => {
            let tag: String = project
                .display()
                .to_string()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' })
                .collect();
            let tag: String = tag.chars().rev().take(120).collect::<Vec<_>>().into_iter().rev().collect();
            format!("{harness}-project-{tag}.json")
        }
    };
    agentfw_home.join("install").join(name)
}

fn read_receipt(path: &Path) -> Result<Option<Receipt>, String> {
    match files::read(path)? {
        None => Ok(None),
        Some(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("cannot read agentfw's install record `{}`: {e}", path.display())),
    }
}

fn save_receipt(path: &Path, receipt: &Receipt) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        files::owner_only_dir(dir)?;
    }
    let text = serde_json::to_string_pretty(receipt).map_err(|e| format!("cannot encode the install record: {e}"))?;
    files::write_atomic(path, &format!("{text}\n"), Some(0o600))
}

/// Reads every file a plan needs up front, so an unreadable file stops everything before
/// anything is written.
fn read_all(paths: impl IntoIterator<Item = PathBuf>) -> Result<BTreeMap<PathBuf, Option<String>>, String> {
    paths.into_iter().map(|p| files::read(&p).map(|text| (p, text))).collect()
}

fn what(harness: Harness, scope: Scope) -> String {
    format!("{} ({} scope)", harness.title(), scope.as_str())
}

/// Writes the files of `plan` that change, each after a backup of what it replaces.
/// Returns the plans applied (even when a later file fails) and the first error.
fn apply<'p>(plan: &'p Plan, backups: &Backups) -> (Vec<&'p FilePlan>, Option<String>) {
    let mut done = Vec::new();
    for file in plan.files.iter().filter(|f| f.changes_file()) {
        let result = (|| {
            // A harness may rewrite its own files at any time (Claude Code does): never
            // write over a change made since the plan was made.
            if files::read(&file.path)? != file.before {
                return Err(format!(
                    "`{}` changed while agentfw was planning; nothing was written to it, run again",
                    file.path.display()
                ));
            }
            let mut line = String::new();
            if let Some(before) = &file.before {
                let backup = backups.save(&file.path, before)?;
                line = format!(" (backup: {})", backup.display());
            }
            match &file.after {
                Some(text) => {
                    files::write_atomic(&file.path, text, None)?;
                    outln!("wrote {}{line}", file.path.display());
                }
                None => {
                    files::remove(&file.path)?;
                    outln!("removed {}{line}", file.path.display());
                }
            }
            Ok::<(), String>(())
        })();
        match result {
            Ok(()) => done.push(file),
            Err(e) => return (done, Some(e)),
        }
    }
    (done, None)
}

/// Asks on the terminal; `false` when there is no terminal to ask on.
fn confirm(question: &str) -> bool {
    if !std::io::stdin().is_terminal() {
        return false;
    }
    out!("{question} [y/N] ");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

pub fn install(args: &InstallArgs) -> ExitCode {
    if !args.dry_run
        && let Err(code) = super::require_person(None, "install")
    {
        return code;
    }
    match run_install(args) {
        Ok(code) => code,
        Err(e) => fail(e),
    }
}

fn run_install(args: &InstallArgs) -> Result<ExitCode, String> {
    let ctx = context()?;
    let state = dirs::agentfw_home()?;
    let contents = read_all(install::install_paths(args.harness, args.scope, &ctx))?;
    let plan = install::plan_install(args.harness, args.scope, &ctx, |p| contents.get(p).cloned().flatten())
        .map_err(|e| e.to_string())?;
    let target = what(args.harness, args.scope);
    if plan.is_noop() {
        outln!("agentfw is already installed for {target}: nothing to change.");
        if !args.dry_run {
            report_pins(args.harness);
        }
        return Ok(ExitCode::SUCCESS);
    }
    out!("{}", plan.diff());
    let customised: Vec<&str> = plan.customised().collect();
    if !customised.is_empty() {
        outln!("\nThis replaces settings you customised:");
        for c in &customised {
            outln!("  - {c}");
        }
    }
    if args.dry_run {
        outln!("\ndry run: nothing was changed.");
        return Ok(ExitCode::SUCCESS);
    }
    if !customised.is_empty() && !args.yes && !confirm("\nReplace them?") {
        outln!(
            "\nnothing was changed: run `agentfw install {} --scope {} --yes` to replace them, or change them by hand.",
            args.harness,
            args.scope.as_str()
        );
        return Ok(ExitCode::from(DECLINED));
    }
    files::owner_only_dir(&state)?;
    let backups = Backups::new(&state);
    outln!();
    let (done, error) = apply(&plan, &backups);
    let record = receipt_path(&state, args.harness, args.scope, &ctx.project);
    let mut receipt = read_receipt(&record)?.unwrap_or_else(|| Receipt::new(args.harness, args.scope));
    let applied = Plan { files: done.into_iter().cloned().collect(), notes: Vec::new(), ..plan.clone() };
    receipt.record(&applied);
    save_receipt(&record, &receipt)?;
    if let Some(e) = error {
        return Err(format!("{e}; the files above were written, `agentfw uninstall {}` undoes them", args.harness));
    }
    outln!("\ninstalled agentfw for {target}.");
    for note in &plan.notes {
        outln!("  - {note}");
    }
    report_pins(args.harness);
    Ok(ExitCode::SUCCESS)
}

/// Pin the digests of the harness's programs found at its install locations (ID2), in the
/// daemon's home, and say what was pinned.
fn report_pins(harness: Harness) {
    let home = match agentfw_mcp::home::Home::resolve(None) {
        Ok(home) => home,
        Err(e) => return outln!("  - the harness's digests were not pinned: {e}"),
    };
    match super::identity::pin(&home.dir, &[harness.as_str()]) {
        Ok(lines) => lines.iter().for_each(|l| outln!("  - {l}")),
        Err(e) => outln!("  - the harness's digests were not pinned: {e}"),
    }
}

pub fn uninstall(args: &UninstallArgs) -> ExitCode {
    if !args.dry_run
        && let Err(code) = super::require_person(None, "uninstall")
    {
        return code;
    }
    match run_uninstall(args) {
        Ok(code) => code,
        Err(e) => fail(e),
    }
}

fn run_uninstall(args: &UninstallArgs) -> Result<ExitCode, String> {
    let ctx = context()?;
    let state = dirs::agentfw_home()?;
    let target = what(args.harness, args.scope);
    let record = receipt_path(&state, args.harness, args.scope, &ctx.project);
    let Some(receipt) = read_receipt(&record)? else {
        outln!("agentfw has no record of installing into {target}: nothing to change.");
        return Ok(ExitCode::SUCCESS);
    };
    let contents = read_all(receipt.files.iter().map(|f| f.path.clone()))?;
    let plan = install::plan_uninstall(args.harness, &receipt, |p| contents.get(p).cloned().flatten())
        .map_err(|e| e.to_string())?;
    out!("{}", plan.diff());
    if args.dry_run {
        outln!("\ndry run: nothing was changed.");
        return Ok(ExitCode::SUCCESS);
    }
    files::owner_only_dir(&state)?;
    let (_, error) = apply(&plan, &Backups::new(&state));
    if let Some(e) = error {
        return Err(format!("{e}; run `agentfw uninstall {}` again once it is fixed", args.harness));
    }
    files::remove(&record)?;
    outln!("\nremoved agentfw from {target}.");
    for note in &plan.notes {
        outln!("  - {note}");
    }
    Ok(ExitCode::SUCCESS)
}
