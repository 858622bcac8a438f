// index.d.ts (with shapes.d.ts) says what the addon returns: no `any` where the shape is
// known, and each `Output` kind in the union has exactly the fields the addon sets for it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const af = createRequire(import.meta.url)('../index.js')
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const INDEX = readFileSync(join(ROOT, 'index.d.ts'), 'utf8')
const SHAPES = readFileSync(join(ROOT, 'shapes.d.ts'), 'utf8')
const T0 = 1_796_047_500_000
const WEB = { id: 'claude:1:1', kind: 'claude', project: 'web' }
const API = { id: 'codex:2:2', kind: 'codex', project: 'api' }
const TOKEN = 'token ghp_R8tXq2LmZ7vKpW3sN9dYcF4hJ6bA1eG5uT0o'

/** kind → the field names shapes.d.ts declares for it (kind included): `all`, and
 * `required` (those not marked optional). */
function declaredOutputs() {
  const union = SHAPES.match(/export type Output =\n((?: {2}\| \{.*\}\n)+)/)
  assert.ok(union, 'shapes.d.ts declares Output as a union')
  return new Map(
    union[1].trim().split('\n').map((line) => {
      const fields = [...line.matchAll(/(\w+)(\??): /g)]
      const all = fields.map((m) => m[1]).sort()
      const required = fields.filter((m) => m[2] === '').map((m) => m[1]).sort()
      return [line.match(/kind: '(\w+)'/)[1], { all, required }]
    }),
  )
}

test('the types have no `any`, and index.d.ts exports Output from shapes.d.ts', () => {
  for (const text of [INDEX, SHAPES]) {
    const code = text.replace(/\/\*\*[\s\S]*?\*\//g, '').replace(/^\/\/.*$/gm, '')
    assert.deepEqual(code.match(/\bany\b/g), null)
  }
  assert.ok(!INDEX.includes('interface Output') && INDEX.includes("export * from './shapes'"))
})

test('each Output kind carries exactly the fields index.d.ts declares for it', () => {
  const declared = declaredOutputs()
  assert.deepEqual([...declared.keys()].sort(), ['accepted', 'delivered', 'done', 'held', 'refused'])
  const fw = new af.Firewall(null, { seed: 1 })
  const accepted = fw.send(WEB, API, 'hello', { now: T0 })
  const later = fw.send(WEB, API, 'later', { now: T0 + 1 })
  const seen = [accepted, fw.deliver(accepted.message, T0 + 2)]
  fw.admin({ action: 'quarantine', agent: API.id, seconds: 60, reason: 'test' }, T0 + 3)
  seen.push(fw.deliver(later.message, T0 + 4), fw.send(WEB, API, TOKEN, { now: T0 + 5 }))
  // With a trust file, a delivery sets its optional `overlay` too (api is quarantined).
  const docs = { id: 'cursor:3:3', kind: 'cursor', project: 'docs' }
  fw.setTrust('version: 1\nunknown_teammates: {policy: allow}\n', null, T0 + 6)
  seen.push(fw.deliver(fw.send(WEB, docs, 'hi', { now: T0 + 7 }).message, T0 + 8))
  assert.deepEqual(seen.map((o) => o.kind), ['accepted', 'delivered', 'held', 'refused', 'delivered'])
  assert.ok('overlay' in seen[4] && !('overlay' in seen[1]))
  for (const out of seen) {
    const { all, required } = declared.get(out.kind)
    const keys = Object.keys(out).sort()
    const what = `fields of a '${out.kind}' output`
    assert.ok(required.every((k) => keys.includes(k)) && keys.every((k) => all.includes(k)), `${what}: ${keys}`)
  }
})
