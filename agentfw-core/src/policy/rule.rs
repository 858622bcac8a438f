//! Rule files: what a rule says, read from YAML with a position for every part of it.
//!
//! ```yaml
//! id: deny-forwarded-commands
//! on: message.sending          # or message.delivering, or a list of both
//! when: >
//!   message.hops >= 2 && message.folded.matches_set('forwarded-commands')
//! verdict: deny
//! reason: the message relays {pattern} from another agent
//! ```
//!
//! A file holds one rule, several rules as YAML documents separated by `---`, or a list of
//! rules. `{pattern}` in a reason is replaced by the description of the pattern that
//! matched, when the rule tests a pattern set.

use serde::Serialize;

use super::Stage;
use super::diagnostic::{Diagnostic, SourceFile};
use super::yaml::{self, Fields, Node, NodeKind};

/// What a rule decides when its condition holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    Deny,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
        }
    }
}

/// A loaded rule as people see it: for `agentfw rules list` and explanations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RuleInfo {
    pub id: String,
    /// The stages the rule runs at, from `on:`.
    pub on: Vec<Stage>,
    /// The CEL condition as written.
    pub when: String,
    pub verdict: Verdict,
    pub reason: String,
    pub description: Option<String>,
    /// The file the rule came from, as the caller named it, and the line of its `id`.
    pub file: String,
    pub line: usize,
}

/// A rule read from YAML but not yet compiled.
pub(crate) struct Draft<'f> {
    pub info: RuleInfo,
    pub file: &'f SourceFile,
    pub id_node: Node,
    pub when_node: Node,
}

const RULE_KEYS: &[&str] = &["id", "on", "when", "verdict", "reason", "description"];
const EVENTS: &[&str] = &["message.sending", "message.delivering"];

/// Reads every rule of `file`.
pub(crate) fn read<'f>(file: &'f SourceFile, diags: &mut Vec<Diagnostic>) -> Vec<Draft<'f>> {
    let docs = match yaml::documents(file) {
        Ok(docs) => docs,
        Err(d) => {
            diags.push(*d);
            return Vec::new();
        }
    };
    let mut drafts = Vec::new();
    for doc in &docs {
        match &doc.kind {
            NodeKind::Seq(items) => {
                drafts.extend(items.iter().filter_map(|item| read_rule(item, file, diags)));
            }
            _ if doc.is_null() => {}
            _ => drafts.extend(read_rule(doc, file, diags)),
        }
    }
    drafts
}

fn read_rule<'f>(node: &Node, file: &'f SourceFile, diags: &mut Vec<Diagnostic>) -> Option<Draft<'f>> {
    let what = "a rule";
    let fields = Fields::of(node, what, RULE_KEYS, file, diags)?;
    let before = diags.len();
    let id = fields.string("id", what, file, diags);
    if let Some((id, node)) = id {
        let valid = id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            diags.push(
                Diagnostic::at(
                    "policy.invalid_id",
                    format!("rule id `{id}` may only use letters, digits, `-`, `_` and `.`"),
                    file,
                    node.span,
                )
                .with_hint("ids are shown to agents and people; keep them short, e.g. `deny-private-keys`"),
            );
        }
    }
    let on = fields.require("on", what, file, diags).map(|node| read_events(node, file, diags)).unwrap_or_default();
    let when = fields.string("when", what, file, diags);
    let verdict = fields.string("verdict", what, file, diags).and_then(|(v, node)| match v {
        "deny" => Some(Verdict::Deny),
        "allow" => Some(Verdict::Allow),
        other => {
            let mut d =
                Diagnostic::at("policy.invalid_verdict", format!("`{other}` is not a verdict"), file, node.span)
                    .with_hint("a verdict is `deny` or `allow`");
            if let Some(near) = yaml::closest(other, &["deny", "allow"]) {
                d = d.with_hint(format!("did you mean `{near}`? a verdict is `deny` or `allow`"));
            }
            diags.push(d);
            None
        }
    });
    let reason = fields.string("reason", what, file, diags);
    let description = fields.get("description").and_then(Node::as_str).map(|s| s.trim().to_owned());
    if diags.len() > before {
        return None;
    }
    let (id, id_node) = id?;
    let (when, when_node) = when?;
    let line = Diagnostic::at("", "", file, id_node.span).line;
    Some(Draft {
        info: RuleInfo {
            id: id.to_owned(),
            on,
            when: when.to_owned(),
            verdict: verdict?,
            reason: reason?.0.trim().to_owned(),
            description,
            file: file.name.clone(),
            line,
        },
        file,
        id_node: id_node.clone(),
        when_node: when_node.clone(),
    })
}

fn read_events(node: &Node, file: &SourceFile, diags: &mut Vec<Diagnostic>) -> Vec<Stage> {
    let items: Vec<&Node> = match &node.kind {
        NodeKind::Seq(items) => items.iter().collect(),
        _ => vec![node],
    };
    let mut stages = Vec::new();
    let before = diags.len();
    for item in items {
        match item.as_str() {
            Some("message.sending") => stages.push(Stage::Sending),
            Some("message.delivering") => stages.push(Stage::Delivering),
            other => {
                let other = other.unwrap_or_default();
                let mut d = Diagnostic::at(
                    "policy.unknown_event",
                    format!("`{other}` is not an event a rule can run on"),
                    file,
                    item.span,
                );
                d = match yaml::closest(other, EVENTS) {
                    Some(near) => d.with_hint(format!("did you mean `{near}`?")),
                    None => d.with_hint("rules run on `message.sending`, `message.delivering`, or a list of both"),
                };
                diags.push(d);
            }
        }
    }
    stages.dedup();
    if stages.is_empty() && diags.len() == before {
        diags.push(Diagnostic::at("policy.unknown_event", "`on` names no event", file, node.span));
    }
    stages
}
