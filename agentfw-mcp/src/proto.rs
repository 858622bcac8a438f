//! The daemon's socket protocol: versioned JSON lines, one request and one response each.
//!
//! A request is one line of at most [`MAX_REQUEST_BYTES`]:
//!
//! ```json
//! {"v": 1, "id": 7, "op": "send", "args": {"to": "api (codex)", "text": "hi", "key": "…"}}
//! ```
//!
//! and its response one line with the same `id`:
//!
//! ```json
//! {"v": 1, "id": 7, "ok": true, "result": {"id": "01J…", "to": "api (codex)", …}}
//! {"v": 1, "id": 7, "ok": false, "error": {"code": "refused", "message": "refused by rule …"}}
//! ```
//!
//! Nothing in a request says who the caller is: the daemon decides that from the socket's
//! peer credentials (ID1, ID5). A line that is too long, not JSON, of another version or
//! with unknown fields gets an error response naming the problem; an over-long line also
//! ends the connection, since the rest of it cannot be trusted to be framed.
//!
//! Requests that change state carry a token so that a client may retry them after a lost
//! connection without doing them twice: `send` a `key` (the same key answers the same
//! outcome), `inbox` a `batch` (the same batch returns the same deliveries).

use std::collections::BTreeMap;
use std::io::{self, BufRead};

use agentfw_core::admission::{ComponentId, Mode, Score};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this build speaks.
pub const VERSION: u32 = 1;
/// Longest request line: a 64 KiB message is far below it even with every byte escaped.
pub const MAX_REQUEST_BYTES: usize = 1 << 20;
/// Longest response line a client accepts (a page of audit records, a full inbox).
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// Error codes, stable for scripts.
pub mod code {
    pub const MALFORMED: &str = "proto.malformed";
    pub const VERSION: &str = "proto.version";
    pub const TOO_LARGE: &str = "proto.too_large";
    pub const BAD_REQUEST: &str = "proto.bad_request";
    pub const NOT_AGENT: &str = "identity.unknown";
    pub const OTHER_USER: &str = "identity.other_user";
    pub const AGENT_ADMIN: &str = "admin.from_agent";
    pub const UNKNOWN_CALLER: &str = "admin.unknown_caller";
    /// The daemon serves as many connections as it can take: this one is refused.
    pub const BUSY: &str = "daemon.busy";
    pub const UNKNOWN_RECIPIENT: &str = "recipient.unknown";
    pub const AMBIGUOUS_RECIPIENT: &str = "recipient.ambiguous";
    pub const GONE_RECIPIENT: &str = "recipient.gone";
    pub const REFUSED: &str = "refused";
    pub const STORAGE_FULL: &str = "storage.full";
    pub const STORAGE: &str = "storage.error";
    pub const NOT_FOUND: &str = "not_found";
    pub const INTERNAL: &str = "internal";
}

/// What a client asks. Variants are `op` names; their fields are `args`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// Who am I, and which daemon is this? `client` says what is asking (`mcp`, `cli`,
    /// `hook`): an MCP server's connection is its session's line for waking.
    Hello {
        client: String,
    },
    /// Send `text` to `to` (a label such as `api (codex)`, a project name, or an agent id).
    Send {
        to: String,
        text: String,
        #[serde(default)]
        reply_to: Option<String>,
        #[serde(default)]
        key: Option<String>,
    },
    /// Deliver what is waiting for the caller. Retrying with the same `batch` returns the
    /// same deliveries.
    Inbox {
        #[serde(default)]
        batch: Option<String>,
    },
    Team {},
    Status {},
    Audit(AuditQuery),
    /// Reset the turn fuse between two agents (labels or ids).
    Allow {
        a: String,
        b: String,
    },
    QuarantineLift {
        agent: String,
    },
    /// Ratings to keep (component → score; `null` for a component the scanner could not rate).
    AdmissionImport {
        ratings: BTreeMap<ComponentId, Option<Score>>,
        source: String,
        #[serde(default)]
        notes: Vec<String>,
    },
    AdmissionMode {
        mode: Mode,
    },
    AdmissionExcept {
        component: ComponentId,
        #[serde(default)]
        remove: bool,
    },
    /// A harness hook ran in the caller's session.
    Hook {
        harness: String,
        event: HookEvent,
        #[serde(default)]
        session_id: Option<String>,
        /// The prompt, for `user_prompt_submit`: a wake-up the daemon sent is not a person.
        #[serde(default)]
        prompt: Option<String>,
    },
    /// Re-read the user's rule files now.
    Reload {},
    Shutdown {},
    /// Serve the local dashboard on `127.0.0.1` (`port`, else a free one) and mint a
    /// one-time token for its URL; `stop` stops it instead. `show_text` puts the text of
    /// accepted messages on the page.
    Dashboard {
        #[serde(default)]
        port: Option<u16>,
        #[serde(default)]
        show_text: bool,
        #[serde(default)]
        stop: bool,
    },
}

