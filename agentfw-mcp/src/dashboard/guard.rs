//! Who may read the dashboard. The server listens on loopback, but any local process and
//! any web page the person has open can send it requests, so every request must pass:
//!
//! - **`Host`** is `127.0.0.1:PORT` or `localhost:PORT`: a page on an attacker's domain that
//!   re-points its name at 127.0.0.1 (DNS rebinding) sends its own host name and is refused.
//! - **`Origin`**, when a browser sends one, is this server's own; and a request that is not
//!   a top-level navigation must come from this origin (`Sec-Fetch-Site`), so another
//!   site's page can neither fetch from nor open an event stream to the dashboard.
//! - **The token**: `agentfw dashboard` prints a URL with a one-time token. The first visit
//!   spends it for a session cookie (`HttpOnly`, `SameSite=Strict`, named after the port so
//!   that two daemons' dashboards do not overwrite each other's); the page then replaces
//!   the URL with one without it. Every other request, the page's scripts and its event stream included,
//!   needs that cookie. Tokens and sessions are 256 random bits, kept only as BLAKE3 hashes.
//! - Only `GET` and `HEAD`: the page changes nothing.

use std::collections::VecDeque;
use std::sync::Mutex;

use hyper::header::{HOST, ORIGIN};
use hyper::http::request::Parts;
use hyper::{Method, StatusCode};

/// One-time tokens not yet spent, and sessions, kept at most (the oldest go first).
const MAX_TOKENS: usize = 16;
const MAX_SESSIONS: usize = 64;

/// The dashboard's credentials for one port.
#[derive(Debug)]
pub struct Auth {
    port: u16,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    tokens: VecDeque<blake3::Hash>,
    sessions: VecDeque<blake3::Hash>,
}

/// A request the guard let through.
#[derive(Debug, PartialEq, Eq)]
pub enum Pass {
    /// The one-time token was spent for this session: set the cookie.
    Exchanged { cookie: String },
    /// The request carries a valid session.
    Session,
}

/// A request the guard refused: the status and why, in words.
#[derive(Debug, PartialEq, Eq)]
pub struct Denied {
    pub status: StatusCode,
    pub why: String,
}

fn denied(status: StatusCode, why: impl Into<String>) -> Denied {
    Denied { status, why: why.into() }
}

impl Auth {
    pub fn new(port: u16) -> Self {
        Self { port, inner: Mutex::new(Inner::default()) }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new one-time token for the URL; `None` without OS randomness.
    pub fn mint(&self) -> Option<String> {
        let token = crate::clock::secret()?;
        push(&mut self.inner().tokens, blake3::hash(token.as_bytes()), MAX_TOKENS);
        Some(token)
    }

    /// The session cookie's name: one per port, since cookies ignore ports.
    pub fn cookie_name(&self) -> String {
        format!("afw_dashboard_{}", self.port)
    }

    /// Decide whether the request may be answered.
    pub fn check(&self, parts: &Parts) -> Result<Pass, Denied> {
        if parts.method != Method::GET && parts.method != Method::HEAD {
            return Err(denied(StatusCode::METHOD_NOT_ALLOWED, "the dashboard is read-only: only GET"));
        }
        let host = header(parts, HOST).unwrap_or_default();
        if !self.ours(host) {
            return Err(denied(
                StatusCode::FORBIDDEN,
                format!("`Host: {}` is not this dashboard (127.0.0.1:{})", one_line(host), self.port),
            ));
        }
        if let Some(origin) = header(parts, ORIGIN) {
            let ours = origin.strip_prefix("http://").is_some_and(|h| self.ours(h));
            if !ours {
                return Err(denied(StatusCode::FORBIDDEN, format!("requests from `{}` are refused", one_line(origin))));
            }
        }
        let navigation = header(parts, "sec-fetch-mode").is_none_or(|m| m == "navigate");
        let site = header(parts, "sec-fetch-site").unwrap_or("none");
        if !navigation && !matches!(site, "same-origin" | "none") {
            return Err(denied(StatusCode::FORBIDDEN, format!("a {} request is refused", one_line(site))));
        }
        if let Some(token) = query_param(parts.uri.query().unwrap_or_default(), "token") {
            return self.exchange(token);
        }
        let name = self.cookie_name();
        let inner = self.inner();
        if agentfw_relay::ui::cookies(&parts.headers, &name)
            .any(|v| inner.sessions.contains(&blake3::hash(v.as_bytes())))
        {
            return Ok(Pass::Session);
        }
        Err(denied(
            StatusCode::FORBIDDEN,
            "no dashboard session: open the link `agentfw dashboard` prints (each link works once)",
        ))
    }

    fn exchange(&self, token: &str) -> Result<Pass, Denied> {
        let hash = blake3::hash(token.as_bytes());
        let spent = {
            let mut inner = self.inner();
            let found = inner.tokens.iter().position(|t| *t == hash);
            found.and_then(|i| inner.tokens.remove(i)).is_some()
        };
        if !spent {
            return Err(denied(
                StatusCode::FORBIDDEN,
                "this dashboard link was already used or is not valid: run `agentfw dashboard` for a new one",
            ));
        }
        let session = crate::clock::secret().ok_or_else(|| denied(StatusCode::SERVICE_UNAVAILABLE, "no randomness"))?;
        push(&mut self.inner().sessions, blake3::hash(session.as_bytes()), MAX_SESSIONS);
        Ok(Pass::Exchanged { cookie: format!("{}={session}; HttpOnly; SameSite=Strict; Path=/", self.cookie_name()) })
    }

    /// `127.0.0.1:PORT` or `localhost:PORT`, exactly.
    fn ours(&self, host: &str) -> bool {
        let port = self.port.to_string();
        host.rsplit_once(':').is_some_and(|(name, p)| p == port && (name == "127.0.0.1" || name == "localhost"))
    }
}

/// A header's value; one that is not visible ASCII reads as `\u{fffd}`, which matches nothing.
fn header(parts: &Parts, name: impl hyper::header::AsHeaderName) -> Option<&str> {
    parts.headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"))
}

fn push(list: &mut VecDeque<blake3::Hash>, hash: blake3::Hash, max: usize) {
    while list.len() >= max {
        list.pop_front();
    }
    list.push_back(hash);
}

fn query_param<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query.split('&').filter_map(|kv| kv.split_once('=')).find(|(k, _)| *k == name).map(|(_, v)| v)
}

