//! `agentfw admission …`: the admission gate (AD1–AD7). `evaluate` and `preview` work on an
//! inventory file alone; `import`, `enforce`, `report` and `except` change the daemon's gate.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentfw_core::admission::{
    Admission, AdmissionConfig, ComponentId, Inventory, Mode, Ratings, Score, import_cisco_mcp_scanner,
};
use serde::Serialize;

use super::{EXIT_REFUSED, connect, daemon_error, fail, print_json};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// The admission verdict for each agent in an inventory file.
    Evaluate {
        /// The inventory (JSON: `{"agents": [{"agent": …, "components": [{"id": …, "score": …}]}]}`).
        #[arg(long, value_name = "FILE")]
        inventory: PathBuf,
        /// A score from 0 to 10 or a level (LOW, MEDIUM, HIGH, CRITICAL); default 7.0.
        #[arg(long, value_name = "X")]
        threshold: Option<String>,
        /// `enforce` (refuse) or `report` (admit, with "would refuse" warnings).
        #[arg(long, value_name = "MODE", default_value = "enforce")]
        mode: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// How many agents in an inventory a threshold would keep out, and which.
    Preview {
        #[arg(long, value_name = "FILE")]
        inventory: PathBuf,
        /// The threshold to preview.
        #[arg(long, value_name = "X")]
        threshold: String,
        /// The threshold to compare with (default 7.0).
        #[arg(long, value_name = "X")]
        current: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Import component ratings into the daemon: a Cisco `mcp-scanner` raw JSON report, or an
    /// inventory file in agentfw's own format (its components' scores are taken).
    Import {
        /// The report or inventory file.
        report: PathBuf,
        /// For an `mcp-scanner` report of a single server: that server's name.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
    },
    /// Switch enforcement on: agents that are not admitted are refused.
    Enforce,
    /// Report only: everyone is admitted, "would refuse" warnings are recorded and shown.
    Report,
    /// Grant a per-component exception (the threshold stays).
    Except {
        /// The component, e.g. `mcp:github`.
        component: String,
        /// Withdraw the exception instead.
        #[arg(long)]
        remove: bool,
    },
}

pub fn run(command: &Command) -> ExitCode {
    match command {
        Command::Evaluate { inventory, threshold, mode, json } => {
            evaluate(inventory, threshold.as_deref(), mode, *json)
        }
        Command::Preview { inventory, threshold, current, json } => {
            preview(inventory, threshold, current.as_deref(), *json)
        }
        Command::Import { report, server } => import(report, server.as_deref()),
        Command::Enforce => set_mode(Mode::Enforce),
        Command::Report => set_mode(Mode::Report),
        Command::Except { component, remove } => except(component, *remove),
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))
}

fn inventory(path: &Path) -> Result<Inventory, String> {
    Inventory::from_json(&read(path)?).map_err(|e| format!("`{}`: {e}", path.display()))
}

fn threshold(text: Option<&str>) -> Result<Score, String> {
    text.map_or(Ok(Score::DEFAULT_THRESHOLD), |t| Score::parse_threshold(t).map_err(|e| e.to_string()))
}

#[derive(Serialize)]
struct EvaluateOut<'a> {
    mode: Mode,
    threshold: Score,
    agents: &'a [agentfw_core::admission::Evaluation],
}

fn evaluate(path: &Path, threshold_text: Option<&str>, mode: &str, json: bool) -> ExitCode {
    let setup = (|| {
        let inventory = inventory(path)?;
        let threshold = threshold(threshold_text)?;
        let mode: Mode = mode.parse().map_err(|e: agentfw_core::admission::AdmissionError| e.to_string())?;
        if mode == Mode::Off {
            return Err("`--mode` must be `enforce` or `report`".to_owned());
        }
        Ok((inventory, threshold, mode))
    })();
    let (inventory, threshold, mode) = match setup {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let mut gate = Admission::new(AdmissionConfig { mode, threshold, ..AdmissionConfig::default() });
    gate.set_inventory(inventory);
    let all = gate.evaluate_all();
    let refused = all.iter().any(|e| !e.admitted);
    if json {
        let code = print_json(&EvaluateOut { mode, threshold, agents: &all });
        if code != ExitCode::SUCCESS {
            return code;
        }
    } else {
        for e in &all {
            outln!("{}", e.line(mode));
        }
    }
    if refused && mode == Mode::Enforce { ExitCode::from(EXIT_REFUSED) } else { ExitCode::SUCCESS }
}

fn preview(path: &Path, threshold_text: &str, current: Option<&str>, json: bool) -> ExitCode {
    let setup = (|| Ok::<_, String>((inventory(path)?, threshold(Some(threshold_text))?, threshold(current)?)))();
    let (inventory, new, current) = match setup {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let mut gate =
        Admission::new(AdmissionConfig { mode: Mode::Enforce, threshold: current, ..AdmissionConfig::default() });
    gate.set_inventory(inventory);
    let preview = gate.preview(new);
    if json {
        return print_json(&preview);
    }
    outln!("{preview}");
    ExitCode::SUCCESS
}

/// Ratings from an inventory in agentfw's format: each component's score (the worst where
/// several agents list it; unrated anywhere stays unrated).
fn ratings_from_inventory(inventory: &Inventory) -> Ratings {
    let mut ratings = Ratings::new();
    for (_, components) in inventory.agents() {
        for c in components {
            let merged = match (ratings.get(&c.id), c.score) {
                (None, s) => s,
                (Some(Some(a)), Some(b)) => Some((*a).max(b)),
                (Some(_), _) => None,
            };
            ratings.insert(c.id.clone(), merged);
        }
    }
    ratings
}

fn import(path: &Path, server: Option<&str>) -> ExitCode {
    let text = match read(path) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let is_inventory = serde_json::from_str::<serde_json::Value>(&text)
        .is_ok_and(|v| v.as_object().is_some_and(|m| m.contains_key("agents")));
    let (ratings, notes, source) = if is_inventory {
        match Inventory::from_json(&text) {
            Ok(inv) => (ratings_from_inventory(&inv), Vec::new(), format!("inventory `{}`", path.display())),
            Err(e) => return fail(format!("`{}`: {e}", path.display())),
        }
    } else {
        match import_cisco_mcp_scanner(&text, server) {
            Ok(report) => (report.ratings, report.notes, format!("mcp-scanner report `{}`", path.display())),
            Err(e) => return fail(format!("`{}`: {e}", path.display())),
        }
    };
    let mut client = match connect(true) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match client.admission_import(ratings, &source, notes) {
        Ok(done) => {
            outln!("{}", done.message);
            ExitCode::SUCCESS
        }
        Err(e) => daemon_error(&e),
    }
}

fn set_mode(mode: Mode) -> ExitCode {
    let mut client = match connect(true) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match client.admission_mode(mode) {
        Ok(done) => {
            outln!("{}", done.message);
            ExitCode::SUCCESS
        }
        Err(e) => daemon_error(&e),
    }
}

fn except(component: &str, remove: bool) -> ExitCode {
    let component = match ComponentId::new(component) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let mut client = match connect(true) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match client.admission_except(component, remove) {
        Ok(done) => {
            outln!("{}", done.message);
            ExitCode::SUCCESS
        }
        Err(e) => daemon_error(&e),
    }
}
