//! The device side of the protocol, for the daemon: name the relay with an [`Endpoint`]
//! (its URL and, for `https://`, the roots to trust), [`join`] it with an invite, then
//! [`Client::connect`] and keep a connection with backoff, [`Client::submit`] envelopes,
//! take [`Incoming`] deliveries and policy, and [`Client::ack`] what is stored.
//!
//! Delivery guarantees:
//! - A submitted envelope is kept until the relay says it is stored (after its commit) or
//!   refused for good; across reconnects it is sent again, and the relay recognises the
//!   resend, so nothing acknowledged is stored twice.
//! - A delivery may arrive more than once (after a reconnect, or from two relay
//!   instances). Store it, then [`Client::ack`] it; drop repeats by message id (the core's
//!   `ReplayCache` refuses them as `open.replayed`: acknowledge those too).
//!
//! [`Directory`] keeps who is where; the core's [`PolicyMirror`] turns policy frames into
//! the admin actions for the local firewall.
//!
//! [`PolicyMirror`]: agentfw_core::central::PolicyMirror

use agentfw_core::seal::DeviceKeys;

use crate::protocol::{self, ENROLL_CONTEXT, ENROLL_PATH, EnrollRequest, EnrollResponse};

mod connection;
mod directory;
mod endpoint;
pub mod http;
mod tls;

pub use connection::{Client, ClientConfig, Delivery, Incoming, Submitted};
pub use directory::Directory;
pub use endpoint::Endpoint;

/// Why a client call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("relay URL `{0}` is not valid: use http://HOST:PORT or https://HOST[:PORT]")]
    Url(String),
    /// The roots to trust cannot be had: a CA file that cannot be read or holds no
    /// certificate, a CA file for a plain `http://` relay, no system roots.
    #[error("{0}")]
    Trust(String),
    #[error("cannot reach the relay: {0}")]
    Unreachable(String),
    /// The TLS handshake failed: the certificate is not trusted, expired or for another
    /// name, or the other end does not speak TLS.
    #[error("{0}")]
    Tls(String),
    #[error("the relay refused ({code}): {reason}")]
    Refused { code: String, reason: String },
    #[error("the relay answered something unexpected: {0}")]
    Protocol(String),
    #[error("not connected to the relay")]
    NotConnected,
    #[error("the client was stopped")]
    Stopped,
}

impl ClientError {
    /// The relay's code, for a refusal.
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Refused { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// Enrolls this device with the relay at `relay` using an invite: sends the public bundle,
/// signed with the device's key.
pub async fn join(
    relay: &Endpoint,
    invite: &str,
    keys: &DeviceKeys,
    name: &str,
) -> Result<EnrollResponse, ClientError> {
    let bundle = keys.public().to_line();
    let invite = invite.trim();
    let signature = keys.sign_statement(ENROLL_CONTEXT, &protocol::enroll_message(invite, &bundle)).to_vec();
    let request = EnrollRequest { invite: invite.to_owned(), bundle, name: name.to_owned(), signature };
    let body = serde_json::to_vec(&request).map_err(|e| ClientError::Protocol(e.to_string()))?;
    let response = http::request(relay, "POST", ENROLL_PATH, &[("content-type", "application/json")], body).await?;
    if response.status == 201 {
        return serde_json::from_slice(&response.body).map_err(|e| ClientError::Protocol(e.to_string()));
    }
    Err(refusal(response.status, &response.body))
}

/// The relay's error answer to an HTTP request (JSON [`protocol::ApiError`]).
fn refusal(status: u16, body: &[u8]) -> ClientError {
    match serde_json::from_slice::<protocol::ApiError>(body) {
        Ok(e) => ClientError::Refused { code: e.code, reason: e.error },
        Err(_) => ClientError::Protocol(format!("HTTP {status}")),
    }
}
