//! The half of agentfw's Python and Node bindings that does not depend on the language.
//!
//! `agentfw-core` is sans-IO: it reads no files, clock or OS randomness, and takes its
//! inputs as typed values. Each binding turns a host language's values into those inputs
//! and the core's answers back. Everything in that work that is the same in every language
//! lives here, once: reading rule files and folders ([`load`]), laying JSON overrides over
//! a default config ([`config`]), the names a binding shows for core values ([`names`]),
//! serde round trips that report failure ([`json`]), the wall clock and OS randomness
//! ([`host`]), numbers in the range both languages hold ([`numbers`]), the records both
//! return with their conversions from the core, as macros each binding invokes with its
//! export attributes ([`output`], [`policy`], [`seal`]), and one error type with stable
//! codes ([`error`]) that each binding maps to its own exception or `Error` in a few lines.
//! The bindings keep only the glue: their language's export attributes, arguments and
//! methods.

pub mod admission;
pub mod config;
pub mod error;
pub mod host;
pub mod json;
pub mod load;
pub mod names;
pub mod numbers;
pub mod output;
pub mod policy;
pub mod rules;
pub mod seal;
pub mod trust;

pub use error::{Failure, catch};
