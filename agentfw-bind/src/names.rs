//! The names the bindings give core values, and the names they read back: one spelling
//! for Python and Node, the same as the core's serde and the CLI's.

use agentfw_core::admission::{HarnessFile, Mode};
use agentfw_core::policy::{Outcome, RuleVerdict, Stage};
use agentfw_core::seal::KeyStatus;
use serde_json::Value;

use crate::error::Failure;

/// `sending` or `delivering` (the event names `message.sending` and
/// `message.delivering` are accepted too).
pub fn stage(on: &str) -> Result<Stage, Failure> {
    match on {
        "sending" | "message.sending" => Ok(Stage::Sending),
        "delivering" | "message.delivering" => Ok(Stage::Delivering),
        other => Err(Failure::Input(format!("`on` must be `sending` or `delivering`, not `{other}`"))),
    }
}

pub fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Sending => "sending",
        Stage::Delivering => "delivering",
    }
}

/// `off`, `report` or `enforce`.
pub fn mode(text: &str) -> Result<Mode, Failure> {
    Ok(text.parse::<Mode>()?)
}

pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Off => "off",
        Mode::Report => "report",
        Mode::Enforce => "enforce",
    }
}

/// `active`, `superseded` or `revoked`.
pub fn key_status(status: &KeyStatus) -> &'static str {
    match status {
        KeyStatus::Active => "active",
        KeyStatus::Superseded { .. } => "superseded",
        KeyStatus::Revoked { .. } => "revoked",
    }
}

/// `matched`, `not_matched` or `failed`, and why it failed.
pub fn outcome(outcome: Outcome) -> (&'static str, Option<String>) {
    match outcome {
        Outcome::Matched => ("matched", None),
        Outcome::NotMatched => ("not_matched", None),
        Outcome::Failed(why) => ("failed", Some(why)),
    }
}

/// A verdict as `(allow|deny, rule, reason)`.
pub fn verdict(verdict: RuleVerdict) -> (&'static str, Option<String>, Option<String>) {
    match verdict {
        RuleVerdict::Allow => ("allow", None, None),
        RuleVerdict::Deny { rule, reason } => ("deny", Some(rule), Some(reason)),
    }
}

/// A harness config file kind: `claude_user`, `claude_project`, `codex_config`,
/// `cursor_mcp` or `gemini_settings`.
pub fn harness_file(name: &str) -> Result<HarnessFile, Failure> {
    serde_json::from_value(Value::from(name))
        .map_err(|_| Failure::Input(format!("`{name}` is not a harness file kind")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_as_what_they_name() -> Result<(), Failure> {
        for s in [Stage::Sending, Stage::Delivering] {
            assert_eq!(stage(stage_name(s))?, s);
        }
        for m in [Mode::Off, Mode::Report, Mode::Enforce] {
            assert_eq!(mode(mode_name(m))?, m);
        }
        Ok(())
    }

    #[test]
    fn unknown_names_are_coded_errors() {
        assert_eq!(stage("sideways").err().as_ref().map(Failure::code), Some("input.invalid"));
        assert!(mode("loud").is_err());
        assert_eq!(
            harness_file("vim").err().map(|e| e.to_string()).as_deref(),
            Some("`vim` is not a harness file kind")
        );
    }
}
