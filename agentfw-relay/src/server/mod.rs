//! The relay server: enrollment, device connections, the admin API and dashboard, and the
//! background work (notifications between instances, policy expiry, retention).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use agentfw_core::firewall::AdminAction;
use agentfw_core::message::{Agent, AgentId};
use agentfw_core::seal::{DeviceId, Limits, PublicBundle};
use agentfw_core::time::Timestamp;
use axum::Router;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::audit::{AuditRecord, RELAY};
use crate::clock;
use crate::protocol::{self, AgentEntry, DeviceEntry, DirectoryFrame, PolicyFrame, ToDevice, WireLimits};
use crate::store::{AfterCommit, AgentRow, DeviceRow, Note, Store, StoreError, Writer};
use agentfw_core::central::{Policy, PolicySnapshot};

pub mod admin;
mod device;
mod enroll;
pub mod hub;
pub mod tls;

use hub::Hub;

/// Every number the relay uses. The defaults are the spec's where it has one.
#[derive(Clone, Debug)]
pub struct Config {
    pub listen: SocketAddr,
    /// `sqlite://PATH` (created if missing) or `postgres://…`.
    pub database_url: String,
    /// The admin credential. When unset, the relay keeps the one it has, or makes one at
    /// first start and prints it once.
    pub admin_token: Option<String>,
    /// Body size limit (default 64 KiB, as the firewall's).
    pub limits: Limits,
    /// Envelopes a device may submit a second, sustained, and the burst above it.
    pub rate_per_second: u32,
    pub burst: u32,
    /// Deliveries in flight to one device before it acknowledges.
    pub window: usize,
    /// Submissions from one device being stored at once.
    pub max_in_flight: usize,
    /// From TCP accept to a verified hello.
    pub handshake_timeout: Duration,
    /// A device that sends nothing (not even a pong) for this long is disconnected.
    pub idle_timeout: Duration,
    pub heartbeat: Duration,
    /// A device that does not take a frame within this long is a slow client and is
    /// disconnected.
    pub send_timeout: Duration,
    /// Every HTTP request (not the WebSocket) must finish within this long.
    pub http_timeout: Duration,
    /// A connection must send its request headers within this long.
    pub header_timeout: Duration,
    /// Open TCP connections at once (devices, admins, anything); more are turned away.
    pub max_connections: usize,
    /// How old an envelope may be when submitted, and how far in the future (TX4).
    pub max_age: Duration,
    pub max_skew: Duration,
    /// Undelivered envelopes are dropped after this long (a recipient would refuse them
    /// as expired anyway).
    pub pending_ttl: Duration,
    /// Audit records are kept this long (AM4: 90 days).
    pub retention: Duration,
    pub invite_ttl: Duration,
    pub session_ttl: Duration,
    /// Set `Secure` on the admin cookie (when served over HTTPS by a proxy in front; with
    /// `tls` it is set anyway).
    pub secure_cookie: bool,
    /// Serve TLS with these settings ([`tls::load`]); `None`: plain HTTP (on loopback, or
    /// behind a proxy that terminates TLS).
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8470)),
            database_url: "sqlite://agentfw-relay.db".to_owned(),
            admin_token: None,
            limits: Limits::default(),
            rate_per_second: 100,
            burst: 1000,
            window: 256,
            max_in_flight: 256,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(90),
            heartbeat: Duration::from_secs(30),
            send_timeout: Duration::from_secs(30),
            http_timeout: Duration::from_secs(30),
            header_timeout: Duration::from_secs(10),
            max_connections: 10_000,
            max_age: Duration::from_secs(3600),
            max_skew: Duration::from_secs(300),
            pending_ttl: Duration::from_secs(3600),
            retention: Duration::from_secs(90 * 86_400),
            invite_ttl: Duration::from_secs(7 * 86_400),
            session_ttl: Duration::from_secs(12 * 3600),
            secure_cookie: false,
            tls: None,
        }
    }
}

/// Why the relay could not start or do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error("the operating system's random number generator failed: {0}")]
    Random(getrandom::Error),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Tls(String),
}

/// About how many bytes of directory one frame carries.
const DIRECTORY_CHUNK: usize = 12 * 1024;

/// A device as the relay knows it.
#[derive(Clone, Debug)]
pub(crate) struct DeviceInfo {
    pub bundle: PublicBundle,
    pub row: DeviceRow,
}

