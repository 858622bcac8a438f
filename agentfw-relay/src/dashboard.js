// The relay's admin dashboard. Element building, escaping, times, the conversation row
// and the event stream come from common.js (AFW), which the daemon's dashboard shares.
"use strict";
const { el, when } = AFW;
const $ = (id) => document.getElementById(id);
let data = null;
let source = null;

function toast(text) {
  const t = $("toast"); t.textContent = text; t.classList.add("show");
  setTimeout(() => t.classList.remove("show"), 2200);
}

async function api(path, body, method) {
  const init = { method: method || (body === undefined ? "GET" : "POST"), credentials: "same-origin", headers: {} };
  if (body !== undefined) { init.headers["content-type"] = "application/json"; init.body = JSON.stringify(body); }
  const r = await fetch(path, init);
  if (r.status === 401) { showLogin(); throw new Error("not logged in"); }
  const json = await r.json().catch(() => ({}));
  if (!r.ok) { toast(json.error || ("failed: " + r.status)); throw new Error(json.error || r.status); }
  return json;
}

function showLogin() {
  $("app").hidden = true; $("login").hidden = false; $("logout").hidden = true;
  if (source) { source.close(); source = null; }
  $("live").textContent = "offline"; $("live").className = "";
}

async function act(path, body, done) {
  await api(path, body);
  toast(done);
  await refresh();
}

function render() {
  const d = data;
  $("relay-meta").textContent = d.relay.database + " · " + d.devices.filter(x => x.online).length + " device(s) online · " + d.relay.pending + " waiting";
  const conv = $("conversations"); conv.replaceChildren();
  if (!d.conversations.length) conv.append(el("tr", {}, el("td", { colspan: 6, class: "empty" }, "No traffic yet.")));
  for (const c of d.conversations) {
    const disconnected = c.state === "Disconnected";
    const pair = c.a_label + " ↔ " + c.b_label;
    conv.append(AFW.conversationRow(c,
      el("td", {},
        disconnected
          ? el("button", { "data-testid": "reconnect", onclick: () => act("/admin/api/reconnect", { a: c.a, b: c.b }, "Reconnected " + pair) }, "Reconnect")
          : el("button", { class: "danger", "data-testid": "disconnect", onclick: () => act("/admin/api/disconnect", { a: c.a, b: c.b, reason: "disconnected from the dashboard" }, "Disconnected " + pair) }, "Disconnect"))));
  }
  const agents = $("agents"); agents.replaceChildren();
  if (!d.agents.length) agents.append(el("tr", {}, el("td", { colspan: 5, class: "empty" }, "No agents yet.")));
  for (const a of d.agents) {
    agents.append(el("tr", { "data-testid": "agent", "data-label": a.label },
      el("td", {}, el("strong", {}, a.label), el("div", { class: "muted" }, a.live ? "live" : "gone")),
      el("td", {}, a.device_name || a.device.slice(0, 8), a.online ? " ●" : ""),
      el("td", { class: "reason" }, a.admission),
      el("td", { class: "reason" }, a.quarantined ? "until " + new Date(a.quarantined.until).toISOString().slice(11, 16) + " UTC: " + a.quarantined.reason : ""),
      el("td", {}, a.quarantined
        ? el("button", { "data-testid": "lift", onclick: () => act("/admin/api/lift", { agent: a.id }, "Lifted " + a.label) }, "Lift")
        : el("button", { class: "danger", "data-testid": "quarantine", onclick: () => act("/admin/api/quarantine", { agent: a.id, reason: "quarantined from the dashboard" }, "Quarantined " + a.label) }, "Quarantine"))));
  }
  const adm = d.admission;
  $("report-only").checked = adm.mode !== "enforce";
  $("admission-summary").textContent = "Mode: " + adm.mode + ". Threshold " + adm.threshold.toFixed(1) + " (" + adm.level + "). " +
    adm.agents.filter(a => !a.admitted).length + " of " + adm.agents.length + " inventoried agent(s) not admitted.";
  if (document.activeElement !== $("threshold")) $("threshold").value = adm.threshold.toFixed(1);
  const comps = $("components"); comps.replaceChildren();
  if (!adm.components.length) comps.append(el("tr", {}, el("td", { colspan: 3, class: "empty" }, "No inventory yet: agents are unknown until rated.")));
  for (const c of adm.components) {
    const box = el("input", { type: "checkbox", "data-testid": "exception", "data-component": c.id });
    box.checked = c.excepted;
    box.addEventListener("change", () => act("/admin/api/admission/exception", { component: c.id, granted: box.checked }, (box.checked ? "Excepted " : "Withdrew exception for ") + c.id));
    comps.append(el("tr", {}, el("td", {}, el("code", {}, c.id)), el("td", {}, c.score == null ? "unrated" : c.score.toFixed(1) + " " + c.level), el("td", {}, box)));
  }
  const devs = $("devices"); devs.replaceChildren();
  for (const v of d.devices) {
    devs.append(el("tr", {},
      el("td", {}, el("strong", {}, v.name || "(unnamed)"), el("div", { class: "muted" }, el("code", {}, v.device))),
      el("td", {}, v.status), el("td", {}, v.online ? "yes" : "no"),
      el("td", {}, v.status === "active" ? el("button", { class: "danger", onclick: () => { if (confirm("Revoke this device? Its key stops working at once.")) act("/admin/api/devices/revoke", { device: v.device }, "Revoked"); } }, "Revoke") : "")));
  }
  const blocks = $("blocks"); blocks.replaceChildren();
  for (const b of d.disconnected) {
    blocks.append(el("tr", { "data-testid": "block" }, el("td", {}, b.a_label + " ↔ " + b.b_label), el("td", { class: "reason" }, b.reason),
      el("td", {}, el("button", { onclick: () => act("/admin/api/reconnect", { a: b.a, b: b.b }, "Reconnected") }, "Reconnect"))));
  }
  for (const q of d.quarantined) {
    blocks.append(el("tr", { "data-testid": "block" }, el("td", {}, q.label + " (quarantined)"), el("td", { class: "reason" }, q.reason),
      el("td", {}, el("button", { onclick: () => act("/admin/api/lift", { agent: q.agent }, "Lifted") }, "Lift"))));
  }
  if (!d.disconnected.length && !d.quarantined.length) blocks.append(el("tr", {}, el("td", { colspan: 3, class: "empty" }, "Nothing blocked.")));
  $("remembered").textContent = d.remembered_texts + " refused text(s) remembered and refused on sight everywhere.";
}

