//! One device's WebSocket: the handshake, envelope submission, delivery until
//! acknowledged, reports, and policy and directory updates.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use agentfw_core::admission::ComponentId;
use agentfw_core::firewall::{AdminAction, Event};
use agentfw_core::message::{Agent, AgentId, MessageId};
use agentfw_core::route::{Route, Verdict};
use agentfw_core::seal::{DeviceId, Rotation};
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::response::Response;
use futures_util::stream::{FuturesUnordered, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;

use super::hub::{Flags, Wake};
use super::{DeviceInfo, Shared, now, stopped};
use crate::audit::{AuditRecord, RELAY};
use crate::clock;
use crate::protocol::{
    self, AUTH_CONTEXT, BundleEntry, DeliverFrame, FrameError, PolicyFrame, SubmitFrame, ToDevice, ToRelay, VERSION,
    auth_message, codes,
};
use crate::store::{DeviceRow, NewMessage, Stored};

/// Close codes (RFC 6455): policy violation, protocol error, message too big, going away.
const CLOSE_POLICY: u16 = 1008;
const CLOSE_PROTOCOL: u16 = 1002;
const CLOSE_AWAY: u16 = 1001;
/// How many frames may wait to be written to one device.
const OUTBOUND: usize = 1024;
/// Most sequence numbers in one ack, devices in one lookup, agents in one announcement,
/// events in one report.
const MAX_LIST: usize = 4096;

pub(super) async fn connect(
    ws: WebSocketUpgrade,
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
) -> Response {
    let max = protocol::max_frame(&shared.config.limits);
    // Small buffers: a thousand idle devices should cost little; they grow for big frames.
    ws.max_message_size(max).max_frame_size(max).read_buffer_size(16 * 1024).write_buffer_size(16 * 1024).on_upgrade(
        move |socket| async move {
            run(shared, socket, peer).await;
        },
    )
}

type Pending<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

async fn run(shared: Arc<Shared>, socket: WebSocket, peer: SocketAddr) {
    let (mut sink, mut stream) = socket.split();
    let device = match handshake(&shared, &mut sink, &mut stream).await {
        Ok(device) => device,
        Err((code, reason, close_code)) => {
            tracing::info!(%peer, code, reason = %reason, "handshake refused");
            let frame = ToDevice::Error { code: code.to_owned(), reason: reason.clone() };
            let send = async {
                if let Ok(text) = serde_json::to_string(&frame) {
                    let _ = sink.send(Message::Text(text.into())).await;
                }
                let _ = sink.send(close(close_code, code)).await;
            };
            let _ = tokio::time::timeout(Duration::from_secs(2), send).await;
            return;
        }
    };
    tracing::info!(%peer, %device, "device connected");

    // Frames go out through one task, so a device that stops reading is noticed (the send
    // times out) without holding up anything else.
    let (out, mut out_rx) = mpsc::channel::<Message>(OUTBOUND);
    let send_timeout = shared.config.send_timeout;
    // Whatever is queued goes out in one write (one flush for many frames).
    let mut writer = tokio::spawn(async move {
        let mut batch = Vec::with_capacity(64);
        while out_rx.recv_many(&mut batch, 64).await > 0 {
            let closing = batch.iter().any(|m| matches!(m, Message::Close(_)));
            let write = async {
                for message in batch.drain(..) {
                    sink.feed(message).await?;
                }
                sink.flush().await
            };
            match tokio::time::timeout(send_timeout, write).await {
                Ok(Ok(())) if !closing => {}
                Ok(Ok(())) => break,
                Ok(Err(_)) => return "send failed",
                Err(_) => return "slow client: a frame was not taken in time",
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
        "closed"
    });

    let (conn_id, wakes, flags) = shared.hub.register(device);
    let mut conn = Conn::new(shared.clone(), device, out);
    let ended = conn.serve(&mut stream, wakes, &flags, &mut writer).await;
    shared.hub.unregister(device, conn_id);
    tracing::info!(%peer, %device, reason = %ended, "device disconnected");
    // Give the writer a moment to send the close frame.
    drop(conn);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
}

fn close(code: u16, reason: &str) -> Message {
    Message::Close(Some(CloseFrame { code, reason: Utf8Bytes::from(reason.to_owned()) }))
}

type Refusal = (&'static str, String, u16);

/// The challenge and the hello (see [`crate::protocol`]); returns the device.
async fn handshake<S>(shared: &Shared, sink: &mut S, stream: &mut SplitStream<WebSocket>) -> Result<DeviceId, Refusal>
where
    S: futures_util::Sink<Message> + Unpin,
{
    let nonce =
        clock::random_bytes::<32>().map_err(|_| (codes::UNAVAILABLE, "no randomness".to_owned(), CLOSE_AWAY))?;
    let challenge = ToDevice::Challenge { version: VERSION, nonce: nonce.to_vec() };
    let text = serde_json::to_string(&challenge).map_err(|e| (codes::UNAVAILABLE, e.to_string(), CLOSE_AWAY))?;
    let deadline = tokio::time::Instant::now() + shared.config.handshake_timeout;
    let timed_out =
        || (codes::HANDSHAKE_TIMEOUT, "no valid hello within the handshake timeout".to_owned(), CLOSE_POLICY);
    tokio::time::timeout_at(deadline, sink.send(Message::Text(text.into())))
        .await
        .map_err(|_| timed_out())?
        .map_err(|_| (codes::HANDSHAKE, "the connection failed".to_owned(), CLOSE_AWAY))?;
    let hello = loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return Err(timed_out()),
            Ok(None | Some(Err(_))) => return Err((codes::HANDSHAKE, "the connection closed".to_owned(), CLOSE_AWAY)),
            Ok(Some(Ok(Message::Text(text)))) => break text,
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => {}
            Ok(Some(Ok(_))) => {
                return Err((codes::HANDSHAKE, "expected a hello text frame".to_owned(), CLOSE_PROTOCOL));
            }
        }
    };
    let (version, device, signature) = match serde_json::from_str::<ToRelay>(hello.as_str()) {
        Ok(ToRelay::Hello { version, device, signature }) => (version, device, signature),
        Ok(_) => return Err((codes::HANDSHAKE, "expected a hello".to_owned(), CLOSE_PROTOCOL)),
        Err(e) => {
            return Err((
                codes::BAD_FRAME,
                format!("the hello is not valid: {}", short(&e.to_string())),
                CLOSE_PROTOCOL,
            ));
        }
    };
    if version != VERSION {
        return Err((
            codes::UNSUPPORTED_VERSION,
            format!("protocol version {version} is not supported; this relay speaks {VERSION}"),
            CLOSE_PROTOCOL,
        ));
    }
    let Some(DeviceInfo { bundle, row }) = shared.device(device) else {
        return Err((
            codes::UNKNOWN_DEVICE,
            format!("device {device} is not enrolled; join with an invite first"),
            CLOSE_POLICY,
        ));
    };
    if row.status != "active" {
        return Err((codes::REVOKED, format!("device {device} was {}; it cannot log in", row.status), CLOSE_POLICY));
    }
    let signature: [u8; 64] = signature
        .as_slice()
        .try_into()
        .map_err(|_| (codes::BAD_SIGNATURE, "the signature must be 64 bytes".to_owned(), CLOSE_POLICY))?;
    bundle
        .verify_statement(AUTH_CONTEXT, &auth_message(&nonce, device), &signature)
        .map_err(|_| (codes::BAD_SIGNATURE, "the hello's signature does not verify".to_owned(), CLOSE_POLICY))?;
    Ok(device)
}

fn short(s: &str) -> String {
    s.chars().take(160).collect()
}

/// What one submission waits for.
type StoreWait = Pending<(MessageId, Result<Stored, ()>)>;
type AckWait = Pending<Vec<u64>>;

struct Conn {
    shared: Arc<Shared>,
    device: DeviceId,
    out: mpsc::Sender<Message>,
    /// Deliveries sent and not yet acknowledged.
    inflight: BTreeSet<u64>,
    /// Acknowledged deliveries whose commit is pending: not to be sent again meanwhile.
    acking: BTreeSet<u64>,
    /// Deliveries ready to send.
    queue: BTreeMap<u64, Arc<Vec<u8>>>,
    need_scan: bool,
    policy_seq: u64,
    last_heard: Instant,
    stores: FuturesUnordered<StoreWait>,
    acks: FuturesUnordered<AckWait>,
    closing: Option<(&'static str, String, u16)>,
}

impl Conn {
    fn new(shared: Arc<Shared>, device: DeviceId, out: mpsc::Sender<Message>) -> Self {
        Self {
            shared,
            device,
            out,
            inflight: BTreeSet::new(),
            acking: BTreeSet::new(),
            queue: BTreeMap::new(),
            need_scan: true,
            policy_seq: 0,
            last_heard: clock::instant(),
            stores: FuturesUnordered::new(),
            acks: FuturesUnordered::new(),
            closing: None,
        }
    }

    async fn serve(
        &mut self,
        stream: &mut SplitStream<WebSocket>,
        mut wakes: mpsc::Receiver<Wake>,
        flags: &Flags,
        writer: &mut tokio::task::JoinHandle<&'static str>,
    ) -> String {
        let welcome = ToDevice::Welcome { device: self.device, limits: self.shared.wire_limits() };
        self.send(&welcome);
        self.send_policy_reset();
        for frame in self.shared.directory_frames() {
            self.send(&frame);
        }
        let mut shutdown = self.shared.shutdown.clone();
        let mut heartbeat = tokio::time::interval(self.shared.config.heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        heartbeat.tick().await;
        let max_in_flight = self.shared.config.max_in_flight;
        loop {
            if let Some((code, reason, close_code)) = self.closing.take() {
                if close_code != 1000 || code == codes::ROTATED {
                    self.send(&ToDevice::Error { code: code.to_owned(), reason: reason.clone() });
                }
                let _ = self.out.try_send(close(close_code, code));
                return format!("{code}: {reason}");
            }
            self.pump().await;
            tokio::select! {
                biased;
                () = stopped(&mut shutdown) => {
                    self.closing = Some((codes::SHUTDOWN, "the relay is shutting down".to_owned(), CLOSE_AWAY));
                }
                result = &mut *writer => {
                    return result.unwrap_or("writer failed").to_owned();
                }
                () = flags.notify.notified() => self.on_flags(flags),
                Some(wake) = wakes.recv() => self.on_wake(wake),
                Some((id, outcome)) = self.stores.next(), if !self.stores.is_empty() => self.on_stored(id, outcome),
                Some(seqs) = self.acks.next(), if !self.acks.is_empty() => {
                    for seq in seqs {
                        self.acking.remove(&seq);
                    }
                }
                incoming = stream.next(), if self.stores.len() < max_in_flight => match incoming {
                    None => return "the device closed the connection".to_owned(),
                    Some(Err(e)) => return format!("connection error: {e}"),
                    Some(Ok(message)) => {
                        self.last_heard = clock::instant();
                        self.on_message(message).await;
                    }
                },
                _ = heartbeat.tick() => {
                    if self.last_heard.elapsed() > self.shared.config.idle_timeout {
                        self.closing = Some((codes::IDLE, "nothing heard from the device for too long".to_owned(), CLOSE_POLICY));
                    } else {
                        self.push(Message::Ping(Vec::new().into()));
                    }
                }
            }
        }
    }

    /// Queues a frame for the device; a full queue means the device does not keep up.
    fn push(&mut self, message: Message) {
        if self.out.try_send(message).is_err() && self.closing.is_none() {
            self.closing =
                Some((codes::SLOW_CLIENT, "the device does not read its frames fast enough".to_owned(), CLOSE_POLICY));
        }
    }

    fn send(&mut self, frame: &ToDevice) {
        match serde_json::to_string(frame) {
            Ok(text) => self.push(Message::Text(text.into())),
            Err(e) => tracing::error!(error = %e, "frame not serializable"),
        }
    }

    fn send_policy_reset(&mut self) {
        let (seq, actions) = match self.shared.policy.read() {
            Ok(p) => (p.seq(), p.snapshot_actions(now())),
            Err(_) => return,
        };
        self.policy_seq = seq;
        self.send(&ToDevice::Policy(PolicyFrame { seq, reset: true, actions }));
    }

    fn on_flags(&mut self, flags: &Flags) {
        if let Ok(mut slot) = flags.close.lock()
            && let Some((code, reason)) = slot.take()
        {
            self.closing = Some((code, reason, CLOSE_POLICY));
        }
        if flags.scan.swap(false, Ordering::AcqRel) {
            self.need_scan = true;
        }
        if flags.policy_reset.swap(false, Ordering::AcqRel) {
            self.send_policy_reset();
        }
        if flags.directory_full.swap(false, Ordering::AcqRel) {
            for frame in self.shared.directory_frames() {
                self.send(&frame);
            }
        }
    }

    fn on_wake(&mut self, wake: Wake) {
        match wake {
            Wake::Deliver(seq, body) => {
                if self.queue.len() < self.shared.config.window * 4 {
                    self.queue.insert(seq, body);
                } else {
                    self.need_scan = true;
                }
            }
            Wake::Policy(seq, text) => {
                if seq > self.policy_seq {
                    self.policy_seq = seq;
                    self.push(Message::Text(text.as_ref().into()));
                }
            }
            Wake::Directory(text) => self.push(Message::Text(text.as_ref().into())),
        }
    }

    /// Sends queued deliveries while the window has room, reading more from the database
    /// when told there are some it has not seen.
    async fn pump(&mut self) {
        let window = self.shared.config.window;
        while self.inflight.len() < window && self.closing.is_none() {
            if let Some((seq, body)) = self.queue.pop_first() {
                if self.inflight.contains(&seq) || self.acking.contains(&seq) {
                    continue;
                }
                self.inflight.insert(seq);
                self.push(Message::Binary(DeliverFrame::encode(seq, &body).into()));
                continue;
            }
            if !self.need_scan {
                break;
            }
            let limit = window * 2 + self.inflight.len() + self.acking.len();
            match self.shared.store.pending(self.device, limit).await {
                Ok(rows) => {
                    let complete = rows.len() < limit;
                    let mut added = 0;
                    for (seq, frame) in rows {
                        if !self.inflight.contains(&seq) && !self.acking.contains(&seq) {
                            self.queue.insert(seq, Arc::new(frame));
                            added += 1;
                        }
                    }
                    if complete || added == 0 {
                        self.need_scan = false;
                    }
                    if added == 0 {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(device = %self.device, error = %e, "cannot read waiting envelopes; will retry");
                    break;
                }
            }
        }
    }

    fn on_stored(&mut self, id: MessageId, outcome: Result<Stored, ()>) {
        let frame = match outcome {
            Ok(Stored::New { .. }) => ToDevice::Stored { id, duplicate: false },
            Ok(Stored::Duplicate) => ToDevice::Stored { id, duplicate: true },
            Ok(Stored::Conflict) => refused(
                Some(id),
                codes::REPLAYED,
                "this message id was used before for a different envelope; make a new envelope".to_owned(),
            ),
            Err(()) => refused(
                Some(id),
                codes::UNAVAILABLE,
                "the relay could not store the envelope; keep it and send it again later".to_owned(),
            ),
        };
        self.send(&frame);
    }

    async fn on_message(&mut self, message: Message) {
        match message {
            Message::Binary(bytes) => self.on_submit(&bytes).await,
            Message::Text(text) => match serde_json::from_str::<ToRelay>(text.as_str()) {
                Ok(frame) => self.on_frame(frame).await,
                Err(e) => {
                    self.closing = Some((
                        codes::BAD_FRAME,
                        format!("not a valid frame: {}", short(&e.to_string())),
                        CLOSE_PROTOCOL,
                    ));
                }
            },
            Message::Ping(_) | Message::Pong(_) => {}
            Message::Close(_) => {
                self.closing = Some(("relay.closed", "the device closed the connection".to_owned(), 1000));
            }
        }
    }

    async fn on_frame(&mut self, frame: ToRelay) {
        match frame {
            ToRelay::Hello { .. } => {
                self.closing = Some((codes::BAD_FRAME, "already logged in".to_owned(), CLOSE_PROTOCOL));
            }
            ToRelay::Ack { seqs } => {
                if seqs.len() > MAX_LIST {
                    self.closing =
                        Some((codes::BAD_FRAME, format!("an ack lists at most {MAX_LIST} deliveries"), CLOSE_PROTOCOL));
                    return;
                }
                for seq in &seqs {
                    self.inflight.remove(seq);
                    self.acking.insert(*seq);
                }
                match self.shared.writer.delivered_later(self.device, seqs.clone()).await {
                    Ok(rx) => self.acks.push(Box::pin(async move {
                        let _ = rx.await;
                        seqs
                    })),
                    Err(_) => {
                        for seq in seqs {
                            self.acking.remove(&seq);
                        }
                    }
                }
            }
            ToRelay::Report { events } => self.on_report(events).await,
            ToRelay::Agents { agents } => self.on_agents(agents).await,
            ToRelay::Components { agent, label, components } => self.on_components(agent, label, components).await,
            ToRelay::Lookup { devices } => {
                let bundles = devices
                    .iter()
                    .take(MAX_LIST)
                    .filter_map(|d| self.shared.device(*d))
                    .map(|info| BundleEntry {
                        bundle: info.bundle,
                        status: info.row.status,
                        rotation: info.row.rotation,
                    })
                    .collect();
                self.send(&ToDevice::Bundles { bundles });
            }
            ToRelay::Rotate { rotation } => self.on_rotate(&rotation).await,
        }
    }

    /// The checks on one envelope, in order, then the store; the answer comes when the
    /// commit does ([`Conn::on_stored`]).
    async fn on_submit(&mut self, frame: &[u8]) {
        let body = match SubmitFrame::check_head(frame) {
            Ok(body) => body,
            Err(e) => {
                self.closing = Some((e.code(), e.to_string(), CLOSE_PROTOCOL));
                return;
            }
        };
        let limits = self.shared.config.limits;
        let routed = match SubmitFrame::parse_body(body, &limits) {
            Ok(r) => r,
            Err(e) => {
                self.send(&refused(None, e.code(), e.to_string()));
                return;
            }
        };
        let id = routed.envelope.header().id;
        // Parsing is cheap; the signatures are not, so the rate limit comes before them.
        if let Err(wait) = self.shared.take_token(self.device) {
            let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
            let reason = format!("over {} envelopes a second; retry later", self.shared.config.rate_per_second);
            let mut r = refused(Some(id), codes::RATE_LIMITED, reason);
            if let ToDevice::Refused { retry_after_ms, .. } = &mut r {
                *retry_after_ms = Some(ms);
            }
            self.send(&r);
            return;
        }
        let header = routed.envelope.header().clone();
        if header.sender != self.device {
            self.send(&refused(Some(id), codes::SENDER_MISMATCH, FrameError::SenderMismatch.to_string()));
            return;
        }
        let Some(me) = self.shared.device(self.device).filter(|d| d.row.status == "active") else {
            self.closing =
                Some((codes::REVOKED, "this device's key was revoked or rotated away".to_owned(), CLOSE_POLICY));
            return;
        };
        if let Err(e) = routed.verify(&me.bundle) {
            tracing::info!(device = %self.device, code = e.code(), "envelope refused: {e}");
            self.send(&refused(Some(id), e.code(), e.to_string()));
            return;
        }
        // From here the metadata is authentic: refusals go to the audit log. Each agent is
        // named on its device's machine, so the policy keys it as every daemon does.
        let from = self.shared.on_its_machine(self.device, routed.routing.from.clone());
        let to = self.shared.on_its_machine(header.recipient, routed.routing.to.clone());
        let size = u64::try_from(routed.envelope.size()).unwrap_or(u64::MAX);
        let t = now();
        let c = &self.shared.config;
        let refusal = if t.as_millis().saturating_sub(header.timestamp.as_millis()) > millis(c.max_age) {
            Some((codes::EXPIRED, format!("the envelope is older than {} minutes", c.max_age.as_secs() / 60)))
        } else if header.timestamp.as_millis() > t.as_millis().saturating_add(millis(c.max_skew)) {
            Some((codes::NOT_YET_VALID, "the envelope is dated in the future; check this device's clock".to_owned()))
        } else if from.id == to.id {
            Some((codes::BAD_ROUTING, "an agent cannot message itself".to_owned()))
        } else {
            self.check_parties(&header.recipient, &from, &to)
        };
        let policy = match refusal {
            Some((code, reason)) => Check::Deny { code: code.to_owned(), reason },
            None => match self.shared.policy.read() {
                Ok(p) => Check::from(p.check(t, &from, &to)),
                Err(_) => Check::Deny { code: codes::UNAVAILABLE.to_owned(), reason: "policy unavailable".to_owned() },
            },
        };
        let record = |verdict: &str, code: Option<String>, reason: Option<String>| AuditRecord {
            at: t,
            source: RELAY.to_owned(),
            message: Some(id.to_string()),
            stage: "relaying".to_owned(),
            from: from.id.to_string(),
            from_label: from.label(),
            to: to.id.to_string(),
            to_label: to.label(),
            size,
            hops: None,
            verdict: verdict.to_owned(),
            code,
            rule: None,
            reason,
        };
        match policy {
            Check::Deny { code, reason } => {
                self.shared.audit(vec![record("deny", Some(code.clone()), Some(reason.clone()))]).await;
                self.send(&refused(Some(id), &code, reason));
            }
            Check::Allow { warnings } => {
                let (code, reason) = warnings.into_iter().next().map_or((None, None), |(c, r)| (Some(c), Some(r)));
                let audit = record("allow", code, reason);
                let message = NewMessage {
                    sender: self.device,
                    recipient: header.recipient,
                    message_id: id.to_string(),
                    digest: routed.digest(),
                    body: Arc::new(routed.body_bytes()),
                    sent_at: header.timestamp,
                    claim: from.clone(),
                };
                match self.shared.writer.store_later(message, audit).await {
                    Ok(rx) => {
                        let shared = self.shared.clone();
                        let claim = (from, self.device);
                        self.stores.push(Box::pin(async move {
                            let outcome = rx.await.unwrap_or(Err(()));
                            if matches!(outcome, Ok(Stored::New { .. })) {
                                claim_agent(&shared, claim.0, claim.1);
                            }
                            (id, outcome)
                        }));
                    }
                    Err(_) => self.send(&refused(
                        Some(id),
                        codes::UNAVAILABLE,
                        "the relay is shutting down; send it again later".to_owned(),
                    )),
                }
            }
        }
    }

    /// The recipient device is enrolled and active; the sending agent is not another
    /// device's; the receiving agent, if known, is on the recipient device.
    fn check_parties(&self, recipient: &DeviceId, from: &Agent, to: &Agent) -> Option<(&'static str, String)> {
        match self.shared.device(*recipient) {
            None => return Some((codes::UNKNOWN_RECIPIENT, format!("device {recipient} is not enrolled here"))),
            Some(d) if d.row.status != "active" => {
                return Some((codes::UNKNOWN_RECIPIENT, format!("device {recipient} was {}", d.row.status)));
            }
            Some(_) => {}
        }
        let agents = self.shared.agents.read().ok()?;
        if let Some(owner) = agents.get(&from.id)
            && owner.device != self.device
        {
            return Some((codes::AGENT_NOT_YOURS, format!("agent {} runs on another device", from.label())));
        }
        if let Some(owner) = agents.get(&to.id)
            && owner.device != *recipient
        {
            return Some((
                codes::WRONG_DEVICE,
                format!("agent {} runs on device {}, not {recipient}", to.label(), owner.device),
            ));
        }
        None
    }

    async fn on_report(&mut self, events: Vec<Event>) {
        if events.len() > MAX_LIST {
            self.closing =
                Some((codes::BAD_FRAME, format!("a report holds at most {MAX_LIST} events"), CLOSE_PROTOCOL));
            return;
        }
        let source = self.device.to_string();
        let t = now();
        let mut records = Vec::new();
        let mut actions: Vec<AdminAction> = Vec::new();
        for event in &events {
            match event {
                Event::Decision(d) => {
                    // A device reports on its own agents: the sender when sending, the
                    // recipient when delivering.
                    let own = match d.stage {
                        agentfw_core::policy::Stage::Sending => &d.from,
                        agentfw_core::policy::Stage::Delivering => &d.to,
                    };
                    if self.owned_elsewhere(own) {
                        continue;
                    }
                    records.push(AuditRecord::from_decision(&source, d));
                }
                Event::WouldRefuse { id, stage, agent, reason } => {
                    if self.owned_elsewhere(agent) {
                        continue;
                    }
                    records.push(AuditRecord {
                        at: t,
                        source: source.clone(),
                        message: Some(id.to_string()),
                        stage: match stage {
                            agentfw_core::policy::Stage::Sending => "sending",
                            agentfw_core::policy::Stage::Delivering => "delivering",
                        }
                        .to_owned(),
                        from: agent.to_string(),
                        from_label: agent.to_string(),
                        to: String::new(),
                        to_label: String::new(),
                        size: 0,
                        hops: None,
                        verdict: "warn".to_owned(),
                        code: Some(reason.code.to_string()),
                        rule: reason.rule.clone(),
                        reason: Some(reason.text.clone()),
                    });
                }
                Event::Quarantined { .. } | Event::Remembered { .. } => {
                    let action = self.shared.policy.read().ok().and_then(|p| p.contain_reported(t, event));
                    actions.extend(action);
                }
                _ => {}
            }
        }
        self.shared.audit(records).await;
        if !actions.is_empty() {
            tracing::info!(device = %self.device, actions = actions.len(), "containment reported; telling every device");
            if let Err(e) = self.shared.change_policy(&source, actions).await {
                tracing::warn!(error = %e, "containment not recorded");
            }
        }
    }

    fn owned_elsewhere(&self, agent: &AgentId) -> bool {
        self.shared.agents.read().is_ok_and(|a| a.get(agent).is_some_and(|row| row.device != self.device))
    }

    async fn on_agents(&mut self, agents: Vec<Agent>) {
        if agents.len() > MAX_LIST {
            self.closing = Some((codes::BAD_FRAME, format!("at most {MAX_LIST} agents"), CLOSE_PROTOCOL));
            return;
        }
        match self.shared.store.set_agents(self.device, &agents, now(), &self.shared.instance).await {
            Ok(None) => {}
            Ok(Some(taken)) => {
                for agent in taken {
                    self.send(&refused(
                        None,
                        codes::AGENT_NOT_YOURS,
                        format!("agent {} runs on another device", agent.id),
                    ));
                }
                if let Err(e) = self.shared.reload_device(self.device).await {
                    tracing::warn!(error = %e, "directory not updated");
                }
            }
            Err(e) => tracing::warn!(device = %self.device, error = %e, "agents not recorded"),
        }
    }

    async fn on_components(&mut self, agent: AgentId, label: String, components: Vec<String>) {
        if self.owned_elsewhere(&agent) || components.len() > 1024 {
            self.send(&refused(None, codes::AGENT_NOT_YOURS, format!("cannot report components of {agent}")));
            return;
        }
        let ids: Result<Vec<ComponentId>, _> = components.into_iter().map(ComponentId::new).collect();
        let ids = match ids {
            Ok(ids) => ids,
            Err(e) => {
                self.send(&refused(None, codes::BAD_FRAME, e.to_string()));
                return;
            }
        };
        let rated = match self.shared.policy.read() {
            Ok(p) => p.rate_components(&ids),
            Err(_) => return,
        };
        tracing::info!(device = %self.device, %agent, label = %label, "admission refresh");
        let action = AdminAction::SetComponents { agent: agent.to_string(), components: rated };
        if let Err(e) = self.shared.change_policy(&self.device.to_string(), vec![action]).await {
            tracing::warn!(error = %e, "components not recorded");
        }
    }

    async fn on_rotate(&mut self, line: &str) {
        let rotation = match Rotation::parse(line) {
            Ok(r) => r,
            Err(e) => {
                self.send(&refused(None, codes::BAD_FRAME, format!("not a rotation notice: {e}")));
                return;
            }
        };
        let Some(me) = self.shared.device(self.device) else { return };
        if rotation.old() != self.device || rotation.verify(&me.bundle).is_err() {
            self.send(&refused(
                None,
                codes::BAD_SIGNATURE,
                "the rotation is not this device's, or its signatures do not verify".to_owned(),
            ));
            return;
        }
        let new = rotation.new_bundle();
        let row = DeviceRow {
            device: new.device(),
            bundle: new.to_line(),
            name: me.row.name.clone(),
            enrolled_at: now(),
            status: "active".to_owned(),
            superseded_by: None,
            rotation: None,
        };
        match self.shared.store.rotate(self.device, &row, &rotation.to_line(), now(), &self.shared.instance).await {
            Ok(true) => {
                tracing::info!(old = %self.device, new = %row.device, "device rotated its keys");
                for d in [row.device, self.device] {
                    if let Err(e) = self.shared.reload_device(d).await {
                        tracing::warn!(error = %e, "device cache not updated");
                    }
                }
                self.closing = Some((codes::ROTATED, format!("keys rotated: log in again as {}", row.device), 1000));
            }
            Ok(false) => self.send(&refused(
                None,
                codes::REVOKED,
                "this rotation was applied already or the new key is known".to_owned(),
            )),
            Err(e) => {
                tracing::warn!(error = %e, "rotation failed");
                self.send(&refused(
                    None,
                    codes::UNAVAILABLE,
                    "the relay could not record the rotation; try again".to_owned(),
                ));
            }
        }
    }
}

/// Records that `agent` runs on `device` once its first envelope is stored.
fn claim_agent(shared: &Shared, agent: Agent, device: DeviceId) {
    if let Ok(mut agents) = shared.agents.write() {
        agents.entry(agent.id.clone()).or_insert(crate::store::AgentRow {
            agent,
            device,
            live: true,
            last_seen: now(),
        });
    }
}

/// The relay's verdict on one envelope: its own checks' codes, or the central policy's.
enum Check {
    /// Pass it on; report-only admission warnings, if any (AD6).
    Allow {
        warnings: Vec<(String, String)>,
    },
    Deny {
        code: String,
        reason: String,
    },
}

impl From<Route> for Check {
    fn from(route: Route) -> Self {
        match route.verdict {
            Verdict::Pass { .. } => Check::Allow {
                warnings: route.warnings.into_iter().map(|(_, r)| (r.code.to_string(), r.text)).collect(),
            },
            Verdict::Refuse(r) | Verdict::Hold { reason: r, .. } => {
                Check::Deny { code: r.code.to_string(), reason: r.text }
            }
        }
    }
}

fn refused(id: Option<MessageId>, code: &str, reason: String) -> ToDevice {
    ToDevice::Refused { id, code: code.to_owned(), reason, retry_after_ms: None }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