/// State shared by every task of one relay instance.
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: Config,
    pub store: Store,
    pub writer: Writer,
    pub hub: Arc<Hub>,
    pub policy: RwLock<Policy>,
    policy_sync: tokio::sync::Mutex<()>,
    pub devices: RwLock<HashMap<DeviceId, DeviceInfo>>,
    pub agents: RwLock<HashMap<AgentId, AgentRow>>,
    pub admin_hash: RwLock<blake3::Hash>,
    /// Per-device rate limits, kept across a device's reconnects.
    buckets: std::sync::Mutex<HashMap<DeviceId, crate::ratelimit::TokenBucket>>,
    pub shutdown: watch::Receiver<bool>,
    /// Names this instance in notifications, so it ignores its own.
    pub instance: String,
}

struct HubAfter(Arc<Hub>);

impl AfterCommit for HubAfter {
    fn stored(&self, recipient: DeviceId, seq: u64, body: Arc<Vec<u8>>) {
        self.0.deliver(recipient, seq, body);
    }

    fn audited(&self) {
        self.0.dashboard_changed();
    }
}

/// A running relay instance.
#[derive(Debug)]
pub struct Relay {
    shared: Arc<Shared>,
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    server: JoinHandle<()>,
    generated_token: Option<String>,
}

/// Settings keys.
const ADMIN_TOKEN_HASH: &str = "admin_token_hash";
const POLICY_SNAPSHOT: &str = "policy_snapshot";

impl Relay {
    /// Opens the store, loads the state, binds `config.listen` and starts serving.
    pub async fn start(config: Config) -> Result<Self, RelayError> {
        let store = Store::open(&config.database_url).await?;
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|source| RelayError::Listen { addr: config.listen, source })?;
        Self::start_with(config, store, listener).await
    }

    /// As [`Relay::start`], on an open store and a bound listener.
    pub async fn start_with(config: Config, store: Store, listener: TcpListener) -> Result<Self, RelayError> {
        let addr = listener.local_addr().map_err(|source| RelayError::Listen { addr: config.listen, source })?;
        let instance = hex(&clock::random_bytes::<8>().map_err(RelayError::Random)?);

        // The admin credential: the one given, else the stored one, else a new one shown once.
        let mut generated_token = None;
        let admin_hash = match &config.admin_token {
            Some(token) => {
                let hash = blake3::hash(token.as_bytes());
                store.set_setting(ADMIN_TOKEN_HASH, &hash.to_hex()).await?;
                hash
            }
            None => {
                let token =
                    format!("afwa_{}", protocol::encode_b64(&clock::random_bytes::<32>().map_err(RelayError::Random)?));
                let candidate = blake3::hash(token.as_bytes()).to_hex().to_string();
                let stored = store.setting_or_insert(ADMIN_TOKEN_HASH, &candidate).await?;
                if stored == candidate {
                    generated_token = Some(token);
                }
                blake3::Hash::from_hex(stored.as_bytes()).map_err(|_| StoreError::Corrupt("admin token hash".into()))?
            }
        };

        let policy = match store.setting(POLICY_SNAPSHOT).await? {
            Some(json) => Policy::from_snapshot(
                serde_json::from_str::<PolicySnapshot>(&json)
                    .map_err(|e| StoreError::Corrupt(format!("policy snapshot: {e}")))?,
            ),
            None => Policy::new(),
        };

        let hub = Arc::new(Hub::new());
        let writer = Writer::start(store.clone(), instance.clone(), clock::now, Arc::new(HubAfter(hub.clone())));
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            config: config.clone(),
            store,
            writer,
            hub,
            policy: RwLock::new(policy),
            policy_sync: tokio::sync::Mutex::new(()),
            devices: RwLock::new(HashMap::new()),
            agents: RwLock::new(HashMap::new()),
            admin_hash: RwLock::new(admin_hash),
            buckets: std::sync::Mutex::new(HashMap::new()),
            shutdown: shutdown_rx,
            instance,
        });
        shared.load_devices().await?;
        shared.catch_up_policy().await?;

        let mut tasks = vec![tokio::spawn(maintenance(shared.clone()))];
        if let Some(pool) = shared.store.pg_pool().cloned() {
            tasks.push(tokio::spawn(listen(shared.clone(), pool)));
        }

        let app = router(shared.clone());
        let server = tokio::spawn(accept(listener, app, shared.clone()));
        tracing::info!(%addr, database = %shared.store.display_url(), instance = %shared.instance, "relay listening");
        Ok(Self { shared, addr, shutdown: shutdown_tx, tasks, server, generated_token })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR` (`https://` with TLS), what devices and admins are given.
    pub fn url(&self) -> String {
        let scheme = if self.shared.config.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The admin token this start made, if it had to make one (shown once).
    pub fn generated_admin_token(&self) -> Option<&str> {
        self.generated_token.as_deref()
    }

    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// Devices connected to this instance.
    pub fn connected(&self) -> usize {
        self.shared.hub.connected()
    }

    /// Makes a one-time invite.
    pub async fn invite(&self, note: &str) -> Result<String, RelayError> {
        create_invite(&self.shared.store, self.shared.config.invite_ttl, note).await
    }

    /// Applies admin actions as the admin would (they reach every device).
    pub async fn admin(&self, actions: Vec<AdminAction>) -> Result<u64, RelayError> {
        self.shared.change_policy("admin", actions).await
    }

    /// Stops: closes every device connection, finishes HTTP requests, stops background
    /// work and closes the store.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        self.shared.hub.close(None, protocol::codes::SHUTDOWN, "the relay is shutting down");
        let _ = tokio::time::timeout(Duration::from_secs(5), self.server).await;
        for task in self.tasks {
            task.abort();
        }
        self.shared.store.close().await;
    }
}

