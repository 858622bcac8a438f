//! The device side of the protocol, for the daemon: [`join`] a relay with an invite, then
//! [`Client::connect`] and keep a connection with backoff, [`Client::submit`] envelopes,
//! take [`Incoming`] deliveries and policy, and [`Client::ack`] what is stored.
//!
//! Delivery guarantees:
//! - A submitted envelope is kept until the relay says it is stored (after its commit) or
//!   refused for good; across reconnects it is sent again, and the relay recognises the
//!   resend, so nothing acknowledged is stored twice.
//! - A delivery may arrive more than once (after a reconnect, or from two relay
//!   instances). Store it, then [`Client::ack`] it; drop repeats by message id (the core's
//!   `ReplayCache` refuses them as `open.replayed`: acknowledge those too).
//!
//! [`PolicyMirror`] turns policy frames into the admin actions for the local firewall.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use agentfw_core::admission::ComponentId;
use agentfw_core::containment::TextId;
use agentfw_core::firewall::{AdminAction, Event};
use agentfw_core::message::{Agent, AgentId, MessageId};
use agentfw_core::seal::{DeviceId, DeviceKeys, Envelope, Limits, PublicBundle, Rotation};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::clock;
use crate::protocol::{
    self, AUTH_CONTEXT, AgentEntry, BundleEntry, CONNECT_PATH, DeliverFrame, DeviceEntry, DirectoryFrame,
    ENROLL_CONTEXT, ENROLL_PATH, EnrollRequest, EnrollResponse, FrameError, PolicyFrame, Routed, Routing, ToDevice,
    ToRelay, VERSION, WireLimits, codes,
};

/// Why a client call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("relay URL `{0}` is not valid: use http://HOST:PORT")]
    Url(String),
    #[error("cannot reach the relay: {0}")]
    Unreachable(String),
    #[error("the relay refused ({code}): {reason}")]
    Refused { code: String, reason: String },
    #[error("the relay answered something unexpected: {0}")]
    Protocol(String),
    #[error("not connected to the relay")]
    NotConnected,
    #[error("the client was stopped")]
    Stopped,
}

impl ClientError {
    /// The relay's code, for a refusal.
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Refused { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// Enrolls this device with the relay at `relay` (`http://HOST:PORT`) using an invite:
/// sends the public bundle, signed with the device's key.
pub async fn join(relay: &str, invite: &str, keys: &DeviceKeys, name: &str) -> Result<EnrollResponse, ClientError> {
    let bundle = keys.public().to_line();
    let invite = invite.trim();
    let signature = keys.sign_statement(ENROLL_CONTEXT, &protocol::enroll_message(invite, &bundle)).to_vec();
    let request = EnrollRequest { invite: invite.to_owned(), bundle, name: name.to_owned(), signature };
    let body = serde_json::to_vec(&request).map_err(|e| ClientError::Protocol(e.to_string()))?;
    let response = http::request(relay, "POST", ENROLL_PATH, &[("content-type", "application/json")], body).await?;
    if response.status == 201 {
        return serde_json::from_slice(&response.body).map_err(|e| ClientError::Protocol(e.to_string()));
    }
    Err(refusal_from(&response))
}

fn refusal_from(response: &http::Response) -> ClientError {
    match serde_json::from_slice::<protocol::ApiError>(&response.body) {
        Ok(e) => ClientError::Refused { code: e.code, reason: e.error },
        Err(_) => ClientError::Protocol(format!("HTTP {}", response.status)),
    }
}

/// How the client connects.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The relay, `http://HOST:PORT`.
    pub url: String,
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// TCP connect, upgrade and login.
    pub handshake_timeout: Duration,
    /// Reconnect when nothing is heard from the relay for this long (it pings every 30 s).
    pub idle_timeout: Duration,
    /// The largest frame accepted from the relay.
    pub max_frame: usize,
    /// Envelope limits for parsing deliveries.
    pub limits: Limits,
}

impl ClientConfig {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(90),
            max_frame: 64 << 20,
            limits: Limits::default(),
        }
    }
}

/// An envelope the relay delivered.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// What to acknowledge it by.
    pub seq: u64,
    routed: Routed,
}

impl Delivery {
    /// Which agent sends to which; check it with [`Delivery::verify`] first.
    pub fn routing(&self) -> &Routing {
        &self.routed.routing
    }

    pub fn envelope(&self) -> &Envelope {
        &self.routed.envelope
    }

