//! The daemon's link to a relay (`agentfw daemon --relay URL`, or the relay `agentfw join`
//! wrote into `config.toml`): one WebSocket kept open by `agentfw_relay::client` with
//! reconnects and backoff, sealing and opening around it. The engine thread owns every
//! decision and every write; this task only moves bytes and keys:
//!
//! - **Out.** The engine accepts a message for an agent on another device, writes it to
//!   its `outbox` table in the send's transaction, and after the commit hands it here
//!   ([`ToLink::Submit`]). The link seals it to the recipient device (core `seal`, the
//!   routing bound in by `Routed::seal`) and submits it; the relay's answer goes back to
//!   the engine ([`FromLink::Stored`] or [`FromLink::Refused`]), which then deletes the
//!   outbox row. Until then the row stays, and a restarted daemon submits it again.
//! - **In.** A delivery is checked against the sender device's bundle (from the relay's
//!   directory), opened, and handed to the engine ([`FromLink::Delivery`]), which stores it
//!   in the recipient's inbox unless that message id is already there, and only after that
//!   commit acknowledges it to the relay ([`ToLink::Ack`]). A delivery that arrives again
//!   (after a reconnect) is acknowledged and dropped by the engine.
//! - **Policy and directory** frames go to the engine as they are.
//!
//! The body of an envelope is the sender's accepted message (`Accepted`, JSON): the
//! receiving firewall judges it again on delivery, with its provenance (PR2, PV2).

use std::sync::Arc;

use agentfw_core::admission::ComponentId;
use agentfw_core::firewall::{Accepted, Event};
use agentfw_core::message::{Agent, MessageId};
use agentfw_core::seal::{self, DeviceId, DeviceKeys, Keyring, Limits, PublicBundle, ReplayCache, Rotation};
use agentfw_relay::client::{Client, ClientConfig, ClientError, Delivery, Endpoint, Incoming};
use agentfw_relay::protocol::{DirectoryFrame, PolicyFrame, Routed};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tokio::sync::mpsc;

use crate::clock;
use crate::config::RelayConfig;
use crate::home::Home;
use crate::keystore::KeyStore;

/// The media type of an envelope's body: the sender's `Accepted`, as JSON.
pub const MEDIA_TYPE: &str = "application/vnd.agentfw.accepted+json";

/// A message accepted for an agent on another device, waiting in the outbox.
#[derive(Clone, Debug)]
pub struct Outbound {
    pub message: Accepted,
    pub device: DeviceId,
}

/// From the engine to the link.
#[derive(Debug)]
pub enum ToLink {
    /// Seal and submit these; answer each with `Stored` or `Refused`.
    Submit(Vec<Outbound>),
    /// Firewall events (metadata only) for the relay's audit log and containment.
    Report(Vec<Event>),
    /// The agents live on this device now.
    Announce(Vec<Agent>),
    /// Deliveries the engine has committed to its inbox.
    Ack(Vec<u64>),
    /// An agent's loaded components, for its admission refresh at the relay (AD5).
    Components { agent: Agent, components: Vec<ComponentId> },
}

/// From the link to the engine.
#[derive(Debug)]
pub enum FromLink {
    Connected {
        device: DeviceId,
    },
    Disconnected {
        reason: String,
    },
    /// The relay will not take this device any more (revoked, unknown, rotated away).
    Stopped {
        code: String,
        reason: String,
    },
    /// An opened delivery, to store once and then acknowledge by `seq`.
    Delivery {
        seq: u64,
        /// The device that sealed it (its signature verified).
        sender: DeviceId,
        message: Box<Accepted>,
    },
    /// A delivery that cannot be opened or does not match its routing: acknowledge it
    /// (it will never get better) and say why.
    Rejected {
        seq: u64,
        why: String,
    },
    Stored {
        id: MessageId,
    },
    Refused {
        id: MessageId,
        code: String,
        reason: String,
    },
    Policy(PolicyFrame),
    Directory(DirectoryFrame),
}

/// The engine's handle on the link task. Dropping it stops the link.
#[derive(Debug)]
pub struct Link {
    commands: mpsc::UnboundedSender<ToLink>,
    device: DeviceId,
    relay: Endpoint,
}

impl Link {
    /// Starts the link task on the current tokio runtime. `to_engine` hands the link's
    /// news to the engine thread; it returns false once the engine is gone.
    pub fn start(relay: Endpoint, keys: DeviceKeys, to_engine: impl Fn(FromLink) -> bool + Send + 'static) -> Self {
        let keys = Arc::new(keys);
        let device = keys.device();
        let (client, incoming) = Client::connect(ClientConfig::new(relay.clone()), Arc::clone(&keys));
        let (commands, rx) = mpsc::unbounded_channel();
        let task = Task {
            client,
            keys,
            keyring: Keyring::new(),
            rng: ChaCha20Rng::from_seed(clock::random_seed()),
            waiting: Vec::new(),
            to_engine: Box::new(to_engine),
        };
        tokio::spawn(task.run(incoming, rx));
        Self { commands, device, relay }
    }

