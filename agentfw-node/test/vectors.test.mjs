// The core's shared vectors (agentfw-core/vectors), run through the Node binding (BD3).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const af = createRequire(import.meta.url)('../index.js')
const VECTORS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'agentfw-core', 'vectors')
const load = (name) => JSON.parse(readFileSync(join(VECTORS, name), 'utf8'))

for (const c of load('normalize.json').cases) {
  test(`normalize: ${c.note}`, () => assert.equal(af.fold(c.input), c.folded))
}

for (const c of load('fingerprint.json').cases) {
  test(`fingerprint: ${c.note}`, () => {
    const p = af.fingerprint(af.fold(c.input))
    assert.deepEqual([p.whole, p.lines, p.sketch], [c.whole, c.lines, c.sketch])
  })
}

for (const c of load('fence.json').cases) {
  test(`fence: ${c.note}`, () => {
    const f = af.fence(c.from, c.id, c.body, c.seed)
    assert.deepEqual([f.marker, f.text], [c.marker, c.text])
  })
}

// What the core's `Sim` does: no content rules, an inbox per agent, one second per step.
function runProvenance(file, c) {
  const agents = Object.fromEntries(Object.entries(file.agents).map(([n, a]) => [n, { ...a }]))
  const fw = new af.Firewall(null, { rules: af.Policy.compile([]), seed: 0 })
  let now = 1_796_047_500_000
  const inboxes = {}
  const results = []
  for (const step of c.steps) {
    const end = now + 1000
    for (let due = fw.pollTimeout(); due != null && due > now && due <= end; due = fw.pollTimeout()) {
      now = due
      fw.timeout(now)
    }
    now = end
    fw.timeout(now)
    if (step.send) {
      const s = step.send
      const out = fw.send(agents[s.from], agents[s.to], s.text, { now })
      if (out.kind === 'accepted') {
        ;(inboxes[s.to] ??= []).push(out.message)
        const p = out.message.provenance
        results.push({ verdict: 'accepted', hops: p.hops, origin: p.origin.label, path: p.displayPath })
      } else {
        results.push({ verdict: 'refused', code: out.reason.code })
      }
    } else {
      const waiting = inboxes[step.read] ?? []
      inboxes[step.read] = []
      for (const m of waiting) {
        if (fw.deliver(m, now).kind === 'held') inboxes[step.read].push(m)
      }
    }
    fw.events()
  }
  return results
}

const provenance = load('provenance.json')
for (const c of provenance.cases) {
  test(`provenance: ${c.note}`, () => assert.deepEqual(runProvenance(provenance, c), c.want))
}

const envelopes = load('seal/envelopes.json')
const keys = (name) => af.Keys.fromKeyFile(envelopes.devices[name].key_file)
test('seal: device files agree with their bundles', () => {
  for (const [name, d] of Object.entries(envelopes.devices)) {
    const bundle = af.PublicBundle.parse(d.bundle)
    assert.ok(keys(name).public.equals(bundle))
    assert.equal(bundle.device, d.device)
  }
})
for (const c of envelopes.cases) {
  test(`seal: ${c.name}`, () => {
    const recipient = keys(c.recipient)
    const keyring = new af.Keyring()
    for (const t of c.trusted) keyring.trust(keys(t).public)
    const replay = new af.ReplayCache()
    const envelope = Buffer.from(c.envelope, 'hex')
    let result
    for (let i = 0; i < c.opens; i++) {
      try {
        result = af.open(recipient, keyring, replay, envelope, { now: c.now_ms })
      } catch (e) {
        result = e
      }
    }
    if (c.expect.error) {
      assert.ok(result instanceof Error, c.name)
      assert.equal(result.code, c.expect.error)
    } else {
      assert.ok(!(result instanceof Error), String(result))
      assert.equal(result.body.toString('hex'), c.expect.body)
      const h = result.header
      const w = c.expect.header
      assert.deepEqual([h.sender, h.recipient, h.id, h.timestamp, h.contentType], [w.sender, w.recipient, w.id, w.timestamp_ms, w.content_type])
    }
  })
}

const verdicts = load('admission/verdicts.json')
const gate = (inv, threshold, mode, exceptions) => new af.Admission(inv, { mode, threshold, exceptions })
for (const c of verdicts.cases) {
  test(`admission: ${c.note}`, () => {
    const a = gate(c.inventory, c.threshold, c.mode, c.exceptions)
    const got = a.evaluateAll().map((e) => ({ agent: e.agent, admitted: e.admitted, line: a.mode === 'report' ? e.reportLine : e.line }))
    assert.deepEqual(got, c.want)
  })
}
for (const c of verdicts.previews) {
  test(`admission preview: ${c.note}`, () => {
    assert.equal(gate(c.inventory, c.current, 'enforce', c.exceptions).preview(c.threshold).text, c.want)
  })
}
for (const c of verdicts.errors) {
  test(`admission error: ${c.note}`, () => {
    assert.throws(() => new af.Admission(c.text), (e) => e.code === 'admission.inventory' && e.message === c.error)
  })
}

const imports = load('admission/import.json')
for (const c of imports.cases) {
  test(`admission import: ${c.note}`, () => {
    const text = c.report ? readFileSync(join(VECTORS, 'admission', c.report), 'utf8') : c.report_text
    const got = af.importCiscoMcpScanner(text, c.server)
    assert.deepEqual(got.ratings, c.ratings)
    assert.deepEqual(got.notes, c.notes)
  })
}
for (const c of imports.errors) {
  test(`admission import error: ${c.note}`, () => {
    assert.throws(() => af.importCiscoMcpScanner(c.report_text, c.server), (e) => e.code === 'admission.scanner_report' && e.message === c.error)
  })
}