    /// Checks the routing and the envelope against the sender's bundle (from
    /// [`Client::lookup`]). Then open the envelope with `agentfw_core::seal::open`.
    pub fn verify(&self, sender: &PublicBundle) -> Result<(), FrameError> {
        self.routed.verify(sender)
    }
}

/// What the relay sends a device.
#[derive(Clone, Debug)]
pub enum Incoming {
    /// Logged in (again): deliveries resume, and a policy reset and a full directory follow.
    Connected {
        device: DeviceId,
        limits: WireLimits,
    },
    /// The connection dropped; the client reconnects by itself.
    Disconnected {
        reason: String,
    },
    Delivery(Box<Delivery>),
    /// Apply with a [`PolicyMirror`].
    Policy(PolicyFrame),
    /// Apply to a [`Directory`].
    Directory(DirectoryFrame),
    /// A refusal not tied to a submission (an agent that is another device's, a bad
    /// report).
    Notice {
        code: String,
        reason: String,
    },
    /// The relay will not take this device any more (revoked, unknown, rotated away): the
    /// client stopped. A rotated device connects again with its new keys.
    Stopped {
        code: String,
        reason: String,
    },
}

/// The relay's answer to a submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// It was stored before (a resend after a lost answer).
    pub duplicate: bool,
}

enum Command {
    Submit { id: MessageId, frame: Arc<Vec<u8>>, reply: oneshot::Sender<Result<Submitted, ClientError>> },
    Ack(u64),
    Report(Vec<Event>),
    Agents(Vec<Agent>),
    Components { agent: AgentId, label: String, components: Vec<String> },
    Lookup(Vec<DeviceId>, oneshot::Sender<Result<Vec<BundleEntry>, ClientError>>),
    Rotate(String),
    Stop,
}

/// A handle on the connection task. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Client {
    commands: mpsc::UnboundedSender<Command>,
    connected: watch::Receiver<bool>,
    keys: Arc<DeviceKeys>,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Command")
    }
}

impl Client {
    /// Starts the connection task: it connects, logs in with `keys`, and reconnects with
    /// exponential backoff (with jitter) whenever the connection drops, until
    /// [`Client::stop`] or a permanent refusal. What the relay sends comes out of the
    /// returned receiver; read it promptly.
    pub fn connect(config: ClientConfig, keys: Arc<DeviceKeys>) -> (Client, mpsc::Receiver<Incoming>) {
        let (commands, rx) = mpsc::unbounded_channel();
        let (incoming_tx, incoming) = mpsc::channel(4096);
        let (connected_tx, connected) = watch::channel(false);
        let task = Task {
            config,
            keys: keys.clone(),
            commands: rx,
            incoming: incoming_tx,
            connected: connected_tx,
            outstanding: BTreeMap::new(),
            unsent: VecDeque::new(),
            delayed: Vec::new(),
            acks: Vec::new(),
            reports: VecDeque::new(),
            agents: None,
            lookups: VecDeque::new(),
            stopping: false,
        };
        tokio::spawn(task.run());
        (Client { commands, connected, keys }, incoming)
    }

    /// This device.
    pub fn device(&self) -> DeviceId {
        self.keys.device()
    }

    pub fn is_connected(&self) -> bool {
        *self.connected.borrow()
    }

    /// Waits until logged in (or the client stops).
    pub async fn wait_connected(&self) -> Result<(), ClientError> {
        let mut rx = self.connected.clone();
        rx.wait_for(|c| *c).await.map(|_| ()).map_err(|_| ClientError::Stopped)
    }

    /// Submits a routed envelope (from [`Routed::seal`]); resolves when the relay has
    /// stored it (or refused it for good). Retryable refusals (rate limit, relay
    /// unavailable) and lost connections are retried inside.
    pub async fn submit(&self, routed: &Routed) -> Result<Submitted, ClientError> {
        self.submit_frame(routed.envelope.header().id, Arc::new(routed.to_submit_frame())).await
    }

