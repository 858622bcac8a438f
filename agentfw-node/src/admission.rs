//! Whether an agent may talk at all (AD1–AD8).

use agentfw_bind::admission::{component_set, components, inventory, refused};
use agentfw_bind::names::{harness_file, mode, mode_name};
use agentfw_core::admission::{self as core, AdmissionConfig, ComponentId, Mode, Score};
use napi::bindgen_prelude::Either;
use napi_derive::napi;
use serde_json::Value;

use crate::convert::{count, js, to_js};
use crate::errors::{Failure, Result, guard};

/// A threshold: a score (`7`, `6.5`) or a level (`'high'`).
fn score(t: Either<f64, String>) -> std::result::Result<Score, Failure> {
    Ok(match t {
        Either::A(n) => Score::new(n)?,
        Either::B(text) => Score::parse_threshold(&text)?,
    })
}

/// The gate's verdict on one agent.
#[napi(object)]
pub struct Evaluation {
    pub agent: String,
    pub admitted: bool,
    /// Why not: `{why, component, score, level, code, text}`, or null.
    #[napi(ts_type = "NotAdmitted")]
    pub refused: Option<Value>,
    /// The worst rated component that counts: `{component, score, level}`, or null.
    #[napi(ts_type = "RatedComponent")]
    pub worst: Option<Value>,
    pub excused: Vec<String>,
    /// `web (claude): refused: mcp:github is HIGH (7.5)` (enforce mode).
    pub line: String,
    /// The same in report mode: `would refuse` instead of `refused`.
    pub report_line: String,
    /// The refusal as a sentence about `your agent is`, or null.
    pub sentence: Option<String>,
}

impl Evaluation {
    fn of(e: &core::Evaluation) -> std::result::Result<Self, Failure> {
        Ok(Evaluation {
            agent: e.agent.clone(),
            admitted: e.admitted,
            refused: e.refused.as_ref().map(refused).transpose()?.map(js),
            worst: e.worst.as_ref().map(|w| to_js("the worst component", w)).transpose()?,
            excused: e.excused.iter().map(ToString::to_string).collect(),
            line: e.line(Mode::Enforce),
            report_line: e.line(Mode::Report),
            sentence: e.sentence("your agent is"),
        })
    }

    fn all<'a>(list: impl IntoIterator<Item = &'a core::Evaluation>) -> std::result::Result<Vec<Self>, Failure> {
        list.into_iter().map(Evaluation::of).collect()
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
    #[napi(
        constructor,
        ts_args_type = "inventory?: JsonObject | string | undefined | null, options?: AdmissionOptions | undefined | null"
    )]
    pub fn new(inventory: Option<Value>, options: Option<AdmissionOptions>) -> Result<Self> {
        guard(|| {
            let (m, t, x) = options.map_or((None, None, None), |o| (o.mode, o.threshold, o.exceptions));
            let config = AdmissionConfig {
                mode: mode(m.as_deref().unwrap_or("enforce"))?,
                threshold: t.map(score).transpose()?.unwrap_or(Score::DEFAULT_THRESHOLD),
                exceptions: component_set(x.into_iter().flatten().collect())?,
                ..AdmissionConfig::default()
            };
            let mut inner = core::Admission::new(config);
            if let Some(inv) = inventory.filter(|i| !i.is_null()) {
                inner.set_inventory(self::inventory(inv)?);
            }
            Ok(Admission { inner })
        })
    }

    #[napi(getter, ts_return_type = "'off' | 'report' | 'enforce'")]
    pub fn mode(&self) -> String {
        mode_name(self.inner.mode()).to_owned()
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

    #[napi(ts_args_type = "inventory: JsonObject | string")]
    pub fn set_inventory(&mut self, inventory: Value) -> Result<()> {
        guard(|| {
            self.inner.set_inventory(self::inventory(inventory)?);
            Ok(())
        })
    }

    /// Set one agent's components: `[{id: 'mcp:github', score: 7.5}, ...]`.
    #[napi(ts_args_type = "agent: string, components: Array<Component>")]
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
    pub fn evaluate(&self, agent: String) -> Result<Evaluation> {
        guard(|| Evaluation::of(&self.inner.evaluate(&agent)))
    }

    /// The verdict on every agent in the inventory, by name.
    #[napi]
    pub fn evaluate_all(&self) -> Result<Vec<Evaluation>> {
        guard(|| Evaluation::all(&self.inner.evaluate_all()))
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
                kept_out: Evaluation::all(&p.kept_out)?,
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
#[napi(
    ts_args_type = "agent: string, components?: Array<Component> | undefined | null, options?: EvaluateOptions | undefined | null"
)]
pub fn evaluate(agent: String, components: Option<Value>, options: Option<EvaluateOptions>) -> Result<Evaluation> {
    guard(|| {
        let (t, x) = options.map_or((None, None), |o| (o.threshold, o.exceptions));
        let list = components.filter(|c| !c.is_null()).map(self::components).transpose()?;
        let threshold = t.map(score).transpose()?.unwrap_or(Score::DEFAULT_THRESHOLD);
        Evaluation::of(&core::evaluate(
            &agent,
            list.as_deref(),
            threshold,
            &component_set(x.into_iter().flatten().collect())?,
        ))
    })
}

/// Ratings from a Cisco `mcp-scanner` raw JSON report.
#[napi(object)]
pub struct ImportedReport {
    /// `mcp:<server>` → score, or null where something could not be rated.
    #[napi(ts_type = "Record<string, number | null>")]
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
        Ok(core::configured_servers(harness_file(&file)?, &contents, project.as_deref())?
            .into_iter()
            .map(|c| c.to_string())
            .collect())
    })
}

/// A threshold as a person writes it (`7`, `6.5`, `high`), as a score.
#[napi]
pub fn parse_threshold(text: String) -> Result<f64> {
    guard(|| Ok(Score::parse_threshold(&text)?.as_f64()))
}
