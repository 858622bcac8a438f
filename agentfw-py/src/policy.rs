//! `agentfw.policy`: rule sets, diagnostics, verdicts, explanations and `scan` (PR1–PR8).

use std::path::PathBuf;
use std::sync::Arc;

use agentfw_bind::host::at;
use agentfw_bind::names::{self, stage, stage_name};
use agentfw_bind::rules::{self as load, default_pack};
use agentfw_core::policy::{
    self as core, Explanation as CoreExplanation, RuleSet, RuleVerdict, Rules, Scanner, SourceFile, Sources, cases,
};
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

/// What one rule made of one text.
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct RuleOutcome {
    rule: String,
    verdict: &'static str,
    /// `matched`, `not_matched` or `failed`.
    result: &'static str,
    error: Option<String>,
}

/// A verdict and why: the rule that decided and every rule's outcome (PR6).
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Explanation {
    verdict: Verdict,
    decided_by: Option<String>,
    failed: bool,
    outcomes: Vec<RuleOutcome>,
}

impl From<CoreExplanation> for Explanation {
    fn from(e: CoreExplanation) -> Self {
        let outcomes = e
            .outcomes
            .into_iter()
            .map(|o| {
                let (result, error) = names::outcome(o.result);
                RuleOutcome { rule: o.rule, verdict: o.verdict.as_str(), result, error }
            })
            .collect();
        Explanation { verdict: e.verdict.into(), decided_by: e.decided_by, failed: e.failed, outcomes }
    }
}

/// A loaded rule.
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct RuleInfo {
    id: String,
    on: Vec<&'static str>,
    when: String,
    verdict: &'static str,
    reason: String,
    description: Option<String>,
    file: String,
    line: usize,
}

/// One problem in a rule, pattern or case file: where, what, and how to fix it.
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct Diagnostic {
    code: &'static str,
    message: String,
    file: String,
    line: usize,
    column: usize,
    width: usize,
    source_line: String,
    hint: Option<String>,
    /// The diagnostic rendered with a caret under the offending text.
    rendered: String,
}

impl From<&core::Diagnostic> for Diagnostic {
    fn from(d: &core::Diagnostic) -> Self {
        Diagnostic {
            code: d.code,
            message: d.message.clone(),
            file: d.file.clone(),
            line: d.line,
            column: d.column,
            width: d.width,
            source_line: d.source_line.clone(),
            hint: d.hint.clone(),
            rendered: d.to_string(),
        }
    }
}

#[pymethods]
impl Diagnostic {
    fn __str__(&self) -> String {
        self.rendered.clone()
    }
}

/// One expected-verdict case and what the rules made of it.
#[pyclass(frozen, get_all, module = "agentfw._agentfw")]
#[derive(Clone, Debug)]
pub struct CaseResult {
    note: String,
    text: String,
    hops: u32,
    on: &'static str,
    want: &'static str,
    rule: Option<String>,
    file: String,
    line: usize,
    got: Verdict,
    passed: bool,
}

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
            Ok(results
                .into_iter()
                .map(|r| {
                    let passed = r.passed();
                    let c = r.case;
                    CaseResult {
                        note: c.note,
                        text: c.text,
                        hops: c.hops,
                        on: stage_name(c.stage),
                        want: c.want.as_str(),
                        rule: c.rule,
                        file: c.file,
                        line: c.line,
                        got: r.got.into(),
                        passed,
                    }
                })
                .collect())
        })
    }

    /// The loaded rules, in load order.
    #[getter]
    fn rules(&self) -> Vec<RuleInfo> {
        self.rules
            .rules()
            .map(|r| RuleInfo {
                id: r.id.clone(),
                on: r.on.iter().map(|s| stage_name(*s)).collect(),
                when: r.when.clone(),
                verdict: r.verdict.as_str(),
                reason: r.reason.clone(),
                description: r.description.clone(),
                file: r.file.clone(),
                line: r.line,
            })
            .collect()
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
