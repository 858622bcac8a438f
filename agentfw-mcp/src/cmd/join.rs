//! `agentfw join URL INVITE`: enroll this device with a relay (AM5) and remember the relay
//! in the home's `config.toml`, so that the daemon keeps a connection to it. With
//! `--ca FILE`, an `https://` relay's certificate must chain to that CA (a relay with its
//! own CA); the file's absolute path is remembered with the relay.

use std::path::PathBuf;
use std::process::ExitCode;

use agentfw_core::seal::DeviceKeys;
use agentfw_mcp::home::Home;
use agentfw_mcp::keystore::{KeyStore, write_private};
use agentfw_mcp::relay_link::hostname;
use agentfw_relay::client::Endpoint;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use super::{EXIT_REFUSED, fail, now};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The relay, `https://HOST[:PORT]` (or `http://HOST:PORT` on a trusted network).
    url: String,
    /// The one-time invite from the relay's admin (`agentfw-relay invite`).
    invite: String,
    /// This machine's name on the relay (default: the host name).
    #[arg(long)]
    name: Option<String>,
    /// Trust this CA certificate (PEM) alone for the relay's TLS certificate, instead of
    /// the system's roots: for a relay with its own CA.
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// The state directory (default: `AGENTFW_HOME`, else `~/.local/share/agentfw`).
    #[arg(long, value_name = "DIR")]
    home: Option<PathBuf>,
}

pub fn run(args: &Args) -> ExitCode {
    if let Err(code) = super::require_person(args.home.as_deref(), "join") {
        return code;
    }
    match join(args) {
        Ok(code) => code,
        Err(Refused(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(EXIT_REFUSED)
        }
        Err(Failed(message)) => fail(message),
    }
}

enum Outcome {
    /// The relay said no (a used invite, an enrolled device).
    Refused(String),
    Failed(String),
}
use Outcome::{Failed, Refused};

fn join(args: &Args) -> Result<ExitCode, Outcome> {
    // The CA file is remembered by its absolute path: the daemon does not start where
    // this command ran.
    let ca = match &args.ca {
        Some(path) => Some(
            std::fs::canonicalize(path)
                .map_err(|e| Failed(format!("cannot use the CA file `{}`: {e}", path.display())))?,
        ),
        None => None,
    };
    let ca_text = match &ca {
        Some(path) => Some(path.to_str().ok_or_else(|| {
            Failed(format!("the CA file's path `{}` is not UTF-8: move the file to a UTF-8 path", path.display()))
        })?),
        None => None,
    };
    let relay = Endpoint::new(&args.url, ca.as_deref()).map_err(|e| Failed(e.to_string()))?;
    let url = relay.url();
    let invite = args.invite.trim();
    if invite.is_empty() {
        return Err(Failed("the invite is empty: ask the relay's admin for one (`agentfw-relay invite`)".to_owned()));
    }
    let name = args.name.as_deref().map(str::trim).filter(|n| !n.is_empty()).map_or_else(hostname, str::to_owned);
    let home = Home::resolve(args.home.as_deref()).map_err(|e| Failed(e.to_string()))?;
    let store = KeyStore::open(&home).map_err(Failed)?;
    let keys = if store.exists() {
        store.load().map_err(Failed)?
    } else {
        let keys = DeviceKeys::generate(now(), &mut ChaCha20Rng::from_seed(agentfw_mcp::clock::random_seed()));
        store.save(&keys).map_err(Failed)?;
        eprintln!("created the keys of device {} in `{}`", keys.device(), store.key_file().display());
        keys
    };
    let config_path = home.config();
    let text = match std::fs::read_to_string(&config_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Failed(format!("cannot read `{}`: {e}", config_path.display()))),
    };
    // Check the configuration before enrolling, so a broken file does not leave the
    // device enrolled with nowhere to remember it.
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e| Failed(format!("`{}` is not valid TOML: {e}", config_path.display())))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failed(format!("cannot start the async runtime: {e}")))?;
    let enrolled =
        runtime.block_on(agentfw_relay::client::join(&relay, invite, &keys, &name)).map_err(|e| match e {
            agentfw_relay::client::ClientError::Refused { .. } => Refused(e.to_string()),
            other => Failed(other.to_string()),
        })?;
    let mut section = toml_edit::Table::new();
    section.insert("url", toml_edit::value(url));
    section.insert("device", toml_edit::value(enrolled.device.to_string()));
    section.insert("name", toml_edit::value(name.as_str()));
    if let Some(ca) = ca_text {
        section.insert("ca", toml_edit::value(ca));
    }
    doc.insert("relay", toml_edit::Item::Table(section));
    write_private(&config_path, doc.to_string().as_bytes()).map_err(Failed)?;
    outln!("joined the relay at {url} as device {} ({name})", enrolled.device);
    if home.daemon_pid().is_some() && home.socket.exists() {
        eprintln!(
            "the running daemon connects to the relay when it starts again: `agentfw daemon --stop` (the next agent session starts it)"
        );
    } else {
        eprintln!("the daemon keeps a connection to it from its next start");
    }
    Ok(ExitCode::SUCCESS)
}