    /// Submits a ready frame; `id` must be its envelope's id.
    pub async fn submit_frame(&self, id: MessageId, frame: Arc<Vec<u8>>) -> Result<Submitted, ClientError> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(Command::Submit { id, frame, reply }).map_err(|_| ClientError::Stopped)?;
        rx.await.map_err(|_| ClientError::Stopped)?
    }

    /// Acknowledges a delivery the device has stored durably.
    pub fn ack(&self, seq: u64) {
        let _ = self.commands.send(Command::Ack(seq));
    }

    /// Reports firewall events (metadata only): decisions for the audit log, containment
    /// for every device. Kept while disconnected (up to a bound) and sent on reconnect.
    pub fn report(&self, events: Vec<Event>) {
        let _ = self.commands.send(Command::Report(events));
    }

    /// The agents live on this device now; sent again after every reconnect.
    pub fn announce(&self, agents: Vec<Agent>) {
        let _ = self.commands.send(Command::Agents(agents));
    }

    /// An agent's loaded components, for its one admission refresh (AD5).
    pub fn components(&self, agent: &Agent, components: &[ComponentId]) {
        let _ = self.commands.send(Command::Components {
            agent: agent.id.clone(),
            label: agent.label(),
            components: components.iter().map(ToString::to_string).collect(),
        });
    }

    /// Public bundles of these devices (to seal to them and check their envelopes).
    pub async fn lookup(&self, devices: Vec<DeviceId>) -> Result<Vec<BundleEntry>, ClientError> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(Command::Lookup(devices, reply)).map_err(|_| ClientError::Stopped)?;
        rx.await.map_err(|_| ClientError::Stopped)?
    }

    /// Tells the relay about this device's key rotation. The relay retires the old key
    /// at once and ends this connection; connect again with the new keys.
    pub fn rotate(&self, rotation: &Rotation) {
        let _ = self.commands.send(Command::Rotate(rotation.to_line()));
    }

    /// Stops the connection task. Unanswered submissions fail with
    /// [`ClientError::Stopped`].
    pub fn stop(&self) {
        let _ = self.commands.send(Command::Stop);
    }
}

/// Codes after which reconnecting cannot help.
fn permanent(code: &str) -> bool {
    matches!(code, codes::REVOKED | codes::UNKNOWN_DEVICE | codes::UNSUPPORTED_VERSION | codes::ROTATED)
}

/// Codes after which the same envelope may be sent again later.
fn retryable(code: &str) -> bool {
    matches!(code, codes::RATE_LIMITED | codes::UNAVAILABLE | codes::SHUTDOWN)
}

struct Outstanding {
    frame: Arc<Vec<u8>>,
    reply: oneshot::Sender<Result<Submitted, ClientError>>,
}

struct Task {
    config: ClientConfig,
    keys: Arc<DeviceKeys>,
    commands: mpsc::UnboundedReceiver<Command>,
    incoming: mpsc::Sender<Incoming>,
    connected: watch::Sender<bool>,
    outstanding: BTreeMap<MessageId, Outstanding>,
    /// Outstanding submissions to send on this connection, in order.
    unsent: VecDeque<MessageId>,
    /// Submissions refused for now, to send again at the instant given.
    delayed: Vec<(std::time::Instant, MessageId)>,
    acks: Vec<u64>,
    reports: VecDeque<Event>,
    agents: Option<Vec<Agent>>,
    lookups: VecDeque<oneshot::Sender<Result<Vec<BundleEntry>, ClientError>>>,
    stopping: bool,
}

/// Events kept for reporting while disconnected.
const MAX_QUEUED_EVENTS: usize = 100_000;
/// Events per report frame.
const REPORT_CHUNK: usize = 200;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

enum End {
    /// Reconnect after backoff.
    Retry(String),
    /// Stop for good.
    Stop,
}

impl Task {
    async fn run(mut self) {
        let mut backoff = self.config.backoff_min;
        loop {
            if self.stopping {
                break;
            }
            let started = clock::instant();
            let end = match self.login().await {
                Ok((socket, device, limits)) => {
                    let _ = self.connected.send(true);
                    let _ = self.incoming.send(Incoming::Connected { device, limits }).await;
                    let end = self.session(socket).await;
                    let _ = self.connected.send(false);
                    for reply in self.lookups.drain(..) {
                        let _ = reply.send(Err(ClientError::NotConnected));
                    }
                    end
                }
                Err(end) => end,
            };
            match end {
                End::Stop => break,
                End::Retry(reason) => {
                    tracing::debug!(reason = %reason, "relay connection lost; reconnecting");
                    let _ = self.incoming.send(Incoming::Disconnected { reason }).await;
                }
            }
            // A connection that lasted resets the backoff.
            if started.elapsed() > Duration::from_secs(30) {
                backoff = self.config.backoff_min;
            }
            let jitter = clock::random_bytes::<2>().map(|b| u64::from(u16::from_le_bytes(b))).unwrap_or(0);
            let wait = backoff
                + Duration::from_millis(jitter % (u64::try_from(backoff.as_millis()).unwrap_or(1).max(1) / 2 + 1));
            if self.idle(wait).await {
                break;
            }
            backoff = (backoff * 2).min(self.config.backoff_max);
        }
        let _ = self.connected.send(false);
        for (_, o) in std::mem::take(&mut self.outstanding) {
            let _ = o.reply.send(Err(ClientError::Stopped));
        }
        for reply in self.lookups.drain(..) {
            let _ = reply.send(Err(ClientError::Stopped));
        }
    }