let refreshing = null, again = false;
async function refresh() {
  if (refreshing) { again = true; return refreshing; }
  refreshing = (async () => {
    try { data = await api("/admin/api/overview"); render(); } finally { refreshing = null; }
    if (again) { again = false; await refresh(); }
  })();
  return refreshing;
}

function live() {
  if (source) source.close();
  source = AFW.live("/admin/events", { changed: () => { refresh().catch(() => {}); } }, $("live"));
}

async function start() {
  try {
    await refresh();
    $("login").hidden = true; $("app").hidden = false; $("logout").hidden = false;
    live();
  } catch (e) { /* showLogin already ran */ }
}

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("error").textContent = "";
  const r = await fetch("/admin/login", { method: "POST", credentials: "same-origin", headers: { "content-type": "application/json" }, body: JSON.stringify({ token: $("token").value }) });
  if (!r.ok) { const j = await r.json().catch(() => ({})); $("error").textContent = j.error || "login failed"; return; }
  $("token").value = "";
  await start();
});
$("logout").addEventListener("click", async () => { await fetch("/admin/logout", { method: "POST", credentials: "same-origin", headers: { "content-type": "application/json" }, body: "{}" }); showLogin(); });
$("report-only").addEventListener("change", () => act("/admin/api/admission/mode", { mode: $("report-only").checked ? "report" : "enforce" }, $("report-only").checked ? "Report-only mode" : "Enforcing admission"));
$("preview").addEventListener("click", async () => {
  const p = await api("/admin/api/admission/preview", { threshold: $("threshold").value });
  $("preview-result").textContent = p.summary;
});
$("apply-threshold").addEventListener("click", () => act("/admin/api/admission/threshold", { threshold: $("threshold").value }, "Threshold set"));
$("invite").addEventListener("click", async () => { const r = await api("/admin/api/invites", { note: "dashboard" }); $("invite-token").textContent = r.invite; });
setInterval(() => { if (data) render(); }, 30000);
start();