/// Makes a one-time invite in `store`, valid for `ttl`; returns the token.
pub async fn create_invite(store: &Store, ttl: Duration, note: &str) -> Result<String, RelayError> {
    let token = format!("afwi_{}", protocol::encode_b64(&clock::random_bytes::<24>().map_err(RelayError::Random)?));
    let now = clock::now();
    store.create_invite(blake3::hash(token.as_bytes()).as_bytes(), now, now + ttl, note).await?;
    Ok(token)
}

/// Stores a new admin token; returns it (shown once).
pub async fn reset_admin_token(store: &Store) -> Result<String, RelayError> {
    let token = format!("afwa_{}", protocol::encode_b64(&clock::random_bytes::<32>().map_err(RelayError::Random)?));
    store.set_setting(ADMIN_TOKEN_HASH, &blake3::hash(token.as_bytes()).to_hex()).await?;
    Ok(token)
}

fn router(shared: Arc<Shared>) -> Router {
    let timeout = shared.config.http_timeout;
    let http = Router::new()
        .route(protocol::ENROLL_PATH, post(enroll::enroll))
        .route("/healthz", get(|| async { "ok" }))
        .merge(admin::routes())
        .layer(axum::middleware::from_fn(move |req, next: axum::middleware::Next| async move {
            match tokio::time::timeout(timeout, next.run(req)).await {
                Ok(response) => response,
                Err(_) => {
                    admin::error(axum::http::StatusCode::REQUEST_TIMEOUT, "relay.timeout", "the request took too long")
                }
            }
        }));
    Router::new().route(protocol::CONNECT_PATH, get(device::connect)).merge(http).with_state(shared)
}

/// Accepts connections until shutdown: at most `max_connections` at once, each with a
/// deadline for its TLS handshake and its request headers (slow clients are dropped),
/// HTTP/1.1 with upgrades for the device WebSockets. On shutdown, open requests finish.
async fn accept(listener: TcpListener, app: Router, shared: Arc<Shared>) {
    let limit = Arc::new(tokio::sync::Semaphore::new(shared.config.max_connections));
    let header_timeout = shared.config.header_timeout;
    let tls = shared.config.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let mut shutdown = shared.shutdown.clone();
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = stopped(&mut shutdown) => break,
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: wait a moment rather than spin.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = limit.clone().try_acquire_owned() else {
            tracing::warn!(%peer, "too many connections; turned away");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let stop = shutdown.clone();
        let tls = tls.clone();
        connections.spawn(async move {
            let _permit = permit;
            match tls {
                None => serve(stream, peer, app, header_timeout, stop).await,
                Some(acceptor) => {
                    if let Some(stream) = tls::accept(&acceptor, stream, header_timeout).await {
                        serve(stream, peer, app, header_timeout, stop).await;
                    }
                }
            }
        });
    }
    while connections.join_next().await.is_some() {}
}

