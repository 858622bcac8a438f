//! Policy: what the text of a message may say (PR1–PR8).
//!
//! The firewall asks a [`Rules`] implementation for a verdict on every message twice: when
//! it is sent ([`Stage::Sending`]) and again when it is delivered ([`Stage::Delivering`]).
//! The rule engine plugs in here; the firewall knows nothing of how rules are written.
//!
//! The engine is [`RuleSet`]: rules written in YAML with CEL conditions (see [`rule`]),
//! compiled once by [`RuleSet::compile`], with pattern sets ([`patterns`]) that match
//! whole families of secrets or injections in one linear pass. [`RuleSet::default_pack`]
//! is the pack agentfw ships ([`pack`]); [`Reloadable`] swaps in edited rules and keeps the
//! last good set when an edit does not compile (PR7).
//!
//! **Precedence:** a matching `allow` rule lets the message through whatever else
//! matches; otherwise the first matching `deny` rule (in load order) refuses it; otherwise
//! it is allowed — and a rule that fails to evaluate refuses it (fails closed), saying so.
//!
//! A rule's condition sees the fields of [`MessageView`] as `message.body`,
//! `message.folded`, `message.hops`, `message.origin`, `message.path`, `message.size`,
//! `message.from` / `message.to` (`.id`, `.agent`, `.project`, `.machine`, `.label`),
//! `message.thread` (`.id`, `.turns`), `message.signals.injection` (a number from 0 to 1,
//! see [`crate::signals`]) and `now`. Each is computed only if a rule reads it.

use std::sync::Arc;

use cel::{Context, Env, Value};
use serde::{Deserialize, Serialize};

use crate::message::{Agent, MessageId};
use crate::provenance::Provenance;
use crate::time::Timestamp;

pub mod cases;
mod compile;
mod context;
pub mod diagnostic;
pub mod import;
pub mod index;
mod literals;
mod matcher;
pub mod pack;
pub mod patterns;
mod plain;
mod reload;
mod rot13;
pub mod rule;
mod scan;
mod search;
pub mod validators;
mod views;
pub(crate) mod yaml;

use compile::{CompiledRule, RegexCache, Subject};
pub use diagnostic::{Diagnostic, Diagnostics, SourceFile};
pub use patterns::{Pattern, PatternLibrary, PatternSet, Placeholders};
pub use reload::Reloadable;
pub use rule::{RuleInfo, Verdict};
pub use scan::Scanner;

/// When a message is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// On the sender's side, before the message is accepted (`message.sending`).
    Sending,
    /// On the recipient's side, before the text reaches the model (`message.delivering`).
    Delivering,
}

impl Stage {
    /// The event name rule files use in `on:`.
    pub fn event(self) -> &'static str {
        match self {
            Stage::Sending => "message.sending",
            Stage::Delivering => "message.delivering",
        }
    }
}

/// Everything a rule may look at (PR3), borrowed from the firewall for one evaluation.
#[derive(Clone, Copy, Debug)]
pub struct MessageView<'a> {
    pub id: MessageId,
    /// The text as delivered: sanitized (DL2) but otherwise as written.
    pub body: &'a str,
    /// The text after normalization (PV1, PV3): what content rules should match, so that
    /// look-alike letters, zero-width characters and odd spacing cannot dodge them.
    pub folded: &'a str,
    pub provenance: &'a Provenance,
    pub from: &'a Agent,
    pub to: &'a Agent,
    /// Size of `body` in bytes.
    pub size: usize,
    pub thread: ThreadView,
    pub now: Timestamp,
}

/// The thread a message belongs to, as rules see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadView {
    pub id: MessageId,
    /// Messages in the thread before this one.
    pub turns: u32,
}

/// A rule set's answer for one message.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum RuleVerdict {
    /// No rule refused the message.
    Allow,
    /// A rule refused it; `rule` is its id and `reason` the text the sender is shown.
    Deny { rule: String, reason: String },
}

impl RuleVerdict {
    pub fn is_deny(&self) -> bool {
        matches!(self, RuleVerdict::Deny { .. })
    }

    /// The id of the rule that refused the message.
    pub fn rule(&self) -> Option<&str> {
        match self {
            RuleVerdict::Allow => None,
            RuleVerdict::Deny { rule, .. } => Some(rule),
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            RuleVerdict::Allow => None,
            RuleVerdict::Deny { reason, .. } => Some(reason),
        }
    }
}

