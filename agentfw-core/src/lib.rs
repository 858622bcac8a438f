#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod admission;
pub mod agents;
pub mod central;
pub mod code;
pub mod containment;
pub mod decode;
pub mod fence;
pub mod fingerprint;
pub mod firewall;
pub mod handoff;
pub mod identity;
pub mod label;
pub mod limits;
pub mod message;
pub mod normalize;
pub mod policy;
pub mod provenance;
pub mod route;
pub mod seal;
pub mod signals;
pub mod sim;
pub mod spans;
pub mod time;
pub mod trust;
