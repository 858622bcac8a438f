//! Which devices are connected to this relay instance, and how to wake their connections.
//!
//! Nothing here blocks: a wake that does not fit in a connection's queue sets a flag
//! instead (scan the database, resend the whole policy or directory), so a slow device
//! never holds up the writer or anyone else.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agentfw_core::seal::DeviceId;
use tokio::sync::{Notify, broadcast, mpsc};

/// How many wakes a connection may have waiting.
const WAKE_CAPACITY: usize = 512;

/// Something for one connection to do.
#[derive(Debug)]
pub enum Wake {
    /// An envelope was stored for this device.
    Deliver(u64, Arc<Vec<u8>>),
    /// A policy log entry, as a ready text frame, with its sequence number.
    Policy(u64, Arc<str>),
    /// A directory change, as a ready text frame.
    Directory(Arc<str>),
}

/// Flags a connection checks whenever it is notified.
#[derive(Debug, Default)]
pub struct Flags {
    pub scan: AtomicBool,
    pub policy_reset: AtomicBool,
    pub directory_full: AtomicBool,
    pub close: Mutex<Option<(&'static str, String)>>,
    pub notify: Notify,
}

#[derive(Debug)]
struct Handle {
    id: u64,
    tx: mpsc::Sender<Wake>,
    flags: Arc<Flags>,
}

/// The registry of this instance's connections.
#[derive(Debug)]
pub struct Hub {
    conns: Mutex<HashMap<DeviceId, Vec<Handle>>>,
    next: AtomicU64,
    dashboard_dirty: AtomicBool,
    dashboard: broadcast::Sender<()>,
}

impl Default for Hub {
    fn default() -> Self {
        Self::new()
    }
}

impl Hub {
    pub fn new() -> Self {
        let (dashboard, _) = broadcast::channel(16);
        Self {
            conns: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            dashboard_dirty: AtomicBool::new(false),
            dashboard,
        }
    }

    /// Registers a connection for `device`, closing older connections of the same device
    /// here (a reconnect whose old socket is not dead yet).
    pub fn register(&self, device: DeviceId) -> (u64, mpsc::Receiver<Wake>, Arc<Flags>) {
        let (tx, rx) = mpsc::channel(WAKE_CAPACITY);
        let flags = Arc::new(Flags::default());
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut conns) = self.conns.lock() {
            let list = conns.entry(device).or_default();
            for old in list.drain(..) {
                close(&old.flags, crate::protocol::codes::REPLACED, "replaced by a newer connection of this device");
            }
            list.push(Handle { id, tx, flags: flags.clone() });
        }
        (id, rx, flags)
    }

    pub fn unregister(&self, device: DeviceId, id: u64) {
        if let Ok(mut conns) = self.conns.lock()
            && let Some(list) = conns.get_mut(&device)
        {
            list.retain(|h| h.id != id);
            if list.is_empty() {
                conns.remove(&device);
            }
        }
    }

    pub fn connected(&self) -> usize {
        self.conns.lock().map(|c| c.len()).unwrap_or(0)
    }

    pub fn is_connected(&self, device: DeviceId) -> bool {
        self.conns.lock().map(|c| c.contains_key(&device)).unwrap_or(false)
    }

    pub fn connected_devices(&self) -> Vec<DeviceId> {
        self.conns.lock().map(|c| c.keys().copied().collect()).unwrap_or_default()
    }

    /// Hands a stored envelope to `device`'s connection here, if there is one.
    pub fn deliver(&self, device: DeviceId, seq: u64, body: Arc<Vec<u8>>) {
        self.each(Some(device), |h| {
            if h.tx.try_send(Wake::Deliver(seq, body.clone())).is_err() {
                h.flags.scan.store(true, Ordering::Release);
                h.flags.notify.notify_one();
            }
        });
    }

    /// Tells `device`'s connection here to look in the database for envelopes.
    pub fn scan(&self, device: DeviceId) {
        self.each(Some(device), |h| {
            h.flags.scan.store(true, Ordering::Release);
            h.flags.notify.notify_one();
        });
    }

    /// Tells every connection here to look in the database (after a lost notification).
    pub fn scan_all(&self) {
        self.each(None, |h| {
            h.flags.scan.store(true, Ordering::Release);
            h.flags.notify.notify_one();
        });
    }

    /// Sends a policy entry to every connection here.
    pub fn policy(&self, seq: u64, frame: Arc<str>) {
        self.each(None, |h| {
            if h.tx.try_send(Wake::Policy(seq, frame.clone())).is_err() {
                h.flags.policy_reset.store(true, Ordering::Release);
                h.flags.notify.notify_one();
            }
        });
    }

    /// Makes every connection here send the whole policy again.
    pub fn policy_reset_all(&self) {
        self.each(None, |h| {
            h.flags.policy_reset.store(true, Ordering::Release);
            h.flags.notify.notify_one();
        });
    }

    /// Sends a directory change to every connection here.
    pub fn directory(&self, frame: Arc<str>) {
        self.each(None, |h| {
            if h.tx.try_send(Wake::Directory(frame.clone())).is_err() {
                h.flags.directory_full.store(true, Ordering::Release);
                h.flags.notify.notify_one();
            }
        });
    }

    /// Closes `device`'s connections here (revoked, rotated), or every connection.
    pub fn close(&self, device: Option<DeviceId>, code: &'static str, reason: &str) {
        self.each(device, |h| close(&h.flags, code, reason));
    }

    /// Marks the dashboard's data changed; [`Hub::flush_dashboard`] tells viewers.
    pub fn dashboard_changed(&self) {
        self.dashboard_dirty.store(true, Ordering::Release);
    }

    /// Tells dashboard viewers if anything changed since the last call. Returns whether
    /// it did.
    pub fn flush_dashboard(&self) -> bool {
        let dirty = self.dashboard_dirty.swap(false, Ordering::AcqRel);
        if dirty {
            let _ = self.dashboard.send(());
        }
        dirty
    }

    pub fn dashboard_events(&self) -> broadcast::Receiver<()> {
        self.dashboard.subscribe()
    }

    fn each(&self, device: Option<DeviceId>, mut f: impl FnMut(&Handle)) {
        let Ok(conns) = self.conns.lock() else {
            return;
        };
        match device {
            Some(d) => conns.get(&d).into_iter().flatten().for_each(&mut f),
            None => conns.values().flatten().for_each(&mut f),
        }
    }
}

fn close(flags: &Flags, code: &'static str, reason: &str) {
    if let Ok(mut slot) = flags.close.lock() {
        slot.get_or_insert((code, reason.to_owned()));
    }
    flags.notify.notify_one();
}
