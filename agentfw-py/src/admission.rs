//! `agentfw.admission`: whether an agent may talk at all (AD1–AD8).

use agentfw_bind::admission::{component_set, components, refused};
use agentfw_bind::names::{harness_file, mode, mode_name};
use agentfw_core::admission::{self as core, AdmissionConfig, ComponentId, Inventory, Mode, Score};
use pyo3::prelude::*;
use serde_json::Value;

use crate::convert::{from_py, to_py, to_py_data};
use crate::errors::{Failure, exception, guard};

/// A threshold given as a number (`7`, `6.5`) or a level (`"high"`).
#[derive(FromPyObject)]
pub enum Threshold {
    Number(f64),
    Text(String),
}

impl Threshold {
    fn score(self) -> Result<Score, Failure> {
        Ok(match self {
            Threshold::Number(n) => Score::new(n)?,
            Threshold::Text(t) => Score::parse_threshold(&t)?,
        })
    }
}

/// An inventory as JSON text (a `str`) or as Python data.
fn inventory(obj: &Bound<'_, PyAny>) -> Result<Inventory, Failure> {
    let value = match obj.extract::<String>() {
        Ok(text) => Value::String(text),
        Err(_) => from_py(obj)?,
    };
    agentfw_bind::admission::inventory(value)
}

/// The gate's verdict on one agent.
#[pyclass(frozen, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Evaluation {
    inner: core::Evaluation,
}

#[pymethods]
impl Evaluation {
    #[getter]
    fn agent(&self) -> String {
        self.inner.agent.clone()
    }
    #[getter]
    fn admitted(&self) -> bool {
        self.inner.admitted
    }
    /// Why not: `{"why", "component", "score", "level"}` plus its stable `code`, or None.
    #[getter]
    fn refused<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner.refused.as_ref().map(|r| to_py(py, &refused(r).map_err(|f| exception(py, f))?)).transpose()
    }
    /// The worst rated component that counts: `{"component", "score", "level"}`, or None.
    #[getter]
    fn worst<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner.worst.as_ref().map(|w| to_py_data(py, "the worst component", w)).transpose()
    }
    #[getter]
    fn excused(&self) -> Vec<String> {
        self.inner.excused.iter().map(ToString::to_string).collect()
    }
    /// `web (claude): refused: mcp:github is HIGH (7.5)`; in report mode `would refuse`.
    #[pyo3(signature = (mode = "enforce"))]
    fn line(&self, py: Python<'_>, mode: &str) -> PyResult<String> {
        guard(py, || Ok(self.inner.line(self::mode(mode)?)))
    }
    /// The verdict as a sentence about `subject`, e.g. `your agent is`; None if admitted.
    fn sentence(&self, subject: &str) -> Option<String> {
        self.inner.sentence(subject)
    }
    fn __repr__(&self) -> String {
        format!("Evaluation({})", self.inner.line(Mode::Enforce))
    }
}

/// How many agents another threshold would keep out (AD7). `str()` is the summary.
#[pyclass(frozen, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Preview {
    inner: core::Preview,
}

#[pymethods]
impl Preview {
    #[getter]
    fn threshold(&self) -> f64 {
        self.inner.threshold.as_f64()
    }
    #[getter]
    fn current(&self) -> f64 {
        self.inner.current.as_f64()
    }
    #[getter]
    fn total(&self) -> usize {
        self.inner.total
    }
    #[getter]
    fn kept_out(&self) -> Vec<Evaluation> {
        self.inner.kept_out.iter().map(|e| Evaluation { inner: e.clone() }).collect()
    }
    #[getter]
    fn newly_kept_out(&self) -> usize {
        self.inner.newly_kept_out
    }
    #[getter]
    fn newly_admitted(&self) -> usize {
        self.inner.newly_admitted
    }
    fn __str__(&self) -> String {
        self.inner.to_string()
    }
}

/// The admission gate: settings, the inventory, verdicts and previews.
#[pyclass(module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Admission {
    inner: core::Admission,
}

#[pymethods]
impl Admission {
    /// `inventory` is the spec's JSON (text or dict); `mode` is `off`, `report` or
    /// `enforce`; `threshold` a score or a level.
    #[new]
    #[pyo3(signature = (inventory = None, *, mode = "enforce", threshold = Threshold::Number(7.0), exceptions = Vec::new()))]
    fn new(
        py: Python<'_>,
        inventory: Option<&Bound<'_, PyAny>>,
        mode: &str,
        threshold: Threshold,
        exceptions: Vec<String>,
    ) -> PyResult<Self> {
        guard(py, || {
            let config = AdmissionConfig {
                mode: self::mode(mode)?,
                threshold: threshold.score()?,
                exceptions: component_set(exceptions)?,
                ..AdmissionConfig::default()
            };
            let mut inner = core::Admission::new(config);
            if let Some(inv) = inventory.filter(|i| !i.is_none()) {
                inner.set_inventory(self::inventory(inv)?);
            }
            Ok(Admission { inner })
        })
    }

