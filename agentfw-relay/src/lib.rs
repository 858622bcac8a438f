//! agentfw-relay: carries sealed envelopes between devices without being able to read
//! them, and holds what the network decides centrally.
//!
//! - [`protocol`]: the wire protocol (one WebSocket per device; JSON control frames,
//!   binary envelope frames) and the signed routing field that names the agents.
//! - [`server`]: the relay itself ([`server::Relay`]): enrollment with invites, device
//!   logins, store-and-forward until acknowledged, central admission and blocks, the audit
//!   log and the admin dashboard.
//! - [`client`]: the device side, for the daemon: join, connect with backoff, submit,
//!   receive, acknowledge, and [`client::PolicyMirror`] to apply central policy locally.
//! - [`policy`]: the central policy, a core firewall fed admin actions (sans-IO).
//! - [`store`]: SQLite or PostgreSQL, with group commit and `LISTEN`/`NOTIFY`.
//! - [`audit`]: the metadata log's records, queries and JSONL export.
//!
//! `docs/relay.md` describes the protocol, the schema, the propagation of policy and what
//! the daemon calls.

#![forbid(unsafe_code)]

pub mod audit;
pub mod client;
pub mod clock;
pub mod policy;
pub mod protocol;
pub mod ratelimit;
pub mod server;
pub mod store;

pub use server::{Config, Relay, RelayError};