impl Op {
    /// Whether the op lowers protection, and so runs only for a person (AM6).
    pub fn is_admin(&self) -> bool {
        matches!(
            self,
            Op::Allow { .. }
                | Op::QuarantineLift { .. }
                | Op::AdmissionImport { .. }
                | Op::AdmissionMode { .. }
                | Op::AdmissionExcept { .. }
                | Op::Reload {}
                | Op::Shutdown {}
                | Op::Dashboard { .. }
        )
    }

    /// The op's name as it appears on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Hello { .. } => "hello",
            Op::Send { .. } => "send",
            Op::Inbox { .. } => "inbox",
            Op::Team {} => "team",
            Op::Status {} => "status",
            Op::Audit(_) => "audit",
            Op::Allow { .. } => "allow",
            Op::QuarantineLift { .. } => "quarantine_lift",
            Op::AdmissionImport { .. } => "admission_import",
            Op::AdmissionMode { .. } => "admission_mode",
            Op::AdmissionExcept { .. } => "admission_except",
            Op::Hook { .. } => "hook",
            Op::Reload {} => "reload",
            Op::Shutdown {} => "shutdown",
            Op::Dashboard { .. } => "dashboard",
        }
    }
}

/// Harness hook events the daemon acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// Record the harness session (Codex: thread) id, verified by the hook's ancestry (ID4).
    SessionStart,
    /// A person's prompt: resets the turn fuse (LM2).
    UserPromptSubmit,
}

/// `agentfw audit` filters. `from`/`to` match an agent id or label exactly, or a label's
/// project; `since` is milliseconds since the epoch; `after` continues from a record's seq.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub since: Option<u64>,
    pub after: Option<i64>,
    pub limit: Option<u32>,
}

/// A request line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Request {
    pub v: u32,
    pub id: u64,
    #[serde(flatten)]
    pub op: Op,
}

/// A response line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub v: u32,
    pub id: u64,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

impl Response {
    pub fn ok(id: u64, result: Value) -> Self {
        Self { v: VERSION, id, ok: true, result: Some(result), error: None }
    }

    pub fn err(id: u64, error: ErrorBody) -> Self {
        Self { v: VERSION, id, ok: false, result: None, error: Some(error) }
    }
}

/// A failed request: a stable code and a message for people (and models).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
    /// For `refused`: the firewall's reason code (`rule`, `limit.rate`, …) and rule id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<RefusalInfo>,
}

impl ErrorBody {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self { code: code.to_owned(), message: message.into(), refusal: None }
    }
}

/// What refused a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusalInfo {
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Parse one request line. On error, the id (when the line had one) and the error body.
pub fn parse_request(line: &[u8]) -> Result<(u64, Op), (u64, Box<ErrorBody>)> {
    parse(line).map_err(|(id, e)| (id, Box::new(e)))
}

#[allow(clippy::result_large_err)] // boxed by the caller; a bad request is rare
fn parse(line: &[u8]) -> Result<(u64, Op), (u64, ErrorBody)> {
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        (0, ErrorBody::new(code::MALFORMED, format!("the request is not JSON: {e}; send one JSON object per line")))
    })?;
    let Value::Object(mut map) = value else {
        return Err((0, ErrorBody::new(code::MALFORMED, "the request must be a JSON object")));
    };
    let id = map.get("id").and_then(Value::as_u64).unwrap_or(0);
    match map.remove("v").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => {
            return Err((
                id,
                ErrorBody::new(
                    code::VERSION,
                    format!(
                        "protocol version {v} is not supported: this daemon speaks version {VERSION}; restart the daemon or update agentfw"
                    ),
                ),
            ));
        }
        None => return Err((id, ErrorBody::new(code::VERSION, "the request has no protocol version `v`"))),
    }
    map.remove("id");
    if !map.contains_key("args") {
        map.insert("args".into(), Value::Object(serde_json::Map::new()));
    }
    let name = map.get("op").and_then(Value::as_str).unwrap_or("?").to_owned();
    let op: Op = serde_json::from_value(Value::Object(map))
        .map_err(|e| (id, ErrorBody::new(code::BAD_REQUEST, format!("bad `{name}` request: {e}"))))?;
    Ok((id, op))
}

