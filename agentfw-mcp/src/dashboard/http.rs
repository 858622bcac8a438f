//! The dashboard's HTTP server: hyper's HTTP/1 on a loopback listener, a handful of routes,
//! and one server-sent event stream per open page.
//!
//! | route | what |
//! |---|---|
//! | `/?token=…` | spends the one-time token for a session cookie; the page |
//! | `/` | the page |
//! | `/app.js`, `/app.css` | the page's script and style |
//! | `/common.js`, `/common.css` | what it shares with the relay's dashboard |
//! | `/events` | the event stream: `state`, `backlog`, then each `decision` |
//!
//! Every response, refusals included, carries a Content-Security-Policy that allows
//! scripts, styles and connections from this origin only, no inline script, no framing,
//! and Trusted Types (so no script can assign a string to `innerHTML`), plus
//! `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.
//!
//! Event stream: on connecting a page gets the `state` (team, counters, quarantines, …) and
//! a `backlog` of the latest decisions, then each new `decision` as the engine commits it,
//! and a fresh `state` (only when it differs) shortly after any change and every few
//! seconds (liveness and expiries change with time alone).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, SET_COOKIE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{broadcast, mpsc, watch};

use super::guard::{Auth, Pass};
use super::{Ask, Dashboard, News};

const INDEX: &str = include_str!("index.html");
const APP_JS: &str = include_str!("app.js");
const APP_CSS: &str = include_str!("app.css");

/// Connections served at once; more wait in the listener's queue.
const MAX_CONNECTIONS: usize = 32;
/// Open event streams at once (pages and tabs).
const MAX_STREAMS: usize = 8;
/// How long a client may take to send its request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// After a change, wait this long for more before sending a new state.
const SETTLE: Duration = Duration::from_millis(100);
/// A state at least this often, for what changes with time alone.
const REFRESH: Duration = Duration::from_secs(2);
/// A comment this often keeps proxies and the browser from closing an idle stream.
const KEEPALIVE: Duration = Duration::from_secs(15);

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; \
                   base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'";

type Body = BoxBody<Bytes, Infallible>;

