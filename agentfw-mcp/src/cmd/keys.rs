//! `agentfw keys new|show|rotate`, `agentfw seal --to PUBFILE` and `agentfw open --from
//! PUBFILE`: this device's keys and sealed, signed envelopes between devices (TX2–TX5),
//! over `agentfw_core::seal`.
//!
//! The keys live in `<home>/keys/` (owner-only): `device.key` (mode 0600), dated backups of
//! rotated-away keys next to it, and `replay.json`, the replay cache that makes `open`
//! refuse an envelope it already opened, across runs.
//!
//! A PUBFILE holds a device's `keys show` line. It may also hold, after it, the rotation
//! notices that device printed (`keys rotate`): each is checked against the keys before it,
//! and the newest keys are the ones used. Blank lines and `#` comments are ignored.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentfw_core::message::MessageId;
use agentfw_core::seal::{self, DeviceKeys, Draft, Keyring, Limits, PublicBundle, ReplayCache, Rotation};
use agentfw_mcp::home::Home;
use agentfw_mcp::keystore::{KeyStore, write_private};
use agentfw_relay::client::Endpoint;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use super::{EXIT_REFUSED, fail, now};

/// The content type `seal` stamps on stdin's bytes.
const CONTENT_TYPE: &str = "application/octet-stream";

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Create this device's keys (refuses to overwrite existing ones).
    New(HomeArgs),
    /// Print this device's public key bundle: one line of text, safe to share.
    Show(HomeArgs),
    /// New keys; the old ones stop verifying once peers learn the rotation.
    Rotate(HomeArgs),
}