    pub fn send(&self, message: ToLink) {
        let _ = self.commands.send(message);
    }

    /// This device, as the relay knows it.
    pub fn device(&self) -> DeviceId {
        self.device
    }

    pub fn url(&self) -> &str {
        self.relay.url()
    }
}

/// The link the daemon for `home` keeps, if it has a relay: `url` (from `--relay`), else
/// the one `agentfw join` wrote into the configuration, trusting the configured CA file
/// for `https://` (else the system's roots). Returns the link and this machine's
/// name on the relay. News goes to the engine thread through `jobs`, wrapped by `wrap`.
pub fn start_for<W: Send + 'static>(
    home: &Home,
    config: &RelayConfig,
    url: Option<&str>,
    runtime: &tokio::runtime::Runtime,
    jobs: std::sync::mpsc::Sender<W>,
    wrap: fn(FromLink) -> W,
) -> Result<Option<(Link, String)>, String> {
    let url = match url.map(str::trim).filter(|u| !u.is_empty()) {
        Some(url) => url.to_owned(),
        None if !config.url.trim().is_empty() => config.url.trim().to_owned(),
        None => return Ok(None),
    };
    let keys = KeyStore::open(home)?
        .load()
        .map_err(|e| format!("{e}; join the relay first with `agentfw join {url} INVITE`"))?;
    if !config.device.is_empty() && config.device != keys.device().to_string() {
        eprintln!(
            "agentfw daemon: the relay configuration names device {} but this device's keys are {}; using the keys",
            config.device,
            keys.device()
        );
    }
    let name = config.machine();
    let relay = Endpoint::new(&url, config.ca_file(&home.dir).as_deref()).map_err(|e| e.to_string())?;
    let _guard = runtime.enter();
    let link = Link::start(relay, keys, move |news| jobs.send(wrap(news)).is_ok());
    Ok(Some((link, name)))
}

/// This machine's host name, the default name on a relay.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "this machine".to_owned())
}

type ToEngine = Box<dyn Fn(FromLink) -> bool + Send>;

struct Task {
    client: Client,
    keys: Arc<DeviceKeys>,
    /// Bundles of the devices this one talks to, as the relay's directory gives them.
    keyring: Keyring,
    rng: ChaCha20Rng,
    /// Submissions whose recipient's bundle could not be fetched yet (not connected).
    waiting: Vec<Outbound>,
    to_engine: ToEngine,
}

impl Task {
    async fn run(mut self, mut incoming: mpsc::Receiver<Incoming>, mut commands: mpsc::UnboundedReceiver<ToLink>) {
        let (done_tx, mut done) = mpsc::unbounded_channel::<FromLink>();
        loop {
            tokio::select! {
                command = commands.recv() => match command {
                    Some(command) => self.command(command, &done_tx).await,
                    None => break,
                },
                news = incoming.recv() => match news {
                    Some(news) => {
                        if !self.incoming(news, &done_tx).await {
                            break;
                        }
                    }
                    None => break,
                },
                Some(answer) = done.recv() => {
                    if !(self.to_engine)(answer) {
                        break;
                    }
                }
            }
        }
        self.client.stop();
    }

    async fn command(&mut self, command: ToLink, done: &mpsc::UnboundedSender<FromLink>) {
        match command {
            ToLink::Submit(items) => {
                for item in items {
                    self.submit(item, done).await;
                }
            }
            ToLink::Report(events) => self.client.report(events),
            ToLink::Announce(agents) => self.client.announce(agents),
            ToLink::Components { agent, components } => self.client.components(&agent, &components),
            ToLink::Ack(seqs) => {
                for seq in seqs {
                    self.client.ack(seq);
                }
            }
        }
    }

    /// Returns false when the engine is gone.
    async fn incoming(&mut self, news: Incoming, done: &mpsc::UnboundedSender<FromLink>) -> bool {
        let message = match news {
            Incoming::Connected { device, .. } => {
                for item in std::mem::take(&mut self.waiting) {
                    self.submit(item, done).await;
                }
                FromLink::Connected { device }
            }
            Incoming::Disconnected { reason } => FromLink::Disconnected { reason },
            Incoming::Stopped { code, reason } => FromLink::Stopped { code, reason },
            Incoming::Notice { code, reason } => {
                eprintln!("agentfw daemon: the relay says ({code}): {reason}");
                return true;
            }
            Incoming::Policy(frame) => FromLink::Policy(frame),
            Incoming::Directory(frame) => {
                // A revoked device's keys stop working here at once (TX5).
                for d in frame.devices.iter().filter(|d| d.status == "revoked") {
                    let _ = self.keyring.revoke(d.device, clock::now());
                }
                FromLink::Directory(frame)
            }
            Incoming::Delivery(delivery) => match self.open(&delivery).await {
                Some(message) => message,
                // The sender's bundle is not available now: leave the delivery unacknowledged
                // and the relay sends it again after the next login.
                None => return true,
            },
        };
        (self.to_engine)(message)
    }