/// Read one line of at most `limit` bytes (without its newline). `Ok(None)` at end of
/// input; an over-long line is [`io::ErrorKind::InvalidData`] and the reader is left
/// mid-line.
pub fn read_line(reader: &mut impl BufRead, limit: usize) -> io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return if line.is_empty() {
                Ok(None)
            } else {
                Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the connection closed mid-line"))
            };
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        if line.len() + take > limit.saturating_add(1) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("line longer than {limit} bytes")));
        }
        line.extend_from_slice(available.get(..take).unwrap_or_default());
        reader.consume(take);
        if newline.is_some() {
            line.pop();
            return Ok(Some(line));
        }
    }
}

/// One agent session as `team`, `status` and `hello` show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentView {
    pub id: String,
    pub label: String,
    pub agent: String,
    pub project: String,
    pub pid: u32,
    pub started_at: u64,
    /// Its process is running (ID5).
    pub live: bool,
    /// The caller itself.
    #[serde(default)]
    pub you: bool,
    pub verified: bool,
    /// Why it is not verified (ID2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified: Option<String>,
    /// The harness session id, when known (ID4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Quarantined (CT1): until when and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contained: Option<Contained>,
    /// The admission verdict (AD6: `would refuse: …` in report mode, `refused: …` when enforced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<String>,
    /// Why its components could not be listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components_error: Option<String>,
    /// How it can be woken (WK1): `claude socket`, `codex queue`, or none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake: Option<String>,
    pub last_seen: u64,
    /// The machine of an agent on another device, as the relay's directory names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

/// The longest note (a reason, an admission verdict, an error) shown about an agent.
const MAX_NOTE_CHARS: usize = 600;

