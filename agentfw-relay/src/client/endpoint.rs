//! Where the relay is and how to reach it: its URL, checked once, and a connection to it
//! (TCP, with TLS for `https://`) shared by the HTTP requests and the WebSocket.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_tungstenite::MaybeTlsStream;

use super::{ClientError, tls};

/// The relay: `http://HOST:PORT` or `https://HOST[:PORT]` (`ws://` and `wss://` mean the
/// same), optionally with a path prefix for a relay behind a proxy (`https://HOST/agentfw`).
/// For `https://` it holds the TLS settings: the roots to trust (see [`Endpoint::new`]).
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// As given, normalised: `http` or `https`, no trailing slash.
    url: String,
    /// `HOST[:PORT]` as given, for the `Host` header.
    authority: String,
    host: String,
    port: u16,
    /// `""` or `/PREFIX`.
    prefix: String,
    tls: Option<Tls>,
}

#[derive(Clone, Debug)]
struct Tls {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
}

impl Endpoint {
    /// The relay at `url`. For `https://`, its certificate must chain to the certificates
    /// in `ca` (a PEM file) when given, else to the system's roots; a CA file for a plain
    /// `http://` relay is refused, so that a relay believed to be behind TLS is not
    /// reached in the clear.
    pub fn new(url: &str, ca: Option<&Path>) -> Result<Self, ClientError> {
        let given = url.trim();
        let invalid = || ClientError::Url(given.to_owned());
        let trimmed = given.trim_end_matches('/');
        let (secure, rest) = [("https://", true), ("wss://", true), ("http://", false), ("ws://", false)]
            .into_iter()
            .find_map(|(scheme, secure)| trimmed.strip_prefix(scheme).map(|rest| (secure, rest)))
            .ok_or_else(invalid)?;
        let (authority, prefix) = rest.split_once('/').map_or((rest, String::new()), |(a, p)| (a, format!("/{p}")));
        if prefix.contains(['?', '#']) {
            return Err(invalid());
        }
        let (host, port) = host_and_port(authority).ok_or_else(invalid)?;
        let port = port.unwrap_or(if secure { 443 } else { 80 });
        let tls = match (secure, ca) {
            (true, ca) => Some(Tls {
                config: tls::client_config(ca)?,
                name: ServerName::try_from(host.clone()).map_err(|_| invalid())?,
            }),
            (false, None) => None,
            (false, Some(ca)) => {
                return Err(ClientError::Trust(format!(
                    "a CA file (`{}`) is given for `{given}`, which is plain HTTP: use https://",
                    ca.display()
                )));
            }
        };
        let scheme = if secure { "https" } else { "http" };
        Ok(Self {
            url: format!("{scheme}://{authority}{prefix}"),
            authority: authority.to_owned(),
            host,
            port,
            prefix,
            tls,
        })
    }

    /// The URL, normalised (`https://relay.example:8470`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether the connection is TLS (`https://`).
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The WebSocket URL of `path`.
    pub(crate) fn ws_url(&self, path: &str) -> String {
        let scheme = if self.is_tls() { "wss" } else { "ws" };
        format!("{scheme}://{}{}{path}", self.authority, self.prefix)
    }

    /// The request target of `path`, under the prefix.
    pub(crate) fn target(&self, path: &str) -> String {
        format!("{}{path}", self.prefix)
    }

    pub(crate) fn authority(&self) -> &str {
        &self.authority
    }

    /// A connection to the relay: TCP, then the TLS handshake for `https://`.
    pub(crate) async fn connect(&self) -> Result<MaybeTlsStream<TcpStream>, ClientError> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| ClientError::Unreachable(format!("`{}`: {e}", self.authority)))?;
        let _ = tcp.set_nodelay(true);
        let Some(tls) = &self.tls else { return Ok(MaybeTlsStream::Plain(tcp)) };
        tokio_rustls::TlsConnector::from(Arc::clone(&tls.config))
            .connect(tls.name.clone(), tcp)
            .await
            .map(MaybeTlsStream::Rustls)
            .map_err(|e| tls::explain(&e, &self.host))
    }
}

/// `HOST`, `HOST:PORT`, `[IPV6]` or `[IPV6]:PORT`.
fn host_and_port(authority: &str) -> Option<(String, Option<u16>)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        host.parse::<std::net::Ipv6Addr>().ok()?;
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':')?)),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':');
    if host.is_empty() || !host.chars().all(name_char) {
        return None;
    }
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p != 0)?),
        None => None,
    };
    Some((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn urls_are_checked_once_and_normalised() {
        let e = Endpoint::new(" http://127.0.0.1:8470/ ", None).unwrap();
        assert_eq!((e.url(), e.is_tls(), e.port), ("http://127.0.0.1:8470", false, 8470));
        assert_eq!(e.ws_url("/v1/connect"), "ws://127.0.0.1:8470/v1/connect");
        let e = Endpoint::new("ws://relay.example/agentfw", None).unwrap();
        assert_eq!(
            (e.url(), e.port, e.target("/v1/enroll").as_str()),
            ("http://relay.example/agentfw", 80, "/agentfw/v1/enroll")
        );
        let e = Endpoint::new("http://[::1]:9000", None).unwrap();
        assert_eq!((e.host.as_str(), e.port, e.authority()), ("::1", 9000, "[::1]:9000"));
        for bad in [
            "relay.example:8470",
            "ftp://relay.example",
            "http://",
            "http://:8470",
            "http://relay.example:http",
            "http://relay.example:0",
            "http://relay.example:70000",
            "http://user@relay.example",
            "http://[::1",
            "http://[relay]:80",
            "http://relay.example/x?y",
        ] {
            assert_eq!(Endpoint::new(bad, None).unwrap_err(), ClientError::Url(bad.to_owned()), "{bad}");
        }
    }

    #[test]
    fn a_ca_file_is_for_https_only_and_must_hold_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not a certificate").unwrap();
        let e = Endpoint::new("http://relay.example:8470", Some(&ca)).unwrap_err();
        assert!(matches!(&e, ClientError::Trust(m) if m.contains("plain HTTP: use https://")), "{e}");
        let e = Endpoint::new("https://relay.example", Some(&ca)).unwrap_err();
        assert!(matches!(&e, ClientError::Trust(m) if m.contains("holds no certificate")), "{e}");
        let e = Endpoint::new("https://relay.example", Some(&dir.path().join("missing.pem"))).unwrap_err();
        assert!(matches!(&e, ClientError::Trust(m) if m.starts_with("cannot use the CA file")), "{e}");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n").unwrap();
        let e = Endpoint::new("https://relay.example", Some(&ca)).unwrap_err();
        assert!(matches!(&e, ClientError::Trust(m) if m.contains("expected PEM certificates")), "{e}");
    }
}
