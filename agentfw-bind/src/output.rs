//! The firewall's answer flattened into the one record both bindings return: a `kind`
//! and the fields that kind has.

use agentfw_core::fence::Fenced;
use agentfw_core::firewall::{Accepted, Output, Reason, Refusal};
use agentfw_core::time::Timestamp;
use agentfw_core::trust::Overlay;

/// An [`Output`] as `kind` plus optional fields; each binding converts the fields to its
/// own types, field by field.
#[derive(Debug, Default)]
pub struct Flat {
    /// `accepted`, `delivered`, `held`, `refused` or `done`.
    pub kind: &'static str,
    /// Accepted, delivered and held outputs.
    pub message: Option<Accepted>,
    /// Delivered outputs.
    pub fenced: Option<Fenced>,
    /// Delivered outputs, when a trust file is set: what the sender's messages may lead the
    /// receiving agent to do without asking (TR1, DL4), to show under the fence.
    pub overlay: Option<Overlay>,
    /// Accepted and delivered outputs.
    pub warnings: Vec<Reason>,
    /// Held outputs: when to offer the message again.
    pub until: Option<Timestamp>,
    /// Held and refused outputs.
    pub reason: Option<Reason>,
    /// Refused outputs, with the text to show the sender.
    pub refusal: Option<Refusal>,
}

pub fn flatten(out: Output) -> Flat {
    match out {
        Output::Accepted { message, warnings } => {
            Flat { kind: "accepted", message: Some(message), warnings, ..Flat::default() }
        }
        Output::Delivered { delivery, warnings } => Flat {
            kind: "delivered",
            message: Some(delivery.message),
            fenced: Some(delivery.fenced),
            overlay: delivery.overlay,
            warnings,
            ..Flat::default()
        },
        Output::Held { message, until, reason } => {
            Flat { kind: "held", message: Some(message), until: Some(until), reason: Some(reason), ..Flat::default() }
        }
        Output::Refused(refusal) => {
            Flat { kind: "refused", reason: Some(refusal.reason.clone()), refusal: Some(refusal), ..Flat::default() }
        }
        Output::Done => Flat { kind: "done", ..Flat::default() },
    }
}

/// Defines a binding's `Overlay`: what a teammate's messages may lead the receiving agent to
/// do without asking its user (TR1, DL4), the core's [`Overlay`] with its text rendered,
/// and the conversion from it. The bindings differ only in the attributes that export the
/// type and in whether its fields are public (napi reads public fields, pyo3's `get_all`
/// private ones), so the shape and the conversion are written once, here:
/// `agentfw_bind::overlay! { #[napi(object)] [pub] }`, the fields' visibility in brackets.
#[macro_export]
macro_rules! overlay {
    ($(#[$attr:meta])* [$($field:tt)*]) => {
        /// What a teammate's messages may lead the receiving agent to do without asking its
        /// user (TR1, DL4), from the trust file; `text` is the block to show under the fence.
        $(#[$attr])*
        #[derive(Clone, Debug)]
        pub struct Overlay {
            /// Whether the sender has an entry in the trust file (an unlisted sender let
            /// through by `unknown_teammates.policy: allow` gets no pre-approvals).
            $($field)* listed: bool,
            $($field)* auto_read: bool,
            $($field)* auto_test: bool,
            $($field)* auto_write_paths: Vec<String>,
            $($field)* require_approval: Vec<String>,
            $($field)* text: String,
        }

        impl From<::agentfw_core::trust::Overlay> for Overlay {
            fn from(o: ::agentfw_core::trust::Overlay) -> Self {
                let text = o.render();
                Overlay {
                    listed: o.listed,
                    auto_read: o.auto_read,
                    auto_test: o.auto_test,
                    auto_write_paths: o.auto_write_paths,
                    require_approval: o.require_approval,
                    text,
                }
            }
        }
    };
}
