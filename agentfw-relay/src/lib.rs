//! agentfw-relay: carries sealed envelopes between devices without being able to read
//! them, and holds what the network decides centrally.
//!
//! The device side, which the `agentfw` binary links:
//! - [`protocol`]: the wire protocol (one WebSocket per device; JSON control frames,
//!   binary envelope frames) and the signed routing field that names the agents.
//! - [`client`]: join, connect with backoff, submit, receive, acknowledge, over `http://`
//!   or `https://` (rustls), and [`client::Directory`] of who is where. The central policy
//!   is applied locally with the core's mirror of it
//!   ([`agentfw_core::central::PolicyMirror`]).
//! - [`ui`]: the script and style sheet the relay's admin dashboard shares with the
//!   daemon's (`agentfw dashboard`), which is why it is outside the `server` feature.
//!
//! The relay itself, behind the `server` feature (on by default; the `agentfw-relay`
//! binary needs it):
//! - [`server`]: the relay ([`server::Relay`]): enrollment with invites, device logins,
//!   store-and-forward until acknowledged, central admission and blocks, the audit log,
//!   the admin dashboard, and TLS when given a certificate.
//!   Its central policy is the core's ([`agentfw_core::central::Policy`]), so the
//!   simulation runs the same policy between machines.
//! - [`store`]: SQLite or PostgreSQL, with group commit and `LISTEN`/`NOTIFY`.
//! - [`audit`]: the metadata log's records, queries and JSONL export.
//!
//! `docs/relay.md` describes the protocol, the schema, the propagation of policy and what
//! the daemon calls.

#![forbid(unsafe_code)]

pub mod client;
pub mod clock;
pub mod protocol;
pub mod ui;

#[cfg(feature = "server")]
pub mod audit;
#[cfg(feature = "server")]
pub mod ratelimit;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod store;

#[cfg(feature = "server")]
pub use server::{Config, Relay, RelayError};
