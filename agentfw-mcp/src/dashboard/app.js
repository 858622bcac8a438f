// The daemon's dashboard (`agentfw dashboard`): read-only. Everything arrives on one event
// stream: `state` (team, counters, quarantines, admission, rules), `backlog` (the latest
// decisions) and then each `decision` as the daemon commits it. All text goes through
// AFW.el (common.js), which never parses data as HTML.
"use strict";
const { el, when, clock, bytes, verdictBadge, conversationRow, CONVERSATION_HEAD } = AFW;
const $ = (id) => document.getElementById(id);

// Decisions kept in the page; the oldest go first.
const KEEP = 5000;
// Rows in "Latest decisions".
const RECENT = 30;

let state = null;
let decisions = [];

// A pair of agents, in a fixed order, whichever way the message went.
function pairOf(d) {
  return d.from < d.to
    ? { a: d.from, b: d.to, a_label: d.from_label, b_label: d.to_label }
    : { a: d.to, b: d.from, a_label: d.to_label, b_label: d.from_label };
}
const keyOf = (a, b) => JSON.stringify([a, b]);

function member(id) {
  return state ? state.team.find((m) => m.id === id) : undefined;
}

// Every pair that exchanged messages, newest activity first, in the shape
// AFW.conversationRow takes (the relay's conversations have the same one).
function conversations() {
  const pairs = new Map();
  for (const d of decisions) {
    if (!d.from || !d.to || d.from === d.to) continue;
    const p = pairOf(d);
    const key = keyOf(p.a, p.b);
    let c = pairs.get(key);
    if (!c) {
      c = { key, a: p.a, b: p.b, decisions: 0, refusals: 0, items: [] };
      pairs.set(key, c);
    }
    Object.assign(c, { a_label: p.a_label, b_label: p.b_label, last_at: d.at, last_verdict: d.verdict });
    c.decisions += 1;
    c.items.push(d);
    if (d.verdict === "deny") {
      c.refusals += 1;
      Object.assign(c, { last_refusal: d.reason || d.code, last_refusal_code: d.rule || d.code });
    }
  }
  for (const c of pairs.values()) c.state = pairState(c);
  return [...pairs.values()].sort((x, y) => y.last_at - x.last_at);
}

function pairState(c) {
  const cut = (state ? state.disconnected : []).some((d) => (d.a === c.a && d.b === c.b) || (d.a === c.b && d.b === c.a));
  if (cut) return "Disconnected";
  if ([c.a, c.b].some((id) => member(id) && member(id).contained)) return "Contained";
  return c.last_verdict === "deny" ? "Refused" : "Connected";
}

// "n / limit", marked when the next message would trip it or nearly.
function counter(n, limit, suffix) {
  const cls = n >= limit ? "over" : n >= limit - 2 ? "near" : "";
  return el("span", { class: cls }, n + " / " + limit + (suffix || ""));
}

function fuseOf(id) {
  const m = member(id);
  return m ? m.turn : 0;
}

function rateText() {
  return " per " + state.limits.rate_window_secs + " s";
}

function render() {
  if (!state) return;
  const d = state.daemon;
  $("meta").textContent = AFW.visible(d.machine + " · daemon " + d.version + " (pid " + d.pid + ") · " + d.home);
  $("text-mode").textContent = d.show_text ? "message text shown (--show-text)" : "message text hidden";
  const view = location.hash.startsWith("#pair=") ? "conversation" : "team";
  $("team-view").hidden = view !== "team";
  $("conversation-view").hidden = view !== "conversation";
  if (view === "team") renderTeam();
  else renderConversation(decodeURIComponent(location.hash.slice(6)));
}

