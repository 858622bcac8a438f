//! The admin API and dashboard (AM1–AM5).
//!
//! Every route under `/admin/api` and `/admin/events` needs the admin credential: either
//! `Authorization: Bearer <token>` (scripts, the CLI) or the session cookie set by
//! `POST /admin/login` (the dashboard). The token is compared by BLAKE3 hash, in constant
//! time; sessions are stored hashed. The cookie is `HttpOnly` and `SameSite=Strict`, and
//! every state-changing request carries a JSON body, which a cross-site form cannot send.

// Handlers answer bad input with a ready HTTP response, as axum handlers do.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agentfw_core::admission::{ComponentId, Inventory, Mode, Score};
use agentfw_core::central::Policy;
use agentfw_core::containment::{ContainmentConfig, TextId};
use agentfw_core::firewall::AdminAction;
use agentfw_core::message::AgentId;
use agentfw_core::seal::DeviceId;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequestParts, Query, State};
use axum::http::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Shared, create_invite, now};
use crate::audit::{AuditQuery, parse_time, to_jsonl};
use crate::clock;
use crate::protocol::ApiError;

/// The dashboard: a page, its script, and the script and styles it shares with the
/// daemon's dashboard ([`crate::ui`]); nothing from elsewhere.
pub const DASHBOARD: &str = include_str!("../dashboard.html");
const DASHBOARD_JS: &str = include_str!("../dashboard.js");
const COOKIE_NAME: &str = "afw_session";

pub(super) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/", get(|| async { axum::response::Redirect::to("/admin") }))
        .route("/admin", get(dashboard))
        .route("/admin/assets/dashboard.js", get(|| asset("text/javascript; charset=utf-8", DASHBOARD_JS)))
        .route("/admin/assets/common.js", get(|| asset("text/javascript; charset=utf-8", crate::ui::COMMON_JS)))
        .route("/admin/assets/common.css", get(|| asset("text/css; charset=utf-8", crate::ui::COMMON_CSS)))
        .route("/admin/login", post(login))
        .route("/admin/logout", post(logout))
        .route("/admin/events", get(events))
        .route("/admin/api/overview", get(overview))
        .route("/admin/api/disconnect", post(disconnect))
        .route("/admin/api/reconnect", post(reconnect))
        .route("/admin/api/quarantine", post(quarantine))
        .route("/admin/api/lift", post(lift))
        .route("/admin/api/forget", post(forget))
        .route("/admin/api/admission", get(admission))
        .route("/admin/api/admission/preview", post(preview))
        .route("/admin/api/admission/mode", post(set_mode))
        .route("/admin/api/admission/threshold", post(set_threshold))
        .route("/admin/api/admission/exception", post(exception))
        .route("/admin/api/admission/inventory", put(set_inventory))
        .route("/admin/api/audit", get(audit))
        .route("/admin/api/audit.jsonl", get(audit_jsonl))
        .route("/admin/api/invites", post(invite))
        .route("/admin/api/devices", get(devices))
        .route("/admin/api/devices/revoke", post(revoke))
}

/// A JSON error response: `{"code": …, "error": …}`.
pub(crate) fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (status, Json(ApiError { code: code.to_owned(), error: message.to_owned() })).into_response()
}

fn unavailable(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "admin request failed");
    error(StatusCode::SERVICE_UNAVAILABLE, "relay.unavailable", "the relay cannot do that right now")
}

/// Proof that the request carries the admin credential.
pub(crate) struct Admin;

impl FromRequestParts<Arc<Shared>> for Admin {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, shared: &Arc<Shared>) -> Result<Self, Response> {
        let denied = || {
            error(
                StatusCode::UNAUTHORIZED,
                "admin.unauthorized",
                "the admin credential is missing or wrong: log in, or send `Authorization: Bearer <token>`",
            )
        };
        if let Some(value) = parts.headers.get(AUTHORIZATION) {
            let token = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")).map(str::trim).unwrap_or_default();
            return if shared.check_admin_token(token) { Ok(Admin) } else { Err(denied()) };
        }
        let session = crate::ui::cookies(&parts.headers, COOKIE_NAME).next().map(str::to_owned);
        let Some(session) = session else {
            return Err(denied());
        };
        match shared.store.session_valid(blake3::hash(session.as_bytes()).as_bytes(), now()).await {
            Ok(true) => Ok(Admin),
            Ok(false) => Err(denied()),
            Err(e) => Err(unavailable(e)),
        }
    }
}

