//! `agentfw hook HARNESS EVENT`: what the installed hooks run (WK1). The output formats per
//! harness are in [`crate::hooks`]; the daemon side is the [`Client`] behind [`DaemonBackend`].

use std::io::{Read, Write};
use std::process::ExitCode;

use agentfw_mcp::client::Client;
use agentfw_mcp::home::Home;
use agentfw_mcp::{clock, render};

use crate::harness::Harness;
use crate::hooks::{self, BackendError, Event, HookBackend, HookInput, Outcome, Pending};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The harness running the hook.
    #[arg(value_enum)]
    harness: Harness,
    /// The hook event: `session-start`, `user-prompt-submit`, `post-tool-use`, `stop`
    /// (Claude Code, Codex); `session-start`, `before-agent`, `after-tool`, `after-agent`
    /// (Gemini CLI); `before-submit-prompt`, `stop` (Cursor). The harness's own names work too.
    event: String,
}

/// The daemon as hooks see it. The connection is opened on first use: only SessionStart may
/// start a daemon (the session's MCP server is starting too); other events have nothing to
/// do without one.
struct DaemonBackend {
    home: Home,
    client: Option<Client>,
}

impl DaemonBackend {
    fn client(&mut self, start: bool) -> Result<&mut Client, BackendError> {
        let client = match self.client.take() {
            Some(client) => client,
            None if start => Client::connect_or_start(&self.home).map_err(fail)?,
            None => Client::connect(&self.home).map_err(fail)?,
        };
        Ok(self.client.insert(client))
    }
}

fn fail(e: impl std::fmt::Display) -> BackendError {
    BackendError(e.to_string())
}

impl HookBackend for DaemonBackend {
    fn session_started(&mut self, harness: Harness, session: &HookInput) -> Result<(), BackendError> {
        let client = self.client(true)?;
        if let Some(id) = &session.session_id {
            client.session_start(harness.as_str(), id).map_err(fail)?;
        }
        Ok(())
    }

    fn human_turn(&mut self, harness: Harness, session: &HookInput) -> Result<(), BackendError> {
        let prompt = session.prompt.as_deref().unwrap_or_default();
        self.client(false)?.user_prompt(harness.as_str(), session.session_id.as_deref(), prompt).map_err(fail)?;
        Ok(())
    }

    fn take_pending(&mut self, _harness: Harness, _session: &HookInput) -> Result<Vec<Pending>, BackendError> {
        let result = self.client(false)?.pending(Some(&clock::token())).map_err(fail)?;
        let mut pending: Vec<Pending> =
            result.deliveries.iter().map(|d| Pending { id: d.id.clone(), fenced: d.fenced.clone() }).collect();
        if !result.refused.is_empty() || !result.notes.is_empty() {
            // Refusals and thread notes carry no message text; render them as agentfw's own note.
            let only_notes = agentfw_mcp::proto::InboxResult { deliveries: Vec::new(), ..result };
            pending.push(Pending { id: "agentfw".to_owned(), fenced: render::inbox(&only_notes) });
        }
        Ok(pending)
    }
}

fn backend() -> Result<Box<dyn HookBackend>, BackendError> {
    let home = Home::resolve(None).map_err(fail)?;
    Ok(Box::new(DaemonBackend { home, client: None }))
}

pub fn run(args: &Args) -> ExitCode {
    let event = match Event::parse(args.harness, &args.event) {
        Ok(event) => event,
        Err(e) => {
            // A misconfigured hook must not break the harness: say why, change nothing.
            eprintln!("agentfw hook {}: {e}", args.harness);
            return ExitCode::SUCCESS;
        }
    };
    let mut stdin = String::new();
    let outcome = match std::io::stdin().lock().read_to_string(&mut stdin) {
        Err(e) => hooks::without_backend(args.harness, event, &BackendError(format!("cannot read stdin: {e}"))),
        Ok(_) => match backend() {
            Ok(mut backend) => hooks::run(args.harness, event, &stdin, backend.as_mut()),
            Err(why) => match hooks::HookInput::parse(args.harness, &stdin) {
                Err(e) => hooks::without_backend(args.harness, event, &BackendError(e.to_string())),
                Ok(_) => hooks::without_backend(args.harness, event, &why),
            },
        },
    };
    emit(&outcome)
}

fn emit(outcome: &Outcome) -> ExitCode {
    for line in &outcome.stderr {
        eprintln!("{line}");
    }
    let mut out = std::io::stdout().lock();
    if !outcome.output.stdout.is_empty() {
        // A harness that closed the pipe has stopped listening; there is no one to tell.
        let _ = writeln!(out, "{}", outcome.output.stdout).and_then(|()| out.flush());
    }
    ExitCode::from(outcome.output.code)
}