function renderTeam() {
  const lim = state.limits;
  const team = $("team");
  team.replaceChildren();
  if (!state.team.length) team.append(el("tr", {}, el("td", { colspan: 9, class: "empty" }, "No agent sessions yet.")));
  for (const a of state.team) {
    const identity = a.verified
      ? el("span", {}, "verified")
      : el("span", { class: "warn", "data-testid": "unverified" }, "unverified: " + (a.unverified || "unknown"));
    team.append(el("tr", { "data-testid": "agent", "data-id": a.id, "data-label": a.label },
      el("td", {}, el("strong", { "data-testid": "label" }, a.label), el("div", { class: "muted" }, a.id)),
      el("td", {}, a.agent),
      el("td", { "data-testid": "project" }, a.project),
      el("td", {}, a.machine || d_machine()),
      el("td", {}, identity),
      el("td", {}, a.live ? "live" : "gone", a.contained ? el("span", { class: "tag", "data-testid": "quarantined" }, "quarantined") : ""),
      el("td", {}, counter(a.turn, lim.max_turns)),
      el("td", {}, counter(a.rate, lim.rate, rateText())),
      el("td", { class: "reason" }, a.admission || (state.admission.mode === "off" ? "" : "admitted"))));
  }

  const head = $("conversations-head");
  head.replaceChildren(...CONVERSATION_HEAD.map((h) => el("th", {}, h)), el("th", {}, "Turn fuse"), el("th", {}, "Rate"));
  const conv = $("conversations");
  conv.replaceChildren();
  const all = conversations();
  if (!all.length) conv.append(el("tr", {}, el("td", { colspan: 7, class: "empty" }, "No messages yet.")));
  for (const c of all) {
    const row = conversationRow(c,
      el("td", {}, counter(Math.max(fuseOf(c.a), fuseOf(c.b)), lim.max_turns)),
      el("td", {}, counter(member(c.a) ? member(c.a).rate : 0, lim.rate), " · ", counter(member(c.b) ? member(c.b).rate : 0, lim.rate)));
    row.classList.add("clickable");
    row.addEventListener("click", () => { location.hash = "pair=" + encodeURIComponent(c.key); });
    conv.append(row);
  }

  const recent = $("recent");
  recent.replaceChildren();
  const latest = decisions.slice(-RECENT).reverse();
  if (!latest.length) recent.append(el("tr", {}, el("td", { colspan: 7, class: "empty" }, "No decisions yet.")));
  for (const d of latest) recent.append(decisionRow(d, false));

  const qs = $("quarantines");
  qs.replaceChildren();
  if (!state.quarantined.length) qs.append(el("tr", {}, el("td", { colspan: 4, class: "empty" }, "Nobody is quarantined.")));
  for (const q of state.quarantined) {
    qs.append(el("tr", { "data-testid": "quarantine", "data-label": q.label },
      el("td", {}, el("strong", {}, q.label)),
      el("td", { class: "reason" }, q.reason),
      el("td", {}, clock(q.until), el("div", { class: "muted" }, "in " + until(q.until))),
      el("td", {}, el("code", { "data-testid": "command" }, q.command))));
  }

  const rem = $("remembered");
  rem.replaceChildren();
  if (!state.remembered.length) rem.append(el("tr", {}, el("td", { colspan: 3, class: "empty" }, "No refused text is remembered.")));
  for (const r of state.remembered) {
    rem.append(el("tr", { "data-testid": "remembered" }, el("td", {}, el("code", {}, r.text)), el("td", {}, r.rule), el("td", {}, el("code", {}, r.message))));
  }

  const adm = state.admission;
  const other = adm.mode === "enforce" ? "report" : "enforce";
  $("admission").replaceChildren(
    el("dt", {}, "Mode"), el("dd", { "data-testid": "admission-mode" }, adm.mode),
    el("dt", {}, "Threshold"), el("dd", {}, adm.threshold.toFixed(1)),
    el("dt", {}, "Exceptions"), el("dd", {}, adm.exceptions.length ? adm.exceptions.join(", ") : "none"),
    el("dt", {}, "Ratings imported"), el("dd", {}, String(adm.ratings)),
    el("dt", {}, "To switch to " + other), el("dd", {}, el("code", {}, state.daemon.command + " admission " + other)));

  const r = state.rules;
  $("rules-summary").replaceChildren(
    r.rules + " rules: the default pack" + (r.user_files ? " and " + r.user_files + " file(s) of yours" : "") + ".",
    r.error ? el("div", { class: "error" }, "Your rule files do not compile; the last good rules stay in force: " + r.error) : "");
  $("rules").replaceChildren(...r.list.map((x) => el("tr", {}, el("td", {}, el("code", {}, x.id)), el("td", {}, x.verdict), el("td", { class: "muted" }, x.file + ":" + x.line))));
}

function d_machine() {
  return state.daemon.machine + " (this one)";
}

function until(ms) {
  const s = Math.max(0, Math.round((ms - Date.now()) / 1000));
  return s < 120 ? s + " s" : s < 7200 ? Math.round(s / 60) + " min" : Math.round(s / 3600) + " h";
}