type Body<T> = Result<Json<T>, JsonRejection>;

fn body<T>(b: Body<T>) -> Result<T, Response> {
    b.map(|Json(t)| t).map_err(|e| error(StatusCode::BAD_REQUEST, "admin.bad_request", &e.body_text()))
}

async fn dashboard() -> Response {
    page_headers(Html(DASHBOARD).into_response())
}

/// A script or style sheet of the dashboard.
async fn asset(content_type: &'static str, body: &'static str) -> Response {
    page_headers(([(CONTENT_TYPE, content_type)], body).into_response())
}

/// Scripts from this origin only (no inline script), no framing, no referrer.
fn page_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    );
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Login {
    token: String,
}

async fn login(State(shared): State<Arc<Shared>>, b: Body<Login>) -> Response {
    let login = match body(b) {
        Ok(l) => l,
        Err(r) => return r,
    };
    if !shared.check_admin_token(login.token.trim()) {
        // A pause on failure slows guessing; tokens are 256 random bits anyway.
        tokio::time::sleep(Duration::from_millis(300)).await;
        return error(StatusCode::UNAUTHORIZED, "admin.unauthorized", "that is not the admin token");
    }
    let Ok(raw) = clock::random_bytes::<32>() else {
        return unavailable("no randomness");
    };
    let session = crate::protocol::encode_b64(&raw);
    let ttl = shared.config.session_ttl;
    if let Err(e) = shared.store.create_session(blake3::hash(session.as_bytes()).as_bytes(), now(), now() + ttl).await {
        return unavailable(e);
    }
    let secure = if shared.config.secure_cookie || shared.config.tls.is_some() { "; Secure" } else { "" };
    let cookie =
        format!("{COOKIE_NAME}={session}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{secure}", ttl.as_secs());
    let mut response = (StatusCode::OK, Json(json!({"ok": true}))).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(SET_COOKIE, v);
    }
    response
}

async fn logout(State(shared): State<Arc<Shared>>, parts: axum::http::HeaderMap) -> Response {
    for v in crate::ui::cookies(&parts, COOKIE_NAME) {
        let _ = shared.store.delete_session(blake3::hash(v.as_bytes()).as_bytes()).await;
    }
    let mut response = Json(json!({"ok": true})).into_response();
    response
        .headers_mut()
        .insert(SET_COOKIE, HeaderValue::from_static("afw_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"));
    response
}

/// Live updates: an event `changed` whenever the overview may have changed (throttled).
async fn events(_: Admin, State(shared): State<Arc<Shared>>) -> Response {
    let rx = shared.hub.dashboard_events();
    let first =
        futures_util::stream::once(async { Ok::<_, Infallible>(SseEvent::default().event("changed").data("{}")) });
    let rest = futures_util::stream::unfold(rx, |mut rx| async move {
        match rx.recv().await {
            Ok(()) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                Some((Ok::<_, Infallible>(SseEvent::default().event("changed").data("{}")), rx))
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => None,
        }
    });
    use futures_util::StreamExt as _;
    Sse::new(first.chain(rest)).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}

#[derive(Serialize)]
struct AgentView {
    id: String,
    label: String,
    device: String,
    device_name: String,
    live: bool,
    online: bool,
    quarantined: Option<serde_json::Value>,
    admission: String,
    admitted: bool,
}