/// Serves one connection, plain or TLS, until it closes or the relay stops.
async fn serve<S>(stream: S, peer: SocketAddr, app: Router, header_timeout: Duration, mut stop: watch::Receiver<bool>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower::ServiceExt as _;

    let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
        request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
        app.clone().oneshot(request)
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        () = stopped(&mut stop) => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// Resolves once the relay is shutting down.
pub(crate) async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await.is_ok();
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Shared {
    /// The limits told to devices.
    pub fn wire_limits(&self) -> WireLimits {
        let c = &self.config;
        WireLimits {
            max_plaintext: c.limits.max_plaintext,
            max_frame: protocol::max_frame(&c.limits),
            rate_per_second: c.rate_per_second,
            burst: c.burst,
            window: c.window,
        }
    }

    /// Reads every device and agent into the caches. Merges rather than replaces, so a
    /// read that raced with an enrollment, revocation or announcement here cannot undo it:
    /// a device never goes back to active once retired, and an agent row replaces the
    /// cached one only if it is at least as recent.
    async fn load_devices(&self) -> Result<(), StoreError> {
        let rows = self.store.devices().await?;
        let agents = self.store.agents().await?;
        if let Ok(mut devices) = self.devices.write() {
            for row in rows {
                let bundle = match PublicBundle::parse(&row.bundle) {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::error!(device = %row.device, error = %e, "stored bundle does not parse; device ignored");
                        continue;
                    }
                };
                let keep =
                    devices.get(&row.device).is_some_and(|old| old.row.status != "active" && row.status == "active");
                if !keep {
                    devices.insert(row.device, DeviceInfo { bundle, row });
                }
            }
        }
        if let Ok(mut map) = self.agents.write() {
            for row in agents {
                if map.get(&row.agent.id).is_none_or(|old| row.last_seen >= old.last_seen) {
                    map.insert(row.agent.id.clone(), row);
                }
            }
        }
        Ok(())
    }

    pub fn device(&self, id: DeviceId) -> Option<DeviceInfo> {
        self.devices.read().ok()?.get(&id).cloned()
    }

    /// `agent`, of the device `device`, named on its machine as every daemon names it
    /// ([`crate::protocol::machine_name`]), whatever the routing said.
    pub fn on_its_machine(&self, device: DeviceId, mut agent: Agent) -> Agent {
        let enrolled = self.device(device).map(|d| d.row.name).unwrap_or_default();
        agent.machine = crate::protocol::machine_name(&enrolled, device, &agent.machine);
        agent
    }

    /// Re-reads one device and its agents, closes its connections if it is no longer
    /// active, and tells every device here what changed.
    pub async fn reload_device(&self, id: DeviceId) -> Result<(), StoreError> {
        let row = self.store.device(id).await?;
        let agents = self.store.agents_of(id).await?;
        let mut entries = Vec::new();
        if let Some(row) = row {
            if row.status != "active" {
                self.hub.close(Some(id), protocol::codes::REVOKED, "this device's key was revoked or rotated away");
            }
            entries.push(device_entry(&row));
            if let (Ok(bundle), Ok(mut devices)) = (PublicBundle::parse(&row.bundle), self.devices.write()) {
                // A retired device never becomes active again (a stale read must not undo it).
                let keep = devices.get(&id).is_some_and(|old| old.row.status != "active" && row.status == "active");
                if !keep {
                    devices.insert(id, DeviceInfo { bundle, row });
                }
            }
        }
        if let Ok(mut map) = self.agents.write() {
            for a in &agents {
                if map.get(&a.agent.id).is_none_or(|old| a.last_seen >= old.last_seen) {
                    map.insert(a.agent.id.clone(), a.clone());
                }
            }
        }
        let frame = ToDevice::Directory(DirectoryFrame {
            full: false,
            devices: entries,
            agents: agents.iter().map(agent_entry).collect(),
        });
        if let Ok(text) = serde_json::to_string(&frame) {
            self.hub.directory(text.into());
        }
        self.hub.dashboard_changed();
        Ok(())
    }

    /// The whole directory: every device with live agents, and those agents. Split into
    /// frames of about [`DIRECTORY_CHUNK`] bytes, the first `full` and the rest changes
    /// (each device's agents in one frame), so a large team does not make every login
    /// send, and every connection keep a buffer for, one huge frame. Devices without live
    /// agents are left out: `lookup` answers for them.
    pub fn directory_frames(&self) -> Vec<ToDevice> {
        let devices: HashMap<DeviceId, DeviceEntry> = self
            .devices
            .read()
            .map(|d| d.values().map(|i| (i.row.device, device_entry(&i.row))).collect())
            .unwrap_or_default();
        let mut by_device: std::collections::BTreeMap<DeviceId, Vec<AgentEntry>> = std::collections::BTreeMap::new();
        if let Ok(agents) = self.agents.read() {
            for a in agents.values().filter(|a| a.live) {
                by_device.entry(a.device).or_default().push(agent_entry(a));
            }
        }
        let mut frames = Vec::new();
        let (mut chunk_devices, mut chunk_agents, mut size) = (Vec::new(), Vec::new(), 0usize);
        for (device, agents) in by_device {
            let Some(entry) = devices.get(&device) else { continue };
            size += 120 + agents.iter().map(|a| 160 + a.agent.id.as_str().len() + a.agent.project.len()).sum::<usize>();
            chunk_devices.push(entry.clone());
            chunk_agents.extend(agents);
            if size >= DIRECTORY_CHUNK {
                let full = frames.is_empty();
                frames.push(ToDevice::Directory(DirectoryFrame {
                    full,
                    devices: std::mem::take(&mut chunk_devices),
                    agents: std::mem::take(&mut chunk_agents),
                }));
                size = 0;
            }
        }
        if frames.is_empty() || !chunk_devices.is_empty() {
            frames.push(ToDevice::Directory(DirectoryFrame {
                full: frames.is_empty(),
                devices: chunk_devices,
                agents: chunk_agents,
            }));
        }
        frames
    }

    /// Appends a policy change and applies it here; other instances follow on the note.
    pub async fn change_policy(&self, origin: &str, actions: Vec<AdminAction>) -> Result<u64, RelayError> {
        if actions.is_empty() {
            return Ok(self.policy.read().map(|p| p.seq()).unwrap_or(0));
        }
        let seq = self.store.append_policy(origin, clock::now(), &actions, &self.instance).await?;
        self.catch_up_policy().await?;
        Ok(seq)
    }

    /// Applies every policy log entry this instance has not applied yet, in order, and
    /// sends each to the devices connected here.
    pub async fn catch_up_policy(&self) -> Result<(), StoreError> {
        let _one_at_a_time = self.policy_sync.lock().await;
        let mine = self.policy.read().map(|p| p.seq()).unwrap_or(0);
        // Another instance compacted the log past what this one applied: start from its snapshot.
        if let Some(json) = self.store.setting(POLICY_SNAPSHOT).await?
            && let Ok(snapshot) = serde_json::from_str::<PolicySnapshot>(&json)
            && snapshot.seq > mine
        {
            if let Ok(mut p) = self.policy.write() {
                *p = Policy::from_snapshot(snapshot);
            }
            self.hub.policy_reset_all();
        }
        let since = self.policy.read().map(|p| p.seq()).unwrap_or(0);
        for (seq, at, actions) in self.store.policy_since(since).await? {
            if let Ok(mut p) = self.policy.write() {
                p.apply(seq, at, &actions);
            }
            let frame = ToDevice::Policy(PolicyFrame { seq, reset: false, actions });
            if let Ok(text) = serde_json::to_string(&frame) {
                self.hub.policy(seq, text.into());
            }
        }
        self.hub.dashboard_changed();
        Ok(())
    }

    /// The relay's own audit records for refusals it made on authenticated metadata.
    pub async fn audit(&self, records: Vec<AuditRecord>) {
        if let Err(e) = self.writer.audit(records).await {
            tracing::warn!(error = %e, "audit record not written");
        }
    }

    /// Takes one envelope from `device`'s allowance, or says how long until there is one.
    pub fn take_token(&self, device: DeviceId) -> Result<(), Duration> {
        let now = clock::instant();
        let Ok(mut buckets) = self.buckets.lock() else { return Ok(()) };
        let (rate, burst) = (self.config.rate_per_second, self.config.burst);
        buckets.entry(device).or_insert_with(|| crate::ratelimit::TokenBucket::new(rate, burst, now)).take(now)
    }

    pub fn check_admin_token(&self, token: &str) -> bool {
        // blake3::Hash compares in constant time.
        self.admin_hash.read().is_ok_and(|h| *h == blake3::hash(token.as_bytes()))
    }
}

