//! `agentfw.policy`: rule sets, diagnostics, verdicts, explanations and `scan` (PR1–PR8).

use std::path::PathBuf;
use std::sync::Arc;

use agentfw_bind::host::at;
use agentfw_bind::names::{self, stage};
use agentfw_bind::rules::{self as load, default_pack};
use agentfw_core::policy::{self as core, RuleSet, RuleVerdict, Rules, Scanner, SourceFile, Sources, cases};
use pyo3::prelude::*;

use crate::errors::{Failure, exception, guard};

/// A verdict on a text: `allow` or `deny`, with the rule that decided and its reason.
#[pyclass(frozen, eq, module = "agentfw._agentfw")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    #[pyo3(get)]
    verdict: &'static str,
    #[pyo3(get)]
    rule: Option<String>,
    #[pyo3(get)]
    reason: Option<String>,
}

impl From<RuleVerdict> for Verdict {
    fn from(v: RuleVerdict) -> Self {
        let (verdict, rule, reason) = names::verdict(v);
        Verdict { verdict, rule, reason }
    }
}

#[pymethods]
impl Verdict {
    /// Whether the text is refused.
    #[getter]
    fn denied(&self) -> bool {
        self.verdict == "deny"
    }

    fn to_dict(&self) -> (&'static str, Option<String>, Option<String>) {
        (self.verdict, self.rule.clone(), self.reason.clone())
    }

    fn __repr__(&self) -> String {
        let opt = |v: &Option<String>| v.as_ref().map_or("None".to_owned(), |s| format!("{s:?}"));
        format!("Verdict(verdict={:?}, rule={}, reason={})", self.verdict, opt(&self.rule), opt(&self.reason))
    }
}