/// Everything the dashboard shows. Metadata only.
async fn overview(_: Admin, State(shared): State<Arc<Shared>>) -> Response {
    let conversations = match shared.store.conversations().await {
        Ok(c) => c,
        Err(e) => return unavailable(e),
    };
    let pending = shared.store.pending_count().await.unwrap_or(0);
    let t = now();
    let devices: Vec<_> = shared.devices.read().map(|d| d.values().cloned().collect()).unwrap_or_default();
    let device_names: BTreeMap<DeviceId, String> = devices.iter().map(|d| (d.row.device, d.row.name.clone())).collect();
    let agents: Vec<_> = shared.agents.read().map(|a| a.values().cloned().collect()).unwrap_or_default();
    let Ok(policy) = shared.policy.read() else {
        return unavailable("policy lock");
    };
    let mode = policy.admission().mode();
    let labels: BTreeMap<String, String> = agents.iter().map(|a| (a.agent.id.to_string(), a.agent.label())).collect();
    let state_of = |a: &str, b: &str, last_verdict: &str| {
        let (ai, bi) = (AgentId::new(a), AgentId::new(b));
        if policy.disconnection(&ai, &bi).is_some() {
            "Disconnected"
        } else if policy.quarantine_of(t, &ai).is_some() || policy.quarantine_of(t, &bi).is_some() {
            "Contained"
        } else if last_verdict == "deny" {
            "Refused"
        } else {
            "Connected"
        }
    };
    let conversations: Vec<_> = conversations
        .into_iter()
        .filter(|c| !c.a.is_empty() && !c.b.is_empty())
        .map(|c| {
            let state = state_of(&c.a, &c.b, &c.last_verdict);
            json!({
                "a": c.a, "b": c.b, "a_label": c.a_label, "b_label": c.b_label, "state": state,
                "last_at": c.last_at, "decisions": c.decisions, "refusals": c.refusals,
                "last_refusal": c.last_refusal, "last_refusal_code": c.last_refusal_code, "last_refusal_at": c.last_refusal_at,
            })
        })
        .collect();
    let mut agent_views: Vec<AgentView> = agents
        .iter()
        .map(|a| {
            let evaluation = policy.admission().evaluate_agent(&a.agent);
            AgentView {
                id: a.agent.id.to_string(),
                label: a.agent.label(),
                device: a.device.to_string(),
                device_name: device_names.get(&a.device).cloned().unwrap_or_default(),
                live: a.live,
                online: shared.hub.is_connected(a.device),
                quarantined: policy
                    .quarantine_of(t, &a.agent.id)
                    .map(|q| json!({"until": q.until.as_millis(), "reason": q.reason})),
                admission: evaluation.line(mode),
                admitted: evaluation.admitted,
            }
        })
        .collect();
    agent_views.sort_by(|x, y| x.label.cmp(&y.label).then(x.id.cmp(&y.id)));
    let quarantined: Vec<_> = policy
        .quarantines(t)
        .into_iter()
        .map(|(agent, q)| {
            let label = labels.get(agent.as_str()).cloned().unwrap_or_else(|| agent.to_string());
            json!({"agent": agent, "label": label, "until": q.until.as_millis(), "reason": q.reason})
        })
        .collect();
    let disconnected: Vec<_> = policy
        .disconnected()
        .iter()
        .map(|d| {
            let la = labels.get(d.a.as_str()).cloned().unwrap_or_else(|| d.a.to_string());
            let lb = labels.get(d.b.as_str()).cloned().unwrap_or_else(|| d.b.to_string());
            json!({"a": d.a, "b": d.b, "a_label": la, "b_label": lb, "reason": d.reason})
        })
        .collect();
    let remembered = policy.remembered().count();
    let admission = admission_view(&policy);
    let devices: Vec<_> = devices
        .iter()
        .map(|d| {
            json!({
                "device": d.row.device, "name": d.row.name, "status": d.row.status,
                "enrolled_at": d.row.enrolled_at.as_millis(), "online": shared.hub.is_connected(d.row.device),
            })
        })
        .collect();
    drop(policy);
    Json(json!({
        "now": t.as_millis(),
        "relay": {"instance": shared.instance, "database": if shared.store.is_postgres() { "postgresql" } else { "sqlite" }, "connected_here": shared.hub.connected(), "pending": pending},
        "conversations": conversations,
        "agents": agent_views,
        "devices": devices,
        "quarantined": quarantined,
        "disconnected": disconnected,
        "remembered_texts": remembered,
        "admission": admission,
    }))
    .into_response()
}

