//! Text for people and models: the team, an inbox, times. Shared by the MCP tools and the
//! command line so both say the same thing.

use agentfw_core::time::Timestamp;

use crate::proto::{AgentView, InboxResult, TeamResult};

/// A time as RFC 3339 (UTC).
pub fn time(ms: u64) -> String {
    Timestamp::from_millis(ms).to_string()
}

/// Notes on one agent: contained, admission, unverified, components.
fn notes(a: &AgentView) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(c) = &a.contained {
        notes.push(format!("contained (quarantined) until {}: {}", time(c.until), c.reason));
    }
    if let Some(verdict) = &a.admission {
        notes.push(verdict.clone());
    }
    if let Some(why) = &a.unverified {
        notes.push(format!("unverified: {why}"));
    }
    if let Some(e) = &a.components_error {
        notes.push(format!("components unknown: {e}"));
    }
    notes
}

/// `, on machine NAME` for an agent on another device (through the relay).
fn on_machine(a: &AgentView) -> String {
    a.machine.as_ref().map(|m| format!(", on machine {m}")).unwrap_or_default()
}

/// What `list_team` shows the model.
pub fn team_for_model(team: &TeamResult) -> String {
    let mut out = String::new();
    match &team.you {
        Some(you) => out.push_str(&format!("You are {you}.\n")),
        None => out.push_str("agentfw could not tell which agent session you are.\n"),
    }
    let others: Vec<&AgentView> = team.agents.iter().filter(|a| !a.you).collect();
    let reachable: Vec<&&AgentView> = others.iter().filter(|a| a.live && a.contained.is_none()).collect();
    let not: Vec<&&AgentView> = others.iter().filter(|a| !a.live || a.contained.is_some()).collect();
    if reachable.is_empty() {
        out.push_str("No other agent is reachable right now.\n");
    } else {
        out.push_str("Reachable agents (give send_message's `to` a label or an id):\n");
        for a in reachable {
            out.push_str(&format!(
                "- {} — agent {}, project {}{}, id {}, live\n",
                a.label,
                a.agent,
                a.project,
                on_machine(a),
                a.id
            ));
            for n in notes(a) {
                out.push_str(&format!("    {n}\n"));
            }
        }
    }
    if !not.is_empty() {
        out.push_str("Not reachable:\n");
        for a in not {
            let state = if a.live { "live but contained" } else { "gone (its session ended)" };
            out.push_str(&format!(
                "- {} — agent {}, project {}{}, id {}, {state}\n",
                a.label,
                a.agent,
                a.project,
                on_machine(a),
                a.id
            ));
            for n in notes(a) {
                out.push_str(&format!("    {n}\n"));
            }
        }
    }
    if let Some(me) = team.agents.iter().find(|a| a.you) {
        for n in notes(me) {
            out.push_str(&format!("Note on you: {n}\n"));
        }
    }
    out.trim_end().to_owned()
}

/// `agentfw team`: one line per agent, then its notes indented.
pub fn team_table(team: &TeamResult) -> String {
    if team.agents.is_empty() {
        return "no agent sessions seen yet".to_owned();
    }
    let width = team.agents.iter().map(|a| a.label.len()).max().unwrap_or(0).max(5);
    let mut out = format!("{:<width$}  {:<5}  {}\n", "AGENT", "STATE", "ID");
    for a in &team.agents {
        let state = match (a.live, a.contained.is_some()) {
            (false, _) => "gone",
            (true, true) => "held",
            (true, false) => "live",
        };
        let you = if a.you { "  (you)" } else { "" };
        let machine = a.machine.as_ref().map(|m| format!("  (on {m})")).unwrap_or_default();
        out.push_str(&format!("{:<width$}  {state:<5}  {}{you}{machine}\n", a.label, a.id));
        for n in notes(a) {
            out.push_str(&format!("{:<width$}    {n}\n", ""));
        }
    }
    out.push_str(&format!("admission: {}", team.admission_mode));
    out
}

/// What `check_inbox` (and `agentfw inbox`) shows: the fenced deliveries as they are,
/// then what was refused on delivery (without its text), notes, and how many still wait.
pub fn inbox(result: &InboxResult) -> String {
    let mut parts: Vec<String> = result.deliveries.iter().map(|d| d.fenced.clone()).collect();
    if !result.refused.is_empty() {
        let mut s = String::from("Refused on delivery (their text is withheld; tell your user):");
        for r in &result.refused {
            s.push_str(&format!("\n- message {} from {}: {}", r.id, r.from, r.reason));
        }
        parts.push(s);
    }
    for note in &result.notes {
        parts.push(format!("Note from agentfw: {note}"));
    }
    for d in &result.deliveries {
        for w in &d.warnings {
            parts.push(format!("agentfw warning about message {}: {w}", d.id));
        }
    }
    if result.held > 0 {
        let s = if result.held == 1 { " is" } else { "s are" };
        parts.push(format!(
            "{} more message{s} waiting (held or not yet due); call check_inbox again later.",
            result.held
        ));
    }
    if parts.is_empty() {
        return "No new messages.".to_owned();
    }
    parts.join("\n\n")
}
