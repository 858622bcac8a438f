//! What the page is sent besides decisions ([`State`]), and the commands it shows.
//!
//! The page acts on nothing; for each action it shows the command a person runs instead.
//! Those commands are built here, quoted for a POSIX shell: labels come from folder names
//! that anybody who can create a folder chooses, and a command pasted into a terminal must
//! run exactly what it shows. A label that is not clean text (ID7), or that two
//! sessions share, is replaced by the agent's id.

use agentfw_core::label;
use serde::Serialize;

use crate::proto::{AdmissionInfo, AgentView, RulesInfo};

/// Everything the page shows but the decisions. Metadata only.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct State {
    pub daemon: DaemonView,
    pub team: Vec<Member>,
    pub quarantined: Vec<QuarantineView>,
    /// Texts the firewall refused and refuses again on sight: their fingerprints (CT2).
    pub remembered: Vec<RememberedView>,
    /// Pairs the relay's admin disconnected.
    pub disconnected: Vec<DisconnectedView>,
    pub limits: LimitsView,
    pub admission: AdmissionInfo,
    pub rules: RulesView,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DaemonView {
    pub version: String,
    pub pid: u32,
    pub home: String,
    /// This machine's host name.
    pub machine: String,
    pub started_at: u64,
    /// Accepted messages' text is shown (`--show-text`).
    pub show_text: bool,
    /// How every command shown starts: `agentfw`, with the home when it is not the default.
    pub command: String,
}

/// An agent session with its counters and how a command names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Member {
    #[serde(flatten)]
    pub agent: AgentView,
    /// Highest turn it received since a person last spoke (LM2): its next message is one more.
    pub turn: u32,
    /// Messages it sent in the rate window (LM3).
    pub rate: usize,
    /// The agent as a shell word for commands: its label, quoted, or its id.
    pub arg: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QuarantineView {
    pub agent: String,
    pub label: String,
    pub until: u64,
    pub reason: String,
    /// The command that lifts it.
    pub command: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RememberedView {
    /// The text's fingerprint id, never the text.
    pub text: String,
    pub rule: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DisconnectedView {
    pub a: String,
    pub b: String,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LimitsView {
    pub max_turns: u32,
    pub rate: usize,
    pub rate_window_secs: u64,
    pub fan_out: usize,
    pub thread_messages: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RulesView {
    #[serde(flatten)]
    pub info: RulesInfo,
    pub list: Vec<RuleView>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuleView {
    pub id: String,
    pub verdict: String,
    pub file: String,
    pub line: usize,
}

/// `s` as one word for a POSIX shell: single-quoted, each `'` written `'\''`.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// How a command names `agent`: its label when that is clean text ([`label::bounded`]
/// leaves it as it is) that no other session has, else its id; quoted either way.
pub fn agent_arg(agent: &AgentView, team: &[AgentView]) -> String {
    let clean = label::bounded(&agent.label, label::MAX_LABEL_CHARS) == agent.label;
    let shared = team.iter().filter(|o| o.label.eq_ignore_ascii_case(&agent.label)).count() > 1;
    shell_quote(if clean && !shared { &agent.label } else { &agent.id })
}

/// The start of every command: `agentfw`, or `AGENTFW_HOME='…' agentfw` when the daemon's
/// home is not the one `agentfw` finds by itself.
pub fn command_prefix(home: &std::path::Path, default_home: Option<&std::path::Path>) -> String {
    let default = default_home.and_then(|d| std::fs::canonicalize(d).ok());
    if default.as_deref() == Some(home) {
        "agentfw".to_owned()
    } else {
        format!("AGENTFW_HOME={} agentfw", shell_quote(&home.display().to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(id: &str, label: &str) -> AgentView {
        let json = serde_json::json!({
            "id": id, "label": label, "agent": "codex", "project": "api", "pid": 1, "started_at": 0,
            "live": true, "verified": true, "last_seen": 0,
        });
        serde_json::from_value(json).unwrap()
    }

    /// What `sh -c 'printf %s WORD'` prints: the word as the shell reads it.
    fn through_sh(word: &str) -> String {
        let out = std::process::Command::new("sh").arg("-c").arg(format!("printf %s {word}")).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn quoted_words_reach_the_command_exactly_whatever_they_hold() {
        for s in [
            "api (codex)",
            "it's",
            "'",
            "''",
            "$(touch /tmp/x) `id` $HOME",
            "a\\b",
            "semi; colon & amp | pipe",
            "*?[]",
            "new\nline",
            "!",
            "",
        ] {
            assert_eq!(through_sh(&shell_quote(s)), s, "{s:?}");
        }
    }

    #[test]
    fn labels_that_are_not_plain_or_not_unique_are_named_by_id() {
        let plain = view("codex:1:2", "api (codex)");
        assert_eq!(agent_arg(&plain, std::slice::from_ref(&plain)), "'api (codex)'");
        let quote = view("codex:3:4", "it's (codex)");
        assert_eq!(agent_arg(&quote, std::slice::from_ref(&quote)), "'it'\\''s (codex)'");
        for label in
            ["evil\u{1b}[31m (codex)", "a\u{202e}b (codex)", "zero\u{200b}width (codex)", "line\nbreak (codex)"]
        {
            let odd = view("codex:5:6", label);
            assert_eq!(agent_arg(&odd, std::slice::from_ref(&odd)), "'codex:5:6'", "{label:?}");
        }
        let (a, b) = (view("codex:7:8", "api (codex)"), view("codex:9:10", "API (codex)"));
        let team = [a.clone(), b];
        assert_eq!(agent_arg(&a, &team), "'codex:7:8'");
    }

    #[test]
    fn the_home_is_named_only_when_it_is_not_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(command_prefix(&home, Some(&home)), "agentfw");
        let other = home.join("it's here");
        let prefix = command_prefix(&other, Some(&home));
        assert_eq!(prefix, format!("AGENTFW_HOME={} agentfw", shell_quote(&other.display().to_string())));
        assert!(command_prefix(&home, None).starts_with("AGENTFW_HOME="));
    }
}