// One decision. In a conversation's timeline, with its text when the page has it.
function decisionRow(d, withText) {
  const why = d.rule ? d.rule + (d.reason ? ": " + d.reason : "") : d.code ? d.code + (d.reason ? ": " + d.reason : "") : "";
  const row = el("tr", {
      "data-testid": "decision", "data-seq": d.seq, "data-id": d.id, "data-verdict": d.verdict,
      "data-from-label": d.from_label, "data-to-label": d.to_label, "data-code": d.code || "", "data-rule": d.rule || "" },
    el("td", {}, clock(d.at)),
    el("td", {}, el("strong", {}, d.from_label), " → ", el("strong", {}, d.to_label),
      d.unverified ? el("div", { class: "warn" }, "sender unverified: " + d.unverified) : ""),
    el("td", {}, d.stage),
    el("td", {}, verdictBadge(d.verdict)),
    el("td", { class: "reason" }, why),
    el("td", {}, String(d.hops)),
    el("td", {}, bytes(d.size)));
  if (withText) row.append(el("td", { "data-testid": "text" }, textOf(d)));
  return row;
}

function textOf(d) {
  if (d.text !== undefined) {
    const pre = el("pre", { class: "text" });
    pre.textContent = AFW.visible(d.text, true);
    return pre;
  }
  if (d.verdict === "deny") return el("span", { class: "muted" }, "refused: its text is never shown");
  return el("span", { class: "muted" }, "not kept (decided before this page opened)");
}

function renderConversation(key) {
  const c = conversations().find((x) => x.key === key);
  if (!c) {
    $("conversation-title").textContent = "No messages between these agents in the decisions this page holds.";
    $("conversation-limits").replaceChildren();
    $("conversation-commands").replaceChildren();
    $("timeline").replaceChildren();
    return;
  }
  $("conversation-title").replaceChildren(el("strong", {}, c.a_label), " ↔ ", el("strong", {}, c.b_label), " ", AFW.stateBadge(c.state));
  const lim = state.limits;
  const [ma, mb] = [member(c.a), member(c.b)];
  $("conversation-limits").replaceChildren(el("p", { class: "limits" },
    el("span", {}, "Turn fuse ", counter(Math.max(fuseOf(c.a), fuseOf(c.b)), lim.max_turns),
      el("span", { class: "muted" }, " (messages between agents since a person last spoke)")),
    el("span", {}, "Rate: " + c.a_label + " ", counter(ma ? ma.rate : 0, lim.rate), ", " + c.b_label + " ", counter(mb ? mb.rate : 0, lim.rate, rateText())),
    el("span", {}, c.decisions + " decisions, " + c.refusals + " refused")));
  const commands = el("div", { class: "commands" });
  if (ma && mb) {
    commands.append(el("p", {}, "If the turn fuse stops them, a person lets them talk again with ",
      el("code", { "data-testid": "command" }, state.daemon.command + " allow " + ma.arg + " " + mb.arg)));
  }
  for (const q of state.quarantined.filter((q) => q.agent === c.a || q.agent === c.b)) {
    commands.append(el("p", {}, q.label + " is quarantined; to lift it: ", el("code", { "data-testid": "command" }, q.command)));
  }
  $("conversation-commands").replaceChildren(commands);
  const head = ["Time", "From → to", "Stage", "Verdict", "Rule or reason", "Hops", "Size"];
  if (state.daemon.show_text) head.push("Text");
  $("timeline-head").replaceChildren(...head.map((h) => el("th", {}, h)));
  $("timeline").replaceChildren(...c.items.map((d) => decisionRow(d, state.daemon.show_text)));
}

let pending = false;
function schedule() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; render(); });
}

function problem(p) {
  $("problem").hidden = !p;
  $("problem").textContent = p ? AFW.visible("The daemon could not answer: " + p) : "";
}

// The one-time token in the address bar is spent: keep it out of history and bookmarks.
if (location.search) history.replaceState(null, "", "/" + location.hash);

AFW.live("/events", {
  state: (s) => { if (s.problem) return problem(s.problem); problem(null); state = s; schedule(); },
  backlog: (b) => { if (!Array.isArray(b)) return problem(b.problem); decisions = b; schedule(); },
  decision: (d) => {
    decisions.push(d);
    if (decisions.length > KEEP) decisions.splice(0, decisions.length - KEEP);
    schedule();
  },
}, $("live"));
window.addEventListener("hashchange", schedule);
// Relative times ("12 s ago") age without news; nothing is fetched.
setInterval(schedule, 10000);