    /// Waits `wait` while disconnected, still taking commands. True when told to stop.
    async fn idle(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return false,
                command = self.commands.recv() => match command {
                    None | Some(Command::Stop) => { self.stopping = true; return true; }
                    Some(command) => self.queue(command),
                },
            }
        }
    }

    /// Takes a command while disconnected.
    fn queue(&mut self, command: Command) {
        match command {
            Command::Submit { id, frame, reply } => {
                self.outstanding.insert(id, Outstanding { frame, reply });
                self.unsent.push_back(id);
            }
            Command::Ack(seq) => self.acks.push(seq),
            Command::Report(events) => {
                self.reports.extend(events);
                while self.reports.len() > MAX_QUEUED_EVENTS {
                    self.reports.pop_front();
                }
            }
            Command::Agents(agents) => self.agents = Some(agents),
            Command::Lookup(_, reply) => {
                let _ = reply.send(Err(ClientError::NotConnected));
            }
            Command::Components { .. } | Command::Rotate(_) => {
                tracing::warn!("not connected to the relay; a components report or rotation was dropped");
            }
            Command::Stop => self.stopping = true,
        }
    }

    fn connect_url(&self) -> Result<String, End> {
        let base = self.config.url.trim_end_matches('/');
        let ws = if let Some(rest) = base.strip_prefix("http://") {
            format!("ws://{rest}")
        } else if let Some(rest) = base.strip_prefix("https://") {
            format!("wss://{rest}")
        } else if base.starts_with("ws://") || base.starts_with("wss://") {
            base.to_owned()
        } else {
            return Err(End::Stop);
        };
        Ok(format!("{ws}{CONNECT_PATH}"))
    }

    async fn login(&mut self) -> Result<(Socket, DeviceId, WireLimits), End> {
        let url = match self.connect_url() {
            Ok(u) => u,
            Err(end) => {
                let _ = self
                    .incoming
                    .send(Incoming::Stopped {
                        code: "client.url".into(),
                        reason: ClientError::Url(self.config.url.clone()).to_string(),
                    })
                    .await;
                return Err(end);
            }
        };
        let mut ws_config = WebSocketConfig::default();
        ws_config.max_message_size = Some(self.config.max_frame);
        ws_config.max_frame_size = Some(self.config.max_frame);
        ws_config.read_buffer_size = 16 * 1024;
        ws_config.write_buffer_size = 16 * 1024;
        let timeout = self.config.handshake_timeout;
        let attempt = async {
            let (mut socket, _) = tokio_tungstenite::connect_async_with_config(url.as_str(), Some(ws_config), true)
                .await
                .map_err(|e| End::Retry(format!("cannot connect: {e}")))?;
            let nonce = match next_text(&mut socket).await? {
                ToDevice::Challenge { version, nonce } if version == VERSION => nonce,
                ToDevice::Challenge { version, .. } => {
                    return Err(End::Retry(format!("the relay speaks protocol version {version}, not {VERSION}")));
                }
                other => return Err(End::Retry(format!("expected a challenge, got {other:?}"))),
            };
            let device = self.keys.device();
            let signature = self.keys.sign_statement(AUTH_CONTEXT, &protocol::auth_message(&nonce, device)).to_vec();
            let hello = serde_json::to_string(&ToRelay::Hello { version: VERSION, device, signature })
                .map_err(|e| End::Retry(e.to_string()))?;
            socket.send(Message::Text(hello.into())).await.map_err(|e| End::Retry(format!("send failed: {e}")))?;
            match next_text(&mut socket).await? {
                ToDevice::Welcome { device, limits } => Ok((socket, device, limits)),
                ToDevice::Error { code, reason } => Err(Self::refused_login(code, reason)),
                other => Err(End::Retry(format!("expected a welcome, got {other:?}"))),
            }
        };
        match tokio::time::timeout(timeout, attempt).await {
            Ok(Ok(ok)) => Ok(ok),
            Ok(Err(End::Stop)) => Err(End::Stop),
            Ok(Err(End::Retry(reason))) => {
                if let Some((code, reason)) = reason.strip_prefix("stop:").and_then(|r| r.split_once(':')) {
                    let _ = self
                        .incoming
                        .send(Incoming::Stopped { code: code.to_owned(), reason: reason.to_owned() })
                        .await;
                    return Err(End::Stop);
                }
                Err(End::Retry(reason))
            }
            Err(_) => Err(End::Retry("the relay did not answer the login in time".to_owned())),
        }
    }

    fn refused_login(code: String, reason: String) -> End {
        if permanent(&code) {
            End::Retry(format!("stop:{code}:{reason}"))
        } else {
            End::Retry(format!("{code}: {reason}"))
        }
    }

    /// One logged-in connection, until it drops.
    async fn session(&mut self, mut socket: Socket) -> End {
        // Everything that waited for a connection goes out first.
        if let Some(agents) = self.agents.clone()
            && let Err(e) = send_json(&mut socket, &ToRelay::Agents { agents }).await
        {
            return e;
        }
        // Everything not answered goes again on this connection (the relay recognises
        // what it stored already); delayed ones wait for their time.
        let delayed: std::collections::HashSet<MessageId> = self.delayed.iter().map(|(_, id)| *id).collect();
        self.unsent = self.outstanding.keys().filter(|id| !delayed.contains(id)).copied().collect();
        if let Err(e) = self.flush(&mut socket).await {
            return e;
        }
        let idle = self.config.idle_timeout;
        let mut last_heard = clock::instant();
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                command = self.commands.recv() => {
                    let Some(command) = command else { self.stopping = true; let _ = socket.close(None).await; return End::Stop; };
                    if let Err(e) = self.command(&mut socket, command).await {
                        return e;
                    }
                    // Take whatever else is waiting, then write it in as few frames as possible.
                    while let Ok(command) = self.commands.try_recv() {
                        if let Err(e) = self.command(&mut socket, command).await {
                            return e;
                        }
                    }
                    if let Err(e) = self.flush(&mut socket).await {
                        return e;
                    }
                }
                message = socket.next() => {
                    last_heard = clock::instant();
                    match message {
                        None => return End::Retry("the relay closed the connection".to_owned()),
                        Some(Err(e)) => return End::Retry(format!("connection error: {e}")),
                        Some(Ok(message)) => {
                            if let Some(end) = self.on_message(message).await {
                                return end;
                            }
                        }
                    }
                }
                _ = tick.tick() => {
                    if last_heard.elapsed() > idle {
                        return End::Retry("nothing heard from the relay for too long".to_owned());
                    }
                    if let Err(e) = self.flush(&mut socket).await {
                        return e;
                    }
                }
            }
        }
    }

    async fn command(&mut self, socket: &mut Socket, command: Command) -> Result<(), End> {
        match command {
            Command::Submit { id, frame, reply } => {
                self.outstanding.insert(id, Outstanding { frame, reply });
                self.unsent.push_back(id);
            }
            Command::Lookup(devices, reply) => {
                send_json(socket, &ToRelay::Lookup { devices }).await?;
                self.lookups.push_back(reply);
            }
            Command::Components { agent, label, components } => {
                send_json(socket, &ToRelay::Components { agent, label, components }).await?;
            }
            Command::Rotate(rotation) => send_json(socket, &ToRelay::Rotate { rotation }).await?,
            Command::Agents(agents) => {
                self.agents = Some(agents.clone());
                send_json(socket, &ToRelay::Agents { agents }).await?;
            }
            Command::Stop => {
                self.stopping = true;
                let _ = socket.close(None).await;
                return Err(End::Stop);
            }
            other => self.queue(other),
        }
        Ok(())
    }

    /// Sends acks, reports and submissions that are due.
    async fn flush(&mut self, socket: &mut Socket) -> Result<(), End> {
        if !self.acks.is_empty() {
            let seqs = std::mem::take(&mut self.acks);
            for chunk in seqs.chunks(4096) {
                send_json(socket, &ToRelay::Ack { seqs: chunk.to_vec() }).await?;
            }
        }
        while !self.reports.is_empty() {
            let n = self.reports.len().min(REPORT_CHUNK);
            let events: Vec<Event> = self.reports.drain(..n).collect();
            send_json(socket, &ToRelay::Report { events }).await?;
        }
        let now = clock::instant();
        let (due, later): (Vec<_>, Vec<_>) = self.delayed.drain(..).partition(|(at, _)| *at <= now);
        self.delayed = later;
        self.unsent.extend(due.into_iter().map(|(_, id)| id));
        let mut sent = false;
        while let Some(id) = self.unsent.pop_front() {
            // Answered meanwhile (a resend of something stored already) or gone.
            let Some(o) = self.outstanding.get(&id) else { continue };
            socket
                .feed(Message::Binary(o.frame.as_ref().clone().into()))
                .await
                .map_err(|e| End::Retry(format!("send failed: {e}")))?;
            sent = true;
        }
        if sent {
            socket.flush().await.map_err(|e| End::Retry(format!("send failed: {e}")))?;
        }
        Ok(())
    }

    async fn on_message(&mut self, message: Message) -> Option<End> {
        match message {
            Message::Binary(bytes) => match DeliverFrame::parse(&bytes, &self.config.limits) {
                Ok(frame) => {
                    let delivery = Delivery { seq: frame.seq, routed: frame.routed };
                    if self.incoming.send(Incoming::Delivery(Box::new(delivery))).await.is_err() {
                        return Some(End::Stop);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a delivery frame does not parse; it stays unacknowledged");
                }
            },
            Message::Text(text) => {
                let frame = match serde_json::from_str::<ToDevice>(text.as_str()) {
                    Ok(f) => f,
                    Err(e) => {
                        tracing::warn!(error = %e, "the relay sent a frame this client does not know; ignored");
                        return None;
                    }
                };
                return self.on_frame(frame).await;
            }
            Message::Close(frame) => {
                return Some(End::Retry(
                    frame.map_or_else(|| "closed".to_owned(), |f| format!("closed: {}", f.reason)),
                ));
            }
            _ => {}
        }
        None
    }

    async fn on_frame(&mut self, frame: ToDevice) -> Option<End> {
        match frame {
            ToDevice::Stored { id, duplicate } => {
                if let Some(o) = self.outstanding.remove(&id) {
                    let _ = o.reply.send(Ok(Submitted { duplicate }));
                }
            }
            ToDevice::Refused { id: Some(id), code, reason, retry_after_ms } => {
                if retryable(&code) {
                    if self.outstanding.contains_key(&id) {
                        let at = clock::instant() + Duration::from_millis(retry_after_ms.unwrap_or(1000));
                        self.delayed.push((at, id));
                    }
                } else if let Some(o) = self.outstanding.remove(&id) {
                    let _ = o.reply.send(Err(ClientError::Refused { code, reason }));
                }
            }
            ToDevice::Refused { id: None, code, reason, .. } => {
                let _ = self.incoming.send(Incoming::Notice { code, reason }).await;
            }
            ToDevice::Policy(frame) => {
                let _ = self.incoming.send(Incoming::Policy(frame)).await;
            }
            ToDevice::Directory(frame) => {
                let _ = self.incoming.send(Incoming::Directory(frame)).await;
            }
            ToDevice::Bundles { bundles } => {
                if let Some(reply) = self.lookups.pop_front() {
                    let _ = reply.send(Ok(bundles));
                }
            }
            ToDevice::Error { code, reason } => {
                if permanent(&code) {
                    let _ = self.incoming.send(Incoming::Stopped { code, reason }).await;
                    self.stopping = true;
                    return Some(End::Stop);
                }
                return Some(End::Retry(format!("{code}: {reason}")));
            }
            ToDevice::Challenge { .. } | ToDevice::Welcome { .. } => {
                return Some(End::Retry("unexpected login frame".to_owned()));
            }
        }
        None
    }
}

