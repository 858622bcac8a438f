//! `agentfw dashboard`: ask the daemon to serve its live page on 127.0.0.1 and print the
//! URL, which holds a one-time token. An admin request: the daemon refuses it from inside
//! an agent session, since the page shows every agent's metadata.

use std::process::ExitCode;

use agentfw_mcp::home::Home;
use agentfw_mcp::proto::DashboardResult;

use super::{connect, daemon_error, fail, print_json};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Listen on this port of 127.0.0.1 (default: a free one).
    #[arg(long, value_name = "N")]
    port: Option<u16>,
    /// Open the page in the default browser (`xdg-open`).
    #[arg(long, conflicts_with = "stop")]
    open: bool,
    /// Show the text of messages the firewall accepts while the page is open (off by
    /// default: the page shows metadata only). Refused text is never shown.
    #[arg(long, conflicts_with = "stop")]
    show_text: bool,
    /// Stop serving the page.
    #[arg(long)]
    stop: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> ExitCode {
    let mut client = match connect(!args.stop) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let result = match client.dashboard(args.port, args.show_text, args.stop) {
        Ok(r) => r,
        Err(e) => return daemon_error(&e),
    };
    if args.json {
        return print_json(&result);
    }
    let Some(url) = &result.url else {
        outln!("{}", result.message);
        return ExitCode::SUCCESS;
    };
    outln!("{url}");
    eprintln!(
        "{}: open the link above in a browser on this machine; it works once (run `agentfw dashboard` again for another).",
        result.message
    );
    if result.show_text {
        eprintln!("The page shows the text of messages the firewall accepts from now on.");
    }
    eprintln!("It stops with `agentfw dashboard --stop` or when the daemon stops.");
    if args.open {
        return open(&result);
    }
    ExitCode::SUCCESS
}

/// Open the page with `xdg-open`, through a file in the home (owner-only) that forwards to
/// the URL: a URL on a command line is readable by every user of the machine for as long as
/// the browser runs.
fn open(result: &DashboardResult) -> ExitCode {
    let Some(url) = &result.url else { return ExitCode::SUCCESS };
    let home = match Home::resolve(None) {
        Ok(h) => h,
        Err(e) => return fail(e),
    };
    let page = home.dir.join("dashboard.html");
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\">\
         <meta http-equiv=\"refresh\" content=\"0;url={url}\"><title>agentfw dashboard</title>\n"
    );
    if let Err(e) = write_private(&page, &html) {
        return fail(format!("cannot write `{}`: {e}", page.display()));
    }
    match std::process::Command::new("xdg-open")
        .arg(&page)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
    {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => fail(format!("`xdg-open` failed ({s}); open the link above yourself")),
        Err(e) => fail(format!("cannot run `xdg-open` ({e}); open the link above yourself")),
    }
}

#[allow(clippy::disallowed_types)] // the adapter writes files
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().create(true).write(true).truncate(true).mode(0o600).open(path)?;
    file.write_all(text.as_bytes())
}
