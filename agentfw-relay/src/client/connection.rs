//! The connection task behind a [`Client`]: log in, keep the WebSocket with backoff,
//! resend what is unanswered, and turn the relay's frames into [`Incoming`] news.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use agentfw_core::admission::ComponentId;
use agentfw_core::firewall::Event;
use agentfw_core::message::{Agent, AgentId, MessageId};
use agentfw_core::seal::{DeviceId, DeviceKeys, Envelope, Limits, PublicBundle, Rotation};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::{ClientError, Endpoint, refusal};
use crate::clock;
use crate::protocol::{
    self, AUTH_CONTEXT, BundleEntry, CONNECT_PATH, DeliverFrame, DirectoryFrame, FrameError, PolicyFrame, Routed,
    Routing, ToDevice, ToRelay, VERSION, WireLimits, codes,
};

/// How the client connects.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The relay.
    pub relay: Endpoint,
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
    pub fn new(relay: Endpoint) -> Self {
        Self {
            relay,
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
    /// Apply with a [`PolicyMirror`](agentfw_core::central::PolicyMirror).
    Policy(PolicyFrame),
    /// Apply to a [`Directory`](super::Directory).
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

    async fn login(&mut self) -> Result<(Socket, DeviceId, WireLimits), End> {
        let url = self.config.relay.ws_url(CONNECT_PATH);
        let mut ws_config = WebSocketConfig::default();
        ws_config.max_message_size = Some(self.config.max_frame);
        ws_config.max_frame_size = Some(self.config.max_frame);
        ws_config.read_buffer_size = 16 * 1024;
        ws_config.write_buffer_size = 16 * 1024;
        let timeout = self.config.handshake_timeout;
        let attempt = async {
            let stream = self.config.relay.connect().await.map_err(|e| End::Retry(e.to_string()))?;
            let (mut socket, _) = tokio_tungstenite::client_async_with_config(url.as_str(), stream, Some(ws_config))
                .await
                .map_err(|e| End::Retry(upgrade_failed(e)))?;
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

/// Why the WebSocket upgrade failed: the relay's refusal when it answered with one.
fn upgrade_failed(error: tokio_tungstenite::tungstenite::Error) -> String {
    match error {
        tokio_tungstenite::tungstenite::Error::Http(response) => {
            refusal(response.status().as_u16(), response.body().as_deref().unwrap_or_default()).to_string()
        }
        other => format!("the WebSocket upgrade failed: {other}"),
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
