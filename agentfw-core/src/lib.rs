//! The judgement core of agentfw, a firewall for messages between AI agents.
//!
//! **Contract: sans-IO.** Everything here is deterministic logic over explicit inputs. The
//! crate opens no files or sockets, reads no clock, environment or global RNG, and starts no
//! threads: the caller passes `now` and a random number generator with each input, and
//! pulls what happened as events. Adapters (the `agentfw` daemon, the bindings, a relay)
//! own all I/O; the same inputs always give the same outputs, so a three-hop worm is a
//! unit test.

pub mod containment;
pub mod fence;
pub mod fingerprint;
pub mod firewall;
pub mod handoff;
pub mod limits;
pub mod message;
pub mod normalize;
pub mod policy;
pub mod provenance;
pub mod seal;
pub mod time;