#[derive(Debug, clap::Args)]
pub struct HomeArgs {
    /// The state directory (default: `AGENTFW_HOME`, else `~/.local/share/agentfw`).
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct SealArgs {
    /// A file holding the recipient's `agentfw keys show` line.
    #[arg(long, value_name = "PUBFILE")]
    pub to: PathBuf,
    #[command(flatten)]
    pub home: HomeArgs,
}

#[derive(Debug, clap::Args)]
pub struct OpenArgs {
    /// A file holding the sender's `agentfw keys show` line.
    #[arg(long, value_name = "PUBFILE")]
    pub from: PathBuf,
    #[command(flatten)]
    pub home: HomeArgs,
}

pub fn run(command: &Command) -> ExitCode {
    let result = match command {
        Command::New(args) => new(args),
        Command::Show(args) => show(args),
        Command::Rotate(args) => {
            if let Err(code) = super::require_person(args.home.as_deref(), "keys rotate") {
                return code;
            }
            rotate(args)
        }
    };
    result.unwrap_or_else(fail)
}

/// A random number generator seeded from the operating system.
/// The key store of the home `args` names.
fn store(args: &HomeArgs) -> Result<KeyStore, String> {
    let home = Home::resolve(args.home.as_deref()).map_err(|e| e.to_string())?;
    KeyStore::open(&home)
}

fn rng() -> ChaCha20Rng {
    ChaCha20Rng::from_seed(agentfw_mcp::clock::random_seed())
}

fn new(args: &HomeArgs) -> Result<ExitCode, String> {
    let store = store(args)?;
    let path = store.key_file();
    if fs::symlink_metadata(&path).is_ok() {
        return Err(format!(
            "this device already has keys (`{}`); refusing to overwrite them. Use `agentfw keys rotate` for new keys",
            path.display()
        ));
    }
    let keys = DeviceKeys::generate(now(), &mut rng());
    store.save(&keys)?;
    eprintln!("created the keys of device {} in `{}` (keep this file private)", keys.device(), path.display());
    eprintln!("share this line with your peers (`agentfw keys show` prints it again):");
    outln!("{}", keys.public().to_line());
    Ok(ExitCode::SUCCESS)
}

fn show(args: &HomeArgs) -> Result<ExitCode, String> {
    let keys = store(args)?.load()?;
    outln!("{}", keys.public().to_line());
    Ok(ExitCode::SUCCESS)
}

fn rotate(args: &HomeArgs) -> Result<ExitCode, String> {
    let home = Home::resolve(args.home.as_deref()).map_err(|e| e.to_string())?;
    let store = KeyStore::open(&home)?;
    let old = store.load()?;
    let relay = relay_endpoint(&home)?;
    let pending = store.dir.join("device.key.next");
    if fs::symlink_metadata(&pending).is_ok() {
        return Err(format!(
            "an earlier rotation did not finish: `{}` holds the keys it made. If the relay lists this device as \
             superseded, move that file to `{}`; otherwise delete it. Then run `agentfw keys rotate` again if needed",
            pending.display(),
            store.key_file().display()
        ));
    }
    // With a relay, no daemon may log in with the old keys while the relay retires them:
    // stop the running one, and hold the daemon lock so that no agent starts another.
    let _lock = match &relay {
        Some(_) => {
            super::daemon::stop_running(&home).map_err(|e| e.to_string())?;
            Some(agentfw_mcp::daemon::lock(&home).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    let at = now();
    let (next, rotation) = old.rotate(at, &mut rng());
    let stamp = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(i64::try_from(at.as_millis()).unwrap_or(0))
        .map(|t| t.format("%Y%m%dT%H%M%S%.3fZ").to_string())
        .unwrap_or_else(|| at.as_millis().to_string());
    let backup = store.dir.join(format!("device-{stamp}-{}.key.old", old.device()));
    if fs::symlink_metadata(&backup).is_ok() {
        return Err(format!("`{}` already exists; try again", backup.display()));
    }
    write_private(&backup, old.to_key_file().as_bytes())?;
    let old_device = old.device();
    if let Some(relay) = &relay {
        let url = relay.url();
        // The new keys are on disk before the relay retires the old ones, so that a crash
        // or a full disk after that point cannot leave this device without working keys.
        write_private(&pending, next.to_key_file().as_bytes())?;
        if let Err(e) = tell_relay(relay, old, &rotation) {
            let _ = fs::remove_file(&pending);
            let _ = fs::remove_file(&backup);
            return Err(format!(
                "the relay at {url} did not take the rotation: {e}. Nothing changed: this device keeps its keys; \
                 try again when the relay answers"
            ));
        }
        store.save(&next).map_err(|e| {
            format!(
                "the relay retired the old keys, but the new ones could not be put in place ({e}): they are in `{}`; \
                 move that file to `{}`",
                pending.display(),
                store.key_file().display()
            )
        })?;
        let _ = fs::remove_file(&pending);
        set_relay_device(&home, next.device())?;
        eprintln!("the relay at {url} retired the old keys; the daemon logs in with the new ones from its next start");
    } else {
        store.save(&next)?;
    }
    eprintln!("rotated device {old_device} to {}; the old key file is kept in `{}`", next.device(), backup.display());
    eprintln!(
        "peers must apply the rotation: append the first line below (the signed rotation notice) to their copy of \
         this device's bundle, or replace that copy with the second line (the new bundle). Until they do, they \
         cannot open what this device seals, and once they do, the old keys no longer verify.{}",
        if relay.is_some() { " Devices on the relay learn it from the relay." } else { "" }
    );
    outln!("{}", rotation.to_line());
    outln!("{}", next.public().to_line());
    Ok(ExitCode::SUCCESS)
}

/// The relay this home joined (`agentfw join`), if any.
fn relay_endpoint(home: &Home) -> Result<Option<Endpoint>, String> {
    #[allow(clippy::disallowed_methods)] // the adapter reads its environment
    let user_home = std::env::var("HOME").ok();
    let config =
        agentfw_mcp::config::DaemonConfig::load(&home.config(), user_home.as_deref()).map_err(|e| e.to_string())?;
    let url = config.relay.url.trim();
    if url.is_empty() {
        return Ok(None);
    }
    Endpoint::new(url, config.relay.ca_file(&home.dir).as_deref()).map(Some).map_err(|e| e.to_string())
}

/// Sends the signed rotation notice to the relay over a connection logged in with the old
/// keys, and waits until the relay has retired them (it then ends the connection).
fn tell_relay(relay: &Endpoint, old: DeviceKeys, rotation: &Rotation) -> Result<(), String> {
    use agentfw_relay::client::{Client, ClientConfig, Incoming};
    const WAIT: std::time::Duration = std::time::Duration::from_secs(10);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let (client, mut incoming) = Client::connect(ClientConfig::new(relay.clone()), std::sync::Arc::new(old));
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut sent = false;
        let mut last_problem = None;
        let outcome = loop {
            let Ok(news) = tokio::time::timeout_at(deadline, incoming.recv()).await else {
                break Err(format!(
                    "no answer within {} s{}",
                    WAIT.as_secs(),
                    last_problem.map(|p| format!(" ({p})")).unwrap_or_default()
                ));
            };
            match news {
                None => break Err("the connection ended".to_owned()),
                Some(Incoming::Connected { .. }) if !sent => {
                    client.rotate(rotation);
                    sent = true;
                }
                Some(Incoming::Stopped { code, .. }) if code == "relay.rotated" => break Ok(()),
                Some(Incoming::Stopped { code, reason }) => break Err(format!("{reason} ({code})")),
                Some(Incoming::Notice { code, reason }) if sent => break Err(format!("{reason} ({code})")),
                Some(Incoming::Disconnected { reason }) => last_problem = Some(reason),
                Some(_) => {}
            }
        };
        client.stop();
        outcome
    })
}

/// Points the `[relay]` section of `config.toml` at this device's new id.
fn set_relay_device(home: &Home, device: agentfw_core::seal::DeviceId) -> Result<(), String> {
    let path = home.config();
    let text = fs::read_to_string(&path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e| format!("`{}` is not valid TOML: {e}", path.display()))?;
    let relay = doc
        .get_mut("relay")
        .and_then(toml_edit::Item::as_table_like_mut)
        .ok_or_else(|| format!("`{}` has no [relay] section any more", path.display()))?;
    relay.insert("device", toml_edit::value(device.to_string()));
    write_private(&path, doc.to_string().as_bytes())
}

/// The peer in PUBFILE: its bundle line, then any rotation notices, applied in order.
/// Returns the keyring that trusts it and its current bundle.
fn load_peer(path: &Path) -> Result<(Keyring, PublicBundle), String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
    let first = lines
        .next()
        .ok_or_else(|| format!("`{}` is empty: put a device's `agentfw keys show` line in it", path.display()))?;
    let mut current = PublicBundle::parse(first).map_err(|e| format!("`{}`: {e}", path.display()))?;
    let mut keyring = Keyring::new();
    keyring.trust(current.clone()).map_err(|e| format!("`{}`: {e}", path.display()))?;
    for line in lines {
        let rotation = Rotation::parse(line).map_err(|e| format!("`{}`: {e}", path.display()))?;
        keyring.apply_rotation(&rotation).map_err(|e| format!("`{}`: {e}", path.display()))?;
        current = rotation.new_bundle().clone();
    }
    Ok((keyring, current))
}

/// Stdin, refused when longer than `max` bytes.
fn read_stdin(max: usize, what: &str) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    io::stdin()
        .lock()
        .take(u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    if buf.len() > max {
        return Err(format!("{what} on stdin is too large: more than {max} bytes (the limit)"));
    }
    Ok(buf)
}

pub fn seal_cmd(args: &SealArgs) -> ExitCode {
    (|| {
        let limits = Limits::default();
        let store = store(&args.home)?;
        let keys = store.load()?;
        let (_, to) = load_peer(&args.to)?;
        let body = zeroize::Zeroizing::new(read_stdin(limits.max_plaintext, "the message")?);
        let at = now();
        let mut rng = rng();
        let draft = Draft { id: MessageId::generate(at, &mut rng), content_type: CONTENT_TYPE, body: &body };
        let envelope =
            seal::seal(&keys, &to, &draft, &limits, at, &mut rng).map_err(|e| format!("cannot seal: {e}"))?;
        let mut out = io::stdout().lock();
        out.write_all(envelope.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| format!("cannot write stdout: {e}"))?;
        Ok::<ExitCode, String>(ExitCode::SUCCESS)
    })()
    .unwrap_or_else(fail)
}

pub fn open_cmd(args: &OpenArgs) -> ExitCode {
    let result = (|| {
        let limits = Limits::default();
        let store = store(&args.home)?;
        let keys = store.load()?;
        let (keyring, _) = load_peer(&args.from)?;
        let envelope = read_stdin(limits.max_envelope(), "the envelope")?;
        let replay_path = store.replay_file();
        let _lock = lock(&store.dir.join("replay.lock"))?;
        let mut replay = load_replay(&replay_path)?;
        let opened = seal::open(&keys, &keyring, &mut replay, &envelope, &limits, now())
            .map_err(|e| format!("refused to open the envelope: {e}"))?;
        let json = serde_json::to_vec(&replay).map_err(|e| format!("cannot save the replay cache: {e}"))?;
        write_private(&replay_path, &json)?;
        let mut out = io::stdout().lock();
        out.write_all(&opened.body).and_then(|()| out.flush()).map_err(|e| format!("cannot write stdout: {e}"))?;
        Ok::<ExitCode, String>(ExitCode::SUCCESS)
    })();
    result.unwrap_or_else(|message| {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_REFUSED)
    })
}

/// The replay cache kept in the home, empty if there is none yet. One that cannot be read
/// is an error, never silently replaced: that would let replays through.
fn load_replay(path: &Path) -> Result<ReplayCache, String> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "the replay cache `{}` is damaged ({e}); remove it only if no replayed envelope can reach you",
                path.display()
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(ReplayCache::default()),
        Err(e) => Err(format!("cannot read `{}`: {e}", path.display())),
    }
}

/// An exclusive lock on `path`, held until the returned file is dropped, so two `open`s
/// cannot both accept the same envelope.
#[allow(clippy::disallowed_types)] // an adapter: the lock file is its own
fn lock(path: &Path) -> Result<fs::File, String> {
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot open `{}`: {e}", path.display()))?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| format!("cannot lock `{}`: {e}", path.display()))?;
    Ok(file)
}
