//! `agentfw block WHO` / `agentfw unblock WHO`: the `blocked` list of the trust file (TR1)
//! in agentfw's state directory (the daemon's home, where it reads the file on every send
//! and delivery), created with defaults if missing, owner-only. Both change who may talk,
//! so both run only for a person (AM6): an agent must not unblock itself, nor block the
//! teammates that would report it.

use std::process::ExitCode;

use agentfw_core::policy::SourceFile;
use agentfw_core::trust::{self, TrustError};

use agentfw_mcp::home::Home;

use super::{EXIT_ERROR, fail, files};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A label from `agentfw team`, such as `web (claude)`, or an agent id.
    who: String,
}

pub fn block(args: &Args) -> ExitCode {
    edit(&args.who, true)
}

pub fn unblock(args: &Args) -> ExitCode {
    edit(&args.who, false)
}

fn edit(who: &str, block: bool) -> ExitCode {
    let state = match Home::resolve(None) {
        Ok(home) => home.dir,
        Err(e) => return fail(e),
    };
    if let Err(code) = super::require_person(Some(&state), if block { "block" } else { "unblock" }) {
        return code;
    }
    let path = state.join(trust::FILE_NAME);
    let text = match files::read(&path) {
        Ok(text) => text,
        Err(e) => return fail(e),
    };
    let file = SourceFile::new(path.display().to_string(), text.clone().unwrap_or_default());
    let edited = if block { trust::block(&file, who) } else { trust::unblock(&file, who) };
    let who = who.trim();
    match edited {
        Ok(Some(new)) => {
            if let Err(e) = files::owner_only_dir(&state).and_then(|()| files::write_atomic(&path, &new, Some(0o600))) {
                return fail(e);
            }
            if block {
                outln!("blocked `{who}`: its messages are refused on this machine ({})", path.display());
                if text.is_none() {
                    outln!(
                        "note: this created the trust file with its defaults: agents not listed under `teammates:` are refused too (`unknown_teammates: {{policy: reject}}`); write `policy: allow` there to let them through"
                    );
                }
            } else {
                outln!("unblocked `{who}` ({})", path.display());
            }
            ExitCode::SUCCESS
        }
        Ok(None) => {
            if block {
                outln!("`{who}` is already blocked ({})", path.display());
            } else {
                outln!("`{who}` is not blocked ({})", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(TrustError::Invalid(diagnostics)) => {
            eprintln!("{diagnostics}\n");
            eprintln!("error: the trust file `{}` has errors; fix them and run again", path.display());
            ExitCode::from(EXIT_ERROR)
        }
        Err(e) => fail(e),
    }
}