impl AgentView {
    /// The view with every name and note in it [cleaned](agentfw_core::label): what the
    /// daemon hands to people and models (ID7). A project is a folder's name, a machine
    /// and an id may come from another device, a path in a note from a planted binary.
    pub fn cleaned(mut self) -> Self {
        use agentfw_core::label::{MAX_LABEL_CHARS, bounded, clean};
        let note = |s: &mut String| *s = bounded(s, MAX_NOTE_CHARS);
        self.id = bounded(&self.id, MAX_LABEL_CHARS);
        self.label = bounded(&self.label, MAX_LABEL_CHARS);
        self.agent = clean(&self.agent);
        self.project = clean(&self.project);
        self.machine = self.machine.as_deref().map(clean);
        self.session = self.session.as_deref().map(clean);
        for text in [&mut self.unverified, &mut self.admission, &mut self.components_error, &mut self.wake] {
            text.iter_mut().for_each(note);
        }
        if let Some(c) = &mut self.contained {
            note(&mut c.reason);
        }
        self
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contained {
    pub until: u64,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloResult {
    pub protocol: u32,
    pub daemon: String,
    /// The caller's session, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub you: Option<AgentView>,
    /// Why the caller is no known agent session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_agent: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendResult {
    pub id: String,
    pub thread: String,
    pub from: String,
    pub to: String,
    pub to_id: String,
    pub hops: u32,
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryView {
    pub id: String,
    pub from: String,
    pub from_id: String,
    pub thread: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    pub hops: u32,
    pub path: String,
    /// The fenced text (DL1), exactly as the model should see it.
    pub fenced: String,
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedView {
    pub id: String,
    pub from: String,
    pub reason: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxResult {
    pub batch: String,
    pub deliveries: Vec<DeliveryView>,
    /// Messages refused on delivery (PR2), without their text.
    pub refused: Vec<RefusedView>,
    /// Notes from agentfw itself (a thread that closed, LM4).
    pub notes: Vec<String>,
    /// Messages still waiting (held: quarantine, admission refresh).
    pub held: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub you: Option<String>,
    pub admission_mode: String,
    pub agents: Vec<AgentView>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusResult {
    pub daemon: DaemonInfo,
    pub sessions_live: usize,
    pub sessions_total: usize,
    pub inbox_pending: u64,
    pub quarantined: Vec<QuarantineView>,
    pub remembered_texts: usize,
    pub admission: AdmissionInfo,
    pub rules: RulesInfo,
    /// The relay link, when this device joined a relay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<RelayInfo>,
    pub team: Vec<AgentView>,
    /// What about this machine weakens agentfw's guarantees, one sentence each with how to
    /// fix it (for example, agents that can attach a debugger to each other).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The relay link as `agentfw status` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayInfo {
    pub url: String,
    pub device: String,
    pub name: String,
    pub connected: bool,
    /// Why it is not connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Messages accepted for other devices and not yet stored by the relay.
    pub outbox: u64,
    pub remote_agents: usize,
    /// The last central policy entry applied here.
    pub policy_seq: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonInfo {
    pub pid: u32,
    pub version: String,
    pub protocol: u32,
    pub home: String,
    pub socket: String,
    pub started_at: u64,
    pub db_bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantineView {
    pub agent: String,
    pub label: String,
    pub until: u64,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdmissionInfo {
    pub mode: String,
    pub threshold: f64,
    pub exceptions: Vec<String>,
    pub ratings: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RulesInfo {
    pub rules: usize,
    pub user_files: usize,
    /// The last reload's error: the previous rule set stays in force (PR7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One decision, metadata only (AM4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub seq: i64,
    pub at: u64,
    pub id: String,
    pub stage: String,
    pub from: String,
    pub from_label: String,
    pub to: String,
    pub to_label: String,
    pub size: u64,
    pub hops: u32,
    /// `allow`, `deny`, `hold` or `would_refuse`.
    pub verdict: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The sender's binary was not verified (ID2): why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditResult {
    pub records: Vec<AuditRecord>,
    /// Pass as `after` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<i64>,
}

/// The dashboard the daemon serves: its URL with a fresh one-time token, or that it stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashboardResult {
    /// `http://127.0.0.1:PORT/?token=…`; `None` once stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub port: u16,
    pub show_text: bool,
    pub message: String,
}

/// A done admin action, in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_empty_args_may_be_left_out() {
        let req = Request { v: VERSION, id: 3, op: Op::Inbox { batch: Some("b1".into()) } };
        let line = serde_json::to_vec(&req).unwrap();
        assert_eq!(parse_request(&line).unwrap(), (3, Op::Inbox { batch: Some("b1".into()) }));
        assert_eq!(parse_request(br#"{"v":1,"id":4,"op":"team"}"#).unwrap(), (4, Op::Team {}));
    }

    #[test]
    fn bad_requests_get_clear_errors_with_their_id() {
        let (id, e) = parse_request(b"{nope").unwrap_err();
        assert_eq!((id, e.code.as_str()), (0, code::MALFORMED));
        let (id, e) = parse_request(br#"{"v":9,"id":5,"op":"team"}"#).unwrap_err();
        assert_eq!((id, e.code.as_str()), (5, code::VERSION));
        assert!(e.message.contains("version 9 is not supported"), "{}", e.message);
        let (_, e) = parse_request(br#"{"v":1,"id":6,"op":"send","args":{"to":"x","text":"y","from":"web (claude)"}}"#)
            .unwrap_err();
        assert_eq!(e.code, code::BAD_REQUEST);
        assert!(e.message.contains("unknown field `from`"), "{}", e.message);
        let (_, e) = parse_request(br#"{"v":1,"id":7,"op":"fly"}"#).unwrap_err();
        assert!(e.message.contains("unknown variant `fly`"), "{}", e.message);
    }

    #[test]
    fn lines_are_bounded() {
        let mut input = io::Cursor::new(b"short\nthis one is far too long\n".to_vec());
        assert_eq!(read_line(&mut input, 10).unwrap().unwrap(), b"short");
        assert_eq!(read_line(&mut input, 10).unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert!(read_line(&mut io::Cursor::new(Vec::new()), 10).unwrap().is_none());
    }
}