    /// The sender's bundle (fetched from the relay on first sight).
    async fn bundle(&mut self, device: DeviceId) -> Result<PublicBundle, ClientError> {
        if let Some(bundle) = self.keyring.active(device) {
            return Ok(bundle.clone());
        }
        for entry in self.client.lookup(vec![device]).await? {
            let _ = self.keyring.trust(entry.bundle.clone());
            if let Some(line) = &entry.rotation
                && let Ok(rotation) = Rotation::parse(line)
            {
                let _ = self.keyring.apply_rotation(&rotation);
            }
            if entry.status == "revoked" {
                let _ = self.keyring.revoke(entry.bundle.device(), clock::now());
            }
        }
        self.keyring.active(device).cloned().ok_or_else(|| ClientError::Refused {
            code: "relay.unknown_recipient".to_owned(),
            reason: format!("device `{device}` is not enrolled with the relay, or its keys were revoked"),
        })
    }

    async fn submit(&mut self, item: Outbound, done: &mpsc::UnboundedSender<FromLink>) {
        let id = item.message.id;
        let bundle = match self.bundle(item.device).await {
            Ok(bundle) => bundle,
            Err(ClientError::Refused { code, reason }) => {
                let _ = done.send(FromLink::Refused { id, code, reason });
                return;
            }
            Err(_) => {
                self.waiting.push(item);
                return;
            }
        };
        let body = match serde_json::to_vec(&item.message) {
            Ok(body) => body,
            Err(e) => {
                let _ = done.send(FromLink::Refused { id, code: "relay.bad_envelope".into(), reason: e.to_string() });
                return;
            }
        };
        let (from, to) = (item.message.from.clone(), item.message.to.clone());
        let routed = match Routed::seal(
            &self.keys,
            &bundle,
            from,
            to,
            id,
            MEDIA_TYPE,
            &body,
            &Limits::default(),
            clock::now(),
            &mut self.rng,
        ) {
            Ok(routed) => routed,
            Err(e) => {
                let _ = done.send(FromLink::Refused { id, code: "seal.failed".into(), reason: e.to_string() });
                return;
            }
        };
        let client = self.client.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let answer = match client.submit(&routed).await {
                Ok(_) => FromLink::Stored { id },
                Err(ClientError::Refused { code, reason }) => FromLink::Refused { id, code, reason },
                // Stopped: the daemon is going away; the outbox row stays for the next start.
                Err(_) => return,
            };
            let _ = done.send(answer);
        });
    }

    /// Verify and open a delivery. `None`: try again later (the sender's bundle is not
    /// available now).
    async fn open(&mut self, delivery: &Delivery) -> Option<FromLink> {
        let seq = delivery.seq;
        let sender = delivery.envelope().header().sender;
        let bundle = match self.bundle(sender).await {
            Ok(bundle) => bundle,
            Err(ClientError::Refused { reason, .. }) => return Some(FromLink::Rejected { seq, why: reason }),
            Err(_) => return None,
        };
        if let Err(e) = delivery.verify(&bundle) {
            return Some(FromLink::Rejected { seq, why: format!("the envelope does not verify: {e}") });
        }
        // Repeats are recognised by the engine's inbox (by message id, kept longer than an
        // envelope stays valid), so a fresh replay cache here: one kept in memory would
        // refuse the redelivery of an envelope whose first copy was never stored.
        let mut replay = ReplayCache::default();
        let opened = match seal::open(
            &self.keys,
            &self.keyring,
            &mut replay,
            delivery.envelope().as_bytes(),
            &Limits::default(),
            clock::now(),
        ) {
            Ok(opened) => opened,
            Err(e) => return Some(FromLink::Rejected { seq, why: format!("cannot open the envelope: {e}") }),
        };
        let message: Accepted = match serde_json::from_slice(&opened.body) {
            Ok(m) => m,
            Err(e) => return Some(FromLink::Rejected { seq, why: format!("the body is not a message: {e}") }),
        };
        let routing = delivery.routing();
        if message.id != opened.header.id || message.from.id != routing.from.id || message.to.id != routing.to.id {
            return Some(FromLink::Rejected { seq, why: "the message does not match its routing".to_owned() });
        }
        Some(FromLink::Delivery { seq, sender, message: Box::new(message) })
    }
}