async fn next_text(socket: &mut Socket) -> Result<ToDevice, End> {
    loop {
        match socket.next().await {
            None => return Err(End::Retry("the relay closed the connection".to_owned())),
            Some(Err(e)) => return Err(End::Retry(format!("connection error: {e}"))),
            Some(Ok(Message::Text(text))) => {
                return serde_json::from_str(text.as_str()).map_err(|e| End::Retry(format!("bad frame: {e}")));
            }
            Some(Ok(Message::Close(frame))) => {
                return Err(End::Retry(frame.map_or_else(|| "closed".to_owned(), |f| format!("closed: {}", f.reason))));
            }
            Some(Ok(_)) => {}
        }
    }
}

async fn send_json(socket: &mut Socket, frame: &ToRelay) -> Result<(), End> {
    let text = serde_json::to_string(frame).map_err(|e| End::Retry(e.to_string()))?;
    socket.send(Message::Text(text.into())).await.map_err(|e| End::Retry(format!("send failed: {e}")))
}

/// What the relay's policy frames mean for the local firewall (AD8, AM2, CT2).
///
/// Feed every [`Incoming::Policy`] to [`PolicyMirror::apply`] and hand the actions it
/// returns to the firewall in order (`Input::Admin`). A reset frame replaces what earlier
/// frames said: the mirror remembers what the relay had set (blocks, quarantines,
/// exceptions, remembered texts) and undoes what the reset no longer has, without touching
/// what the local admin did. Keep the mirror with the firewall's snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PolicyMirror {
    pub seq: u64,
    disconnected: BTreeSet<(AgentId, AgentId)>,
    quarantined: BTreeSet<AgentId>,
    exceptions: BTreeSet<ComponentId>,
    remembered: BTreeSet<TextId>,
}

