//! Rule sets, diagnostics, verdicts, explanations and `scan` (PR1–PR8).

use std::path::PathBuf;
use std::sync::Arc;

use agentfw_bind::names::{self, stage};
use agentfw_bind::rules::{self as load, default_pack};
use agentfw_core::policy::{self as core, RuleSet, RuleVerdict, Rules, Scanner, SourceFile, Sources, cases};
use napi::bindgen_prelude::{ClassInstance, Either};
use napi_derive::napi;

use crate::convert::at;
use crate::errors::{Failure, Result, guard};

/// A verdict on a text: `allow` or `deny`, with the rule that decided and its reason.
#[napi(object)]
#[derive(Clone, Debug)]
pub struct Verdict {
    #[napi(ts_type = "'allow' | 'deny'")]
    pub verdict: String,
    pub rule: Option<String>,
    pub reason: Option<String>,
}

impl From<RuleVerdict> for Verdict {
    fn from(v: RuleVerdict) -> Self {
        let (verdict, rule, reason) = names::verdict(v);
        Verdict { verdict: verdict.to_owned(), rule, reason }
    }
}

agentfw_bind::explanation! { #[napi(object)] [pub] }

agentfw_bind::rule_info! { #[napi(object)] [pub] }

agentfw_bind::diagnostic! { #[napi(object)] [pub] }

agentfw_bind::case_result! { #[napi(object)] [pub] }

/// How to judge a text: hops travelled (default 1), stage (default `sending`), time.
#[napi(object)]
pub struct JudgeOptions {
    pub hops: Option<u32>,
    pub on: Option<String>,
    pub now: Option<i64>,
}

/// `scan` options: as `JudgeOptions`, plus the rules (default: the default pack).
#[napi(object)]
pub struct ScanOptions<'a> {
    pub hops: Option<u32>,
    pub on: Option<String>,
    pub now: Option<i64>,
    pub rules: Option<Either<ClassInstance<'a, Policy>, ClassInstance<'a, Reloadable>>>,
}

/// A file given by name and text.
#[napi(object)]
pub struct NamedText {
    pub name: String,
    pub text: String,
}

/// The rules an option names, or the default pack.
pub fn rules_of(rules: Option<Either<&Policy, &Reloadable>>) -> std::result::Result<Arc<dyn Rules>, Failure> {
    Ok(match rules {
        None => default_pack()?,
        Some(Either::A(p)) => Arc::clone(&p.rules) as Arc<dyn Rules>,
        Some(Either::B(r)) => Arc::clone(&r.inner) as Arc<dyn Rules>,
    })
}

/// Files given by name and text; an absent list is no files.
fn files(list: Option<Vec<NamedText>>) -> Vec<SourceFile> {
    list.into_iter().flatten().map(|f| SourceFile::new(f.name, f.text)).collect()
}

fn compile(sources: &Sources) -> Result<Policy> {
    guard(|| Ok(Policy { rules: load::compile(sources)? }))
}

/// A rule file's name: `rules.yaml` unless given.
fn rules_name(name: Option<String>) -> String {
    name.unwrap_or_else(|| "rules.yaml".to_owned())
}

fn judge(rules: Arc<dyn Rules>, text: &str, options: Option<JudgeOptions>) -> Result<Verdict> {
    guard(|| {
        let (hops, on, now) = options.map_or((None, None, None), |o| (o.hops, o.on, o.now));
        let stage = stage(on.as_deref().unwrap_or("sending"))?;
        Ok(Scanner::new(rules).judge(text, stage, hops.unwrap_or(1), at(now)?).into())
    })
}

/// A compiled rule set: the default pack, or rules from text or files.
#[napi]
pub struct Policy {
    pub(crate) rules: Arc<RuleSet>,
}

#[napi]
impl Policy {
    /// The rule pack agentfw ships (PR4).
    #[napi(factory, js_name = "default")]
    pub fn default_pack() -> Result<Self> {
        guard(|| Ok(Policy { rules: default_pack()? }))
    }

    /// One rule file's text, over the default pack's pattern sets.
    #[napi(factory)]
    pub fn from_text(text: String, name: Option<String>) -> Result<Self> {
        compile(&load::text(rules_name(name), text))
    }

    /// Rule, pattern and placeholder files (or folders of them), over the default pack's
    /// pattern sets, as `agentfw scan --rules` reads them.
    #[napi(factory)]
    pub fn from_files(paths: Vec<String>) -> Result<Self> {
        let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
        compile(&guard(|| load::files(&paths))?)
    }

    /// Exactly these files: nothing from the default pack.
    #[napi(factory)]
    pub fn compile(
        rules: Vec<NamedText>,
        patterns: Option<Vec<NamedText>>,
        placeholders: Option<Vec<NamedText>>,
    ) -> Result<Self> {
        compile(&Sources { rules: files(Some(rules)), patterns: files(patterns), placeholders: files(placeholders) })
    }

    /// The diagnostics of rule text that does not compile (empty if it compiles): file,
    /// line, column, a stable code and a rendering with a caret.
    #[napi]
    pub fn check(text: String, name: Option<String>) -> Vec<Diagnostic> {
        load::check(rules_name(name), text).iter().map(Diagnostic::from).collect()
    }

    /// The verdict on `text` as a message that travelled `hops` hops.
    #[napi]
    pub fn evaluate(&self, text: String, options: Option<JudgeOptions>) -> Result<Verdict> {
        judge(Arc::clone(&self.rules) as Arc<dyn Rules>, &text, options)
    }

    /// The verdict with every rule's outcome (PR6).
    #[napi]
    pub fn explain(&self, text: String, options: Option<JudgeOptions>) -> Result<Explanation> {
        guard(|| {
            let (hops, on, now) = options.map_or((None, None, None), |o| (o.hops, o.on, o.now));
            let scanner = Scanner::new(Arc::clone(&self.rules) as Arc<dyn Rules>);
            Ok(scanner.explain(&text, stage(on.as_deref().unwrap_or("sending"))?, hops.unwrap_or(1), at(now)?).into())
        })
    }

    /// Runs a cases file (`cases: [{note, input, want}]`) against these rules.
    #[napi]
    pub fn test(&self, text: String, name: Option<String>, now: Option<i64>) -> Result<Vec<CaseResult>> {
        guard(|| {
            let list = cases::read(&SourceFile::new(name.unwrap_or_else(|| "cases.yaml".to_owned()), text))?;
            let scanner = Scanner::new(Arc::clone(&self.rules) as Arc<dyn Rules>);
            Ok(cases::run(&scanner, &list, at(now)?).into_iter().map(CaseResult::from).collect())
        })
    }

    /// The loaded rules, in load order.
    #[napi(getter)]
    pub fn rules(&self) -> Vec<RuleInfo> {
        self.rules.rules().map(RuleInfo::from).collect()
    }

    /// The names of the pattern sets the rules can use.
    #[napi(getter)]
    pub fn pattern_sets(&self) -> Vec<String> {
        self.rules.patterns().names().map(str::to_owned).collect()
    }
}

/// Rules that can be replaced while in use; a reload that does not compile keeps the last
/// good set in force (PR7).
#[napi]
pub struct Reloadable {
    pub(crate) inner: Arc<core::Reloadable>,
}

#[napi]
impl Reloadable {
    #[napi(constructor)]
    pub fn new(policy: &Policy) -> Self {
        Reloadable { inner: Arc::new(core::Reloadable::shared(Arc::clone(&policy.rules))) }
    }

    /// The rule set in force.
    #[napi(getter)]
    pub fn current(&self) -> Policy {
        Policy { rules: self.inner.current() }
    }

    /// Compiles a rule file's text and puts it in force; on error nothing changes.
    #[napi]
    pub fn reload_text(&self, text: String, name: Option<String>) -> Result<()> {
        guard(|| Ok(self.inner.reload(&load::text(rules_name(name), text))?))
    }

    /// Reads and compiles files and puts them in force; on error nothing changes.
    #[napi]
    pub fn reload_files(&self, paths: Vec<String>) -> Result<()> {
        let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
        guard(|| Ok(self.inner.reload(&load::files(&paths)?)?))
    }

    /// Puts an already compiled policy in force.
    #[napi]
    pub fn replace(&self, policy: &Policy) {
        self.inner.replace_shared(Arc::clone(&policy.rules));
    }
}

/// Judges `text` with the rule engine as a message that travelled `hops` hops (PR8).
#[napi]
pub fn scan(text: String, options: Option<ScanOptions>) -> Result<Verdict> {
    let (judge_options, rules) = match options {
        None => (None, None),
        Some(o) => (Some(JudgeOptions { hops: o.hops, on: o.on, now: o.now }), o.rules),
    };
    let rules = guard(|| {
        rules_of(match &rules {
            None => None,
            Some(Either::A(p)) => Some(Either::A(&**p)),
            Some(Either::B(r)) => Some(Either::B(&**r)),
        })
    })?;
    judge(rules, &text, judge_options)
}
