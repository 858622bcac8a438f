//! Whether an agent may talk at all (AD1–AD8).

use std::collections::BTreeSet;

use agentfw_core::admission::{
    self as core, AdmissionConfig, Component, ComponentId, HarnessFile, Inventory, Mode, Score,
};
use napi::bindgen_prelude::Either;
use napi_derive::napi;
use serde_json::Value;

use crate::convert::{count, to_js};
use crate::errors::{Failure, Result, guard};

/// A threshold: a score (`7`, `6.5`) or a level (`'high'`).
fn score(t: Either<f64, String>) -> std::result::Result<Score, Failure> {
    Ok(match t {
        Either::A(n) => Score::new(n)?,
        Either::B(text) => Score::parse_threshold(&text)?,
    })
}

fn mode(text: &str) -> std::result::Result<Mode, Failure> {
    Ok(text.parse::<Mode>()?)
}

fn mode_name(mode: Mode) -> String {
    match mode {
        Mode::Off => "off",
        Mode::Report => "report",
        Mode::Enforce => "enforce",
    }
    .to_owned()
}

fn inventory(value: Value) -> std::result::Result<Inventory, Failure> {
    let text = match value {
        Value::String(text) => text,
        v => v.to_string(),
    };
    Ok(Inventory::from_json(&text)?)
}

fn component_set(ids: Option<Vec<String>>) -> std::result::Result<BTreeSet<ComponentId>, Failure> {
    ids.unwrap_or_default().into_iter().map(|id| ComponentId::new(id).map_err(Failure::from)).collect()
}

fn components(value: Value) -> std::result::Result<Vec<Component>, Failure> {
    serde_json::from_value(value).map_err(|e| Failure::Input(format!("not a list of components: {e}")))
}

/// The gate's verdict on one agent.
#[napi(object)]
pub struct Evaluation {
    pub agent: String,
    pub admitted: bool,
    /// Why not: `{why, component, score, level, code, text}`, or null.
    pub refused: Option<Value>,
    /// The worst rated component that counts: `{component, score, level}`, or null.
    pub worst: Option<Value>,
    pub excused: Vec<String>,
    /// `web (claude): refused: mcp:github is HIGH (7.5)` (enforce mode).
    pub line: String,
    /// The same in report mode: `would refuse` instead of `refused`.
    pub report_line: String,
    /// The refusal as a sentence about `your agent is`, or null.
    pub sentence: Option<String>,
}

impl From<&core::Evaluation> for Evaluation {
    fn from(e: &core::Evaluation) -> Self {
        Evaluation {
            agent: e.agent.clone(),
            admitted: e.admitted,
            refused: e.refused.as_ref().map(|r| {
                let mut value = to_js(r);
                if let Some(map) = value.as_object_mut() {
                    map.insert("code".into(), r.code().into());
                    map.insert("text".into(), r.to_string().into());
                }
                value
            }),
            worst: e.worst.as_ref().map(to_js),
            excused: e.excused.iter().map(ToString::to_string).collect(),
            line: e.line(Mode::Enforce),
            report_line: e.line(Mode::Report),
            sentence: e.sentence("your agent is"),
        }
    }
}

/// How many agents another threshold would keep out (AD7).
#[napi(object)]
pub struct Preview {
    pub threshold: f64,
    pub current: f64,
    pub total: u32,
    pub kept_out: Vec<Evaluation>,
    pub newly_kept_out: u32,
    pub newly_admitted: u32,
    /// The summary, one line per agent kept out.
    pub text: String,
}

/// Settings of a new gate.
#[napi(object)]
pub struct AdmissionOptions {
    /// `off`, `report` or `enforce` (default `enforce`).
    pub mode: Option<String>,
    pub threshold: Option<Either<f64, String>>,
    pub exceptions: Option<Vec<String>>,
}

/// The admission gate: settings, the inventory, verdicts and previews.
#[napi]
pub struct Admission {
    inner: core::Admission,
}

#[napi]
impl Admission {
    /// `inventory` is the spec's JSON, as text or an object.
    #[napi(constructor)]
    pub fn new(inventory: Option<Value>, options: Option<AdmissionOptions>) -> Result<Self> {
        guard(|| {
            let (m, t, x) = options.map_or((None, None, None), |o| (o.mode, o.threshold, o.exceptions));
            let config = AdmissionConfig {
                mode: mode(m.as_deref().unwrap_or("enforce"))?,
                threshold: t.map(score).transpose()?.unwrap_or(Score::DEFAULT_THRESHOLD),
                exceptions: component_set(x)?,
                ..AdmissionConfig::default()
            };
            let mut inner = core::Admission::new(config);
            if let Some(inv) = inventory.filter(|i| !i.is_null()) {
                inner.set_inventory(self::inventory(inv)?);
            }
            Ok(Admission { inner })
        })
    }

    #[napi(getter)]
    pub fn mode(&self) -> String {
        mode_name(self.inner.mode())
    }

    #[napi(getter)]
    pub fn threshold(&self) -> f64 {
        self.inner.threshold().as_f64()
    }