impl PolicyMirror {
    pub fn new() -> Self {
        Self::default()
    }

    /// The actions to apply for one policy frame. Stale frames (an entry at or below the
    /// last one applied) give none.
    pub fn apply(&mut self, frame: &PolicyFrame) -> Vec<AdminAction> {
        let PolicyFrame { seq, reset, ref actions } = *frame;
        if !reset && seq <= self.seq {
            return Vec::new();
        }
        let mut out = Vec::new();
        if reset {
            let mut next = PolicyMirror { seq, ..PolicyMirror::default() };
            for a in actions {
                next.track(a);
            }
            out.extend(
                self.disconnected
                    .difference(&next.disconnected)
                    .map(|(a, b)| AdminAction::Reconnect { a: a.clone(), b: b.clone() }),
            );
            out.extend(
                self.quarantined
                    .difference(&next.quarantined)
                    .map(|a| AdminAction::LiftQuarantine { agent: a.clone() }),
            );
            out.extend(
                self.exceptions.difference(&next.exceptions).map(|c| AdminAction::Unexcept { component: c.clone() }),
            );
            out.extend(self.remembered.difference(&next.remembered).map(|t| AdminAction::Forget { text: *t }));
            *self = next;
        } else {
            for a in actions {
                self.track(a);
            }
            self.seq = seq;
        }
        out.extend(actions.iter().cloned());
        out
    }

