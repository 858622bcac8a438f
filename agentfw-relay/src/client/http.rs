//! A minimal HTTP/1.1 client for the relay's JSON endpoints (enrollment, admin API).

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

use super::{ClientError, Endpoint};

/// A response: status, headers (lower-case names) and body.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `METHOD path` at the relay, with these headers and body, on a connection of its own.
pub async fn request(
    relay: &Endpoint,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Result<Response, ClientError> {
    let stream = relay.connect().await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| ClientError::Unreachable(e.to_string()))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut builder =
        hyper::Request::builder().method(method).uri(relay.target(path)).header("host", relay.authority());
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let request = builder.body(Full::new(Bytes::from(body))).map_err(|e| ClientError::Protocol(e.to_string()))?;
    let response = sender.send_request(request).await.map_err(|e| ClientError::Unreachable(e.to_string()))?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
        .collect();
    let body = response.into_body().collect().await.map_err(|e| ClientError::Unreachable(e.to_string()))?.to_bytes();
    Ok(Response { status, headers, body: body.to_vec() })
}