pub(crate) fn device_entry(row: &DeviceRow) -> DeviceEntry {
    DeviceEntry {
        device: row.device,
        name: row.name.clone(),
        status: row.status.clone(),
        superseded_by: row.superseded_by,
    }
}

pub(crate) fn agent_entry(row: &AgentRow) -> AgentEntry {
    AgentEntry { agent: row.agent.clone(), device: row.device, live: row.live }
}

/// Periodic work: expire quarantines, tell dashboards, prune, compact the policy log.
async fn maintenance(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n: u64 = 0;
    loop {
        tick.tick().await;
        n = n.wrapping_add(1);
        if shared.hub.flush_dashboard() && shared.store.is_postgres() {
            let _ = shared.store.notify(&Note::Dashboard, &shared.instance).await;
        }
        if n.is_multiple_of(4)
            && let Ok(mut p) = shared.policy.write()
        {
            p.expire(clock::now());
        }
        // Every ten minutes (and soon after start): retention and compaction.
        if n % 2400 == 20 {
            prune(&shared).await;
        }
    }
}

async fn prune(shared: &Shared) {
    let c = &shared.config;
    let now = clock::now();
    match shared.store.prune(now, c.retention, c.max_age + c.max_skew, c.pending_ttl).await {
        Ok(pruned) => {
            if pruned.audit + pruned.delivered > 0 || !pruned.expired.is_empty() {
                tracing::info!(
                    audit = pruned.audit,
                    delivered = pruned.delivered,
                    expired = pruned.expired.len(),
                    "pruned"
                );
            }
            let records = pruned
                .expired
                .into_iter()
                .map(|(sender, recipient, id, size)| AuditRecord {
                    at: now,
                    source: RELAY.to_owned(),
                    message: Some(id),
                    stage: "relaying".to_owned(),
                    from: format!("device:{sender}"),
                    from_label: sender,
                    to: format!("device:{recipient}"),
                    to_label: recipient,
                    size,
                    hops: None,
                    verdict: "deny".to_owned(),
                    code: Some("relay.undelivered".to_owned()),
                    rule: None,
                    reason: Some("the recipient device did not collect it in time".to_owned()),
                })
                .collect();
            shared.audit(records).await;
        }
        Err(e) => tracing::warn!(error = %e, "pruning failed"),
    }
    // Compaction: keep the policy log short by snapshotting the state it adds up to.
    if shared.store.policy_log_len().await.unwrap_or(0) > 1000 {
        let _one_at_a_time = shared.policy_sync.lock().await;
        let snapshot = shared.policy.read().ok().map(|p| (p.seq(), serde_json::to_string(&p.snapshot())));
        if let Some((seq, Ok(json))) = snapshot
            && let Err(e) = shared.store.compact_policy(seq, &json).await
        {
            tracing::warn!(error = %e, "policy compaction failed");
        }
    }
}