    fn track(&mut self, action: &AdminAction) {
        let pair = |a: &AgentId, b: &AgentId| if a <= b { (a.clone(), b.clone()) } else { (b.clone(), a.clone()) };
        match action {
            AdminAction::Disconnect { a, b, .. } => {
                self.disconnected.insert(pair(a, b));
            }
            AdminAction::Reconnect { a, b } => {
                self.disconnected.remove(&pair(a, b));
            }
            AdminAction::Quarantine { agent, .. } => {
                self.quarantined.insert(agent.clone());
            }
            AdminAction::LiftQuarantine { agent } => {
                self.quarantined.remove(agent);
            }
            AdminAction::Except { component } => {
                self.exceptions.insert(component.clone());
            }
            AdminAction::Unexcept { component } => {
                self.exceptions.remove(component);
            }
            AdminAction::Remember { remembered, .. } => {
                self.remembered.insert(remembered.text);
            }
            AdminAction::Forget { text } => {
                self.remembered.remove(text);
            }
            _ => {}
        }
    }
}

/// Who is where, kept from [`Incoming::Directory`] frames.
#[derive(Clone, Debug, Default)]
pub struct Directory {
    pub devices: HashMap<DeviceId, DeviceEntry>,
    pub agents: HashMap<AgentId, AgentEntry>,
}

impl Directory {
    pub fn apply(&mut self, frame: DirectoryFrame) {
        let DirectoryFrame { full, devices, agents } = frame;
        if full {
            self.devices.clear();
            self.agents.clear();
        }
        let changed: BTreeSet<DeviceId> =
            devices.iter().map(|d| d.device).chain(agents.iter().map(|a| a.device)).collect();
        for d in devices {
            self.devices.insert(d.device, d);
        }
        if !full {
            // A change lists all of a device's agents: those it no longer lists are gone.
            self.agents.retain(|_, a| !changed.contains(&a.device));
        }
        for a in agents {
            self.agents.insert(a.agent.id.clone(), a);
        }
    }