/// Accept connections until `stop`; then every connection, streams included, ends.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    dashboard: Arc<Dashboard>,
    auth: Arc<Auth>,
    mut stop: watch::Receiver<bool>,
) {
    let streams = Arc::new(AtomicUsize::new(0));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let accepted = tokio::select! {
            accepted = listener.accept(), if connections.len() < MAX_CONNECTIONS => accepted,
            _ = connections.join_next(), if !connections.is_empty() => continue,
            _ = stop.changed() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("agentfw daemon: dashboard: accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let site = Site {
            dashboard: Arc::clone(&dashboard),
            auth: Arc::clone(&auth),
            stop: stop.clone(),
            streams: Arc::clone(&streams),
        };
        connections.spawn(async move {
            let service = service_fn(move |request| {
                let site = site.clone();
                async move { Ok::<_, Infallible>(site.answer(request)) }
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
    // Dropping the set aborts every connection; event streams see `stop` and end too.
}

/// What every request handler shares.
#[derive(Clone)]
struct Site {
    dashboard: Arc<Dashboard>,
    auth: Arc<Auth>,
    stop: watch::Receiver<bool>,
    streams: Arc<AtomicUsize>,
}

impl Site {
    fn answer(&self, request: Request<Incoming>) -> Response<Body> {
        let (parts, _) = request.into_parts();
        match self.auth.check(&parts) {
            Err(denied) => plain(denied.status, &denied.why),
            // The page itself, not a redirect: after a navigation that started on another site
            // (a link clicked in a chat, a file opened by `--open`) the browser would not send
            // a `SameSite=Strict` cookie along a redirect; it does with the page's own
            // requests. The page then drops the spent token from the address bar.
            Ok(Pass::Exchanged { cookie }) => {
                let mut r = reply(StatusCode::OK, "text/html; charset=utf-8", INDEX);
                if let Ok(v) = HeaderValue::from_str(&cookie) {
                    r.headers_mut().insert(SET_COOKIE, v);
                }
                r
            }
            Ok(Pass::Session) => match parts.uri.path() {
                "/" => reply(StatusCode::OK, "text/html; charset=utf-8", INDEX),
                "/app.js" => reply(StatusCode::OK, "text/javascript; charset=utf-8", APP_JS),
                "/app.css" => reply(StatusCode::OK, "text/css; charset=utf-8", APP_CSS),
                "/common.js" => reply(StatusCode::OK, "text/javascript; charset=utf-8", agentfw_relay::ui::COMMON_JS),
                "/common.css" => reply(StatusCode::OK, "text/css; charset=utf-8", agentfw_relay::ui::COMMON_CSS),
                "/events" => self.events(),
                _ => plain(StatusCode::NOT_FOUND, "no such page"),
            },
        }
    }

    fn events(&self) -> Response<Body> {
        if self.streams.fetch_add(1, Ordering::AcqRel) >= MAX_STREAMS {
            self.streams.fetch_sub(1, Ordering::AcqRel);
            return plain(StatusCode::SERVICE_UNAVAILABLE, "too many dashboard pages are open; close one");
        }
        let (tx, rx) = mpsc::channel(64);
        let (site, news) = (self.clone(), self.dashboard.feed.subscribe());
        tokio::spawn(async move {
            stream(&site, news, &tx).await;
            site.streams.fetch_sub(1, Ordering::AcqRel);
        });
        let mut r = Response::new(Channel(rx).boxed());
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        secure(r)
    }
}

/// Feed one page until it goes away or the server stops.
async fn stream(site: &Site, mut news: broadcast::Receiver<News>, tx: &mpsc::Sender<Bytes>) {
    let mut stop = site.stop.clone();
    let send = |event: &str, data: &str| tx.send(Bytes::from(format!("event: {event}\ndata: {data}\n\n")));
    if tx.send(Bytes::from_static(b"retry: 1000\n\n")).await.is_err() {
        return;
    }
    let mut last_state = String::new();
    let mut last_seq = 0;
    let mut resync = true;
    let mut settle: Option<tokio::time::Instant> = Some(tokio::time::Instant::now());
    let mut refresh = tokio::time::interval(REFRESH);
    let mut keepalive = tokio::time::interval(KEEPALIVE);
    loop {
        if settle.is_some_and(|at| at <= tokio::time::Instant::now()) {
            settle = None;
            let Some(state) = site.dashboard.ask(Ask::State).await else { return };
            let state = state.unwrap_or_else(|e| problem(&e));
            if state != last_state {
                if send("state", &state).await.is_err() {
                    return;
                }
                last_state = state;
            }
        }
        if resync {
            resync = false;
            let Some(backlog) = site.dashboard.ask(Ask::Backlog).await else { return };
            let backlog = match backlog {
                Ok(b) => b,
                Err(e) => problem(&e),
            };
            last_seq = serde_json::from_str::<Vec<serde_json::Value>>(&backlog)
                .ok()
                .and_then(|b| b.last().and_then(|r| r.get("seq")).and_then(serde_json::Value::as_i64))
                .unwrap_or(last_seq);
            if send("backlog", &backlog).await.is_err() {
                return;
            }
        }
        let wake = settle.unwrap_or_else(|| tokio::time::Instant::now() + REFRESH * 2);
        tokio::select! {
            _ = stop.changed() => return,
            () = tx.closed() => return,
            heard = news.recv() => match heard {
                Ok(News::Decision(d)) if d.record.seq > last_seq => {
                    last_seq = d.record.seq;
                    let Ok(json) = serde_json::to_string(&*d) else { continue };
                    if send("decision", &json).await.is_err() {
                        return;
                    }
                    settle.get_or_insert_with(|| tokio::time::Instant::now() + SETTLE);
                }
                Ok(News::Decision(_)) => {}
                Ok(News::Changed) => {
                    settle.get_or_insert_with(|| tokio::time::Instant::now() + SETTLE);
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    resync = true;
                    settle = Some(tokio::time::Instant::now());
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            () = tokio::time::sleep_until(wake) => {}
            _ = refresh.tick() => {
                settle.get_or_insert_with(tokio::time::Instant::now);
            }
            _ = keepalive.tick() => {
                if tx.send(Bytes::from_static(b": keepalive\n\n")).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// An error from the engine, as the page shows it.
fn problem(why: &str) -> String {
    serde_json::json!({ "problem": why }).to_string()
}

/// The body of an event stream: what the stream's task sends, as it comes.
struct Channel(mpsc::Receiver<Bytes>);

impl hyper::body::Body for Channel {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }
}

fn reply(status: StatusCode, content_type: &'static str, body: &'static str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    secure(r)
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    secure(r)
}

/// The headers every response carries.
fn secure(mut r: Response<Body>) -> Response<Body> {
    let h = r.headers_mut();
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    h.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