/// A compiled set of rules. Implementations must not panic and must fail closed: a rule
/// that cannot be evaluated is a [`RuleVerdict::Deny`] that says so (PR7).
pub trait Rules: Send + Sync {
    fn judge(&self, stage: Stage, message: &MessageView<'_>) -> RuleVerdict;

    /// The verdict with every rule's outcome, for `agentfw rules test`, `scan` and the
    /// audit trail (PR6). Must agree with [`Rules::judge`].
    fn explain(&self, stage: Stage, message: &MessageView<'_>) -> Explanation {
        let verdict = self.judge(stage, message);
        Explanation { decided_by: verdict.rule().map(str::to_owned), failed: false, verdict, outcomes: Vec::new() }
    }
}

/// The empty rule set: every message is allowed by content. The other layers
/// (containment, limits, admission) still apply.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRules;

impl Rules for NoRules {
    fn judge(&self, _stage: Stage, _message: &MessageView<'_>) -> RuleVerdict {
        RuleVerdict::Allow
    }
}

/// Why a verdict is what it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    pub verdict: RuleVerdict,
    /// The rule that decided: the matching allow rule, the refusing deny rule, or the rule
    /// that failed to evaluate. `None` when no rule matched.
    pub decided_by: Option<String>,
    /// Whether the verdict is a refusal because a rule failed to evaluate.
    pub failed: bool,
    /// Every rule of the stage, in evaluation order, with what it did.
    pub outcomes: Vec<RuleOutcome>,
}

/// What one rule did with one message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RuleOutcome {
    pub rule: String,
    pub verdict: Verdict,
    pub result: Outcome,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "error")]
pub enum Outcome {
    Matched,
    NotMatched,
    /// The condition could not be evaluated; the text says why.
    Failed(String),
}

/// Why rules could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The files have errors; each diagnostic says where and how to fix it.
    #[error("the rules do not compile ({}):\n\n{diagnostics}", count(.0.len()), diagnostics = .0)]
    Invalid(Diagnostics),
}

fn count(n: usize) -> String {
    if n == 1 { "1 error".to_owned() } else { format!("{n} errors") }
}

impl PolicyError {
    /// A stable code for bindings and logs: `policy.invalid`. Each diagnostic carries its
    /// own code too (`policy.unknown_variable`, …).
    pub fn code(&self) -> &'static str {
        match self {
            PolicyError::Invalid(_) => "policy.invalid",
        }
    }

    pub fn diagnostics(&self) -> &Diagnostics {
        match self {
            PolicyError::Invalid(d) => d,
        }
    }
}

/// The files a rule set is compiled from. The core reads no files: the caller hands over
/// their names (for diagnostics) and text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    /// Rule files (see [`rule`]).
    pub rules: Vec<SourceFile>,
    /// Pattern files, one set each, named after the file (see [`patterns`]).
    pub patterns: Vec<SourceFile>,
    /// Placeholder lists (see [`Placeholders`]); values on them never count as secrets.
    pub placeholders: Vec<SourceFile>,
}

impl Sources {
    /// The files of the default pack, embedded in this crate.
    pub fn default_pack() -> Self {
        Self { rules: pack::rule_files(), patterns: pack::pattern_files(), placeholders: pack::placeholder_files() }
    }

    /// A user's files, sorted by [`FileKind`], with the default pack's pattern sets beneath
    /// them: the rules are exactly these files' rules; a pattern file named like a
    /// built-in set replaces it; these placeholder lists replace the built-in one if there
    /// are any. Cases files are left out (see [`cases`]). This is how `agentfw scan
    /// --rules`, `agentfw rules` and the bindings load rules from files.
    pub fn over_default_pack(files: impl IntoIterator<Item = SourceFile>) -> Self {
        let mut sets: std::collections::BTreeMap<String, SourceFile> =
            pack::pattern_files().into_iter().map(|f| (patterns::set_name(&f.name), f)).collect();
        let (mut rules, mut placeholders) = (Vec::new(), Vec::new());
        for file in files {
            match FileKind::of(&file.text) {
                FileKind::Rules => rules.push(file),
                FileKind::Patterns => {
                    sets.insert(patterns::set_name(&file.name), file);
                }
                FileKind::Placeholders => placeholders.push(file),
                FileKind::Cases => {}
            }
        }
        if placeholders.is_empty() {
            placeholders = pack::placeholder_files();
        }
        Self { rules, patterns: sets.into_values().collect(), placeholders }
    }
}

/// What a policy file holds, told by its top-level keys: `cases:` a cases file,
/// `patterns:` a pattern file, `exact:`, `contains:`, `sequences:`, `prefixes:`,
/// `suffixes:` or `regexes:` a placeholder list, and anything else rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    Rules,
    Patterns,
    Placeholders,
    Cases,
}

