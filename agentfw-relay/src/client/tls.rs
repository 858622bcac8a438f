//! TLS to the relay (`https://`): rustls with the `ring` provider, the roots a device
//! trusts, and what a failed handshake means in words.
//!
//! The roots are the system's (a relay with a certificate from a public authority needs
//! nothing more), or, when a CA file is given, that file's certificates alone: a relay
//! with its own CA is then trusted for its name, and no other authority, public or not,
//! can stand in for it.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use rustls::{CertificateError, RootCertStore};

use super::ClientError;

/// The TLS settings for a relay: the CA file's certificates when given, else the system's.
pub(crate) fn client_config(ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, ClientError> {
    let roots = match ca {
        Some(path) => roots_from_file(path)?,
        None => system_roots()?,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Trust(format!("cannot set up TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // The relay speaks HTTP/1.1 (the WebSocket upgrade needs it); say so to a proxy in front.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn roots_from_file(path: &Path) -> Result<RootCertStore, ClientError> {
    let shown = path.display();
    let unusable = |problem: String| ClientError::Trust(format!("cannot use the CA file `{shown}`: {problem}"));
    let bytes = std::fs::read(path).map_err(|e| unusable(e.to_string()))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unusable(format!("{e} (expected PEM certificates)")))?;
    if certs.is_empty() {
        return Err(unusable("it holds no certificate (expected `-----BEGIN CERTIFICATE-----` blocks)".to_owned()));
    }
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| unusable(e.to_string()))?;
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore, ClientError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _unparsable) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found.errors.first().map(|e| format!(" ({e})")).unwrap_or_default();
        return Err(ClientError::Trust(format!(
            "this machine has no trusted root certificates{why}: install the system's CA certificates, \
             or give the relay's CA file"
        )));
    }
    Ok(roots)
}

/// A failed TLS handshake with `host`, in words that say what to do.
pub(crate) fn explain(error: &std::io::Error, host: &str) -> ClientError {
    let rustls_error = error.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>());
    let message = match rustls_error {
        Some(rustls::Error::InvalidCertificate(e)) => certificate(e, host),
        Some(rustls::Error::InvalidMessage(_)) => not_tls(host),
        Some(rustls::Error::AlertReceived(alert)) => {
            format!("`{host}` refused the TLS handshake (alert: {alert:?})")
        }
        Some(other) => format!("TLS with `{host}` failed: {other}"),
        None if error.kind() == std::io::ErrorKind::UnexpectedEof => not_tls(host),
        None => format!("TLS with `{host}` failed: {error}"),
    };
    ClientError::Tls(message)
}

fn not_tls(host: &str) -> String {
    format!("`{host}` did not answer in TLS: if the relay serves plain HTTP, use an http:// URL")
}

fn certificate(error: &CertificateError, host: &str) -> String {
    match error {
        CertificateError::UnknownIssuer => format!(
            "the certificate of `{host}` is not signed by an authority this device trusts: for a relay with its \
             own CA, give that CA's certificate file (`agentfw join --ca FILE`, or `ca` in `[relay]`)"
        ),
        CertificateError::BadSignature => format!(
            "the certificate of `{host}` names an authority this device trusts but is not signed by its key: \
             something may be impersonating the relay, or the relay's CA was replaced (then give the new CA's \
             certificate file: `agentfw join --ca FILE`, or `ca` in `[relay]`)"
        ),
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => format!(
            "the certificate of `{host}` has expired (or this machine's clock is wrong): the relay needs a renewed \
             certificate"
        ),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            format!("the certificate of `{host}` is not valid yet: is this machine's clock right?")
        }
        CertificateError::NotValidForNameContext { presented, .. } if !presented.is_empty() => format!(
            "the certificate the relay showed is not for `{host}` but for {}: use one of those names, or give the \
             relay a certificate for this one",
            presented.join(", ")
        ),
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => format!(
            "the certificate the relay showed is not for `{host}`: use a name the certificate lists, or give the \
             relay a certificate for this one"
        ),
        other => format!("the certificate of `{host}` cannot be trusted: {other}"),
    }
}
