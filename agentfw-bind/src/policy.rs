//! The rule engine's records as both bindings return them: an explanation, a loaded rule,
//! a diagnostic and a case's result, each with its conversion from the core, written once.
//!
//! A binding's record must carry its language's export attributes (`#[pyclass(...)]`,
//! `#[napi(object)]`) on the struct itself, so each record is a macro, like
//! [`overlay!`](crate::overlay): the binding passes its attributes and, in brackets, the
//! fields' visibility (napi reads public fields, pyo3's `get_all` private ones). Strings
//! are owned and counts `u32` ([`crate::numbers::count`]), the shape both languages hold.

/// Defines a binding's `Explanation` and `RuleOutcome` (a verdict and why, PR6) and the
/// conversion from the core's; `verdict` is the binding's own `Verdict`, which must
/// convert from [`RuleVerdict`](agentfw_core::policy::RuleVerdict):
/// `agentfw_bind::explanation! { #[napi(object)] [pub] }`.
#[macro_export]
macro_rules! explanation {
    ($(#[$attr:meta])* [$($field:tt)*]) => {
        /// What one rule made of one text.
        $(#[$attr])*
        #[derive(Clone, Debug)]
        pub struct RuleOutcome {
            $($field)* rule: String,
            /// `allow` or `deny`: what the rule says when it matches.
            $($field)* verdict: String,
            /// `matched`, `not_matched` or `failed`.
            $($field)* result: String,
            /// Why the rule failed to evaluate, if it did.
            $($field)* error: Option<String>,
        }

        /// A verdict and why: the rule that decided and every rule's outcome (PR6).
        $(#[$attr])*
        #[derive(Clone, Debug)]
        pub struct Explanation {
            $($field)* verdict: Verdict,
            $($field)* decided_by: Option<String>,
            /// Whether the verdict is a refusal because a rule failed to evaluate (PR7).
            $($field)* failed: bool,
            $($field)* outcomes: Vec<RuleOutcome>,
        }

        impl From<::agentfw_core::policy::Explanation> for Explanation {
            fn from(e: ::agentfw_core::policy::Explanation) -> Self {
                let outcomes = e
                    .outcomes
                    .into_iter()
                    .map(|o| {
                        let (result, error) = $crate::names::outcome(o.result);
                        let verdict = o.verdict.as_str().to_owned();
                        RuleOutcome { rule: o.rule, verdict, result: result.to_owned(), error }
                    })
                    .collect();
                Explanation { verdict: e.verdict.into(), decided_by: e.decided_by, failed: e.failed, outcomes }
            }
        }
    };
}

/// Defines a binding's `RuleInfo` (a loaded rule as `agentfw rules list` shows it, PR6)
/// and its conversion from the core's [`RuleInfo`](agentfw_core::policy::RuleInfo):
/// `agentfw_bind::rule_info! { #[napi(object)] [pub] }`.
#[macro_export]
macro_rules! rule_info {
    ($(#[$attr:meta])* [$($field:tt)*]) => {
        /// A loaded rule.
        $(#[$attr])*
        #[derive(Clone, Debug)]
        pub struct RuleInfo {
            $($field)* id: String,
            /// `sending`, `delivering` or both.
            $($field)* on: Vec<String>,
            $($field)* when: String,
            /// `allow` or `deny`.
            $($field)* verdict: String,
            $($field)* reason: String,
            $($field)* description: Option<String>,
            $($field)* file: String,
            $($field)* line: u32,
        }

        impl From<&::agentfw_core::policy::RuleInfo> for RuleInfo {
            fn from(r: &::agentfw_core::policy::RuleInfo) -> Self {
                RuleInfo {
                    id: r.id.clone(),
                    on: r.on.iter().map(|s| $crate::names::stage_name(*s).to_owned()).collect(),
                    when: r.when.clone(),
                    verdict: r.verdict.as_str().to_owned(),
                    reason: r.reason.clone(),
                    description: r.description.clone(),
                    file: r.file.clone(),
                    line: $crate::numbers::count(r.line),
                }
            }
        }
    };
}

/// Defines a binding's `Diagnostic` (one problem in a rule, pattern or case file, PR6)
/// and its conversion from the core's:
/// `agentfw_bind::diagnostic! { #[napi(object)] [pub] }`.
#[macro_export]
macro_rules! diagnostic {
    ($(#[$attr:meta])* [$($field:tt)*]) => {
        /// One problem in a rule, pattern or case file: where, what, and how to fix it.
        $(#[$attr])*
        #[derive(Clone, Debug)]
        pub struct Diagnostic {
            /// A stable identifier such as `policy.unknown_variable`.
            $($field)* code: String,
            $($field)* message: String,
            $($field)* file: String,
            $($field)* line: u32,
            $($field)* column: u32,
            $($field)* width: u32,
            $($field)* source_line: String,
            $($field)* hint: Option<String>,
            /// The diagnostic rendered with a caret under the offending text.
            $($field)* rendered: String,
        }

        impl From<&::agentfw_core::policy::Diagnostic> for Diagnostic {
            fn from(d: &::agentfw_core::policy::Diagnostic) -> Self {
                Diagnostic {
                    code: d.code.to_owned(),
                    message: d.message.clone(),
                    file: d.file.clone(),
                    line: $crate::numbers::count(d.line),
                    column: $crate::numbers::count(d.column),
                    width: $crate::numbers::count(d.width),
                    source_line: d.source_line.clone(),
                    hint: d.hint.clone(),
                    rendered: d.to_string(),
                }
            }
        }
    };
}

/// Defines a binding's `CaseResult` (one expected-verdict case and what the rules made of
/// it, PR6) and its conversion from the core's; `got` is the binding's own `Verdict`,
/// which must convert from [`RuleVerdict`](agentfw_core::policy::RuleVerdict):
/// `agentfw_bind::case_result! { #[napi(object)] [pub] }`.
#[macro_export]
macro_rules! case_result {
    ($(#[$attr:meta])* [$($field:tt)*]) => {
        /// One expected-verdict case and what the rules made of it.
        $(#[$attr])*
        #[derive(Clone, Debug)]
        pub struct CaseResult {
            $($field)* note: String,
            $($field)* text: String,
            $($field)* hops: u32,
            /// `sending` or `delivering`.
            $($field)* on: String,
            /// `allow` or `deny`.
            $($field)* want: String,
            $($field)* rule: Option<String>,
            $($field)* file: String,
            $($field)* line: u32,
            $($field)* got: Verdict,
            $($field)* passed: bool,
        }

        impl From<::agentfw_core::policy::cases::CaseResult> for CaseResult {
            fn from(r: ::agentfw_core::policy::cases::CaseResult) -> Self {
                let passed = r.passed();
                let c = r.case;
                CaseResult {
                    note: c.note,
                    text: c.text,
                    hops: c.hops,
                    on: $crate::names::stage_name(c.stage).to_owned(),
                    want: c.want.as_str().to_owned(),
                    rule: c.rule,
                    file: c.file,
                    line: $crate::numbers::count(c.line),
                    got: r.got.into(),
                    passed,
                }
            }
        }
    };
}