impl FileKind {
    pub fn of(text: &str) -> Self {
        let has = |keys: &[&str]| {
            text.lines().any(|l| keys.iter().any(|k| l.strip_prefix(k).is_some_and(|rest| rest.starts_with(':'))))
        };
        if has(&["cases"]) {
            FileKind::Cases
        } else if has(&["patterns"]) {
            FileKind::Patterns
        } else if has(&["exact", "contains", "sequences", "prefixes", "suffixes", "regexes"]) {
            FileKind::Placeholders
        } else {
            FileKind::Rules
        }
    }
}

/// Compiled rules and the pattern sets they use: the rule engine.
pub struct RuleSet {
    rules: Vec<CompiledRule>,
    library: Arc<PatternLibrary>,
    /// The evaluation context each message's scope hangs off.
    root: Context<'static, 'static>,
    /// Per stage, the rules to run: allow rules first, then deny rules, each in load order.
    order: [Vec<usize>; 2],
    /// The pattern sets tested on the body, and on the folded text, each scanned together.
    unions: Arc<[Option<patterns::Union>; 2]>,
}

impl core::fmt::Debug for RuleSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RuleSet")
            .field("rules", &self.rules.iter().map(|r| &r.info.id).collect::<Vec<_>>())
            .field("pattern_sets", &self.library.names().collect::<Vec<_>>())
            .finish()
    }
}

fn stage_index(stage: Stage) -> usize {
    match stage {
        Stage::Sending => 0,
        Stage::Delivering => 1,
    }
}

impl RuleSet {
    /// Compiles rule files with the pattern sets and placeholder list their rules use.
    /// Every problem in every file is reported at once, each with file, line, column and a
    /// hint.
    pub fn compile(sources: &Sources) -> Result<Self, PolicyError> {
        compile::compile(sources)
    }

    /// The rule pack agentfw ships (PR4), compiled from the files embedded in this crate.
    pub fn default_pack() -> Result<Self, PolicyError> {
        Self::compile(&Sources::default_pack())
    }

    fn assemble(
        rules: Vec<CompiledRule>,
        library: Arc<PatternLibrary>,
        regexes: Arc<RegexCache>,
        env: Arc<Env>,
    ) -> Self {
        // One union per text that rules test pattern sets on, so each is scanned once and
        // what it found is shared by every rule that asks.
        let unions = [Subject::Body, Subject::Folded].map(|subject| {
            let mut names: Vec<String> = Vec::new();
            for (s, name) in rules.iter().flat_map(|r| &r.sets) {
                if *s == subject && !names.contains(name) {
                    names.push(name.clone());
                }
            }
            if names.is_empty() { None } else { patterns::Union::build(&library, &names) }
        });
        let unions = Arc::new(unions);
        let root = compile::root_context(env, Arc::clone(&library), regexes, Arc::clone(&unions));
        let mut order = [Vec::new(), Vec::new()];
        for stage in [Stage::Sending, Stage::Delivering] {
            for verdict in [Verdict::Allow, Verdict::Deny] {
                for (i, rule) in rules.iter().enumerate() {
                    if rule.info.verdict == verdict
                        && rule.info.on.contains(&stage)
                        && let Some(list) = order.get_mut(stage_index(stage))
                    {
                        list.push(i);
                    }
                }
            }
        }
        Self { rules, library, root, order, unions }
    }

    /// The loaded rules, in load order.
    pub fn rules(&self) -> impl Iterator<Item = &RuleInfo> {
        self.rules.iter().map(|r| &r.info)
    }

    pub fn patterns(&self) -> &PatternLibrary {
        &self.library
    }