agentfw_bind::explanation! { #[pyclass(frozen, get_all, module = "agentfw._agentfw")] [] }

agentfw_bind::rule_info! { #[pyclass(frozen, get_all, module = "agentfw._agentfw")] [] }

agentfw_bind::diagnostic! { #[pyclass(frozen, get_all, module = "agentfw._agentfw")] [] }

#[pymethods]
impl Diagnostic {
    fn __str__(&self) -> String {
        self.rendered.clone()
    }
}

agentfw_bind::case_result! { #[pyclass(frozen, get_all, module = "agentfw._agentfw")] [] }

fn source_files(files: Vec<(String, String)>) -> Vec<SourceFile> {
    files.into_iter().map(|(name, text)| SourceFile::new(name, text)).collect()
}

/// A compiled rule set (`RuleSet`): the default pack, or rules from text or files.
#[pyclass(frozen, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Policy {
    pub rules: Arc<RuleSet>,
}

#[pymethods]
impl Policy {
    /// The rule pack agentfw ships (PR4).
    #[staticmethod]
    fn default(py: Python<'_>) -> PyResult<Self> {
        guard(py, || Ok(Policy { rules: default_pack()? }))
    }

    /// One rule file's text, over the default pack's pattern sets.
    #[staticmethod]
    #[pyo3(signature = (text, name = "rules.yaml"))]
    fn from_text(py: Python<'_>, text: &str, name: &str) -> PyResult<Self> {
        let sources = load::text(name.to_owned(), text.to_owned());
        guard(py, || py.detach(|| compile(&sources)))
    }

    /// Rule, pattern and placeholder files (or folders of them), over the default pack's
    /// pattern sets, as `agentfw scan --rules` reads them.
    #[staticmethod]
    #[pyo3(signature = (*paths))]
    fn from_files(py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<Self> {
        guard(py, || py.detach(|| compile(&load::files(&paths)?)))
    }

    /// Exactly these files, as `(name, text)` pairs: nothing from the default pack.
    #[staticmethod]
    #[pyo3(signature = (rules, patterns = Vec::new(), placeholders = Vec::new()))]
    fn compile(
        py: Python<'_>,
        rules: Vec<(String, String)>,
        patterns: Vec<(String, String)>,
        placeholders: Vec<(String, String)>,
    ) -> PyResult<Self> {
        let sources = Sources {
            rules: source_files(rules),
            patterns: source_files(patterns),
            placeholders: source_files(placeholders),
        };
        guard(py, || py.detach(|| compile(&sources)))
    }

    /// The verdict on `text` as a message that travelled `hops` hops.
    #[pyo3(signature = (text, *, hops = 1, on = "sending", now = None))]
    fn evaluate(&self, py: Python<'_>, text: &str, hops: u32, on: &str, now: Option<u64>) -> PyResult<Verdict> {
        judge(py, Arc::clone(&self.rules) as Arc<dyn Rules>, text, hops, on, now)
    }

    /// The verdict with every rule's outcome (PR6).
    #[pyo3(signature = (text, *, hops = 1, on = "sending", now = None))]
    fn explain(&self, py: Python<'_>, text: &str, hops: u32, on: &str, now: Option<u64>) -> PyResult<Explanation> {
        let scanner = Scanner::new(Arc::clone(&self.rules) as Arc<dyn Rules>);
        guard(py, || {
            let stage = stage(on)?;
            Ok(py.detach(|| scanner.explain(text, stage, hops, at(now))).into())
        })
    }

    /// Runs a cases file (`cases: [{note, input, want}]`) against these rules.
    #[pyo3(signature = (text, name = "cases.yaml", *, now = None))]
    fn test(&self, py: Python<'_>, text: &str, name: &str, now: Option<u64>) -> PyResult<Vec<CaseResult>> {
        let scanner = Scanner::new(Arc::clone(&self.rules) as Arc<dyn Rules>);
        guard(py, || {
            let list = cases::read(&SourceFile::new(name, text))?;
            let results = py.detach(|| cases::run(&scanner, &list, at(now)));
            Ok(results.into_iter().map(CaseResult::from).collect())
        })
    }

    /// The loaded rules, in load order.
    #[getter]
    fn rules(&self) -> Vec<RuleInfo> {
        self.rules.rules().map(RuleInfo::from).collect()
    }

    /// The names of the pattern sets the rules can use.
    #[getter]
    fn pattern_sets(&self) -> Vec<String> {
        self.rules.patterns().names().map(str::to_owned).collect()
    }

    fn __repr__(&self) -> String {
        format!("Policy({} rules)", self.rules.rules().count())
    }
}

fn compile(sources: &Sources) -> Result<Policy, Failure> {
    Ok(Policy { rules: load::compile(sources)? })
}

/// Rules that can be replaced while in use; a reload that does not compile keeps the last
/// good set in force (PR7).
#[pyclass(frozen, module = "agentfw._agentfw")]
#[derive(Debug)]
pub struct Reloadable {
    pub inner: Arc<core::Reloadable>,
}

#[pymethods]
impl Reloadable {
    #[new]
    fn new(policy: &Policy) -> Self {
        Reloadable { inner: Arc::new(core::Reloadable::shared(Arc::clone(&policy.rules))) }
    }

    /// The rule set in force.
    #[getter]
    fn current(&self) -> Policy {
        Policy { rules: self.inner.current() }
    }

    /// Compiles a rule file's text and puts it in force; on error nothing changes.
    #[pyo3(signature = (text, name = "rules.yaml"))]
    fn reload_text(&self, py: Python<'_>, text: &str, name: &str) -> PyResult<()> {
        let sources = load::text(name.to_owned(), text.to_owned());
        guard(py, || Ok(py.detach(|| self.inner.reload(&sources))?))
    }

    /// Reads and compiles files and puts them in force; on error nothing changes.
    #[pyo3(signature = (*paths))]
    fn reload_files(&self, py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<()> {
        guard(py, || py.detach(|| Ok(self.inner.reload(&load::files(&paths)?)?)))
    }

    /// Puts an already compiled policy in force.
    fn replace(&self, policy: &Policy) {
        self.inner.replace_shared(Arc::clone(&policy.rules));
    }
}

/// What `rules=` accepts.
pub fn rules_of(rules: Option<&Bound<'_, PyAny>>) -> Result<Arc<dyn Rules>, Failure> {
    let Some(rules) = rules.filter(|r| !r.is_none()) else {
        return Ok(default_pack()?);
    };
    if let Ok(p) = rules.cast::<Policy>() {
        return Ok(Arc::clone(&p.get().rules) as Arc<dyn Rules>);
    }
    if let Ok(r) = rules.cast::<Reloadable>() {
        return Ok(Arc::clone(&r.get().inner) as Arc<dyn Rules>);
    }
    Err(Failure::Input("`rules` must be a Policy, a Reloadable or None".to_owned()))
}

fn judge(
    py: Python<'_>,
    rules: Arc<dyn Rules>,
    text: &str,
    hops: u32,
    on: &str,
    now: Option<u64>,
) -> PyResult<Verdict> {
    guard(py, || {
        let stage = stage(on)?;
        let now = at(now);
        let scanner = Scanner::new(rules);
        Ok(py.detach(|| scanner.judge(text, stage, hops, now)).into())
    })
}

/// Judges `text` with the rule engine as a message that travelled `hops` hops (PR8).
#[pyfunction]
#[pyo3(signature = (text, *, hops = 1, on = "sending", rules = None, now = None))]
pub fn scan(
    py: Python<'_>,
    text: &str,
    hops: u32,
    on: &str,
    rules: Option<&Bound<'_, PyAny>>,
    now: Option<u64>,
) -> PyResult<Verdict> {
    let rules = rules_of(rules).map_err(|f| exception(py, f))?;
    judge(py, rules, text, hops, on, now)
}