    /// The inventory in the spec's JSON format.
    #[napi]
    pub fn inventory_json(&self) -> String {
        self.inner.inventory().to_json()
    }

    #[napi]
    pub fn set_inventory(&mut self, inventory: Value) -> Result<()> {
        guard(|| {
            self.inner.set_inventory(self::inventory(inventory)?);
            Ok(())
        })
    }

    /// Set one agent's components: `[{id: 'mcp:github', score: 7.5}, ...]`.
    #[napi]
    pub fn set_components(&mut self, agent: String, components: Value) -> Result<()> {
        guard(|| {
            self.inner.set_components(agent, self::components(components)?);
            Ok(())
        })
    }

    #[napi]
    pub fn set_mode(&mut self, mode: String) -> Result<()> {
        guard(|| {
            self.inner.set_mode(self::mode(&mode)?);
            Ok(())
        })
    }

    #[napi]
    pub fn set_threshold(&mut self, threshold: Either<f64, String>) -> Result<()> {
        guard(|| {
            self.inner.set_threshold(score(threshold)?);
            Ok(())
        })
    }

    /// Excuse a component (AD4); false if it already was.
    #[napi(js_name = "except")]
    pub fn except_component(&mut self, component: String) -> Result<bool> {
        guard(|| Ok(self.inner.except(ComponentId::new(component)?)))
    }

    /// Withdraw an exception; false if there was none.
    #[napi]
    pub fn unexcept(&mut self, component: String) -> Result<bool> {
        guard(|| Ok(self.inner.unexcept(&ComponentId::new(component)?)))
    }

    /// The verdict on the inventory entry named `agent` (a label or an agent id).
    #[napi]
    pub fn evaluate(&self, agent: String) -> Evaluation {
        (&self.inner.evaluate(&agent)).into()
    }

    /// The verdict on every agent in the inventory, by name.
    #[napi]
    pub fn evaluate_all(&self) -> Vec<Evaluation> {
        self.inner.evaluate_all().iter().map(Evaluation::from).collect()
    }

    /// What another threshold would do (AD7).
    #[napi]
    pub fn preview(&self, threshold: Either<f64, String>) -> Result<Preview> {
        guard(|| {
            let p = self.inner.preview(score(threshold)?);
            Ok(Preview {
                threshold: p.threshold.as_f64(),
                current: p.current.as_f64(),
                total: count(p.total),
                kept_out: p.kept_out.iter().map(Evaluation::from).collect(),
                newly_kept_out: count(p.newly_kept_out),
                newly_admitted: count(p.newly_admitted),
                text: p.to_string(),
            })
        })
    }
}

/// Options of `evaluate`.
#[napi(object)]
pub struct EvaluateOptions {
    pub threshold: Option<Either<f64, String>>,
    pub exceptions: Option<Vec<String>>,
}

/// Judge one agent's components (`[{id, score}]`, or null if unknown): the worst one that
/// counts decides.
#[napi]
pub fn evaluate(agent: String, components: Option<Value>, options: Option<EvaluateOptions>) -> Result<Evaluation> {
    guard(|| {
        let (t, x) = options.map_or((None, None), |o| (o.threshold, o.exceptions));
        let list = components.filter(|c| !c.is_null()).map(self::components).transpose()?;
        let threshold = t.map(score).transpose()?.unwrap_or(Score::DEFAULT_THRESHOLD);
        Ok((&core::evaluate(&agent, list.as_deref(), threshold, &component_set(x)?)).into())
    })
}

/// Ratings from a Cisco `mcp-scanner` raw JSON report.
#[napi(object)]
pub struct ImportedReport {
    /// `mcp:<server>` → score, or null where something could not be rated.
    pub ratings: Value,
    pub notes: Vec<String>,
}

#[napi]
pub fn import_cisco_mcp_scanner(report: String, server: Option<String>) -> Result<ImportedReport> {
    guard(|| {
        let r = core::import_cisco_mcp_scanner(&report, server.as_deref())?;
        let ratings = r.ratings.iter().map(|(id, s)| (id.to_string(), s.map_or(Value::Null, |s| s.as_f64().into())));
        Ok(ImportedReport { ratings: Value::Object(ratings.collect()), notes: r.notes })
    })
}

/// The components (`mcp:<name>`) a harness config file loads. `file` is `claude_user`,
/// `claude_project`, `codex_config`, `cursor_mcp` or `gemini_settings`.
#[napi]
pub fn configured_servers(file: String, contents: String, project: Option<String>) -> Result<Vec<String>> {
    guard(|| {
        let kind: HarnessFile = serde_json::from_value(Value::from(file.as_str()))
            .map_err(|_| Failure::Input(format!("`{file}` is not a harness file kind")))?;
        Ok(core::configured_servers(kind, &contents, project.as_deref())?.into_iter().map(|c| c.to_string()).collect())
    })
}

/// A threshold as a person writes it (`7`, `6.5`, `high`), as a score.
#[napi]
pub fn parse_threshold(text: String) -> Result<f64> {
    guard(|| Ok(Score::parse_threshold(&text)?.as_f64()))
}
