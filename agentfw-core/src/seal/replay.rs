//! The replay cache (TX4): which messages were already accepted, as explicit state.
//!
//! A message is identified by a [`ReplayKey`] (who sent it, and its id) and carries the
//! time its sender stamped on it. The cache accepts a message only inside the time window
//! (`now - max_age ..= now + max_skew`) and only once. An entry is kept exactly as long as
//! its message could still pass the window, so memory follows the traffic of one window,
//! and never more than `capacity` entries: when full, the oldest entry is dropped and its
//! time becomes a floor below which nothing is accepted any more. Under a flood the cache
//! therefore refuses late messages rather than forgetting what it saw; it never lets a
//! replay through.
//!
//! The cache remembers the latest `now` it was given and never moves back from it, so a
//! caller whose clock steps backwards cannot reopen the window for an expired entry.
//!
//! Serialize the cache with serde to keep it across restarts.

use core::fmt;
use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{hex, unhex};
use crate::time::Timestamp;

/// The window and the memory bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayConfig {
    /// The most entries kept (at least 1).
    pub capacity: usize,
    /// How old a message may be when it arrives. Default: one hour, which also covers a
    /// relay holding envelopes for a device that is briefly offline.
    #[serde(with = "millis")]
    pub max_age: Duration,
    /// How far ahead of `now` a sender's clock may be. Default: five minutes.
    #[serde(with = "millis")]
    pub max_skew: Duration,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        Self { capacity: 100_000, max_age: Duration::from_secs(60 * 60), max_skew: Duration::from_secs(5 * 60) }
    }
}

/// One message as the cache knows it: its origin (sender device or signer) and its id.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReplayKey {
    origin: [u8; 16],
    id: [u8; 16],
}

impl ReplayKey {
    pub const fn new(origin: [u8; 16], id: [u8; 16]) -> Self {
        Self { origin, id }
    }
}

impl fmt::Display for ReplayKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", hex(&self.origin), hex(&self.id))
    }
}

impl fmt::Debug for ReplayKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReplayKey({self})")
    }
}

impl Serialize for ReplayKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ReplayKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.split_once(':')
            .and_then(|(origin, id)| Some(Self::new(unhex(origin)?, unhex(id)?)))
            .ok_or_else(|| serde::de::Error::custom("a replay key is `<32 hex digits>:<32 hex digits>`"))
    }
}

/// Why the cache refuses a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error("message is older than the time window")]
    Expired,
    #[error("message is dated too far in the future")]
    NotYetValid,
    #[error("message was already accepted once (replay)")]
    Replayed,
}

/// The set of recently accepted messages. See the module docs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "State", from = "State")]
pub struct ReplayCache {
    config: ReplayConfig,
    seen: BTreeMap<ReplayKey, u64>,
    by_time: BTreeSet<(u64, ReplayKey)>,
    /// Entries stamped at or before this were dropped for room: refuse those times.
    floor: Option<u64>,
    /// The latest `now` seen, in ms.
    clock: u64,
}

impl Default for ReplayCache {
    fn default() -> Self {
        Self::new(ReplayConfig::default())
    }
}

impl ReplayCache {
    pub fn new(config: ReplayConfig) -> Self {
        Self {
            config: ReplayConfig { capacity: config.capacity.max(1), ..config },
            seen: BTreeMap::new(),
            by_time: BTreeSet::new(),
            floor: None,
            clock: 0,
        }
    }

    pub fn config(&self) -> &ReplayConfig {
        &self.config
    }

    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Whether a message stamped `sent` would be accepted at `now`, without recording it.
    pub fn check(&self, key: &ReplayKey, sent: Timestamp, now: Timestamp) -> Result<(), ReplayError> {
        let now = now.as_millis().max(self.clock);
        let sent = sent.as_millis();
        if sent > now.saturating_add(ms(self.config.max_skew)) {
            return Err(ReplayError::NotYetValid);
        }
        if now.saturating_sub(sent) > ms(self.config.max_age) {
            return Err(ReplayError::Expired);
        }
        if self.floor.is_some_and(|floor| sent <= floor) || self.seen.contains_key(key) {
            return Err(ReplayError::Replayed);
        }
        Ok(())
    }

    /// Checks the message as [`ReplayCache::check`] does and, if it passes, remembers it,
    /// so the same key is refused from now on.
    pub fn record(&mut self, key: ReplayKey, sent: Timestamp, now: Timestamp) -> Result<(), ReplayError> {
        self.check(&key, sent, now)?;
        self.prune(now);
        while self.seen.len() >= self.config.capacity {
            let Some((oldest, old_key)) = self.by_time.pop_first() else {
                break;
            };
            self.seen.remove(&old_key);
            self.floor = Some(self.floor.map_or(oldest, |floor| floor.max(oldest)));
        }
        let sent = sent.as_millis();
        self.seen.insert(key, sent);
        self.by_time.insert((sent, key));
        Ok(())
    }

    /// Forgets the entries whose messages can no longer pass the time window.
    pub fn prune(&mut self, now: Timestamp) {
        self.clock = self.clock.max(now.as_millis());
        let max_age = ms(self.config.max_age);
        while let Some(&(sent, key)) = self.by_time.first() {
            if self.clock.saturating_sub(sent) <= max_age {
                break;
            }
            self.by_time.pop_first();
            self.seen.remove(&key);
        }
    }

    /// When the oldest entry expires: call [`ReplayCache::prune`] then to free its memory.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.by_time
            .first()
            .map(|&(sent, _)| Timestamp::from_millis(sent.saturating_add(ms(self.config.max_age)).saturating_add(1)))
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The serialized form: entries in time order.
#[derive(Serialize, Deserialize)]
struct State {
    config: ReplayConfig,
    clock: u64,
    floor: Option<u64>,
    entries: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    key: ReplayKey,
    sent: u64,
}

impl From<ReplayCache> for State {
    fn from(cache: ReplayCache) -> State {
        State {
            config: cache.config,
            clock: cache.clock,
            floor: cache.floor,
            entries: cache.by_time.into_iter().map(|(sent, key)| Entry { key, sent }).collect(),
        }
    }
}

impl From<State> for ReplayCache {
    fn from(state: State) -> ReplayCache {
        let mut cache = ReplayCache::new(state.config);
        cache.clock = state.clock;
        cache.floor = state.floor;
        for Entry { key, sent } in state.entries {
            if let Some(previous) = cache.seen.insert(key, sent) {
                cache.by_time.remove(&(previous, key));
            }
            cache.by_time.insert((sent, key));
        }
        // A state written with a larger capacity is cut down the same way `record` would.
        while cache.seen.len() > cache.config.capacity {
            let Some((oldest, key)) = cache.by_time.pop_first() else {
                break;
            };
            cache.seen.remove(&key);
            cache.floor = Some(cache.floor.map_or(oldest, |floor| floor.max(oldest)));
        }
        cache
    }
}

mod millis {
    use core::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(super::ms(*d))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        u64::deserialize(deserializer).map(Duration::from_millis)
    }
}
