//! TLS served by the relay itself (`agentfw-relay serve --tls-cert FILE --tls-key FILE`),
//! so that a relay on the internet needs no proxy in front: rustls with the `ring`
//! provider, HTTP/1.1 (the WebSocket upgrade needs it).
//!
//! A connection that does not open with a TLS handshake is answered in plain HTTP with
//! `400` and the code `relay.tls_required`, so a device given an `http://` URL is told to
//! use `https://` instead of seeing a reset connection.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use super::RelayError;
use crate::protocol::{ApiError, codes};

/// The first byte of a TLS record carrying a handshake.
const HANDSHAKE_RECORD: u8 = 0x16;
/// The most of a plain request read before answering it.
const MAX_PLAIN_HEAD: usize = 16 * 1024;

/// The TLS settings from a certificate chain and its private key, both PEM files (the
/// chain leaf first, as certificate authorities hand them out).
pub fn load(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, RelayError> {
    let read = |path: &Path, what: &str| {
        std::fs::read(path)
            .map_err(|e| RelayError::Tls(format!("cannot read the TLS {what} `{}`: {e}", path.display())))
    };
    let unusable = |path: &Path, what: &str, problem: String| {
        RelayError::Tls(format!("the TLS {what} `{}` cannot be used: {problem}", path.display()))
    };
    let chain = CertificateDer::pem_slice_iter(&read(cert, "certificate")?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unusable(cert, "certificate", e.to_string()))?;
    if chain.is_empty() {
        return Err(unusable(cert, "certificate", "it holds no `-----BEGIN CERTIFICATE-----` block".to_owned()));
    }
    let private = PrivateKeyDer::from_pem_slice(&read(key, "key")?)
        .map_err(|e| unusable(key, "key", format!("{e} (expected a PEM private key: PKCS#8, PKCS#1 or SEC1)")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| RelayError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| unusable(cert, "certificate", format!("{e} (does the key belong to it?)")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The TLS handshake on an accepted connection, within `timeout`; `None` when it fails
/// (logged) or the peer spoke plain HTTP (answered with `relay.tls_required`).
pub(super) async fn accept(
    acceptor: &TlsAcceptor,
    stream: TcpStream,
    timeout: Duration,
) -> Option<TlsStream<TcpStream>> {
    let handshake = async {
        let mut first = [0u8; 1];
        let peeked = stream.peek(&mut first).await.ok()?;
        if peeked == 0 {
            return None;
        }
        if first != [HANDSHAKE_RECORD] {
            refuse_plain(stream).await;
            return None;
        }
        match acceptor.accept(stream).await {
            Ok(tls) => Some(tls),
            Err(e) => {
                tracing::debug!(error = %e, "TLS handshake failed");
                None
            }
        }
    };
    tokio::time::timeout(timeout, handshake).await.ok().flatten()
}

/// Answers a plain HTTP request with `400 relay.tls_required`. The request head is read
/// first, so that closing the connection does not reset it before the answer arrives.
async fn refuse_plain(mut stream: TcpStream) {
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while head.len() < MAX_PLAIN_HEAD && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(chunk.get(..n).unwrap_or_default()),
        }
    }
    let refusal = ApiError {
        code: codes::TLS_REQUIRED.to_owned(),
        error: "this relay speaks TLS only: use an https:// URL".to_owned(),
    };
    let Ok(body) = serde_json::to_string(&refusal) else { return };
    let response = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    if stream.write_all(response.as_bytes()).await.is_ok() && stream.shutdown().await.is_ok() {
        // Whatever else the client sends (a request body) is read and dropped until it closes.
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            while matches!(stream.read(&mut chunk).await, Ok(n) if n > 0) {}
        })
        .await;
    }
}
