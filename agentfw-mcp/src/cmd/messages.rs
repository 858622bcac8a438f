//! `agentfw send` and `agentfw inbox`: messaging for agents that can only run shell
//! commands. The daemon decides who is sending from this process's own ancestry.

use std::process::ExitCode;

use agentfw_mcp::clock;
use agentfw_mcp::render;

use super::{connect, daemon_error, print_json};

#[derive(Debug, clap::Args)]
pub struct SendArgs {
    /// The recipient: a label such as `api (codex)`, a project name, or an agent id.
    to: String,
    /// The message text.
    text: String,
    /// The id of the message this answers.
    #[arg(long, value_name = "ID")]
    reply_to: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct InboxArgs {
    /// Print the deliveries as JSON.
    #[arg(long)]
    json: bool,
}

pub fn send(args: &SendArgs) -> ExitCode {
    let mut client = match connect(true) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let key = clock::token();
    match client.send(&args.to, &args.text, args.reply_to.as_deref(), Some(&key)) {
        Ok(sent) if args.json => print_json(&sent),
        Ok(sent) => {
            outln!("sent to {} as {}: message {} (thread {})", sent.to, sent.from, sent.id, sent.thread);
            for w in &sent.warnings {
                eprintln!("warning: {w}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => daemon_error(&e),
    }
}

pub fn inbox(args: &InboxArgs) -> ExitCode {
    let mut client = match connect(true) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let batch = clock::token();
    match client.inbox(Some(&batch)) {
        Ok(result) if args.json => print_json(&result),
        Ok(result) => {
            outln!("{}", render::inbox(&result));
            ExitCode::SUCCESS
        }
        Err(e) => daemon_error(&e),
    }
}