/// PostgreSQL notifications from other instances (and resyncs after a lost connection).
async fn listen(shared: Arc<Shared>, pool: sqlx::PgPool) {
    loop {
        let mut listener = match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "notification listener cannot connect; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(e) = listener.listen(crate::store::CHANNEL).await {
            tracing::warn!(error = %e, "LISTEN failed; retrying");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        // Whatever was missed while not listening.
        resync(&shared).await;
        loop {
            match listener.try_recv().await {
                Ok(Some(n)) => {
                    let Some((instance, note)) = crate::store::Note::decode(n.payload()) else {
                        continue;
                    };
                    if instance == shared.instance {
                        continue;
                    }
                    match note {
                        Note::Deliver(d) => shared.hub.scan(d),
                        Note::Policy => {
                            if let Err(e) = shared.catch_up_policy().await {
                                tracing::warn!(error = %e, "policy catch-up failed");
                            }
                        }
                        Note::Device(d) => {
                            if let Err(e) = shared.reload_device(d).await {
                                tracing::warn!(error = %e, "device reload failed");
                            }
                        }
                        Note::Dashboard => {
                            shared.hub.dashboard_changed();
                        }
                    }
                }
                Ok(None) => {
                    tracing::warn!("notification connection lost; resyncing");
                    resync(&shared).await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "notification listener failed; reconnecting");
                    break;
                }
            }
        }
    }
}

async fn resync(shared: &Shared) {
    if let Err(e) = shared.catch_up_policy().await {
        tracing::warn!(error = %e, "policy catch-up failed");
    }
    if let Err(e) = shared.load_devices().await {
        tracing::warn!(error = %e, "device reload failed");
    }
    shared.hub.scan_all();
}

/// The time now, for handlers.
pub(crate) fn now() -> Timestamp {
    clock::now()
}
