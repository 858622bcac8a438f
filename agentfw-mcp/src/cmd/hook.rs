//! `agentfw hook HARNESS EVENT`: what the installed harness hooks run.
//!
//! The daemon side is complete ([`agentfw_mcp::client`]: the session id on SessionStart,
//! a person's prompt on UserPromptSubmit, pending messages for this session); the output
//! here is the shape Claude Code and Codex share (`hookSpecificOutput.additionalContext`,
//! and `decision: block` on Stop, never twice in a row). Per-harness formats (Cursor,
//! Gemini) belong with the installer.
//!
//! A hook must never break its session: every failure is logged to stderr and the hook
//! exits 0 with no output.

use std::io::Read;
use std::process::ExitCode;

use agentfw_mcp::client::Client;
use agentfw_mcp::home::Home;
use agentfw_mcp::{clock, render};
use serde::Deserialize;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// claude, codex, cursor or gemini.
    harness: String,
    /// session-start, user-prompt-submit, post-tool-use or stop.
    event: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HookInput {
    session_id: Option<String>,
    prompt: Option<String>,
    stop_hook_active: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    SessionStart,
    UserPromptSubmit,
    PostToolUse,
    Stop,
}

impl Event {
    fn parse(text: &str) -> Option<Self> {
        let norm: String = text.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase();
        match norm.as_str() {
            "sessionstart" => Some(Event::SessionStart),
            "userpromptsubmit" | "beforesubmitprompt" | "beforeagent" => Some(Event::UserPromptSubmit),
            "posttooluse" | "aftertool" | "aftermcpexecution" => Some(Event::PostToolUse),
            "stop" | "afteragent" => Some(Event::Stop),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::PostToolUse => "PostToolUse",
            Event::Stop => "Stop",
        }
    }
}

pub fn run(args: &Args) -> ExitCode {
    if let Err(e) = hook(args) {
        eprintln!("agentfw hook: {e}");
    }
    ExitCode::SUCCESS
}

fn hook(args: &Args) -> Result<(), String> {
    let event = Event::parse(&args.event).ok_or_else(|| format!("unknown hook event `{}`", args.event))?;
    let mut raw = Vec::new();
    std::io::stdin().take(1 << 20).read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let input: HookInput = if raw.iter().all(u8::is_ascii_whitespace) {
        HookInput::default()
    } else {
        serde_json::from_slice(&raw).map_err(|e| format!("hook input is not JSON: {e}"))?
    };
    let home = Home::resolve(None).map_err(|e| e.to_string())?;
    // Only SessionStart may start the daemon (the session's MCP server is starting too);
    // the other events have nothing to do without one.
    let mut client = match event {
        Event::SessionStart => Client::connect_or_start(&home),
        _ => Client::connect(&home),
    }
    .map_err(|e| e.to_string())?;
    match event {
        Event::SessionStart => {
            if let Some(id) = &input.session_id {
                client.session_start(&args.harness, id).map_err(|e| e.to_string())?;
            }
        }
        Event::UserPromptSubmit => {
            let prompt = input.prompt.as_deref().unwrap_or_default();
            client.user_prompt(&args.harness, input.session_id.as_deref(), prompt).map_err(|e| e.to_string())?;
        }
        Event::Stop if input.stop_hook_active => return Ok(()),
        Event::PostToolUse | Event::Stop => {}
    }
    let pending = client.pending(Some(&clock::token())).map_err(|e| e.to_string())?;
    if pending.deliveries.is_empty() && pending.refused.is_empty() && pending.notes.is_empty() {
        return Ok(());
    }
    let text = render::inbox(&pending);
    let output = match event {
        Event::Stop => serde_json::json!({"decision": "block", "reason": text}),
        _ => serde_json::json!({"hookSpecificOutput": {"hookEventName": event.name(), "additionalContext": text}}),
    };
    println!("{output}");
    Ok(())
}