fn admission_view(policy: &Policy) -> serde_json::Value {
    let admission = policy.admission();
    let mut components: BTreeMap<String, Option<Score>> = BTreeMap::new();
    for (_, cs) in admission.inventory().agents() {
        for c in cs {
            let entry = components.entry(c.id.to_string()).or_insert(c.score);
            *entry = match (*entry, c.score) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
        }
    }
    let exceptions: Vec<String> = admission.config().exceptions.iter().map(ToString::to_string).collect();
    let components: Vec<_> = components
        .into_iter()
        .map(|(id, score)| {
            json!({
                "id": id, "score": score.map(Score::as_f64), "level": score.map(|s| s.level().to_string()),
                "excepted": exceptions.contains(&id),
            })
        })
        .collect();
    let evaluations: Vec<_> = admission
        .evaluate_all()
        .into_iter()
        .map(|e| json!({"agent": e.agent, "admitted": e.admitted, "line": e.line(admission.mode())}))
        .collect();
    json!({
        "mode": admission.mode(),
        "threshold": admission.threshold().as_f64(),
        "level": admission.threshold().level().to_string(),
        "exceptions": exceptions,
        "components": components,
        "agents": evaluations,
    })
}

async fn apply(shared: &Shared, actions: Vec<AdminAction>) -> Response {
    match shared.change_policy("admin", actions).await {
        Ok(seq) => Json(json!({"ok": true, "policy_seq": seq})).into_response(),
        Err(e) => unavailable(e),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Pair {
    a: String,
    b: String,
    #[serde(default)]
    reason: String,
}

async fn disconnect(_: Admin, State(shared): State<Arc<Shared>>, b: Body<Pair>) -> Response {
    let p = match body(b) {
        Ok(p) => p,
        Err(r) => return r,
    };
    if p.a.trim().is_empty() || p.b.trim().is_empty() || p.a == p.b {
        return error(StatusCode::BAD_REQUEST, "admin.bad_request", "give two different agents");
    }
    let reason = if p.reason.trim().is_empty() { "disconnected by the admin".to_owned() } else { p.reason };
    apply(&shared, vec![AdminAction::Disconnect { a: AgentId::new(p.a), b: AgentId::new(p.b), reason }]).await
}

async fn reconnect(_: Admin, State(shared): State<Arc<Shared>>, b: Body<Pair>) -> Response {
    let p = match body(b) {
        Ok(p) => p,
        Err(r) => return r,
    };
    apply(&shared, vec![AdminAction::Reconnect { a: AgentId::new(p.a), b: AgentId::new(p.b) }]).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuarantineBody {
    agent: String,
    #[serde(default)]
    seconds: Option<u64>,
    #[serde(default)]
    reason: String,
}

async fn quarantine(_: Admin, State(shared): State<Arc<Shared>>, b: Body<QuarantineBody>) -> Response {
    let q = match body(b) {
        Ok(q) => q,
        Err(r) => return r,
    };
    if q.agent.trim().is_empty() {
        return error(StatusCode::BAD_REQUEST, "admin.bad_request", "give the agent to quarantine");
    }
    // Unless the admin says otherwise, as long as the firewall quarantines (CT1: an hour).
    let seconds = q.seconds.unwrap_or_else(|| ContainmentConfig::default().quarantine.as_secs()).clamp(1, 365 * 86_400);
    let reason = if q.reason.trim().is_empty() { "quarantined by the admin".to_owned() } else { q.reason };
    // An agent the relay knows is held by its key: every process of it, on every machine.
    let agent = AgentId::new(q.agent);
    let known = shared.agents.read().ok().and_then(|a| a.get(&agent).map(|row| (row.device, row.agent.clone())));
    let known = known.map(|(device, a)| shared.on_its_machine(device, a));
    apply(&shared, vec![Policy::quarantine(agent, known.as_ref(), seconds, reason)]).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentBody {
    agent: String,
}

async fn lift(_: Admin, State(shared): State<Arc<Shared>>, b: Body<AgentBody>) -> Response {
    match body(b) {
        Ok(a) => apply(&shared, vec![AdminAction::LiftQuarantine { agent: AgentId::new(a.agent) }]).await,
        Err(r) => r,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetBody {
    /// The text id, 16 hex digits.
    text: String,
}

async fn forget(_: Admin, State(shared): State<Arc<Shared>>, b: Body<ForgetBody>) -> Response {
    let f = match body(b) {
        Ok(f) => f,
        Err(r) => return r,
    };
    match u64::from_str_radix(f.text.trim(), 16) {
        Ok(id) => apply(&shared, vec![AdminAction::Forget { text: TextId(id) }]).await,
        Err(_) => error(StatusCode::BAD_REQUEST, "admin.bad_request", "a text id is 16 hex digits"),
    }
}

async fn admission(_: Admin, State(shared): State<Arc<Shared>>) -> Response {
    match shared.policy.read() {
        Ok(p) => Json(admission_view(&p)).into_response(),
        Err(_) => unavailable("policy lock"),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThresholdBody {
    /// A score (`6.5`) or a level (`HIGH`), as text or a number.
    threshold: serde_json::Value,
}

fn threshold(v: &serde_json::Value) -> Result<Score, Response> {
    let text = match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Score::parse_threshold(&text).map_err(|e| error(StatusCode::BAD_REQUEST, "admission.threshold", &e.to_string()))
}

async fn preview(_: Admin, State(shared): State<Arc<Shared>>, b: Body<ThresholdBody>) -> Response {
    let t = match body(b).and_then(|t| threshold(&t.threshold)) {
        Ok(t) => t,
        Err(r) => return r,
    };
    match shared.policy.read() {
        Ok(p) => {
            let preview = p.admission().preview(t);
            let kept: Vec<_> =
                preview.kept_out.iter().map(|e| json!({"agent": e.agent, "line": e.line(Mode::Enforce)})).collect();
            Json(json!({
                "threshold": t.as_f64(), "level": t.level().to_string(), "current": preview.current.as_f64(),
                "total": preview.total, "kept_out": kept, "newly_kept_out": preview.newly_kept_out,
                "newly_admitted": preview.newly_admitted, "summary": preview.to_string(),
            }))
            .into_response()
        }
        Err(_) => unavailable("policy lock"),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModeBody {
    mode: String,
}

async fn set_mode(_: Admin, State(shared): State<Arc<Shared>>, b: Body<ModeBody>) -> Response {
    match body(b) {
        Ok(m) => match m.mode.parse::<Mode>() {
            Ok(mode) => apply(&shared, vec![AdminAction::SetAdmissionMode { mode }]).await,
            Err(e) => error(StatusCode::BAD_REQUEST, "admission.mode", &e.to_string()),
        },
        Err(r) => r,
    }
}

async fn set_threshold(_: Admin, State(shared): State<Arc<Shared>>, b: Body<ThresholdBody>) -> Response {
    match body(b).and_then(|t| threshold(&t.threshold)) {
        Ok(threshold) => apply(&shared, vec![AdminAction::SetAdmissionThreshold { threshold }]).await,
        Err(r) => r,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExceptionBody {
    component: String,
    granted: bool,
}

async fn exception(_: Admin, State(shared): State<Arc<Shared>>, b: Body<ExceptionBody>) -> Response {
    let e = match body(b) {
        Ok(e) => e,
        Err(r) => return r,
    };
    match ComponentId::new(e.component) {
        Ok(component) if e.granted => apply(&shared, vec![AdminAction::Except { component }]).await,
        Ok(component) => apply(&shared, vec![AdminAction::Unexcept { component }]).await,
        Err(err) => error(StatusCode::BAD_REQUEST, "admission.component", &err.to_string()),
    }
}

async fn set_inventory(_: Admin, State(shared): State<Arc<Shared>>, text: String) -> Response {
    match Inventory::from_json(&text) {
        Ok(inventory) => apply(&shared, vec![AdminAction::SetInventory { inventory }]).await,
        Err(e) => error(StatusCode::BAD_REQUEST, "admission.inventory", &e.to_string()),
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct AuditParams {
    from: Option<String>,
    to: Option<String>,
    since: Option<String>,
    until: Option<String>,
    verdict: Option<String>,
    limit: Option<usize>,
}

fn audit_query(p: AuditParams) -> Result<AuditQuery, Response> {
    let t = now();
    let time = |s: Option<String>| {
        s.filter(|s| !s.trim().is_empty())
            .map(|s| parse_time(&s, t))
            .transpose()
            .map_err(|e| error(StatusCode::BAD_REQUEST, "audit.bad_time", &e))
    };
    let nonempty = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
    Ok(AuditQuery {
        from: nonempty(p.from),
        to: nonempty(p.to),
        since: time(p.since)?,
        until: time(p.until)?,
        verdict: nonempty(p.verdict),
        limit: p.limit.unwrap_or(1000).clamp(1, 1_000_000),
    })
}

async fn audit(
    _: Admin,
    State(shared): State<Arc<Shared>>,
    params: Result<Query<AuditParams>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match params
        .map_err(|e| error(StatusCode::BAD_REQUEST, "admin.bad_request", &e.body_text()))
        .and_then(|Query(p)| audit_query(p))
    {
        Ok(q) => q,
        Err(r) => return r,
    };
    match shared.store.audit(&q).await {
        Ok(records) => Json(records).into_response(),
        Err(e) => unavailable(e),
    }
}

async fn audit_jsonl(
    _: Admin,
    State(shared): State<Arc<Shared>>,
    params: Result<Query<AuditParams>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match params
        .map_err(|e| error(StatusCode::BAD_REQUEST, "admin.bad_request", &e.body_text()))
        .and_then(|Query(p)| audit_query(AuditParams { limit: Some(p.limit.unwrap_or(1_000_000)), ..p }))
    {
        Ok(q) => q,
        Err(r) => return r,
    };
    match shared.store.audit(&q).await {
        Ok(records) => ([(CONTENT_TYPE, "application/x-ndjson")], to_jsonl(&records)).into_response(),
        Err(e) => unavailable(e),
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct InviteBody {
    #[serde(default)]
    note: String,
}

async fn invite(_: Admin, State(shared): State<Arc<Shared>>, b: Body<InviteBody>) -> Response {
    let note = match body(b) {
        Ok(i) => i.note,
        Err(r) => return r,
    };
    match create_invite(&shared.store, shared.config.invite_ttl, &note).await {
        Ok(token) => (
            StatusCode::CREATED,
            Json(json!({"invite": token, "expires_in_seconds": shared.config.invite_ttl.as_secs()})),
        )
            .into_response(),
        Err(e) => unavailable(e),
    }
}

async fn devices(_: Admin, State(shared): State<Arc<Shared>>) -> Response {
    let list: Vec<_> = shared
        .devices
        .read()
        .map(|d| {
            d.values()
                .map(|i| {
                    json!({
                        "device": i.row.device, "name": i.row.name, "status": i.row.status,
                        "superseded_by": i.row.superseded_by, "enrolled_at": i.row.enrolled_at.as_millis(),
                        "online": shared.hub.is_connected(i.row.device), "bundle": i.row.bundle,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Json(list).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RevokeBody {
    device: DeviceId,
}

async fn revoke(_: Admin, State(shared): State<Arc<Shared>>, b: Body<RevokeBody>) -> Response {
    let r = match body(b) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    match shared.store.revoke(r.device, now(), &shared.instance).await {
        Ok(true) => {
            tracing::info!(device = %r.device, "device revoked");
            if let Err(e) = shared.reload_device(r.device).await {
                return unavailable(e);
            }
            Json(json!({"ok": true})).into_response()
        }
        Ok(false) => error(StatusCode::NOT_FOUND, "admin.not_found", "no active device with that id"),
        Err(e) => unavailable(e),
    }
}
