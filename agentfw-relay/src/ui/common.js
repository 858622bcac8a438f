// Shared by the relay's dashboard and the daemon's (`agentfw dashboard`). Everything a page
// shows from data goes through `AFW.el`, which makes text nodes and never parses data as
// HTML; labels come from folder names anybody can choose. Loaded as a classic script, it
// defines one global, `AFW`.
"use strict";
const AFW = (() => {
  // Characters that change how text reads without being seen: C1 controls, direction
  // marks, overrides and isolates, zero-width characters.
  const HIDDEN = /[\u0080-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;
  const code = (c) => "\u27e8U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e9";

  // `value` as text a person can read: C0 controls and DEL as their control pictures (an
  // escape shows as ␛, so a terminal sequence in a label is seen, not obeyed), hidden
  // characters as ⟨U+XXXX⟩. `lines` keeps line breaks and tabs (message text).
  function visible(value, lines) {
    const s = value == null ? "" : String(value);
    return s
      .replace(/[\u0000-\u001f\u007f]/g, (c) =>
        lines && (c === "\n" || c === "\t") ? c : c === "\u007f" ? "\u2421" : String.fromCharCode(0x2400 + c.charCodeAt(0)))
      .replace(HIDDEN, code);
  }

  // An element with attributes (set as attributes, never parsed) and children (nodes, or
  // anything else as visible text).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "onclick") e.addEventListener("click", v);
      else if (k === "class") e.className = v;
      else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(visible(c)));
    return e;
  }

  function when(ms) {
    if (!ms) return "";
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (s < 60) return s + " s ago";
    if (s < 3600) return Math.round(s / 60) + " min ago";
    if (s < 86400) return Math.round(s / 3600) + " h ago";
    return new Date(ms).toISOString().slice(0, 16).replace("T", " ");
  }

  // Wall-clock time of day, 24-hour.
  function clock(ms) {
    const d = new Date(ms);
    return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
  }

  function bytes(n) {
    if (n < 1024) return n + " B";
    return (n / 1024).toFixed(n < 10240 ? 1 : 0) + " KiB";
  }

  const STATES = ["Connected", "Refused", "Contained", "Disconnected"];
  function stateBadge(state) {
    return el("span", { class: "state " + (STATES.includes(state) ? state : ""), "data-testid": "state" }, state);
  }

  const VERDICTS = { allow: "allowed", deny: "refused", hold: "held", would_refuse: "would refuse" };
  function verdictBadge(verdict) {
    return el("span", { class: "verdict " + (verdict in VERDICTS ? verdict : ""), "data-testid": "verdict" },
      VERDICTS[verdict] || verdict);
  }

  // The columns of a conversation row, and the row: `c` has `a_label`, `b_label`, `state`,
  // `last_at`, `decisions`, `refusals`, `last_refusal`, `last_refusal_code`; `extra` cells
  // follow (the relay's buttons, the daemon's counters).
  const CONVERSATION_HEAD = ["Agents", "State", "Last activity", "Decisions", "Last refusal"];
  function conversationRow(c, ...extra) {
    return el("tr", { "data-testid": "conversation", "data-pair": c.a_label + "|" + c.b_label },
      el("td", {}, el("strong", {}, c.a_label), " \u2194 ", el("strong", {}, c.b_label)),
      el("td", {}, stateBadge(c.state)),
      el("td", {}, when(c.last_at)),
      el("td", {}, c.decisions + (c.refusals ? " (" + c.refusals + " refused)" : "")),
      el("td", { class: "reason", "data-testid": "last-refusal" },
        c.last_refusal ? (c.last_refusal_code ? "[" + c.last_refusal_code + "] " : "") + c.last_refusal : ""),
      ...extra);
  }

  // An event stream with a badge that says whether it is live. `handlers` maps event names
  // to functions of the parsed JSON data.
  function live(url, handlers, badge) {
    const source = new EventSource(url);
    for (const [event, fn] of Object.entries(handlers)) {
      source.addEventListener(event, (e) => fn(e.data ? JSON.parse(e.data) : null));
    }
    source.onopen = () => { badge.textContent = "live"; badge.className = "on"; };
    source.onerror = () => { badge.textContent = "reconnecting\u2026"; badge.className = ""; };
    return source;
  }

  return { visible, el, when, clock, bytes, stateBadge, verdictBadge, CONVERSATION_HEAD, conversationRow, live };
})();
