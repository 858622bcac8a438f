// The JSON shapes and the `Output` union that napi cannot derive from Rust: index.d.ts
// names these (the `ts_type` attributes in src/) and re-exports them.
import type { Fenced, Message, Overlay, Reason, Refusal } from './index'

/** A JSON value, as `JSON.parse` gives it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** A JSON object: config overrides and the core's JSON forms. */
export type JsonObject = { [key: string]: Json }

/** One component of an agent and its rating (none: unrated, which refuses the agent). */
export interface Component {
  id: string
  score?: number | null
}

/** A rated component, as in `Evaluation.worst`. */
export interface RatedComponent {
  component: string
  score: number
  level: string
}

/** Why an agent is not admitted, with its stable `code` and the sentence as `text`. */
export type NotAdmitted = (
  | { why: 'over_threshold'; component: string; score: number; level: string }
  | { why: 'unrated'; component: string }
  | { why: 'unknown' }
) & { code: string; text: string }

/** An admin action in the core's JSON form, e.g. `{action: 'lift_quarantine', agent: 'codex:api'}`. */
export interface AdminAction {
  action: string
  [field: string]: Json
}

/** An event in the core's JSON form, e.g. `{event: 'decision', ...}`. */
export interface FirewallEvent {
  event: string
  [field: string]: Json
}

/** A live quarantine: until when (ms since the epoch), the message that caused it, why. */
export interface Quarantine {
  until: number
  message: string | null
  reason: string
}

/**
 * The firewall's answer to one input, by `kind`: the fields each kind has are set, the
 * others undefined. A delivery has an `overlay` when a trust file is set.
 */
export type Output =
  | { kind: 'accepted'; message: Message; warnings: Array<Reason> }
  | { kind: 'delivered'; message: Message; fenced: Fenced; overlay?: Overlay; warnings: Array<Reason> }
  | { kind: 'held'; message: Message; until: number; reason: Reason; warnings: Array<Reason> }
  | { kind: 'refused'; reason: Reason; refusal: Refusal; warnings: Array<Reason> }
  | { kind: 'done'; warnings: Array<Reason> }
