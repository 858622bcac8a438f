//! The Node.js addon of agentfw (napi-rs): `require('agentfw')`.
//!
//! Mirrors the modules of `agentfw-core` in JavaScript conventions and adds no logic of its
//! own. Errors carry the core's stable code as `err.code` (`policy.invalid`,
//! `open.replayed`, …). Times are milliseconds since the epoch and default to the wall
//! clock; randomness comes from the OS unless a `seed` is given. The TypeScript types in
//! `index.d.ts` are generated from these definitions.

#![allow(clippy::needless_pass_by_value)] // napi takes arguments by value
// napi classes and objects hold JS-facing data; Debug adds nothing there.
#![allow(missing_debug_implementations)]
// Under `cfg(test)` napi registers no exports, so everything looks unused.
#![cfg_attr(test, allow(dead_code))]

mod admission;
mod convert;
mod errors;
mod firewall;
mod handoff;
mod policy;
mod seal;
mod text;