    /// The device an agent runs on, if it is live.
    pub fn device_of(&self, agent: &AgentId) -> Option<DeviceId> {
        self.agents.get(agent).filter(|a| a.live).map(|a| a.device)
    }
}

/// A minimal HTTP/1.1 client for the relay's JSON endpoints (enrollment, admin API).
pub mod http {
    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    use hyper_util::rt::TokioIo;

    use super::ClientError;

    /// A response: status, headers (lower-case names) and body.
    #[derive(Clone, Debug)]
    pub struct Response {
        pub status: u16,
        pub headers: Vec<(String, String)>,
        pub body: Vec<u8>,
    }

    impl Response {
        pub fn header(&self, name: &str) -> Option<&str> {
            self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
        }

        pub fn text(&self) -> String {
            String::from_utf8_lossy(&self.body).into_owned()
        }
    }

    /// `METHOD base+path` with these headers and body.
    pub async fn request(
        base: &str,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<Response, ClientError> {
        let rest =
            base.trim_end_matches('/').strip_prefix("http://").ok_or_else(|| ClientError::Url(base.to_owned()))?;
        let (authority, prefix) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
        if authority.is_empty() {
            return Err(ClientError::Url(base.to_owned()));
        }
        let stream =
            tokio::net::TcpStream::connect(authority).await.map_err(|e| ClientError::Unreachable(e.to_string()))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ClientError::Unreachable(e.to_string()))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let uri = if prefix.is_empty() { path.to_owned() } else { format!("/{prefix}{path}") };
        let mut builder = hyper::Request::builder().method(method).uri(uri).header("host", authority);
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let request = builder.body(Full::new(Bytes::from(body))).map_err(|e| ClientError::Protocol(e.to_string()))?;
        let response = sender.send_request(request).await.map_err(|e| ClientError::Unreachable(e.to_string()))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        let body =
            response.into_body().collect().await.map_err(|e| ClientError::Unreachable(e.to_string()))?.to_bytes();
        Ok(Response { status, headers, body: body.to_vec() })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn agent(n: &str) -> AgentId {
        AgentId::new(n)
    }

    fn frame(seq: u64, reset: bool, actions: &[AdminAction]) -> PolicyFrame {
        PolicyFrame { seq, reset, actions: actions.to_vec() }
    }

    #[test]
    fn a_reset_undoes_what_the_relay_no_longer_says_and_keeps_the_rest() {
        let mut mirror = PolicyMirror::new();
        let block = AdminAction::Disconnect { a: agent("b"), b: agent("a"), reason: "r".into() };
        let q = AdminAction::Quarantine { agent: agent("x"), seconds: 60, reason: "r".into() };
        assert_eq!(mirror.apply(&frame(1, true, &[block.clone(), q.clone()])), vec![block.clone(), q.clone()]);
        // Stale increments are ignored; new ones pass through.
        assert!(mirror.apply(&frame(1, false, &[AdminAction::LiftQuarantine { agent: agent("x") }])).is_empty());
        let lift = AdminAction::LiftQuarantine { agent: agent("x") };
        assert_eq!(mirror.apply(&frame(2, false, std::slice::from_ref(&lift))), vec![lift]);
        // Missed while offline: the block was lifted, a quarantine added.
        let q2 = AdminAction::Quarantine { agent: agent("y"), seconds: 60, reason: "r".into() };
        let out = mirror.apply(&frame(5, true, std::slice::from_ref(&q2)));
        assert_eq!(out, vec![AdminAction::Reconnect { a: agent("a"), b: agent("b") }, q2]);
        assert_eq!(mirror.seq, 5);
    }

    #[test]
    fn the_directory_replaces_a_devices_agents_on_change() {
        let d1: DeviceId = "00000000000000000000000000000001".parse().unwrap();
        let entry = |id: &str, live| AgentEntry { agent: Agent::new(id, "claude", id), device: d1, live };
        let mut dir = Directory::default();
        dir.apply(DirectoryFrame { full: true, devices: vec![], agents: vec![entry("a", true), entry("b", true)] });
        assert_eq!(dir.device_of(&agent("a")), Some(d1));
        dir.apply(DirectoryFrame { full: false, devices: vec![], agents: vec![entry("b", true)] });
        assert_eq!(dir.device_of(&agent("a")), None);
        dir.apply(DirectoryFrame { full: false, devices: vec![], agents: vec![entry("b", false)] });
        assert_eq!(dir.device_of(&agent("b")), None);
    }
}
