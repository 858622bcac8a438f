//! Sealed envelopes' records as both bindings return them, written once (see
//! [`crate::policy`] for why records are macros).

/// Defines a binding's `Header` (what an envelope says in the clear, TX3) and its
/// conversion from the core's; the timestamp is `i64` milliseconds
/// ([`crate::numbers::ms`]): `agentfw_bind::header! { #[napi(object)] [pub] }`.
#[macro_export]
macro_rules! header {
    ($(#[$attr:meta])* [$($field:tt)*]) => {
        /// What an envelope says in the clear.
        $(#[$attr])*
        #[derive(Clone, Debug)]
        pub struct Header {
            $($field)* sender: String,
            $($field)* recipient: String,
            $($field)* id: String,
            /// When the sender sealed it, by the sender's clock (ms since the epoch).
            $($field)* timestamp: i64,
            $($field)* content_type: String,
        }

        impl From<&::agentfw_core::seal::Header> for Header {
            fn from(h: &::agentfw_core::seal::Header) -> Self {
                Header {
                    sender: h.sender.to_string(),
                    recipient: h.recipient.to_string(),
                    id: h.id.to_string(),
                    timestamp: $crate::numbers::ms(h.timestamp),
                    content_type: h.content_type.clone(),
                }
            }
        }
    };
}