    #[getter]
    fn mode(&self) -> &'static str {
        mode_name(self.inner.mode())
    }

    #[getter]
    fn threshold(&self) -> f64 {
        self.inner.threshold().as_f64()
    }

    /// The inventory in the spec's JSON format.
    fn inventory_json(&self) -> String {
        self.inner.inventory().to_json()
    }

    fn set_inventory(&mut self, py: Python<'_>, inventory: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(py, || {
            self.inner.set_inventory(self::inventory(inventory)?);
            Ok(())
        })
    }

    /// Set one agent's components: `[{"id": "mcp:github", "score": 7.5}, ...]`.
    fn set_components(&mut self, py: Python<'_>, agent: String, components: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(py, || {
            self.inner.set_components(agent, self::components(from_py(components)?)?);
            Ok(())
        })
    }

    fn set_mode(&mut self, py: Python<'_>, mode: &str) -> PyResult<()> {
        guard(py, || {
            self.inner.set_mode(self::mode(mode)?);
            Ok(())
        })
    }

    fn set_threshold(&mut self, py: Python<'_>, threshold: Threshold) -> PyResult<()> {
        guard(py, || {
            self.inner.set_threshold(threshold.score()?);
            Ok(())
        })
    }

    /// Excuse a component (AD4); False if it already was.
    fn except_(&mut self, py: Python<'_>, component: String) -> PyResult<bool> {
        guard(py, || Ok(self.inner.except(ComponentId::new(component)?)))
    }

    /// Withdraw an exception; False if there was none.
    fn unexcept(&mut self, py: Python<'_>, component: String) -> PyResult<bool> {
        guard(py, || Ok(self.inner.unexcept(&ComponentId::new(component)?)))
    }

    /// The verdict on the inventory entry named `agent` (a label or an agent id).
    fn evaluate(&self, agent: &str) -> Evaluation {
        Evaluation { inner: self.inner.evaluate(agent) }
    }

    /// The verdict on every agent in the inventory, by name.
    fn evaluate_all(&self) -> Vec<Evaluation> {
        self.inner.evaluate_all().into_iter().map(|inner| Evaluation { inner }).collect()
    }

    /// What another threshold would do (AD7).
    fn preview(&self, py: Python<'_>, threshold: Threshold) -> PyResult<Preview> {
        guard(py, || Ok(Preview { inner: self.inner.preview(threshold.score()?) }))
    }
}

/// Judge one agent's components (`[{"id", "score"}]`): the worst one that counts decides.
#[pyfunction]
#[pyo3(signature = (agent, components, *, threshold = Threshold::Number(7.0), exceptions = Vec::new()))]
pub fn evaluate(
    py: Python<'_>,
    agent: &str,
    components: Option<&Bound<'_, PyAny>>,
    threshold: Threshold,
    exceptions: Vec<String>,
) -> PyResult<Evaluation> {
    guard(py, || {
        let list = components.filter(|c| !c.is_none()).map(|c| self::components(from_py(c)?)).transpose()?;
        let inner = core::evaluate(agent, list.as_deref(), threshold.score()?, &component_set(exceptions)?);
        Ok(Evaluation { inner })
    })
}

/// Ratings from a Cisco `mcp-scanner` raw JSON report.
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct ImportedReport {
    /// `mcp:<server>` → score, or None where something could not be rated.
    ratings: Vec<(String, Option<f64>)>,
    notes: Vec<String>,
}

#[pyfunction]
#[pyo3(signature = (report, server = None))]
pub fn import_cisco_mcp_scanner(py: Python<'_>, report: &str, server: Option<&str>) -> PyResult<ImportedReport> {
    guard(py, || {
        let r = core::import_cisco_mcp_scanner(report, server)?;
        Ok(ImportedReport {
            ratings: r.ratings.iter().map(|(id, s)| (id.to_string(), s.map(Score::as_f64))).collect(),
            notes: r.notes,
        })
    })
}

/// The components (`mcp:<name>`) a harness config file loads. `file` is `claude_user`,
/// `claude_project`, `codex_config`, `cursor_mcp` or `gemini_settings`.
#[pyfunction]
#[pyo3(signature = (file, contents, project = None))]
pub fn configured_servers(py: Python<'_>, file: &str, contents: &str, project: Option<&str>) -> PyResult<Vec<String>> {
    guard(py, || {
        Ok(core::configured_servers(harness_file(file)?, contents, project)?
            .into_iter()
            .map(|c| c.to_string())
            .collect())
    })
}

/// A threshold as a person writes it (`7`, `6.5`, `high`), as a score.
#[pyfunction]
pub fn parse_threshold(py: Python<'_>, text: &str) -> PyResult<f64> {
    guard(py, || Ok(Score::parse_threshold(text)?.as_f64()))
}
