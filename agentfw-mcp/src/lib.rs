//! The `agentfw` binary's library: the local daemon, its socket protocol and client, the
//! stdio MCP server, and the Linux process collector. All judgement is in `agentfw-core`;
//! this crate does the I/O around it.
//!
//! | module | what it holds |
//! |---|---|
//! | [`home`] | the state directory and the daemon's socket path |
//! | [`config`] | the optional `config.toml` |
//! | [`procfs`] | the process collector for the identity resolver (ID1–ID3) |
//! | [`proto`] | the socket protocol: versioned JSON lines |
//! | [`store`] | the SQLite schema |
//! | [`engine`] | the firewall and the store behind one thread, transaction by transaction |
//! | [`daemon`] | the socket server: peer credentials, identity, the engine thread, timers |
//! | [`dashboard`] | `agentfw dashboard`: the live read-only page the daemon serves on loopback |
//! | [`client`] | the client: connect (starting the daemon if needed), typed requests, hooks |
//! | [`mcp`] | the stdio MCP server (`list_team`, `send_message`, `check_inbox`) |
//! | [`wake`] | waking idle sessions (WK1) |
//! | [`components`] | reading harness config files for admission (AD1) |
//! | [`keystore`] | this device's keys in the home (TX2) |
//! | [`relay_link`] | the daemon's connection to a relay: sealing, opening, reconnecting |
//! | [`trust`] | reading the trust file the firewall applies to sends and deliveries (TR1, DL4) |
//! | [`scan`] | `agentfw scan --jsonl`: verdicts for a stream of texts on every core (PR8) |

#![forbid(unsafe_code)]

pub mod admin;
pub mod client;
pub mod clock;
pub mod components;
pub mod config;
pub mod daemon;
pub mod dashboard;
pub mod engine;
pub mod home;
pub mod keystore;
pub mod load;
pub mod mcp;
pub mod pins;
pub mod procfs;
pub mod proto;
pub mod relay_link;
pub mod render;
pub mod scan;
pub mod store;
pub mod trust;
pub mod wake;