/// A header value quoted in an error: printable ASCII only, and short.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).take(100).collect()
}

#[cfg(test)]
mod tests {
    use hyper::Request;

    use super::*;

    fn parts(method: &str, uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut b = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    /// Spends a fresh token and returns the `Cookie` header the browser would send.
    fn session(auth: &Auth) -> String {
        let token = auth.mint().unwrap();
        let host = format!("127.0.0.1:{}", auth.port);
        let Ok(Pass::Exchanged { cookie }) = auth.check(&parts("GET", &format!("/?token={token}"), &[("host", &host)]))
        else {
            panic!("the token was not accepted")
        };
        assert!(cookie.contains("; HttpOnly; SameSite=Strict; Path=/"), "{cookie}");
        cookie.split(';').next().unwrap().to_owned()
    }

    #[test]
    fn a_token_works_once_and_its_cookie_opens_every_request() {
        let auth = Auth::new(4000);
        let token = auth.mint().unwrap();
        let first = parts("GET", &format!("/?token={token}"), &[("host", "127.0.0.1:4000")]);
        assert!(matches!(auth.check(&first), Ok(Pass::Exchanged { .. })));
        let again = auth.check(&first).unwrap_err();
        assert_eq!(again.status, StatusCode::FORBIDDEN);
        assert!(again.why.contains("already used"), "{}", again.why);
        let cookie = session(&auth);
        for path in ["/", "/app.js", "/events"] {
            let ok = parts("GET", path, &[("host", "localhost:4000"), ("cookie", &format!("other=1; {cookie}"))]);
            assert_eq!(auth.check(&ok), Ok(Pass::Session), "{path}");
            let none = auth.check(&parts("GET", path, &[("host", "127.0.0.1:4000")])).unwrap_err();
            assert_eq!(none.status, StatusCode::FORBIDDEN, "{path}");
        }
    }

    #[test]
    fn guessed_forged_and_other_ports_cookies_are_refused() {
        let (auth, other) = (Auth::new(4000), Auth::new(4001));
        let theirs = session(&other).replace("4001", "4000");
        for cookie in [theirs.as_str(), "afw_dashboard_4000=", "afw_dashboard_4000=00", "afw_dashboard=x"] {
            let r = auth.check(&parts("GET", "/", &[("host", "127.0.0.1:4000"), ("cookie", cookie)]));
            assert_eq!(r.unwrap_err().status, StatusCode::FORBIDDEN, "{cookie}");
        }
        for token in ["", "0", "../", "%00"] {
            let r = auth.check(&parts("GET", &format!("/?token={token}"), &[("host", "127.0.0.1:4000")]));
            assert_eq!(r.unwrap_err().status, StatusCode::FORBIDDEN, "{token}");
        }
    }

    #[test]
    fn foreign_hosts_origins_and_cross_site_fetches_are_refused_even_with_the_cookie() {
        let auth = Auth::new(4000);
        let cookie = session(&auth);
        let with = |extra: &[(&str, &str)]| {
            let mut h = vec![("cookie", cookie.as_str())];
            h.extend_from_slice(extra);
            auth.check(&parts("GET", "/events", &h))
        };
        for host in
            ["evil.example:4000", "127.0.0.1:4001", "127.0.0.1", "localhost.evil.example:4000", "0.0.0.0:4000", ""]
        {
            assert_eq!(with(&[("host", host)]).unwrap_err().status, StatusCode::FORBIDDEN, "{host}");
        }
        for origin in [
            "http://evil.example",
            "http://127.0.0.1:4001",
            "https://127.0.0.1:4000",
            "null",
            "http://localhost:4000.evil.example",
        ] {
            let r = with(&[("host", "127.0.0.1:4000"), ("origin", origin)]);
            assert_eq!(r.unwrap_err().status, StatusCode::FORBIDDEN, "{origin}");
        }
        let ours = with(&[
            ("host", "127.0.0.1:4000"),
            ("origin", "http://127.0.0.1:4000"),
            ("sec-fetch-site", "same-origin"),
            ("sec-fetch-mode", "cors"),
        ]);
        assert_eq!(ours, Ok(Pass::Session));
        for site in ["cross-site", "same-site"] {
            let r = with(&[("host", "127.0.0.1:4000"), ("sec-fetch-site", site), ("sec-fetch-mode", "cors")]);
            assert_eq!(r.unwrap_err().status, StatusCode::FORBIDDEN, "{site}");
        }
        // A link followed from elsewhere is a navigation; it still needs the session.
        let nav = with(&[("host", "127.0.0.1:4000"), ("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "navigate")]);
        assert_eq!(nav, Ok(Pass::Session));
    }

    #[test]
    fn only_reads_are_answered() {
        let auth = Auth::new(4000);
        let cookie = session(&auth);
        for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
            let r = auth.check(&parts(method, "/", &[("host", "127.0.0.1:4000"), ("cookie", &cookie)]));
            assert_eq!(r.unwrap_err().status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        }
    }
}