    /// Runs the rules of `stage`; with `all`, every rule, else only until the verdict is
    /// known.
    fn evaluate(&self, stage: Stage, message: &MessageView<'_>, all: bool) -> Explanation {
        let scope_vars = context::MessageScope::new(message);
        let root: &Context<'_, '_> = &self.root;
        let mut scope = root.new_inner_scope();
        scope.set_variable_resolver(&scope_vars);

        let mut outcomes = Vec::new();
        let mut decision: Option<(RuleVerdict, String, bool)> = None;
        let indices = self.order.get(stage_index(stage)).map_or(&[][..], Vec::as_slice);
        for &i in indices {
            let Some(rule) = self.rules.get(i) else {
                continue;
            };
            if decision.is_some() && !all {
                break;
            }
            let result = match rule.program.execute(&scope) {
                Ok(Value::Bool(true)) => Outcome::Matched,
                Ok(Value::Bool(false)) => Outcome::NotMatched,
                Ok(other) => {
                    Outcome::Failed(format!("the condition gave {} instead of true or false", type_name(&other)))
                }
                Err(e) => Outcome::Failed(error_text(&e)),
            };
            if decision.is_none() {
                decision = match (&result, rule.info.verdict) {
                    (Outcome::Matched, Verdict::Allow) => Some((RuleVerdict::Allow, rule.info.id.clone(), false)),
                    (Outcome::Matched, Verdict::Deny) => Some((
                        RuleVerdict::Deny {
                            rule: rule.info.id.clone(),
                            reason: self.reason(rule, message, &scope_vars.memo),
                        },
                        rule.info.id.clone(),
                        false,
                    )),
                    (Outcome::Failed(why), _) => Some((
                        RuleVerdict::Deny {
                            rule: rule.info.id.clone(),
                            reason: format!(
                                "rule `{}` could not be evaluated ({why}), so the message was refused to be safe; the rule needs fixing",
                                rule.info.id
                            ),
                        },
                        rule.info.id.clone(),
                        true,
                    )),
                    (Outcome::NotMatched, _) => None,
                };
            }
            if all {
                outcomes.push(RuleOutcome { rule: rule.info.id.clone(), verdict: rule.info.verdict, result });
            }
        }
        match decision {
            Some((verdict, rule, failed)) => Explanation { verdict, decided_by: Some(rule), failed, outcomes },
            None => Explanation { verdict: RuleVerdict::Allow, decided_by: None, failed: false, outcomes },
        }
    }

    /// The rule's reason, with `{pattern}` replaced by the description of the pattern that
    /// matched. Only refusals pay for this second look.
    fn reason(&self, rule: &CompiledRule, message: &MessageView<'_>, memo: &context::Memo) -> String {
        if !rule.info.reason.contains("{pattern}") {
            return rule.info.reason.clone();
        }
        let found = rule.sets.iter().find_map(|(subject, set)| {
            let text = match subject {
                Subject::Body => message.body,
                Subject::Folded => message.folded,
                Subject::Other => return None,
            };
            let patterns = self.library.get(set)?;
            match compile::union_lookup(&self.unions, &self.library, memo, text, set) {
                Some(found) => patterns.patterns().get(found?),
                None => patterns.find(text),
            }
        });
        let name = match (found, rule.sets.first()) {
            (Some(p), _) => sentence_case(&p.description),
            (None, Some((_, set))) => format!("`{set}`"),
            (None, None) => "a forbidden pattern".to_owned(),
        };
        rule.info.reason.replace("{pattern}", &name)
    }
}

impl Rules for RuleSet {
    fn judge(&self, stage: Stage, message: &MessageView<'_>) -> RuleVerdict {
        self.evaluate(stage, message, false).verdict
    }

    fn explain(&self, stage: Stage, message: &MessageView<'_>) -> Explanation {
        self.evaluate(stage, message, true)
    }
}

/// `Downloaded script piped…` → `downloaded script piped…`, but `AWS access key id` and
/// `GitHub token` keep their capitals: a description reads as part of the reason.
fn sentence_case(description: &str) -> String {
    let first_word = description.split([' ', '/', '(']).next().unwrap_or_default();
    let mut chars = first_word.chars();
    let starts_capital = chars.next().is_some_and(char::is_uppercase);
    if starts_capital && !chars.any(|c| c.is_uppercase() || c.is_ascii_digit()) {
        let mut all = description.chars();
        return all.next().map(|c| c.to_lowercase().chain(all).collect()).unwrap_or_default();
    }
    description.to_owned()
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Int(_) | Value::UInt(_) | Value::Float(_) => "a number",
        Value::String(_) => "a string",
        Value::List(_) => "a list",
        Value::Map(_) => "a map",
        Value::Null => "null",
        _ => "a value",
    }
}

/// A CEL evaluation error as one lowercase phrase.
fn error_text(e: &cel::ExecutionError) -> String {
    use cel::ExecutionError as E;
    match e {
        E::FunctionError { function, message } => format!("`{function}` failed: {message}"),
        E::NoSuchKey(k) => format!("no field `{k}`"),
        E::UndeclaredReference(r) => format!("`{r}` is not defined"),
        E::NoSuchOverload(o) => format!("`{}` cannot be applied to {}", o.function(), o.argument_types().join(", ")),
        E::DivisionByZero(_) | E::RemainderByZero(_) => "division by zero".to_owned(),
        E::Overflow(..) => "arithmetic overflow".to_owned(),
        other => {
            let text = other.to_string();
            let mut chars = text.chars();
            match chars.next() {
                Some(c) => c.to_lowercase().chain(chars).collect(),
                None => text,
            }
        }
    }
}
